//! OpenAI Chat Completions streams: `chat.completion.chunk` frames read into IR events
//! and written from them.

use serde_json::{json, Map, Value};

use crate::dialect::Dialect;
use crate::translate::ir::{ProviderError, StopReason};
use crate::translate::str_field;
use crate::translate::stream::{frame, Decoder, Encoder, Event};
use crate::usage::{from_usage_value, Usage};

fn chat_stop(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_owned()),
    }
}

impl Decoder {
    pub(in crate::translate) fn decode_chat(&mut self, v: &Value, out: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: str_field(v, "id").unwrap_or_default().to_owned(),
                model: str_field(v, "model").unwrap_or_default().to_owned(),
            });
        }
        if let Some(choice) = v.get("choices").and_then(|c| c.get(0)) {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            if let Some(r) = str_field(delta, "reasoning_content").filter(|r| !r.is_empty()) {
                out.push(Event::Thinking(r.to_owned()));
            }
            if let Some(t) = str_field(delta, "content").filter(|t| !t.is_empty()) {
                out.push(Event::Text(t.to_owned()));
            }
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
                let f = call.get("function").unwrap_or(&Value::Null);
                if let Some(id) = str_field(call, "id") {
                    out.push(Event::ToolStart {
                        index,
                        id: id.to_owned(),
                        name: str_field(f, "name").unwrap_or_default().to_owned(),
                    });
                }
                if let Some(args) = str_field(f, "arguments").filter(|a| !a.is_empty()) {
                    out.push(Event::ToolArgs {
                        index,
                        json: args.to_owned(),
                    });
                }
            }
            if let Some(reason) = str_field(choice, "finish_reason") {
                out.push(Event::Stop(chat_stop(reason)));
            }
        }
        if let Some(u) = v
            .get("usage")
            .and_then(|u| from_usage_value(Dialect::OpenAiChat, u))
        {
            out.push(Event::Usage(u));
        }
    }
}

impl Encoder {
    fn chunk(&self, out: &mut Vec<u8>, delta: Value, finish: Option<&str>) {
        frame(
            out,
            None,
            &json!({
                "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
            }),
        );
    }

    pub(in crate::translate) fn chat_delta(&mut self, event: Event, out: &mut Vec<u8>) {
        match event {
            Event::Text(t) => self.chunk(out, json!({"content": t}), None),
            Event::Thinking(t) => self.chunk(out, json!({"reasoning_content": t}), None),
            Event::ToolStart { index, id, name } => {
                let n = self.tools.len() as u64;
                let i = *self.tools.entry(index).or_insert(n);
                self.chunk(
                    out,
                    json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                    None,
                );
            }
            Event::ToolArgs { index, json } => {
                let n = self.tools.len() as u64;
                let i = *self.tools.entry(index).or_insert(n);
                self.chunk(
                    out,
                    json!({"tool_calls": [{"index": i, "function": {"arguments": json}}]}),
                    None,
                );
            }
            _ => {}
        }
    }

    pub(in crate::translate) fn start_chat(&mut self, out: &mut Vec<u8>) {
        self.chunk(out, json!({"role": "assistant", "content": ""}), None)
    }

    pub(in crate::translate) fn finish_chat(
        &mut self,
        stop: StopReason,
        u: Usage,
        out: &mut Vec<u8>,
    ) {
        let finish = match &stop {
            StopReason::EndTurn | StopReason::StopSequence(_) | StopReason::Other(_) => "stop",
            StopReason::MaxTokens => "length",
            StopReason::ToolUse => "tool_calls",
            StopReason::ContentFilter => "content_filter",
        };
        self.chunk(out, Value::Object(Map::new()), Some(finish));
        if self.include_usage {
            frame(
                out,
                None,
                &json!({
                    "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                    "choices": [],
                    "usage": {"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input.saturating_add(u.output),
                        "prompt_tokens_details": {"cached_tokens": u.cache_read},
                        "completion_tokens_details": {"reasoning_tokens": u.reasoning}},
                }),
            );
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
    }
}

/// A provider's error mid-stream, as a Chat client reads it.
pub(in crate::translate) fn fail_chat(e: ProviderError, out: &mut Vec<u8>) {
    frame(
        out,
        None,
        &json!({"error": {"message": e.message, "type": e.kind, "param": null, "code": null}}),
    );
}

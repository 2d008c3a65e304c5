//! Anthropic Messages streams: `message_start`, content blocks and `message_delta` read
//! into IR events and written from them.

use serde_json::{json, Value};

use crate::dialect::Dialect;
use crate::translate::ir::{ProviderError, StopReason};
use crate::translate::str_field;
use crate::translate::stream::{frame, Decoder, Encoder, Event};
use crate::usage::{from_usage_value, Usage};

fn anthropic_stop(reason: &str, sequence: Option<&str>) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence(sequence.map(str::to_owned)),
        "tool_use" => StopReason::ToolUse,
        "refusal" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_owned()),
    }
}

impl Decoder {
    pub(in crate::translate) fn decode_anthropic(&mut self, v: &Value, out: &mut Vec<Event>) {
        match str_field(v, "type") {
            Some("message_start") => {
                let m = v.get("message").unwrap_or(&Value::Null);
                out.push(Event::Start {
                    id: str_field(m, "id").unwrap_or_default().to_owned(),
                    model: str_field(m, "model").unwrap_or_default().to_owned(),
                });
                if let Some(u) = m
                    .get("usage")
                    .and_then(|u| from_usage_value(Dialect::AnthropicMessages, u))
                {
                    self.usage = u;
                }
            }
            Some("content_block_start") => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let b = v.get("content_block").unwrap_or(&Value::Null);
                match str_field(b, "type") {
                    Some("tool_use") => out.push(Event::ToolStart {
                        index,
                        id: str_field(b, "id").unwrap_or_default().to_owned(),
                        name: str_field(b, "name").unwrap_or_default().to_owned(),
                    }),
                    Some("text") => {
                        if let Some(t) = str_field(b, "text").filter(|t| !t.is_empty()) {
                            out.push(Event::Text(t.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
            Some("content_block_delta") => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let d = v.get("delta").unwrap_or(&Value::Null);
                match str_field(d, "type") {
                    Some("text_delta") => out.push(Event::Text(
                        str_field(d, "text").unwrap_or_default().to_owned(),
                    )),
                    Some("thinking_delta") => out.push(Event::Thinking(
                        str_field(d, "thinking").unwrap_or_default().to_owned(),
                    )),
                    Some("signature_delta") => out.push(Event::Signature(
                        str_field(d, "signature").unwrap_or_default().to_owned(),
                    )),
                    Some("input_json_delta") => {
                        if let Some(json) = str_field(d, "partial_json").filter(|j| !j.is_empty()) {
                            out.push(Event::ToolArgs {
                                index,
                                json: json.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            Some("message_delta") => {
                let d = v.get("delta").unwrap_or(&Value::Null);
                if let Some(u) = v.get("usage") {
                    let read = u
                        .get("cache_read_input_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(self.usage.cache_read);
                    let write = u
                        .get("cache_creation_input_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(self.usage.cache_write);
                    if let Some(input) = u.get("input_tokens").and_then(Value::as_u64) {
                        self.usage.input = input.saturating_add(read).saturating_add(write);
                    }
                    self.usage.cache_read = read;
                    self.usage.cache_write = write;
                    if let Some(output) = u.get("output_tokens").and_then(Value::as_u64) {
                        self.usage.output = output;
                    }
                }
                if let Some(reason) = str_field(d, "stop_reason") {
                    out.push(Event::Stop(anthropic_stop(
                        reason,
                        str_field(d, "stop_sequence"),
                    )));
                }
                out.push(Event::Usage(self.usage));
            }
            Some("message_stop") => out.push(Event::Done),
            _ => {}
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::translate) enum Block {
    Text,
    Thinking,
    Tool(u64),
}

impl Encoder {
    fn open_block(&mut self, block: Block, content_block: Value, out: &mut Vec<u8>) -> u64 {
        if self.open == Some(block) {
            return self.next_block - 1;
        }
        self.close_block(out);
        let index = self.next_block;
        self.next_block += 1;
        self.open = Some(block);
        frame(
            out,
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index, "content_block": content_block}),
        );
        index
    }

    fn close_block(&mut self, out: &mut Vec<u8>) {
        if self.open.take().is_some() {
            frame(
                out,
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": self.next_block - 1}),
            );
        }
    }

    pub(in crate::translate) fn anthropic_delta(&mut self, event: Event, out: &mut Vec<u8>) {
        let delta = |out: &mut Vec<u8>, index: u64, d: Value| {
            frame(
                out,
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index, "delta": d}),
            );
        };
        match event {
            Event::Text(t) => {
                let i = self.open_block(Block::Text, json!({"type": "text", "text": ""}), out);
                delta(out, i, json!({"type": "text_delta", "text": t}));
            }
            Event::Thinking(t) => {
                let i = self.open_block(
                    Block::Thinking,
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    out,
                );
                delta(out, i, json!({"type": "thinking_delta", "thinking": t}));
            }
            Event::Signature(s) if self.open == Some(Block::Thinking) => {
                delta(
                    out,
                    self.next_block - 1,
                    json!({"type": "signature_delta", "signature": s}),
                );
            }
            Event::ToolStart { index, id, name } => {
                let i = self.open_block(
                    Block::Tool(index),
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    out,
                );
                self.tools.insert(index, i);
            }
            Event::ToolArgs { index, json } => {
                if self.open == Some(Block::Tool(index)) {
                    delta(
                        out,
                        self.next_block - 1,
                        json!({"type": "input_json_delta", "partial_json": json}),
                    );
                } else {
                    // Arguments for a call whose block is already closed cannot be placed:
                    // end the stream with an error rather than lose them.
                    self.encode(Event::Error(ProviderError {
                        kind: "api_error".into(),
                        message: "the provider interleaved the arguments of parallel tool calls, which an Anthropic stream cannot carry".into(),
                    }), out);
                }
            }
            _ => {}
        }
    }

    pub(in crate::translate) fn start_anthropic(&mut self, out: &mut Vec<u8>) {
        let id = if self.id.starts_with("msg_") {
            self.id.clone()
        } else {
            format!("msg_{}", self.id)
        };
        frame(
            out,
            Some("message_start"),
            &json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }}),
        );
    }

    pub(in crate::translate) fn finish_anthropic(
        &mut self,
        stop: StopReason,
        u: Usage,
        out: &mut Vec<u8>,
    ) {
        self.close_block(out);
        let (reason, sequence) = match &stop {
            StopReason::EndTurn | StopReason::Other(_) => ("end_turn", Value::Null),
            StopReason::MaxTokens => ("max_tokens", Value::Null),
            StopReason::StopSequence(s) => ("stop_sequence", json!(s)),
            StopReason::ToolUse => ("tool_use", Value::Null),
            StopReason::ContentFilter => ("refusal", Value::Null),
        };
        frame(
            out,
            Some("message_delta"),
            &json!({"type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": sequence},
            "usage": {
                "input_tokens": u.input.saturating_sub(u.cache_read.saturating_add(u.cache_write)),
                "cache_creation_input_tokens": u.cache_write,
                "cache_read_input_tokens": u.cache_read,
                "output_tokens": u.output,
            }}),
        );
        frame(out, Some("message_stop"), &json!({"type": "message_stop"}));
    }
}

/// A provider's error mid-stream, as an Anthropic client reads it.
pub(in crate::translate) fn fail_anthropic(e: ProviderError, out: &mut Vec<u8>) {
    frame(
        out,
        Some("error"),
        &json!({"type": "error", "error": {
            // A Google status (`RESOURCE_EXHAUSTED`) as Anthropic names the same failure.
            "type": crate::translate::gemini::anthropic_error_type(&e.kind).unwrap_or(&e.kind),
            "message": e.message,
        }}),
    );
}

//! ConverseStream's events as Anthropic's SSE. The two streams tell the same story in a
//! different order: Converse opens a text or reasoning block with its first delta (only a
//! tool call has a start event), says why it stopped before it says how many tokens it
//! used (`messageStop`, then `metadata`), and numbers blocks its own way. This keeps what
//! Anthropic's order needs: the open block, the next index, the stop reason until the
//! usage arrives.

use base64::Engine as _;
use serde_json::{json, Value};

use super::{stop_reason, stop_sequence, usage};
use crate::bedrock::error::{sse_error, stream_failure};
use crate::bedrock::eventstream::Message;
use crate::bedrock::{made_up_id, sse_frame};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    ToolUse,
    Thinking,
    /// Anthropic sends redacted thinking whole in its start event; Converse sends it as
    /// deltas, so it is gathered and sent when the block closes.
    Redacted,
}

#[derive(Debug)]
struct Open {
    /// Converse's `contentBlockIndex`.
    converse: u64,
    /// Anthropic's `index`, counted from 0 in the order blocks open.
    index: u64,
    kind: Kind,
    redacted: Vec<u8>,
}

/// The translation of one ConverseStream answer.
#[derive(Debug)]
pub struct ConverseToSse {
    model: String,
    id: String,
    started: bool,
    next_index: u64,
    open: Option<Open>,
    stop_reason: Option<String>,
    stop_sequence: Value,
    /// `message_stop` or an error was sent: nothing more belongs to this answer.
    ended: bool,
}

impl ConverseToSse {
    /// `model` is the name the client asked for: ConverseStream does not say which answered.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            id: made_up_id(),
            started: false,
            next_index: 0,
            open: None,
            stop_reason: None,
            stop_sequence: Value::Null,
            ended: false,
        }
    }

    /// The SSE for one event-stream message (often none: a block's start waits for its
    /// first delta, the stop reason for the usage).
    pub fn on_message(&mut self, message: &Message) -> Vec<u8> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        if let Some(error) = stream_failure(message) {
            self.ended = true;
            return error;
        }
        let Some(event) = message.event_type() else {
            return out;
        };
        let known = [
            "messageStart",
            "contentBlockStart",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata",
        ];
        if !known.contains(&event) {
            return out;
        }
        let payload = match serde_json::from_slice::<Value>(&message.payload) {
            Ok(v) if v.is_object() => v,
            _ => {
                self.ended = true;
                return sse_error(
                    "api_error",
                    &format!("Bedrock sent a {event} event that is not a JSON object"),
                );
            }
        };
        self.start(&mut out);
        let block = payload.get("contentBlockIndex").and_then(Value::as_u64);
        match event {
            "contentBlockStart" => {
                if let Some(tool) = payload.pointer("/start/toolUse") {
                    let index = self.open_block(block.unwrap_or(0), Kind::ToolUse, &mut out);
                    let start = json!({"type": "tool_use",
                        "id": tool.get("toolUseId").and_then(Value::as_str).unwrap_or_default(),
                        "name": tool.get("name").and_then(Value::as_str).unwrap_or_default(),
                        "input": {}});
                    emit(
                        &mut out,
                        "content_block_start",
                        json!({"index": index, "content_block": start}),
                    );
                }
            }
            "contentBlockDelta" => {
                if let Some(delta) = payload.get("delta") {
                    self.delta(block.unwrap_or(0), delta, &mut out);
                }
            }
            "contentBlockStop" if self.open.as_ref().map(|o| o.converse) == block => {
                self.close(&mut out);
            }
            "messageStop" => {
                self.close(&mut out);
                self.stop_reason = payload
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(stop_reason);
                self.stop_sequence = stop_sequence(payload.get("additionalModelResponseFields"));
            }
            "metadata" => self.end(payload.get("usage"), &mut out),
            _ => {}
        }
        out
    }

    /// At the end of the body: an answer cut short of its usage still ends as Anthropic's
    /// do, with what is known. Nothing when nothing was started or it already ended.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.started && !self.ended {
            self.end(None, &mut out);
        }
        out
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let message = json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        });
        emit(out, "message_start", json!({ "message": message }));
    }

    /// Makes the block Converse numbers `converse` the open one, of `kind`, closing any
    /// other first (Anthropic's blocks do not interleave). Returns its Anthropic index.
    fn open_block(&mut self, converse: u64, kind: Kind, out: &mut Vec<u8>) -> u64 {
        if let Some(open) = &self.open {
            if open.converse == converse && open.kind == kind {
                return open.index;
            }
            self.close(out);
        }
        let index = self.next_index;
        self.next_index += 1;
        let start = match kind {
            Kind::Text => Some(json!({"type": "text", "text": ""})),
            Kind::Thinking => Some(json!({"type": "thinking", "thinking": "", "signature": ""})),
            // A tool call's start is its caller's to write, with its id and name.
            Kind::ToolUse | Kind::Redacted => None,
        };
        if let Some(start) = start {
            emit(
                out,
                "content_block_start",
                json!({"index": index, "content_block": start}),
            );
        }
        self.open = Some(Open {
            converse,
            index,
            kind,
            redacted: Vec::new(),
        });
        index
    }

    fn delta(&mut self, converse: u64, delta: &Value, out: &mut Vec<u8>) {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let (kind, body) = if let Some(t) = text(delta.get("text")) {
            (Kind::Text, json!({"type": "text_delta", "text": t}))
        } else if let Some(tool) = delta.get("toolUse") {
            let partial = text(tool.get("input")).unwrap_or_default();
            (
                Kind::ToolUse,
                json!({"type": "input_json_delta", "partial_json": partial}),
            )
        } else if let Some(r) = delta.get("reasoningContent") {
            if let Some(t) = text(r.get("text")) {
                (
                    Kind::Thinking,
                    json!({"type": "thinking_delta", "thinking": t}),
                )
            } else if let Some(s) = text(r.get("signature")) {
                (
                    Kind::Thinking,
                    json!({"type": "signature_delta", "signature": s}),
                )
            } else if let Some(data) = text(r.get("redactedContent")) {
                self.open_block(converse, Kind::Redacted, out);
                if let Some(open) = &mut self.open {
                    let engine = base64::engine::general_purpose::STANDARD;
                    match engine.decode(&data) {
                        Ok(bytes) => open.redacted.extend(bytes),
                        Err(_) => open.redacted.extend(data.as_bytes()),
                    }
                }
                return;
            } else {
                return;
            }
        } else {
            // Citations and other deltas Anthropic's stream has no place for.
            return;
        };
        let was_open = self
            .open
            .as_ref()
            .is_some_and(|o| o.converse == converse && o.kind == kind);
        let index = self.open_block(converse, kind, out);
        if kind == Kind::ToolUse && !was_open {
            // Input for a call whose start never came: it still needs one.
            let start = json!({"type": "tool_use", "id": "", "name": "", "input": {}});
            emit(
                out,
                "content_block_start",
                json!({"index": index, "content_block": start}),
            );
        }
        emit(
            out,
            "content_block_delta",
            json!({"index": index, "delta": body}),
        );
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        let Some(open) = self.open.take() else {
            return;
        };
        if open.kind == Kind::Redacted {
            let data = base64::engine::general_purpose::STANDARD.encode(&open.redacted);
            let start = json!({"type": "redacted_thinking", "data": data});
            emit(
                out,
                "content_block_start",
                json!({"index": open.index, "content_block": start}),
            );
        }
        emit(out, "content_block_stop", json!({ "index": open.index }));
    }

    fn end(&mut self, converse_usage: Option<&Value>, out: &mut Vec<u8>) {
        self.close(out);
        let delta = json!({
            "stop_reason": self.stop_reason,
            "stop_sequence": self.stop_sequence,
        });
        emit(
            out,
            "message_delta",
            json!({"delta": delta, "usage": usage(converse_usage)}),
        );
        emit(out, "message_stop", json!({}));
        self.ended = true;
    }
}

/// One SSE event whose data is `{"type": kind, …fields}`, `type` first as Anthropic writes it.
fn emit(out: &mut Vec<u8>, kind: &str, fields: Value) {
    let mut data = format!(r#"{{"type":"{kind}""#).into_bytes();
    if let Value::Object(fields) = fields {
        for (key, value) in fields {
            data.push(b',');
            data.extend(serde_json::to_vec(&key).unwrap_or_default());
            data.push(b':');
            data.extend(serde_json::to_vec(&value).unwrap_or_default());
        }
    }
    data.push(b'}');
    sse_frame(out, kind, &data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::testing::{event_frame, exception_frame, messages, sse_events};

    fn ev(kind: &str, payload: Value) -> Vec<u8> {
        let mut payload = payload;
        payload["p"] = "abcdefgh".into(); // ConverseStream pads every event
        event_frame(kind, &serde_json::to_vec(&payload).unwrap())
    }

    fn translate(frames: &[Vec<u8>], finish: bool) -> Vec<(String, Value)> {
        let mut t = ConverseToSse::new("llama-4");
        let mut out = Vec::new();
        for m in messages(&frames.concat()) {
            out.extend(t.on_message(&m));
        }
        if finish {
            out.extend(t.finish());
        }
        sse_events(&out)
    }

    fn message_start(id: &str) -> (String, Value) {
        (
            "message_start".into(),
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": "llama-4",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0}}}),
        )
    }

    fn e(kind: &str, data: Value) -> (String, Value) {
        let mut data = data;
        data["type"] = kind.into();
        (kind.to_owned(), data)
    }

    #[test]
    fn reasoning_text_and_a_tool_call_with_usage_become_anthropics_stream() {
        let frames = [
            ev("messageStart", json!({"role": "assistant"})),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Let me "}}}),
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "think."}}}),
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "c2ln"}}}),
            ),
            ev("contentBlockStop", json!({"contentBlockIndex": 0})),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 1, "delta": {"text": "Hi"}}),
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 1, "delta": {"text": " there"}}),
            ),
            ev("contentBlockStop", json!({"contentBlockIndex": 1})),
            ev(
                "contentBlockStart",
                json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_9", "name": "Read"}}}),
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"file_path\":"}}}),
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "\"a.rs\"}"}}}),
            ),
            ev("contentBlockStop", json!({"contentBlockIndex": 2})),
            ev("messageStop", json!({"stopReason": "tool_use"})),
            ev(
                "metadata",
                json!({"usage": {"inputTokens": 30, "outputTokens": 12, "totalTokens": 542, "cacheReadInputTokens": 500, "cacheWriteInputTokens": 0}, "metrics": {"latencyMs": 700}}),
            ),
        ];
        let got = translate(&frames, true);
        let id = got[0].1["message"]["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("msg_bdrk_"));
        assert_eq!(
            got,
            vec![
                message_start(&id),
                e(
                    "content_block_start",
                    json!({"index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
                ),
                e(
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}})
                ),
                e(
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "thinking_delta", "thinking": "think."}})
                ),
                e(
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}})
                ),
                e("content_block_stop", json!({"index": 0})),
                e(
                    "content_block_start",
                    json!({"index": 1, "content_block": {"type": "text", "text": ""}})
                ),
                e(
                    "content_block_delta",
                    json!({"index": 1, "delta": {"type": "text_delta", "text": "Hi"}})
                ),
                e(
                    "content_block_delta",
                    json!({"index": 1, "delta": {"type": "text_delta", "text": " there"}})
                ),
                e("content_block_stop", json!({"index": 1})),
                e(
                    "content_block_start",
                    json!({"index": 2, "content_block": {"type": "tool_use", "id": "tooluse_9", "name": "Read", "input": {}}})
                ),
                e(
                    "content_block_delta",
                    json!({"index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"file_path\":"}})
                ),
                e(
                    "content_block_delta",
                    json!({"index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"a.rs\"}"}})
                ),
                e("content_block_stop", json!({"index": 2})),
                e(
                    "message_delta",
                    json!({"delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"input_tokens": 30, "output_tokens": 12, "cache_read_input_tokens": 500, "cache_creation_input_tokens": 0}})
                ),
                e("message_stop", json!({})),
            ]
        );
    }

    #[test]
    fn events_are_written_type_first() {
        let mut t = ConverseToSse::new("m");
        let m = &messages(&ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "x"}}),
        ))[0];
        let text = String::from_utf8(t.on_message(m)).unwrap();
        assert!(
            text.starts_with(
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":"
            ),
            "{text}"
        );
        assert!(text.contains("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"x\",\"type\":\"text_delta\"},\"index\":0}\n\n"), "{text}");
    }

    #[test]
    fn a_stream_without_metadata_is_ended_by_finish_with_what_it_has() {
        let frames = [
            ev("messageStart", json!({"role": "assistant"})),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
            ),
            ev("messageStop", json!({"stopReason": "guardrail_intervened"})),
        ];
        let got = translate(&frames, true);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(got[4].1["delta"]["stop_reason"], "refusal");
        assert_eq!(got[4].1["usage"]["output_tokens"], 0);
        // Cut before messageStop: the open block is closed and the reason is unknown.
        let got = translate(&frames[..2], true);
        assert_eq!(got[3].0, "content_block_stop");
        assert_eq!(got[4].1["delta"]["stop_reason"], Value::Null);
        // Nothing at all: nothing to end.
        assert!(translate(&[], true).is_empty());
    }

    #[test]
    fn a_new_block_index_closes_an_unclosed_block_and_redacted_thinking_is_sent_whole() {
        let frames = [
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "AAE="}}}),
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "Ag=="}}}),
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 1, "delta": {"text": "a"}}),
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{}"}}}),
            ),
            ev(
                "metadata",
                json!({"usage": {"inputTokens": 1, "outputTokens": 2}}),
            ),
        ];
        let got = translate(&frames, false);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(
            got[1].1["content_block"],
            json!({"type": "redacted_thinking", "data": "AAEC"})
        );
        assert_eq!(got[6].1["content_block"]["type"], "tool_use");
        assert_eq!(got[9].1["usage"]["output_tokens"], 2);
    }

    #[test]
    fn an_exception_ends_the_answer_with_an_error_event() {
        let frames = [
            ev("messageStart", json!({"role": "assistant"})),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
            ),
            exception_frame(
                "modelStreamErrorException",
                br#"{"message":"The model stopped","originalStatusCode":500}"#,
            ),
            ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "late"}}),
            ),
        ];
        let got = translate(&frames, true);
        assert_eq!(got.len(), 4);
        assert_eq!(
            got[3],
            (
                "error".into(),
                json!({"type": "error", "error": {"type": "api_error", "message": "The model stopped"}})
            )
        );
    }

    #[test]
    fn an_event_that_is_not_json_ends_the_answer_with_an_api_error() {
        let got = translate(&[event_frame("contentBlockDelta", b"{oops")], true);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1["error"]["type"], "api_error");
        // An event kind this does not know is skipped.
        assert!(translate(&[event_frame("somethingNew", b"junk")], true).is_empty());
    }
}

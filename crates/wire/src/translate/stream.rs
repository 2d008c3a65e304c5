//! Streams across dialects: a decoder turns the provider's events into IR [`Event`]s and
//! an encoder writes them as the client's events, one provider frame at a time, so a
//! translated stream is as incremental as a native one.
//!
//! Gemini's stream has no closing event: its decoder emits no [`Event::Done`], and the
//! stream is closed by [`Encoder::finish`] when the provider's body ends.
//!
//! This file holds what every dialect shares: the events, the decoder's and encoder's
//! state, and the dispatch to each dialect's half in `<dialect>/stream.rs`.

use std::collections::HashMap;

use serde_json::Value;

use super::chat::stream::fail_chat;
use super::gemini::stream::{fail_gemini, PendingCall};
use super::ir::{ProviderError, StopReason};
use super::messages::stream::{fail_anthropic, Block};
use super::responses::stream::Item;
use super::str_field;
use crate::dialect::Dialect;
use crate::usage::Usage;

/// What happens in a stream, whatever the dialect.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Start {
        id: String,
        model: String,
    },
    Text(String),
    Thinking(String),
    Signature(String),
    /// A tool call begins; `index` is the provider's own numbering of it.
    ToolStart {
        index: u64,
        id: String,
        name: String,
    },
    ToolArgs {
        index: u64,
        json: String,
    },
    Usage(Usage),
    Stop(StopReason),
    Error(ProviderError),
    Done,
}

fn error_of(v: &Value) -> Option<ProviderError> {
    let e = v.get("error")?;
    Some(ProviderError {
        kind: str_field(e, "type")
            .or_else(|| str_field(e, "status"))
            .or_else(|| str_field(e, "code"))
            .unwrap_or("api_error")
            .to_owned(),
        message: str_field(e, "message")
            .unwrap_or("the provider reported an error")
            .to_owned(),
    })
}

/// Reads a provider's stream.
#[derive(Debug)]
pub struct Decoder {
    pub(super) dialect: Dialect,
    pub(super) started: bool,
    /// A Responses stream signals tool use only by its items.
    pub(super) saw_tool: bool,
    /// Anthropic sends input usage at the start and output usage at the end.
    pub(super) usage: Usage,
    /// Gemini: the response id (for the ids of calls that have none), the next call's
    /// index, and whether the last part was a thought (which a signature then closes).
    pub(super) id: String,
    pub(super) next_tool: u64,
    pub(super) in_thought: bool,
    /// Gemini: answer text has been relayed.
    pub(super) in_text: bool,
}

impl Decoder {
    pub fn new(dialect: Dialect) -> Self {
        Decoder {
            dialect,
            started: false,
            saw_tool: false,
            usage: Usage::default(),
            id: String::new(),
            next_tool: 0,
            in_thought: false,
            in_text: false,
        }
    }

    /// The provider's dialect this decoder reads.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Decodes one frame's data into events.
    pub fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        if data == b"[DONE]" {
            out.push(Event::Done);
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(data) else {
            return;
        };
        if self.dialect == Dialect::Gemini {
            // Google's own error shape, and frames that may come as an array.
            return self.decode_gemini(&v, out);
        }
        if let Some(e) = error_of(&v) {
            out.push(Event::Error(e));
            return;
        }
        match self.dialect {
            Dialect::AnthropicMessages => self.decode_anthropic(&v, out),
            Dialect::OpenAiResponses => self.decode_responses(&v, out),
            Dialect::OpenAiChat => self.decode_chat(&v, out),
            Dialect::Gemini => self.decode_gemini(&v, out),
        }
    }
}

/// Writes events as the client's stream.
#[derive(Debug)]
pub struct Encoder {
    pub(super) dialect: Dialect,
    pub(super) id: String,
    pub(super) model: String,
    pub(super) created: u64,
    /// Chat clients get a usage chunk only when they asked for one.
    pub(super) include_usage: bool,
    pub(super) started: bool,
    pub(super) open: Option<Block>,
    pub(super) next_block: u64,
    /// Provider tool index → the client's (Chat: tool_calls index; Anthropic: block index).
    pub(super) tools: HashMap<u64, u64>,
    pub(super) stop: Option<StopReason>,
    pub(super) usage: Usage,
    pub(super) finished: bool,
    /// Finished by the provider's error rather than by the answer's end.
    pub(super) failed: bool,
    /// Responses: the event counter, finished output items, and the item being written.
    pub(super) sequence: u64,
    pub(super) items: Vec<Value>,
    pub(super) item: Option<Item>,
    /// Responses: the client's freeform tools, whose calls go back as freeform calls.
    pub(super) freeform: Vec<String>,
    /// Gemini: calls waiting for their whole arguments, the signature waiting for the
    /// next part, and whether the answer's first call went out signed.
    pub(super) calls: Vec<PendingCall>,
    pub(super) signature: Option<String>,
    pub(super) call_signed: bool,
}

/// One SSE frame: the event name when the dialect names its events, then the data.
pub(in crate::translate) fn frame(out: &mut Vec<u8>, event: Option<&str>, data: &Value) {
    if let Some(name) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(&serde_json::to_vec(data).unwrap_or_default());
    out.extend_from_slice(b"\n\n");
}

impl Encoder {
    pub fn new(dialect: Dialect, include_usage: bool, created: u64) -> Self {
        Encoder {
            dialect,
            id: String::new(),
            model: String::new(),
            created,
            include_usage,
            started: false,
            open: None,
            next_block: 0,
            tools: HashMap::new(),
            stop: None,
            usage: Usage::default(),
            finished: false,
            failed: false,
            sequence: 0,
            items: Vec::new(),
            item: None,
            freeform: Vec::new(),
            calls: Vec::new(),
            signature: None,
            call_signed: false,
        }
    }

    /// Calls of these tools go to a Responses client as freeform (`custom_tool_call`) calls.
    pub fn with_freeform_tools(mut self, names: Vec<String>) -> Self {
        self.freeform = names;
        self
    }

    /// The usage seen so far, for the record stage.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// Where a Responses stream is: the number its next event takes, and its response id.
    pub fn responses_position(&self) -> (u64, &str) {
        (self.sequence, &self.id)
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The client's stream has been closed with the answer's end (not with an error).
    pub fn answered(&self) -> bool {
        self.finished && !self.failed
    }

    pub fn encode(&mut self, event: Event, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        match event {
            Event::Start { id, model } => {
                if self.started {
                    return;
                }
                self.started = true;
                self.id = id;
                self.model = model;
                self.start(out);
            }
            Event::Usage(u) => self.usage = u,
            Event::Stop(reason) => self.stop = Some(reason),
            Event::Done => self.finish(out),
            Event::Error(e) => {
                self.finished = true;
                self.failed = true;
                match self.dialect {
                    Dialect::OpenAiResponses => self.fail_responses(e, out),
                    Dialect::AnthropicMessages => fail_anthropic(e, out),
                    Dialect::OpenAiChat => fail_chat(e, out),
                    Dialect::Gemini => fail_gemini(e, out),
                }
            }
            other => {
                if !self.started {
                    self.started = true;
                    self.start(out);
                }
                match self.dialect {
                    Dialect::AnthropicMessages => self.anthropic_delta(other, out),
                    Dialect::OpenAiResponses => self.responses_delta(other, out),
                    Dialect::OpenAiChat => self.chat_delta(other, out),
                    Dialect::Gemini => self.gemini_delta(other, out),
                }
            }
        }
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        match self.dialect {
            Dialect::AnthropicMessages => self.start_anthropic(out),
            Dialect::OpenAiResponses => self.start_responses(out),
            Dialect::OpenAiChat => self.start_chat(out),
            // A Gemini stream has no opening frame: its first frame carries content.
            Dialect::Gemini => {}
        }
    }

    /// Closes the stream the client's way. Called on the provider's end of stream, or when
    /// the upstream body ends without one (a Gemini provider's always does: its last frame
    /// is the last, with no closing event).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        if !self.started {
            self.started = true;
            self.start(out);
        }
        self.finished = true;
        let stop = self.stop.clone().unwrap_or(StopReason::EndTurn);
        let u = self.usage;
        match self.dialect {
            Dialect::OpenAiResponses => self.finish_responses(stop, u, out),
            Dialect::AnthropicMessages => self.finish_anthropic(stop, u, out),
            Dialect::OpenAiChat => self.finish_chat(stop, u, out),
            Dialect::Gemini => self.finish_gemini(stop, u, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(from: Dialect, to: Dialect, frames: &[&str]) -> String {
        let mut decoder = Decoder::new(from);
        let mut encoder = Encoder::new(to, true, 1);
        let mut out = Vec::new();
        let mut events = Vec::new();
        for f in frames {
            decoder.decode(f.as_bytes(), &mut events);
            for e in events.drain(..) {
                encoder.encode(e, &mut out);
            }
        }
        encoder.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn deepseek_reasoning_streams_as_a_thinking_block_before_the_text() {
        let out = run(
            Dialect::OpenAiChat,
            Dialect::AnthropicMessages,
            &[
                r#"{"id":"1","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"hmm"}}]}"#,
                r#"{"id":"1","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":"42"}}]}"#,
                r#"{"id":"1","model":"deepseek-reasoner","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
        );
        let thinking = out.find("thinking_delta").unwrap();
        let text = out.find("text_delta").unwrap();
        assert!(thinking < text, "{out}");
        // The thinking block is closed before the text block opens.
        assert_eq!(out.matches("event: content_block_stop").count(), 2);
        assert!(out.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    }

    #[test]
    fn anthropic_thinking_and_usage_reach_chat_clients() {
        let out = run(
            Dialect::AnthropicMessages,
            Dialect::OpenAiChat,
            &[
                r#"{"type":"message_start","message":{"id":"msg_1","model":"claude-x","usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}"#,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":12}}"#,
                r#"{"type":"message_stop"}"#,
            ],
        );
        assert!(out.contains(r#""reasoning_content":"plan""#), "{out}");
        assert!(out.contains(r#""finish_reason":"length""#));
        assert!(
            out.contains(r#""prompt_tokens":10"#)
                && out.contains(r#""cached_tokens":3"#)
                && out.contains(r#""completion_tokens":12"#)
        );
        assert!(out.ends_with("data: [DONE]\n\n"));
    }

    #[test]
    fn a_stream_cut_short_is_still_closed_the_clients_way() {
        let out = run(
            Dialect::OpenAiChat,
            Dialect::AnthropicMessages,
            &[r#"{"id":"1","model":"m","choices":[{"index":0,"delta":{"content":"par"}}]}"#],
        );
        assert!(
            out.contains("message_delta") && out.ends_with("data: {\"type\":\"message_stop\"}\n\n")
        );
    }
}

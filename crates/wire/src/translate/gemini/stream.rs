//! Gemini streams (`:streamGenerateContent?alt=sse`): each frame is a whole
//! `GenerateContentResponse` holding the parts since the last one, with the usage so far;
//! the last names why the candidate ended. No event names, no closing event: the stream
//! ends with the body, when the relay calls [`Encoder::finish`].

use serde_json::{json, Map, Value};

use super::response::{call_prefix, finish_reason, stop_of, usage_json};
use super::{get, get_str, DUMMY_SIGNATURE};
use crate::dialect::Dialect;
use crate::translate::ir::{ProviderError, StopReason};
use crate::translate::str_field;
use crate::translate::stream::{Decoder, Encoder, Event};
use crate::usage::{from_usage_value, Usage};

/// One Gemini SSE frame, ended the way Google ends them.
fn frame(out: &mut Vec<u8>, data: &Value) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(&serde_json::to_vec(data).unwrap_or_default());
    out.extend_from_slice(b"\r\n\r\n");
}

impl Decoder {
    /// One frame's JSON: a response, an error, or (Google's stream without `alt=sse`) an
    /// array of either.
    pub(in crate::translate) fn decode_gemini(&mut self, v: &Value, out: &mut Vec<Event>) {
        if let Value::Array(items) = v {
            for item in items {
                self.decode_gemini(item, out);
            }
            return;
        }
        if let Some(e) = super::decode_error(v) {
            out.push(Event::Error(e));
            return;
        }
        if !self.started {
            self.started = true;
            self.id = get_str(v, "responseId", "response_id")
                .unwrap_or_default()
                .to_owned();
            out.push(Event::Start {
                id: self.id.clone(),
                model: get_str(v, "modelVersion", "model_version")
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
        if let Some(candidate) = v.get("candidates").and_then(|c| c.get(0)) {
            for p in candidate
                .get("content")
                .and_then(|c| c.get("parts"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.gemini_part(p, out);
            }
            if let Some(reason) = get_str(candidate, "finishReason", "finish_reason") {
                out.push(Event::Stop(stop_of(Some(reason), self.saw_tool)));
            }
        } else if get(v, "promptFeedback", "prompt_feedback")
            .and_then(|f| get(f, "blockReason", "block_reason"))
            .is_some()
        {
            out.push(Event::Stop(StopReason::ContentFilter));
        }
        // Every frame counts everything so far: the last one seen wins.
        if let Some(u) = get(v, "usageMetadata", "usage_metadata")
            .and_then(|u| from_usage_value(Dialect::Gemini, u))
        {
            out.push(Event::Usage(u));
        }
    }

    fn gemini_part(&mut self, p: &Value, out: &mut Vec<Event>) {
        let sig = super::signature_of(p);
        if p.get("thought").and_then(Value::as_bool) == Some(true) {
            if let Some(text) = str_field(p, "text").filter(|t| !t.is_empty()) {
                out.push(Event::Thinking(text.to_owned()));
            }
            if let Some(sig) = sig {
                out.push(Event::Signature(sig.into_owned()));
            }
            self.in_thought = true;
            return;
        }
        let is_call = get(p, "functionCall", "function_call").is_some();
        // A signature on a text part once the answer's text has begun (Gemini 3 signs its
        // last text part) would split that text around a thinking block, and Google
        // checks only function calls' signatures: it is left out.
        if let Some(sig) = sig.filter(|_| is_call || !self.in_text) {
            // A signature on the part after the thoughts: it closes them. With no thought
            // shown before it, an empty one carries it, as the IR's `Thinking` does.
            if !self.in_thought {
                out.push(Event::Thinking(String::new()));
            }
            out.push(Event::Signature(sig.into_owned()));
        }
        self.in_thought = false;
        if let Some(text) = str_field(p, "text").filter(|t| !t.is_empty()) {
            self.in_text = true;
            out.push(Event::Text(text.to_owned()));
        } else if let Some(call) = get(p, "functionCall", "function_call") {
            let index = self.next_tool;
            self.next_tool += 1;
            self.saw_tool = true;
            let id = match str_field(call, "id").filter(|id| !id.is_empty()) {
                Some(id) => id.to_owned(),
                None => format!("{}{index}", call_prefix(&self.id)),
            };
            out.push(Event::ToolStart {
                index,
                id,
                name: str_field(call, "name").unwrap_or_default().to_owned(),
            });
            // Gemini sends a call whole: its arguments are one delta.
            out.push(Event::ToolArgs {
                index,
                json: match call.get("args") {
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(args) => serde_json::to_string(args).unwrap_or_else(|_| "{}".into()),
                },
            });
        }
    }
}

/// A call being streamed to a Gemini client: sent whole once its arguments are.
#[derive(Debug)]
pub(in crate::translate) struct PendingCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

impl Encoder {
    /// A frame of parts, as Google streams them.
    fn gemini_chunk(&self, out: &mut Vec<u8>, parts: Vec<Value>) {
        frame(
            out,
            &json!({
                "candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
                "modelVersion": self.model,
                "responseId": self.id,
            }),
        );
    }

    /// A part gets the signature waiting for it (the one that closed the thoughts before
    /// it): another provider's, so wrapped ([`super::wrap_signature`]), or the stand-in.
    fn signed(&mut self, mut part: Map<String, Value>) -> Value {
        if let Some(sig) = self.signature.take() {
            part.insert("thoughtSignature".into(), json!(client_signature(&sig)));
        }
        Value::Object(part)
    }

    /// The calls whose arguments are complete, as function call parts; the first call of
    /// the answer is signed (with the stand-in when the provider gave no signature).
    fn take_calls(&mut self) -> Result<Vec<Value>, ProviderError> {
        let mut parts = Vec::new();
        for call in std::mem::take(&mut self.calls) {
            let args = match call.arguments.trim() {
                "" => json!({}),
                text => match serde_json::from_str::<Value>(text) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => {
                        return Err(ProviderError {
                            kind: "INTERNAL".into(),
                            message: format!(
                                "the provider's call {} has arguments that are not a JSON object",
                                call.id
                            ),
                        })
                    }
                },
            };
            let mut part = Map::new();
            part.insert(
                "functionCall".into(),
                json!({"id": call.id, "name": call.name, "args": args}),
            );
            if self.signature.is_none() && !self.call_signed {
                self.signature = Some(DUMMY_SIGNATURE.to_owned());
            }
            self.call_signed = true;
            let part = self.signed(part);
            parts.push(part);
        }
        Ok(parts)
    }

    /// Sends the calls waiting, before other content; a call that cannot be sent ends the
    /// stream with an error.
    fn flush_calls(&mut self, out: &mut Vec<u8>) -> bool {
        match self.take_calls() {
            Ok(parts) if parts.is_empty() => true,
            Ok(parts) => {
                self.gemini_chunk(out, parts);
                true
            }
            Err(e) => {
                self.encode(Event::Error(e), out);
                false
            }
        }
    }

    pub(in crate::translate) fn gemini_delta(&mut self, event: Event, out: &mut Vec<u8>) {
        // Content after calls: the calls are whole, and go first.
        if matches!(event, Event::Text(_) | Event::Thinking(_)) && !self.flush_calls(out) {
            return;
        }
        match event {
            Event::Text(t) if !t.is_empty() => {
                let mut part = Map::new();
                part.insert("text".into(), json!(t));
                let part = self.signed(part);
                self.gemini_chunk(out, vec![part]);
            }
            Event::Thinking(t) if !t.is_empty() => {
                self.gemini_chunk(out, vec![json!({"text": t, "thought": true})]);
            }
            Event::Signature(s) => self.signature.get_or_insert_with(String::new).push_str(&s),
            Event::ToolStart { index, id, name } => self.calls.push(PendingCall {
                index,
                id,
                name,
                arguments: String::new(),
            }),
            Event::ToolArgs { index, json } => {
                if let Some(call) = self.calls.iter_mut().rev().find(|c| c.index == index) {
                    call.arguments.push_str(&json);
                }
            }
            _ => {}
        }
    }

    /// The last frame: the calls still waiting, why the candidate ended, and the usage.
    pub(in crate::translate) fn finish_gemini(
        &mut self,
        stop: StopReason,
        u: Usage,
        out: &mut Vec<u8>,
    ) {
        let mut parts = match self.take_calls() {
            Ok(parts) => parts,
            Err(e) => return fail_gemini(e, out),
        };
        if let Some(sig) = self.signature.take() {
            parts.push(json!({"text": "", "thoughtSignature": client_signature(&sig)}));
        }
        let mut candidate = Map::new();
        if !parts.is_empty() {
            candidate.insert("content".into(), json!({"parts": parts, "role": "model"}));
        }
        candidate.insert("finishReason".into(), json!(finish_reason(&stop)));
        candidate.insert("index".into(), json!(0));
        frame(
            out,
            &json!({
                "candidates": [Value::Object(candidate)],
                "usageMetadata": usage_json(&u),
                "modelVersion": self.model,
                "responseId": self.id,
            }),
        );
    }
}

fn client_signature(sig: &str) -> String {
    if sig == DUMMY_SIGNATURE {
        sig.to_owned()
    } else {
        super::wrap_signature(sig)
    }
}

/// A provider's error mid-stream, as a Gemini client reads it: Google's error body.
pub(in crate::translate) fn fail_gemini(e: ProviderError, out: &mut Vec<u8>) {
    frame(out, &super::error_of_kind(&e));
}

//! OpenAI Responses streams: numbered `response.*` events and output items read into IR
//! events and written from them.

use serde_json::{json, Value};

use crate::dialect::Dialect;
use crate::translate::ir::{ProviderError, StopReason};
use crate::translate::str_field;
use crate::translate::stream::{frame, Decoder, Encoder, Event};
use crate::usage::{from_usage_value, Usage};

impl Decoder {
    pub(in crate::translate) fn decode_responses(&mut self, v: &Value, out: &mut Vec<Event>) {
        let output_index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match str_field(v, "type") {
            Some("response.created") => {
                let r = v.get("response").unwrap_or(&Value::Null);
                out.push(Event::Start {
                    id: str_field(r, "id").unwrap_or_default().to_owned(),
                    model: str_field(r, "model").unwrap_or_default().to_owned(),
                });
            }
            Some("response.output_item.added") => {
                let item = v.get("item").unwrap_or(&Value::Null);
                if str_field(item, "type") == Some("function_call") {
                    self.saw_tool = true;
                    out.push(Event::ToolStart {
                        index: output_index,
                        id: str_field(item, "call_id").unwrap_or_default().to_owned(),
                        name: str_field(item, "name").unwrap_or_default().to_owned(),
                    });
                }
            }
            Some("response.output_text.delta") => out.push(Event::Text(
                str_field(v, "delta").unwrap_or_default().to_owned(),
            )),
            Some("response.reasoning_summary_text.delta")
            | Some("response.reasoning_text.delta") => out.push(Event::Thinking(
                str_field(v, "delta").unwrap_or_default().to_owned(),
            )),
            Some("response.function_call_arguments.delta") => {
                if let Some(json) = str_field(v, "delta").filter(|j| !j.is_empty()) {
                    out.push(Event::ToolArgs {
                        index: output_index,
                        json: json.to_owned(),
                    });
                }
            }
            Some("response.output_item.done") => {
                let item = v.get("item").unwrap_or(&Value::Null);
                if let Some(sig) = str_field(item, "encrypted_content")
                    .filter(|_| str_field(item, "type") == Some("reasoning"))
                {
                    out.push(Event::Signature(sig.to_owned()));
                }
            }
            Some("response.completed") | Some("response.incomplete") => {
                let r = v.get("response").unwrap_or(&Value::Null);
                if let Some(u) = r
                    .get("usage")
                    .and_then(|u| from_usage_value(Dialect::OpenAiResponses, u))
                {
                    out.push(Event::Usage(u));
                }
                let stop = match r
                    .get("incomplete_details")
                    .and_then(|d| str_field(d, "reason"))
                {
                    Some("max_output_tokens") => StopReason::MaxTokens,
                    Some("content_filter") => StopReason::ContentFilter,
                    Some(other) => StopReason::Other(other.to_owned()),
                    None if self.saw_tool => StopReason::ToolUse,
                    None => StopReason::EndTurn,
                };
                out.push(Event::Stop(stop));
                out.push(Event::Done);
            }
            Some("response.failed") => {
                let e = v
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .unwrap_or(&Value::Null);
                out.push(Event::Error(ProviderError {
                    kind: str_field(e, "code").unwrap_or("api_error").to_owned(),
                    message: str_field(e, "message")
                        .unwrap_or("the response failed")
                        .to_owned(),
                }));
            }
            Some("error") => out.push(Event::Error(ProviderError {
                kind: str_field(v, "code").unwrap_or("api_error").to_owned(),
                message: str_field(v, "message")
                    .unwrap_or("the provider reported an error")
                    .to_owned(),
            })),
            _ => {}
        }
    }
}

/// A Responses output item still being streamed.
#[derive(Debug)]
pub(in crate::translate) enum Item {
    Message {
        id: String,
        text: String,
    },
    Reasoning {
        id: String,
        text: String,
        signature: Option<String>,
    },
    Call {
        provider_index: u64,
        id: String,
        call_id: String,
        name: String,
        arguments: String,
        /// A freeform tool's call: its text is only whole once the arguments are, so it
        /// goes out as one delta when the call ends.
        freeform: bool,
    },
}

impl Encoder {
    /// One Responses event, numbered.
    fn event(&mut self, out: &mut Vec<u8>, kind: &str, mut body: Value) {
        if let Some(obj) = body.as_object_mut() {
            obj.insert("type".into(), json!(kind));
            obj.insert("sequence_number".into(), json!(self.sequence));
        }
        self.sequence += 1;
        frame(out, Some(kind), &body);
    }

    fn response_object(
        &self,
        output: Vec<Value>,
        stop: &StopReason,
        usage: Option<Value>,
    ) -> Value {
        super::response::response_json(&self.id, &self.model, self.created, output, stop, usage)
    }

    fn open_item(&mut self, item: Item, out: &mut Vec<u8>) {
        self.close_item(out);
        let index = self.items.len();
        let (added, extra): (Value, Option<(&str, Value)>) = match &item {
            Item::Message { id, .. } => (
                json!({"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []}),
                Some((
                    "response.content_part.added",
                    json!({"item_id": id, "output_index": index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
                )),
            ),
            Item::Reasoning { id, .. } => (
                json!({"type": "reasoning", "id": id, "summary": []}),
                Some((
                    "response.reasoning_summary_part.added",
                    json!({"item_id": id, "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}}),
                )),
            ),
            Item::Call {
                id,
                call_id,
                name,
                freeform: true,
                ..
            } => (
                json!({"type": "custom_tool_call", "id": id, "call_id": call_id, "name": name, "input": "", "status": "in_progress"}),
                None,
            ),
            Item::Call {
                id, call_id, name, ..
            } => (
                json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": "", "status": "in_progress"}),
                None,
            ),
        };
        self.event(
            out,
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
        );
        if let Some((kind, body)) = extra {
            self.event(out, kind, body);
        }
        self.item = Some(item);
    }

    fn close_item(&mut self, out: &mut Vec<u8>) {
        let Some(item) = self.item.take() else {
            return;
        };
        let index = self.items.len();
        let done = match item {
            Item::Message { id, text } => {
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                self.event(
                    out,
                    "response.output_text.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}),
                );
                self.event(
                    out,
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
                );
                json!({"type": "message", "id": id, "status": "completed", "role": "assistant", "content": [part]})
            }
            Item::Reasoning {
                id,
                text,
                signature,
            } => {
                self.event(
                    out,
                    "response.reasoning_summary_text.done",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text}),
                );
                self.event(
                    out,
                    "response.reasoning_summary_part.done",
                    json!({"item_id": id, "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": text}}),
                );
                super::request::reasoning_item(&id, &text, &signature)
            }
            Item::Call {
                id,
                call_id,
                name,
                arguments,
                freeform: true,
                ..
            } => {
                let input = crate::translate::ir::freeform_input(&arguments);
                self.event(
                    out,
                    "response.custom_tool_call_input.delta",
                    json!({"item_id": id, "output_index": index, "delta": input}),
                );
                self.event(
                    out,
                    "response.custom_tool_call_input.done",
                    json!({"item_id": id, "output_index": index, "input": input}),
                );
                super::response::call_item(&id, &call_id, &name, &arguments, true)
            }
            Item::Call {
                id,
                call_id,
                name,
                arguments,
                ..
            } => {
                self.event(
                    out,
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": index, "arguments": arguments}),
                );
                super::response::call_item(&id, &call_id, &name, &arguments, false)
            }
        };
        self.event(
            out,
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        );
        self.items.push(done);
    }

    pub(in crate::translate) fn responses_delta(&mut self, event: Event, out: &mut Vec<u8>) {
        // The item being written sits after every finished one; opening a new item closes
        // the current one first, so the index is read after that.
        match event {
            Event::Text(t) => {
                if !matches!(self.item, Some(Item::Message { .. })) {
                    let n = self.items.len() + usize::from(self.item.is_some());
                    let id = format!("msg_{}_{n}", self.id.trim_start_matches("msg_"));
                    self.open_item(Item::Message { id, text: String::new() }, out);
                }
                let index = self.items.len();
                if let Some(Item::Message { id, text }) = &mut self.item {
                    text.push_str(&t);
                    let id = id.clone();
                    self.event(out, "response.output_text.delta", json!({"item_id": id, "output_index": index, "content_index": 0, "delta": t, "logprobs": []}));
                }
            }
            Event::Thinking(t) => {
                if !matches!(self.item, Some(Item::Reasoning { .. })) {
                    let n = self.items.len() + usize::from(self.item.is_some());
                    let id = format!("rs_{}_{n}", self.id.trim_start_matches("msg_"));
                    self.open_item(Item::Reasoning { id, text: String::new(), signature: None }, out);
                }
                let index = self.items.len();
                if let Some(Item::Reasoning { id, text, .. }) = &mut self.item {
                    text.push_str(&t);
                    let id = id.clone();
                    self.event(out, "response.reasoning_summary_text.delta", json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": t}));
                }
            }
            Event::Signature(sig) => {
                if let Some(Item::Reasoning { signature, .. }) = &mut self.item {
                    signature.get_or_insert_with(String::new).push_str(&sig);
                }
            }
            Event::ToolStart { index: provider_index, id: call_id, name } => {
                let id = format!("fc_{call_id}");
                let freeform = self.freeform.contains(&name);
                self.open_item(Item::Call { provider_index, id, call_id, name, arguments: String::new(), freeform }, out);
            }
            Event::ToolArgs { index: provider_index, json: delta } => match &mut self.item {
                Some(Item::Call { provider_index: p, freeform: true, arguments, .. }) if *p == provider_index => {
                    arguments.push_str(&delta);
                }
                Some(Item::Call { provider_index: p, id, arguments, .. }) if *p == provider_index => {
                    let index = self.items.len();
                    arguments.push_str(&delta);
                    let id = id.clone();
                    self.event(out, "response.function_call_arguments.delta", json!({"item_id": id, "output_index": index, "delta": delta}));
                }
                _ => self.encode(Event::Error(ProviderError {
                    kind: "api_error".into(),
                    message: "the provider interleaved the arguments of parallel tool calls, which this stream cannot carry".into(),
                }), out),
            },
            _ => {}
        }
    }

    pub(in crate::translate) fn start_responses(&mut self, out: &mut Vec<u8>) {
        let mut in_progress = self.response_object(Vec::new(), &StopReason::EndTurn, None);
        if let Some(obj) = in_progress.as_object_mut() {
            obj.insert("status".into(), json!("in_progress"));
        }
        self.event(
            out,
            "response.created",
            json!({"response": in_progress.clone()}),
        );
        self.event(
            out,
            "response.in_progress",
            json!({"response": in_progress}),
        );
    }

    pub(in crate::translate) fn finish_responses(
        &mut self,
        stop: StopReason,
        u: Usage,
        out: &mut Vec<u8>,
    ) {
        self.close_item(out);
        let usage = super::response::usage_json(&u);
        let items = std::mem::take(&mut self.items);
        let response = self.response_object(items, &stop, Some(usage));
        let kind = if response["status"] == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.event(out, kind, json!({"response": response}));
    }

    /// A provider's error mid-stream: an `error` event, then `response.failed`.
    pub(in crate::translate) fn fail_responses(&mut self, e: ProviderError, out: &mut Vec<u8>) {
        self.event(
            out,
            "error",
            json!({"code": e.kind, "message": e.message, "param": null}),
        );
        let items = std::mem::take(&mut self.items);
        let mut failed = self.response_object(items, &StopReason::EndTurn, None);
        if let Some(obj) = failed.as_object_mut() {
            obj.insert("status".into(), json!("failed"));
            obj.insert(
                "error".into(),
                json!({"code": e.kind, "message": e.message}),
            );
        }
        self.event(out, "response.failed", json!({"response": failed}));
    }
}

#[cfg(test)]
mod responses_tests {
    use super::*;

    fn encode_all(to: Dialect, events: Vec<Event>) -> Vec<(String, Value)> {
        let mut encoder = Encoder::new(to, false, 1);
        let mut out = Vec::new();
        for e in events {
            encoder.encode(e, &mut out);
        }
        encoder.finish(&mut out);
        String::from_utf8(out)
            .unwrap()
            .split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|f| {
                let mut lines = f.lines();
                let event = lines
                    .next()
                    .unwrap()
                    .trim_start_matches("event: ")
                    .to_owned();
                let data = serde_json::from_str(lines.next().unwrap().trim_start_matches("data: "))
                    .unwrap();
                (event, data)
            })
            .collect()
    }

    #[test]
    fn responses_events_are_numbered_and_close_every_item() {
        let frames = encode_all(
            Dialect::OpenAiResponses,
            vec![
                Event::Start {
                    id: "1".into(),
                    model: "m".into(),
                },
                Event::Thinking("plan".into()),
                Event::Signature("sig".into()),
                Event::Text("hello".into()),
                Event::ToolStart {
                    index: 3,
                    id: "call_1".into(),
                    name: "f".into(),
                },
                Event::ToolArgs {
                    index: 3,
                    json: "{\"a\":".into(),
                },
                Event::ToolArgs {
                    index: 3,
                    json: "1}".into(),
                },
                Event::Stop(StopReason::ToolUse),
                Event::Usage(Usage {
                    input: 5,
                    output: 6,
                    ..Usage::default()
                }),
                Event::Done,
            ],
        );
        for (i, (event, data)) in frames.iter().enumerate() {
            assert_eq!(data["type"], event.as_str());
            assert_eq!(data["sequence_number"], i as u64);
        }
        let added = frames
            .iter()
            .filter(|(e, _)| e == "response.output_item.added")
            .count();
        let done = frames
            .iter()
            .filter(|(e, _)| e == "response.output_item.done")
            .count();
        assert_eq!((added, done), (3, 3));
        let (last, data) = frames.last().unwrap();
        assert_eq!(last, "response.completed");
        let output = data["response"]["output"].as_array().unwrap();
        assert_eq!(output[0]["type"], "reasoning");
        assert_eq!(output[0]["encrypted_content"], "sig");
        assert_eq!(output[1]["content"][0]["text"], "hello");
        assert_eq!(output[2]["arguments"], "{\"a\":1}");
        assert_eq!(data["response"]["usage"]["total_tokens"], 11);
    }

    #[test]
    fn a_freeform_call_streams_to_a_responses_client_as_one_input_delta() {
        let mut encoder = Encoder::new(Dialect::OpenAiResponses, false, 1)
            .with_freeform_tools(vec!["apply_patch".into()]);
        let mut out = Vec::new();
        for event in [
            Event::Start {
                id: "msg_1".into(),
                model: "m".into(),
            },
            Event::ToolStart {
                index: 0,
                id: "c1".into(),
                name: "apply_patch".into(),
            },
            Event::ToolArgs {
                index: 0,
                json: "{\"input\":\"*** Begin".into(),
            },
            Event::ToolArgs {
                index: 0,
                json: " Patch\"}".into(),
            },
            Event::Stop(StopReason::ToolUse),
            Event::Done,
        ] {
            encoder.encode(event, &mut out);
        }
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("function_call_arguments"), "{text}");
        assert!(text.contains(r#""type":"response.custom_tool_call_input.delta""#));
        assert!(text.contains(r#""delta":"*** Begin Patch""#), "{text}");
        assert!(text.contains(r#""input":"*** Begin Patch""#));
        assert!(text.contains(r#""type":"custom_tool_call""#));
    }

    #[test]
    fn a_failure_mid_stream_is_an_error_then_response_failed() {
        let frames = encode_all(
            Dialect::OpenAiResponses,
            vec![
                Event::Start {
                    id: "1".into(),
                    model: "m".into(),
                },
                Event::Text("par".into()),
                Event::Error(ProviderError {
                    kind: "overloaded_error".into(),
                    message: "busy".into(),
                }),
            ],
        );
        let names: Vec<&str> = frames.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(&names[names.len() - 2..], &["error", "response.failed"]);
        assert_eq!(
            frames.last().unwrap().1["response"]["error"]["message"],
            "busy"
        );
    }

    #[test]
    fn a_responses_stream_decodes_to_the_same_events() {
        let mut d = Decoder::new(Dialect::OpenAiResponses);
        let mut events = Vec::new();
        for f in [
            r#"{"type":"response.created","response":{"id":"resp_1","model":"gpt-x"},"sequence_number":0}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"f"}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{}"}"#,
            r#"{"type":"response.completed","response":{"usage":{"input_tokens":2,"output_tokens":3}}}"#,
        ] {
            d.decode(f.as_bytes(), &mut events);
        }
        assert_eq!(
            events[1],
            Event::ToolStart {
                index: 0,
                id: "c1".into(),
                name: "f".into()
            }
        );
        assert!(events.contains(&Event::Stop(StopReason::ToolUse)));
        assert_eq!(events.last(), Some(&Event::Done));
    }
}

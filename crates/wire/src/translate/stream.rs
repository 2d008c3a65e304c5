//! Streams across dialects: a decoder turns the provider's events into IR [`Event`]s and
//! an encoder writes them as the client's events, one provider frame at a time, so a
//! translated stream is as incremental as a native one.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::ir::{ProviderError, StopReason};
use super::str_field;
use crate::dialect::Dialect;
use crate::usage::{from_usage_value, Usage};

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

fn chat_stop(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_owned()),
    }
}

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

fn error_of(v: &Value) -> Option<ProviderError> {
    let e = v.get("error")?;
    Some(ProviderError {
        kind: str_field(e, "type")
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
    dialect: Dialect,
    started: bool,
    /// A Responses stream signals tool use only by its items.
    saw_tool: bool,
    /// Anthropic sends input usage at the start and output usage at the end.
    usage: Usage,
}

impl Decoder {
    pub fn new(dialect: Dialect) -> Self {
        Decoder {
            dialect,
            started: false,
            saw_tool: false,
            usage: Usage::default(),
        }
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
        if let Some(e) = error_of(&v) {
            out.push(Event::Error(e));
            return;
        }
        match self.dialect {
            Dialect::AnthropicMessages => self.decode_anthropic(&v, out),
            Dialect::OpenAiResponses => self.decode_responses(&v, out),
            Dialect::OpenAiChat => self.decode_chat(&v, out),
        }
    }

    fn decode_responses(&mut self, v: &Value, out: &mut Vec<Event>) {
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

    fn decode_chat(&mut self, v: &Value, out: &mut Vec<Event>) {
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

    fn decode_anthropic(&mut self, v: &Value, out: &mut Vec<Event>) {
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
enum Block {
    Text,
    Thinking,
    Tool(u64),
}

/// Writes events as the client's stream.
#[derive(Debug)]
pub struct Encoder {
    dialect: Dialect,
    id: String,
    model: String,
    created: u64,
    /// Chat clients get a usage chunk only when they asked for one.
    include_usage: bool,
    started: bool,
    open: Option<Block>,
    next_block: u64,
    /// Provider tool index → the client's (Chat: tool_calls index; Anthropic: block index).
    tools: HashMap<u64, u64>,
    stop: Option<StopReason>,
    usage: Usage,
    finished: bool,
    /// Responses: the event counter, finished output items, and the item being written.
    sequence: u64,
    items: Vec<Value>,
    item: Option<Item>,
    /// Responses: the client's freeform tools, whose calls go back as freeform calls.
    freeform: Vec<String>,
}

/// A Responses output item still being streamed.
#[derive(Debug)]
enum Item {
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

fn frame(out: &mut Vec<u8>, event: Option<&str>, data: &Value) {
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
            sequence: 0,
            items: Vec::new(),
            item: None,
            freeform: Vec::new(),
        }
    }

    /// Calls of these tools go to a Responses client as freeform (`custom_tool_call`) calls.
    pub fn with_freeform_tools(mut self, names: Vec<String>) -> Self {
        self.freeform = names;
        self
    }

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
        super::responses::response_json(&self.id, &self.model, self.created, output, stop, usage)
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
                super::responses::reasoning_item(&id, &text, &signature)
            }
            Item::Call {
                id,
                call_id,
                name,
                arguments,
                freeform: true,
                ..
            } => {
                let input = super::ir::freeform_input(&arguments);
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
                super::responses::call_item(&id, &call_id, &name, &arguments, true)
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
                super::responses::call_item(&id, &call_id, &name, &arguments, false)
            }
        };
        self.event(
            out,
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        );
        self.items.push(done);
    }

    fn responses_delta(&mut self, event: Event, out: &mut Vec<u8>) {
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

    /// The usage seen so far, for the record stage.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn is_finished(&self) -> bool {
        self.finished
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
                if self.dialect == Dialect::OpenAiResponses {
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
                    return;
                }
                match self.dialect {
                    Dialect::AnthropicMessages => frame(
                        out,
                        Some("error"),
                        &json!({"type": "error", "error": {"type": e.kind, "message": e.message}}),
                    ),
                    _ => frame(
                        out,
                        None,
                        &json!({"error": {"message": e.message, "type": e.kind, "param": null, "code": null}}),
                    ),
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
                }
            }
        }
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        match self.dialect {
            Dialect::AnthropicMessages => {
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
            Dialect::OpenAiResponses => {
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
            Dialect::OpenAiChat => {
                self.chunk(out, json!({"role": "assistant", "content": ""}), None)
            }
        }
    }

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

    fn chat_delta(&mut self, event: Event, out: &mut Vec<u8>) {
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

    fn anthropic_delta(&mut self, event: Event, out: &mut Vec<u8>) {
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

    /// Closes the stream the client's way. Called on the provider's end of stream, or when
    /// the upstream body ends without one.
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
            Dialect::OpenAiResponses => {
                self.close_item(out);
                let usage = super::responses::usage_json(&u);
                let items = std::mem::take(&mut self.items);
                let response = self.response_object(items, &stop, Some(usage));
                let kind = if response["status"] == "incomplete" {
                    "response.incomplete"
                } else {
                    "response.completed"
                };
                self.event(out, kind, json!({"response": response}));
            }
            Dialect::AnthropicMessages => {
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
            _ => {
                let finish = match &stop {
                    StopReason::EndTurn | StopReason::StopSequence(_) | StopReason::Other(_) => {
                        "stop"
                    }
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

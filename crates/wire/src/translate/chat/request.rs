//! OpenAI Chat Completions requests: read into the IR, written from it.

use serde_json::{json, Map, Value};

use crate::error::WireError;
use crate::provider::ProviderKind;
use crate::translate::compat::{self, Carried, Field, Policy, Report};
use crate::translate::ir::{
    MediaSource, Part, Reasoning, Request, ResponseFormat, Role, TextBlock, ToolChoice,
};
use crate::translate::{
    bad, cannot, function_tool, openai_tool_choice, parse_object, push_message, str_field,
    string_or_parts,
};

/// What happens to each Chat request field when the provider speaks another dialect
/// (see [`crate::translate::compat`]).
pub const FIELDS: &[(&str, Field)] = &[
    ("model", Field::Carried),
    ("messages", Field::Carried),
    ("tools", Field::Carried),
    ("tool_choice", Field::Carried),
    ("parallel_tool_calls", Field::Carried),
    ("max_tokens", Field::Carried),
    ("max_completion_tokens", Field::Carried),
    ("temperature", Field::Carried),
    ("top_p", Field::Carried),
    ("stop", Field::Carried),
    ("stream", Field::Carried),
    ("stream_options", Field::Carried),
    ("user", Field::Carried),
    ("safety_identifier", Field::Carried),
    ("reasoning_effort", Field::Carried),
    ("verbosity", Field::Carried),
    ("prompt_cache_key", Field::Carried),
    ("n", Field::Carried),
    ("response_format", Field::Carried),
    ("modalities", Field::Carried),
    ("store", Field::Dropped),
    ("metadata", Field::Dropped),
    ("service_tier", Field::Dropped),
    ("seed", Field::Dropped),
    ("frequency_penalty", Field::Dropped),
    ("presence_penalty", Field::Dropped),
    ("logprobs", Field::Dropped),
    ("top_logprobs", Field::Dropped),
    ("prediction", Field::Dropped),
    (
        "logit_bias",
        Field::Refused("the target has no token biases; route this model to an OpenAI provider"),
    ),
    (
        "audio",
        Field::Refused("audio output needs an OpenAI provider"),
    ),
    (
        "web_search_options",
        Field::Refused("web search runs at OpenAI; route this model to an OpenAI provider"),
    ),
    (
        "functions",
        Field::Refused("send `tools` instead of the deprecated `functions`"),
    ),
    (
        "function_call",
        Field::Refused("send `tool_choice` instead of the deprecated `function_call`"),
    ),
];

fn text_of(content: &Value, param: &'static str) -> Result<Vec<Part>, WireError> {
    string_or_parts(content, param, content_part)
}

fn content_part(item: &Value, param: &'static str) -> Result<Part, WireError> {
    match str_field(item, "type") {
        Some("text") => Ok(Part::Text(TextBlock {
            text: str_field(item, "text").unwrap_or_default().to_owned(),
            cache_control: item.get("cache_control").cloned(),
        })),
        Some("image_url") => {
            let url = item
                .get("image_url")
                .and_then(|u| str_field(u, "url"))
                .ok_or_else(|| bad(param, "an image_url part needs `image_url.url`"))?;
            Ok(Part::Image {
                source: parse_image_url(url),
                cache_control: None,
            })
        }
        Some("file") => {
            let file = item.get("file").unwrap_or(&Value::Null);
            let data = str_field(file, "file_data").ok_or_else(|| {
                cannot(
                    "a file part by `file_id`",
                    "send the file inline as `file_data`",
                )
            })?;
            Ok(Part::Document {
                source: parse_image_url(data),
                filename: str_field(file, "filename").map(str::to_owned),
                cache_control: None,
            })
        }
        Some(other) => Err(cannot(
            format!("a `{other}` content part"),
            "send text, images or files",
        )),
        None => Err(bad(param, "a content part needs a `type`")),
    }
}

/// A document as Chat's `file` part, which carries files inline only.
pub(crate) fn file_part(
    source: &MediaSource,
    filename: &Option<String>,
) -> Result<(String, String), WireError> {
    match source {
        MediaSource::Base64 { .. } => Ok((
            filename.clone().unwrap_or_else(|| "document.pdf".into()),
            image_url(source),
        )),
        MediaSource::Url(_) => Err(cannot(
            "a document given by URL",
            "send it inline as base64",
        )),
        MediaSource::Text(_) => Err(cannot(
            "a plain-text document",
            "send its text as a text part",
        )),
    }
}

/// A `data:` URL becomes inline base64; anything else stays a URL.
pub(crate) fn parse_image_url(url: &str) -> MediaSource {
    if let Some(rest) = url.strip_prefix("data:") {
        if let Some((meta, data)) = rest.split_once(',') {
            if let Some(media_type) = meta.strip_suffix(";base64") {
                return MediaSource::Base64 {
                    media_type: media_type.to_owned(),
                    data: data.to_owned(),
                };
            }
        }
    }
    MediaSource::Url(url.to_owned())
}

pub fn decode_request(
    body: &[u8],
    policy: Policy,
    report: &mut Report,
) -> Result<Request, WireError> {
    let obj = parse_object(body)?;
    policy.check(&obj, FIELDS, "Chat Completions", report)?;
    if obj.get("n").and_then(Value::as_u64).is_some_and(|n| n > 1) {
        return Err(cannot("`n` > 1", "ask for one choice"));
    }
    if let Some(format) = obj.get("response_format") {
        if str_field(format, "type").is_some_and(|t| t != "text") {
            return Err(cannot(
                "a structured `response_format`",
                "the target cannot enforce it; route this model to an OpenAI provider",
            ));
        }
    }
    let modalities = obj.get("modalities").and_then(Value::as_array);
    if modalities.is_some_and(|m| m.iter().any(|m| m.as_str() != Some("text"))) {
        return Err(cannot(
            "`modalities` other than text",
            "audio output needs an OpenAI provider",
        ));
    }
    let mut req = Request {
        model: obj
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        stream: obj.get("stream").and_then(Value::as_bool).unwrap_or(false),
        stream_usage: obj
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        max_tokens: obj
            .get("max_completion_tokens")
            .or_else(|| obj.get("max_tokens"))
            .and_then(Value::as_u64),
        temperature: obj.get("temperature").and_then(Value::as_f64),
        top_p: obj.get("top_p").and_then(Value::as_f64),
        user: obj
            .get("safety_identifier")
            .or_else(|| obj.get("user"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        parallel_tool_calls: obj.get("parallel_tool_calls").and_then(Value::as_bool),
        reasoning: compat::effort(
            obj.get("reasoning_effort"),
            "reasoning_effort",
            compat::OPENAI_EFFORTS,
        )?
        .map(Reasoning::Effort),
        verbosity: compat::verbosity(obj.get("verbosity"), "verbosity")?,
        prompt_cache_key: obj
            .get("prompt_cache_key")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..Request::default()
    };
    req.stop = match obj.get("stop") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(_) => {
            return Err(bad(
                "stop",
                "`stop` must be a string or an array of strings",
            ))
        }
    };
    let messages = obj
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("messages", "`messages` must be an array"))?;
    for m in messages {
        let role =
            str_field(m, "role").ok_or_else(|| bad("messages", "each message needs a `role`"))?;
        let content = m.get("content").unwrap_or(&Value::Null);
        match role {
            // Anthropic has one system prompt before the conversation: system and developer
            // messages, wherever they stand, join it in order.
            "system" | "developer" => {
                for part in text_of(content, "messages")? {
                    if let Part::Text(t) = part {
                        req.system.push(t);
                    }
                }
            }
            "user" => push_message(&mut req.messages, Role::User, text_of(content, "messages")?),
            "assistant" => {
                let mut parts = Vec::new();
                if let Some(reasoning) = str_field(m, "reasoning_content") {
                    parts.push(Part::Thinking {
                        text: reasoning.to_owned(),
                        signature: None,
                    });
                }
                parts.extend(text_of(content, "messages")?);
                if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                    for call in calls {
                        let f = call.get("function").unwrap_or(&Value::Null);
                        parts.push(Part::ToolCall {
                            id: str_field(call, "id").unwrap_or_default().to_owned(),
                            name: str_field(f, "name").unwrap_or_default().to_owned(),
                            arguments: str_field(f, "arguments").unwrap_or("{}").to_owned(),
                        });
                    }
                }
                push_message(&mut req.messages, Role::Assistant, parts);
            }
            "tool" => {
                let call_id = str_field(m, "tool_call_id")
                    .ok_or_else(|| bad("messages", "a tool message needs `tool_call_id`"))?;
                let result = Part::ToolResult {
                    call_id: call_id.to_owned(),
                    content: text_of(content, "messages")?,
                    is_error: false,
                    cache_control: None,
                };
                push_message(&mut req.messages, Role::User, vec![result]);
            }
            other => return Err(bad("messages", format!("unknown role `{other}`"))),
        }
    }
    if let Some(tools) = obj.get("tools").and_then(Value::as_array) {
        for t in tools {
            if str_field(t, "type") != Some("function") {
                return Err(cannot(
                    format!("a `{}` tool", str_field(t, "type").unwrap_or("untyped")),
                    "only function tools translate",
                ));
            }
            req.tools
                .push(function_tool(t.get("function").unwrap_or(&Value::Null)));
        }
    }
    req.tool_choice = openai_tool_choice(obj.get("tool_choice"), |v| {
        v.get("function").and_then(|f| str_field(f, "name"))
    })?;
    Ok(req)
}

pub(crate) fn image_url(source: &MediaSource) -> String {
    match source {
        MediaSource::Url(url) => url.clone(),
        MediaSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        MediaSource::Text(text) => text.clone(),
    }
}

/// Text of tool-result content, for Chat's tool message (which carries text only).
fn tool_text(content: &[Part]) -> Result<String, WireError> {
    let mut out = String::new();
    for part in content {
        match part {
            Part::Text(t) => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&t.text);
            }
            _ => {
                return Err(cannot(
                    "an image or document inside a tool result",
                    "Chat tool messages carry text only",
                ))
            }
        }
    }
    Ok(out)
}

/// One assistant tool call as Chat writes it.
pub(super) fn tool_call_json(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// Chat's assistant `content`: the text, or null when there is none (a pure tool call).
pub(super) fn text_or_null(text: &str) -> Value {
    if text.is_empty() {
        Value::Null
    } else {
        json!(text)
    }
}

/// Marks a failed tool result in the text, since Chat's tool messages have no error flag.
pub const TOOL_ERROR_MARKER: &str = "[tool error] ";

pub fn encode_request(
    req: &Request,
    kind: ProviderKind,
    report: &mut Report,
) -> Result<Vec<u8>, WireError> {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        let text: Vec<&str> = req.system.iter().map(|t| t.text.as_str()).collect();
        messages.push(json!({"role": "system", "content": text.join("\n\n")}));
    }
    for m in &req.messages {
        match m.role {
            Role::User => {
                let mut parts = Vec::new();
                for p in &m.parts {
                    match p {
                        Part::ToolResult {
                            call_id,
                            content,
                            is_error,
                            ..
                        } => {
                            let mut text = tool_text(content)?;
                            if *is_error {
                                text.insert_str(0, TOOL_ERROR_MARKER);
                            }
                            messages.push(
                                json!({"role": "tool", "tool_call_id": call_id, "content": text}),
                            );
                        }
                        Part::Text(t) => parts.push(json!({"type": "text", "text": t.text})),
                        Part::Document {
                            source, filename, ..
                        } => {
                            let (filename, data) = file_part(source, filename)?;
                            parts.push(json!({"type": "file", "file": {"filename": filename, "file_data": data}}));
                        }
                        Part::Image { source, .. } => parts.push(
                            json!({"type": "image_url", "image_url": {"url": image_url(source)}}),
                        ),
                        Part::ToolCall { .. }
                        | Part::Thinking { .. }
                        | Part::RedactedThinking { .. } => {
                            return Err(bad(
                                "messages",
                                "a user message cannot hold tool calls or thinking",
                            ))
                        }
                    }
                }
                if !parts.is_empty() {
                    let content = match parts.as_slice() {
                        [one] if one.get("type") == Some(&json!("text")) => one["text"].clone(),
                        _ => Value::Array(parts),
                    };
                    messages.push(json!({"role": "user", "content": content}));
                }
            }
            Role::Assistant => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for p in &m.parts {
                    match p {
                        Part::Text(t) => text.push_str(&t.text),
                        Part::ToolCall {
                            id,
                            name,
                            arguments,
                        } => calls.push(tool_call_json(id, name, arguments)),
                        // Earlier turns' reasoning is not sent back: DeepSeek documents that it
                        // must be left out of the input, and OpenAI's Chat has no field for it.
                        Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
                        Part::Image { .. } | Part::Document { .. } | Part::ToolResult { .. } => {
                            return Err(cannot(
                                "an image or tool result in an assistant turn",
                                "not expressible in Chat",
                            ))
                        }
                    }
                }
                let mut msg = Map::new();
                msg.insert("role".into(), json!("assistant"));
                msg.insert("content".into(), text_or_null(&text));
                if !calls.is_empty() {
                    msg.insert("tool_calls".into(), Value::Array(calls));
                }
                messages.push(Value::Object(msg));
            }
        }
    }
    let mut out = Map::new();
    out.insert("model".into(), json!(req.model));
    out.insert("messages".into(), Value::Array(messages));
    if let Some(n) = req.max_tokens {
        // OpenAI deprecated max_tokens for max_completion_tokens; other servers know the old name.
        let key = if kind.is_openai() {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        out.insert(key.into(), json!(n));
    }
    if let Some(t) = req.temperature {
        out.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        out.insert("top_p".into(), json!(p));
    }
    if !req.stop.is_empty() {
        out.insert("stop".into(), json!(req.stop));
    }
    if let Some(user) = &req.user {
        out.insert("user".into(), json!(compat::openai_user(user)));
    }
    // Only OpenAI documents these three; other Chat servers refuse or ignore them.
    let openai = kind.is_openai();
    match (&req.reasoning, openai) {
        // Adaptive thinking leaves the depth to the model: OpenAI's default effort.
        (Some(Reasoning::Adaptive), _) | (None, _) => {}
        (Some(r), true) => {
            out.insert("reasoning_effort".into(), json!(r.effort()));
        }
        (Some(_), false) => report.drop_ir(Carried::Effort),
    }
    match (&req.verbosity, openai) {
        (Some(v), true) => {
            out.insert("verbosity".into(), json!(v));
        }
        (Some(_), false) => report.drop_ir(Carried::Verbosity),
        (None, _) => {}
    }
    match (&req.prompt_cache_key, openai) {
        (Some(k), true) => {
            out.insert("prompt_cache_key".into(), json!(k));
        }
        (Some(_), false) => report.drop_ir(Carried::PromptCacheKey),
        (None, _) => {}
    }
    if req.encrypted_reasoning {
        // Chat returns no reasoning a client could send back.
        report.drop_ir(Carried::EncryptedReasoning);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut f = Map::new();
                f.insert("name".into(), json!(t.name));
                if let Some(d) = &t.description {
                    f.insert("description".into(), json!(d));
                }
                f.insert("parameters".into(), t.schema.clone());
                json!({"type": "function", "function": f})
            })
            .collect();
        out.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &req.tool_choice {
        out.insert(
            "tool_choice".into(),
            match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Named(name) => json!({"type": "function", "function": {"name": name}}),
            },
        );
    }
    if let Some(p) = req.parallel_tool_calls {
        out.insert("parallel_tool_calls".into(), json!(p));
    }
    match &req.response_format {
        None => {}
        Some(ResponseFormat::Json) => {
            out.insert("response_format".into(), json!({"type": "json_object"}));
        }
        // DeepSeek has JSON mode but no schemas: the answer is JSON, its shape unchecked.
        Some(ResponseFormat::JsonSchema(_)) if kind == ProviderKind::DeepSeek => {
            out.insert("response_format".into(), json!({"type": "json_object"}));
            report.drop_ir(Carried::ResponseSchema);
        }
        Some(ResponseFormat::JsonSchema(schema)) => {
            out.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {
                    "name": ResponseFormat::SCHEMA_NAME, "schema": schema}}),
            );
        }
    }
    if req.stream {
        out.insert("stream".into(), json!(true));
        out.insert("stream_options".into(), json!({"include_usage": true}));
    }
    serde_json::to_vec(&Value::Object(out)).map_err(|e| bad("messages", e.to_string()))
}

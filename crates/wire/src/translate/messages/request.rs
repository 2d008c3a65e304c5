//! Anthropic Messages requests: read into the IR, written from it.

use serde_json::{json, Map, Value};

use crate::error::WireError;
use crate::translate::compat::{self, Carried, Field, Policy, Report};
use crate::translate::ir::{
    MediaSource, Part, Reasoning, Request, ResponseFormat, Role, TextBlock, Tool, ToolChoice,
};
use crate::translate::{bad, cannot, parse_object, push_message, str_field, string_or_parts};

/// What happens to each Messages request field when the provider speaks another dialect
/// (see [`crate::translate::compat`]). `anthropic-beta` features ride in headers and are not the
/// body's concern.
pub const FIELDS: &[(&str, Field)] = &[
    ("model", Field::Carried),
    ("messages", Field::Carried),
    ("system", Field::Carried),
    ("tools", Field::Carried),
    ("tool_choice", Field::Carried),
    ("max_tokens", Field::Carried),
    ("temperature", Field::Carried),
    ("top_p", Field::Carried),
    ("stop_sequences", Field::Carried),
    ("stream", Field::Carried),
    ("metadata", Field::Carried),
    ("thinking", Field::Carried),
    ("output_config", Field::Carried),
    ("context_management", Field::Dropped),
    ("service_tier", Field::Dropped),
    ("top_k", Field::Dropped),
    ("inference_geo", Field::Dropped),
    (
        "container",
        Field::Refused("code execution containers run at Anthropic; route this model there"),
    ),
    (
        "mcp_servers",
        Field::Refused("the MCP connector runs at Anthropic; route this model there"),
    ),
];

/// Tool fields the IR carries; the others (`defer_loading`, `input_examples`, …) are
/// hints to Anthropic's own tool handling, reported when dropped.
const TOOL_FIELDS: &[&str] = &[
    "name",
    "description",
    "input_schema",
    "cache_control",
    "type",
];

/// Anthropic requires `max_tokens`; a Chat client that left it out gets this.
pub const DEFAULT_MAX_TOKENS: u64 = 8192;

pub(super) fn blocks(content: &Value, param: &'static str) -> Result<Vec<Part>, WireError> {
    if content.is_null() {
        return Err(bad(
            param,
            "`content` must be a string or an array of blocks",
        ));
    }
    string_or_parts(content, param, block)
}

fn block(b: &Value, param: &'static str) -> Result<Part, WireError> {
    let cache_control = b.get("cache_control").cloned();
    match str_field(b, "type") {
        Some("text") => Ok(Part::Text(TextBlock {
            text: str_field(b, "text").unwrap_or_default().to_owned(),
            cache_control,
        })),
        Some("image") => {
            let source = b.get("source").unwrap_or(&Value::Null);
            let source = match str_field(source, "type") {
                Some("base64") => MediaSource::Base64 {
                    media_type: str_field(source, "media_type")
                        .unwrap_or("image/png")
                        .to_owned(),
                    data: str_field(source, "data").unwrap_or_default().to_owned(),
                },
                Some("url") => {
                    MediaSource::Url(str_field(source, "url").unwrap_or_default().to_owned())
                }
                other => {
                    return Err(cannot(
                        format!("an image with source type `{}`", other.unwrap_or("none")),
                        "send images as base64 or URL",
                    ))
                }
            };
            Ok(Part::Image {
                source,
                cache_control,
            })
        }
        Some("document") => {
            let source = b.get("source").unwrap_or(&Value::Null);
            let source = match str_field(source, "type") {
                Some("base64") => MediaSource::Base64 {
                    media_type: str_field(source, "media_type")
                        .unwrap_or("application/pdf")
                        .to_owned(),
                    data: str_field(source, "data").unwrap_or_default().to_owned(),
                },
                Some("url") => {
                    MediaSource::Url(str_field(source, "url").unwrap_or_default().to_owned())
                }
                Some("text") => {
                    MediaSource::Text(str_field(source, "data").unwrap_or_default().to_owned())
                }
                other => {
                    return Err(cannot(
                        format!("a document with source type `{}`", other.unwrap_or("none")),
                        "send documents as base64, a URL or text",
                    ))
                }
            };
            Ok(Part::Document {
                source,
                filename: str_field(b, "title").map(str::to_owned),
                cache_control,
            })
        }
        Some("tool_use") => Ok(Part::ToolCall {
            id: str_field(b, "id").unwrap_or_default().to_owned(),
            name: str_field(b, "name").unwrap_or_default().to_owned(),
            arguments: serde_json::to_string(b.get("input").unwrap_or(&json!({})))
                .unwrap_or_else(|_| "{}".into()),
        }),
        Some("tool_result") => Ok(Part::ToolResult {
            call_id: str_field(b, "tool_use_id").unwrap_or_default().to_owned(),
            content: match b.get("content") {
                None | Some(Value::Null) => Vec::new(),
                Some(c) => blocks(c, param)?,
            },
            is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            cache_control,
        }),
        Some("thinking") => Ok(Part::Thinking {
            text: str_field(b, "thinking").unwrap_or_default().to_owned(),
            signature: str_field(b, "signature").map(str::to_owned),
        }),
        Some("redacted_thinking") => Ok(Part::RedactedThinking {
            data: str_field(b, "data").unwrap_or_default().to_owned(),
        }),
        Some(other) => Err(cannot(
            format!("a `{other}` content block"),
            "send text, images, tool use and tool results",
        )),
        None => Err(bad(param, "a content block needs a `type`")),
    }
}

pub fn decode_request(
    body: &[u8],
    policy: Policy,
    report: &mut Report,
) -> Result<Request, WireError> {
    let obj = parse_object(body)?;
    policy.check(&obj, FIELDS, "Messages", report)?;
    let mut req = Request {
        model: obj
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        stream: obj.get("stream").and_then(Value::as_bool).unwrap_or(false),
        max_tokens: obj.get("max_tokens").and_then(Value::as_u64),
        temperature: obj.get("temperature").and_then(Value::as_f64),
        top_p: obj.get("top_p").and_then(Value::as_f64),
        stop: obj
            .get("stop_sequences")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        user: obj
            .get("metadata")
            .and_then(|m| str_field(m, "user_id"))
            .map(str::to_owned),
        ..Request::default()
    };
    let output_config = obj.get("output_config").unwrap_or(&Value::Null);
    if output_config.get("format").is_some_and(|f| !f.is_null()) {
        return Err(cannot(
            "a structured `output_config.format`",
            "the target cannot enforce it; route this model to an Anthropic provider",
        ));
    }
    let effort = compat::effort(
        output_config.get("effort"),
        "output_config.effort",
        compat::ANTHROPIC_EFFORTS,
    )?;
    req.reasoning = match obj.get("thinking") {
        None | Some(Value::Null) => effort.map(Reasoning::Effort),
        Some(thinking) => match str_field(thinking, "type") {
            Some("enabled") => Some(Reasoning::Budget(match thinking.get("budget_tokens") {
                Some(b) => b.as_u64().ok_or_else(|| {
                    bad(
                        "thinking.budget_tokens",
                        "`thinking.budget_tokens` must be a whole number",
                    )
                })?,
                None => 1024,
            })),
            Some("adaptive") => Some(effort.map_or(Reasoning::Adaptive, Reasoning::Effort)),
            Some("disabled") => None,
            _ => {
                return Err(bad(
                    "thinking.type",
                    "`thinking.type` must be enabled, adaptive or disabled",
                ))
            }
        },
    };
    match obj.get("system") {
        None | Some(Value::Null) => {}
        Some(system) => {
            for part in blocks(system, "system")? {
                if let Part::Text(t) = part {
                    req.system.push(t);
                }
            }
        }
    }
    let messages = obj
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("messages", "`messages` must be an array"))?;
    for m in messages {
        let role = match str_field(m, "role") {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            // Claude Code puts its system prompt inside `messages` at times.
            Some("system") => {
                for part in blocks(m.get("content").unwrap_or(&Value::Null), "messages")? {
                    if let Part::Text(t) = part {
                        req.system.push(t);
                    }
                }
                continue;
            }
            _ => {
                return Err(bad(
                    "messages",
                    "each message needs role `user` or `assistant`",
                ))
            }
        };
        let parts = blocks(m.get("content").unwrap_or(&Value::Null), "messages")?;
        push_message(&mut req.messages, role, parts);
    }
    if let Some(tools) = obj.get("tools").and_then(Value::as_array) {
        for t in tools {
            if let Some(kind) = str_field(t, "type").filter(|k| *k != "custom") {
                // A server tool only offered is left out: the model answers without it.
                if policy.strict {
                    return Err(cannot(
                        format!("the server tool `{kind}`"),
                        "only client tools with an input_schema translate",
                    ));
                }
                report.drop_field(format!("tools[{kind}]"));
                continue;
            }
            if let Some(o) = t.as_object() {
                for key in o.keys().filter(|k| !TOOL_FIELDS.contains(&k.as_str())) {
                    report.drop_field(format!("tools.{key}"));
                }
            }
            req.tools.push(Tool {
                name: str_field(t, "name").unwrap_or_default().to_owned(),
                description: str_field(t, "description").map(str::to_owned),
                schema: t
                    .get("input_schema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
                cache_control: t.get("cache_control").cloned(),
                freeform: false,
            });
        }
    }
    if let Some(choice) = obj.get("tool_choice") {
        req.tool_choice = Some(match str_field(choice, "type") {
            Some("any") => ToolChoice::Required,
            Some("none") => ToolChoice::None,
            Some("tool") => {
                ToolChoice::Named(str_field(choice, "name").unwrap_or_default().to_owned())
            }
            _ => ToolChoice::Auto,
        });
        if choice
            .get("disable_parallel_tool_use")
            .and_then(Value::as_bool)
            == Some(true)
        {
            req.parallel_tool_calls = Some(false);
        }
    }
    Ok(req)
}

fn with_cache(mut block: Map<String, Value>, cache_control: &Option<Value>) -> Value {
    if let Some(cc) = cache_control {
        block.insert("cache_control".into(), cc.clone());
    }
    Value::Object(block)
}

fn source_json(source: &MediaSource) -> Value {
    match source {
        MediaSource::Url(url) => json!({"type": "url", "url": url}),
        MediaSource::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        MediaSource::Text(text) => {
            json!({"type": "text", "media_type": "text/plain", "data": text})
        }
    }
}

pub(super) fn encode_part(p: &Part) -> Result<Value, WireError> {
    Ok(match p {
        Part::Text(t) => {
            let mut b = Map::new();
            b.insert("type".into(), json!("text"));
            b.insert("text".into(), json!(t.text));
            with_cache(b, &t.cache_control)
        }
        Part::Image {
            source,
            cache_control,
        } => {
            if matches!(source, MediaSource::Text(_)) {
                return Err(cannot(
                    "an image given as text",
                    "send it as base64 or a URL",
                ));
            }
            let mut b = Map::new();
            b.insert("type".into(), json!("image"));
            b.insert("source".into(), source_json(source));
            with_cache(b, cache_control)
        }
        Part::Document {
            source,
            filename,
            cache_control,
        } => {
            let mut b = Map::new();
            b.insert("type".into(), json!("document"));
            b.insert("source".into(), source_json(source));
            if let Some(title) = filename {
                b.insert("title".into(), json!(title));
            }
            with_cache(b, cache_control)
        }
        Part::ToolCall {
            id,
            name,
            arguments,
        } => {
            let input: Value = if arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(arguments).map_err(|_| {
                    cannot(
                        format!("tool call {id}'s arguments, which are not valid JSON,"),
                        "Anthropic takes tool input as a JSON object",
                    )
                })?
            };
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Part::ToolResult {
            call_id,
            content,
            is_error,
            cache_control,
        } => {
            let content: Result<Vec<Value>, WireError> = content.iter().map(encode_part).collect();
            let mut b = Map::new();
            b.insert("type".into(), json!("tool_result"));
            b.insert("tool_use_id".into(), json!(call_id));
            b.insert("content".into(), Value::Array(content?));
            if *is_error {
                b.insert("is_error".into(), json!(true));
            }
            with_cache(b, cache_control)
        }
        Part::Thinking { text, signature } => match signature {
            Some(sig) => json!({"type": "thinking", "thinking": text, "signature": sig}),
            // Anthropic verifies signatures; unsigned reasoning (from another provider) has
            // none to give and is left out, as the API would refuse it.
            None => Value::Null,
        },
        Part::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
    })
}

pub fn encode_request(req: &Request, report: &mut Report) -> Result<Vec<u8>, WireError> {
    let mut out = Map::new();
    out.insert("model".into(), json!(req.model));
    out.insert(
        "max_tokens".into(),
        json!(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !req.system.is_empty() {
        let system: Vec<Value> = req
            .system
            .iter()
            .map(|t| {
                let mut b = Map::new();
                b.insert("type".into(), json!("text"));
                b.insert("text".into(), json!(t.text));
                with_cache(b, &t.cache_control)
            })
            .collect();
        out.insert("system".into(), Value::Array(system));
    }
    let mut messages = Vec::new();
    for m in &req.messages {
        let mut content = Vec::new();
        for p in &m.parts {
            let v = encode_part(p)?;
            if !v.is_null() {
                content.push(v);
            }
        }
        if content.is_empty() {
            continue;
        }
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        messages.push(json!({"role": role, "content": content}));
    }
    out.insert("messages".into(), Value::Array(messages));
    // Anthropic's extended thinking takes its budget out of max_tokens, which must exceed
    // it, and accepts no temperature or top_p change: both are adjusted rather than sent to
    // a certain 400.
    if let Some(budget) = req.reasoning.as_ref().map(Reasoning::budget) {
        out.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
        let max = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        if max <= budget {
            out.insert("max_tokens".into(), json!(max + budget));
        }
    } else {
        if let Some(t) = req.temperature {
            out.insert("temperature".into(), json!(t));
        }
        if let Some(p) = req.top_p {
            out.insert("top_p".into(), json!(p));
        }
    }
    if !req.stop.is_empty() {
        out.insert("stop_sequences".into(), json!(req.stop));
    }
    if let Some(user) = &req.user {
        out.insert("metadata".into(), json!({"user_id": user}));
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut b = Map::new();
                b.insert("name".into(), json!(t.name));
                if let Some(d) = &t.description {
                    b.insert("description".into(), json!(d));
                }
                b.insert("input_schema".into(), t.schema.clone());
                with_cache(b, &t.cache_control)
            })
            .collect();
        out.insert("tools".into(), Value::Array(tools));
    }
    let disable_parallel = req.parallel_tool_calls == Some(false);
    let choice = match &req.tool_choice {
        Some(ToolChoice::Auto) => Some(json!({"type": "auto"})),
        Some(ToolChoice::None) => Some(json!({"type": "none"})),
        Some(ToolChoice::Required) => Some(json!({"type": "any"})),
        Some(ToolChoice::Named(name)) => Some(json!({"type": "tool", "name": name})),
        None if disable_parallel && !req.tools.is_empty() => Some(json!({"type": "auto"})),
        None => None,
    };
    if let Some(mut choice) = choice {
        if disable_parallel {
            if let Some(obj) = choice.as_object_mut() {
                obj.insert("disable_parallel_tool_use".into(), json!(true));
            }
        }
        out.insert("tool_choice".into(), choice);
    }
    if req.verbosity.is_some() {
        report.drop_ir(Carried::Verbosity);
    }
    match &req.response_format {
        None => {}
        Some(ResponseFormat::Json) => {
            return Err(cannot(
                "a JSON answer without a schema",
                "Anthropic holds an answer only to a JSON schema; send one",
            ))
        }
        Some(ResponseFormat::JsonSchema(schema)) => {
            let mut schema = schema.clone();
            close_objects(&mut schema);
            out.insert(
                "output_config".into(),
                json!({"format": {"type": "json_schema", "schema": schema}}),
            );
        }
    }
    if req.prompt_cache_key.is_some() {
        mark_cache_breakpoints(&mut out);
    }
    if req.stream {
        out.insert("stream".into(), json!(true));
    }
    serde_json::to_vec(&Value::Object(out)).map_err(|e| bad("messages", e.to_string()))
}

/// Anthropic's structured outputs take an object schema only with `additionalProperties:
/// false`; an output schema that leaves it out means the same for an answer.
fn close_objects(schema: &mut Value) {
    let Some(o) = schema.as_object_mut() else {
        return;
    };
    let is_object =
        o.get("type").and_then(Value::as_str) == Some("object") || o.contains_key("properties");
    if is_object {
        o.entry("additionalProperties").or_insert(json!(false));
    }
    for (key, child) in o.iter_mut() {
        match key.as_str() {
            "properties" | "$defs" | "definitions" => {
                if let Some(children) = child.as_object_mut() {
                    children.values_mut().for_each(close_objects);
                }
            }
            "items" => close_objects(child),
            "anyOf" | "allOf" | "oneOf" => {
                if let Some(children) = child.as_array_mut() {
                    children.iter_mut().for_each(close_objects);
                }
            }
            _ => {}
        }
    }
}

/// A client that names a prompt-cache key wants its prefix cached; Anthropic caches only
/// up to explicit breakpoints, so the end of the system prompt and of the last message get
/// one each — unless the request already places its own.
fn mark_cache_breakpoints(out: &mut Map<String, Value>) {
    let has_marker = serde_json::to_string(&*out)
        .map(|s| s.contains("\"cache_control\""))
        .unwrap_or(true);
    if has_marker {
        return;
    }
    fn last_block(v: Option<&mut Value>) -> Option<&mut Map<String, Value>> {
        v?.as_array_mut()?.last_mut()?.as_object_mut()
    }
    let ephemeral = json!({"type": "ephemeral"});
    if let Some(block) = last_block(out.get_mut("system")) {
        block.insert("cache_control".into(), ephemeral.clone());
    }
    let last_message = out
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|m| m.last_mut());
    if let Some(block) = last_block(last_message.and_then(|m| m.get_mut("content"))) {
        block.insert("cache_control".into(), ephemeral);
    }
}

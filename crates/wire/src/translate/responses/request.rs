//! OpenAI Responses requests: read into the IR, written from it.

use serde_json::{json, Map, Value};

use crate::error::WireError;
use crate::provider::ProviderKind;
use crate::translate::compat::{self, Carried, Field, Policy, Report};
use crate::translate::ir::{
    MediaSource, Part, Reasoning, Request, ResponseFormat, Role, TextBlock, Tool, ToolChoice,
    FREEFORM_ARGUMENT,
};
use crate::translate::{
    bad, cannot, function_tool, openai_tool_choice, parse_object, push_message, str_field,
};

/// What happens to each Responses request field when the provider speaks another dialect
/// (see [`crate::translate::compat`]).
pub const FIELDS: &[(&str, Field)] = &[
    ("model", Field::Carried),
    ("input", Field::Carried),
    ("instructions", Field::Carried),
    ("tools", Field::Carried),
    ("tool_choice", Field::Carried),
    ("parallel_tool_calls", Field::Carried),
    ("max_output_tokens", Field::Carried),
    ("temperature", Field::Carried),
    ("top_p", Field::Carried),
    ("stream", Field::Carried),
    ("user", Field::Carried),
    ("safety_identifier", Field::Carried),
    ("reasoning", Field::Carried),
    ("text", Field::Carried),
    ("prompt_cache_key", Field::Carried),
    ("include", Field::Carried),
    ("store", Field::Dropped),
    ("metadata", Field::Dropped),
    ("client_metadata", Field::Dropped),
    ("truncation", Field::Dropped),
    ("service_tier", Field::Dropped),
    ("stream_options", Field::Dropped),
    ("top_logprobs", Field::Dropped),
    ("max_tool_calls", Field::Dropped),
    ("prompt_cache_retention", Field::Dropped),
    (
        "previous_response_id",
        Field::Refused("the target keeps no conversation; send the whole history in `input`"),
    ),
    (
        "conversation",
        Field::Refused("the target keeps no conversation; send the whole history in `input`"),
    ),
    (
        "prompt",
        Field::Refused("stored prompt templates live at OpenAI; send the prompt's text"),
    ),
    (
        "background",
        Field::Refused("background responses are kept at OpenAI; stream instead"),
    ),
];

/// A `custom` tool (free-text input, optionally under a grammar) as a function of one
/// string, for providers that only call functions.
fn freeform_tool(def: &Value) -> Tool {
    let mut about = String::from("The tool's whole input, as plain text.");
    if let Some(format) = def
        .get("format")
        .filter(|f| str_field(f, "type") != Some("text"))
    {
        let syntax = str_field(format, "syntax").unwrap_or("grammar");
        if let Some(definition) = str_field(format, "definition") {
            about.push_str(&format!(" It follows this {syntax} grammar:\n{definition}"));
        }
    }
    Tool {
        name: str_field(def, "name").unwrap_or_default().to_owned(),
        description: str_field(def, "description").map(str::to_owned),
        schema: json!({
            "type": "object",
            "properties": {FREEFORM_ARGUMENT: {"type": "string", "description": about}},
            "required": [FREEFORM_ARGUMENT],
        }),
        cache_control: None,
        freeform: true,
    }
}

/// The one `include` value the IR carries: reasoning the client can send back.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

fn content_parts(content: &Value) -> Result<Vec<Part>, WireError> {
    match content {
        Value::String(s) => Ok(vec![Part::Text(TextBlock {
            text: s.clone(),
            cache_control: None,
        })]),
        Value::Array(items) => items
            .iter()
            .map(|item| match str_field(item, "type") {
                Some("input_text") | Some("output_text") | Some("text") => {
                    Ok(Part::Text(TextBlock {
                        text: str_field(item, "text").unwrap_or_default().to_owned(),
                        cache_control: None,
                    }))
                }
                Some("input_file") => {
                    let source = match (str_field(item, "file_data"), str_field(item, "file_url")) {
                        (Some(data), _) => crate::translate::chat::parse_image_url(data),
                        (None, Some(url)) => MediaSource::Url(url.to_owned()),
                        _ => {
                            return Err(cannot(
                                "an input_file by file_id",
                                "send the file inline or by URL",
                            ))
                        }
                    };
                    Ok(Part::Document {
                        source,
                        filename: str_field(item, "filename").map(str::to_owned),
                        cache_control: None,
                    })
                }
                Some("input_image") => match str_field(item, "image_url") {
                    Some(url) => Ok(Part::Image {
                        source: crate::translate::chat::parse_image_url(url),
                        cache_control: None,
                    }),
                    None => Err(cannot(
                        "an input_image by file_id",
                        "send images as a URL or a data URL",
                    )),
                },
                Some(other) => Err(cannot(
                    format!("a `{other}` content part"),
                    "send text or images",
                )),
                None => Err(bad("input", "a content part needs a `type`")),
            })
            .collect(),
        _ => Err(bad(
            "input",
            "`content` must be a string or an array of parts",
        )),
    }
}

pub fn decode_request(
    body: &[u8],
    policy: Policy,
    report: &mut Report,
) -> Result<Request, WireError> {
    let obj = parse_object(body)?;
    policy.check(&obj, FIELDS, "Responses", report)?;
    if let Some(format) = obj.get("text").and_then(|t| t.get("format")) {
        if str_field(format, "type").is_some_and(|t| t != "text") {
            return Err(cannot(
                "a structured `text.format`",
                "route this model to an OpenAI provider",
            ));
        }
    }
    let mut req = Request {
        model: obj
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        stream: obj.get("stream").and_then(Value::as_bool).unwrap_or(false),
        max_tokens: obj.get("max_output_tokens").and_then(Value::as_u64),
        temperature: obj.get("temperature").and_then(Value::as_f64),
        top_p: obj.get("top_p").and_then(Value::as_f64),
        user: obj
            .get("safety_identifier")
            .or_else(|| obj.get("user"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        parallel_tool_calls: obj.get("parallel_tool_calls").and_then(Value::as_bool),
        reasoning: compat::effort(
            obj.get("reasoning").and_then(|r| r.get("effort")),
            "reasoning.effort",
            compat::OPENAI_EFFORTS,
        )?
        .map(Reasoning::Effort),
        verbosity: compat::verbosity(
            obj.get("text").and_then(|t| t.get("verbosity")),
            "text.verbosity",
        )?,
        prompt_cache_key: obj
            .get("prompt_cache_key")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..Request::default()
    };
    match obj.get("include") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                match item.as_str() {
                    Some(ENCRYPTED_REASONING) => req.encrypted_reasoning = true,
                    // The other includes ask for OpenAI-side details (search sources, logprobs).
                    _ => report.drop_field("include"),
                }
            }
        }
        Some(_) => return Err(bad("include", "`include` must be an array of strings")),
    }
    if let Some(instructions) = obj.get("instructions").and_then(Value::as_str) {
        req.system.push(TextBlock {
            text: instructions.to_owned(),
            cache_control: None,
        });
    }
    match obj.get("input") {
        Some(Value::String(s)) => {
            push_message(&mut req.messages, Role::User, content_parts(&json!(s))?)
        }
        Some(Value::Array(items)) => {
            for item in items {
                match str_field(item, "type").unwrap_or("message") {
                    "message" => {
                        let content = item.get("content").unwrap_or(&Value::Null);
                        match str_field(item, "role") {
                            Some("user") => {
                                push_message(&mut req.messages, Role::User, content_parts(content)?)
                            }
                            Some("assistant") => {
                                push_message(&mut req.messages, Role::Assistant, content_parts(content)?)
                            }
                            Some("system") | Some("developer") => {
                                for p in content_parts(content)? {
                                    if let Part::Text(t) = p {
                                        req.system.push(t);
                                    }
                                }
                            }
                            _ => return Err(bad("input", "each message item needs a `role`")),
                        }
                    }
                    "function_call" => push_message(
                        &mut req.messages,
                        Role::Assistant,
                        vec![Part::ToolCall {
                            id: str_field(item, "call_id").unwrap_or_default().to_owned(),
                            name: str_field(item, "name").unwrap_or_default().to_owned(),
                            arguments: str_field(item, "arguments").unwrap_or("{}").to_owned(),
                        }],
                    ),
                    "custom_tool_call" => push_message(
                        &mut req.messages,
                        Role::Assistant,
                        vec![Part::ToolCall {
                            id: str_field(item, "call_id").unwrap_or_default().to_owned(),
                            name: str_field(item, "name").unwrap_or_default().to_owned(),
                            arguments: json!({FREEFORM_ARGUMENT: str_field(item, "input").unwrap_or_default()})
                                .to_string(),
                        }],
                    ),
                    "function_call_output" | "custom_tool_call_output" => {
                        let content = match item.get("output") {
                            Some(Value::String(s)) => content_parts(&json!(s))?,
                            Some(v @ Value::Array(_)) => content_parts(v)?,
                            _ => Vec::new(),
                        };
                        push_message(
                            &mut req.messages,
                            Role::User,
                            vec![Part::ToolResult {
                                call_id: str_field(item, "call_id").unwrap_or_default().to_owned(),
                                content,
                                is_error: false,
                                cache_control: None,
                            }],
                        );
                    }
                    "reasoning" => {
                        let text: String = item
                            .get("summary")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(|s| str_field(s, "text"))
                            .collect();
                        push_message(
                            &mut req.messages,
                            Role::Assistant,
                            vec![Part::Thinking {
                                text,
                                signature: str_field(item, "encrypted_content").map(str::to_owned),
                            }],
                        );
                    }
                    other => {
                        return Err(cannot(
                            format!("a `{other}` input item"),
                            "send messages, function calls and their outputs",
                        ))
                    }
                }
            }
        }
        _ => {
            return Err(bad(
                "input",
                "`input` must be a string or an array of items",
            ))
        }
    }
    if let Some(tools) = obj.get("tools").and_then(Value::as_array) {
        for t in tools {
            match str_field(t, "type") {
                Some("function") => req.tools.push(function_tool(t)),
                Some("custom") => req.tools.push(freeform_tool(t)),
                // A built-in tool (web search, tool search) only offered is left out: the
                // model answers without it, and the client is told.
                other => {
                    let kind = other.unwrap_or("untyped");
                    if policy.strict {
                        return Err(cannot(
                            format!("the built-in tool `{kind}`"),
                            "only function tools translate",
                        ));
                    }
                    let name = str_field(t, "name").map_or(String::new(), |n| format!(":{n}"));
                    report.drop_field(format!("tools[{kind}{name}]"));
                }
            }
        }
    }
    req.tool_choice = openai_tool_choice(obj.get("tool_choice"), |v| str_field(v, "name"))?;
    Ok(req)
}

pub(crate) fn reasoning_item(id: &str, text: &str, signature: &Option<String>) -> Value {
    let mut item = Map::new();
    item.insert("type".into(), json!("reasoning"));
    item.insert("id".into(), json!(id));
    item.insert(
        "summary".into(),
        json!([{"type": "summary_text", "text": text}]),
    );
    if let Some(sig) = signature {
        item.insert("encrypted_content".into(), json!(sig));
    }
    Value::Object(item)
}

pub fn encode_request(
    req: &Request,
    kind: ProviderKind,
    report: &mut Report,
) -> Result<Vec<u8>, WireError> {
    let mut input = Vec::new();
    for (i, m) in req.messages.iter().enumerate() {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut content = Vec::new();
        let flush = |content: &mut Vec<Value>, input: &mut Vec<Value>| {
            if !content.is_empty() {
                input.push(json!({"role": role, "content": std::mem::take(content)}));
            }
        };
        for (j, p) in m.parts.iter().enumerate() {
            match p {
                Part::Text(t) => {
                    let kind = if m.role == Role::User {
                        "input_text"
                    } else {
                        "output_text"
                    };
                    content.push(json!({"type": kind, "text": t.text}));
                }
                Part::Image { source, .. } => content.push(
                    json!({"type": "input_image", "image_url": crate::translate::chat::image_url(source)}),
                ),
                Part::Document {
                    source, filename, ..
                } => {
                    match source {
                        MediaSource::Url(url) => {
                            content.push(json!({"type": "input_file", "file_url": url}))
                        }
                        _ => {
                            let (filename, data) = crate::translate::chat::file_part(source, filename)?;
                            content.push(json!({"type": "input_file", "filename": filename, "file_data": data}));
                        }
                    }
                }
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    flush(&mut content, &mut input);
                    input.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments}));
                }
                Part::ToolResult {
                    call_id,
                    content: result,
                    is_error,
                    ..
                } => {
                    flush(&mut content, &mut input);
                    let mut text = String::new();
                    for r in result {
                        match r {
                            Part::Text(t) => text.push_str(&t.text),
                            _ => {
                                return Err(cannot(
                                    "an image or document inside a tool result",
                                    "function_call_output carries text here",
                                ))
                            }
                        }
                    }
                    if *is_error {
                        text.insert_str(0, crate::translate::chat::TOOL_ERROR_MARKER);
                    }
                    input.push(
                        json!({"type": "function_call_output", "call_id": call_id, "output": text}),
                    );
                }
                Part::Thinking { text, signature } => {
                    flush(&mut content, &mut input);
                    input.push(reasoning_item(&format!("rs_{i}_{j}"), text, signature));
                }
                Part::RedactedThinking { .. } => {}
            }
        }
        flush(&mut content, &mut input);
    }
    let mut out = Map::new();
    out.insert("model".into(), json!(req.model));
    if !req.system.is_empty() {
        let text: Vec<&str> = req.system.iter().map(|t| t.text.as_str()).collect();
        out.insert("instructions".into(), json!(text.join("\n\n")));
    }
    out.insert("input".into(), Value::Array(input));
    if let Some(n) = req.max_tokens {
        out.insert("max_output_tokens".into(), json!(n));
    }
    if let Some(t) = req.temperature {
        out.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        out.insert("top_p".into(), json!(p));
    }
    if !req.stop.is_empty() {
        return Err(cannot(
            "stop sequences",
            "the Responses API has no stop parameter",
        ));
    }
    if let Some(user) = &req.user {
        out.insert("user".into(), json!(compat::openai_user(user)));
    }
    match &req.reasoning {
        // Adaptive thinking leaves the depth to the model: the provider's default effort.
        None | Some(Reasoning::Adaptive) => {}
        Some(r) => {
            out.insert("reasoning".into(), json!({"effort": r.effort()}));
        }
    }
    // OpenAI documents these; other Responses servers may not know them.
    let openai = kind.is_openai();
    let mut text = Map::new();
    match (&req.verbosity, openai) {
        (Some(v), true) => {
            text.insert("verbosity".into(), json!(v));
        }
        (Some(_), false) => report.drop_ir(Carried::Verbosity),
        (None, _) => {}
    }
    match &req.response_format {
        None => {}
        Some(ResponseFormat::Json) => {
            text.insert("format".into(), json!({"type": "json_object"}));
        }
        Some(ResponseFormat::JsonSchema(schema)) => {
            text.insert(
                "format".into(),
                json!({"type": "json_schema", "name": ResponseFormat::SCHEMA_NAME, "schema": schema}),
            );
        }
    }
    if !text.is_empty() {
        out.insert("text".into(), Value::Object(text));
    }
    match (&req.prompt_cache_key, openai) {
        (Some(k), true) => {
            out.insert("prompt_cache_key".into(), json!(k));
        }
        (Some(_), false) => report.drop_ir(Carried::PromptCacheKey),
        (None, _) => {}
    }
    if req.encrypted_reasoning {
        out.insert("include".into(), json!([ENCRYPTED_REASONING]));
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut f = Map::new();
                f.insert("type".into(), json!("function"));
                f.insert("name".into(), json!(t.name));
                if let Some(d) = &t.description {
                    f.insert("description".into(), json!(d));
                }
                f.insert("parameters".into(), t.schema.clone());
                Value::Object(f)
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
                ToolChoice::Named(name) => json!({"type": "function", "name": name}),
            },
        );
    }
    if let Some(p) = req.parallel_tool_calls {
        out.insert("parallel_tool_calls".into(), json!(p));
    }
    // The gateway keeps no conversation state at the provider for a client of another dialect.
    out.insert("store".into(), json!(false));
    if req.stream {
        out.insert("stream".into(), json!(true));
    }
    serde_json::to_vec(&Value::Object(out)).map_err(|e| bad("input", e.to_string()))
}

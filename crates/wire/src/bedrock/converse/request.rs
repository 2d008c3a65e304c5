//! A Messages request as a Converse request
//! (<https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html>).
//! Converse says most of what Messages says in other words: a content block is an object
//! keyed by its kind instead of tagged with `type`, a cache breakpoint is a block of its own
//! after the content it closes, the sampling settings sit in `inferenceConfig`, and what
//! only some models understand (`top_k`, `thinking`) goes through untouched in
//! `additionalModelRequestFields`.

use base64::Engine as _;
use serde_json::{json, Map, Value};

/// Converse refuses a request whose history holds tool calls or results unless it
/// declares tools. A Messages request may have none there (an agent's summary of a
/// transcript), or refuse them all with `tool_choice: none`; this stands in, and its
/// description tells the model there is nothing to call.
const PLACEHOLDER_TOOL: &str = "no_tools_available";

/// Converse refuses an empty text block, and a tool that printed nothing has an empty
/// result: this stands in for it.
const EMPTY_TOOL_RESULT: &str = "(no output)";

/// A Messages request body as a Converse (or ConverseStream) request body. The model and
/// `stream` are the URL's business, and `metadata` and `service_tier` have nothing to go to;
/// everything else the client asked for is carried or refused with the reason.
///
/// `thinking` is Claude's own field: for OpenAI's models on Bedrock (`openai.gpt-oss-…`) it
/// becomes their `reasoning_effort`; other models have no field for it, and it is left
/// out (a depth of reasoning asked for, not a fact of the conversation).
pub fn converse_request(messages_body: &[u8], model: &str) -> Result<Vec<u8>, String> {
    let claude = crate::bedrock::is_anthropic_model(model);
    let openai = model.starts_with("openai.") || model.contains(".openai.");
    let body = match serde_json::from_slice::<Value>(messages_body) {
        Ok(Value::Object(body)) => body,
        Ok(_) => return Err("the request body is not a JSON object".into()),
        Err(e) => return Err(format!("the request body is not JSON: {e}")),
    };
    let mut out = Map::new();
    let mut inference = Map::new();
    let mut additional = Map::new();
    let mut tools = None;
    let mut tool_choice = None;
    for (key, value) in body {
        if value.is_null() {
            continue;
        }
        match key.as_str() {
            "model" | "stream" | "metadata" | "service_tier" => {}
            "messages" => {
                out.insert("messages".into(), messages(&value)?);
            }
            "system" => {
                let system = system(&value)?;
                if !system.is_empty() {
                    out.insert("system".into(), Value::Array(system));
                }
            }
            "max_tokens" => {
                inference.insert("maxTokens".into(), value);
            }
            "temperature" => {
                inference.insert("temperature".into(), value);
            }
            "top_p" => {
                inference.insert("topP".into(), value);
            }
            "stop_sequences" => {
                inference.insert("stopSequences".into(), value);
            }
            "tools" => tools = Some(value),
            "tool_choice" => tool_choice = Some(value),
            "thinking" if claude => {
                additional.insert(key, value);
            }
            "thinking" if openai => {
                if let Some(effort) = reasoning_effort(&value) {
                    additional.insert("reasoning_effort".into(), Value::from(effort));
                }
            }
            "thinking" => {}
            _ => {
                additional.insert(key, value);
            }
        }
    }
    let history_has_tools = out
        .get("messages")
        .and_then(Value::as_array)
        .is_some_and(|m| m.iter().any(has_tool_blocks));
    if let Some(config) = tool_config(tools.as_ref(), tool_choice.as_ref(), history_has_tools)? {
        out.insert("toolConfig".into(), config);
    }
    if !inference.is_empty() {
        out.insert("inferenceConfig".into(), Value::Object(inference));
    }
    if !additional.is_empty() {
        out.insert(
            "additionalModelRequestFields".into(),
            Value::Object(additional),
        );
    }
    serde_json::to_vec(&out).map_err(|e| e.to_string())
}

/// Claude's thinking budget as OpenAI's reasoning effort; `None` when thinking is off.
fn reasoning_effort(thinking: &Value) -> Option<&'static str> {
    match thinking.get("type").and_then(Value::as_str) {
        Some("disabled") | None => None,
        _ => Some(
            match thinking.get("budget_tokens").and_then(Value::as_u64) {
                Some(n) if n <= 2048 => "low",
                Some(n) if n <= 8192 => "medium",
                Some(_) => "high",
                None => "medium",
            },
        ),
    }
}

fn str_of<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{path}.{key}: a string is required"))
}

/// Converse's breakpoint for a block's `cache_control`: `ttl` carried when it is one
/// Bedrock takes.
fn cache_point(block: &Value) -> Option<Value> {
    let control = block.get("cache_control").filter(|c| c.is_object())?;
    let mut point = json!({"type": "default"});
    if let Some(ttl @ ("5m" | "1h")) = control.get("ttl").and_then(Value::as_str) {
        point["ttl"] = ttl.into();
    }
    Some(json!({ "cachePoint": point }))
}

fn system(v: &Value) -> Result<Vec<Value>, String> {
    match v {
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![json!({ "text": s })]),
        Value::Array(blocks) => {
            let mut out = Vec::new();
            for (i, b) in blocks.iter().enumerate() {
                let path = format!("system[{i}]");
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => out.push(json!({ "text": str_of(b, "text", &path)? })),
                    other => {
                        return Err(format!(
                            "{path}: a system block of type {} cannot be sent to Bedrock's Converse API",
                            other.unwrap_or("(none)")
                        ))
                    }
                }
                out.extend(cache_point(b));
            }
            Ok(out)
        }
        _ => Err("system: a string or a list of blocks is required".into()),
    }
}

fn messages(v: &Value) -> Result<Value, String> {
    let list = v.as_array().ok_or("messages: a list is required")?;
    let mut documents = 0;
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let path = format!("messages[{i}]");
        let role = str_of(m, "role", &path)?;
        if role != "user" && role != "assistant" {
            return Err(format!("{path}.role: {role:?} is not user or assistant"));
        }
        let content = match m.get("content") {
            Some(Value::String(s)) => vec![json!({ "text": s })],
            Some(Value::Array(blocks)) => {
                let mut content = Vec::with_capacity(blocks.len());
                for (j, b) in blocks.iter().enumerate() {
                    content.push(block(b, &format!("{path}.content[{j}]"), &mut documents)?);
                    content.extend(cache_point(b));
                }
                content
            }
            _ => {
                return Err(format!(
                    "{path}.content: a string or a list of blocks is required"
                ))
            }
        };
        out.push(json!({"role": role, "content": content}));
    }
    Ok(Value::Array(out))
}

fn has_tool_blocks(message: &Value) -> bool {
    message
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|b| b.get("toolUse").is_some() || b.get("toolResult").is_some())
        })
}

fn block(b: &Value, path: &str, documents: &mut usize) -> Result<Value, String> {
    let kind = b.get("type").and_then(Value::as_str).unwrap_or("(none)");
    Ok(match kind {
        "text" => json!({ "text": str_of(b, "text", path)? }),
        "image" => json!({ "image": image(b, path)? }),
        "document" => json!({ "document": document(b, path, documents)? }),
        "tool_use" => json!({"toolUse": {
            "toolUseId": str_of(b, "id", path)?,
            "name": str_of(b, "name", path)?,
            "input": b.get("input").cloned().unwrap_or_else(|| json!({})),
        }}),
        "tool_result" => tool_result(b, path, documents)?,
        "thinking" => {
            let mut text = json!({ "text": str_of(b, "thinking", path)? });
            if let Some(signature) = b.get("signature").and_then(Value::as_str) {
                text["signature"] = signature.into();
            }
            json!({"reasoningContent": {"reasoningText": text}})
        }
        "redacted_thinking" => {
            json!({"reasoningContent": {"redactedContent": str_of(b, "data", path)?}})
        }
        other => {
            return Err(format!(
                "{path}: a {other} block cannot be sent to Bedrock's Converse API"
            ))
        }
    })
}

fn image(b: &Value, path: &str) -> Result<Value, String> {
    let source = b.get("source").unwrap_or(&Value::Null);
    let path = format!("{path}.source");
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {}
        other => {
            return Err(format!(
                "{path}: an image from a {} source cannot be sent to Bedrock's Converse API; send it as base64",
                other.unwrap_or("(none)")
            ))
        }
    }
    let format = match str_of(source, "media_type", &path)? {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            return Err(format!(
                "{path}.media_type: {other} is not an image Converse takes"
            ))
        }
    };
    Ok(json!({"format": format, "source": {"bytes": str_of(source, "data", &path)?}}))
}

/// A document from base64 or plain text. Converse names every document, with letters,
/// digits, single spaces, hyphens, parentheses and brackets only.
fn document(b: &Value, path: &str, documents: &mut usize) -> Result<Value, String> {
    *documents += 1;
    let source = b.get("source").unwrap_or(&Value::Null);
    let spath = format!("{path}.source");
    let media_type = str_of(source, "media_type", &spath)?;
    let format = match media_type {
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        "text/csv" => "csv",
        "text/html" => "html",
        "text/markdown" => "md",
        other => {
            return Err(format!(
                "{spath}.media_type: {other} is not a document Converse takes"
            ))
        }
    };
    let bytes = match source.get("type").and_then(Value::as_str) {
        Some("base64") => str_of(source, "data", &spath)?.to_owned(),
        Some("text") => {
            base64::engine::general_purpose::STANDARD.encode(str_of(source, "data", &spath)?)
        }
        other => {
            return Err(format!(
                "{spath}: a document from a {} source cannot be sent to Bedrock's Converse API",
                other.unwrap_or("(none)")
            ))
        }
    };
    let title = b.get("title").and_then(Value::as_str).unwrap_or("");
    let mut name = String::new();
    for c in title.chars() {
        let c = if c.is_alphanumeric() || "-()[]".contains(c) {
            c
        } else {
            ' '
        };
        if c != ' ' || !(name.is_empty() || name.ends_with(' ')) {
            name.push(c);
        }
    }
    let mut name: String = name.trim_end().chars().take(200).collect();
    if name.trim().is_empty() {
        name = format!("document {documents}");
    }
    Ok(json!({"format": format, "name": name.trim_end(), "source": {"bytes": bytes}}))
}

fn tool_result(b: &Value, path: &str, documents: &mut usize) -> Result<Value, String> {
    let mut content = Vec::new();
    match b.get("content") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            if !s.is_empty() {
                content.push(json!({ "text": s }));
            }
        }
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let ipath = format!("{path}.content[{i}]");
                match item.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = str_of(item, "text", &ipath)?;
                        if !text.is_empty() {
                            content.push(json!({ "text": text }));
                        }
                    }
                    Some("image") => content.push(json!({ "image": image(item, &ipath)? })),
                    Some("document") => {
                        content.push(json!({ "document": document(item, &ipath, documents)? }))
                    }
                    other => {
                        return Err(format!(
                            "{ipath}: a {} block in a tool result cannot be sent to Bedrock's Converse API",
                            other.unwrap_or("(none)")
                        ))
                    }
                }
            }
        }
        Some(_) => {
            return Err(format!(
                "{path}.content: a string or a list of blocks is required"
            ))
        }
    }
    if content.is_empty() {
        content.push(json!({ "text": EMPTY_TOOL_RESULT }));
    }
    let mut result = json!({
        "toolUseId": str_of(b, "tool_use_id", path)?,
        "content": content,
    });
    if b.get("is_error").and_then(Value::as_bool) == Some(true) {
        result["status"] = "error".into();
    }
    Ok(json!({ "toolResult": result }))
}

/// `tools` and `tool_choice` as `toolConfig`. Converse has no "none": the tools are left
/// out instead, unless the history needs some declared (see [`PLACEHOLDER_TOOL`]).
fn tool_config(
    tools: Option<&Value>,
    choice: Option<&Value>,
    history_has_tools: bool,
) -> Result<Option<Value>, String> {
    let choice = match choice {
        None => None,
        Some(c) => match c.get("type").and_then(Value::as_str) {
            Some("auto") => Some(json!({"auto": {}})),
            Some("any") => Some(json!({"any": {}})),
            Some("tool") => Some(json!({"tool": {"name": str_of(c, "name", "tool_choice")?}})),
            Some("none") => Some(Value::Null),
            other => {
                return Err(format!(
                    "tool_choice: {} is not auto, any, tool or none",
                    other.unwrap_or("(no type)")
                ))
            }
        },
    };
    let refused = choice.as_ref().is_some_and(Value::is_null);
    let mut specs = Vec::new();
    if !refused {
        let list = match tools {
            None => &[][..],
            Some(Value::Array(list)) => list.as_slice(),
            Some(_) => return Err("tools: a list is required".into()),
        };
        for (i, tool) in list.iter().enumerate() {
            let path = format!("tools[{i}]");
            if let Some(kind) = tool.get("type").and_then(Value::as_str) {
                if kind != "custom" {
                    return Err(format!(
                        "{path}: Anthropic's own {kind} tool cannot be sent to Bedrock's Converse API"
                    ));
                }
            }
            let schema = tool
                .get("input_schema")
                .filter(|s| s.is_object())
                .ok_or_else(|| format!("{path}.input_schema: an object is required"))?;
            let mut spec = json!({
                "name": str_of(tool, "name", &path)?,
                "inputSchema": {"json": schema},
            });
            if let Some(d) = tool.get("description").and_then(Value::as_str) {
                spec["description"] = d.into();
            }
            specs.push(json!({ "toolSpec": spec }));
            specs.extend(cache_point(tool));
        }
    }
    if specs.is_empty() {
        if !history_has_tools {
            return Ok(None);
        }
        specs.push(json!({"toolSpec": {
            "name": PLACEHOLDER_TOOL,
            "description": "No tools are available for this request. Do not call this.",
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }}));
        return Ok(Some(json!({ "tools": specs })));
    }
    let mut config = json!({ "tools": specs });
    if let Some(choice) = choice.filter(|c| !c.is_null()) {
        config["toolChoice"] = choice;
    }
    Ok(Some(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converse(body: Value) -> Value {
        converse_for(body, "anthropic.claude-sonnet-4-5-20250929-v1:0")
    }

    fn converse_for(body: Value, model: &str) -> Value {
        let bytes = converse_request(&serde_json::to_vec(&body).unwrap(), model).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn thinking_goes_to_claude_as_it_is_to_gpt_oss_as_an_effort_and_to_no_other() {
        let body = json!({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}],
            "thinking": {"type": "enabled", "budget_tokens": 4000}});
        let claude = converse_for(body.clone(), "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
        assert_eq!(
            claude["additionalModelRequestFields"]["thinking"]["budget_tokens"],
            4000
        );
        let oss = converse_for(body.clone(), "openai.gpt-oss-120b-1:0");
        assert_eq!(
            oss["additionalModelRequestFields"],
            json!({"reasoning_effort": "medium"})
        );
        let nova = converse_for(body, "amazon.nova-pro-v1:0");
        assert!(nova.get("additionalModelRequestFields").is_none(), "{nova}");
    }

    fn refusal(body: Value) -> String {
        converse_request(&serde_json::to_vec(&body).unwrap(), "anthropic.claude-x").unwrap_err()
    }

    /// What Claude Code sends mid-session: cached system blocks, tools with the last one
    /// cached, a tool call and its result, an image, thinking, and sampling settings.
    #[test]
    fn a_coding_agents_request_becomes_converse() {
        let body = json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 32000,
            "stream": true,
            "temperature": 1,
            "top_k": 40,
            "metadata": {"user_id": "user_abc"},
            "thinking": {"type": "enabled", "budget_tokens": 4000},
            "stop_sequences": ["</done>"],
            "system": [
                {"type": "text", "text": "You are Claude Code."},
                {"type": "text", "text": "Project notes.", "cache_control": {"type": "ephemeral"}}
            ],
            "tools": [
                {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
                {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
            ],
            "tool_choice": {"type": "auto"},
            "messages": [
                {"role": "user", "content": "What is in src?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "I should list it.", "signature": "sig=="},
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls src"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "main.rs\nlib.rs"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "denied"}], "is_error": true},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                    {"type": "text", "text": "And this screenshot?", "cache_control": {"type": "ephemeral"}}
                ]}
            ]
        });
        assert_eq!(
            converse(body),
            json!({
                "system": [
                    {"text": "You are Claude Code."},
                    {"text": "Project notes."},
                    {"cachePoint": {"type": "default"}}
                ],
                "messages": [
                    {"role": "user", "content": [{"text": "What is in src?"}]},
                    {"role": "assistant", "content": [
                        {"reasoningContent": {"reasoningText": {"text": "I should list it.", "signature": "sig=="}}},
                        {"text": "Let me look."},
                        {"toolUse": {"toolUseId": "toolu_1", "name": "Bash", "input": {"command": "ls src"}}}
                    ]},
                    {"role": "user", "content": [
                        {"toolResult": {"toolUseId": "toolu_1", "content": [{"text": "main.rs\nlib.rs"}]}},
                        {"toolResult": {"toolUseId": "toolu_2", "content": [{"text": "denied"}], "status": "error"}},
                        {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}},
                        {"text": "And this screenshot?"},
                        {"cachePoint": {"type": "default"}}
                    ]}
                ],
                "inferenceConfig": {"maxTokens": 32000, "temperature": 1, "stopSequences": ["</done>"]},
                "toolConfig": {
                    "tools": [
                        {"toolSpec": {"name": "Bash", "description": "Run a command", "inputSchema": {"json": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}},
                        {"toolSpec": {"name": "Read", "inputSchema": {"json": {"type": "object", "properties": {"file_path": {"type": "string"}}}}}},
                        {"cachePoint": {"type": "default", "ttl": "1h"}}
                    ],
                    "toolChoice": {"auto": {}}
                },
                "additionalModelRequestFields": {
                    "top_k": 40,
                    "thinking": {"type": "enabled", "budget_tokens": 4000}
                }
            })
        );
    }

    #[test]
    fn tool_choices_map_and_none_leaves_the_tools_out() {
        let tools = json!([{"name": "t", "input_schema": {"type": "object"}}]);
        let with = |choice: Value| {
            converse(
                json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools, "tool_choice": choice}),
            )
        };
        assert_eq!(
            with(json!({"type": "any"}))["toolConfig"]["toolChoice"],
            json!({"any": {}})
        );
        assert_eq!(
            with(json!({"type": "tool", "name": "t"}))["toolConfig"]["toolChoice"],
            json!({"tool": {"name": "t"}})
        );
        assert!(with(json!({"type": "none"})).get("toolConfig").is_none());
        assert!(
            refusal(json!({"messages": [], "tool_choice": {"type": "maybe"}}))
                .contains("tool_choice")
        );
    }

    #[test]
    fn a_history_with_tool_calls_and_no_tools_declares_a_placeholder() {
        let body = json!({
            "system": "Summarize the conversation.",
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": ""}]}
            ]
        });
        let out = converse(body);
        assert_eq!(
            out["system"],
            json!([{"text": "Summarize the conversation."}])
        );
        assert_eq!(
            out["toolConfig"]["tools"][0]["toolSpec"]["name"],
            PLACEHOLDER_TOOL
        );
        assert!(out["toolConfig"].get("toolChoice").is_none());
        // An empty result gets text Converse accepts.
        assert_eq!(
            out["messages"][1]["content"][0]["toolResult"]["content"],
            json!([{"text": EMPTY_TOOL_RESULT}])
        );
    }

    #[test]
    fn documents_are_named_and_carried_as_bytes() {
        let out = converse(json!({"messages": [{"role": "user", "content": [
            {"type": "document", "title": "Q3 report: final!", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello"}},
            {"type": "redacted_thinking", "data": "opaque"}
        ]}]}));
        assert_eq!(
            out["messages"][0]["content"],
            json!([
                {"document": {"format": "pdf", "name": "Q3 report final", "source": {"bytes": "JVBERi0="}}},
                {"document": {"format": "txt", "name": "document 2", "source": {"bytes": "aGVsbG8="}}},
                {"reasoningContent": {"redactedContent": "opaque"}}
            ])
        );
    }

    #[test]
    fn what_converse_cannot_carry_is_refused_with_where_and_why() {
        let user = |content: Value| json!({"messages": [{"role": "user", "content": content}]});
        let cases = [
            (
                user(
                    json!([{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]),
                ),
                "messages[0].content[0].source: an image from a url source",
            ),
            (
                user(
                    json!([{"type": "image", "source": {"type": "base64", "media_type": "image/tiff", "data": ""}}]),
                ),
                "image/tiff",
            ),
            (
                user(json!([{"type": "server_tool_use", "id": "x"}])),
                "a server_tool_use block",
            ),
            (
                user(
                    json!([{"type": "document", "source": {"type": "url", "media_type": "application/pdf"}}]),
                ),
                "a url source",
            ),
            (
                json!({"messages": [], "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
                "Anthropic's own web_search_20250305 tool",
            ),
            (
                json!({"messages": [], "tools": [{"name": "t"}]}),
                "tools[0].input_schema",
            ),
            (
                json!({"messages": [{"role": "system", "content": "x"}]}),
                "is not user or assistant",
            ),
            (json!({"messages": "hi"}), "messages: a list"),
            (
                json!({"system": [{"type": "image"}], "messages": []}),
                "system[0]",
            ),
            (json!([1]), "not a JSON object"),
        ];
        for (body, expected) in cases {
            let e = refusal(body);
            assert!(e.contains(expected), "{e:?} should contain {expected:?}");
        }
        assert!(converse_request(b"{", "anthropic.claude-x").is_err());
    }
}

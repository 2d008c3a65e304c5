//! OpenAI Responses responses (whole, not streamed): read into the IR, written from it.

use serde_json::{json, Value};

use super::request::reasoning_item;
use crate::dialect::Dialect;
use crate::error::WireError;
use crate::translate::ir::{freeform_input, Part, Response, StopReason, TextBlock};
use crate::translate::{parse_object, str_field};
use crate::usage::from_usage_value;

pub fn decode_response(body: &[u8]) -> Result<Response, WireError> {
    let v = Value::Object(parse_object(body)?);
    let mut parts = Vec::new();
    let mut has_call = false;
    for item in v
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match str_field(item, "type") {
            Some("message") => {
                for c in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(text) = str_field(c, "text") {
                        parts.push(Part::Text(TextBlock {
                            text: text.to_owned(),
                            cache_control: None,
                        }));
                    }
                }
            }
            Some("function_call") => {
                has_call = true;
                parts.push(Part::ToolCall {
                    id: str_field(item, "call_id").unwrap_or_default().to_owned(),
                    name: str_field(item, "name").unwrap_or_default().to_owned(),
                    arguments: str_field(item, "arguments").unwrap_or("{}").to_owned(),
                });
            }
            Some("reasoning") => {
                let text: String = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| str_field(s, "text"))
                    .collect();
                parts.push(Part::Thinking {
                    text,
                    signature: str_field(item, "encrypted_content").map(str::to_owned),
                });
            }
            _ => {}
        }
    }
    let stop = match str_field(&v, "status") {
        Some("incomplete") => match v
            .get("incomplete_details")
            .and_then(|d| str_field(d, "reason"))
        {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFilter,
            other => StopReason::Other(other.unwrap_or("incomplete").to_owned()),
        },
        _ if has_call => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    };
    Ok(Response {
        id: str_field(&v, "id").unwrap_or_default().to_owned(),
        model: str_field(&v, "model").unwrap_or_default().to_owned(),
        parts,
        stop,
        usage: v
            .get("usage")
            .and_then(|u| from_usage_value(Dialect::OpenAiResponses, u))
            .unwrap_or_default(),
    })
}

/// The `usage` object of a Responses response.
pub fn usage_json(u: &crate::usage::Usage) -> Value {
    json!({
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.input.saturating_add(u.output),
    })
}

/// The whole response object, also the payload of the stream's `response.completed`.
pub fn response_json(
    id: &str,
    model: &str,
    created: u64,
    output: Vec<Value>,
    stop: &StopReason,
    usage: Option<Value>,
) -> Value {
    let (status, incomplete) = match stop {
        StopReason::MaxTokens => ("incomplete", json!({"reason": "max_output_tokens"})),
        StopReason::ContentFilter => ("incomplete", json!({"reason": "content_filter"})),
        _ => ("completed", Value::Null),
    };
    let id = if id.starts_with("resp_") {
        id.to_owned()
    } else {
        format!("resp_{id}")
    };
    json!({
        "id": id, "object": "response", "created_at": created, "status": status,
        "error": null, "incomplete_details": incomplete, "model": model,
        "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "usage": usage,
    })
}

/// A call as a Responses output item: a function call, or a freeform one when the client
/// offered the tool as `custom`.
pub(crate) fn call_item(
    id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
    freeform: bool,
) -> Value {
    if freeform {
        json!({"type": "custom_tool_call", "id": id, "call_id": call_id, "name": name,
               "input": freeform_input(arguments), "status": "completed"})
    } else {
        json!({"type": "function_call", "id": id, "call_id": call_id, "name": name,
               "arguments": arguments, "status": "completed"})
    }
}

/// Output items in the order a Responses client reads them: reasoning, the message, calls.
pub fn encode_response(resp: &Response, created: u64, freeform: &[String]) -> Vec<u8> {
    let mut reasoning = Vec::new();
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for (i, p) in resp.parts.iter().enumerate() {
        match p {
            Part::Text(t) => {
                text.push(json!({"type": "output_text", "text": t.text, "annotations": []}))
            }
            Part::Thinking { text: t, signature } => {
                reasoning.push(reasoning_item(&format!("rs_{i}"), t, signature))
            }
            Part::ToolCall {
                id,
                name,
                arguments,
            } => calls.push(call_item(
                &format!("fc_{id}"),
                id,
                name,
                arguments,
                freeform.contains(name),
            )),
            _ => {}
        }
    }
    let mut output = reasoning;
    if !text.is_empty() {
        let id = if resp.id.starts_with("msg_") {
            resp.id.clone()
        } else {
            format!("msg_{}", resp.id)
        };
        output.push(json!({"type": "message", "id": id, "status": "completed", "role": "assistant", "content": text}));
    }
    output.extend(calls);
    let body = response_json(
        &resp.id,
        &resp.model,
        created,
        output,
        &resp.stop,
        Some(usage_json(&resp.usage)),
    );
    serde_json::to_vec(&body).unwrap_or_default()
}

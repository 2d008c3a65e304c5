//! OpenAI Chat Completions responses (whole, not streamed): read into the IR, written from it.

use serde_json::{json, Map, Value};

use super::request::{text_or_null, tool_call_json};
use crate::dialect::Dialect;
use crate::error::WireError;
use crate::translate::ir::{Part, Response, StopReason, TextBlock};
use crate::translate::{bad, parse_object, str_field};
use crate::usage::from_usage_value;

pub fn decode_response(body: &[u8]) -> Result<Response, WireError> {
    let v = Value::Object(parse_object(body)?);
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| bad("choices", "the provider's response has no choices"))?;
    let message = choice.get("message").unwrap_or(&Value::Null);
    let mut parts = Vec::new();
    if let Some(r) = str_field(message, "reasoning_content").filter(|r| !r.is_empty()) {
        parts.push(Part::Thinking {
            text: r.to_owned(),
            signature: None,
        });
    }
    if let Some(text) = str_field(message, "content").filter(|t| !t.is_empty()) {
        parts.push(Part::Text(TextBlock {
            text: text.to_owned(),
            cache_control: None,
        }));
    }
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for call in calls {
            let f = call.get("function").unwrap_or(&Value::Null);
            parts.push(Part::ToolCall {
                id: str_field(call, "id").unwrap_or_default().to_owned(),
                name: str_field(f, "name").unwrap_or_default().to_owned(),
                arguments: str_field(f, "arguments").unwrap_or("{}").to_owned(),
            });
        }
    }
    let stop = match str_field(choice, "finish_reason") {
        Some("stop") | None => StopReason::EndTurn,
        Some("length") => StopReason::MaxTokens,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("content_filter") => StopReason::ContentFilter,
        Some(other) => StopReason::Other(other.to_owned()),
    };
    Ok(Response {
        id: str_field(&v, "id").unwrap_or_default().to_owned(),
        model: str_field(&v, "model").unwrap_or_default().to_owned(),
        parts,
        stop,
        usage: v
            .get("usage")
            .and_then(|u| from_usage_value(Dialect::OpenAiChat, u))
            .unwrap_or_default(),
    })
}

pub fn encode_response(resp: &Response, created: u64) -> Vec<u8> {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for p in &resp.parts {
        match p {
            Part::Text(t) => text.push_str(&t.text),
            Part::Thinking { text, .. } => reasoning.push_str(text),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => calls.push(tool_call_json(id, name, arguments)),
            _ => {}
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), text_or_null(&text));
    if !reasoning.is_empty() {
        message.insert("reasoning_content".into(), json!(reasoning));
    }
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    message.insert("refusal".into(), Value::Null);
    let finish = match &resp.stop {
        StopReason::EndTurn | StopReason::StopSequence(_) => "stop",
        StopReason::MaxTokens => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::ContentFilter => "content_filter",
        StopReason::Other(_) => "stop",
    };
    let u = resp.usage;
    let body = json!({
        "id": resp.id,
        "object": "chat.completion",
        "created": created,
        "model": resp.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": u.input,
            "completion_tokens": u.output,
            "total_tokens": u.input.saturating_add(u.output),
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning},
        },
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

//! Anthropic Messages responses (whole, not streamed): read into the IR, written from it.

use serde_json::{json, Value};

use super::request::{blocks, encode_part};
use crate::dialect::Dialect;
use crate::error::WireError;
use crate::translate::ir::{Part, Response, StopReason};
use crate::translate::{bad, parse_object, str_field};
use crate::usage::from_usage_value;

pub fn decode_response(body: &[u8]) -> Result<Response, WireError> {
    let v = Value::Object(parse_object(body)?);
    let parts = match v.get("content") {
        Some(c) => blocks(c, "content")?,
        None => Vec::new(),
    };
    let stop = match str_field(&v, "stop_reason") {
        Some("end_turn") | None => StopReason::EndTurn,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => {
            StopReason::StopSequence(str_field(&v, "stop_sequence").map(str::to_owned))
        }
        Some("tool_use") => StopReason::ToolUse,
        Some("refusal") => StopReason::ContentFilter,
        Some(other) => StopReason::Other(other.to_owned()),
    };
    Ok(Response {
        id: str_field(&v, "id").unwrap_or_default().to_owned(),
        model: str_field(&v, "model").unwrap_or_default().to_owned(),
        parts,
        stop,
        usage: v
            .get("usage")
            .and_then(|u| from_usage_value(Dialect::AnthropicMessages, u))
            .unwrap_or_default(),
    })
}

pub fn encode_response(resp: &Response) -> Result<Vec<u8>, WireError> {
    let mut content = Vec::new();
    for p in &resp.parts {
        let v = match p {
            // Reasoning from a provider that does not sign it is shown as thinking with an
            // empty signature, as DeepSeek's own Anthropic endpoint does.
            Part::Thinking { text, signature } => json!({
                "type": "thinking", "thinking": text, "signature": signature.clone().unwrap_or_default(),
            }),
            other => encode_part(other)?,
        };
        content.push(v);
    }
    let (stop_reason, stop_sequence) = match &resp.stop {
        StopReason::EndTurn | StopReason::Other(_) => ("end_turn", Value::Null),
        StopReason::MaxTokens => ("max_tokens", Value::Null),
        StopReason::StopSequence(s) => ("stop_sequence", json!(s)),
        StopReason::ToolUse => ("tool_use", Value::Null),
        StopReason::ContentFilter => ("refusal", Value::Null),
    };
    let u = resp.usage;
    let id = if resp.id.starts_with("msg_") {
        resp.id.clone()
    } else {
        format!("msg_{}", resp.id)
    };
    let body = json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": resp.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": {
            "input_tokens": u.input.saturating_sub(u.cache_read.saturating_add(u.cache_write)),
            "cache_creation_input_tokens": u.cache_write,
            "cache_read_input_tokens": u.cache_read,
            "output_tokens": u.output,
        },
    });
    serde_json::to_vec(&body).map_err(|e| bad("content", e.to_string()))
}

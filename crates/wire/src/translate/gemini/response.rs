//! Gemini `GenerateContentResponse`s (whole, not streamed): read into the IR, written from it.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::request::{decode_part, encode_parts, sign_first_call, CallIds, Signatures};
use super::{get, get_str};
use crate::dialect::Dialect;
use crate::error::WireError;
use crate::translate::ir::{Part, Response, StopReason};
use crate::translate::{bad, parse_object};
use crate::usage::{from_usage_value, Usage};

/// Why a candidate ended, in the IR; `STOP` with a call in the answer is tool use.
pub(crate) fn stop_of(reason: Option<&str>, has_call: bool) -> StopReason {
    match reason {
        None | Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") if has_call => StopReason::ToolUse,
        None | Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") => StopReason::EndTurn,
        Some("MAX_TOKENS") => StopReason::MaxTokens,
        Some(
            "SAFETY"
            | "RECITATION"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT"
            | "IMAGE_RECITATION",
        ) => StopReason::ContentFilter,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// The `finishReason` of a stop: Gemini has no reason of its own for tool use or a stop
/// sequence (both are `STOP`); another provider's reason is `OTHER`.
pub(crate) fn finish_reason(stop: &StopReason) -> String {
    match stop {
        StopReason::EndTurn | StopReason::ToolUse | StopReason::StopSequence(_) => "STOP".into(),
        StopReason::MaxTokens => "MAX_TOKENS".into(),
        StopReason::ContentFilter => "SAFETY".into(),
        StopReason::Other(reason)
            if !reason.is_empty()
                && reason.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') =>
        {
            reason.clone()
        }
        StopReason::Other(_) => "OTHER".into(),
    }
}

/// The `usageMetadata` of a usage: Gemini counts thoughts apart from the candidates'
/// tokens, where the IR's output includes them.
pub fn usage_json(u: &Usage) -> Value {
    let mut m = Map::new();
    m.insert("promptTokenCount".into(), json!(u.input));
    m.insert(
        "candidatesTokenCount".into(),
        json!(u.output.saturating_sub(u.reasoning)),
    );
    m.insert(
        "totalTokenCount".into(),
        json!(u.input.saturating_add(u.output)),
    );
    if u.cache_read > 0 {
        m.insert("cachedContentTokenCount".into(), json!(u.cache_read));
    }
    if u.reasoning > 0 {
        m.insert("thoughtsTokenCount".into(), json!(u.reasoning));
    }
    Value::Object(m)
}

/// The prefix of the ids given to a response's calls that have none: the response id
/// makes them unique through the conversation, as tool-use ids must be.
pub(crate) fn call_prefix(response_id: &str) -> String {
    if response_id.is_empty() {
        "call_".into()
    } else {
        format!("call_{response_id}_")
    }
}

pub fn decode_response(body: &[u8]) -> Result<Response, WireError> {
    let v = Value::Object(parse_object(body)?);
    let id = get_str(&v, "responseId", "response_id")
        .unwrap_or_default()
        .to_owned();
    let model = get_str(&v, "modelVersion", "model_version")
        .unwrap_or_default()
        .to_owned();
    let usage = get(&v, "usageMetadata", "usage_metadata")
        .and_then(|u| from_usage_value(Dialect::Gemini, u))
        .unwrap_or_default();
    let Some(candidate) = v.get("candidates").and_then(|c| c.get(0)) else {
        // A prompt Google blocked has no candidates, only the reason.
        let blocked = get(&v, "promptFeedback", "prompt_feedback")
            .and_then(|f| get(f, "blockReason", "block_reason"))
            .is_some();
        if !blocked {
            return Err(bad(
                "candidates",
                "the provider's response has no candidates",
            ));
        }
        return Ok(Response {
            id,
            model,
            parts: Vec::new(),
            stop: StopReason::ContentFilter,
            usage,
        });
    };
    let mut ids = CallIds::new(call_prefix(&id));
    let mut parts = Vec::new();
    for p in candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        decode_part(p, Signatures::All, &mut parts, &mut ids)?;
    }
    let has_call = parts.iter().any(|p| matches!(p, Part::ToolCall { .. }));
    Ok(Response {
        stop: stop_of(
            get_str(candidate, "finishReason", "finish_reason"),
            has_call,
        ),
        id,
        model,
        parts,
        usage,
    })
}

/// Writes another provider's answer as Google's `GenerateContentResponse`: one candidate.
/// Its signatures go wrapped ([`super::wrap_signature`]), and its first call carries the
/// documented stand-in, so the client's history stays valid should it later talk to a
/// Gemini 3 model itself.
pub fn encode_response(resp: &Response) -> Result<Vec<u8>, WireError> {
    let mut parts = encode_parts(&resp.parts, &HashMap::new(), true)?;
    sign_first_call(&mut parts);
    let mut candidate = Map::new();
    if !parts.is_empty() {
        candidate.insert("content".into(), json!({"parts": parts, "role": "model"}));
    }
    candidate.insert("finishReason".into(), json!(finish_reason(&resp.stop)));
    candidate.insert("index".into(), json!(0));
    let body = json!({
        "candidates": [Value::Object(candidate)],
        "usageMetadata": usage_json(&resp.usage),
        "modelVersion": resp.model,
        "responseId": resp.id,
    });
    serde_json::to_vec(&body).map_err(|e| bad("candidates", e.to_string()))
}

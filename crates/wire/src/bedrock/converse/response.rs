//! A Converse answer as a Messages answer.

use serde::Serialize;
use serde_json::{json, Value};

use super::{stop_reason, stop_sequence, usage};
use crate::bedrock::made_up_id;

/// A Messages answer, its fields in the order Anthropic writes them.
#[derive(Serialize)]
struct MessagesResponse<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    model: &'a str,
    content: Vec<Value>,
    stop_reason: Value,
    stop_sequence: Value,
    usage: Value,
}

/// A Converse response body as a Messages response body. `model` is the name the client
/// asked for: Converse does not say which model answered. Converse gives no id in the body
/// (its request id is a header), so the answer gets one of ours.
pub fn converse_response(body: &[u8], model: &str) -> Result<Vec<u8>, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("Bedrock's Converse answer is not JSON: {e}"))?;
    let blocks = v
        .pointer("/output/message/content")
        .and_then(Value::as_array)
        .ok_or("Bedrock's Converse answer has no output.message.content")?;
    let content = blocks.iter().filter_map(block).collect();
    let response = MessagesResponse {
        id: made_up_id(),
        kind: "message",
        role: "assistant",
        model,
        content,
        stop_reason: v
            .get("stopReason")
            .and_then(Value::as_str)
            .map_or(Value::Null, |r| stop_reason(r).into()),
        stop_sequence: stop_sequence(v.get("additionalModelResponseFields")),
        usage: usage(v.get("usage")),
    };
    serde_json::to_vec(&response).map_err(|e| e.to_string())
}

/// One Converse content block as Anthropic's; `None` for what an Anthropic answer has no
/// block for (a cache point, a guardrail's note).
fn block(b: &Value) -> Option<Value> {
    if let Some(text) = b.get("text").and_then(Value::as_str) {
        return Some(json!({"type": "text", "text": text}));
    }
    if let Some(tool) = b.get("toolUse") {
        return Some(json!({
            "type": "tool_use",
            "id": tool.get("toolUseId").and_then(Value::as_str).unwrap_or_default(),
            "name": tool.get("name").and_then(Value::as_str).unwrap_or_default(),
            "input": tool.get("input").cloned().unwrap_or_else(|| json!({})),
        }));
    }
    let reasoning = b.get("reasoningContent")?;
    if let Some(text) = reasoning.get("reasoningText") {
        return Some(json!({
            "type": "thinking",
            "thinking": text.get("text").and_then(Value::as_str).unwrap_or_default(),
            "signature": text.get("signature").and_then(Value::as_str).unwrap_or_default(),
        }));
    }
    let data = reasoning.get("redactedContent")?.as_str()?;
    Some(json!({"type": "redacted_thinking", "data": data}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages_answer(converse: Value) -> Value {
        let bytes = converse_response(&serde_json::to_vec(&converse).unwrap(), "gpt-oss").unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_converse_answer_becomes_a_messages_answer() {
        let out = messages_answer(json!({
            "output": {"message": {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "sig"}}},
                {"text": "Reading it."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "Read", "input": {"file_path": "a.rs"}}},
                {"cachePoint": {"type": "default"}}
            ]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 1320, "cacheReadInputTokens": 1000, "cacheWriteInputTokens": 200},
            "metrics": {"latencyMs": 812}
        }));
        let id = out["id"].as_str().unwrap();
        assert!(id.starts_with("msg_bdrk_") && id.len() > 20, "{id}");
        assert_eq!(
            out,
            json!({
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": "gpt-oss",
                "content": [
                    {"type": "thinking", "thinking": "Think.", "signature": "sig"},
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": "tooluse_1", "name": "Read", "input": {"file_path": "a.rs"}}
                ],
                "stop_reason": "tool_use",
                "stop_sequence": null,
                "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}
            })
        );
        let bytes = converse_response(
            &serde_json::to_vec(&json!({"output": {"message": {"content": []}}})).unwrap(),
            "m",
        )
        .unwrap();
        assert!(String::from_utf8(bytes)
            .unwrap()
            .starts_with(r#"{"id":"msg_bdrk_"#));
    }

    #[test]
    fn stop_reasons_are_anthropics() {
        let reason = |r: &str| {
            messages_answer(json!({"output": {"message": {"content": []}}, "stopReason": r}))
                ["stop_reason"]
                .clone()
        };
        for same in [
            "end_turn",
            "tool_use",
            "max_tokens",
            "stop_sequence",
            "model_context_window_exceeded",
        ] {
            assert_eq!(reason(same), same);
        }
        assert_eq!(reason("guardrail_intervened"), "refusal");
        assert_eq!(reason("content_filtered"), "refusal");
        assert_eq!(reason("malformed_tool_use"), "malformed_tool_use");
        let out = messages_answer(json!({
            "output": {"message": {"content": [{"text": "a"}, {"reasoningContent": {"redactedContent": "b64=="}}]}},
            "stopReason": "stop_sequence",
            "additionalModelResponseFields": {"stop_sequence": "</done>"}
        }));
        assert_eq!(out["stop_sequence"], "</done>");
        assert_eq!(
            out["content"][1],
            json!({"type": "redacted_thinking", "data": "b64=="})
        );
        assert_eq!(
            out["usage"],
            json!({"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0})
        );
    }

    #[test]
    fn an_answer_that_is_not_converses_is_refused() {
        for body in [
            &b"nope"[..],
            b"{}",
            br#"{"output":{"message":{"content":"x"}}}"#,
            b"[]",
        ] {
            assert!(converse_response(body, "m").is_err());
        }
    }
}

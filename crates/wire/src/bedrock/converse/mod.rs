//! Bedrock's Converse API, for the models that do not speak Anthropic's: a Messages request
//! as a Converse one ([`converse_request`]), and Converse's answer as a Messages one, whole
//! ([`converse_response`]) or streamed ([`ConverseToSse`]), each in a file of its own. What
//! the answer directions share sits here.

mod request;
mod response;
mod stream;

pub use request::converse_request;
pub use response::converse_response;
pub use stream::ConverseToSse;

use serde_json::{json, Value};

/// Converse's `stopReason` as Anthropic's `stop_reason`. The four they share pass
/// through; a guardrail or filter stopping the answer is what Anthropic calls a
/// `refusal`; a reason Anthropic has no word for passes through as Bedrock said it.
fn stop_reason(converse: &str) -> String {
    match converse {
        "guardrail_intervened" | "content_filtered" => "refusal",
        other => other,
    }
    .to_owned()
}

/// Anthropic's models say which stop sequence matched in `additionalModelResponseFields`;
/// Converse itself does not.
fn stop_sequence(additional: Option<&Value>) -> Value {
    additional
        .and_then(|a| a.get("stop_sequence"))
        .filter(|s| s.is_string())
        .cloned()
        .unwrap_or(Value::Null)
}

/// Converse's `usage` as Anthropic's. Converse counts cache reads and writes apart from
/// `inputTokens`, as Anthropic does.
fn usage(converse: Option<&Value>) -> Value {
    let n = |key: &str| {
        converse
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    json!({
        "input_tokens": n("inputTokens"),
        "output_tokens": n("outputTokens"),
        "cache_read_input_tokens": n("cacheReadInputTokens"),
        "cache_creation_input_tokens": n("cacheWriteInputTokens"),
    })
}

//! The Gemini codec (Google's `generateContent`): requests and responses to and from the IR.
//!
//! What sets Gemini apart, and what its callers must do for it:
//!
//! - **The model and the stream are in the URL** (`models/{model}:streamGenerateContent`),
//!   not the body. [`decode_request`] leaves `model` empty and `stream` false; the caller
//!   sets both from the path ([`crate::translate::request_for`] takes the stream flag).
//!   [`encode_request`] writes neither, but reads `req.model` to choose between Gemini 3's
//!   `thinkingLevel` and Gemini 2.5's `thinkingBudget`, and whether function calls need a
//!   thought signature ([`Generation`]).
//! - **Thought signatures** sit on any part (the first function call of a step, the last
//!   text). In the IR each becomes a `Thinking` part's signature: the thought text before
//!   the signed part when there is one, else a `Thinking` with no text, just before it. On
//!   the way back a `Thinking` part's signature goes on the part that follows it, so a
//!   signature Gemini gave reaches Gemini again on the part it came on, whatever dialect
//!   the client spoke in between. A Gemini 3 model refuses a step whose first function
//!   call has no signature; calls made by another provider get [`DUMMY_SIGNATURE`], which
//!   Google documents for history it did not write, and which decodes back to nothing.
//! - **Keys in two spellings**: Google's API reads `inline_data` as `inlineData`, and the
//!   REST examples use both; the decoder reads either, the encoders write camelCase.
//! - **A stream** is server-sent events whose every frame is a whole
//!   `GenerateContentResponse`, and which ends when the body does (no closing event).

mod request;
mod response;
pub(crate) mod stream;

pub use request::*;
pub use response::*;

use std::borrow::Cow;

use serde_json::{json, Value};

use crate::translate::ir::ProviderError;

/// The signature Google documents for function calls it did not generate (history from
/// another model): it tells Gemini 3 to skip its check of the call's thought signature.
pub const DUMMY_SIGNATURE: &str = "skip_thought_signature_validator";

/// The other stand-in Google documents for the Gemini API; clients send it too.
const OTHER_DUMMY_SIGNATURE: &str = "context_engineering_is_the_way_to_go";

/// A part's thought signature, unless it is empty or a stand-in (which signs nothing); one
/// another provider made comes back as that provider wrote it ([`wrap_signature`]).
pub(crate) fn signature_of(part: &Value) -> Option<Cow<'_, str>> {
    get_str(part, "thoughtSignature", "thought_signature")
        .filter(|s| !s.is_empty() && *s != DUMMY_SIGNATURE && *s != OTHER_DUMMY_SIGNATURE)
        .map(unwrap_signature)
}

/// What a signature another provider made starts with when it travels through a Gemini
/// client: 18 bytes, so its base64 is a fixed 24 characters.
const FOREIGN: &[u8; 18] = b"trimgate:signature";

/// A signature for a Gemini client. `thoughtSignature` is a `bytes` field that Google's
/// SDKs decode from base64 and may encode back in the URL-safe alphabet: another
/// provider's signature (Anthropic's, OpenAI's encrypted reasoning) goes as the base64 of
/// a marker and itself, so it survives that and reads back exactly.
pub(crate) fn wrap_signature(sig: &str) -> String {
    let mut bytes = FOREIGN.to_vec();
    bytes.extend_from_slice(sig.as_bytes());
    base64_encode(&bytes)
}

/// Whether a part's signature is another provider's, wrapped by [`wrap_signature`].
pub(crate) fn signed_by_another(part: &Value) -> bool {
    get_str(part, "thoughtSignature", "thought_signature").is_some_and(is_wrapped)
}

fn is_wrapped(sig: &str) -> bool {
    let prefix = base64_encode(FOREIGN);
    let url_safe: String = prefix
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect();
    sig.starts_with(&prefix) || sig.starts_with(&url_safe)
}

fn unwrap_signature(sig: &str) -> Cow<'_, str> {
    if !is_wrapped(sig) {
        return Cow::Borrowed(sig);
    }
    let original = base64_decode(sig)
        .and_then(|b| b.get(FOREIGN.len()..).map(<[u8]>::to_vec))
        .and_then(|b| String::from_utf8(b).ok());
    original.map_or(Cow::Borrowed(sig), Cow::Owned)
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Base64 in either alphabet, padded or not; `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let standard: String = text
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(standard)
        .ok()
}

/// A field by its camelCase name, or the snake_case one Google's API reads as the same.
pub(crate) fn get<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| v.get(snake))
}

/// A string field by either spelling.
pub(crate) fn get_str<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a str> {
    get(v, camel, snake).and_then(Value::as_str)
}

/// A key in camelCase (`system_instruction` → `systemInstruction`), for the policy tables.
pub(crate) fn camel(key: &str) -> Cow<'_, str> {
    if !key.contains('_') {
        return Cow::Borrowed(key);
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Which Gemini a model name is, for what its requests need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// Gemini 1.x and 2.x (and Gemma): thinking by token budget; signatures optional.
    Legacy,
    /// Gemini 3 and later: thinking by level; a step's first function call must be signed.
    Three,
    /// A name that says no version (`gemini-flash-latest`, a tuned model): thinking by
    /// budget, which every Gemini accepts, and signed calls, which no Gemini refuses.
    Unknown,
}

impl Generation {
    pub fn of(model: &str) -> Generation {
        let name = model.strip_prefix("models/").unwrap_or(model);
        if name.starts_with("gemma") {
            return Generation::Legacy;
        }
        let Some(version) = name.strip_prefix("gemini-") else {
            return Generation::Unknown;
        };
        let major: String = version.chars().take_while(char::is_ascii_digit).collect();
        match major.parse::<u32>() {
            Ok(n) if n >= 3 => Generation::Three,
            Ok(_) => Generation::Legacy,
            Err(_) => Generation::Unknown,
        }
    }

    /// Whether a step's first function call must carry a thought signature.
    pub fn needs_signatures(self) -> bool {
        !matches!(self, Generation::Legacy)
    }
}

/// The canonical code name Google's APIs give an HTTP status (`error.status`).
pub fn google_status(status: u16) -> &'static str {
    match status {
        400 | 413 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        405 | 501 => "UNIMPLEMENTED",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        400..=499 => "FAILED_PRECONDITION",
        _ => "INTERNAL",
    }
}

/// The HTTP status of a Google status name, or of another dialect's error kind, for a
/// Gemini error body that only has the kind (an error in the middle of a stream).
fn status_of_kind(kind: &str) -> u16 {
    match kind {
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" | "invalid_request_error" => {
            400
        }
        "UNAUTHENTICATED" | "authentication_error" => 401,
        "PERMISSION_DENIED" | "permission_error" => 403,
        "NOT_FOUND" | "not_found_error" => 404,
        "request_too_large" => 413,
        "RESOURCE_EXHAUSTED"
        | "rate_limit_error"
        | "rate_limit_exceeded"
        | "insufficient_quota" => 429,
        "UNIMPLEMENTED" => 501,
        "UNAVAILABLE" | "overloaded_error" | "server_is_overloaded" => 503,
        "DEADLINE_EXCEEDED" => 504,
        _ => 500,
    }
}

/// A Google error kind as Anthropic names the same failure (`RESOURCE_EXHAUSTED` →
/// `rate_limit_error`); `None` for a kind that is not Google's.
pub(crate) fn anthropic_error_type(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => "invalid_request_error",
        "UNAUTHENTICATED" => "authentication_error",
        "PERMISSION_DENIED" => "permission_error",
        "NOT_FOUND" => "not_found_error",
        "RESOURCE_EXHAUSTED" => "rate_limit_error",
        "UNAVAILABLE" => "overloaded_error",
        "INTERNAL" | "UNKNOWN" | "DEADLINE_EXCEEDED" | "UNIMPLEMENTED" | "ABORTED"
        | "CANCELLED" => "api_error",
        _ => return None,
    })
}

/// Google's error body for an HTTP status.
pub fn error_json(status: u16, message: &str) -> Value {
    json!({"error": {"code": status, "message": message, "status": google_status(status)}})
}

/// Google's error body for a provider's error whose HTTP status is not at hand (mid-stream).
pub(crate) fn error_of_kind(e: &ProviderError) -> Value {
    error_json(status_of_kind(&e.kind), &e.message)
}

/// Reads `{"error": {"code", "message", "status"}}`, or the same as the one element of an
/// array (how Google answers a stream asked for without `alt=sse`).
pub(crate) fn decode_error(v: &Value) -> Option<ProviderError> {
    let v = match v {
        Value::Array(items) => items.first()?,
        other => other,
    };
    let e = v.get("error")?;
    let message = crate::translate::str_field(e, "message")?.to_owned();
    let kind = crate::translate::str_field(e, "status")
        .map(str::to_owned)
        .or_else(|| {
            let code = e.get("code").and_then(Value::as_u64)?;
            Some(google_status(u16::try_from(code).unwrap_or(500)).to_owned())
        })
        .unwrap_or_else(|| "INTERNAL".into());
    Some(ProviderError { kind, message })
}

#[cfg(test)]
mod tests;

//! What both OpenAI dialects share: bearer auth, the `{"error":{...}}` shape, response headers.

use axum::response::Response;
use bytes::Bytes;
use http::header::{AUTHORIZATION, RETRY_AFTER};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{bytes_response, fault, json_response, Controls, MockState};

/// Static answer to `GET /v1/models` in OpenAI's list shape.
pub(super) const MODELS: &str = concat!(
    r#"{"object":"list","data":["#,
    r#"{"id":"gpt-5","object":"model","created":1754425777,"owned_by":"system"},"#,
    r#"{"id":"gpt-5-mini","object":"model","created":1754425928,"owned_by":"system"},"#,
    r#"{"id":"gpt-5-codex","object":"model","created":1757527818,"owned_by":"system"},"#,
    r#"{"id":"gpt-4.1","object":"model","created":1744316542,"owned_by":"system"},"#,
    r#"{"id":"gpt-4o","object":"model","created":1715367049,"owned_by":"system"},"#,
    r#"{"id":"gpt-4o-mini","object":"model","created":1721172741,"owned_by":"system"}"#,
    "]}"
);

const NO_KEY: &str = "You didn't provide an API key. You need to provide your API key in an \
    Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the \
    password field (with blank username) if you're accessing the API from your browser and are \
    prompted for a username. You can obtain an API key from \
    https://platform.openai.com/account/api-keys.";

pub(super) const BAD_JSON: &str = "We could not parse the JSON body of your request. (HINT: This \
    likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON \
    payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix \
    this, please contact us through our help center at help.openai.com.)";

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    error: ErrorBody<'a>,
}

/// OpenAI's error object, in the key order the API sends.
#[derive(Serialize)]
pub(super) struct ErrorBody<'a> {
    pub message: &'a str,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub param: Option<&'a str>,
    pub code: Option<&'a str>,
}

/// An error response; the caller adds the common headers once, as for any other response.
pub(super) fn error(status: StatusCode, body: ErrorBody<'_>) -> Response {
    let mut response = json_response(status, &ErrorEnvelope { error: body });
    if status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

pub(super) fn invalid_request(message: &str, param: Option<&str>, code: Option<&str>) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        ErrorBody {
            message,
            kind: "invalid_request_error",
            param,
            code,
        },
    )
}

pub(super) fn missing_parameter(param: &str) -> Response {
    let message = format!("Missing required parameter: '{param}'.");
    invalid_request(&message, Some(param), Some("missing_required_parameter"))
}

/// The bearer key check, with OpenAI's two messages: no key at all, or a wrong (masked) one.
/// `Some` is the rejection to send.
pub(super) fn check_auth(state: &MockState, headers: &HeaderMap) -> Option<Response> {
    if state.config().keyless {
        return None;
    }
    let key = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|k| !k.is_empty());
    let unauthorized = |message: &str, code: Option<&str>| {
        error(
            StatusCode::UNAUTHORIZED,
            ErrorBody {
                message,
                kind: "invalid_request_error",
                param: None,
                code,
            },
        )
    };
    match (key, state.config().openai_key.as_deref()) {
        (None, _) => Some(unauthorized(NO_KEY, None)),
        (Some(key), Some(expected)) if key != expected => {
            let message = format!(
                "Incorrect API key provided: {}. You can find your API key at \
                 https://platform.openai.com/account/api-keys.",
                mask_key(key)
            );
            Some(unauthorized(&message, Some("invalid_api_key")))
        }
        _ => None,
    }
}

/// OpenAI shows a wrong key's prefix and last four characters only; short keys in full.
fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return key.to_owned();
    }
    let keep_front = if key.starts_with("sk-proj-") { 8 } else { 3 };
    let front: String = chars[..keep_front].iter().collect();
    let back: String = chars[chars.len() - 4..].iter().collect();
    format!("{front}{}{back}", "*".repeat(chars.len() - keep_front - 4))
}

/// What OpenAI's edge (Cloudflare) answers when the API behind it fails or times out: a
/// numeric `code`, the keys in alphabetical order.
const BAD_GATEWAY: &str =
    r#"{"error":{"code":502,"message":"Bad gateway.","param":null,"type":"cf_bad_gateway"}}"#;
const GATEWAY_TIMEOUT: &str = r#"{"error":{"code":504,"message":"Gateway timeout.","param":null,"type":"cf_gateway_timeout"}}"#;

/// The error OpenAI answers with for each status `x-mock-error-status` may ask for.
pub(super) fn injected_error(status: StatusCode, model: &str) -> Response {
    let edge = match status.as_u16() {
        502 => Some(BAD_GATEWAY),
        504 => Some(GATEWAY_TIMEOUT),
        _ => None,
    };
    if let Some(body) = edge {
        return bytes_response(
            status,
            "application/json",
            Bytes::from_static(body.as_bytes()),
        );
    }
    let owned;
    let (message, kind, code): (&str, &str, Option<&str>) = match status.as_u16() {
        401 => (
            "Incorrect API key provided: sk-mock*****************1234. You can find your API \
             key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
        403 => (
            "Country, region, or territory not supported",
            "request_forbidden",
            Some("unsupported_country_region_territory"),
        ),
        404 => {
            owned = format!("The model `{model}` does not exist or you do not have access to it.");
            (&owned, "invalid_request_error", Some("model_not_found"))
        }
        429 => {
            owned = format!(
                "Rate limit reached for {model} in organization org-mock on requests per min \
                 (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms. Visit \
                 https://platform.openai.com/account/rate-limits to learn more."
            );
            (&owned, "requests", Some("rate_limit_exceeded"))
        }
        500 => (
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
        503 | 529 => (
            "The engine is currently overloaded, please try again later.",
            "server_error",
            None,
        ),
        s if s >= 500 => ("Internal server error", "server_error", None),
        _ => (
            "Invalid request: rejected by x-mock-error-status.",
            "invalid_request_error",
            None,
        ),
    };
    error(
        status,
        ErrorBody {
            message,
            kind,
            param: None,
            code,
        },
    )
}

#[derive(Deserialize)]
struct ModelOnly {
    model: Option<Value>,
}

/// The model named in a body that may not parse, for error messages only.
pub(super) fn model_of(body: &[u8]) -> String {
    serde_json::from_slice::<ModelOnly>(body)
        .ok()
        .and_then(|m| m.model)
        .and_then(|m| m.as_str().map(str::to_owned))
        .unwrap_or_else(|| "gpt-5".to_owned())
}

/// The in-stream error both OpenAI dialects use when a response fails after it began.
pub(super) const STREAM_ERROR_MESSAGE: &str =
    "The server had an error while processing your request. Sorry about that!";

pub(super) fn stream_error_body() -> ErrorBody<'static> {
    ErrorBody {
        message: STREAM_ERROR_MESSAGE,
        kind: "server_error",
        param: None,
        code: None,
    }
}

pub(super) fn models(state: &MockState, controls: &Controls, headers: &HeaderMap) -> Response {
    let mut response = if let Some(response) = check_auth(state, headers) {
        response
    } else if let Some(status) = controls.error_status {
        injected_error(status, "gpt-5")
    } else {
        bytes_response(
            StatusCode::OK,
            "application/json",
            Bytes::from_static(MODELS.as_bytes()),
        )
    };
    add_headers(&mut response, controls);
    response
}

pub(super) fn invalid_url(controls: &Controls, method: &Method, path: &str) -> Response {
    let message = format!("Invalid URL ({method} {path})");
    let mut response = error(
        StatusCode::NOT_FOUND,
        ErrorBody {
            message: &message,
            kind: "invalid_request_error",
            param: None,
            code: None,
        },
    );
    add_headers(&mut response, controls);
    response
}

/// The request-id, processing-time and rate-limit headers OpenAI puts on every response; on
/// an injected error with a retry-after, `retry-after` and, on a 429, the exhausted limits'
/// reset durations.
pub(super) fn add_headers(response: &mut Response, controls: &Controls) {
    let status = response.status();
    let headers = response.headers_mut();
    if let Ok(id) = HeaderValue::from_str(&format!("req_{}", uuid::Uuid::new_v4().simple())) {
        headers.insert(HeaderName::from_static("x-request-id"), id);
    }
    headers.insert(
        HeaderName::from_static("openai-processing-ms"),
        HeaderValue::from(u64::try_from(controls.delay.as_millis()).unwrap_or(u64::MAX)),
    );
    super::insert_static(
        headers,
        &[
            ("openai-version", "2020-10-01"),
            ("openai-organization", "org-mock"),
            ("x-ratelimit-limit-requests", "10000"),
            ("x-ratelimit-remaining-requests", "9999"),
            ("x-ratelimit-reset-requests", "6ms"),
            ("x-ratelimit-limit-tokens", "30000000"),
            ("x-ratelimit-remaining-tokens", "29999000"),
            ("x-ratelimit-reset-tokens", "2ms"),
        ],
    );
    let Some(secs) = controls
        .retry_after
        .filter(|_| controls.error_status == Some(status))
    else {
        return;
    };
    headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    if status == StatusCode::TOO_MANY_REQUESTS {
        headers.insert(
            HeaderName::from_static("x-ratelimit-remaining-requests"),
            HeaderValue::from_static("0"),
        );
        if let Ok(reset) = HeaderValue::from_str(&fault::go_duration(secs)) {
            for name in ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"] {
                headers.insert(HeaderName::from_static(name), reset.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::mask_key;

    #[test]
    fn masked_keys_keep_their_prefix_and_last_four_characters() {
        assert_eq!(mask_key("sk-wrong"), "sk-wrong");
        assert_eq!(mask_key("sk-abcdefghijkl1234"), "sk-************1234");
        assert_eq!(mask_key("sk-proj-abcdefgh9876"), "sk-proj-********9876");
    }
}

//! Amazon Bedrock's runtime API (`bedrock-runtime`): `POST /model/{modelId}/invoke`,
//! `/invoke-with-response-stream`, `/converse` and `/converse-stream`.
//!
//! Stages, as for the other dialects: the caller (`sigv4`: a SigV4 signature's form, or a
//! Bedrock API key), an injected error, the model id (percent-decoded from the path: a
//! `[geo.]provider.model[:n]` id or an ARN), then the body: a Messages body for Claude on
//! `invoke` (the anthropic handler's reply, message ids `msg_bdrk_…`), a Converse request
//! (`converse`) otherwise. Streams are AWS event streams (`eventstream`): `invoke`'s carry
//! each Anthropic event base64-encoded in a `chunk` event, Converse's their own events.
//! Every error is `{"message": …}` with its type in `x-amzn-ErrorType`.

mod converse;
mod eventstream;
mod sigv4;

use axum::extract::{Path, State};
use axum::response::Response;
use base64::Engine;
use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use serde::Serialize;
use serde_json::{Map, Value};

use super::anthropic::{self, Generation, Host, TokenCounts};
use super::reply::{Answer, Reasoning, Usage};
use super::{answer, bytes_response, json_response, random_id, sse, unix_now, Controls, MockState};

/// The header naming an error's type (and the namespace it belongs to).
const ERROR_TYPE_HEADER: &str = "x-amzn-errortype";
const REQUEST_ID_HEADER: &str = "x-amzn-requestid";
const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";
/// The namespace of Bedrock's own exceptions.
const BEDROCK_NAMESPACE: &str = "http://internal.amazon.com/coral/com.amazon.bedrock/";
/// The namespace of the exceptions AWS's front end raises before Bedrock is reached.
const SERVICE_NAMESPACE: &str = "http://internal.amazon.com/coral/com.amazon.coral.service/";
const FRONT_END_TYPES: &[&str] = &[
    "MissingAuthenticationTokenException",
    "IncompleteSignatureException",
    "InvalidSignatureException",
    "UnrecognizedClientException",
    "ExpiredTokenException",
    "UnknownOperationException",
];

/// The Messages API version Bedrock's `invoke` wants in the body.
const ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";
/// Keys a Messages body for Bedrock must not have: the path names the model, the endpoint
/// whether it streams.
const FORBIDDEN_KEYS: &[&str] = &["model", "stream"];
const REQUIRED_KEYS: &[&str] = &["anthropic_version", "max_tokens", "messages"];

const INVALID_MODEL: &str = "The provided model identifier is invalid.";

/// The exceptions the mock may raise: HTTP status and AWS's message for each.
const EXCEPTIONS: &[(&str, u16, &str)] = &[
    (
        "ThrottlingException",
        429,
        "Too many requests, please wait before trying again.",
    ),
    (
        "ValidationException",
        400,
        "Malformed input request, please reformat your input and try again.",
    ),
    (
        "AccessDeniedException",
        403,
        "You don't have access to the model with the specified model ID.",
    ),
    (
        "ResourceNotFoundException",
        404,
        "Could not resolve the foundation model from the provided model identifier.",
    ),
    (
        "ModelTimeoutException",
        408,
        "Model has timed out in processing the request. Try your request again.",
    ),
    (
        "ModelErrorException",
        424,
        "The model encountered an error processing the request. Try your request again.",
    ),
    (
        "InternalServerException",
        500,
        "The system encountered an unexpected error during processing. Try your request again.",
    ),
    (
        "ServiceUnavailableException",
        503,
        "Bedrock is unable to process your request.",
    ),
    (
        "ModelNotReadyException",
        429,
        "Model is not ready to serve inference requests. The AWS SDK will automatically \
         retry the operation up to 5 times.",
    ),
    (
        "ServiceQuotaExceededException",
        400,
        "Your request exceeds the service quota for your account. You can view your quotas \
         at Viewing service quotas. You can resubmit your request later.",
    ),
    (
        "ModelStreamErrorException",
        424,
        "The model stream failed. Try your request again.",
    ),
    (
        "ExpiredTokenException",
        403,
        "The security token included in the request is expired",
    ),
    (
        "UnrecognizedClientException",
        403,
        "The security token included in the request is invalid.",
    ),
];

/// The region a SigV4 request's credential scope names (see `CapturedRequest::aws_region`).
pub(crate) fn signed_region(headers: &HeaderMap) -> Option<String> {
    sigv4::region(headers)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Invoke { stream: bool },
    Converse { stream: bool },
}

impl Action {
    fn parse(action: &str) -> Option<Self> {
        match action {
            "invoke" => Some(Self::Invoke { stream: false }),
            "invoke-with-response-stream" => Some(Self::Invoke { stream: true }),
            "converse" => Some(Self::Converse { stream: false }),
            "converse-stream" => Some(Self::Converse { stream: true }),
            _ => None,
        }
    }
}

/// `POST /model/{modelId}/{action}`.
pub(super) async fn handle(
    State(state): State<MockState>,
    Path((model_id, action)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        let mut response = respond(&state, controls, &model_id, &action, &headers, &body);
        if let Ok(id) = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()) {
            response
                .headers_mut()
                .insert(HeaderName::from_static(REQUEST_ID_HEADER), id);
        }
        response
    })
    .await
}

fn respond(
    state: &MockState,
    controls: &Controls,
    model_id: &str,
    action: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let Some(action) = Action::parse(action) else {
        return error(
            StatusCode::NOT_FOUND,
            "UnknownOperationException",
            "Unknown operation",
        );
    };
    if !state.config().keyless {
        if let Err(refusal) = sigv4::check(headers, unix_now()) {
            return error(StatusCode::FORBIDDEN, refusal.kind, &refusal.message);
        }
    }
    if let Some(status) = controls.error_status {
        return injected_error(status, controls);
    }
    let Some(model) = ModelId::parse(model_id) else {
        return validation(INVALID_MODEL);
    };
    match action {
        Action::Invoke { stream } => invoke(state, controls, &model, body, stream),
        Action::Converse { stream } => converse(state, controls, body, stream),
    }
}

/// A model id as Bedrock takes it in the path.
struct ModelId {
    /// One of Anthropic's models (`anthropic.` in the id).
    anthropic: bool,
    /// The name Anthropic's API gives the model (`claude-sonnet-4-5-20250929`), for the
    /// messages `invoke` answers; the id itself when it names none.
    name: String,
}

impl ModelId {
    /// `[geo.]provider.model[:n[:context]]` (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`),
    /// or an ARN of Bedrock's (`arn:aws:bedrock:us-east-1:123456789012:inference-profile/…`).
    fn parse(id: &str) -> Option<Self> {
        let base = if id.starts_with("arn:") {
            let parts: Vec<&str> = id.splitn(6, ':').collect();
            let [_, partition, service, region, _account, resource] = parts[..] else {
                return None;
            };
            let (kind, name) = resource.split_once('/')?;
            let valid = partition.starts_with("aws")
                && service == "bedrock"
                && !region.is_empty()
                && !kind.is_empty()
                && !name.is_empty();
            if !valid {
                return None;
            }
            name
        } else {
            let mut parts = id.split(':');
            let base = parts.next()?;
            let suffixes: Vec<&str> = parts.collect();
            let suffix_ok = suffixes.len() <= 2
                && suffixes
                    .iter()
                    .all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric()));
            let segments: Vec<&str> = base.split('.').collect();
            let segments_ok = (2..=3).contains(&segments.len())
                && segments.iter().all(|s| {
                    !s.is_empty()
                        && s.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                });
            if !suffix_ok || !segments_ok {
                return None;
            }
            base
        };
        let anthropic = base.split('.').any(|segment| segment == "anthropic");
        let model = base.rsplit('.').next().unwrap_or(base);
        let name = if anthropic {
            strip_version(model.split(':').next().unwrap_or(model))
        } else {
            id
        };
        Some(Self {
            anthropic,
            name: name.to_owned(),
        })
    }
}

/// `claude-sonnet-4-5-20250929-v1` → `claude-sonnet-4-5-20250929`.
fn strip_version(model: &str) -> &str {
    match model.rsplit_once("-v") {
        Some((name, version))
            if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) =>
        {
            name
        }
        _ => model,
    }
}

// ---------------------------------------------------------------------------------------
// invoke, invoke-with-response-stream

fn invoke(
    state: &MockState,
    controls: &Controls,
    model: &ModelId,
    body: &Bytes,
    stream: bool,
) -> Response {
    let checked = if model.anthropic {
        messages_body(body)
    } else {
        other_provider_body(body)
    };
    if let Err(message) = checked {
        return validation(&message);
    }
    let generated =
        match anthropic::cloud_reply(state, controls, body, &model.name, Host::Bedrock, stream) {
            Ok(generated) => generated,
            Err(message) => return validation(&message),
        };
    let tokens = generated.tokens;
    match generated.reply {
        Generation::Whole(json) => {
            let mut response = bytes_response(StatusCode::OK, "application/json", json);
            let headers = response.headers_mut();
            let latency = latency_ms(controls, 1);
            for (name, value) in [
                ("x-amzn-bedrock-invocation-latency", latency),
                ("x-amzn-bedrock-input-token-count", tokens.input),
                ("x-amzn-bedrock-output-token-count", tokens.output),
                (
                    "x-amzn-bedrock-cache-read-input-token-count",
                    tokens.cache_read,
                ),
                (
                    "x-amzn-bedrock-cache-write-input-token-count",
                    tokens.cache_write,
                ),
            ] {
                headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
            }
            response
        }
        Generation::Events(events) => {
            let events: Vec<anthropic::Event> =
                events.into_iter().filter(|e| e.name != "ping").collect();
            let latency = latency_ms(controls, events.len());
            let frames = events
                .iter()
                .enumerate()
                .map(|(i, event)| {
                    let json = if event.name == "message_stop" {
                        message_stop(tokens, latency, controls)
                    } else {
                        event.json.clone().into_bytes()
                    };
                    let chunk = Chunk {
                        bytes: base64::engine::general_purpose::STANDARD.encode(json),
                    };
                    eventstream::event("chunk", &eventstream::padded(&chunk, i))
                })
                .collect();
            let mut response = event_stream(state, controls, frames);
            response.headers_mut().insert(
                HeaderName::from_static("x-amzn-bedrock-content-type"),
                HeaderValue::from_static("application/json"),
            );
            response
        }
    }
}

#[derive(Serialize)]
struct Chunk {
    bytes: String,
}

/// The last event of `invoke-with-response-stream`: Anthropic's `message_stop` with
/// Bedrock's invocation metrics.
fn message_stop(tokens: TokenCounts, latency: u64, controls: &Controls) -> Vec<u8> {
    #[derive(Serialize)]
    struct Stop {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(rename = "amazon-bedrock-invocationMetrics")]
        metrics: InvocationMetrics,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct InvocationMetrics {
        input_token_count: u64,
        output_token_count: u64,
        invocation_latency: u64,
        first_byte_latency: u64,
        #[serde(skip_serializing_if = "is_zero")]
        cache_read_input_token_count: u64,
        #[serde(skip_serializing_if = "is_zero")]
        cache_write_input_token_count: u64,
    }
    super::to_json(&Stop {
        kind: "message_stop",
        metrics: InvocationMetrics {
            input_token_count: tokens.input,
            output_token_count: tokens.output,
            invocation_latency: latency,
            first_byte_latency: latency_ms(controls, 1),
            cache_read_input_token_count: tokens.cache_read,
            cache_write_input_token_count: tokens.cache_write,
        },
    })
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Bedrock's schema check of a Messages body: `anthropic_version` (Bedrock's), `max_tokens`
/// and `messages` present, no `model` or `stream`. `Err` is the message, in the schema
/// validator's words.
fn messages_body(body: &[u8]) -> Result<(), String> {
    let map = json_object(body)?;
    let mut violations = String::new();
    for key in REQUIRED_KEYS {
        if !map.contains_key(*key) {
            violations.push_str(&format!("#: required key [{key}] not found"));
        }
    }
    for key in FORBIDDEN_KEYS {
        if map.contains_key(*key) {
            violations.push_str(&format!("#: extraneous key [{key}] is not permitted"));
        }
    }
    match map.get("anthropic_version") {
        Some(Value::String(v)) if v == ANTHROPIC_VERSION => {}
        Some(Value::String(v)) => {
            violations.push_str(&format!(
                "#/anthropic_version: {v} is not a valid enum value"
            ));
        }
        Some(other) => violations.push_str(&format!(
            "#/anthropic_version: expected type: String, found: {}",
            json_type(other)
        )),
        None => {}
    }
    match map.get("anthropic_beta") {
        None => {}
        Some(Value::Array(betas)) if betas.iter().all(Value::is_string) => {}
        Some(Value::Array(_)) => {
            violations.push_str("#/anthropic_beta: expected type: JSONArray of String");
        }
        Some(other) => violations.push_str(&format!(
            "#/anthropic_beta: expected type: JSONArray, found: {}",
            json_type(other)
        )),
    }
    if !violations.is_empty() {
        return Err(malformed(&violations));
    }
    // Bedrock refuses a beta its Claude does not offer, whatever else the body says.
    let refused = map
        .get("anthropic_beta")
        .and_then(Value::as_array)
        .is_some_and(|betas| {
            betas
                .iter()
                .filter_map(Value::as_str)
                .any(|b| !OFFERED_BETAS.contains(&b))
        });
    if refused {
        return Err("invalid beta flag".into());
    }
    Ok(())
}

/// The `anthropic_beta` features Bedrock's Claude offers on InvokeModel.
const OFFERED_BETAS: &[&str] = &[
    "compact-2026-01-12",
    "computer-use-2025-01-24",
    "computer-use-2025-11-24",
    "context-1m-2025-08-07",
    "context-management-2025-06-27",
    "dangerous-tool-use-2026-09-03",
    "effort-2025-11-24",
    "fine-grained-tool-streaming-2025-05-14",
    "mid-conversation-output-config-2026-07-01",
    "mid-conversation-tool-changes-2026-07-01",
    "thinking-binding-controls-2026-08-01",
    "thinking-display-updates-2026-08-18",
    "tool-search-tool-2025-10-19",
];

/// The mock speaks only Anthropic's body on `invoke`: another provider's model finds every
/// key of it extraneous, as that model's schema would.
fn other_provider_body(body: &[u8]) -> Result<(), String> {
    let map = json_object(body)?;
    let violations: String = map
        .keys()
        .map(|key| format!("#: extraneous key [{key}] is not permitted"))
        .collect();
    Err(malformed(if violations.is_empty() {
        "#: subject must not be valid against schema"
    } else {
        &violations
    }))
}

fn json_object(body: &[u8]) -> Result<Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(malformed(&format!(
            "#: expected type: JSONObject, found: {}",
            json_type(&other)
        ))),
        Err(e) => Err(malformed(&e.to_string())),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "Null",
        Value::Bool(_) => "Boolean",
        Value::Number(_) => "Number",
        Value::String(_) => "String",
        Value::Array(_) => "JSONArray",
        Value::Object(_) => "JSONObject",
    }
}

fn malformed(violations: &str) -> String {
    format!("Malformed input request: {violations}, please reformat your input and try again.")
}

// ---------------------------------------------------------------------------------------
// converse, converse-stream

fn converse(state: &MockState, controls: &Controls, body: &Bytes, stream: bool) -> Response {
    let request = match converse::read(body, controls.tool.as_deref()) {
        Ok(request) => request,
        Err(message) => return validation(&message),
    };
    let reasoning = request
        .thinks
        .then(|| Reasoning::about(&request.conversation));
    let answer = Answer::decide(request.conversation, controls);
    let usage = Usage::new(body.len(), controls.cached_tokens, answer.output_tokens())
        .with_reasoning(reasoning.as_ref());
    let tool_use_id = random_id("tooluse_", 22);
    let mut reply = converse::Reply {
        reasoning: reasoning.as_ref(),
        answer: &answer,
        tool_use_id: &tool_use_id,
        usage,
        latency_ms: latency_ms(controls, 1),
    };
    if !stream {
        return bytes_response(
            StatusCode::OK,
            "application/json",
            Bytes::from(reply.whole()),
        );
    }
    let count = reply.events(controls.split).len();
    reply.latency_ms = latency_ms(controls, count);
    let frames = reply
        .events(controls.split)
        .iter()
        .map(|(kind, payload)| eventstream::event(kind, payload))
        .collect();
    event_stream(state, controls, frames)
}

// ---------------------------------------------------------------------------------------
// Streams and errors

/// A `200 application/vnd.amazon.eventstream` response, with the stream faults `controls`
/// ask for: an exception after `stream_error_after` frames, a wrong CRC on the frame after
/// `bad_crc_after`, and those every stream takes (see `sse::framed`).
fn event_stream(state: &MockState, controls: &Controls, mut frames: Vec<Bytes>) -> Response {
    sse::inject_error(state, &mut frames, controls.stream_error_after, |_| {
        let (kind, message) = stream_exception(controls);
        vec![eventstream::exception(&kind, &message)]
    });
    if let Some(n) = controls.bad_crc_after.filter(|&n| n < frames.len()) {
        frames[n] = eventstream::with_bad_crc(&frames[n]);
        state.record(|stats| stats.bad_crc += 1);
    }
    let mut response = sse::framed(state, frames, controls, eventstream::with_broken_payload);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.remove(CACHE_CONTROL);
    response
}

/// The exception a stream ends with: `x-mock-aws-error-type`'s (in the event stream's
/// lower camel case), an internal error by default.
fn stream_exception(controls: &Controls) -> (String, String) {
    let kind = controls
        .aws_error_type
        .as_deref()
        .unwrap_or("InternalServerException");
    let message = controls
        .aws_error_message
        .clone()
        .or_else(|| known(kind).map(|(_, _, message)| (*message).to_owned()))
        .unwrap_or_else(|| "The stream ended in error.".to_owned());
    let mut chars = kind.chars();
    let camel = chars
        .next()
        .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default();
    (camel, message)
}

/// How long the mock says the model took: the delay to the first byte, then the frame
/// interval between `frames` frames.
fn latency_ms(controls: &Controls, frames: usize) -> u64 {
    let millis = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let gaps = u64::try_from(frames.saturating_sub(1)).unwrap_or(u64::MAX);
    millis(controls.delay).saturating_add(millis(controls.frame_interval).saturating_mul(gaps))
}

fn known(kind: &str) -> Option<&'static (&'static str, u16, &'static str)> {
    EXCEPTIONS.iter().find(|(name, _, _)| *name == kind)
}

/// The error `x-mock-error-status` (or `MockConfig::fail_status`) asks for, its type and
/// message overridden by `x-mock-aws-error-type` and `x-mock-aws-error-message`.
fn injected_error(status: StatusCode, controls: &Controls) -> Response {
    // A status no exception has: the server's fault, the caller's credentials, or else
    // the caller's request.
    let fallback = if status.is_server_error() {
        "InternalServerException"
    } else if status == StatusCode::UNAUTHORIZED {
        "UnrecognizedClientException"
    } else {
        "ValidationException"
    };
    let (default_kind, default_message) = EXCEPTIONS
        .iter()
        .find(|(_, code, _)| *code == status.as_u16())
        .or_else(|| known(fallback))
        .map_or((fallback, ""), |(kind, _, message)| (*kind, *message));
    let (kind, message) = match controls.aws_error_type.as_deref() {
        Some(kind) => (
            kind,
            known(kind).map_or(default_message, |(_, _, message)| *message),
        ),
        None => (default_kind, default_message),
    };
    let message = controls.aws_error_message.as_deref().unwrap_or(message);
    error(status, kind, message)
}

fn validation(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, "ValidationException", message)
}

/// An AWS error: `{"message": …}`, the type and its namespace in `x-amzn-ErrorType`.
fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    #[derive(Serialize)]
    struct Message<'a> {
        message: &'a str,
    }
    let mut response = json_response(status, &Message { message });
    let namespace = if FRONT_END_TYPES.contains(&kind) {
        SERVICE_NAMESPACE
    } else {
        BEDROCK_NAMESPACE
    };
    if let Ok(value) = HeaderValue::from_str(&format!("{kind}:{namespace}")) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(ERROR_TYPE_HEADER), value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::ModelId;

    #[test]
    fn model_ids_are_taken_in_each_documented_form_and_named_as_anthropic_does() {
        for (id, anthropic, name) in [
            (
                "anthropic.claude-sonnet-4-5-20250929-v1:0",
                true,
                "claude-sonnet-4-5-20250929",
            ),
            (
                "us.anthropic.claude-haiku-4-5-20251001-v1:0",
                true,
                "claude-haiku-4-5-20251001",
            ),
            (
                "anthropic.claude-3-sonnet-20240229-v1:0:200k",
                true,
                "claude-3-sonnet-20240229",
            ),
            (
                "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
                true,
                "claude-3-haiku-20240307",
            ),
            (
                "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
                false,
                "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
            ),
            ("amazon.nova-pro-v1:0", false, "amazon.nova-pro-v1:0"),
        ] {
            let model = ModelId::parse(id).unwrap_or_else(|| panic!("{id}"));
            assert_eq!((model.anthropic, model.name.as_str()), (anthropic, name), "{id}");
        }
        for bad in [
            "claude-sonnet-4-5",
            "a.b.c.d",
            "anthropic..x",
            "anthropic.claude:",
            "anthropic.claude x",
            "arn:aws:s3:::bucket/key",
            "arn:aws:bedrock:us-east-1:1:nothing",
        ] {
            assert!(ModelId::parse(bad).is_none(), "{bad}");
        }
    }
}

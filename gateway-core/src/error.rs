//! Typed gateway errors, turned into the client's own error shape in one place.
//!
//! An error is logged once and rendered once, at the edge, by [`GatewayError::into_response`]
//! (before the 200) or [`GatewayError::sse_frame`] (after it, inside a stream).

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, HeaderValue, StatusCode};
use serde_json::json;

use crate::dialect::Dialect;
use trimgate_wire::WireError;

/// `retry-after` on a 503 for too many requests at once, in seconds.
pub const OVERLOAD_RETRY_AFTER_SECS: &str = "1";

/// Who caused an error: decides the log level and whether retrying can help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Culprit {
    Client,
    Upstream,
    Gateway,
}

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("request body is not valid JSON: {0}")]
    InvalidJson(String),
    #[error("{message}")]
    InvalidField {
        param: &'static str,
        message: String,
    },
    #[error("this gateway requires a gateway key: send it as `Authorization: Bearer <key>` or `x-api-key`")]
    GatewayKeyMissing,
    #[error("the gateway key sent is not one this gateway knows")]
    GatewayKeyInvalid,
    #[error("this gateway requires its local key: send it as `x-trimgate-key: <key>` or as the API key (`trimgate wrap` and the window's Agents page include it)")]
    LocalKeyMissing,
    #[error("the x-trimgate-key sent is not this gateway's local key")]
    LocalKeyInvalid,
    #[error("invalid x-trimgate-optimize header: {0}")]
    InvalidOptimizeHeader(String),
    #[error("unsupported content type {0:?}: send application/json")]
    UnsupportedMediaType(String),
    #[error("request body exceeds the gateway's limit of {limit} bytes")]
    BodyTooLarge { limit: usize },
    #[error(
        "the request's headers exceed the gateway's limit of {count} headers and {bytes} bytes"
    )]
    HeadersTooLarge { count: usize, bytes: usize },
    #[error("the request body did not arrive within {secs} seconds")]
    BodyTimeout { secs: f64 },
    #[error("the gateway is serving as many requests as it may at once; retry shortly")]
    Overloaded,
    #[error("model {model:?} is not served by this gateway; served models: {}", served_list(.served))]
    UnknownModel { model: String, served: Vec<String> },
    #[error("no route for {method} {path}")]
    NoSuchEndpoint { method: String, path: String },
    #[error("provider {provider:?} speaks {provider_dialects}, not {client}, and translation from {client} to those is not available yet — route model {model:?} to a provider that speaks {client}")]
    DialectUnsupported {
        provider: String,
        provider_dialects: String,
        client: Dialect,
        model: String,
    },
    #[error("{feature} cannot be sent to {target}: {hint}")]
    Untranslatable {
        feature: String,
        /// The provider and its dialect, as [`WireError::aimed_at`] sets them.
        target: String,
        hint: &'static str,
    },
    #[error("provider {provider:?} has no API key: {hint}")]
    MissingKey { provider: String, hint: String },
    /// A cloud provider's credentials (the AWS chain's, a Google token, an Entra ID
    /// token) could not be had; `detail` says what is missing, never a secret.
    #[error("provider {provider:?} has no usable cloud credentials: {detail}")]
    CloudCredentials { provider: String, detail: String },
    #[error("provider {provider:?} is unreachable: {detail}")]
    UpstreamUnreachable { provider: String, detail: String },
    #[error("provider {provider:?} timed out waiting for {phase}")]
    UpstreamTimeout {
        provider: String,
        phase: &'static str,
    },
    #[error("provider {provider:?} broke off the response: {detail}")]
    UpstreamBroken { provider: String, detail: String },
    #[error("the gateway is shutting down")]
    ShuttingDown,
    /// Every provider of the model's chain is out of rotation after failing.
    #[error("every provider for model {model:?} is cooling down after failures; try again in {retry_in_secs} s")]
    CoolingDown { model: String, retry_in_secs: u64 },
    /// Refused at the door: a rebound `Host`, another site's `Origin`.
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("the virtual key {0:?} has been revoked")]
    KeyRevoked(String),
    #[error("the virtual key {0:?} has expired")]
    KeyExpired(String),
    #[error("the virtual key {key:?} may not use model {model:?}")]
    KeyModelNotAllowed { key: String, model: String },
    /// Every provider of the model's route is one the key may not use: `provider` is the
    /// route's own.
    #[error("the virtual key {key:?} may not use provider {provider:?}")]
    KeyProviderNotAllowed { key: String, provider: String },
    /// A virtual key past one of its limits: `limit` names it.
    #[error("the virtual key {key:?} is over its {limit}; try again in {retry_in_secs} s")]
    KeyLimit {
        key: String,
        limit: &'static str,
        retry_in_secs: u64,
    },
    #[error("the gateway cannot read its virtual keys right now; retry shortly")]
    KeysUnavailable,
    /// The Redis that holds the replicas' shared limits is out and the config says to
    /// refuse rather than count locally.
    #[error("the gateway cannot check virtual keys' rate limits right now (their store is unreachable); retry shortly")]
    LimitsUnavailable,
    /// An address that presented too many unknown keys this minute.
    #[error(
        "too many attempts with unknown keys from this address; try again in {retry_in_secs} s"
    )]
    KeyAttempts { retry_in_secs: u64 },
    /// The guard's `block` mode: a secret in the request, named by kind and place, never
    /// by value.
    #[error("the request holds a secret ({kind}) in {location}; this gateway's guard refuses requests with secrets (mode block): remove it, or ask for the guard's redact mode")]
    SecretBlocked {
        kind: &'static str,
        location: String,
    },
    /// A guardrail hook said no.
    #[error("guardrail hook {hook:?} refused the {stage}: {reason}")]
    HookRefused {
        hook: String,
        stage: &'static str,
        reason: String,
    },
    /// A guardrail hook set to fail closed did not give a usable answer.
    #[error("guardrail hook {hook:?} failed ({detail}) and is set to fail closed")]
    HookFailed { hook: String, detail: String },
}

/// The wire layer's refusals, one variant each: same message, status and `param`.
impl From<WireError> for GatewayError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::InvalidJson(detail) => GatewayError::InvalidJson(detail),
            WireError::InvalidField { param, message } => {
                GatewayError::InvalidField { param, message }
            }
            WireError::Untranslatable {
                feature,
                target,
                hint,
            } => GatewayError::Untranslatable {
                feature,
                target,
                hint,
            },
        }
    }
}

fn served_list(served: &[String]) -> String {
    if served.is_empty() {
        "none (add a provider to the config)".to_owned()
    } else {
        served.join(", ")
    }
}

impl GatewayError {
    pub fn culprit(&self) -> Culprit {
        match self {
            GatewayError::InvalidJson(_)
            | GatewayError::InvalidField { .. }
            | GatewayError::UnsupportedMediaType(_)
            | GatewayError::GatewayKeyMissing
            | GatewayError::GatewayKeyInvalid
            | GatewayError::LocalKeyMissing
            | GatewayError::LocalKeyInvalid
            | GatewayError::InvalidOptimizeHeader(_)
            | GatewayError::BodyTooLarge { .. }
            | GatewayError::HeadersTooLarge { .. }
            | GatewayError::BodyTimeout { .. }
            | GatewayError::UnknownModel { .. }
            | GatewayError::NoSuchEndpoint { .. }
            | GatewayError::DialectUnsupported { .. }
            | GatewayError::Untranslatable { .. }
            | GatewayError::Forbidden(_)
            | GatewayError::KeyRevoked(_)
            | GatewayError::KeyExpired(_)
            | GatewayError::KeyModelNotAllowed { .. }
            | GatewayError::KeyProviderNotAllowed { .. }
            | GatewayError::KeyLimit { .. }
            | GatewayError::KeyAttempts { .. }
            | GatewayError::SecretBlocked { .. }
            | GatewayError::HookRefused { .. } => Culprit::Client,
            GatewayError::KeysUnavailable
            | GatewayError::LimitsUnavailable
            | GatewayError::HookFailed { .. } => Culprit::Gateway,
            GatewayError::UpstreamUnreachable { .. }
            | GatewayError::UpstreamTimeout { .. }
            | GatewayError::UpstreamBroken { .. } => Culprit::Upstream,
            GatewayError::CoolingDown { .. } => Culprit::Upstream,
            GatewayError::MissingKey { .. }
            | GatewayError::CloudCredentials { .. }
            | GatewayError::ShuttingDown
            | GatewayError::Overloaded => Culprit::Gateway,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            GatewayError::InvalidJson(_)
            | GatewayError::InvalidField { .. }
            | GatewayError::InvalidOptimizeHeader(_)
            | GatewayError::DialectUnsupported { .. }
            | GatewayError::Untranslatable { .. }
            | GatewayError::SecretBlocked { .. }
            | GatewayError::HookRefused { .. } => StatusCode::BAD_REQUEST,
            GatewayError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            GatewayError::Forbidden(_)
            | GatewayError::KeyModelNotAllowed { .. }
            | GatewayError::KeyProviderNotAllowed { .. } => StatusCode::FORBIDDEN,
            GatewayError::KeyLimit { .. } | GatewayError::KeyAttempts { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            GatewayError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            GatewayError::HeadersTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            GatewayError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            GatewayError::UnknownModel { .. } | GatewayError::NoSuchEndpoint { .. } => {
                StatusCode::NOT_FOUND
            }
            GatewayError::MissingKey { .. }
            | GatewayError::CloudCredentials { .. }
            | GatewayError::GatewayKeyMissing
            | GatewayError::GatewayKeyInvalid
            | GatewayError::LocalKeyMissing
            | GatewayError::LocalKeyInvalid
            | GatewayError::KeyRevoked(_)
            | GatewayError::KeyExpired(_) => StatusCode::UNAUTHORIZED,
            GatewayError::UpstreamUnreachable { .. } | GatewayError::UpstreamBroken { .. } => {
                StatusCode::BAD_GATEWAY
            }
            GatewayError::UpstreamTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            GatewayError::ShuttingDown
            | GatewayError::Overloaded
            | GatewayError::KeysUnavailable
            | GatewayError::LimitsUnavailable
            | GatewayError::HookFailed { .. }
            | GatewayError::CoolingDown { .. } => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// Whether the same request may succeed if sent again unchanged.
    pub fn retryable(&self) -> bool {
        matches!(self.culprit(), Culprit::Upstream)
            || matches!(self, GatewayError::ShuttingDown | GatewayError::Overloaded)
    }

    /// A low-cardinality label for logs and metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            GatewayError::InvalidJson(_) => "invalid_json",
            GatewayError::InvalidField { .. } => "invalid_field",
            GatewayError::UnsupportedMediaType(_) => "unsupported_media_type",
            GatewayError::GatewayKeyMissing => "gateway_key_missing",
            GatewayError::GatewayKeyInvalid => "gateway_key_invalid",
            GatewayError::LocalKeyMissing => "local_key_missing",
            GatewayError::LocalKeyInvalid => "local_key_invalid",
            GatewayError::InvalidOptimizeHeader(_) => "invalid_optimize_header",
            GatewayError::BodyTooLarge { .. } => "body_too_large",
            GatewayError::HeadersTooLarge { .. } => "headers_too_large",
            GatewayError::BodyTimeout { .. } => "body_timeout",
            GatewayError::Overloaded => "overloaded",
            GatewayError::UnknownModel { .. } => "unknown_model",
            GatewayError::NoSuchEndpoint { .. } => "no_such_endpoint",
            GatewayError::DialectUnsupported { .. } => "dialect_unsupported",
            GatewayError::Untranslatable { .. } => "untranslatable",
            GatewayError::MissingKey { .. } => "missing_key",
            GatewayError::CloudCredentials { .. } => "missing_credentials",
            GatewayError::UpstreamUnreachable { .. } => "upstream_unreachable",
            GatewayError::UpstreamTimeout { .. } => "upstream_timeout",
            GatewayError::UpstreamBroken { .. } => "upstream_broken",
            GatewayError::ShuttingDown => "shutting_down",
            GatewayError::CoolingDown { .. } => "cooling_down",
            GatewayError::Forbidden(_) => "forbidden",
            GatewayError::KeyRevoked(_) => "key_revoked",
            GatewayError::KeyExpired(_) => "key_expired",
            GatewayError::KeyModelNotAllowed { .. } => "model_not_allowed",
            GatewayError::KeyProviderNotAllowed { .. } => "provider_not_allowed",
            GatewayError::KeyLimit { .. } => "rate_limit_exceeded",
            GatewayError::KeysUnavailable => "keys_unavailable",
            GatewayError::LimitsUnavailable => "limits_unavailable",
            GatewayError::KeyAttempts { .. } => "too_many_key_attempts",
            GatewayError::SecretBlocked { .. } => "secret_blocked",
            GatewayError::HookRefused { .. } => "guardrail_refused",
            GatewayError::HookFailed { .. } => "guardrail_failed",
        }
    }

    fn param(&self) -> Option<&'static str> {
        match self {
            GatewayError::InvalidField { param, .. } => Some(param),
            GatewayError::UnknownModel { .. } | GatewayError::DialectUnsupported { .. } => {
                Some("model")
            }
            _ => None,
        }
    }

    /// OpenAI's `error.type`.
    fn openai_type(&self) -> &'static str {
        match self.status().as_u16() {
            429 => "rate_limit_error",
            401 => "authentication_error",
            400..=499 => "invalid_request_error",
            _ => "api_error",
        }
    }

    /// OpenAI's `error.code`.
    pub fn openai_code(&self) -> &'static str {
        match self {
            GatewayError::UnknownModel { .. } => "model_not_found",
            GatewayError::MissingKey { .. }
            | GatewayError::GatewayKeyMissing
            | GatewayError::GatewayKeyInvalid
            | GatewayError::LocalKeyMissing
            | GatewayError::LocalKeyInvalid => "invalid_api_key",
            other => other.metric_label(),
        }
    }

    /// Anthropic's `error.type`, from its documented list.
    fn anthropic_type(&self) -> &'static str {
        match self.status().as_u16() {
            429 => "rate_limit_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            504 => "timeout_error",
            503 => "overloaded_error",
            400..=499 => "invalid_request_error",
            _ => "api_error",
        }
    }

    /// Google's `error.status`, the canonical code name of the HTTP status.
    fn google_status(&self) -> &'static str {
        crate::translate::gemini::google_status(self.status().as_u16())
    }

    /// The error as the body a client of `dialect` expects.
    pub fn body_json(&self, dialect: Dialect) -> serde_json::Value {
        let message = self.to_string();
        if dialect == Dialect::Gemini {
            return json!({"error": {
                "code": self.status().as_u16(),
                "message": message,
                "status": self.google_status(),
            }});
        }
        if dialect.is_anthropic() {
            json!({"type": "error", "error": {"type": self.anthropic_type(), "message": message}})
        } else {
            json!({"error": {
                "message": message,
                "type": self.openai_type(),
                "param": self.param(),
                "code": self.openai_code(),
            }})
        }
    }

    /// The whole HTTP response, before any byte of a 200 has gone out.
    pub fn into_response(self, dialect: Dialect) -> Response {
        let body = serde_json::to_vec(&self.body_json(dialect)).unwrap_or_default();
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = self.status();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.retryable() {
            response
                .headers_mut()
                .insert("x-should-retry", HeaderValue::from_static("true"));
        }
        if matches!(self, GatewayError::Overloaded) {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(OVERLOAD_RETRY_AFTER_SECS),
            );
        }
        if let GatewayError::CoolingDown { retry_in_secs, .. }
        | GatewayError::KeyLimit { retry_in_secs, .. }
        | GatewayError::KeyAttempts { retry_in_secs } = self
        {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_in_secs));
        }
        response
    }

    /// The error as SSE, for failures after the stream has begun: Anthropic's
    /// `event: error`, an OpenAI Chat error chunk, or for Responses an `error` event and
    /// then `response.failed`, numbered on from where the stream was (`at`).
    pub fn sse_frame(&self, dialect: Dialect, at: &ResponsesPosition) -> Bytes {
        let frame = match dialect {
            Dialect::AnthropicMessages => {
                format!("event: error\ndata: {}\n\n", self.body_json(dialect))
            }
            Dialect::OpenAiChat | Dialect::Gemini => {
                format!("data: {}\n\n", self.body_json(dialect))
            }
            Dialect::OpenAiResponses => {
                let event = json!({
                    "type": "error",
                    "code": self.openai_code(),
                    "message": self.to_string(),
                    "param": self.param(),
                    "sequence_number": at.next_sequence,
                });
                let failed = json!({
                    "type": "response.failed",
                    "sequence_number": at.next_sequence + 1,
                    "response": {
                        "id": at.id,
                        "object": "response",
                        "status": "failed",
                        "model": at.model,
                        "output": [],
                        "error": {"code": self.openai_code(), "message": self.to_string()},
                    },
                });
                format!("event: error\ndata: {event}\n\nevent: response.failed\ndata: {failed}\n\n")
            }
        };
        Bytes::from(frame)
    }
}

/// Where a relayed Responses stream was: the number its next event takes and the
/// response it was writing, so a failure event continues it.
#[derive(Debug, Default)]
pub struct ResponsesPosition {
    pub next_sequence: u64,
    pub id: Option<String>,
    pub model: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_model_lists_what_is_served_in_both_shapes() {
        let err = GatewayError::UnknownModel {
            model: "gpt-9".into(),
            served: vec!["gpt-5".into(), "claude-sonnet-5-5".into()],
        };
        assert_eq!(err.status(), StatusCode::NOT_FOUND);
        let openai = err.body_json(Dialect::OpenAiChat);
        assert_eq!(openai["error"]["code"], "model_not_found");
        assert_eq!(openai["error"]["param"], "model");
        let message = openai["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("gpt-9") && message.contains("claude-sonnet-5-5"));
        let anthropic = err.body_json(Dialect::AnthropicMessages);
        assert_eq!(anthropic["type"], "error");
        assert_eq!(anthropic["error"]["type"], "not_found_error");
    }

    #[test]
    fn stream_errors_use_each_dialects_frame() {
        let err = GatewayError::UpstreamBroken {
            provider: "p".into(),
            detail: "reset".into(),
        };
        let start = ResponsesPosition::default();
        let a = err.sse_frame(Dialect::AnthropicMessages, &start);
        assert!(a.starts_with(b"event: error\ndata: {\"error\":{"));
        let c = err.sse_frame(Dialect::OpenAiChat, &start);
        assert!(c.starts_with(b"data: {\"error\":{"));
        let at = ResponsesPosition {
            next_sequence: 7,
            id: Some("resp_1".into()),
            model: Some("gpt-x".into()),
        };
        let r = err.sse_frame(Dialect::OpenAiResponses, &at);
        let text = String::from_utf8_lossy(&r);
        let frames: Vec<serde_json::Value> = text
            .split("\n\n")
            .filter_map(|f| f.lines().find_map(|l| l.strip_prefix("data: ")))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert!(text.starts_with("event: error\n"), "{text}");
        assert_eq!(frames.len(), 2, "{text}");
        assert_eq!(frames[0]["type"], "error");
        assert_eq!(frames[0]["sequence_number"], 7);
        assert_eq!(frames[1]["type"], "response.failed");
        assert_eq!(frames[1]["sequence_number"], 8);
        assert_eq!(frames[1]["response"]["id"], "resp_1");
        assert_eq!(frames[1]["response"]["status"], "failed");
        assert_eq!(frames[1]["response"]["error"]["code"], frames[0]["code"]);
    }

    #[test]
    fn wire_refusals_render_as_the_same_client_errors() {
        let field = GatewayError::from(WireError::InvalidField {
            param: "stream",
            message: "`stream` must be a boolean".into(),
        });
        assert_eq!(field.status(), StatusCode::BAD_REQUEST);
        assert_eq!(field.metric_label(), "invalid_field");
        let body = field.body_json(Dialect::OpenAiChat);
        assert_eq!(body["error"]["param"], "stream");
        assert_eq!(body["error"]["message"], "`stream` must be a boolean");

        let json = GatewayError::from(WireError::InvalidJson("eof".into()));
        assert_eq!(json.to_string(), "request body is not valid JSON: eof");
        assert_eq!(json.metric_label(), "invalid_json");

        let refused = WireError::Untranslatable {
            feature: "the field `n`".into(),
            target: "somewhere".into(),
            hint: "send one",
        }
        .aimed_at("provider \"p\" (OpenAI Chat)".into());
        let refused = GatewayError::from(refused);
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            refused.to_string(),
            "the field `n` cannot be sent to provider \"p\" (OpenAI Chat): send one"
        );
    }
}

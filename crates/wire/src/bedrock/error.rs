//! Bedrock's errors in Anthropic's shape: an HTTP error answer (a status, the
//! `x-amzn-ErrorType` header, a `{"message"}` body) and an exception inside a stream. One
//! table names what each AWS error means to an Anthropic client, for both.

use serde_json::Value;

use super::eventstream::Message;
use super::sse_frame;

/// The status and Anthropic error type an AWS error name stands for. Streams name them in
/// lowerCamelCase (`throttlingException`), HTTP answers in UpperCamelCase.
fn kind_of(name: &str) -> Option<(u16, &'static str)> {
    const TABLE: &[(&str, u16, &str)] = &[
        ("ThrottlingException", 429, "rate_limit_error"),
        ("ServiceQuotaExceededException", 429, "rate_limit_error"),
        ("TooManyRequestsException", 429, "rate_limit_error"),
        ("ExpiredTokenException", 401, "authentication_error"),
        ("UnrecognizedClientException", 401, "authentication_error"),
        ("InvalidSignatureException", 401, "authentication_error"),
        (
            "MissingAuthenticationTokenException",
            401,
            "authentication_error",
        ),
        ("IncompleteSignatureException", 401, "authentication_error"),
        ("InvalidClientTokenId", 401, "authentication_error"),
        ("AccessDeniedException", 403, "permission_error"),
        ("ResourceNotFoundException", 404, "not_found_error"),
        ("ValidationException", 400, "invalid_request_error"),
        ("ConflictException", 400, "invalid_request_error"),
        // Bedrock's 408: the model took too long. A gateway in the middle says 504, and
        // Anthropic documents `timeout_error` for it.
        ("ModelTimeoutException", 504, "timeout_error"),
        ("ModelNotReadyException", 503, "overloaded_error"),
        ("ServiceUnavailableException", 503, "overloaded_error"),
        ("InternalServerException", 500, "api_error"),
        // Bedrock's 424: the model itself failed. To the client, an upstream's failure.
        ("ModelErrorException", 502, "api_error"),
        ("ModelStreamErrorException", 502, "api_error"),
    ];
    TABLE
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, status, kind)| (*status, *kind))
}

/// For an error whose name is missing or new: what its status means to Anthropic.
fn kind_of_status(status: u16) -> (u16, &'static str) {
    match status {
        400 => (400, "invalid_request_error"),
        401 => (401, "authentication_error"),
        403 => (403, "permission_error"),
        404 => (404, "not_found_error"),
        408 | 504 => (504, "timeout_error"),
        413 => (413, "request_too_large"),
        429 => (429, "rate_limit_error"),
        503 => (503, "overloaded_error"),
        s if (400..500).contains(&s) => (s, "invalid_request_error"),
        500 => (500, "api_error"),
        _ => (502, "api_error"),
    }
}

/// The error's name: from `x-amzn-ErrorType` (`ThrottlingException:http://internal…`), or
/// else the body's `__type` (`com.amazon.coral.service#UnrecognizedClientException`) or
/// `code`.
fn error_name(header: Option<&str>, body: Option<&Value>) -> Option<String> {
    let from_header = header.and_then(|h| h.split(':').next());
    let from_body = || {
        let body = body?;
        let t = body.get("__type").or_else(|| body.get("code"))?.as_str()?;
        t.rsplit('#').next()
    };
    from_header
        .or_else(from_body)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
}

/// The message a Bedrock error body carries (`message`, or `Message` as some services
/// spell it); a body that is not JSON is its own message.
fn body_message(body: &[u8], parsed: Option<&Value>) -> Option<String> {
    if let Some(v) = parsed {
        let m = v.get("message").or_else(|| v.get("Message"));
        return m.and_then(Value::as_str).map(str::to_owned);
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    (!text.is_empty()).then(|| text.chars().take(1000).collect())
}

/// Bedrock checks a request's SigV4 time against its own clock and refuses one more than
/// 5 minutes off; its wording ("Signature expired: … is now earlier than …") does not say
/// that the fix is this machine's clock.
fn explain_clock_skew(name: &str, message: String) -> String {
    let skewed = name.eq_ignore_ascii_case("InvalidSignatureException")
        && (message.starts_with("Signature expired")
            || message.contains("Signature not yet current"));
    if skewed {
        format!(
            "the request's signing time is more than 5 minutes off the cloud's clock: check \
             this machine's clock. AWS said: {message}"
        )
    } else {
        message
    }
}

/// A Bedrock error answer as Anthropic's error body, and the status the client should get.
/// `provider` is the configured provider's name, so the client can tell which of several
/// failed.
pub fn error_to_anthropic(
    provider: &str,
    status: u16,
    error_type: Option<&str>,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let parsed = serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object);
    let name = error_name(error_type, parsed.as_ref());
    let (client_status, kind) = name
        .as_deref()
        .and_then(kind_of)
        .unwrap_or_else(|| kind_of_status(status));
    let message =
        body_message(body, parsed.as_ref()).unwrap_or_else(|| "Bedrock gave no message".to_owned());
    let message = match &name {
        Some(name) => format!("{provider} ({name}): {}", explain_clock_skew(name, message)),
        None => format!("{provider} (HTTP {status}): {message}"),
    };
    (client_status, anthropic_error(kind, &message))
}

fn anthropic_error(kind: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "type": "error",
        "error": {"type": kind, "message": message},
    }))
    .unwrap_or_default()
}

/// Anthropic's SSE `error` event.
pub(crate) fn sse_error(kind: &str, message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    sse_frame(&mut out, "error", &anthropic_error(kind, message));
    out
}

/// The SSE `error` event for a stream's `exception` or `error` message; `None` for an
/// `event`. Bedrock ends a stream after one of these.
pub(crate) fn stream_failure(message: &Message) -> Option<Vec<u8>> {
    match message.message_type() {
        Some("exception") => {
            let name = message.exception_type().unwrap_or("exception");
            let kind = kind_of(name).map_or("api_error", |(_, kind)| kind);
            let parsed = serde_json::from_slice::<Value>(&message.payload).ok();
            let text = body_message(&message.payload, parsed.as_ref())
                .unwrap_or_else(|| format!("Bedrock ended the stream with {name}"));
            Some(sse_error(kind, &text))
        }
        Some("error") => {
            let code = message.error_code().unwrap_or("error");
            let text = message.error_message().unwrap_or("no message");
            Some(sse_error("api_error", &format!("{code}: {text}")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::testing::{exception_frame, frame, messages, sse_events};
    use serde_json::json;

    fn mapped(status: u16, header: Option<&str>, body: &str) -> (u16, Value) {
        let (status, bytes) = error_to_anthropic("bedrock-east", status, header, body.as_bytes());
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn each_aws_error_gets_the_anthropic_status_and_type_it_means() {
        let table = [
            ("ThrottlingException", 429, 429, "rate_limit_error"),
            (
                "ServiceQuotaExceededException",
                400,
                429,
                "rate_limit_error",
            ),
            ("ExpiredTokenException", 403, 401, "authentication_error"),
            (
                "UnrecognizedClientException",
                403,
                401,
                "authentication_error",
            ),
            (
                "InvalidSignatureException",
                403,
                401,
                "authentication_error",
            ),
            (
                "MissingAuthenticationTokenException",
                403,
                401,
                "authentication_error",
            ),
            (
                "IncompleteSignatureException",
                400,
                401,
                "authentication_error",
            ),
            ("AccessDeniedException", 403, 403, "permission_error"),
            ("ResourceNotFoundException", 404, 404, "not_found_error"),
            ("ValidationException", 400, 400, "invalid_request_error"),
            ("ModelTimeoutException", 408, 504, "timeout_error"),
            ("ModelNotReadyException", 429, 503, "overloaded_error"),
            ("ServiceUnavailableException", 503, 503, "overloaded_error"),
            ("InternalServerException", 500, 500, "api_error"),
            ("ModelErrorException", 424, 502, "api_error"),
        ];
        for (name, aws_status, status, kind) in table {
            let header = format!("{name}:http://internal.amazon.com/coral/com.amazon.bedrock/");
            let (got, body) = mapped(aws_status, Some(&header), r#"{"message":"it failed"}"#);
            assert_eq!(got, status, "{name}");
            assert_eq!(
                body,
                json!({"type": "error", "error": {
                    "type": kind,
                    "message": format!("bedrock-east ({name}): it failed"),
                }}),
                "{name}"
            );
        }
    }

    #[test]
    fn the_name_may_come_from_the_body_and_the_message_may_be_capitalized() {
        let (status, body) = mapped(
            403,
            None,
            r#"{"__type":"com.amazon.coral.service#UnrecognizedClientException","Message":"The security token included in the request is invalid."}"#,
        );
        assert_eq!(status, 401);
        assert_eq!(
            body["error"]["message"],
            "bedrock-east (UnrecognizedClientException): The security token included in the request is invalid."
        );
    }

    #[test]
    fn an_unnamed_error_is_judged_by_its_status() {
        let (status, body) = mapped(503, None, "upstream connect error");
        assert_eq!(status, 503);
        assert_eq!(body["error"]["type"], "overloaded_error");
        assert_eq!(
            body["error"]["message"],
            "bedrock-east (HTTP 503): upstream connect error"
        );
        let (status, body) = mapped(418, Some("SomethingNewException:x"), "");
        assert_eq!(
            (status, body["error"]["type"].as_str()),
            (418, Some("invalid_request_error"))
        );
        assert_eq!(
            body["error"]["message"],
            "bedrock-east (SomethingNewException): Bedrock gave no message"
        );
        let (status, body) = mapped(599, None, "{}");
        assert_eq!(status, 502);
        // The message keeps Bedrock's own status.
        assert_eq!(
            body["error"]["message"],
            "bedrock-east (HTTP 599): Bedrock gave no message"
        );
    }

    #[test]
    fn a_signature_refused_for_its_time_says_to_check_the_clock() {
        let expired = "Signature expired: 20240101T000000Z is now earlier than 20240101T000600Z (20240101T001100Z - 5 min.)";
        let (status, body) = mapped(
            403,
            Some("InvalidSignatureException"),
            &json!({ "message": expired }).to_string(),
        );
        assert_eq!(status, 401);
        assert_eq!(
            body["error"]["message"],
            format!("bedrock-east (InvalidSignatureException): the request's signing time is more than 5 minutes off the cloud's clock: check this machine's clock. AWS said: {expired}")
        );
        let early = "Signature not yet current: 20240101T002000Z is still later than 20240101T001500Z (20240101T001000Z + 5 min.)";
        let (_, body) = mapped(
            403,
            Some("InvalidSignatureException"),
            &json!({ "message": early }).to_string(),
        );
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("check this machine's clock. AWS said: Signature not yet current"));
        // Any other signature failure keeps AWS's words alone.
        let (_, body) = mapped(
            403,
            Some("InvalidSignatureException"),
            r#"{"message":"The request signature we calculated does not match"}"#,
        );
        assert_eq!(
            body["error"]["message"],
            "bedrock-east (InvalidSignatureException): The request signature we calculated does not match"
        );
    }

    #[test]
    fn stream_exceptions_become_anthropic_error_events() {
        let cases = [
            ("throttlingException", "rate_limit_error"),
            ("modelStreamErrorException", "api_error"),
            ("internalServerException", "api_error"),
            ("validationException", "invalid_request_error"),
            ("serviceUnavailableException", "overloaded_error"),
            ("modelTimeoutException", "timeout_error"),
            ("somethingNewException", "api_error"),
        ];
        for (name, kind) in cases {
            let m = &messages(&exception_frame(name, br#"{"message":"slow down"}"#))[0];
            let sse = stream_failure(m).unwrap();
            assert_eq!(
                sse_events(&sse),
                vec![(
                    "error".to_owned(),
                    json!({"type": "error", "error": {"type": kind, "message": "slow down"}})
                )],
                "{name}"
            );
        }
        let m = &messages(&frame(
            &[
                (":message-type", "error"),
                (":error-code", "InternalFailure"),
                (":error-message", "boom"),
            ],
            b"",
        ))[0];
        assert_eq!(
            sse_events(&stream_failure(m).unwrap())[0].1["error"]["message"],
            "InternalFailure: boom"
        );
        let event = &messages(&frame(&[(":message-type", "event")], b"{}"))[0];
        assert!(stream_failure(event).is_none());
    }
}

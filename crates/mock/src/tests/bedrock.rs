//! Bedrock's runtime routes, as an AWS client sees them: SigV4 (or an API key) in, JSON or
//! event streams out, AWS's errors.

use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::cloud::{post_owned, read_frames, sigv4, sigv4_at, Frame, ReadError, HOST};
use super::{call, Running};
use crate::dates::unix_now;
use crate::{MockConfig, MockState, StatusCode as Status};

const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1%3A0";
const BEDROCK_NS: &str = "http://internal.amazon.com/coral/com.amazon.bedrock/";
const SERVICE_NS: &str = "http://internal.amazon.com/coral/com.amazon.coral.service/";

fn path(model: &str, action: &str) -> String {
    format!("/model/{model}/{action}")
}

fn invoke_body() -> Value {
    json!({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100,
           "messages": [{"role": "user", "content": "hello bedrock"}]})
}

fn converse_body() -> Value {
    json!({"messages": [{"role": "user", "content": [{"text": "hello converse"}]}],
           "inferenceConfig": {"maxTokens": 100}})
}

fn weather_tools() -> Value {
    json!({"tools": [
        {"toolSpec": {"name": "get_weather", "description": "weather",
                      "inputSchema": {"json": {"type": "object",
                          "properties": {"city": {"type": "string"}}, "required": ["city"]}}}},
        {"cachePoint": {"type": "default"}}]})
}

fn owned(headers: &[(&str, &str)]) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn signed_with(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut headers = sigv4("us-east-1");
    headers.extend(owned(extra));
    headers
}

async fn send(
    state: &MockState,
    path: &str,
    headers: &[(String, String)],
    body: &Value,
) -> (StatusCode, HeaderMap, Bytes) {
    let borrowed: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    call(state, "POST", path, &borrowed, &body.to_string()).await
}

/// The error's status, type (with its namespace) and message.
fn aws_error(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> (u16, String, String) {
    let body: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    assert!(headers.contains_key("x-amzn-requestid"));
    (
        status.as_u16(),
        headers["x-amzn-errortype"].to_str().unwrap().to_owned(),
        body["message"].as_str().unwrap().to_owned(),
    )
}

/// The Anthropic events inside an `invoke-with-response-stream` body.
fn chunk_events(frames: &[Frame]) -> Vec<Value> {
    frames
        .iter()
        .map(|frame| {
            assert_eq!(frame.header(":event-type"), Some("chunk"));
            assert_eq!(frame.header(":content-type"), Some("application/json"));
            assert_eq!(frame.header(":message-type"), Some("event"));
            let payload = frame.json();
            assert!(
                payload["p"].as_str().is_some_and(|p| !p.is_empty()),
                "{payload}"
            );
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(payload["bytes"].as_str().unwrap())
                .unwrap();
            serde_json::from_slice(&bytes).unwrap()
        })
        .collect()
}

/// `invoke`: Anthropic's message, Bedrock's id and model name, the token-count headers; the
/// model id arrives percent-encoded and the region is recorded.
#[tokio::test]
async fn invoke_answers_anthropics_message_with_bedrocks_ids_and_token_headers() {
    let s = MockState::new(MockConfig::default());
    let mut headers = sigv4("eu-central-1");
    headers.push((
        "x-amz-security-token".to_owned(),
        "FwoGZXIvYXdzEMock".to_owned(),
    ));
    let (status, response, bytes) =
        send(&s, &path(SONNET, "invoke"), &headers, &invoke_body()).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["type"], "message");
    assert!(
        body["id"].as_str().unwrap().starts_with("msg_bdrk_01"),
        "{body}"
    );
    assert_eq!(body["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(
        body["content"][0]["text"],
        "Hello from the mock. You said: hello bedrock"
    );
    assert_eq!(
        response["x-amzn-bedrock-input-token-count"]
            .to_str()
            .unwrap(),
        body["usage"]["input_tokens"].to_string()
    );
    assert_eq!(
        response["x-amzn-bedrock-output-token-count"]
            .to_str()
            .unwrap(),
        body["usage"]["output_tokens"].to_string()
    );
    assert!(response.contains_key("x-amzn-requestid"));
    let captured = &s.requests()[0];
    assert_eq!(captured.path_and_query, path(SONNET, "invoke"));
    assert_eq!(captured.aws_region().as_deref(), Some("eu-central-1"));
    let (_, _, listed) = call(&s, "GET", "/_mock/requests", &[], "").await;
    let listed: Value = serde_json::from_slice(&listed).unwrap();
    assert_eq!(listed[0]["aws_region"], "eu-central-1");
}

/// Inference profiles and ARNs (with `%2F`) name models too; anything else is refused.
#[tokio::test]
async fn model_ids_in_every_documented_form_are_taken_and_others_refused() {
    let s = MockState::new(MockConfig::default());
    for model in [
        "us.anthropic.claude-haiku-4-5-20251001-v1%3A0",
        "global.anthropic.claude-sonnet-4-5-20250929-v1%3A0",
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-5-20250929-v1%3A0",
    ] {
        let (status, _, bytes) = send(&s, &path(model, "invoke"), &sigv4("us-east-1"), &invoke_body()).await;
        assert_eq!(status, StatusCode::OK, "{model}: {}", String::from_utf8_lossy(&bytes));
    }
    for model in [
        "claude-sonnet-4-5",
        "anthropic.claude%20sonnet",
        "arn%3Aaws%3As3%3A%3A%3Ab%2Fk",
    ] {
        let (status, headers, bytes) = send(
            &s,
            &path(model, "converse"),
            &sigv4("us-east-1"),
            &converse_body(),
        )
        .await;
        assert_eq!(
            aws_error(status, &headers, &bytes),
            (
                400,
                format!("ValidationException:{BEDROCK_NS}"),
                "The provided model identifier is invalid.".to_owned()
            ),
            "{model}"
        );
    }
}

/// Bedrock's schema for Claude's body: its own `anthropic_version`, no `model` or `stream`.
#[tokio::test]
async fn invoke_refuses_a_body_with_model_or_stream_or_without_the_version() {
    let s = MockState::new(MockConfig::default());
    let mut with_model = invoke_body();
    with_model["model"] = json!("claude-sonnet-4-5");
    let (status, headers, bytes) = send(
        &s,
        &path(SONNET, "invoke"),
        &sigv4("us-east-1"),
        &with_model,
    )
    .await;
    assert_eq!(
        aws_error(status, &headers, &bytes),
        (
            400,
            format!("ValidationException:{BEDROCK_NS}"),
            "Malformed input request: #: extraneous key [model] is not permitted, please \
             reformat your input and try again."
                .to_owned()
        )
    );
    let mut no_version = invoke_body();
    no_version
        .as_object_mut()
        .unwrap()
        .remove("anthropic_version");
    no_version["stream"] = json!(true);
    let (_, _, bytes) = send(
        &s,
        &path(SONNET, "invoke-with-response-stream"),
        &sigv4("us-east-1"),
        &no_version,
    )
    .await;
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        body["message"],
        "Malformed input request: #: required key [anthropic_version] not found#: extraneous \
         key [stream] is not permitted, please reformat your input and try again."
    );
    let mut betas = invoke_body();
    betas["anthropic_beta"] = json!(["context-1m-2025-08-07"]);
    let (status, _, _) = send(&s, &path(SONNET, "invoke"), &sigv4("us-east-1"), &betas).await;
    assert_eq!(status, StatusCode::OK);
    // A beta Bedrock's Claude does not offer (Claude Code's own) is refused.
    betas["anthropic_beta"] = json!(["context-1m-2025-08-07", "claude-code-20250219"]);
    let (status, headers, bytes) =
        send(&s, &path(SONNET, "invoke"), &sigv4("us-east-1"), &betas).await;
    assert_eq!(
        aws_error(status, &headers, &bytes),
        (
            400,
            format!("ValidationException:{BEDROCK_NS}"),
            "invalid beta flag".to_owned()
        )
    );
    // Invoke speaks Claude's body only; another provider's model refuses it.
    let (status, _, bytes) = send(
        &s,
        &path("amazon.nova-pro-v1%3A0", "invoke"),
        &sigv4("us-east-1"),
        &invoke_body(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&bytes).contains("extraneous key [anthropic_version]"));
}

/// No credentials, a bad scope, a stale date: AWS's front-end refusals.
#[tokio::test]
async fn credentials_are_checked_for_form_and_time_with_awss_messages() {
    let s = MockState::new(MockConfig::default());
    let url = path(SONNET, "invoke");
    let (status, headers, bytes) = send(&s, &url, &owned(&[HOST]), &invoke_body()).await;
    assert_eq!(
        aws_error(status, &headers, &bytes),
        (
            403,
            format!("MissingAuthenticationTokenException:{SERVICE_NS}"),
            "Missing Authentication Token".to_owned()
        )
    );
    let (status, headers, bytes) = send(
        &s,
        &url,
        &sigv4_at("us-east-1", "execute-api", unix_now()),
        &invoke_body(),
    )
    .await;
    assert_eq!(
        aws_error(status, &headers, &bytes),
        (
            403,
            format!("InvalidSignatureException:{SERVICE_NS}"),
            "Credential should be scoped to correct service: 'bedrock'. ".to_owned()
        )
    );
    let (status, headers, bytes) = send(
        &s,
        &url,
        &sigv4_at("us-east-1", "bedrock", unix_now() - 600),
        &invoke_body(),
    )
    .await;
    let (code, kind, message) = aws_error(status, &headers, &bytes);
    assert_eq!(
        (code, kind.as_str()),
        (
            403,
            format!("InvalidSignatureException:{SERVICE_NS}").as_str()
        )
    );
    assert!(message.starts_with("Signature expired: "), "{message}");
    assert!(message.ends_with(" - 5 min.)"), "{message}");
    // A Bedrock API key is a bearer token.
    let key = owned(&[
        HOST,
        ("authorization", "Bearer ABSKQmVkcm9ja0FQSUtleS1tb2Nr"),
    ]);
    let (status, _, _) = send(&s, &url, &key, &invoke_body()).await;
    assert_eq!(status, StatusCode::OK);
}

/// The stream: one `chunk` frame per Anthropic event, base64 inside, padded; the last carries
/// Bedrock's invocation metrics.
#[tokio::test]
async fn invoke_with_response_stream_sends_each_event_in_a_chunk_frame() {
    let s = MockState::new(MockConfig::default());
    let (status, headers, bytes) = send(
        &s,
        &path(SONNET, "invoke-with-response-stream"),
        &sigv4("us-west-2"),
        &invoke_body(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["content-type"],
        "application/vnd.amazon.eventstream"
    );
    assert_eq!(headers["x-amzn-bedrock-content-type"], "application/json");
    let frames = read_frames(&bytes).unwrap();
    let events = chunk_events(&frames);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert_eq!(
        &kinds[kinds.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(!kinds.contains(&"ping"));
    assert!(events[0]["message"]["id"]
        .as_str()
        .unwrap()
        .starts_with("msg_bdrk_01"));
    let text: String = events
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello from the mock. You said: hello bedrock");
    let metrics = &events.last().unwrap()["amazon-bedrock-invocationMetrics"];
    let delta_usage = &events[events.len() - 2]["usage"];
    assert_eq!(metrics["inputTokenCount"], delta_usage["input_tokens"]);
    assert_eq!(metrics["outputTokenCount"], delta_usage["output_tokens"]);
    assert!(metrics["invocationLatency"].is_u64() && metrics["firstByteLatency"].is_u64());
}

/// Converse: the first declared tool is called, then its result is quoted back as text.
#[tokio::test]
async fn converse_calls_the_first_tool_then_quotes_its_result() {
    let s = MockState::new(MockConfig::default());
    let mut request = converse_body();
    request["toolConfig"] = weather_tools();
    let (status, headers, body) = post_owned(
        &s,
        &path(SONNET, "converse"),
        &sigv4("us-east-1"),
        request.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["stopReason"], "tool_use");
    let tool_use = &body["output"]["message"]["content"][0]["toolUse"];
    assert_eq!(body["output"]["message"]["role"], "assistant");
    assert_eq!(tool_use["name"], "get_weather");
    assert_eq!(tool_use["input"], json!({"city": "mock"}));
    let id = tool_use["toolUseId"].as_str().unwrap();
    assert!(id.starts_with("tooluse_"), "{id}");
    let usage = &body["usage"];
    assert_eq!(
        usage["totalTokens"].as_u64().unwrap(),
        usage["inputTokens"].as_u64().unwrap() + usage["outputTokens"].as_u64().unwrap()
    );
    assert_eq!(usage["cacheReadInputTokens"], 0);
    assert_eq!(usage["cacheWriteInputTokens"], 0);
    assert!(body["metrics"]["latencyMs"].is_u64());

    let messages = request["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": [{"toolUse": tool_use.clone()}]}));
    messages.push(json!({"role": "user", "content": [{"toolResult": {
        "toolUseId": id, "content": [{"text": "sunny"}, {"json": {"c": 21}}], "status": "success"}}]}));
    let (status, _, body) =
        post_owned(&s, &path(SONNET, "converse"), &sigv4("us-east-1"), request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["stopReason"], "end_turn");
    assert_eq!(
        body["output"]["message"]["content"],
        json!([{"text": "tool result: sunny{\"c\":21}"}])
    );
}

/// A malformed Converse request is refused with the field named.
#[tokio::test]
async fn converse_refuses_a_malformed_request_naming_the_field() {
    let s = MockState::new(MockConfig::default());
    let bad = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]});
    let (status, headers, bytes) =
        send(&s, &path(SONNET, "converse"), &sigv4("us-east-1"), &bad).await;
    let (code, kind, message) = aws_error(status, &headers, &bytes);
    assert_eq!(
        (code, kind),
        (400, format!("ValidationException:{BEDROCK_NS}"))
    );
    assert!(
        message.starts_with("1 validation error detected: Value '[text, type]' at 'messages.1.member.content.1.member'"),
        "{message}"
    );
    let unanswered = json!({"messages": [
        {"role": "user", "content": [{"text": "x"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {}}}]},
        {"role": "user", "content": [{"text": "and?"}]}],
        "toolConfig": weather_tools()});
    let (_, _, bytes) = send(
        &s,
        &path(SONNET, "converse-stream"),
        &sigv4("us-east-1"),
        &unanswered,
    )
    .await;
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        body["message"],
        "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_1"
    );
}

/// `converse-stream`: messageStart, the deltas, contentBlockStop, messageStop, metadata;
/// a tool call opens with contentBlockStart and streams its input as JSON text.
#[tokio::test]
async fn converse_stream_sends_bedrocks_events_for_text_and_for_a_tool_call() {
    let s = MockState::new(MockConfig::default());
    let (status, headers, bytes) = send(
        &s,
        &path(SONNET, "converse-stream"),
        &sigv4("us-east-1"),
        &converse_body(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["content-type"],
        "application/vnd.amazon.eventstream"
    );
    let frames = read_frames(&bytes).unwrap();
    let kinds: Vec<&str> = frames
        .iter()
        .map(|f| f.header(":event-type").unwrap())
        .collect();
    assert_eq!(kinds[0], "messageStart");
    assert_eq!(
        &kinds[kinds.len() - 3..],
        ["contentBlockStop", "messageStop", "metadata"]
    );
    assert!(kinds[1..kinds.len() - 3]
        .iter()
        .all(|k| *k == "contentBlockDelta"));
    for frame in &frames {
        assert_eq!(frame.header(":message-type"), Some("event"));
        assert_eq!(frame.header(":content-type"), Some("application/json"));
        assert!(frame.json()["p"].is_string());
    }
    assert_eq!(frames[0].json()["role"], "assistant");
    let text: String = frames
        .iter()
        .filter_map(|f| f.json()["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "Hello from the mock. You said: hello converse");
    assert_eq!(frames[frames.len() - 2].json()["stopReason"], "end_turn");
    let metadata = frames.last().unwrap().json();
    assert!(metadata["usage"]["inputTokens"].is_u64(), "{metadata}");
    assert!(metadata["metrics"]["latencyMs"].is_u64());

    let mut request = converse_body();
    request["toolConfig"] = weather_tools();
    let (_, _, bytes) = send(
        &s,
        &path(SONNET, "converse-stream"),
        &sigv4("us-east-1"),
        &request,
    )
    .await;
    let frames = read_frames(&bytes).unwrap();
    let start = frames[1].json();
    assert_eq!(frames[1].header(":event-type"), Some("contentBlockStart"));
    assert_eq!(start["contentBlockIndex"], 0);
    assert_eq!(start["start"]["toolUse"]["name"], "get_weather");
    assert!(start["start"]["toolUse"]["toolUseId"]
        .as_str()
        .unwrap()
        .starts_with("tooluse_"));
    let input: String = frames
        .iter()
        .filter_map(|f| {
            f.json()["delta"]["toolUse"]["input"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"city": "mock"})
    );
    assert_eq!(frames[frames.len() - 2].json()["stopReason"], "tool_use");
}

/// Thinking asked for in `additionalModelRequestFields` comes back as a signed
/// reasoningContent block, which the next turn must carry back unchanged.
#[tokio::test]
async fn converse_with_thinking_answers_signed_reasoning_first() {
    let s = MockState::new(MockConfig::default());
    let mut request = converse_body();
    request["additionalModelRequestFields"] =
        json!({"thinking": {"type": "enabled", "budget_tokens": 1024}});
    let (status, _, body) = post_owned(
        &s,
        &path(SONNET, "converse"),
        &sigv4("us-east-1"),
        request.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let content = body["output"]["message"]["content"].as_array().unwrap();
    let reasoning = &content[0]["reasoningContent"]["reasoningText"];
    assert_eq!(reasoning["text"], "Thinking about: hello converse");
    assert!(reasoning["signature"].as_str().unwrap().starts_with("sig-"));
    assert!(content[1]["text"].is_string());
    let messages = request["messages"].as_array_mut().unwrap();
    let mut forged = content[0].clone();
    forged["reasoningContent"]["reasoningText"]["signature"] = json!("sig-forged");
    messages.push(json!({"role": "assistant", "content": [forged, content[1].clone()]}));
    messages.push(json!({"role": "user", "content": [{"text": "again"}]}));
    let (status, _, body) =
        post_owned(&s, &path(SONNET, "converse"), &sigv4("us-east-1"), request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("Invalid `signature` in `thinking` block"));
}

/// `x-mock-error-status` answers Bedrock's exception for the status, overridable by type
/// and message; the mock-wide `fail_status` answers in the same shape.
#[tokio::test]
async fn injected_errors_are_bedrocks_exceptions() {
    let s = MockState::new(MockConfig::default());
    let url = path(SONNET, "converse");
    for (status, kind, message) in [
        (
            "429",
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        ),
        (
            "400",
            "ValidationException",
            "Malformed input request, please reformat your input and try again.",
        ),
        (
            "403",
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
        ),
        (
            "404",
            "ResourceNotFoundException",
            "Could not resolve the foundation model from the provided model identifier.",
        ),
        (
            "408",
            "ModelTimeoutException",
            "Model has timed out in processing the request. Try your request again.",
        ),
        (
            "424",
            "ModelErrorException",
            "The model encountered an error processing the request. Try your request again.",
        ),
        (
            "500",
            "InternalServerException",
            "The system encountered an unexpected error during processing. Try your request again.",
        ),
        (
            "503",
            "ServiceUnavailableException",
            "Bedrock is unable to process your request.",
        ),
    ] {
        let headers = signed_with(&[("x-mock-error-status", status)]);
        let (got, headers, bytes) = send(&s, &url, &headers, &converse_body()).await;
        assert_eq!(
            aws_error(got, &headers, &bytes),
            (
                status.parse().unwrap(),
                format!("{kind}:{BEDROCK_NS}"),
                message.to_owned()
            )
        );
    }
    let headers = signed_with(&[
        ("x-mock-error-status", "403"),
        ("x-mock-aws-error-type", "ExpiredTokenException"),
    ]);
    let (got, headers, bytes) = send(&s, &url, &headers, &converse_body()).await;
    assert_eq!(
        aws_error(got, &headers, &bytes),
        (
            403,
            format!("ExpiredTokenException:{SERVICE_NS}"),
            "The security token included in the request is expired".to_owned()
        )
    );
    let headers = signed_with(&[
        ("x-mock-error-status", "400"),
        ("x-mock-aws-error-type", "ServiceQuotaExceededException"),
        ("x-mock-aws-error-message", "Too many tokens per day"),
    ]);
    let (got, headers, bytes) = send(&s, &url, &headers, &converse_body()).await;
    assert_eq!(
        aws_error(got, &headers, &bytes),
        (
            400,
            format!("ServiceQuotaExceededException:{BEDROCK_NS}"),
            "Too many tokens per day".to_owned()
        )
    );

    let throttled = MockState::new(MockConfig {
        fail_status: Some(Status::TOO_MANY_REQUESTS),
        fail_every: 1,
        ..MockConfig::default()
    });
    for action in ["invoke", "converse-stream"] {
        let body = if action == "invoke" {
            invoke_body()
        } else {
            converse_body()
        };
        let (got, headers, bytes) = send(
            &throttled,
            &path(SONNET, action),
            &sigv4("ap-northeast-1"),
            &body,
        )
        .await;
        assert_eq!(
            aws_error(got, &headers, &bytes),
            (
                429,
                format!("ThrottlingException:{BEDROCK_NS}"),
                "Too many requests, please wait before trying again.".to_owned()
            )
        );
    }
    assert_eq!(throttled.faults().injected, [(429, 2)].into());
}

/// `x-mock-stream-error-after: n`: n frames, then an exception frame of the type asked for.
#[tokio::test]
async fn a_stream_error_ends_the_event_stream_with_an_exception_frame() {
    let s = MockState::new(MockConfig::default());
    for (extra, kind, message) in [
        (
            None,
            "internalServerException",
            "The system encountered an unexpected error during processing. Try your request again.",
        ),
        (
            Some("ThrottlingException"),
            "throttlingException",
            "Too many requests, please wait before trying again.",
        ),
    ] {
        let mut headers = signed_with(&[("x-mock-stream-error-after", "2")]);
        if let Some(kind) = extra {
            headers.push(("x-mock-aws-error-type".to_owned(), kind.to_owned()));
        }
        let (status, _, bytes) = send(
            &s,
            &path(SONNET, "converse-stream"),
            &headers,
            &converse_body(),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let frames = read_frames(&bytes).unwrap();
        assert_eq!(frames.len(), 3);
        let last = &frames[2];
        assert_eq!(last.header(":message-type"), Some("exception"));
        assert_eq!(last.header(":exception-type"), Some(kind));
        assert_eq!(last.header(":content-type"), Some("application/json"));
        assert_eq!(last.json(), json!({"message": message}));
    }
    assert_eq!(s.faults().stream_errors, 2);
}

/// `x-mock-bad-crc-after: n`: frame n+1 fails its message CRC; `x-mock-truncate-after: n`:
/// n whole frames, half of the next, and the body ends; `x-mock-malformed-after: n`: a
/// well-framed frame with broken JSON.
#[tokio::test]
async fn framing_faults_break_the_frame_they_are_asked_to() {
    let s = MockState::new(MockConfig::default());
    let url = path(SONNET, "invoke-with-response-stream");
    let (_, _, whole) = send(&s, &url, &sigv4("us-east-1"), &invoke_body()).await;
    let count = read_frames(&whole).unwrap().len();

    let headers = signed_with(&[("x-mock-bad-crc-after", "2")]);
    let (_, _, bytes) = send(&s, &url, &headers, &invoke_body()).await;
    let (before, error) = read_frames(&bytes).unwrap_err();
    assert_eq!(error, ReadError::MessageCrc { frame: 2 });
    assert_eq!(before.len(), 2);
    // Only the checksum differs: the frames are as long as a whole stream's.
    assert_eq!(bytes.len(), whole.len());

    let headers = signed_with(&[("x-mock-truncate-after", "3")]);
    let (status, _, bytes) = send(&s, &url, &headers, &invoke_body()).await;
    assert_eq!(status, StatusCode::OK);
    let (before, error) = read_frames(&bytes).unwrap_err();
    assert_eq!(error, ReadError::Truncated { whole: 3 });
    assert_eq!(chunk_events(&before).len(), 3);

    let headers = signed_with(&[("x-mock-malformed-after", "1")]);
    let (_, _, bytes) = send(&s, &url, &headers, &invoke_body()).await;
    let frames = read_frames(&bytes).unwrap();
    assert_eq!(frames.len(), count + 1);
    assert!(serde_json::from_slice::<Value>(&frames[1].payload).is_err());
    assert_eq!(chunk_events(&frames[2..]).len(), count - 1);
    let faults = s.faults();
    assert_eq!(
        (faults.bad_crc, faults.truncated, faults.malformed),
        (1, 1, 1)
    );
}

/// Each event-stream frame is its own body chunk, the frame interval apart.
#[tokio::test]
async fn each_event_stream_frame_is_its_own_body_chunk() {
    let s = MockState::new(MockConfig::default());
    let headers = signed_with(&[("x-mock-frame-interval-ms", "20")]);
    let borrowed: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let response = crate::router(s.clone())
        .oneshot(super::request(
            "POST",
            &path(SONNET, "converse-stream"),
            &borrowed,
            &converse_body().to_string(),
        ))
        .await
        .unwrap();
    let mut body = response.into_body();
    let mut arrivals = Vec::new();
    while let Some(frame) = body.frame().await {
        let data = frame.unwrap().into_data().unwrap();
        arrivals.push(std::time::Instant::now());
        assert_eq!(read_frames(&data).unwrap().len(), 1);
    }
    assert!(arrivals.len() > 5);
    for pair in arrivals.windows(2) {
        assert!(pair[1] - pair[0] >= std::time::Duration::from_millis(15));
    }
    assert_eq!(s.stats().completed, 1);
}

/// Over a real connection: a truncated body ends cleanly mid-frame; a reset one in error.
#[tokio::test]
async fn a_truncated_stream_ends_cleanly_and_a_reset_one_does_not() {
    let s = MockState::new(MockConfig::default());
    let mock = Running::start(&s).await;
    let mut headers: Vec<(String, String)> = sigv4("us-east-1");
    headers.retain(|(name, _)| name != "host");
    let send = |extra: (&'static str, &'static str)| {
        let mut headers = headers.clone();
        headers.push((extra.0.to_owned(), extra.1.to_owned()));
        let mock = &mock;
        async move {
            let borrowed: Vec<(&str, &str)> = headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            mock.send(&path(SONNET, "converse-stream"), &borrowed, converse_body())
                .await
                .unwrap()
        }
    };
    let response = send(("x-mock-truncate-after", "2")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let all = response.into_body().collect().await.unwrap().to_bytes();
    let (before, error) = read_frames(&all).unwrap_err();
    assert_eq!(error, ReadError::Truncated { whole: 2 });
    assert_eq!(before[0].header(":event-type"), Some("messageStart"));

    let response = send(("x-mock-reset-after", "1")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.into_body().collect().await.is_err(),
        "a reset stream ends in error"
    );
    assert_eq!((s.faults().truncated, s.faults().reset), (1, 1));
    mock.stop().await;
}

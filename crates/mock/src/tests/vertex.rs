//! Vertex AI's routes, as a Google Cloud client sees them.

use http::StatusCode;
use serde_json::{json, Value};

use super::cloud::{google_token, HOST};
use super::{call, data_json, sse_frames};
use crate::{MockConfig, MockState, StatusCode as Status};

const CLAUDE: &str =
    "/v1/projects/mock-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929";
const GEMINI: &str =
    "/v1/projects/mock-project/locations/global/publishers/google/models/gemini-2.5-flash";

fn claude_body() -> Value {
    json!({"anthropic_version": "vertex-2023-10-16", "max_tokens": 100,
           "messages": [{"role": "user", "content": "hello vertex"}]})
}

fn gemini_body() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hello gemini"}]}]})
}

async fn post(
    state: &MockState,
    path: &str,
    token: Option<&str>,
    extra: &[(&str, &str)],
    body: &Value,
) -> (StatusCode, http::HeaderMap, bytes::Bytes) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![HOST];
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer.as_str()));
    }
    headers.extend_from_slice(extra);
    call(state, "POST", path, &headers, &body.to_string()).await
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

/// `:rawPredict` answers Claude's message, named for the path's model, with Vertex's ids.
#[tokio::test]
async fn raw_predict_answers_claudes_message_for_the_paths_model() {
    let s = MockState::new(MockConfig::default());
    let token = google_token(&s).await;
    let (status, _, bytes) = post(
        &s,
        &format!("{CLAUDE}:rawPredict"),
        Some(&token),
        &[],
        &claude_body(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let body = json_of(&bytes);
    assert_eq!(body["type"], "message");
    assert!(
        body["id"].as_str().unwrap().starts_with("msg_vrtx_01"),
        "{body}"
    );
    assert_eq!(body["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(
        body["content"][0]["text"],
        "Hello from the mock. You said: hello vertex"
    );
    // The global endpoint and v1beta1 serve the same.
    let global = CLAUDE
        .replace("us-east5", "global")
        .replace("/v1/", "/v1beta1/");
    let (status, _, _) = post(
        &s,
        &format!("{global}:rawPredict"),
        Some(&token),
        &[],
        &claude_body(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

/// `:streamRawPredict` with `"stream": true` streams Anthropic's SSE events.
#[tokio::test]
async fn stream_raw_predict_streams_anthropics_events() {
    let s = MockState::new(MockConfig::default());
    let token = google_token(&s).await;
    let mut body = claude_body();
    body["stream"] = json!(true);
    let (status, headers, bytes) = post(
        &s,
        &format!("{CLAUDE}:streamRawPredict"),
        Some(&token),
        &[],
        &body,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let frames = sse_frames(&bytes);
    let names: Vec<&str> = frames.iter().filter_map(|(e, _)| e.as_deref()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    let events = data_json(&frames);
    assert!(events[0]["message"]["id"]
        .as_str()
        .unwrap()
        .starts_with("msg_vrtx_01"));
    let text: String = events
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello from the mock. You said: hello vertex");
}

/// Vertex's Claude takes no `model` and its own `anthropic_version` only.
#[tokio::test]
async fn claude_bodies_with_a_model_or_another_version_are_invalid_requests() {
    let s = MockState::new(MockConfig::default());
    let token = google_token(&s).await;
    let url = format!("{CLAUDE}:rawPredict");
    let mut with_model = claude_body();
    with_model["model"] = json!("claude-sonnet-4-5");
    let mut bedrock_version = claude_body();
    bedrock_version["anthropic_version"] = json!("bedrock-2023-05-31");
    let mut no_version = claude_body();
    no_version
        .as_object_mut()
        .unwrap()
        .remove("anthropic_version");
    for (body, message) in [
        (with_model, "model: Extra inputs are not permitted"),
        (
            bedrock_version,
            "anthropic_version: Input should be 'vertex-2023-10-16'",
        ),
        (no_version, "anthropic_version: Field required"),
    ] {
        let (status, _, bytes) = post(&s, &url, Some(&token), &[], &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let error = json_of(&bytes);
        assert_eq!(error["type"], "error");
        assert_eq!(error["error"]["type"], "invalid_request_error");
        assert_eq!(error["error"]["message"], message);
    }
}

/// The google publisher: generateContent, both streams, and countTokens.
#[tokio::test]
async fn the_google_publisher_serves_geminis_actions() {
    let s = MockState::new(MockConfig::default());
    let token = google_token(&s).await;
    let (status, _, bytes) = post(
        &s,
        &format!("{GEMINI}:generateContent"),
        Some(&token),
        &[],
        &gemini_body(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let body = json_of(&bytes);
    assert_eq!(
        body["candidates"][0]["content"]["parts"][0]["text"],
        "Hello from the mock. You said: hello gemini"
    );
    assert_eq!(body["modelVersion"], "gemini-2.5-flash");

    let (status, headers, bytes) = post(
        &s,
        &format!("{GEMINI}:streamGenerateContent?alt=sse"),
        Some(&token),
        &[],
        &gemini_body(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(text.starts_with("data: {"), "{text}");

    let (status, _, bytes) = post(
        &s,
        &format!("{GEMINI}:streamGenerateContent"),
        Some(&token),
        &[],
        &gemini_body(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let array = json_of(&bytes);
    assert!(array.as_array().is_some_and(|a| !a.is_empty()), "{array}");

    let (status, _, bytes) = post(
        &s,
        &format!("{GEMINI}:countTokens"),
        Some(&token),
        &[],
        &gemini_body(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(json_of(&bytes)["totalTokens"].is_u64());

    // An unknown model is a publisher model Vertex cannot find.
    let unknown = GEMINI.replace("gemini-2.5-flash", "palm-9");
    let (status, _, bytes) = post(
        &s,
        &format!("{unknown}:generateContent"),
        Some(&token),
        &[],
        &gemini_body(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let message = json_of(&bytes)["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with("Publisher Model `projects/mock-project/locations/global/publishers/google/models/palm-9` was not found"),
        "{message}"
    );
}

/// No token, or one the mock did not issue: Google's 401.
#[tokio::test]
async fn callers_without_a_token_from_the_mock_get_unauthenticated() {
    let s = MockState::new(MockConfig::default());
    for (token, reason) in [
        (None, "CREDENTIALS_MISSING"),
        (
            Some("ya29.not-issued-here"),
            "ACCESS_TOKEN_TYPE_UNSUPPORTED",
        ),
    ] {
        for path in [
            format!("{CLAUDE}:rawPredict"),
            format!("{GEMINI}:generateContent"),
        ] {
            let (status, _, bytes) = post(&s, &path, token, &[], &claude_body()).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
            let error = &json_of(&bytes)["error"];
            assert_eq!(error["code"], 401);
            assert_eq!(error["status"], "UNAUTHENTICATED");
            assert_eq!(error["details"][0]["reason"], reason);
        }
    }
    let (_, _, bytes) = post(
        &s,
        &format!("{GEMINI}:generateContent"),
        Some("ya29.not-issued-here"),
        &[],
        &gemini_body(),
    )
    .await;
    assert_eq!(
        json_of(&bytes)["error"]["message"],
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login \
         cookie or other valid authentication credential. See \
         https://developers.google.com/identity/sign-in/web/devconsole-project."
    );
}

/// An injected 429 is Vertex's quota error on both publishers; other statuses keep each
/// publisher's own shape.
#[tokio::test]
async fn injected_errors_are_vertex_quota_errors_or_the_publishers_own() {
    let s = MockState::new(MockConfig::default());
    let token = google_token(&s).await;
    let throttle = [("x-mock-error-status", "429")];
    let (status, _, bytes) = post(
        &s,
        &format!("{CLAUDE}:rawPredict"),
        Some(&token),
        &throttle,
        &claude_body(),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let error = &json_of(&bytes)["error"];
    assert_eq!(error["code"], 429);
    assert_eq!(error["status"], "RESOURCE_EXHAUSTED");
    assert!(error["message"].as_str().unwrap().starts_with(
        "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-claude-sonnet-4-5."
    ), "{error}");
    let (status, _, bytes) = post(
        &s,
        &format!("{GEMINI}:generateContent"),
        Some(&token),
        &throttle,
        &gemini_body(),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(json_of(&bytes)["error"]["status"], "RESOURCE_EXHAUSTED");

    let overloaded = [("x-mock-error-status", "529")];
    let (status, _, bytes) = post(
        &s,
        &format!("{CLAUDE}:rawPredict"),
        Some(&token),
        &overloaded,
        &claude_body(),
    )
    .await;
    assert_eq!(status.as_u16(), 529);
    assert_eq!(json_of(&bytes)["error"]["type"], "overloaded_error");
    let (status, _, bytes) = post(
        &s,
        &format!("{GEMINI}:generateContent"),
        Some(&token),
        &[("x-mock-error-status", "503")],
        &gemini_body(),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(json_of(&bytes)["error"]["status"], "UNAVAILABLE");
}

/// A mock failing every request still issues tokens: the token endpoint is not a provider
/// request, so a throttled region stays reachable for its credentials.
#[tokio::test]
async fn the_mock_wide_fail_status_spares_the_token_endpoint() {
    let s = MockState::new(MockConfig {
        fail_status: Some(Status::TOO_MANY_REQUESTS),
        fail_every: 1,
        ..MockConfig::default()
    });
    let token = google_token(&s).await;
    let (status, _, bytes) = post(
        &s,
        &format!("{CLAUDE}:rawPredict"),
        Some(&token),
        &[],
        &claude_body(),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(json_of(&bytes)["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(s.faults().statuses, [(429, 1)].into());
}

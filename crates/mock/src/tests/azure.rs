//! Azure OpenAI's routes, as an Azure client sees them.

use http::StatusCode;
use serde_json::{json, Value};

use super::{call, data_json, post_json, sse_frames, state};
use crate::tests::cloud::entra_token;
use crate::MOCK_AZURE_KEY;

const KEY: (&str, &str) = ("api-key", MOCK_AZURE_KEY);
const DEPLOYMENT_CHAT: &str =
    "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21";

fn chat_without_model() -> Value {
    json!({"messages": [{"role": "user", "content": "hello azure"}]})
}

/// The classic path: the deployment names the model, with or without one in the body.
#[tokio::test]
async fn a_deployments_chat_answers_with_the_deployment_as_its_model() {
    let s = state();
    let (status, headers, body) =
        post_json(&s, DEPLOYMENT_CHAT, &[KEY], chat_without_model()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-4o-prod");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Hello from the mock. You said: hello azure"
    );
    assert!(headers.contains_key("apim-request-id"));
    assert_eq!(headers["x-ms-region"], "East US");
    let mut other = chat_without_model();
    other["model"] = json!("gpt-5");
    let (_, _, body) = post_json(&s, DEPLOYMENT_CHAT, &[KEY], other).await;
    assert_eq!(body["model"], "gpt-4o-prod");
}

/// Streaming on the classic path is Chat Completions' stream, named for the deployment.
#[tokio::test]
async fn a_deployments_chat_streams_chunks_ending_in_done() {
    let s = state();
    let mut request = chat_without_model();
    request["stream"] = json!(true);
    let (status, headers, bytes) =
        call(&s, "POST", DEPLOYMENT_CHAT, &[KEY], &request.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let frames = sse_frames(&bytes);
    assert_eq!(frames.last().unwrap().1, "[DONE]");
    let chunks = data_json(&frames);
    assert!(chunks.iter().all(|c| c["model"] == "gpt-4o-prod"));
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello from the mock. You said: hello azure");
}

/// A classic path without `api-version` does not exist for Azure.
#[tokio::test]
async fn a_classic_path_without_api_version_is_not_found() {
    let s = state();
    for path in [
        "/openai/deployments/gpt-4o-prod/chat/completions",
        "/openai/deployments/gpt-4o-prod/chat/completions?api-version=",
        "/openai/responses",
        "/openai/deployments/gpt-4o-prod/embeddings?api-version=2024-10-21",
    ] {
        let (status, _, body) = post_json(&s, path, &[KEY], chat_without_model()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            body,
            json!({"error": {"code": "404", "message": "Resource not found"}}),
            "{path}"
        );
    }
}

/// No key, a wrong key, or a token the mock did not issue: Azure's 401s.
#[tokio::test]
async fn callers_without_a_good_key_or_token_get_azures_401() {
    let s = state();
    let (status, _, body) = post_json(&s, DEPLOYMENT_CHAT, &[], chat_without_model()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body,
        json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}})
    );
    let (status, _, wrong) = post_json(
        &s,
        DEPLOYMENT_CHAT,
        &[("api-key", "not-the-key")],
        chat_without_model(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong, body);
    let (status, _, body) = post_json(
        &s,
        DEPLOYMENT_CHAT,
        &[(
            "authorization",
            "Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.e30.sig",
        )],
        chat_without_model(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "401");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Unauthorized. Access token is missing, invalid, audience is incorrect"));
}

/// The v1 API takes the deployment as the body's model, for Chat and Responses alike; the
/// classic Responses path takes it there too, with `api-version`.
#[tokio::test]
async fn v1_and_classic_responses_take_the_model_from_the_body() {
    let s = state();
    let token = entra_token(&s).await;
    let bearer = format!("Bearer {token}");
    let auth = ("authorization", bearer.as_str());
    let (status, _, body) = post_json(
        &s,
        "/openai/v1/chat/completions",
        &[auth],
        json!({"model": "my-deployment", "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["model"], "my-deployment");
    let (status, _, body) = post_json(
        &s,
        "/openai/v1/chat/completions",
        &[auth],
        json!({"messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let responses = json!({"model": "my-deployment", "input": "hello"});
    for path in [
        "/openai/v1/responses",
        "/openai/responses?api-version=2025-04-01-preview",
    ] {
        let (status, _, body) = post_json(&s, path, &[KEY], responses.clone()).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert_eq!(body["object"], "response");
        assert_eq!(body["model"], "my-deployment");
        assert_eq!(body["status"], "completed");
    }
}

/// An injected error is OpenAI's (the model named is the deployment), with Azure's
/// retry headers.
#[tokio::test]
async fn injected_errors_answer_in_openais_shape_with_azures_retry_headers() {
    let s = state();
    let (status, headers, body) = post_json(
        &s,
        DEPLOYMENT_CHAT,
        &[
            KEY,
            ("x-mock-error-status", "429"),
            ("x-mock-retry-after", "7"),
        ],
        chat_without_model(),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Rate limit reached for gpt-4o-prod"));
    assert_eq!(headers["retry-after"], "7");
    assert_eq!(headers["retry-after-ms"], "7000");
    assert_eq!(headers["x-ratelimit-remaining-requests"], "0");
    // Auth still comes first.
    let (status, _, _) = post_json(
        &s,
        DEPLOYMENT_CHAT,
        &[("x-mock-error-status", "500")],
        chat_without_model(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// The connection probe's model list: OpenAI's list shape behind Azure's auth, the classic
/// path wanting `api-version`.
#[tokio::test]
async fn the_model_list_answers_behind_azures_auth() {
    let s = state();
    for path in ["/openai/v1/models", "/openai/models?api-version=2024-10-21"] {
        let (status, _, bytes) = call(&s, "GET", path, &[KEY], "").await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let list: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(list["object"], "list");
        assert!(list["data"].as_array().is_some_and(|d| !d.is_empty()));
        let (status, _, _) = call(&s, "GET", path, &[], "").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let (status, _, _) = call(&s, "GET", "/openai/models", &[KEY], "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

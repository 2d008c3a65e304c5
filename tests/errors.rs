//! Every bad input gets a clear error in the client's own dialect, with the right status.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::Value;

/// Asserts an OpenAI-shaped error and returns its message.
fn openai_error(body: &Value) -> String {
    let e = &body["error"];
    assert!(
        e["message"].is_string() && e["type"].is_string(),
        "not an OpenAI error: {body}"
    );
    assert!(
        e.get("param").is_some() && e.get("code").is_some(),
        "not an OpenAI error: {body}"
    );
    e["message"].as_str().unwrap().to_owned()
}

/// Asserts an Anthropic-shaped error and returns (type, message).
fn anthropic_error(body: &Value) -> (String, String) {
    assert_eq!(body["type"], "error", "not an Anthropic error: {body}");
    (
        body["error"]["type"].as_str().unwrap().to_owned(),
        body["error"]["message"].as_str().unwrap().to_owned(),
    )
}

async fn post(
    url: &str,
    path: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, Value) {
    let res = client()
        .post(format!("{url}{path}"))
        .header("content-type", content_type)
        .header("anthropic-version", "2023-06-01")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let ct = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        ct.starts_with("application/json"),
        "error body must be JSON, got {ct}"
    );
    (status, res.json().await.unwrap())
}

#[tokio::test]
async fn malformed_json_is_a_400_in_each_dialect() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "application/json",
        "{\"model\":",
    )
    .await;
    assert_eq!(s, 400);
    assert!(openai_error(&b).contains("not valid JSON"));
    let (s, b) = post(&gw.url, "/v1/responses", "application/json", "[]").await;
    assert_eq!(s, 400);
    openai_error(&b);
    let (s, b) = post(&gw.url, "/v1/messages", "application/json", "{oops}").await;
    assert_eq!(s, 400);
    assert_eq!(anthropic_error(&b).0, "invalid_request_error");
    assert!(
        mock.state.requests().is_empty(),
        "nothing reaches the provider"
    );
}

#[tokio::test]
async fn missing_or_non_string_model_is_a_400() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "application/json",
        r#"{"messages":[]}"#,
    )
    .await;
    assert_eq!(s, 400);
    assert_eq!(b["error"]["param"], "model");
    let (s, b) = post(
        &gw.url,
        "/v1/messages",
        "application/json",
        r#"{"model":["claude"],"max_tokens":1}"#,
    )
    .await;
    assert_eq!(s, 400);
    assert!(anthropic_error(&b).1.contains("must be a string"));
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "application/json",
        r#"{"model":"gpt-5","stream":"yes"}"#,
    )
    .await;
    assert_eq!(s, 400);
    assert_eq!(b["error"]["param"], "stream");
}

#[tokio::test]
async fn wrong_content_type_is_a_415() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "text/plain",
        r#"{"model":"gpt-5"}"#,
    )
    .await;
    assert_eq!(s, 415);
    assert!(openai_error(&b).contains("application/json"));
    let (s, b) = post(
        &gw.url,
        "/v1/messages",
        "application/x-www-form-urlencoded",
        "model=x",
    )
    .await;
    assert_eq!(s, 415);
    anthropic_error(&b);
}

#[tokio::test]
async fn an_oversized_body_is_a_413() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "max_body_bytes = 1024", ""));
    let big = format!(
        r#"{{"model":"gpt-5","messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(4096)
    );
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "application/json",
        big.clone(),
    )
    .await;
    assert_eq!(s, 413);
    assert!(openai_error(&b).contains("1024"));
    let (s, b) = post(&gw.url, "/v1/messages", "application/json", big.clone()).await;
    assert_eq!(s, 413);
    assert_eq!(anthropic_error(&b).0, "request_too_large");
    // Chunked, with no content-length to check up front.
    let chunks: Vec<Result<String, std::io::Error>> =
        vec![Ok(big[..2000].to_owned()), Ok(big[2000..].to_owned())];
    let stream = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let (s, _) = post(&gw.url, "/v1/chat/completions", "application/json", stream).await;
    assert_eq!(s, 413);
}

#[tokio::test]
async fn an_unknown_model_is_a_404_listing_what_is_served() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "application/json",
        r#"{"model":"llama-9"}"#,
    )
    .await;
    assert_eq!(s, 404);
    assert_eq!(b["error"]["code"], "model_not_found");
    let message = openai_error(&b);
    assert!(
        message.contains("llama-9") && message.contains("gpt-5") && message.contains("claude-*"),
        "{message}"
    );
    let (s, b) = post(
        &gw.url,
        "/v1/messages",
        "application/json",
        r#"{"model":"llama-9","max_tokens":1}"#,
    )
    .await;
    assert_eq!(s, 404);
    assert_eq!(anthropic_error(&b).0, "not_found_error");
}

#[tokio::test]
async fn what_cannot_be_translated_yet_is_a_clear_400() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    // Server-side conversation state exists only at OpenAI.
    let (s, b) = post(
        &gw.url,
        "/v1/responses",
        "application/json",
        r#"{"model":"claude-sonnet-5-5","input":"x","previous_response_id":"resp_1"}"#,
    )
    .await;
    assert_eq!(s, 400);
    assert!(openai_error(&b).contains("previous_response_id"));
    // A Chat field Anthropic has no place for is named, not dropped.
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "application/json",
        r#"{"model":"claude-sonnet-5-5","messages":[{"role":"user","content":"x"}],"logit_bias":{"1":2}}"#,
    )
    .await;
    assert_eq!(s, 400);
    assert!(openai_error(&b).contains("logit_bias"));
    assert!(
        mock.state.requests().is_empty(),
        "nothing reached the provider"
    );
}

#[tokio::test]
async fn an_unreachable_provider_is_a_502() {
    // Bind then drop a listener: nothing answers on that port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gw = Gateway::spawn(&mock_config(&format!("http://127.0.0.1:{port}"), "", ""));
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "application/json",
        r#"{"model":"gpt-5","messages":[]}"#,
    )
    .await;
    assert_eq!(s, 502);
    assert!(openai_error(&b).contains("unreachable"));
    let (s, b) = post(
        &gw.url,
        "/v1/messages",
        "application/json",
        r#"{"model":"claude-x","max_tokens":1,"messages":[]}"#,
    )
    .await;
    assert_eq!(s, 502);
    assert_eq!(anthropic_error(&b).0, "api_error");
}

#[tokio::test]
async fn a_slow_provider_is_a_504() {
    let mock = start_mock(MockConfig::default()).await;
    let config = mock_config(&mock.url, "", "").replace(
        "models = [\"gpt-5\", \"gpt-5-mini\"]",
        "models = [\"gpt-5\"]\ntimeouts = { first_byte_secs = 0.3 }",
    );
    let gw = Gateway::spawn(&config);
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}"#,
        &[("x-mock-delay-ms", "3000")],
    )
    .await;
    assert_eq!(res.status(), 504);
    let b: Value = res.json().await.unwrap();
    assert!(openai_error(&b).contains("timed out"));
}

#[tokio::test]
async fn upstream_errors_are_relayed_with_their_status_body_and_retry_after() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let res = post_json(&format!("{}/v1/messages", gw.url), r#"{"model":"claude-sonnet-5-5","max_tokens":5,"messages":[{"role":"user","content":"x"}]}"#, &[("x-mock-error-status", "429")]).await;
    assert_eq!(res.status(), 429);
    assert!(res.headers().contains_key("retry-after"));
    let b: Value = res.json().await.unwrap();
    assert_eq!(anthropic_error(&b).0, "rate_limit_error");
}

#[tokio::test]
async fn a_missing_provider_key_is_a_401_that_names_where_it_should_be() {
    let mock = start_mock(MockConfig::default()).await;
    let config = mock_config(&mock.url, "", "").replace("TG_TEST_OPENAI_KEY", "TG_TEST_UNSET_KEY");
    let gw = Gateway::spawn(&config);
    let (s, b) = post(
        &gw.url,
        "/v1/chat/completions",
        "application/json",
        r#"{"model":"gpt-5","messages":[]}"#,
    )
    .await;
    assert_eq!(s, 401);
    assert!(openai_error(&b).contains("TG_TEST_UNSET_KEY"));
}

#[tokio::test]
async fn a_wrong_provider_key_is_relayed_without_leaking_it() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn_with_env(
        &mock_config(&mock.url, "", ""),
        &[("TG_TEST_OPENAI_KEY", "sk-wrong-secret-value-987")],
    );
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}"#,
        &[],
    )
    .await;
    assert_eq!(res.status(), 401);
    let text = res.text().await.unwrap();
    assert!(text.contains("invalid_api_key"));
    assert!(
        !gw.stderr().contains("sk-wrong-secret-value-987"),
        "key in logs"
    );
}

#[tokio::test]
async fn wrong_methods_and_paths_get_json_errors() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let res = client()
        .get(format!("{}/v1/chat/completions", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 405);
    openai_error(&res.json().await.unwrap());
    let res = client()
        .post(format!("{}/v1/nope", gw.url))
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    anthropic_error(&res.json().await.unwrap());
}

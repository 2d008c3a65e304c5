//! Gemini, the fourth dialect, end to end through the real binary: a Gemini client's
//! bytes passed to a Gemini provider as sent (its model and stream named by the path), the
//! same client translated to OpenAI and Anthropic providers, the other dialects' clients
//! translated to a Gemini provider, tool round trips, streams, token counting, the model
//! list, and errors in each client's own shape.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

/// The mock's three sides as providers, plus a Gemini one; `gemini-*` goes to Gemini
/// unless `extra` routes it elsewhere first.
fn config(mock_url: &str, extra: &str) -> String {
    format!(
        "{}\n[providers.mock-gemini]\nkind = \"gemini\"\nbase_url = \"{mock_url}/v1beta\"\napi_key = {{ env = \"TG_TEST_GEMINI_KEY\" }}\nmodels = [\"gemini-2.5-pro\"]\n",
        mock_config(mock_url, "", extra)
    )
}

/// `gem-chat-*`, `gem-claude-*` are Gemini clients' names for the mock's OpenAI and
/// Anthropic sides; `claude-*`/`gpt-*` clients reach Gemini through `to-gemini`.
const CROSSED: &str = r#"
[[routes]]
match = "gem-chat"
provider = "mock-openai"
model = "gpt-5"

[[routes]]
match = "gem-claude"
provider = "mock-anthropic"
model = "claude-sonnet-5-5"

[[routes]]
match = "to-gemini"
provider = "mock-gemini"
model = "gemini-2.5-pro"
"#;

fn gemini_url(gw: &str, model: &str, method: &str) -> String {
    format!("{gw}/v1beta/models/{model}:{method}")
}

async fn post_gemini(url: &str, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = client()
        .post(url)
        .header("content-type", "application/json")
        .header("x-goog-api-key", CLIENT_PLACEHOLDER);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(body.to_string()).send().await.unwrap()
}

fn tools() -> Value {
    json!([{"functionDeclarations": [{"name": "read_file", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]}])
}

fn text_of(response: &Value) -> String {
    response["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["thought"] != true)
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[tokio::test]
async fn a_gemini_client_reaches_a_gemini_provider_with_its_bytes_unchanged() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&config(&mock.url, ""));
    // Spacing and key order a re-encoding would lose.
    let body = "{\"contents\": [ {\"role\":\"user\",\"parts\":[{\"text\":\"hello there\"}]} ],\n \"generationConfig\":{\"temperature\":0.5}}";
    let url = format!(
        "{}?key={CLIENT_PLACEHOLDER}",
        gemini_url(&gw.url, "gemini-2.5-pro", "generateContent")
    );
    let res = client()
        .post(&url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    assert_eq!(res.headers()["x-trimgate-provider"], "mock-gemini");
    let answer: Value = res.json().await.unwrap();
    assert!(!text_of(&answer).is_empty(), "{answer}");
    assert!(
        answer["usageMetadata"]["promptTokenCount"]
            .as_u64()
            .unwrap()
            > 0
    );

    let seen = &mock.state.requests()[0];
    assert_eq!(seen.body, body.as_bytes(), "the provider got other bytes");
    // The client's key left the query and never reached the provider; the provider's did.
    assert_eq!(
        seen.path_and_query,
        "/v1beta/models/gemini-2.5-pro:generateContent"
    );
    assert_eq!(seen.headers["x-goog-api-key"], GEMINI_KEY);
}

#[tokio::test]
async fn a_gemini_stream_passes_through_and_is_recorded() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&config(&mock.url, ""));
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "stream please"}]}]});
    let res = post_gemini(
        &format!(
            "{}?alt=sse",
            gemini_url(&gw.url, "gemini-2.5-pro", "streamGenerateContent")
        ),
        &body,
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let text = res.text().await.unwrap();
    let frames: Vec<Value> = sse_data(&text)
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(frames.len() > 1, "{text}");
    assert!(frames.last().unwrap()["candidates"][0]["finishReason"].is_string());
    assert_eq!(
        mock.state.requests()[0].path_and_query,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
}

#[tokio::test]
async fn a_gemini_client_is_translated_to_chat_and_messages_with_a_tool_round_trip() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&config(&mock.url, CROSSED));
    for (model, path) in [
        ("gem-chat", "/v1/chat/completions"),
        ("gem-claude", "/v1/messages"),
    ] {
        let first = json!({
            "systemInstruction": {"parts": [{"text": "You are terse."}]},
            "contents": [{"role": "user", "parts": [{"text": "open main.rs"}]}],
            "tools": tools(),
        });
        let res = post_gemini(&gemini_url(&gw.url, model, "generateContent"), &first, &[]).await;
        assert_eq!(res.status(), 200, "{model}: {}", gw.stderr());
        let answer: Value = res.json().await.unwrap();
        let call = answer["candidates"][0]["content"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p.get("functionCall").is_some())
            .unwrap_or_else(|| panic!("{model}: no call in {answer}"))
            .clone();
        assert_eq!(call["functionCall"]["name"], "read_file");
        assert_eq!(answer["candidates"][0]["content"]["role"], "model");
        let last = mock.state.requests().last().unwrap().clone();
        assert_eq!(last.path_and_query, path, "{model}");

        let second = json!({
            "contents": [
                {"role": "user", "parts": [{"text": "open main.rs"}]},
                {"role": "model", "parts": [call]},
                {"role": "user", "parts": [{"functionResponse": {"name": "read_file",
                    "id": call["functionCall"]["id"], "response": {"output": "fn main() {}"}}}]},
            ],
            "tools": tools(),
        });
        let res = post_gemini(&gemini_url(&gw.url, model, "generateContent"), &second, &[]).await;
        assert_eq!(res.status(), 200, "{model}: {}", gw.stderr());
        let answer: Value = res.json().await.unwrap();
        assert_eq!(answer["candidates"][0]["finishReason"], "STOP");
        let sent = String::from_utf8(mock.state.requests().last().unwrap().body.to_vec()).unwrap();
        assert!(sent.contains("fn main() {}"), "{model}: {sent}");
    }
}

#[tokio::test]
async fn a_gemini_client_streams_from_an_anthropic_provider() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&config(&mock.url, CROSSED));
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "say something"}]}]});
    let res = post_gemini(
        &format!(
            "{}?alt=sse",
            gemini_url(&gw.url, "gem-claude", "streamGenerateContent")
        ),
        &body,
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let text = res.text().await.unwrap();
    let frames: Vec<Value> = sse_data(&text)
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let joined: String = frames.iter().map(text_of_frame).collect();
    assert!(!joined.is_empty(), "{text}");
    assert!(frames
        .iter()
        .any(|f| f["candidates"][0]["finishReason"] == "STOP"));
    assert!(frames
        .iter()
        .any(|f| f["usageMetadata"]["promptTokenCount"].as_u64() > Some(0)));
    assert_eq!(mock.state.requests()[0].path_and_query, "/v1/messages");
}

fn text_of_frame(frame: &Value) -> String {
    frame["candidates"][0]["content"]["parts"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn other_clients_reach_a_gemini_provider() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&config(&mock.url, CROSSED));
    // Anthropic Messages, whole, with a tool.
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        json!({"model": "to-gemini", "max_tokens": 100,
            "messages": [{"role": "user", "content": "read it"}],
            "tools": [{"name": "read_file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]})
        .to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let msg: Value = res.json().await.unwrap();
    assert_eq!(msg["stop_reason"], "tool_use", "{msg}");
    let seen = mock.state.requests().last().unwrap().clone();
    assert_eq!(
        seen.path_and_query,
        "/v1beta/models/gemini-2.5-pro:generateContent"
    );
    assert_eq!(seen.headers["x-goog-api-key"], GEMINI_KEY);
    let sent: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(sent["contents"][0]["parts"][0]["text"], "read it");
    assert_eq!(
        sent["tools"][0]["functionDeclarations"][0]["name"],
        "read_file"
    );

    // OpenAI Chat, streamed.
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        json!({"model": "to-gemini", "stream": true,
            "messages": [{"role": "user", "content": "hi"}]})
        .to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let text = res.text().await.unwrap();
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    assert!(text.contains("\"content\""), "{text}");
    assert_eq!(
        mock.state.requests().last().unwrap().path_and_query,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );

    // OpenAI Responses, whole.
    let res = post_json(
        &format!("{}/v1/responses", gw.url),
        json!({"model": "to-gemini", "input": "hi"}).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let out: Value = res.json().await.unwrap();
    assert_eq!(out["status"], "completed", "{out}");
}

#[tokio::test]
async fn errors_come_back_in_each_clients_shape() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&config(&mock.url, CROSSED));
    // Bad JSON from a Gemini client: Google's shape, nothing sent upstream.
    let res = client()
        .post(gemini_url(&gw.url, "gemini-2.5-pro", "generateContent"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let e: Value = res.json().await.unwrap();
    assert_eq!(e["error"]["code"], 400);
    assert_eq!(e["error"]["status"], "INVALID_ARGUMENT");
    assert!(mock.state.requests().is_empty());

    // A model nothing serves.
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "x"}]}]});
    let res = post_gemini(
        &gemini_url(&gw.url, "nothing-serves-me", "generateContent"),
        &body,
        &[],
    )
    .await;
    assert_eq!(res.status(), 404);
    let e: Value = res.json().await.unwrap();
    assert_eq!(e["error"]["status"], "NOT_FOUND", "{e}");

    // An unknown method on a model.
    let res = post_gemini(
        &gemini_url(&gw.url, "gemini-2.5-pro", "embedEverything"),
        &body,
        &[],
    )
    .await;
    assert_eq!(res.status(), 404);

    // A Gemini provider's 429, to an Anthropic client: Anthropic's shape, same status.
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        json!({"model": "to-gemini", "max_tokens": 10,
            "messages": [{"role": "user", "content": "x"}]})
        .to_string(),
        &[("x-mock-error-status", "429"), ("x-trimgate-retry", "off")],
    )
    .await;
    assert_eq!(res.status(), 429);
    let e: Value = res.json().await.unwrap();
    assert_eq!(e["type"], "error");
    assert_eq!(e["error"]["type"], "rate_limit_error", "{e}");

    // An OpenAI provider's 429, to a Gemini client: Google's shape, same status.
    let res = post_gemini(
        &gemini_url(&gw.url, "gem-chat", "generateContent"),
        &body,
        &[("x-mock-error-status", "429"), ("x-trimgate-retry", "off")],
    )
    .await;
    assert_eq!(res.status(), 429);
    let e: Value = res.json().await.unwrap();
    assert_eq!(e["error"]["status"], "RESOURCE_EXHAUSTED", "{e}");
    assert_eq!(e["error"]["code"], 429);
}

#[tokio::test]
async fn tokens_are_counted_upstream_or_here_and_models_listed() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&config(&mock.url, CROSSED));
    let body =
        json!({"contents": [{"role": "user", "parts": [{"text": "count these words please"}]}]});
    // A Gemini provider counts its own.
    let res = post_gemini(
        &gemini_url(&gw.url, "gemini-2.5-pro", "countTokens"),
        &body,
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let n: Value = res.json().await.unwrap();
    assert!(n["totalTokens"].as_u64().unwrap() > 0, "{n}");
    assert_eq!(
        mock.state.requests()[0].path_and_query,
        "/v1beta/models/gemini-2.5-pro:countTokens"
    );
    // A Chat provider has no count: the gateway counts.
    let res = post_gemini(&gemini_url(&gw.url, "gem-chat", "countTokens"), &body, &[]).await;
    assert_eq!(res.status(), 200);
    let n: Value = res.json().await.unwrap();
    assert!(n["totalTokens"].as_u64().unwrap() > 0, "{n}");
    assert_eq!(mock.state.requests().len(), 1, "counted here");

    let res = client()
        .get(format!("{}/v1beta/models", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let list: Value = res.json().await.unwrap();
    let names: Vec<&str> = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(names.contains(&"models/gem-chat"), "{list}");
    assert!(names.contains(&"models/gemini-2.5-pro"), "{list}");
    let res = client()
        .get(format!("{}/v1beta/models/gem-claude", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

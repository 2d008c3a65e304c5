//! Requests across dialects (whole, not streamed): an Anthropic client to an OpenAI Chat
//! provider and an OpenAI Chat client to an Anthropic provider, through the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

/// Routes `claude-*` to the mock's OpenAI side and `gpt-*` to its Anthropic side.
fn crossed(mock_url: &str) -> String {
    mock_config(
        mock_url,
        "",
        "[[routes]]\nmatch = \"claude-*\"\nprovider = \"mock-openai\"\n[[routes]]\nmatch = \"gpt-*\"\nprovider = \"mock-anthropic\"\n",
    )
}

#[tokio::test]
async fn an_anthropic_client_reaches_a_chat_provider_with_tools() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&crossed(&mock.url));
    let tools = json!([{"name": "read_file", "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]);
    let first = json!({
        "model": "claude-sonnet-5-5", "max_tokens": 200,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "open main.rs"}],
        "tools": tools,
    });
    let res = post_json(&format!("{}/v1/messages", gw.url), first.to_string(), &[]).await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let msg: Value = res.json().await.unwrap();
    assert_eq!(msg["type"], "message");
    assert_eq!(msg["stop_reason"], "tool_use");
    let use_block = msg["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap()
        .clone();
    assert_eq!(use_block["name"], "read_file");
    assert_eq!(use_block["input"], json!({"path": "mock"}));
    assert!(msg["usage"]["input_tokens"].as_u64().unwrap() > 0);

    // What the Chat provider got: the system prompt first, the tool as a function.
    let sent: Value = serde_json::from_slice(&mock.state.requests()[0].body).unwrap();
    assert_eq!(
        mock.state.requests()[0].path_and_query,
        "/v1/chat/completions"
    );
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(sent["tools"][0]["function"]["name"], "read_file");
    assert_eq!(sent["max_completion_tokens"], 200);

    let second = json!({
        "model": "claude-sonnet-5-5", "max_tokens": 200, "tools": tools,
        "messages": [
            {"role": "user", "content": "open main.rs"},
            {"role": "assistant", "content": [use_block]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_block["id"],
                "content": [{"type": "text", "text": "fn main() {}"}]}]},
        ],
    });
    let res = post_json(&format!("{}/v1/messages", gw.url), second.to_string(), &[]).await;
    assert_eq!(res.status(), 200);
    let msg: Value = res.json().await.unwrap();
    assert_eq!(msg["stop_reason"], "end_turn");
    assert!(msg["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("fn main() {}"));
    let sent: Value = serde_json::from_slice(&mock.state.requests()[1].body).unwrap();
    let tool_msg = &sent["messages"].as_array().unwrap()[2];
    assert_eq!(tool_msg["role"], "tool");
    assert_eq!(tool_msg["tool_call_id"], use_block["id"]);
}

#[tokio::test]
async fn a_chat_client_reaches_an_anthropic_provider_with_tools() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&crossed(&mock.url));
    let tools = json!([{"type": "function", "function": {"name": "grep", "parameters":
        {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}}}]);
    let first = json!({
        "model": "gpt-5",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "find TODOs"}],
        "tools": tools, "tool_choice": "required", "parallel_tool_calls": false,
    });
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        first.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    let call = body["choices"][0]["message"]["tool_calls"][0].clone();
    assert_eq!(call["function"]["name"], "grep");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"pattern": "mock"})
    );

    let sent: Value = serde_json::from_slice(&mock.state.requests()[0].body).unwrap();
    assert_eq!(mock.state.requests()[0].path_and_query, "/v1/messages");
    assert_eq!(sent["system"][0]["text"], "be brief");
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    assert!(
        sent["max_tokens"].as_u64().is_some(),
        "Anthropic requires max_tokens"
    );

    let second = json!({
        "model": "gpt-5", "tools": tools,
        "messages": [
            {"role": "user", "content": "find TODOs"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "src/lib.rs:3: TODO"},
        ],
    });
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        second.to_string(),
        &[],
    )
    .await;
    let body: Value = res.json().await.unwrap();
    assert!(body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .contains("src/lib.rs:3: TODO"));
    let sent: Value = serde_json::from_slice(&mock.state.requests()[1].body).unwrap();
    let result = &sent["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], call["id"]);
}

#[tokio::test]
async fn provider_errors_come_back_in_the_clients_shape() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&crossed(&mock.url));
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        r#"{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"x"}]}"#,
        &[("x-mock-error-status", "429")],
    )
    .await;
    assert_eq!(res.status(), 429);
    let b: Value = res.json().await.unwrap();
    assert_eq!(b["type"], "error");
    assert_eq!(b["error"]["type"], "rate_limit_error");
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}"#,
        &[("x-mock-error-status", "529")],
    )
    .await;
    assert_eq!(res.status(), 529);
    let b: Value = res.json().await.unwrap();
    assert!(
        b["error"]["message"].is_string() && b["error"]["type"].is_string(),
        "{b}"
    );
}

#[tokio::test]
async fn a_chat_stream_becomes_an_anthropic_event_stream() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&crossed(&mock.url)).await;
    let body = json!({"model": "claude-x", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "say something"}]});
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        body.to_string(),
        &[("x-mock-frame-interval-ms", "20")],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let events = sse_events(&res.text().await.unwrap());
    let names: Vec<&str> = events
        .iter()
        .map(|(e, _)| e.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(
        &names[names.len() - 2..],
        &["message_delta", "message_stop"]
    );
    assert!(names.contains(&"content_block_start") && names.contains(&"content_block_stop"));
    let text: String = events
        .iter()
        .filter(|(e, _)| e.as_deref() == Some("content_block_delta"))
        .map(|(_, d)| {
            serde_json::from_str::<Value>(d).unwrap()["delta"]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert!(text.contains("say something"), "{text}");
    let delta: Value = serde_json::from_str(&events[events.len() - 2].1).unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert!(delta["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert!(delta["usage"]["input_tokens"].as_u64().unwrap() > 0);
    // The Chat provider was asked to stream with usage.
    let sent: Value = serde_json::from_slice(&mock.state.requests()[0].body).unwrap();
    assert_eq!(sent["stream_options"]["include_usage"], true);
    let records = gw.records.clone();
    assert!(
        eventually(std::time::Duration::from_secs(5), || !records
            .records()
            .is_empty())
        .await
    );
    let usage = gw.records.records()[0].usage.expect("usage recorded");
    assert!(usage.input > 0 && usage.output > 0);
}

#[tokio::test]
async fn an_anthropic_stream_becomes_chat_chunks_with_tool_call_deltas() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&crossed(&mock.url)).await;
    let body = json!({"model": "gpt-5", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "find it"}],
        "tools": [{"type": "function", "function": {"name": "grep", "parameters":
            {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}}}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        body.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    let data = sse_data(&res.text().await.unwrap());
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    let mut args = String::new();
    let mut name = None;
    for c in &chunks {
        for tc in c["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            assert_eq!(tc["index"], 0);
            if let Some(n) = tc["function"]["name"].as_str() {
                name = Some(n.to_owned());
            }
            args.push_str(tc["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    assert_eq!(name.as_deref(), Some("grep"));
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"pattern": "mock"})
    );
    let finish = chunks
        .iter()
        .find_map(|c| c["choices"][0]["finish_reason"].as_str())
        .unwrap();
    assert_eq!(finish, "tool_calls");
    let usage = &chunks.last().unwrap()["usage"];
    assert!(chunks.last().unwrap()["choices"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn a_provider_error_mid_stream_crosses_as_the_clients_error_event() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&crossed(&mock.url)).await;
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"a b c d e f"}]}"#,
        &[("x-mock-stream-error-after", "3")],
    )
    .await;
    let data = sse_data(&res.text().await.unwrap());
    let last: Value = serde_json::from_str(data.last().unwrap()).unwrap();
    assert_eq!(last["error"]["type"], "overloaded_error", "{last}");
}

#[tokio::test]
async fn count_tokens_for_a_chat_provider_is_answered_locally() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&crossed(&mock.url));
    let short = post_json(
        &format!("{}/v1/messages/count_tokens", gw.url),
        r#"{"model":"claude-x","messages":[{"role":"user","content":"hello world"}]}"#,
        &[],
    )
    .await;
    assert_eq!(short.status(), 200);
    let short: Value = short.json().await.unwrap();
    let long = post_json(
        &format!("{}/v1/messages/count_tokens", gw.url),
        json!({"model": "claude-x", "messages": [{"role": "user", "content": "hello world ".repeat(100)}]}).to_string(),
        &[],
    )
    .await;
    let long: Value = long.json().await.unwrap();
    let (s, l) = (
        short["input_tokens"].as_u64().unwrap(),
        long["input_tokens"].as_u64().unwrap(),
    );
    assert!(s > 0 && l > s + 150, "{s} {l}");
    assert!(
        mock.state.requests().is_empty(),
        "nothing went to the provider"
    );
}

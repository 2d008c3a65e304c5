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

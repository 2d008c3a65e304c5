//! Prompt-cache breakpoints through the real binary: an Anthropic request without
//! `cache_control` (an SDK script) reaches the provider with its tools, system prompt and
//! turn ends marked and every other byte as sent; an OpenAI Chat client routed to Anthropic
//! gets the same; a request with its own marks, a short one, one that says
//! `x-trimgate-optimize: off`, and a gateway with `cache_breakpoints = false` pass as sent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

fn long(n: usize) -> String {
    "Follow the repository's conventions; keep answers short. ".repeat(n)
}

fn session() -> Value {
    json!({
        "model": "claude-sonnet-5-5",
        "max_tokens": 64,
        "tools": [{"name": "read_file", "description": long(80), "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "system": long(120),
        "messages": [
            {"role": "user", "content": "What does main.rs do?"},
            {"role": "assistant", "content": [{"type": "text", "text": "It starts the server."}]},
            {"role": "user", "content": "And lib.rs?"}
        ]
    })
}

/// `v` with every `cache_control` taken out and the one-block arrays that were strings in
/// `sent` made strings again: what the client sent, if only marks were added.
fn unmarked(mut v: Value, sent: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    let one_text = |v: &Value| match v.as_array().map(Vec::as_slice) {
        Some([block])
            if block.get("type") == Some(&json!("text"))
                && block.as_object().unwrap().len() == 2 =>
        {
            Some(block["text"].clone())
        }
        _ => None,
    };
    if sent["system"].is_string() {
        if let Some(text) = one_text(&v["system"]) {
            v["system"] = text;
        }
    }
    let was_string: Vec<bool> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].is_string())
        .collect();
    for (m, string) in v["messages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(was_string)
    {
        if string {
            if let Some(text) = one_text(&m["content"]) {
                m["content"] = text;
            }
        }
    }
    v
}

fn marks(v: &Value) -> usize {
    v.to_string().matches("\"cache_control\"").count()
}

async fn send(gw: &Gateway, path: &str, body: &str, extra: &[(&str, &str)]) -> reqwest::Response {
    let mut headers = vec![
        ("x-api-key", CLIENT_PLACEHOLDER),
        ("anthropic-version", "2023-06-01"),
    ];
    headers.extend_from_slice(extra);
    post_json(&format!("{}{path}", gw.url), body.to_owned(), &headers).await
}

#[tokio::test]
async fn an_unmarked_anthropic_request_gets_its_stable_prefix_marked() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let body = session().to_string();
    let res = send(&gw, "/v1/messages", &body, &[]).await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let sent: Value = serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap();
    let mark = json!({"type": "ephemeral"});
    assert_eq!(sent["tools"][0]["cache_control"], mark);
    assert_eq!(sent["system"][0]["cache_control"], mark);
    assert_eq!(
        sent["messages"][0]["content"][0]["cache_control"], mark,
        "the previous turn's end"
    );
    assert_eq!(
        sent["messages"][2]["content"][0]["cache_control"], mark,
        "this turn's end"
    );
    assert_eq!(marks(&sent), 4);
    assert!(
        unmarked(sent, &session()) == session(),
        "nothing but marks added"
    );

    // The same request again: the same bytes upstream, so the prefix written is the one read.
    let first = mock.state.requests().len();
    send(&gw, "/v1/messages", &body, &[]).await;
    let requests = mock.state.requests();
    assert_eq!(requests.len(), first + 1);
    assert_eq!(requests[first].body, requests[first - 1].body);

    // Its own marks, a short request, `x-trimgate-optimize: off`: as sent.
    let mut own = session();
    own["system"] =
        json!([{"type": "text", "text": long(120), "cache_control": {"type": "ephemeral"}}]);
    let short = json!({"model": "claude-sonnet-5-5", "max_tokens": 8, "system": "be brief", "messages": [{"role": "user", "content": "hi"}]});
    for (body, extra) in [
        (own.to_string(), vec![]),
        (short.to_string(), vec![]),
        (session().to_string(), vec![("x-trimgate-optimize", "off")]),
    ] {
        let res = send(&gw, "/v1/messages", &body, &extra).await;
        assert_eq!(res.status(), 200);
        let got = mock.state.requests().pop().unwrap();
        assert_eq!(got.body.as_ref(), body.as_bytes());
    }
}

#[tokio::test]
async fn a_chat_client_routed_to_anthropic_gets_marks_and_the_switch_turns_them_off() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let chat = json!({
        "model": "claude-sonnet-5-5",
        "messages": [
            {"role": "system", "content": long(120)},
            {"role": "user", "content": "What does main.rs do?"},
            {"role": "assistant", "content": "It starts the server."},
            {"role": "user", "content": "And lib.rs?"}
        ]
    })
    .to_string();
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat.clone(),
        &[("authorization", &format!("Bearer {CLIENT_PLACEHOLDER}"))],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let got = mock.state.requests().pop().unwrap();
    assert_eq!(got.path_and_query, "/v1/messages");
    let sent: Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(marks(&sent), 3, "{sent}");
    assert_eq!(sent["system"][0]["cache_control"]["type"], "ephemeral");

    let off = Gateway::spawn(&mock_config(
        &mock.url,
        "",
        "[optimize]\ncache_breakpoints = false\n",
    ));
    let body = session().to_string();
    assert_eq!(send(&off, "/v1/messages", &body, &[]).await.status(), 200);
    assert_eq!(
        mock.state.requests().pop().unwrap().body.as_ref(),
        body.as_bytes()
    );
}

#[tokio::test]
async fn the_next_turn_reads_what_the_marks_wrote() {
    // The mock plays Anthropic's prompt cache: what the marks wrote, the next turn reads.
    let mock = start_mock(MockConfig {
        prompt_cache: true,
        ..MockConfig::default()
    })
    .await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let first = session();
    let mut second = session();
    let history = second["messages"].as_array_mut().unwrap();
    history.push(json!({"role": "assistant", "content": [{"type": "text", "text": "It holds the library."}]}));
    history.push(json!({"role": "user", "content": "Thanks. And main.rs's tests?"}));
    let mut read = Vec::new();
    for body in [first, second] {
        let res = send(&gw, "/v1/messages", &body.to_string(), &[]).await;
        assert_eq!(res.status(), 200);
        let answer: Value = res.json().await.unwrap();
        read.push((
            answer["usage"]["cache_read_input_tokens"].as_u64().unwrap(),
            answer["usage"]["cache_creation_input_tokens"]
                .as_u64()
                .unwrap(),
        ));
    }
    assert_eq!(read[0].0, 0, "nothing to read on the first turn");
    assert!(
        read[0].1 > 1024,
        "the first turn writes its prefix: {read:?}"
    );
    assert!(read[1].0 >= read[0].1, "the second reads it: {read:?}");
}

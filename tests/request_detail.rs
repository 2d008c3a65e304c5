//! The window's request detail and Requests page through the real binary: a request whose
//! tool output the optimizer rewrote shows its attempts, passes, timing and the rewritten
//! block (replacement, and the original one call away); with bodies kept, what the client
//! sent and what the provider got, and nothing kept once turned off; the ledger's search
//! by model, provider, status and session; a request known to neither store is a 404.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

async fn admin(
    gw: &Gateway,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client()
        .request(method, format!("{}/admin/api{path}", gw.url))
        .bearer_auth(&gw.admin_token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn get(gw: &Gateway, path: &str) -> Value {
    let (status, body) = admin(gw, reqwest::Method::GET, path, None).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

#[tokio::test]
async fn a_rewritten_request_shows_its_blocks_bodies_and_timing() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(
        &mock.url,
        "",
        "[admin]\nkeep_request_bodies = true\n",
    ));
    assert_eq!(get(&gw, "/bodies").await["on"], true);
    let log = cargo_test_log();
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat_body(&log).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let id = res.headers()["x-request-id"].to_str().unwrap().to_owned();

    let detail = get(&gw, &format!("/requests/{id}")).await;
    assert_eq!(detail["source"], "memory");
    let attempt = &detail["attempts"][0];
    assert_eq!(attempt["provider"], "mock-openai");
    assert_eq!(attempt["status"], 200);
    let (first_byte, latency) = (
        attempt["first_byte_ms"].as_f64().unwrap(),
        attempt["latency_ms"].as_f64().unwrap(),
    );
    assert!(first_byte > 0.0 && first_byte <= latency, "{attempt}");
    assert!(attempt["overhead_ms"].as_f64().unwrap() <= latency);
    let pass = detail["passes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pass"] == "tool_output")
        .expect("the tool_output pass");
    assert!(
        pass["after"].as_u64().unwrap() < pass["before"].as_u64().unwrap(),
        "{pass}"
    );

    // The rewritten block: its replacement is what the provider got; its original, the log.
    let rewrite = &detail["rewrites"][0];
    assert_eq!(rewrite["held"], true);
    assert_eq!(rewrite["pass"], "tool_output");
    let replacement = rewrite["replacement"].as_str().unwrap();
    let sent: Value = serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap();
    assert_eq!(
        sent["messages"][2]["content"].as_str().unwrap(),
        replacement
    );
    assert_eq!(
        rewrite["original"].as_str().unwrap(),
        log,
        "bodies kept: the original in place"
    );
    let original = get(
        &gw,
        &format!("/originals/{}", rewrite["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(original["original"].as_str().unwrap(), log);

    // The bodies: the client's as sent, the provider's as it got it.
    let bodies = &detail["bodies"];
    assert_eq!(bodies["client"]["dialect"], "openai_chat");
    assert_eq!(
        bodies["client"]["text"].as_str().unwrap(),
        chat_body(&log).to_string()
    );
    let upstream: Value =
        serde_json::from_str(bodies["sent"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        upstream["messages"][2]["content"].as_str().unwrap(),
        replacement
    );
    assert_eq!(bodies["sent"][0]["provider"], "mock-openai");

    // Turned off: what was kept is forgotten, and nothing new is kept.
    let (status, usage) = admin(
        &gw,
        reqwest::Method::PUT,
        "/bodies",
        Some(json!({"keep": false})),
    )
    .await;
    assert_eq!(
        (status, usage["on"].clone(), usage["requests"].clone()),
        (200, json!(false), json!(0))
    );
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat_body(&log).to_string(),
        &[],
    )
    .await;
    let second = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    for id in [&id, &second] {
        let d = get(&gw, &format!("/requests/{id}")).await;
        assert!(d["bodies"].is_null(), "{d}");
    }
    let d = get(&gw, &format!("/requests/{second}")).await;
    assert!(
        d["rewrites"][0]["original"].is_null(),
        "not in place without bodies: {d}"
    );
    assert_eq!(d["rewrites"][0]["held"], true);
    let (status, bad) = admin(
        &gw,
        reqwest::Method::PUT,
        "/bodies",
        Some(json!({"keep": "yes"})),
    )
    .await;
    assert_eq!(status, 400, "{bad}");

    let (status, missing) =
        admin(&gw, reqwest::Method::GET, "/requests/no-such-request", None).await;
    assert_eq!(status, 404);
    assert!(missing["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no-such-request"));
    let (status, _) = admin(&gw, reqwest::Method::GET, "/originals/not-an-id", None).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn the_ledger_is_searched_by_model_provider_status_and_session() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let chat = |model: &str, session: &str| {
        (
            json!({"model": model, "messages": [{"role": "user", "content": format!("hello from {session}")}]}).to_string(),
            session.to_owned(),
        )
    };
    let mut ids = Vec::new();
    for (body, session) in [
        chat("gpt-5", "s-one"),
        chat("gpt-5-mini", "s-two"),
        chat("gpt-5", "s-two"),
    ] {
        let res = post_json(
            &format!("{}/v1/chat/completions", gw.url),
            body,
            &[("session-id", session.as_str())],
        )
        .await;
        assert_eq!(res.status(), 200, "{}", gw.stderr());
        ids.push(res.headers()["x-request-id"].to_str().unwrap().to_owned());
    }
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        json!({"model": "claude-sonnet-5-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}).to_string(),
        &[("anthropic-version", "2023-06-01"), ("x-mock-error-status", "400")],
    )
    .await;
    assert_eq!(res.status(), 400);
    // The ledger writes off the request path: wait for the four rows.
    let all = loop_until(&gw, "/requests/search?since=1h", 4).await;
    assert_eq!(all["ledger"], true);
    let ids_of = |v: &Value| -> Vec<String> {
        v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids_of(&get(&gw, "/requests/search?model=MINI").await),
        vec![ids[1].clone()]
    );
    let by_session = ids_of(&get(&gw, "/requests/search?session=s-two").await);
    assert_eq!(
        by_session,
        vec![ids[2].clone(), ids[1].clone()],
        "newest first"
    );
    let failed = get(&gw, "/requests/search?status=error").await;
    assert_eq!(failed["requests"].as_array().unwrap().len(), 1);
    assert_eq!(failed["requests"][0]["provider"], "mock-anthropic");
    assert_eq!(
        get(&gw, "/requests/search?status=400").await["requests"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        get(&gw, "/requests/search?provider=mock-openai&status=ok").await["requests"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert!(
        get(&gw, "/requests/search?model=gpt%5F").await["requests"]
            .as_array()
            .unwrap()
            .is_empty(),
        "an underscore matches itself"
    );
    let (status, bad) = admin(
        &gw,
        reqwest::Method::GET,
        "/requests/search?status=teapot",
        None,
    )
    .await;
    assert_eq!(status, 400);
    assert!(bad["error"]["message"].as_str().unwrap().contains("teapot"));
}

async fn loop_until(gw: &Gateway, path: &str, n: usize) -> Value {
    for _ in 0..100 {
        let v = get(gw, path).await;
        if v["requests"].as_array().is_some_and(|r| r.len() >= n) {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} never listed {n} requests: {}", get(gw, path).await);
}

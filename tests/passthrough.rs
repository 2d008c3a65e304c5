//! Passthrough fidelity: when the client's dialect is the provider's, the provider gets
//! the client's bytes and the client gets the provider's answer, through the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::Value;

/// Odd spacing, key order, unknown fields, `cache_control`, a system entry inside
/// `messages`, thinking with a signature: all must arrive exactly as sent.
const ANTHROPIC_BODY: &str = r#"{ "max_tokens":64,  "model" : "claude-sonnet-5-5",
 "messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi \u00e9","cache_control":{"type":"ephemeral"}}]},
 {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"EqQBCkYIARgCKkD/sig=="},{"type":"text","text":"ok"}]},
 {"role":"user","content":"go on"}],
 "zz_unknown_field":{"nested":[1,2.50,true,null]},"metadata":{"user_id":"u-1"}}"#;

const CHAT_BODY: &str = r#"{"z_first":1,"messages":[{"role":"developer","content":"x"},{"role":"user","content":"hello"}],"model":"gpt-5","temperature":0.0,"logit_bias":{"50256":-100},"unknown":{"a":[]}}"#;

#[tokio::test]
async fn anthropic_body_reaches_the_provider_byte_for_byte() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let res = post_json(
        &format!("{}/v1/messages?beta=true", gw.url),
        ANTHROPIC_BODY,
        &[
            ("x-api-key", CLIENT_PLACEHOLDER),
            ("anthropic-beta", "interleaved-thinking-2025-05-14"),
        ],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    assert!(
        res.headers().contains_key("request-id"),
        "provider request id relayed"
    );
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["type"], "message");

    let got = mock.state.requests().pop().unwrap();
    assert_eq!(got.body.as_ref(), ANTHROPIC_BODY.as_bytes());
    assert_eq!(got.path_and_query, "/v1/messages?beta=true");
    assert_eq!(got.headers["x-api-key"], ANTHROPIC_KEY);
    assert_eq!(
        got.headers["anthropic-beta"],
        "interleaved-thinking-2025-05-14"
    );
    assert!(!got.headers.contains_key("authorization"));
}

#[tokio::test]
async fn chat_body_and_auth_are_faithful_and_the_placeholder_key_stays_home() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        CHAT_BODY,
        &[
            ("authorization", &format!("Bearer {CLIENT_PLACEHOLDER}")),
            ("openai-organization", "org-test"),
        ],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert!(res.headers().contains_key("x-ratelimit-remaining-requests"));
    assert!(res.headers().contains_key("x-upstream-request-id"));
    assert!(res.headers().contains_key("x-trimgate-overhead-ms"));
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");

    let got = mock.state.requests().pop().unwrap();
    assert_eq!(got.body.as_ref(), CHAT_BODY.as_bytes());
    assert_eq!(got.headers["authorization"], format!("Bearer {OPENAI_KEY}"));
    // The organization billed is the provider's config's to pick, not the client's
    // (unless the provider says `client_org = true`; see tests/security_upstream.rs).
    assert!(!got.headers.contains_key("openai-organization"));
    let all: String = got
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {}\n", v.to_str().unwrap_or("")))
        .collect();
    assert!(
        !all.contains(CLIENT_PLACEHOLDER),
        "client key forwarded:\n{all}"
    );
}

#[tokio::test]
async fn responses_body_is_passed_through() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let body = r#"{"model":"gpt-5","input":[{"role":"user","content":[{"type":"input_text","text":"hey"}]}],"reasoning":{"effort":"low"},"store":false}"#;
    let res = client()
        .post(format!("{}/v1/responses", gw.url))
        .header("content-type", "application/json")
        .bearer_auth(CLIENT_PLACEHOLDER)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["object"], "response");
    assert_eq!(
        mock.state.requests().pop().unwrap().body.as_ref(),
        body.as_bytes()
    );
}

#[tokio::test]
async fn an_alias_changes_only_the_model_name() {
    let mock = start_mock(MockConfig::default()).await;
    let routes =
        "[[routes]]\nmatch = \"fast\"\nprovider = \"mock-openai\"\nmodel = \"gpt-5-mini\"\n";
    let gw = Gateway::spawn(&mock_config(&mock.url, "", routes));
    let sent = r#"{"messages":[{"role":"user","content":"hi"}],  "model":"fast","n":1}"#;
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), sent, &[]).await;
    assert_eq!(res.status(), 200);
    let got = mock.state.requests().pop().unwrap();
    assert_eq!(
        std::str::from_utf8(&got.body).unwrap(),
        sent.replace("\"fast\"", "\"gpt-5-mini\"")
    );
}

#[tokio::test]
async fn provider_prefix_routes_and_strips_the_prefix() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let res = client()
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("content-type", "application/json")
        .body(
            r#"{"model":"mock-openai/my-local-model","messages":[{"role":"user","content":"hi"}]}"#,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let got = mock.state.requests().pop().unwrap();
    let v: Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(v["model"], "my-local-model");
}

#[tokio::test]
async fn models_are_listed_in_the_callers_shape() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let openai: Value = client()
        .get(format!("{}/v1/models", gw.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(openai["object"], "list");
    let ids: Vec<&str> = openai["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"gpt-5") && ids.contains(&"claude-sonnet-5-5"),
        "{ids:?}"
    );
    assert_eq!(openai["data"][0]["object"], "model");

    let anthropic: Value = client()
        .get(format!("{}/v1/models", gw.url))
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(anthropic["has_more"], false);
    assert_eq!(anthropic["data"][0]["type"], "model");
}

#[tokio::test]
async fn health_and_readiness() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let h = client()
        .get(format!("{}/healthz", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(h.status(), 200);
    let r = client()
        .get(format!("{}/readyz", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["providers"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let body = r#"{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}"#;
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        body,
        &[("x-request-id", "trace-abc-1")],
    )
    .await;
    assert_eq!(res.headers()["x-request-id"], "trace-abc-1");
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), body, &[]).await;
    let id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "a uuid: {id}");
    let overhead: f64 = res.headers()["x-trimgate-overhead-ms"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(overhead >= 0.0);
}

#[tokio::test]
async fn no_config_file_still_starts_and_says_how_to_add_a_provider() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .arg("check")
        .env("XDG_CONFIG_HOME", dir.path())
        .env("HOME", dir.path())
        .env_remove("TRIMGATE_CONFIG")
        .env("ANTHROPIC_API_KEY", "sk-ant-env")
        .env_remove("OPENAI_API_KEY")
        .env_remove("DEEPSEEK_API_KEY")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("trimgate/config.toml"), "{err}");
    assert!(
        err.contains("providers from the environment: anthropic"),
        "{err}"
    );
    assert!(err.contains("[providers.openai]"), "{err}");
    assert!(!err.contains("sk-ant-env"), "a key was printed: {err}");
}

#[tokio::test]
async fn an_invalid_config_lists_every_problem_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "[providers.a]\nkind = \"nope\"\n[[routes]]\nmatch = \"x\"\nprovider = \"b\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("providers.a.kind") && err.contains("routes[0].provider"),
        "{err}"
    );
}

//! Staying up when providers don't: retries before the first byte, fallbacks across
//! providers and dialects, cooldowns, the retry budget, and what is never retried.
//!
//! The working provider is the project's mock; a failing one is a second, scripted server
//! here (it answers each request with the next failure it was given, as the providers
//! document them), or a port nothing listens on.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::response::IntoResponse;
use common::*;
use gateway_core::mock::MockConfig;
use gateway_core::record::Outcome;
use serde_json::Value;

/// A scripted answer: its status and extra headers.
type Scripted = (u16, Vec<(&'static str, String)>);

/// A provider that fails: each request gets the next scripted answer, the last one again
/// once the script runs out.
#[derive(Clone, Default)]
struct Flaky {
    script: Arc<Mutex<VecDeque<Scripted>>>,
    hits: Arc<Mutex<u32>>,
}

impl Flaky {
    fn hits(&self) -> u32 {
        *self.hits.lock().unwrap()
    }
}

/// Anthropic's documented body for each error status it sends.
fn anthropic_error_body(status: u16) -> String {
    let kind = match status {
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    format!(r#"{{"type":"error","error":{{"type":"{kind}","message":"scripted {status}"}}}}"#)
}

async fn start_flaky(script: Vec<Scripted>) -> (Flaky, String) {
    let flaky = Flaky {
        script: Arc::new(Mutex::new(script.into())),
        hits: Arc::default(),
    };
    let state = flaky.clone();
    let app = axum::Router::new().fallback(move || {
        let state = state.clone();
        async move {
            *state.hits.lock().unwrap() += 1;
            let mut script = state.script.lock().unwrap();
            let (status, headers) = if script.len() > 1 {
                script.pop_front().unwrap()
            } else {
                script.front().cloned().unwrap()
            };
            let mut response = (
                http::StatusCode::from_u16(status).unwrap(),
                [("content-type", "application/json")],
                anthropic_error_body(status),
            )
                .into_response();
            for (name, value) in headers {
                response
                    .headers_mut()
                    .insert(name, http::HeaderValue::from_str(&value).unwrap());
            }
            response
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (flaky, url)
}

/// A loopback port nothing listens on: connections are refused.
fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// The mock's two providers, a failing Anthropic one at `failing`, `[retry]` settings
/// (fast backoff unless they set theirs) and routes.
fn config(mock: &str, failing: &str, retry: &str, routes: &str) -> String {
    let backoff = if retry.contains("backoff") {
        ""
    } else {
        "backoff_initial_secs = 0.01\nbackoff_max_secs = 0.05"
    };
    mock_config(
        mock,
        "",
        &format!(
            r#"
[retry]
{backoff}
{retry}

[providers.zz-failing]
kind = "anthropic"
base_url = "{failing}/v1"
api_key = {{ env = "TG_TEST_ANTHROPIC_KEY" }}

{routes}
"#
        ),
    )
}

const MESSAGES: &str =
    r#"{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hello"}]}"#;
const CHAT: &str = r#"{"model":"gpt-x","messages":[{"role":"user","content":"hello"}]}"#;

fn header(res: &reqwest::Response, name: &str) -> String {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_refused_provider_falls_back_across_dialects_and_the_answer_says_who_answered() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&config(
        &mock.url,
        &refused_url(),
        "",
        r#"
[[routes]]
match = "claude-x"
provider = "zz-failing"
model = "claude-sonnet-5-5"
fallbacks = ["mock-openai/gpt-5"]
"#,
    ))
    .await;
    let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-provider"), "mock-openai");
    assert_eq!(header(&res, "x-trimgate-model"), "gpt-5");
    // Two tries of the first step (attempts_per_step), then the fallback.
    assert_eq!(header(&res, "x-trimgate-attempts"), "3");
    let id = header(&res, "x-request-id");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["type"], "message", "an Anthropic answer: {body}");
    assert_eq!(mock.state.requests().len(), 1);
    assert!(mock.state.requests()[0]
        .path_and_query
        .ends_with("/chat/completions"));

    let rows: Vec<_> = gw
        .records
        .records()
        .into_iter()
        .filter(|r| r.request_id == id)
        .collect();
    let seen: Vec<_> = rows
        .iter()
        .map(|r| (r.attempt, r.outcome, r.provider.clone().unwrap(), r.error))
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                1,
                Outcome::Retried,
                "zz-failing".into(),
                Some("upstream_unreachable")
            ),
            (
                2,
                Outcome::Retried,
                "zz-failing".into(),
                Some("upstream_unreachable")
            ),
            (3, Outcome::Completed, "mock-openai".into(), None),
        ],
        "one row per attempt, linked by the request id"
    );
    assert!(rows[2].usage.is_some());
}

#[tokio::test]
async fn overloaded_529s_are_retried_then_relayed_in_the_clients_dialect_when_nothing_is_left() {
    let mock = start_mock(MockConfig::default()).await;
    let (flaky, failing) = start_flaky(vec![(529, vec![])]).await;
    let gw = start_inprocess(&config(
        &mock.url,
        &failing,
        "max_attempts = 3\ncooldown_failures = 100",
        "[[routes]]\nmatch = \"claude-x\"\nprovider = \"zz-failing\"\n",
    ))
    .await;
    let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
    assert_eq!(res.status(), 529);
    assert_eq!(header(&res, "x-trimgate-attempts"), "3");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["type"], "overloaded_error");
    assert_eq!(flaky.hits(), 3, "the route's whole attempt limit, no more");

    // Asked from an OpenAI client, the same failure reads as an OpenAI error.
    let before = flaky.hits();
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}"#,
        &[("x-trimgate-retry", "off")],
    )
    .await;
    assert_eq!(res.status(), 529);
    assert_eq!(header(&res, "x-trimgate-attempts"), "1");
    let body: Value = res.json().await.unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
    assert_eq!(
        flaky.hits() - before,
        1,
        "x-trimgate-retry: off asks for one attempt"
    );
}

#[tokio::test]
async fn a_429_with_retry_after_moves_on_to_the_fallback_without_waiting_there() {
    let mock = start_mock(MockConfig::default()).await;
    let (flaky, failing) = start_flaky(vec![(429, vec![("retry-after", "600".to_owned())])]).await;
    let gw = start_inprocess(&config(
        &mock.url,
        &failing,
        "",
        r#"
[[routes]]
match = "claude-x"
provider = "zz-failing"
fallbacks = ["mock-anthropic/claude-sonnet-5-5"]
"#,
    ))
    .await;
    let started = std::time::Instant::now();
    let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
    assert_eq!(res.status(), 200);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(header(&res, "x-trimgate-provider"), "mock-anthropic");
    assert_eq!(header(&res, "x-trimgate-attempts"), "2");
    assert_eq!(
        flaky.hits(),
        1,
        "a wait longer than max_wait is not waited out"
    );

    // The 429's reset took the provider out of rotation: the next request goes straight
    // to the fallback.
    let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-attempts"), "1");
    assert_eq!(header(&res, "x-trimgate-provider"), "mock-anthropic");
    assert_eq!(flaky.hits(), 1);
}

/// A route without a fallback: a 429 asking for a short wait (within `max_wait`) is waited
/// out and tried again on the same provider, though its reset took the provider out of
/// rotation until then.
#[tokio::test]
async fn a_short_retry_after_is_waited_out_on_a_route_without_a_fallback() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&config(
        &mock.url,
        &refused_url(),
        "",
        "[[routes]]\nmatch = \"claude-x\"\nprovider = \"mock-anthropic\"\nmodel = \"claude-sonnet-5-5\"\n",
    ))
    .await;
    let started = std::time::Instant::now();
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        MESSAGES,
        &[
            ("x-mock-error-status", "429"),
            ("x-mock-retry-after", "1"),
            ("x-mock-fail-first", "1"),
            ("x-mock-fault-key", "short-429"),
        ],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-attempts"), "2");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "the provider's retry-after was waited out"
    );
    assert_eq!(mock.state.requests().len(), 2);
}

#[tokio::test]
async fn a_chain_all_cooling_down_answers_at_once_with_a_clear_503() {
    let mock = start_mock(MockConfig::default()).await;
    let (flaky, failing) = start_flaky(vec![(503, vec![])]).await;
    let gw = Gateway::spawn(&config(
        &mock.url,
        &failing,
        "cooldown_failures = 2\ncooldown_secs = 600\nmax_attempts = 2",
        "[[routes]]\nmatch = \"claude-x\"\nprovider = \"zz-failing\"\n",
    ));
    // Two requests fail in a row: the first retried once, the second not, since its
    // failure took the provider out of rotation and a retry goes only to one in it.
    for attempts in ["2", "1"] {
        let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
        assert_eq!(res.status(), 503);
        assert_eq!(header(&res, "x-trimgate-attempts"), attempts);
    }
    assert_eq!(flaky.hits(), 3);
    for path in ["/v1/messages", "/v1/chat/completions"] {
        let body = if path == "/v1/messages" {
            MESSAGES
        } else {
            r#"{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}"#
        };
        let res = post_json(&format!("{}{path}", gw.url), body, &[]).await;
        assert_eq!(res.status(), 503);
        let retry_after: u64 = header(&res, "retry-after").parse().unwrap();
        assert!(retry_after > 500 && retry_after <= 600, "{retry_after}");
        let body: Value = res.json().await.unwrap();
        let message = if path == "/v1/messages" {
            assert_eq!(body["type"], "error");
            assert_eq!(body["error"]["type"], "overloaded_error");
            body["error"]["message"].as_str().unwrap().to_owned()
        } else {
            assert_eq!(body["error"]["code"], "cooling_down");
            body["error"]["message"].as_str().unwrap().to_owned()
        };
        assert!(message.contains("cooling down"), "{message}");
    }
    assert_eq!(flaky.hits(), 3, "nothing more reached the cooling provider");
    let metrics = metrics_text(&gw.url).await;
    assert!(
        metrics.contains("trimgate_provider_cooldown{provider=\"zz-failing\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn errors_the_client_caused_and_failures_after_the_first_byte_are_never_retried() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&config(
        &mock.url,
        &refused_url(),
        "",
        r#"
[[routes]]
match = "gpt-x"
provider = "mock-openai"
model = "gpt-5"
fallbacks = ["mock-anthropic/claude-sonnet-5-5"]
"#,
    ))
    .await;
    let url = format!("{}/v1/chat/completions", gw.url);
    for status in ["400", "401", "404", "422"] {
        mock.state.clear();
        let res = post_json(&url, CHAT, &[("x-mock-error-status", status)]).await;
        assert_eq!(res.status().as_str(), status);
        assert_eq!(header(&res, "x-trimgate-attempts"), "1");
        assert_eq!(mock.state.requests().len(), 1, "a {status} is the client's");
    }
    // A stream that breaks after its first frames: the client gets the error event, and
    // the request is not sent again.
    mock.state.clear();
    let res = post_json(
        &url,
        r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hello there"}]}"#,
        &[("x-mock-stream-error-after", "2")],
    )
    .await;
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(text.contains("error"), "{text}");
    assert_eq!(mock.state.requests().len(), 1);
}

/// A whole answer is read before anything goes to the client: one whose body stalls after
/// the headers is asked for again, and the client gets the second, whole; a stream that
/// stalls after its headers is not (its first bytes are the client's already).
#[tokio::test]
async fn a_whole_answer_whose_body_stalls_is_asked_for_again() {
    let mock = start_mock(MockConfig::default()).await;
    let config = config(
        &mock.url,
        &refused_url(),
        "",
        "[[routes]]\nmatch = \"gpt-x\"\nprovider = \"mock-openai\"\nmodel = \"gpt-5\"\n",
    )
    .replace(
        "models = [\"gpt-5\", \"gpt-5-mini\"]",
        "models = [\"gpt-5\", \"gpt-5-mini\"]\ntimeouts = { idle_secs = 0.3 }",
    );
    assert!(config.contains("idle_secs = 0.3"), "{config}");
    let gw = start_inprocess(&config).await;
    let url = format!("{}/v1/chat/completions", gw.url);
    // The first request with this key drips 16 bytes every 2 s: past the idle timeout.
    let stall = [
        ("x-mock-drip-ms", "2000"),
        ("x-mock-fail-first", "1"),
        ("x-mock-fault-key", "whole"),
    ];
    let res = post_json(&url, CHAT, &stall).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-attempts"), "2");
    let body: Value = res.json().await.unwrap();
    assert!(
        body["choices"][0]["message"]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("Hello from the mock.")),
        "{body}"
    );
    assert_eq!(mock.state.requests().len(), 2);
    let records = gw.records.clone();
    assert!(
        eventually(std::time::Duration::from_secs(5), || records
            .records()
            .len()
            == 2)
        .await
    );
    let mut rows = gw.records.records();
    rows.sort_by_key(|r| r.attempt);
    assert_eq!(rows[0].outcome, Outcome::Retried);
    assert_eq!(rows[0].error, Some("upstream_body"));
    assert_eq!(rows[1].outcome, Outcome::Completed);

    // Streamed, the same stall reaches the client as its error event, once.
    mock.state.clear();
    let stall = [
        ("x-mock-stall-after", "2"),
        ("x-mock-fail-first", "1"),
        ("x-mock-fault-key", "streamed"),
    ];
    let res = post_json(
        &url,
        r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hello there"}]}"#,
        &stall,
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-attempts"), "1");
    let text = res.text().await.unwrap();
    assert!(text.contains("upstream_timeout"), "{text}");
    assert_eq!(mock.state.requests().len(), 1);
}

#[tokio::test]
async fn the_retry_budget_caps_retries_across_requests() {
    let mock = start_mock(MockConfig::default()).await;
    let (flaky, failing) = start_flaky(vec![(500, vec![])]).await;
    let gw = start_inprocess(&config(
        &mock.url,
        &failing,
        "budget_share = 0.0\nbudget_floor = 2\nmax_attempts = 3\ncooldown_failures = 100",
        "[[routes]]\nmatch = \"claude-x\"\nprovider = \"zz-failing\"\n",
    ))
    .await;
    for _ in 0..4 {
        let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
        assert_eq!(res.status(), 500);
    }
    // Four requests, two retries allowed in the window: six attempts, not twelve.
    assert_eq!(flaky.hits(), 6);
}

#[test]
fn bad_chains_are_refused_at_load_with_the_path_of_the_entry() {
    let text = config(
        "http://127.0.0.1:1",
        "http://127.0.0.1:2",
        "backoff_initial_secs = -1\nmax_attempts = 0",
        r#"
[[routes]]
match = "a"
provider = "mock-openai"
model = "gpt-5"
fallbacks = ["mock-anthropic/claude-sonnet-5-5", "nowhere/x", "mock-openai/gpt-5", "mock-anthropic/claude-sonnet-5-5"]

[[routes]]
match = "b"
provider = "mock-openai"
max_attempts = 0
fallbacks = ["mock-anthropic/"]
"#,
    );
    let err = gateway_core::config::Config::from_toml(&text, "t")
        .unwrap_err()
        .to_string();
    for expected in [
        "routes[0].fallbacks[1]: no provider named \"nowhere\"",
        "routes[0].fallbacks[2]: \"mock-openai/gpt-5\" is already a step of this chain: a cycle",
        "routes[0].fallbacks[3]: \"mock-anthropic/claude-sonnet-5-5\" is already a step",
        "routes[1].max_attempts: must be at least 1",
        "routes[1].fallbacks[0]: \"mock-anthropic/\" is not",
        "retry.backoff_initial_secs: must be a positive number of seconds, got -1",
        "retry.max_attempts: must be at least 1",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
}

#[tokio::test]
async fn the_admin_api_refuses_a_bad_chain_with_the_same_message() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let res = client()
        .put(format!("{}/admin/api/routes", gw.url))
        .bearer_auth(&gw.admin_token)
        .json(&serde_json::json!({"routes": [{
            "match": "x", "provider": "mock-openai", "fallbacks": ["nowhere/y"]
        }]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body = res.text().await.unwrap();
    assert!(
        body.contains("routes[0].fallbacks[0]")
            && body.contains("no provider named \\\"nowhere\\\""),
        "{body}"
    );
    // A good chain is written and read back.
    let res = client()
        .put(format!("{}/admin/api/routes", gw.url))
        .bearer_auth(&gw.admin_token)
        .json(&serde_json::json!({"routes": [{
            "match": "x", "provider": "mock-openai", "fallbacks": ["mock-anthropic/claude-sonnet-5-5"], "max_attempts": 4
        }]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    let routes = admin_get(&gw, "/routes").await;
    assert_eq!(
        routes["routes"][0]["fallbacks"][0],
        "mock-anthropic/claude-sonnet-5-5"
    );
    assert_eq!(routes["routes"][0]["max_attempts"], 4);
}

/// A pool of three keys at the mock's OpenAI side (which takes any key), `extra` added.
fn pool_config(mock: &str, extra: &str) -> String {
    format!(
        r#"
[retry]
backoff_initial_secs = 0.01
backoff_max_secs = 0.05
{extra}

[providers.pooled]
kind = "openai"
base_url = "{mock}/v1"
api_keys = [{{ env = "TG_POOL_A", name = "key-a" }}, {{ env = "TG_POOL_B", name = "key-b" }}, {{ env = "TG_POOL_C" }}]
models = ["gpt-5"]
"#
    )
}

const POOL_ENV: [(&str, &str); 3] = [
    ("TG_POOL_A", "sk-pool-a"),
    ("TG_POOL_B", "sk-pool-b"),
    ("TG_POOL_C", "sk-pool-c"),
];

/// The key the mock received on each request, in order.
fn keys_seen(mock: &Mock) -> Vec<String> {
    mock.state
        .requests()
        .iter()
        .map(|r| r.headers["authorization"].to_str().unwrap().to_owned())
        .collect()
}

fn chat_body(first: &str) -> String {
    serde_json::json!({"model": "gpt-5", "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": first}
    ]})
    .to_string()
}

#[tokio::test]
async fn a_session_sticks_to_one_key_of_a_pool_and_sessions_spread_over_it() {
    let mock = start_mock(MockConfig {
        openai_key: None,
        ..MockConfig::default()
    })
    .await;
    let gw = start_inprocess_env(&pool_config(&mock.url, ""), &POOL_ENV).await;
    let url = format!("{}/v1/chat/completions", gw.url);
    // Each way a session is named: Codex's header, Claude Code's header, Codex's
    // prompt_cache_key, Claude Code's metadata.user_id, and the first user message.
    let mut own = Vec::new();
    for i in 0..8 {
        mock.state.clear();
        for turn in 0..4 {
            let res = match i % 4 {
                0 => {
                    let id = format!("codex-{i}");
                    post_json(
                        &url,
                        chat_body(&format!("turn {turn}")),
                        &[("session-id", &id)],
                    )
                    .await
                }
                1 => {
                    let body = serde_json::json!({"model": "gpt-5", "prompt_cache_key": format!("cache-{i}"),
                        "messages": [{"role": "user", "content": format!("turn {turn}")}]});
                    post_json(&url, body.to_string(), &[]).await
                }
                2 => {
                    let body = serde_json::json!({"model": "gpt-5", "metadata": {"user_id": format!("user_x_account_y_session_{i}")},
                        "messages": [{"role": "user", "content": format!("turn {turn}")}]});
                    post_json(&url, body.to_string(), &[]).await
                }
                _ => {
                    // The same first user message, later turns appended.
                    let body = serde_json::json!({"model": "gpt-5", "messages": [
                        {"role": "system", "content": "You are terse."},
                        {"role": "user", "content": format!("first message of session {i}")},
                        {"role": "assistant", "content": "ok"},
                        {"role": "user", "content": format!("turn {turn}")}
                    ]});
                    post_json(&url, body.to_string(), &[]).await
                }
            };
            assert_eq!(res.status(), 200);
        }
        let seen = keys_seen(&mock);
        assert_eq!(seen.len(), 4);
        assert!(
            seen.iter().all(|k| *k == seen[0]),
            "session {i} moved: {seen:?}"
        );
        own.push(seen[0].clone());
    }
    own.sort();
    own.dedup();
    assert!(own.len() >= 2, "eight sessions all on one key: {own:?}");
    // The ledger's record names the key, never holds it.
    let records = gw.records.records();
    let names: Vec<_> = records.iter().filter_map(|r| r.api_key.clone()).collect();
    assert_eq!(names.len(), 32);
    assert!(
        names
            .iter()
            .all(|n| ["key-a", "key-b", "TG_POOL_C"].contains(&n.as_str())),
        "{names:?}"
    );
}

#[tokio::test]
async fn a_rate_limited_key_cools_down_and_its_session_moves_to_the_next_key_only_meanwhile() {
    let mock = start_mock(MockConfig {
        openai_key: None,
        ..MockConfig::default()
    })
    .await;
    let gw = start_inprocess_env(
        &pool_config(&mock.url, "cooldown_secs = 1\nmax_wait_secs = 0.5"),
        &POOL_ENV,
    )
    .await;
    let url = format!("{}/v1/chat/completions", gw.url);
    let session = [("session-id", "agent-session-1")];
    let res = post_json(&url, chat_body("hello"), &session).await;
    assert_eq!(res.status(), 200);
    let own = keys_seen(&mock)[0].clone();

    // The session's key answers 429 with a reset two seconds out: the same request is
    // sent at once with the next key, and the session stays there while the key cools.
    mock.state.clear();
    let limited = [
        ("session-id", "agent-session-1"),
        ("x-mock-error-status", "429"),
        ("x-mock-retry-after", "2"),
        ("x-mock-fail-first", "1"),
        ("x-mock-fault-key", "pool-429"),
    ];
    let res = post_json(&url, chat_body("hello"), &limited).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-attempts"), "2");
    let seen = keys_seen(&mock);
    assert_eq!(seen[0], own);
    let next = seen[1].clone();
    assert_ne!(next, own);
    for _ in 0..3 {
        let res = post_json(&url, chat_body("again"), &session).await;
        assert_eq!(res.status(), 200);
    }
    assert!(keys_seen(&mock)[2..].iter().all(|k| *k == next));
    // After the reset, back on its own key.
    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    mock.state.clear();
    for _ in 0..2 {
        let res = post_json(&url, chat_body("later"), &session).await;
        assert_eq!(res.status(), 200);
    }
    assert_eq!(keys_seen(&mock), [own.clone(), own]);
}

#[test]
fn a_pool_and_a_single_key_together_or_a_key_twice_are_refused() {
    let text = r#"
[providers.p]
kind = "openai"
api_key = { env = "A" }
api_keys = [{ env = "A" }, { env = "B", name = "b" }, { env = "C", name = "b" }, { file = "/x", env = "D" }]
"#;
    let err = gateway_core::config::Config::from_toml(text, "t")
        .unwrap_err()
        .to_string();
    for expected in [
        "providers.p.api_keys: give api_key or api_keys, not both",
        "providers.p.api_keys[2]: \"b\" is already in this pool",
        "providers.p.api_keys[3]: give exactly one of",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
}
/// A provider driven into cooldown is shown so in the admin API, with the seconds until it
/// is probed; the others, which never failed, are `up`; the log says it once.
#[tokio::test]
async fn the_admin_api_shows_a_cooling_provider_and_the_others_up() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&config(
        &mock.url,
        &refused_url(),
        "cooldown_failures = 1\ncooldown_secs = 600",
        "[[routes]]\nmatch = \"claude-x\"\nprovider = \"zz-failing\"\n",
    ));
    let health = || admin_get(&gw, "/health");
    let state_of = |body: &Value, name: &str| {
        body["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["provider"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing from {body}"))
    };

    // Before any failure every configured provider is listed, in rotation.
    let before = health().await;
    assert_eq!(before["providers"].as_array().unwrap().len(), 3, "{before}");
    for name in ["zz-failing", "mock-openai", "mock-anthropic"] {
        let p = state_of(&before, name);
        assert_eq!(p["state"], "up", "{p}");
        assert_eq!(p["retry_in_secs"], Value::Null, "{p}");
    }

    // One request fails at the refused port: out of rotation at once.
    let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
    assert!(res.status().is_server_error(), "{}", res.status());
    let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
    assert_eq!(res.status(), 503, "the second finds it cooling down");

    let after = health().await;
    let failing = state_of(&after, "zz-failing");
    assert_eq!(failing["state"], "cooling_down", "{after}");
    let retry_in = failing["retry_in_secs"].as_f64().unwrap();
    assert!(retry_in > 500.0 && retry_in <= 600.0, "{retry_in}");
    for name in ["mock-openai", "mock-anthropic"] {
        assert_eq!(state_of(&after, name)["state"], "up", "{after}");
    }

    // `trimgate status` shows the same, from the gateway's `/status`.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["status", "--gateway", &gw.url, "--config"])
        .arg(gw.dir.path().join("config.toml"))
        .env_remove("TRIMGATE_KEY")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |name: &str| {
        printed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name} in\n{printed}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(row("zz-failing")[1], "cooling_down", "{printed}");
    assert_eq!(row("zz-failing")[4], "s", "a wait in seconds: {printed}");
    assert_eq!(row("mock-openai")[1], "up", "{printed}");
    assert_eq!(row("mock-anthropic")[1], "up", "{printed}");

    // With no gateway there, it says so and fails.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["status", "--gateway", &refused_url(), "--config"])
        .arg(gw.dir.path().join("config.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no gateway answers at"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The health of providers is the token holder's to see, like the rest of the API.
    let res = client()
        .get(format!("{}/admin/api/health", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);

    assert!(
        eventually(std::time::Duration::from_secs(5), || gw
            .stderr()
            .contains("provider out of rotation: cooling down"))
        .await,
        "{}",
        gw.stderr()
    );
    assert_eq!(
        gw.stderr()
            .matches("provider out of rotation: cooling down")
            .count(),
        1,
        "one line per change of state"
    );
}

#[tokio::test]
async fn a_chain_out_of_rotation_for_less_than_max_wait_is_waited_out_not_refused() {
    let mock = start_mock(MockConfig::default()).await;
    // The first request's 429 says its limit resets in a second: the provider cools for
    // that long, and the next request, arriving meanwhile, waits for it.
    let gw = start_inprocess(&config(
        &mock.url,
        &refused_url(),
        "max_attempts = 1",
        "[[routes]]\nmatch = \"gpt-x\"\nprovider = \"mock-openai\"\nmodel = \"gpt-5\"\n",
    ))
    .await;
    let url = format!("{}/v1/chat/completions", gw.url);
    let res = post_json(
        &url,
        CHAT,
        &[("x-mock-error-status", "429"), ("x-mock-retry-after", "1")],
    )
    .await;
    assert_eq!(res.status(), 429);
    let started = std::time::Instant::now();
    let res = post_json(&url, CHAT, &[]).await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    assert!(started.elapsed() >= std::time::Duration::from_millis(500));
}

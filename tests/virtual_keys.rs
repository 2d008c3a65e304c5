//! Virtual keys, end to end on one gateway process: made with `trimgate keys create` into
//! the ledger's database, presented by clients, held to their models, providers, requests
//! and tokens per minute, daily budget and expiry (each refusal in the client's own shape, a
//! 429 with `retry-after` naming the limit), their optimizer overrides applied, revoked
//! while the gateway runs, and never stored or shown after they are made.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::Value;

struct Setup {
    gw: Gateway,
    config: std::path::PathBuf,
    ledger: std::path::PathBuf,
}

fn trimgate(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .arg("keys")
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

/// `trimgate keys create` with `args`: the key printed.
fn create(config: &std::path::Path, args: &[&str]) -> String {
    let key = keys_create(config, args);
    assert!(key.starts_with("tg-vk-") && key.len() > 60, "{key}");
    key
}

/// A config with its own SQLite ledger, written to a fresh folder: (folder, config file,
/// ledger file, config text).
fn prepare(
    mock: &Mock,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
) {
    prepare_with(mock, "")
}

/// [`prepare`], with `extra` (routes, say) in the config.
fn prepare_with(
    mock: &Mock,
    extra: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite");
    let text = mock_config(
        &mock.url,
        "",
        &format!("[ledger]\nurl = \"sqlite://{}\"\n{extra}", ledger.display()),
    );
    let config = dir.path().join("config.toml");
    std::fs::write(&config, &text).unwrap();
    (dir, config, ledger, text)
}

fn start(mock: &Mock) -> Setup {
    start_with(mock, "")
}

fn start_with(mock: &Mock, extra: &str) -> Setup {
    let (dir, config, ledger, text) = prepare_with(mock, extra);
    let gw = Gateway::spawn_wrapped(&text, &[], &[], "127.0.0.1:0", dir);
    Setup { config, ledger, gw }
}

const CHAT: &str = r#"{"model":"gpt-5","messages":[{"role":"user","content":"hello keys"}]}"#;
const MESSAGES: &str = r#"{"model":"claude-sonnet-5-5","max_tokens":32,"messages":[{"role":"user","content":"hello keys"}]}"#;

fn header(res: &reqwest::Response, name: &str) -> String {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no {name} header"))
}

async fn chat(s: &Setup, key: &str) -> reqwest::Response {
    post_json(
        &format!("{}/v1/chat/completions", s.gw.url),
        CHAT,
        &[("authorization", &format!("Bearer {key}"))],
    )
    .await
}

#[tokio::test]
async fn a_key_is_held_to_its_models_and_requests_per_minute() {
    let mock = start_mock(MockConfig::default()).await;
    let s = start(&mock);
    // Before any key exists, the loopback gateway is open as always.
    assert_eq!(
        post_json(&format!("{}/v1/chat/completions", s.gw.url), CHAT, &[])
            .await
            .status(),
        200
    );
    let key = create(
        &s.config,
        &["--name", "ci", "--models", "gpt-*", "--rpm", "3"],
    );

    // With a key in force every client needs one (within the book's two seconds).
    let no_key = || async {
        post_json(&format!("{}/v1/chat/completions", s.gw.url), CHAT, &[])
            .await
            .status()
    };
    let mut refused = false;
    for _ in 0..40 {
        if no_key().await == 401 {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        refused,
        "a client without a key is refused once a key exists"
    );
    let made_up = chat(&s, "tg-vk-00000000000000000000000000000000").await;
    assert_eq!(made_up.status(), 401);

    let res = chat(&s, &key).await;
    assert_eq!(res.status(), 200);
    // Its models: a Claude model is refused in Anthropic's shape.
    let res = post_json(
        &format!("{}/v1/messages", s.gw.url),
        MESSAGES,
        &[
            ("x-api-key", key.as_str()),
            ("anthropic-version", "2023-06-01"),
        ],
    )
    .await;
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["type"], "permission_error", "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("claude-sonnet-5-5"));

    // 3 per minute: the refused Claude request counted none; one more passes, then 429.
    assert_eq!(chat(&s, &key).await.status(), 200);
    assert_eq!(chat(&s, &key).await.status(), 200);
    let res = chat(&s, &key).await;
    assert_eq!(res.status(), 429);
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=61).contains(&retry), "{retry}");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requests per minute"),
        "{body}"
    );

    // The ledger names the key on its rows; the key itself is nowhere in the database.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let raw = std::fs::read(&s.ledger).unwrap();
    let wal = std::fs::read(s.ledger.with_extension("sqlite-wal")).unwrap_or_default();
    for bytes in [&raw, &wal] {
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "the key is stored"
        );
    }
    let listed = trimgate(&s.config, &["list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains("ci") && text.contains("active") && text.contains("3 rpm"),
        "{text}"
    );
    assert!(!text.contains(&key), "{text}");
    assert!(!s.gw.stderr().contains(&key), "the key is never logged");

    // Totals per key, from the ledger.
    let out = Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["stats", "--by", "key", "--json", "--config"])
        .arg(&s.config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let totals: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = totals
        .as_array()
        .or(totals["groups"].as_array())
        .cloned()
        .unwrap_or_default();
    let ci = rows
        .iter()
        .find(|r| r["key"] == "ci")
        .unwrap_or_else(|| panic!("no row for ci in {totals}"));
    // Three served, one refused for its model, one for the rate.
    assert_eq!(ci["requests"], 5, "{totals}");
}

#[tokio::test]
async fn tokens_budget_expiry_and_revocation_each_stop_a_key() {
    let mock = start_mock(MockConfig::default()).await;
    let s = start(&mock);
    let tokens = create(&s.config, &["--name", "tokens", "--tpm", "20"]);
    let budget = create(
        &s.config,
        &["--name", "budget", "--budget-usd-day", "0.0000001"],
    );
    let brief = create(&s.config, &["--name", "brief", "--expires", "2s"]);
    let revoked = create(&s.config, &["--name", "gone"]);

    // Each is served once; what it used then stops the next.
    for (key, limit) in [(&tokens, "tokens per minute"), (&budget, "daily budget")] {
        let first = chat(&s, key).await;
        assert_eq!(first.status(), 200, "{limit}");
        first.bytes().await.unwrap();
        let second = chat(&s, key).await;
        assert_eq!(second.status(), 429, "{limit}");
        assert!(second.headers().contains_key("retry-after"));
        let body: Value = second.json().await.unwrap();
        assert!(
            body["error"]["message"].as_str().unwrap().contains(limit),
            "{limit}: {body}"
        );
    }

    assert_eq!(chat(&s, &revoked).await.status(), 200);
    let out = trimgate(&s.config, &["revoke", "gone"]);
    assert!(out.status.success());
    let mut gone = false;
    for _ in 0..40 {
        let res = chat(&s, &revoked).await;
        if res.status() == 401 {
            let body: Value = res.json().await.unwrap();
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("revoked"),
                "{body}"
            );
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        gone,
        "a revoked key is refused within the book's two seconds"
    );

    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let res = chat(&s, &brief).await;
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{body}"
    );

    // Bad input to `keys create`: a clear error, nothing made.
    let out = trimgate(&s.config, &["create", "--name", "tokens"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists already"));
    let out = trimgate(&s.config, &["create", "--name", "x", "--rpm", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 1"));
    let out = trimgate(&s.config, &["create", "--name", "x", "--models", "[bad"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("model pattern"));
}

/// Beyond loopback, a virtual key in the ledger counts as a gateway key: the server starts,
/// and wants it.
#[tokio::test]
async fn a_virtual_key_lets_a_server_start_beyond_loopback() {
    let mock = start_mock(MockConfig::default()).await;
    let (dir, config, _, text) = prepare(&mock);
    let key = create(&config, &["--name", "team"]);
    let gw = Gateway::spawn_wrapped(&text, &[], &[], "0.0.0.0:0", dir);
    let port = gw.url.rsplit(':').next().unwrap().to_owned();
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    assert_eq!(post_json(&url, CHAT, &[]).await.status(), 401);
    let bearer = format!("Bearer {key}");
    assert_eq!(
        post_json(&url, CHAT, &[("authorization", bearer.as_str())])
            .await
            .status(),
        200
    );
    // `/v1/models` takes the virtual key too.
    let models = client()
        .get(format!("http://127.0.0.1:{port}/v1/models"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
}

/// An address that keeps presenting unknown keys is refused without a look, for the rest
/// of the minute, after `FAILURES_PER_MINUTE` tries.
#[tokio::test]
async fn unknown_keys_from_one_address_are_cut_off_after_a_minutes_allowance() {
    let mock = start_mock(MockConfig::default()).await;
    let s = start(&mock);
    create(&s.config, &["--name", "real"]);
    let mut first_429 = None;
    // A minute may turn in the middle, which starts the count again: at most twice over.
    for attempt in 1..=61 {
        let res = chat(&s, &format!("tg-vk-made-up-{attempt:04}")).await;
        match res.status().as_u16() {
            401 => {}
            429 => {
                assert!(res.headers().contains_key("retry-after"));
                let body: Value = res.json().await.unwrap();
                assert!(
                    body["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains("too many attempts"),
                    "{body}"
                );
                first_429 = Some(attempt);
                break;
            }
            other => panic!("attempt {attempt}: {other}"),
        }
    }
    let first = first_429.expect("the address is cut off");
    assert!(
        first > 30,
        "30 failed attempts are allowed a minute, cut off at {first}"
    );
    // None of it reached the provider.
    assert!(mock.state.requests().is_empty());
}

/// The admin API makes, lists and revokes keys: the key is in the answer that makes it and
/// nowhere after; the list shows what each spent; a revocation here is refused at once.
#[tokio::test]
async fn the_admin_api_makes_lists_and_revokes_keys() {
    let mock = start_mock(MockConfig::default()).await;
    let s = start(&mock);
    let admin = |path: &str| format!("{}/admin/api{path}", s.gw.url);
    let made = client()
        .post(admin("/keys"))
        .bearer_auth(&s.gw.admin_token)
        .json(&serde_json::json!({"name": "window", "models": ["gpt-*"], "rpm": 100, "budget_day_usd": 5.0}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let made: Value = made.json().await.unwrap();
    let key = made["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("tg-vk-"));
    assert_eq!(made["stored"]["rpm"], 100);

    // Keys are needed at once after one is made here.
    assert_eq!(
        post_json(&format!("{}/v1/chat/completions", s.gw.url), CHAT, &[])
            .await
            .status(),
        401
    );
    let res = chat(&s, &key).await;
    assert_eq!(res.status(), 200);
    res.bytes().await.unwrap();

    let list = |()| async {
        let res = client()
            .get(admin("/keys"))
            .bearer_auth(&s.gw.admin_token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.json::<Value>().await.unwrap()
    };
    let mut spent = 0.0;
    for _ in 0..40 {
        let listed = list(()).await;
        let window = &listed["keys"][0];
        assert_eq!(window["name"], "window");
        assert!(
            !listed.to_string().contains(&key),
            "the key is never listed"
        );
        spent = window["spent_day_usd"].as_f64().unwrap();
        if spent > 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(spent > 0.0, "the request's cost is counted against the key");

    // Bad input: a clear 400, nothing made.
    let dup = client()
        .post(admin("/keys"))
        .bearer_auth(&s.gw.admin_token)
        .json(&serde_json::json!({"name": "window"}))
        .send()
        .await
        .unwrap();
    assert_eq!(dup.status(), 400);
    let unknown_field = client()
        .post(admin("/keys"))
        .bearer_auth(&s.gw.admin_token)
        .json(&serde_json::json!({"name": "x", "rpn": 5}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown_field.status(), 400);
    // Without the admin token: 401, nothing of the keys in the answer.
    let res = client().get(admin("/keys")).send().await.unwrap();
    assert_eq!(res.status(), 401);
    let text = res.text().await.unwrap();
    assert!(
        !text.contains("spent_day_usd") && !text.contains("tg-vk-"),
        "{text}"
    );

    let revoked = client()
        .delete(admin("/keys/window"))
        .bearer_auth(&s.gw.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    // Refused at once: no two-second wait for a revocation made here.
    assert_eq!(chat(&s, &key).await.status(), 401);
    assert!(list(()).await["keys"][0]["revoked_ms"].is_i64());
    let missing = client()
        .delete(admin("/keys/nobody"))
        .bearer_auth(&s.gw.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

/// Routes whose first step and fallback are on different providers, both ways.
const CROSS_ROUTES: &str = r#"
[[routes]]
match = "claude-x"
provider = "mock-anthropic"
model = "claude-sonnet-5-5"
fallbacks = ["mock-openai/gpt-5"]

[[routes]]
match = "gpt-x"
provider = "mock-openai"
model = "gpt-5"
fallbacks = ["mock-anthropic/claude-sonnet-5-5"]
"#;

/// A key kept to one provider is served by it, refused (403, in the client's own shape,
/// nothing sent upstream) a model routed elsewhere, and has the steps of a route on other
/// providers skipped: a first step elsewhere is passed over for the fallback, a fallback
/// elsewhere is never tried.
#[tokio::test]
async fn a_key_is_held_to_its_providers_and_skips_steps_on_others() {
    let mock = start_mock(MockConfig::default()).await;
    let s = start_with(&mock, CROSS_ROUTES);
    let key = create(
        &s.config,
        &["--name", "openai-only", "--providers", "mock-openai"],
    );
    let any = create(&s.config, &["--name", "anywhere"]);

    let res = chat(&s, &key).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-provider"), "mock-openai");
    res.bytes().await.unwrap();

    // A model on the other provider, asked in OpenAI's shape and in Anthropic's.
    mock.state.clear();
    let res = post_json(
        &format!("{}/v1/chat/completions", s.gw.url),
        r#"{"model":"claude-sonnet-5-5","messages":[{"role":"user","content":"hello keys"}]}"#,
        &[("authorization", &format!("Bearer {key}"))],
    )
    .await;
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(body["error"]["code"], "provider_not_allowed", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("openai-only") && message.contains("mock-anthropic"),
        "{body}"
    );
    let res = post_json(
        &format!("{}/v1/messages", s.gw.url),
        MESSAGES,
        &[("x-api-key", key.as_str())],
    )
    .await;
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], "permission_error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mock-anthropic"),
        "{body}"
    );
    assert!(
        mock.state.requests().is_empty(),
        "refused before the provider"
    );

    // A route that starts on the other provider: its fallback serves, at the first attempt.
    let claude_x = r#"{"model":"claude-x","max_tokens":32,"messages":[{"role":"user","content":"hello keys"}]}"#;
    let res = post_json(
        &format!("{}/v1/messages", s.gw.url),
        claude_x,
        &[("x-api-key", key.as_str())],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-provider"), "mock-openai");
    assert_eq!(header(&res, "x-trimgate-attempts"), "1");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["type"], "message", "an Anthropic answer: {body}");
    // With `x-trimgate-retry: off` the one attempt is on a provider the key may use.
    let res = post_json(
        &format!("{}/v1/messages", s.gw.url),
        claude_x,
        &[("x-api-key", key.as_str()), ("x-trimgate-retry", "off")],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-provider"), "mock-openai");
    assert!(mock
        .state
        .requests()
        .iter()
        .all(|r| r.path_and_query.ends_with("/chat/completions")));

    // A route whose fallback is on the other provider: a failing first step is the
    // answer, where a key without the limit is served by the fallback.
    let gpt_x = r#"{"model":"gpt-x","messages":[{"role":"user","content":"hello keys"}]}"#;
    let url = format!("{}/v1/chat/completions", s.gw.url);
    let failing = |key: &str, fault_key: &'static str, fail_first: &'static str| {
        let (url, bearer) = (url.clone(), format!("Bearer {key}"));
        async move {
            post_json(
                &url,
                gpt_x,
                &[
                    ("authorization", bearer.as_str()),
                    ("x-mock-error-status", "500"),
                    ("x-mock-fail-first", fail_first),
                    ("x-mock-fault-key", fault_key),
                ],
            )
            .await
        }
    };
    mock.state.clear();
    // The key's chain is the first step alone, which has the route's three attempts.
    let res = failing(&key, "kept", "3").await;
    assert_eq!(res.status(), 500);
    assert_eq!(header(&res, "x-trimgate-attempts"), "3");
    let requests = mock.state.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|r| r.path_and_query.ends_with("/chat/completions")),
        "the fallback on mock-anthropic is not tried"
    );
    // Two tries of the first step, then the fallback.
    let res = failing(&any, "free", "2").await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-provider"), "mock-anthropic");

    let listed = trimgate(&s.config, &["list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("providers mock-openai"), "{text}");
}

/// A cargo test run: hundreds of passing tests and one failure, which the optimizer
/// compacts by default.
fn cargo_test_log() -> String {
    let mut log = String::from("   Compiling demo v0.1.0 (/tmp/demo)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.31s\n     Running unittests src/lib.rs (target/debug/deps/demo-1a2b3c)\n\nrunning 401 tests\n");
    for i in 0..400 {
        log.push_str(&format!("test parser::tests::case_{i:03} ... ok\n"));
    }
    log.push_str("test parser::tests::rejects_trailing_comma ... FAILED\n\nfailures:\n\n---- parser::tests::rejects_trailing_comma stdout ----\n\nthread 'parser::tests::rejects_trailing_comma' panicked at src/parser.rs:212:9:\nassertion `left == right` failed\n  left: Ok(3)\n right: Err(TrailingComma)\n\nfailures:\n    parser::tests::rejects_trailing_comma\n\ntest result: FAILED. 400 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.05s\n");
    log
}

/// A chat turn that ends in a long tool result.
fn tool_chat() -> String {
    serde_json::json!({
        "model": "gpt-5",
        "messages": [
            {"role": "user", "content": "Run the tests and fix what fails."},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"cargo test\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": cargo_test_log()},
        ],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}],
    })
    .to_string()
}

/// A key's optimizer overrides apply to its requests as a config gateway key's do: one
/// turns compaction off (the provider gets the body as sent), one turns it up, a key
/// without overrides gets the config's modes; a bad override is refused when the key is
/// made, with the modes allowed.
#[tokio::test]
async fn a_keys_optimizer_overrides_apply_to_its_requests() {
    let mock = start_mock(MockConfig::default()).await;
    let s = start(&mock);
    let raw = create(
        &s.config,
        &["--name", "raw", "--optimize", "tool_output=off"],
    );
    let hard = create(
        &s.config,
        &[
            "--name",
            "hard",
            "--optimize",
            "tool_output=aggressive,terse=off",
            "--optimize",
            "squeeze=off",
        ],
    );
    let plain = create(&s.config, &["--name", "plain"]);
    let url = format!("{}/v1/chat/completions", s.gw.url);
    let body = tool_chat();
    let send = |key: String| {
        let (url, body) = (url.clone(), body.clone());
        async move { post_json(&url, body, &[("authorization", &format!("Bearer {key}"))]).await }
    };

    let res = send(plain).await;
    assert_eq!(res.status(), 200, "{}", s.gw.stderr());
    assert_eq!(header(&res, "x-trimgate-applied"), "tool_output=auto");

    let res = send(raw).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-applied"), "");
    assert_eq!(header(&res, "x-trimgate-saved-bytes"), "0");
    assert_eq!(
        mock.state.requests().pop().unwrap().body,
        body.as_bytes(),
        "sent as it came"
    );

    let res = send(hard).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-applied"), "tool_output=aggressive");
    let saved: i64 = header(&res, "x-trimgate-saved-bytes").parse().unwrap();
    assert!(saved > 0, "{saved}");

    let listed = trimgate(&s.config, &["list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("optimize tool_output=off"), "{text}");
    assert!(
        text.contains("optimize tool_output=aggressive,terse=off,squeeze=off"),
        "{text}"
    );
    let listed = trimgate(&s.config, &["list", "--json"]);
    let keys: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let hard = keys
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "hard")
        .unwrap();
    assert_eq!(
        hard["optimize"],
        serde_json::json!({"tool_output": "aggressive", "terse": "off", "squeeze": false})
    );

    // Bad overrides: a clear error naming the pass, nothing made.
    for (arg, says) in [
        ("tool_output=turbo", "not one of off, light"),
        ("squeeze=maybe", "squeeze"),
        ("speed=fast", "unknown pass"),
        ("tool_output", "pass=mode"),
    ] {
        let out = trimgate(&s.config, &["create", "--name", "bad", "--optimize", arg]);
        assert!(!out.status.success(), "{arg}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--optimize") && err.contains(says),
            "{arg}: {err}"
        );
    }
    // By name, not by text: a key's random id may hold the letters "bad".
    let out = trimgate(&s.config, &["list", "--json"]);
    let keys: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = keys
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(!names.contains(&"bad"), "{names:?}");
}

/// The admin API takes a key's providers and optimizer overrides, shows them in the list,
/// and refuses a bad one with a 400 that names the field.
#[tokio::test]
async fn the_admin_api_takes_a_keys_providers_and_overrides() {
    let mock = start_mock(MockConfig::default()).await;
    let s = start(&mock);
    let admin = format!("{}/admin/api/keys", s.gw.url);
    let post = |body: Value| {
        let admin = admin.clone();
        let token = s.gw.admin_token.clone();
        async move {
            client()
                .post(admin)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    let made = post(serde_json::json!({
        "name": "window",
        "providers": ["mock-openai"],
        "optimize": {"tool_output": "off", "squeeze": false},
    }))
    .await;
    assert_eq!(made.status(), 201);
    let made: Value = made.json().await.unwrap();
    assert_eq!(
        made["stored"]["providers"],
        serde_json::json!(["mock-openai"])
    );
    assert_eq!(
        made["stored"]["optimize"],
        serde_json::json!({"tool_output": "off", "squeeze": false})
    );
    let key = made["key"].as_str().unwrap().to_owned();

    // In force at once: its overrides and its provider.
    let res = post_json(
        &format!("{}/v1/chat/completions", s.gw.url),
        tool_chat(),
        &[("authorization", &format!("Bearer {key}"))],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-applied"), "");
    let res = post_json(
        &format!("{}/v1/messages", s.gw.url),
        MESSAGES,
        &[("x-api-key", key.as_str())],
    )
    .await;
    assert_eq!(res.status(), 403);

    let listed: Value = client()
        .get(&admin)
        .bearer_auth(&s.gw.admin_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let window = &listed["keys"][0];
    assert_eq!(window["providers"], serde_json::json!(["mock-openai"]));
    assert_eq!(window["optimize"]["tool_output"], "off");

    // A key without them lists any provider and no overrides.
    let made = post(serde_json::json!({"name": "plain"})).await;
    assert_eq!(made.status(), 201);
    let made: Value = made.json().await.unwrap();
    assert_eq!(made["stored"]["providers"], serde_json::json!([]));
    assert_eq!(made["stored"]["optimize"], serde_json::json!({}));

    for (body, field) in [
        (
            serde_json::json!({"name": "x", "optimize": {"tool_output": "turbo"}}),
            "optimize.tool_output",
        ),
        (
            serde_json::json!({"name": "x", "optimize": {"squeeze": "yes"}}),
            "optimize",
        ),
        (
            serde_json::json!({"name": "x", "optimize": {"speed": "fast"}}),
            "speed",
        ),
        (
            serde_json::json!({"name": "x", "providers": [""]}),
            "providers",
        ),
        (
            serde_json::json!({"name": "x", "providers": "mock-openai"}),
            "sequence",
        ),
    ] {
        let res = post(body.clone()).await;
        assert_eq!(res.status(), 400, "{body}");
        let text = res.text().await.unwrap();
        assert!(text.contains(field), "{body}: {text}");
    }
    let listed: Value = client()
        .get(&admin)
        .bearer_auth(&s.gw.admin_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["keys"].as_array().unwrap().len(), 2, "nothing made");
}

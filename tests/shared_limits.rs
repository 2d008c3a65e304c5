//! Virtual keys' limits shared through Redis (`[limits] redis`), end to end: two gateway
//! processes on one ledger hold one key to one rpm between them; with Redis killed they
//! keep serving on their local share of the limit and say so in `/metrics` and the log,
//! and count in Redis again once it is back; with `on_redis_down = "refuse"` a request with
//! a virtual key gets a 503 in its client's own shape. Needs `redis-server` (the test
//! script installs it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::Value;

const CHAT: &str = r#"{"model":"gpt-5","messages":[{"role":"user","content":"hello limits"}]}"#;
const MESSAGES: &str = r#"{"model":"claude-sonnet-5-5","max_tokens":32,"messages":[{"role":"user","content":"hello limits"}]}"#;

/// A `redis-server` on a free loopback port, without persistence; killed when dropped.
struct Redis {
    port: u16,
    child: Child,
}

impl Redis {
    fn start(port: u16) -> Redis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt install redis-server)");
        let redis = Redis { port, child };
        for _ in 0..100 {
            if redis.cli(&["PING"]).trim() == "PONG" {
                return redis;
            }
            // A test's own thread waiting for a child process; no runtime runs on it.
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not answer on port {port}");
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn send(gw: &Gateway, key: &str) -> reqwest::Response {
    post_json(
        &format!("{}/v1/chat/completions", gw.url),
        CHAT,
        &[("authorization", &format!("Bearer {key}"))],
    )
    .await
}

async fn metric(gw: &Gateway, key: &str, name: &str) -> Option<f64> {
    let text = client()
        .get(format!("{}/metrics", gw.url))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Whether `/metrics` shows `name` at `value` within 10 s (gauges are set each second).
async fn metric_becomes(gw: &Gateway, key: &str, name: &str, value: f64) -> bool {
    for _ in 0..40 {
        if metric(gw, key, name).await == Some(value) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    false
}

/// Two gateways on one SQLite ledger, their limits in the Redis on `redis_port`.
fn two_gateways(
    mock: &Mock,
    redis_port: u16,
    limits: &str,
) -> (Gateway, Gateway, std::path::PathBuf) {
    let shared = tempfile::tempdir().unwrap().keep();
    let ledger = shared.join("ledger.sqlite");
    let text = mock_config(
        &mock.url,
        "",
        &format!(
            "[ledger]\nurl = \"sqlite://{}\"\n\n[limits]\nredis = \"redis://127.0.0.1:{redis_port}\"\n{limits}\n",
            ledger.display()
        ),
    );
    let config = shared.join("config.toml");
    std::fs::write(&config, &text).unwrap();
    let a = Gateway::spawn_wrapped(&text, &[], &[], "127.0.0.1:0", tempfile::tempdir().unwrap());
    let b = Gateway::spawn_wrapped(&text, &[], &[], "127.0.0.1:0", tempfile::tempdir().unwrap());
    (a, b, config)
}

#[tokio::test]
async fn two_gateways_share_a_keys_rpm_and_keep_serving_without_redis() {
    let mock = start_mock(MockConfig::default()).await;
    let mut redis = Redis::start(free_port());
    let (a, b, config) = two_gateways(&mock, redis.port, "local_share = 0.5");
    let key = keys_create(&config, &["--name", "team", "--rpm", "6"]);
    let roomy = keys_create(&config, &["--name", "roomy", "--rpm", "1000"]);
    // Each gateway's connection to Redis opened first (another key's request), and both
    // counting in Redis: on a loaded machine a first connection can miss the timeout, and
    // that request would be counted on the replica's local share instead.
    for gw in [&a, &b] {
        assert_eq!(send(gw, &roomy).await.status(), 200);
        assert!(
            metric_becomes(gw, &roomy, "trimgate_limits_shared", 1.0).await,
            "{}",
            gw.stderr()
        );
    }

    // Twelve requests, alternating between the two: the key's 6 a minute hold in all,
    // each refusal a 429 naming the limit.
    let mut admitted = 0;
    for i in 0..12 {
        let gw = if i % 2 == 0 { &a } else { &b };
        let r = send(gw, &key).await;
        match r.status().as_u16() {
            200 => admitted += 1,
            429 => {
                assert!(r.headers().contains_key("retry-after"));
                let body: Value = r.json().await.unwrap();
                let message = body["error"]["message"].as_str().unwrap();
                assert!(message.contains("requests per minute"), "{message}");
            }
            other => panic!("status {other}: {}", r.text().await.unwrap()),
        }
    }
    assert_eq!(admitted, 6, "one rpm between two gateways");
    let counted = redis.cli(&["--scan", "--pattern", "trimgate:{team}:r:*"]);
    assert!(
        !counted.trim().is_empty(),
        "the key's minute is counted in Redis"
    );
    assert!(metric_becomes(&a, &roomy, "trimgate_limits_shared", 1.0).await);

    // Redis gone: both keep serving, each on its own share, and say so.
    redis.kill();
    for gw in [&a, &b] {
        for _ in 0..3 {
            assert_eq!(send(gw, &roomy).await.status(), 200);
        }
        assert!(metric_becomes(gw, &roomy, "trimgate_limits_shared", 0.0).await);
        assert!(
            metric(gw, &roomy, "trimgate_limits_local_total")
                .await
                .unwrap_or(0.0)
                >= 2.0,
            "decisions taken locally are counted"
        );
        assert!(
            gw.stderr().contains("limits' Redis cannot be reached"),
            "{}",
            gw.stderr()
        );
    }
    // The key over its shared rpm stays refused on each replica's share (3 of 6 each,
    // and each replica counted its 3 while Redis was up).
    assert_eq!(send(&a, &key).await.status(), 429);

    // Redis back on the same port: within the probe's second, limits are shared again.
    let redis = Redis::start(redis.port);
    assert!(
        metric_becomes(&a, &roomy, "trimgate_limits_shared", 1.0).await,
        "the replica goes back to Redis once it answers"
    );
    assert_eq!(send(&a, &roomy).await.status(), 200);
    let counted = redis.cli(&["--scan", "--pattern", "trimgate:{roomy}:r:*"]);
    assert!(
        !counted.trim().is_empty(),
        "counted in Redis again: {counted:?}"
    );
    assert!(a.stderr().contains("limits' Redis answers again"));
}

#[tokio::test]
async fn refuse_mode_answers_503_in_the_clients_shape_while_redis_is_out() {
    let mock = start_mock(MockConfig::default()).await;
    // Nothing listens on this port.
    let (a, _b, config) = two_gateways(&mock, free_port(), "on_redis_down = \"refuse\"");
    let key = keys_create(&config, &["--name", "strict", "--rpm", "100"]);
    let r = post_json(
        &format!("{}/v1/messages", a.url),
        MESSAGES,
        &[
            ("x-api-key", key.as_str()),
            ("anthropic-version", "2023-06-01"),
        ],
    )
    .await;
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rate limits"),
        "{body}"
    );
    assert_eq!(send(&a, &key).await.status(), 503);
    assert!(
        a.stderr().contains("refused until it answers"),
        "{}",
        a.stderr()
    );
}

/// A client that hangs up, after its answer's last event or midway, is charged for what it
/// used through Redis: the other replica then refuses the key for its tokens per minute.
#[tokio::test]
async fn a_hang_up_on_one_replica_counts_against_the_key_on_the_other() {
    let mock = start_mock(MockConfig::default()).await;
    let redis = Redis::start(free_port());
    let (a, b, config) = two_gateways(&mock, redis.port, "");
    let roomy = keys_create(&config, &["--name", "roomy", "--rpm", "1000"]);
    for gw in [&a, &b] {
        assert_eq!(send(gw, &roomy).await.status(), 200);
        assert!(metric_becomes(gw, &roomy, "trimgate_limits_shared", 1.0).await);
    }
    let ledger = config.with_file_name("ledger.sqlite");
    for (name, headers, at) in [
        (
            "after-end",
            [
                ("x-mock-linger-ms", "3000"),
                ("x-mock-reply", "one two three four five six"),
            ],
            HangUp::After("[DONE]"),
        ),
        (
            "midway",
            [
                ("x-mock-frame-interval-ms", "400"),
                ("x-mock-reply", "one two three four five six"),
            ],
            HangUp::After("three"),
        ),
    ] {
        let key = keys_create(&config, &["--name", name, "--tpm", "5"]);
        let bearer = format!("Bearer {key}");
        let id = format!("shared-{name}");
        let mut sent: Vec<(&str, &str)> = headers.to_vec();
        sent.push(("authorization", &bearer));
        sent.push(("x-request-id", &id));
        let body = r#"{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"hello limits"}]}"#;
        hang_up(&format!("{}/v1/chat/completions", a.url), body, &sent, at).await;
        // The charge is counted before the row is written.
        let written = row_written(&gateway_core::ledger::sqlite_url(&ledger), &id).await;
        assert!(written, "{name}: no row: {}", a.stderr());
        let r = send(&b, &key).await;
        assert_eq!(r.status(), 429, "{name}: charged through Redis");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("tokens per minute"),
            "{name}: {body}"
        );
    }
}

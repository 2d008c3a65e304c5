//! Sessions through the real binary, with the mock playing Anthropic's prompt cache: turns
//! that extend a conversation break nothing; a turn that edits an earlier message is the
//! client's cache break, in the ledger, `/metrics` and `trimgate stats --by session`; a
//! script without a session header gets a derived session; and with `[optimize] holdout`
//! the held-out and optimized sessions give a net saving, which without held-out traffic
//! the report declines to give.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

const SESSION_HEADER: &str = "x-claude-code-session-id";

/// A gateway with its own SQLite ledger and `extra` config.
fn gateway(mock: &Mock, extra: &str) -> (Gateway, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite");
    let text = mock_config(
        &mock.url,
        "",
        &format!("[ledger]\nurl = \"sqlite://{}\"\n{extra}", ledger.display()),
    );
    let config = dir.path().join("config.toml");
    std::fs::write(&config, &text).unwrap();
    let gw = Gateway::spawn_wrapped(&text, &[], &[], "127.0.0.1:0", dir);
    (gw, config)
}

/// `trimgate stats --by session --json` on the gateway's ledger, once it shows `requests`
/// rows (the ledger writes in batches).
async fn session_report(config: &std::path::Path, requests: i64) -> Value {
    let mut last = Value::Null;
    for _ in 0..50 {
        let out = Command::new(env!("CARGO_BIN_EXE_trimgate"))
            .args([
                "stats", "--by", "session", "--since", "1h", "--json", "--config",
            ])
            .arg(config)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        last = serde_json::from_slice(&out.stdout).unwrap();
        let seen: i64 = last["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["requests"].as_i64().unwrap())
            .sum();
        if seen >= requests {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the ledger never showed {requests} requests: {last}");
}

fn stats_text(config: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["stats", "--by", "session", "--since", "1h", "--config"])
        .arg(config)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

fn long(n: usize) -> String {
    "Follow the repository's conventions; keep answers short. ".repeat(n)
}

/// A conversation of `turns` user messages (answers between them), the first as given.
fn conversation(first: &str, turns: usize) -> Value {
    let mut messages = vec![json!({"role": "user", "content": first})];
    for t in 1..turns {
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("Answer {t}: {}", long(20))}]}));
        messages.push(json!({"role": "user", "content": format!("Question {t}: and then?")}));
    }
    json!({
        "model": "claude-sonnet-5-5",
        "max_tokens": 64,
        "tools": [{"name": "read_file", "description": long(40), "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "system": long(80),
        "messages": messages,
    })
}

async fn send(gw: &Gateway, body: &Value, session: Option<&str>) -> Value {
    let mut headers = vec![
        ("x-api-key", CLIENT_PLACEHOLDER),
        ("anthropic-version", "2023-06-01"),
    ];
    if let Some(id) = session {
        headers.push((SESSION_HEADER, id));
    }
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        body.to_string(),
        &headers,
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    res.json().await.unwrap()
}

fn session<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session"] == id)
        .unwrap_or_else(|| panic!("no session {id} in {report}"))
}

#[tokio::test]
async fn growing_turns_break_nothing_and_an_edited_message_is_the_clients_break() {
    let mock = start_mock(MockConfig {
        prompt_cache: true,
        ..MockConfig::default()
    })
    .await;
    let (gw, config) = gateway(&mock, "");
    let id = "grow-then-edit";
    let mut reads = Vec::new();
    for turns in 1..=3 {
        let answer = send(&gw, &conversation("What does main.rs do?", turns), Some(id)).await;
        reads.push(answer["usage"]["cache_read_input_tokens"].as_u64().unwrap());
    }
    assert!(
        reads[1] > 0 && reads[2] > reads[1],
        "each turn reads what the last one wrote: {reads:?}"
    );
    // The client rewrites its first message: the prefix past the system prompt is gone.
    let edited = conversation("What does main.rs do? (edited)", 4);
    let answer = send(&gw, &edited, Some(id)).await;
    let read = answer["usage"]["cache_read_input_tokens"].as_u64().unwrap();
    assert!(
        read < reads[2],
        "the edit broke the prefix: {read} < {reads:?}"
    );

    // A script without a session header: its turns group under a derived id.
    for turns in 1..=2 {
        send(&gw, &conversation("A script's own question.", turns), None).await;
    }

    let report = session_report(&config, 6).await;
    let grown = session(&report, id);
    assert_eq!(grown["requests"], 4, "{report}");
    assert_eq!(
        grown["breaks"],
        json!({"gateway": 0, "client": 1, "provider": 0}),
        "{report}"
    );
    assert_eq!(grown["held_out"], false);
    assert!(grown["cache_read_tokens"].as_i64().unwrap() > 0);
    assert!(grown["cache_write_tokens"].as_i64().unwrap() > 0);
    let scripts: Vec<&Value> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["session"].as_str().unwrap().starts_with("h-"))
        .collect();
    assert_eq!(scripts.len(), 1, "one derived session: {report}");
    assert_eq!(scripts[0]["requests"], 2);
    assert_eq!(scripts[0]["breaks"]["client"], 0);
    assert_eq!(report["session_count"], 2);
    assert_eq!(
        report["breaks"],
        json!({"gateway": 0, "client": 1, "provider": 0})
    );
    // The most recent session first.
    assert!(report["sessions"][0]["session"]
        .as_str()
        .unwrap()
        .starts_with("h-"));

    // The break is counted in /metrics by cause.
    let metrics = metrics_text(&gw.url).await;
    let line = metrics
        .lines()
        .find(|l| l.starts_with("trimgate_cache_breaks_total") && l.contains("cause=\"client\""))
        .unwrap_or_else(|| panic!("no client break in /metrics:\n{metrics}"));
    assert!(line.ends_with(" 1"), "{line}");
    assert!(!metrics.contains("cause=\"gateway\""), "{metrics}");

    // The table: the session, its breaks by cause, and no net figure without a holdout.
    let text = stats_text(&config);
    let row = text
        .lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("0/1/0") && row.contains("optimized"), "{row}");
    assert!(text.contains("client 1"), "{text}");
    assert!(text.contains("not enough held-out traffic"), "{text}");
}

fn cargo_test_log(session: usize) -> String {
    let mut log = format!("   Compiling demo{session} v0.1.0\n\nrunning 301 tests\n");
    for i in 0..300 {
        log.push_str(&format!("test parser::tests::case_{i:03} ... ok\n"));
    }
    log.push_str("test parser::tests::rejects_trailing_comma ... FAILED\n\ntest result: FAILED. 300 passed; 1 failed; 0 ignored\n");
    log
}

/// A coding session: a question, a tool call, its long output, then `turns - 1` more
/// exchanges.
fn tool_session(session: usize, turns: usize) -> Value {
    let mut messages = vec![
        json!({"role": "user", "content": format!("Session {session}: run the tests and fix what fails.")}),
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "cargo test"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": cargo_test_log(session)}]}),
    ];
    for t in 1..turns {
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("Looking at case {t}.")}]}));
        messages.push(json!({"role": "user", "content": format!("Go on ({t}).")}));
    }
    json!({
        "model": "claude-sonnet-5-5",
        "max_tokens": 64,
        "system": "You are a coding agent.",
        "tools": [{"name": "bash", "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}],
        "messages": messages,
    })
}

#[tokio::test]
async fn held_out_and_optimized_sessions_give_the_net_saving() {
    let mock = start_mock(MockConfig::default()).await;
    let (gw, config) = gateway(&mock, "[optimize]\nholdout = 0.5\n");
    let mut held = 0;
    let sessions = 16;
    for s in 0..sessions {
        for turns in 1..=3 {
            let body = tool_session(s, turns);
            let res = post_json(
                &format!("{}/v1/messages", gw.url),
                body.to_string(),
                &[
                    ("x-api-key", CLIENT_PLACEHOLDER),
                    ("anthropic-version", "2023-06-01"),
                ],
            )
            .await;
            assert_eq!(res.status(), 200, "{}", gw.stderr());
            let applied = res.headers()["x-trimgate-applied"]
                .to_str()
                .unwrap()
                .to_owned();
            if turns == 1 && applied == "holdout" {
                held += 1;
            }
        }
    }
    assert!(
        (4..=12).contains(&held),
        "{held} of {sessions} sessions held out"
    );
    let report = session_report(&config, 3 * sessions as i64).await;
    let h = &report["holdout"];
    assert_eq!(h["held_out"]["sessions"], held, "{h}");
    assert_eq!(h["held_out"]["requests"], 3 * held, "{h}");
    assert_eq!(h["optimized"]["sessions"], sessions - held, "{h}");
    assert_eq!(h["models"], json!(["claude-sonnet-5-5"]), "{h}");
    let rate = |side: &Value| side["cost_usd"].as_f64().unwrap() / side["tokens"].as_f64().unwrap();
    assert!(
        rate(&h["compared_optimized"]) < rate(&h["compared_held_out"]),
        "the passes make a client's token cheaper: {h}"
    );
    let expected =
        h["compared_optimized"]["tokens"].as_f64().unwrap() * rate(&h["compared_held_out"]);
    let net = h["net_saved_usd"].as_f64().unwrap();
    let cost = h["compared_optimized"]["cost_usd"].as_f64().unwrap();
    assert!((net - (expected - cost)).abs() < 1e-9, "{h}");
    assert!(net > 0.0, "{h}");
    assert!(h["note"].is_null());
    // Each session is one group or the other, with what its passes removed.
    let listed = report["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 16, "the default limit is 20");
    for s in listed {
        let held_out = s["held_out"].as_bool().unwrap();
        assert_eq!(s["requests"], 3);
        assert_eq!(held_out, s["saved_tokens"] == 0, "{s}");
    }
    let text = stats_text(&config);
    assert!(text.contains("net saved  $"), "{text}");
    assert!(text.contains("held out   "), "{text}");
    assert!(text.lines().any(|l| l.ends_with("held out")), "{text}");

    // The window gets the same report.
    let admin = admin_get(&gw, "/sessions?since=1h&limit=3").await;
    assert_eq!(admin["ledger"], true);
    assert_eq!(admin["report"]["sessions"].as_array().unwrap().len(), 3);
    assert_eq!(
        admin["report"]["holdout"]["net_saved_usd"],
        h["net_saved_usd"]
    );
}

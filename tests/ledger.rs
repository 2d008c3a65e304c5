//! The ledger through the real binary: a row per request with the provider's usage and
//! what the optimizer saved, flushed on a graceful stop; a ledger that cannot be opened
//! leaves the gateway serving, with a warning.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::json;
use sqlx::Row;

/// The gateway with its ledger in a SQLite file at `path`.
fn spawn_with_ledger(mock_url: &str, path: &std::path::Path) -> Gateway {
    let extra = format!("[ledger]\nurl = \"sqlite://{}\"\n", path.display());
    Gateway::spawn(&mock_config(mock_url, "", &extra))
}

#[tokio::test]
async fn every_request_becomes_a_row_with_usage_and_savings() {
    let mock = start_mock(MockConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("ledger.sqlite");
    let mut gw = spawn_with_ledger(&mock.url, &path);
    assert!(gw.stderr().contains("ledger: sqlite://"), "{}", gw.stderr());

    let chat = json!({"model": "gpt-5", "messages": [{"role": "user", "content": "hello"}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    let log =
        "test parser::tests::case ... ok\n".repeat(300) + "test result: ok. 300 passed; 0 failed\n";
    let streamed = json!({
        "model": "claude-sonnet-5-5", "max_tokens": 50, "stream": true,
        "messages": [
            {"role": "user", "content": "run the tests"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": log}]},
        ],
    });
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        streamed.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    let saved: i64 = res.headers()["x-trimgate-saved-tokens"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(res.text().await.unwrap().contains("message_stop"));
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), "{not json", &[]).await;
    assert_eq!(res.status(), 400);

    gw.signal("TERM");
    assert!(
        gw.wait_exit(Duration::from_secs(15)).is_some(),
        "{}",
        gw.stderr()
    );

    let pool = gateway_core::ledger::open(&gateway_core::ledger::sqlite_url(&path))
        .await
        .unwrap();
    let rows = sqlx::query(
        "SELECT dialect, model_requested, streamed, status, outcome, input_tokens, output_tokens, applied, saved_tokens, cost_usd \
         FROM requests ORDER BY ts_ms, status",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 3, "one row per request");
    let by_model = |m: &str| {
        rows.iter()
            .find(|r| r.get::<Option<String>, _>("model_requested").as_deref() == Some(m))
    };
    let chat = by_model("gpt-5").unwrap();
    assert_eq!(chat.get::<String, _>("dialect"), "openai_chat");
    assert_eq!(chat.get::<i64, _>("status"), 200);
    assert!(chat.get::<Option<i64>, _>("input_tokens").unwrap() > 0);
    // gpt-5 is in the bundled price table.
    assert!(chat.get::<Option<f64>, _>("cost_usd").unwrap() > 0.0);
    let anthropic = by_model("claude-sonnet-5-5").unwrap();
    assert_eq!(anthropic.get::<i64, _>("streamed"), 1);
    assert!(
        anthropic.get::<Option<i64>, _>("output_tokens").unwrap() > 0,
        "usage from the stream"
    );
    assert_eq!(anthropic.get::<String, _>("applied"), "tool_output=auto");
    assert_eq!(anthropic.get::<i64, _>("saved_tokens"), saved);
    let refused = rows
        .iter()
        .find(|r| r.get::<i64, _>("status") == 400)
        .unwrap();
    assert_eq!(refused.get::<String, _>("outcome"), "gateway_error");
    assert_eq!(refused.get::<Option<i64>, _>("input_tokens"), None);
}

#[tokio::test]
async fn a_ledger_that_cannot_open_leaves_the_gateway_serving() {
    let mock = start_mock(MockConfig::default()).await;
    let blocker = tempfile::NamedTempFile::new().unwrap();
    // A path under a regular file can never be created.
    let extra = format!(
        "[ledger]\nurl = \"sqlite://{}/ledger.sqlite\"\n",
        blocker.path().display()
    );
    let gw = Gateway::spawn(&mock_config(&mock.url, "", &extra));
    assert!(
        gw.stderr().contains("the ledger is disabled"),
        "{}",
        gw.stderr()
    );
    let chat = json!({"model": "gpt-5", "messages": [{"role": "user", "content": "still here"}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn sigkill_under_load_loses_at_most_the_last_second_and_never_corrupts() {
    let mock = start_mock(MockConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("ledger.sqlite");
    let mut gw = spawn_with_ledger(&mock.url, &path);
    let url = format!("{}/v1/chat/completions", gw.url);
    let body =
        json!({"model": "gpt-5", "messages": [{"role": "user", "content": "load"}]}).to_string();

    // Four clients send requests back to back; each success is timed.
    let start = std::time::Instant::now();
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (url, body) = (url.clone(), body.clone());
        clients.push(tokio::spawn(async move {
            let mut done = Vec::new();
            while start.elapsed() < Duration::from_secs(4) {
                match client()
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                {
                    Ok(res) if res.status() == 200 => {
                        let _ = res.bytes().await;
                        done.push(start.elapsed());
                    }
                    _ => break,
                }
            }
            done
        }));
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let killed_at = start.elapsed();
    gw.signal("KILL");
    assert!(gw.wait_exit(Duration::from_secs(5)).is_some());
    let mut finished = Vec::new();
    for c in clients {
        finished.extend(c.await.unwrap());
    }
    let older_than_a_second = finished
        .iter()
        .filter(|t| **t + Duration::from_secs(1) <= killed_at)
        .count() as i64;
    assert!(
        older_than_a_second >= 10,
        "only {older_than_a_second} requests before the last second"
    );

    let pool = gateway_core::ledger::open(&gateway_core::ledger::sqlite_url(&path))
        .await
        .unwrap();
    let check: String = sqlx::query("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await
        .unwrap()
        .get(0);
    assert_eq!(check, "ok");
    let rows: i64 = sqlx::query("SELECT COUNT(*) FROM requests")
        .fetch_one(&pool)
        .await
        .unwrap()
        .get(0);
    assert!(
        rows >= older_than_a_second,
        "{rows} rows kept of {older_than_a_second} requests answered more than a second before the kill ({} in all)",
        finished.len()
    );
}

#[tokio::test]
async fn a_corrupt_ledger_file_is_reported_and_the_gateway_serves() {
    let mock = start_mock(MockConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("ledger.sqlite");
    std::fs::write(
        &path,
        b"this is not a database, it was overwritten by accident\n".repeat(100),
    )
    .unwrap();
    let gw = spawn_with_ledger(&mock.url, &path);
    let log = gw.stderr();
    assert!(
        log.contains("cannot open the ledger") || log.contains("cannot bring the ledger"),
        "{log}"
    );
    assert!(log.contains("the ledger is disabled"), "{log}");
    let chat =
        json!({"model": "gpt-5", "messages": [{"role": "user", "content": "still serving"}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    // The file is left as it was, for the user to inspect or restore.
    assert!(std::fs::read(&path)
        .unwrap()
        .starts_with(b"this is not a database"));
}

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

#[tokio::test]
async fn every_request_becomes_a_row_with_usage_and_savings() {
    let mock = start_mock(MockConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("ledger.sqlite");
    let extra = format!("[ledger]\nurl = \"sqlite://{}\"\n", path.display());
    let mut gw = Gateway::spawn(&mock_config(&mock.url, "", &extra));
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

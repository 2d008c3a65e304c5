//! The response cache through the real binary: exact hits replayed as JSON and as SSE in
//! each dialect (native and translated), `no-cache`, what is not cached, similar requests,
//! entries kept across a restart, and the ledger's record of hits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use gateway_core::ledger;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};
use sqlx::Row;

struct Answer {
    cache: Option<String>,
    similarity: Option<String>,
    content_type: String,
    body: String,
}

async fn ask(url: &str, body: &Value, headers: &[(&str, &str)]) -> Answer {
    let res = post_json(url, body.to_string(), headers).await;
    assert_eq!(res.status(), 200);
    let header = |name: &str| {
        res.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (cache, similarity) = (
        header("x-trimgate-cache"),
        header("x-trimgate-cache-similarity"),
    );
    let content_type = header("content-type").unwrap_or_default();
    Answer {
        cache,
        similarity,
        content_type,
        body: res.text().await.unwrap(),
    }
}

fn chat(stream: bool, temperature: f64, text: &str) -> Value {
    json!({"model": "gpt-5", "stream": stream, "temperature": temperature,
           "messages": [{"role": "user", "content": text}]})
}

fn messages(model: &str, stream: bool, text: &str) -> Value {
    json!({"model": model, "max_tokens": 64, "stream": stream, "temperature": 0,
           "messages": [{"role": "user", "content": text}]})
}

#[tokio::test]
async fn deterministic_requests_are_answered_from_the_cache_in_every_shape() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", "[ledger]\nenabled = false\n"));
    let chat_url = format!("{}/v1/chat/completions", gw.url);
    let messages_url = format!("{}/v1/messages", gw.url);
    // (url, body, streamed): OpenAI Chat and Anthropic Messages natively, and an
    // Anthropic client on an OpenAI model (translated), each whole and streamed.
    let cases = [
        (&chat_url, chat(false, 0.0, "cache me"), false),
        (&chat_url, chat(true, 0.0, "cache me"), true),
        (
            &messages_url,
            messages("claude-sonnet-5-5", false, "cache me"),
            false,
        ),
        (
            &messages_url,
            messages("claude-sonnet-5-5", true, "cache me"),
            true,
        ),
        (&messages_url, messages("gpt-5", false, "cache me"), false),
        (&messages_url, messages("gpt-5", true, "cache me"), true),
    ];
    for (url, body, streamed) in &cases {
        mock.state.clear();
        let first = ask(url, body, &[]).await;
        assert_eq!(first.cache.as_deref(), Some("miss"), "{body}");
        let second = ask(url, body, &[]).await;
        assert_eq!(second.cache.as_deref(), Some("hit"), "{body}");
        assert_eq!(mock.state.requests().len(), 1, "one upstream call: {body}");
        // The replay is the first answer, byte for byte (same ids), in the same framing.
        assert_eq!(second.body, first.body);
        assert_eq!(
            second.content_type.starts_with("text/event-stream"),
            *streamed
        );
        if *streamed {
            assert!(
                sse_data(&second.body).len() > 2,
                "a proper stream: {}",
                second.body
            );
        } else {
            serde_json::from_str::<Value>(&second.body).unwrap();
        }
    }

    // `cache-control: no-cache` goes upstream (and refreshes the entry).
    mock.state.clear();
    let body = chat(false, 0.0, "cache me");
    let fresh = ask(&chat_url, &body, &[("cache-control", "no-cache")]).await;
    assert_eq!(fresh.cache.as_deref(), Some("miss"));
    assert_eq!(mock.state.requests().len(), 1);
    let replay = ask(&chat_url, &body, &[]).await;
    assert_eq!(
        (replay.cache.as_deref(), replay.body),
        (Some("hit"), fresh.body)
    );
    // `no-store`: not the cache's business at all.
    let bypass = ask(&chat_url, &body, &[("cache-control", "no-store")]).await;
    assert_eq!(bypass.cache, None);

    // A sampled request is never cached; another text is another key.
    mock.state.clear();
    for _ in 0..2 {
        let sampled = ask(&chat_url, &chat(false, 0.7, "cache me"), &[]).await;
        assert_eq!(sampled.cache, None);
    }
    let other = ask(&chat_url, &chat(false, 0.0, "cache me too"), &[]).await;
    assert_eq!(other.cache.as_deref(), Some("miss"));
    assert_eq!(mock.state.requests().len(), 3);
}

#[tokio::test]
async fn errors_and_broken_streams_are_not_cached() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", "[ledger]\nenabled = false\n"));
    let url = format!("{}/v1/chat/completions", gw.url);
    let body = chat(false, 0.0, "fail first");
    let res = post_json(&url, body.to_string(), &[("x-mock-error-status", "500")]).await;
    assert_eq!(res.status(), 500);
    let after = ask(&url, &body, &[]).await;
    assert_eq!(
        after.cache.as_deref(),
        Some("miss"),
        "the error was not stored"
    );

    let streamed = chat(true, 0.0, "break mid-stream");
    let res = post_json(
        &url,
        streamed.to_string(),
        &[("x-mock-stream-error-after", "2")],
    )
    .await;
    let _ = res.text().await.unwrap();
    let after = ask(&url, &streamed, &[]).await;
    assert_eq!(
        after.cache.as_deref(),
        Some("miss"),
        "the broken stream was not stored"
    );
}

#[tokio::test]
async fn similar_requests_get_the_stored_answer_when_a_model_opts_in() {
    let mock = start_mock(MockConfig::default()).await;
    let extra =
        "[ledger]\nenabled = false\n\n[[cache.models]]\nmatch = \"gpt-5\"\nsimilar = true\n";
    let gw = Gateway::spawn(&mock_config(&mock.url, "", extra));
    let url = format!("{}/v1/chat/completions", gw.url);
    let question = "How do I read a whole file into a String in Rust without any extra crates?";
    let first = ask(&url, &chat(false, 0.7, question), &[]).await;
    assert_eq!(first.cache.as_deref(), Some("miss"));
    let close = ask(&url, &chat(false, 0.7, &format!("{question} Thanks")), &[]).await;
    assert_eq!(close.cache.as_deref(), Some("hit"));
    let score: f64 = close.similarity.unwrap().parse().unwrap();
    assert!((0.9..1.0).contains(&score), "{score}");
    assert_eq!(close.body, first.body);
    // Far from it, or under the words gate: upstream.
    let far = ask(
        &url,
        &chat(
            false,
            0.7,
            "Which crate parses TOML in Rust, and is it stable?",
        ),
        &[],
    )
    .await;
    assert_eq!(far.cache.as_deref(), Some("miss"));
    let short = ask(&url, &chat(false, 0.7, "continue"), &[]).await;
    assert_eq!(short.cache, None);
    assert_eq!(mock.state.requests().len(), 3);
}

#[tokio::test]
async fn entries_survive_a_restart_and_hits_are_in_the_ledger() {
    let mock = start_mock(MockConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let url_db = ledger::sqlite_url(&data.path().join("ledger.sqlite"));
    let config = mock_config(&mock.url, "", &format!("[ledger]\nurl = \"{url_db}\"\n"));
    // A model the bundled price table knows, so the hit's saving has a price.
    let body = messages("claude-sonnet-4-5", true, "remember me across restarts");

    let mut gw = Gateway::spawn(&config);
    let url = format!("{}/v1/messages", gw.url);
    let first = ask(&url, &body, &[]).await;
    assert_eq!(first.cache.as_deref(), Some("miss"));
    gw.signal("TERM");
    assert!(gw.wait_exit(Duration::from_secs(15)).is_some());

    let mut gw = Gateway::spawn(&config);
    assert!(
        gw.stderr().contains("response cache: 1 entries loaded"),
        "{}",
        gw.stderr()
    );
    let url = format!("{}/v1/messages", gw.url);
    let again = ask(&url, &body, &[]).await;
    assert_eq!(again.cache.as_deref(), Some("hit"));
    assert_eq!(again.body, first.body);
    assert_eq!(mock.state.requests().len(), 1);
    gw.signal("TERM");
    assert!(gw.wait_exit(Duration::from_secs(15)).is_some());

    let pool = ledger::open(&url_db).await.unwrap();
    let rows =
        sqlx::query("SELECT cache, input_tokens, cost_usd, saved_usd FROM requests ORDER BY ts_ms")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0].get::<Option<String>, _>("cache").as_deref(),
        Some("miss")
    );
    assert_eq!(
        rows[1].get::<Option<String>, _>("cache").as_deref(),
        Some("hit")
    );
    // The hit cost nothing and saved what the first answer cost.
    assert_eq!(rows[1].get::<Option<i64>, _>("input_tokens"), None);
    let first_cost: f64 = rows[0].get::<Option<f64>, _>("cost_usd").unwrap();
    assert!(first_cost > 0.0);
    let (hit_cost, hit_saved): (Option<f64>, Option<f64>) =
        (rows[1].get("cost_usd"), rows[1].get("saved_usd"));
    assert_eq!(hit_cost, Some(0.0));
    assert!((hit_saved.unwrap() - first_cost).abs() < 1e-12);
}

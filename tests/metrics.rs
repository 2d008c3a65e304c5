//! `/metrics` of the real binary after real traffic: requests by dialect, provider, status
//! and outcome, latency histograms, tokens, cache lookups, errors and the ledger's queue —
//! and never a key or a word of a prompt.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::json;

/// The sum of a metric's samples whose line contains every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && labels.iter().all(|x| l.contains(x)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn metrics_count_real_traffic_and_carry_no_secrets() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let prompt = "zebra-quartz-prompt-text";
    let chat = json!({"model": "gpt-5", "temperature": 0, "messages": [{"role": "user", "content": prompt}]});
    for _ in 0..2 {
        let res = post_json(
            &format!("{}/v1/chat/completions", gw.url),
            chat.to_string(),
            &[("authorization", &format!("Bearer {CLIENT_PLACEHOLDER}"))],
        )
        .await;
        assert_eq!(res.status(), 200);
    }
    let streamed = json!({"model": "claude-sonnet-5-5", "max_tokens": 32, "stream": true, "messages": [{"role": "user", "content": prompt}]});
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        streamed.to_string(),
        &[],
    )
    .await;
    let _ = res.text().await.unwrap();
    let unknown = json!({"model": "no-such-model", "messages": []});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        unknown.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 404);

    // The streamed record is finished when its body ends: poll until all four are counted.
    let mut text = String::new();
    for _ in 0..50 {
        text = metrics_text(&gw.url).await;
        // The ledger's gauge is set when its writer stores its first batch.
        if sample(&text, "trimgate_requests_total", &[]) >= 4.0
            && text.contains("trimgate_ledger_queue_depth")
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        sample(
            &text,
            "trimgate_requests_total",
            &[
                r#"dialect="openai_chat""#,
                r#"provider="mock-openai""#,
                r#"status="200""#,
                r#"outcome="completed""#
            ]
        ),
        2.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "trimgate_requests_total",
            &[r#"dialect="anthropic_messages""#, r#"status="200""#]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            "trimgate_requests_total",
            &[r#"status="404""#, r#"outcome="gateway_error""#]
        ),
        1.0
    );
    assert_eq!(
        sample(&text, "trimgate_errors_total", &[r#"kind="unknown_model""#]),
        1.0
    );
    assert_eq!(
        sample(&text, "trimgate_cache_lookups_total", &[r#"result="miss""#]),
        1.0
    );
    assert_eq!(
        sample(&text, "trimgate_cache_lookups_total", &[r#"result="hit""#]),
        1.0
    );
    assert!(sample(&text, "trimgate_tokens_total", &[r#"bucket="input""#]) > 0.0);
    assert!(sample(&text, "trimgate_request_duration_seconds_count", &[]) >= 4.0);
    assert!(text.contains("trimgate_ledger_queue_depth"));
    for secret in [prompt, OPENAI_KEY, ANTHROPIC_KEY, CLIENT_PLACEHOLDER] {
        assert!(!text.contains(secret), "{secret} in /metrics");
    }
}

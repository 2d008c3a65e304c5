//! Clients that hang up, and what the ledger keeps of them, on SQLite and on PostgreSQL
//! (`TRIMGATE_TEST_POSTGRES_URL`, as in `ledger_backends.rs`). A client that leaves once it
//! has its answer's last event (as Codex CLI does after `response.completed`, and the
//! `openai` SDK after `[DONE]`) made a completed request, with the provider's usage and
//! cost, whether the stream was passed through or translated; one that leaves midway or
//! before the first byte is `client_cancelled` and charged for what it used, the gateway's
//! own counts marked as estimated; a provider that reports no usage is counted the same
//! way, never as free; `count_tokens` calls are told apart. A virtual key is charged for
//! both kinds of hang-up.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use gateway_core::ledger::{self, stats};
use gateway_core::mock::MockConfig;
use serde_json::json;
use sqlx::Row;

/// The provider keeps each stream open this long after its last event: a client that
/// waits for the body's end would wait that long.
const LINGER: &str = "3000";
/// A reply long enough to leave midway, a frame at a time.
const REPLY: &str = "one two three four five six seven eight nine ten eleven twelve";

/// One request of the run: how it is sent, where the client leaves, what its row must say.
struct Case {
    id: &'static str,
    path: &'static str,
    body: serde_json::Value,
    headers: &'static [(&'static str, &'static str)],
    at: HangUp,
    outcome: &'static str,
    /// `tokens_estimated` as the row must have it.
    estimated: Option<&'static str>,
}

fn chat(model: &str) -> serde_json::Value {
    json!({"model": model, "stream": true, "messages": [{"role": "user", "content": "leave when you like"}]})
}

fn responses(model: &str) -> serde_json::Value {
    json!({"model": model, "stream": true, "input": "leave when you like"})
}

fn messages(model: &str) -> serde_json::Value {
    json!({"model": model, "stream": true, "max_tokens": 64, "messages": [{"role": "user", "content": "leave when you like"}]})
}

const LINGERS: &[(&str, &str)] = &[("x-mock-linger-ms", LINGER), ("x-mock-reply", REPLY)];
const SLOW: &[(&str, &str)] = &[("x-mock-frame-interval-ms", "400"), ("x-mock-reply", REPLY)];
const LATE: &[(&str, &str)] = &[("x-mock-delay-ms", "3000")];

fn cases() -> Vec<Case> {
    let done = |id, path, body, end| Case {
        id,
        path,
        body,
        headers: LINGERS,
        at: HangUp::After(end),
        outcome: "completed",
        estimated: None,
    };
    vec![
        // Right after the last event, passed through.
        done("end-chat", "/v1/chat/completions", chat("gpt-5"), "[DONE]"),
        done(
            "end-responses",
            "/v1/responses",
            responses("gpt-5"),
            "response.completed",
        ),
        done(
            "end-messages",
            "/v1/messages",
            messages("claude-sonnet-5-5"),
            "message_stop",
        ),
        // Right after the last event, translated (Codex to an Anthropic provider; an
        // OpenAI SDK script to one; Claude Code's dialect to an OpenAI provider).
        done(
            "end-responses-to-anthropic",
            "/v1/responses",
            responses("claude-sonnet-5-5"),
            "response.completed",
        ),
        done(
            "end-chat-to-anthropic",
            "/v1/chat/completions",
            chat("claude-sonnet-5-5"),
            "[DONE]",
        ),
        done(
            "end-messages-to-openai",
            "/v1/messages",
            messages("gpt-5"),
            "message_stop",
        ),
        done(
            "end-responses-to-chat",
            "/v1/responses",
            responses("chat-only"),
            "response.completed",
        ),
        // Midway: the provider's input where it came (Anthropic's message_start), else
        // the forwarded request's count; the output relayed so far (three words and more
        // than the 1 message_start says).
        Case {
            id: "mid-chat",
            path: "/v1/chat/completions",
            body: chat("gpt-5"),
            headers: SLOW,
            at: HangUp::After("\"content\":\"one"),
            outcome: "client_cancelled",
            estimated: Some("input,output"),
        },
        Case {
            id: "mid-messages",
            path: "/v1/messages",
            body: messages("claude-sonnet-5-5"),
            headers: SLOW,
            at: HangUp::After("three"),
            outcome: "client_cancelled",
            estimated: Some("output"),
        },
        Case {
            id: "mid-responses-to-anthropic",
            path: "/v1/responses",
            body: responses("claude-sonnet-5-5"),
            headers: SLOW,
            at: HangUp::After("three"),
            outcome: "client_cancelled",
            estimated: Some("output"),
        },
        // Before the first byte: the input the request would cost, nothing output.
        Case {
            id: "early-chat",
            path: "/v1/chat/completions",
            body: chat("gpt-5"),
            headers: LATE,
            at: HangUp::Before(Duration::from_millis(500)),
            outcome: "client_cancelled",
            estimated: Some("input"),
        },
        Case {
            id: "early-messages",
            path: "/v1/messages",
            body: messages("claude-sonnet-5-5"),
            headers: LATE,
            at: HangUp::Before(Duration::from_millis(500)),
            outcome: "client_cancelled",
            estimated: Some("input"),
        },
    ]
}

/// A config with a Chat-only server (`chat-only`) and one whose streams carry no usage
/// (`no-usage`: the gateway does not ask for it, the client does not either).
fn config(mock_url: &str, ledger_url: &str) -> String {
    mock_config(
        mock_url,
        "",
        &format!(
            r#"[ledger]
url = "{ledger_url}"

[[routes]]
match = "chat-only"
provider = "chat-server"
model = "gpt-5"

[[routes]]
match = "no-usage"
provider = "quiet"
model = "gpt-5"

[providers.chat-server]
kind = "openai_compatible"
base_url = "{mock_url}/v1"
api_key = {{ env = "TG_TEST_OPENAI_KEY" }}

[providers.quiet]
kind = "openai_compatible"
base_url = "{mock_url}/v1"
api_key = {{ env = "TG_TEST_OPENAI_KEY" }}
stream_usage = false
"#
        ),
    )
}

async fn hangups(url: &str) {
    let mock = start_mock(MockConfig::default()).await;
    let mut gw = Gateway::spawn(&config(&mock.url, url));
    let cases = cases();
    for case in &cases {
        let mut headers: Vec<(&str, &str)> = case.headers.to_vec();
        headers.push(("x-request-id", case.id));
        hang_up(
            &format!("{}{}", gw.url, case.path),
            &case.body.to_string(),
            &headers,
            case.at,
        )
        .await;
    }
    // A provider that never reports usage, read to the end.
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat("no-usage").to_string(),
        &[("x-request-id", "no-usage")],
    )
    .await;
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(
        text.ends_with("data: [DONE]\n\n") && !text.contains("\"usage\":{"),
        "{text}"
    );
    // A client that reads a lingering stream to its end gets its end with the answer's,
    // not the provider's: the provider's body is dropped, not waited for.
    let before = mock.state.stats();
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        messages("claude-sonnet-5-5").to_string(),
        &[("x-request-id", "whole-lingering"), LINGERS[0]],
    )
    .await;
    assert!(res.text().await.unwrap().contains("message_stop"));
    // Two token counts: not model calls.
    for id in ["count-1", "count-2"] {
        let res = post_json(
            &format!("{}/v1/messages/count_tokens", gw.url),
            json!({"model": "claude-sonnet-5-5", "messages": [{"role": "user", "content": "count me"}]})
                .to_string(),
            &[("x-request-id", id)],
        )
        .await;
        assert_eq!(res.status(), 200);
        res.bytes().await.unwrap();
    }
    let served: usize = cases.len() + 2;
    // The hang-ups are noticed within a frame interval; the rows then wait for the batch.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    gw.signal("TERM");
    assert!(
        gw.wait_exit(Duration::from_secs(15)).is_some(),
        "{}",
        gw.stderr()
    );
    let after = mock.state.stats();
    assert!(
        after.cancelled > before.cancelled,
        "the lingering body was dropped once the answer had ended"
    );

    let pool = ledger::open(url).await.unwrap();
    let pricing = gateway_core::pricing::Pricing::bundled();
    let rows = sqlx::query(
        "SELECT request_id, outcome, status, input_tokens, output_tokens, cost_usd, \
         tokens_estimated, kind, model_served, model_requested, saved_tokens FROM requests",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let row = |id: &str| {
        rows.iter()
            .find(|r| r.get::<String, _>("request_id") == id)
            .unwrap_or_else(|| panic!("no row for {id}: {}", gw.stderr()))
    };
    let mut all_cases: Vec<(&str, &str, Option<&str>)> = cases
        .iter()
        .map(|c| (c.id, c.outcome, c.estimated))
        .collect();
    all_cases.push(("no-usage", "completed", Some("input,output")));
    all_cases.push(("whole-lingering", "completed", None));
    for (id, outcome, estimated) in all_cases {
        let r = row(id);
        let input = r.get::<Option<i64>, _>("input_tokens");
        let output = r.get::<Option<i64>, _>("output_tokens");
        assert_eq!(r.get::<String, _>("outcome"), outcome, "{id}");
        assert_eq!(
            r.get::<Option<String>, _>("tokens_estimated").as_deref(),
            estimated,
            "{id}"
        );
        assert_eq!(r.get::<String, _>("kind"), "generation", "{id}");
        assert!(input.unwrap_or(0) > 0, "{id}: input {input:?}");
        if id.starts_with("early") {
            assert_eq!(output, Some(0), "{id}: nothing was said");
        } else {
            assert!(output.unwrap_or(0) > 0, "{id}: output {output:?}");
        }
        // Priced like any other request.
        let model: Option<String> = r
            .get::<Option<String>, _>("model_served")
            .or(r.get("model_requested"));
        if model.as_deref().and_then(|m| pricing.prices(m)).is_some() {
            assert!(
                r.get::<Option<f64>, _>("cost_usd").unwrap_or(0.0) > 0.0,
                "{id}"
            );
        }
        let _ = r.get::<i64, _>("saved_tokens");
    }
    // A completed request's usage is the provider's: the mock's counts, not an estimate.
    for id in ["end-chat", "end-messages", "end-responses-to-anthropic"] {
        assert_eq!(row(id).get::<Option<String>, _>("tokens_estimated"), None);
    }
    for id in ["count-1", "count-2"] {
        let r = row(id);
        assert_eq!(r.get::<String, _>("kind"), "count_tokens", "{id}");
        assert_eq!(r.get::<Option<String>, _>("tokens_estimated"), None);
    }

    // Stats count the model calls only; a request the client left is cancelled, not an
    // error, and what it used is in the totals.
    let totals = stats::sum(&stats::totals(&pool, 0, stats::By::Model).await.unwrap());
    assert_eq!(totals.requests as usize, served, "{totals:?}");
    assert_eq!(totals.errors, 0, "{totals:?}");
    assert_eq!(totals.cancelled, 5, "{totals:?}");
    let summed: i64 = sqlx::query(
        "SELECT CAST(SUM(input_tokens) AS BIGINT) FROM requests WHERE kind = 'generation'",
    )
    .fetch_one(&pool)
    .await
    .unwrap()
    .get(0);
    assert_eq!(totals.input_tokens, summed);
    pool.close().await;
}

#[tokio::test]
async fn sqlite_hangups_are_recorded_with_what_they_used() {
    let dir = tempfile::tempdir().unwrap();
    hangups(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_hangups_are_recorded_with_what_they_used() {
    hangups(&fresh_postgres().await).await;
}

#[tokio::test]
async fn a_virtual_key_is_charged_for_clients_that_hang_up() {
    let mock = start_mock(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_sqlite(&dir);
    let text = config(&mock.url, &url);
    let path = dir.path().join("config.toml");
    std::fs::write(&path, &text).unwrap();
    let gw = Gateway::spawn(&text);
    // Each key's first request, left at the end or midway, uses more than its minute allows.
    for (name, case, at) in [
        ("after-end", LINGERS, HangUp::After("[DONE]")),
        ("midway", SLOW, HangUp::After("\"content\":\"one")),
    ] {
        let key = keys_create(&path, &["--name", name, "--tpm", "5"]);
        let bearer = format!("Bearer {key}");
        let id = format!("vk-{name}");
        let mut headers: Vec<(&str, &str)> = case.to_vec();
        headers.push(("authorization", &bearer));
        headers.push(("x-request-id", &id));
        hang_up(
            &format!("{}/v1/chat/completions", gw.url),
            &chat("gpt-5").to_string(),
            &headers,
            at,
        )
        .await;
        assert!(row_written(&url, &id).await, "{name}: {}", gw.stderr());
        let next = post_json(
            &format!("{}/v1/chat/completions", gw.url),
            chat("gpt-5").to_string(),
            &[("authorization", &bearer)],
        )
        .await;
        assert_eq!(next.status(), 429, "{name}: the hang-up was charged");
        let body: serde_json::Value = next.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("tokens per minute"),
            "{name}: {body}"
        );
    }
}

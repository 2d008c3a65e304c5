//! The same ledger tests against SQLite and against a real PostgreSQL server
//! (`TRIMGATE_TEST_POSTGRES_URL`, which `scripts/test.sh` sets after starting one with
//! `scripts/postgres.sh`): migrations, batched writes, prices, aggregations, and the
//! gateway writing rows to each.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use gateway_core::cache;
use gateway_core::dialect::Dialect;
use gateway_core::ledger::{self, stats, Ledger};
use gateway_core::mock::MockConfig;
use gateway_core::optimize::PassTokens;
use gateway_core::pricing::Pricing;
use gateway_core::record::{Estimated, Kind, MemoryRecorder, Outcome, Recorder, RequestRecord};
use gateway_core::usage::Usage;
use serde_json::json;
use sqlx::Row;

fn record(i: u64, model: &str, at: SystemTime) -> RequestRecord {
    RequestRecord {
        request_id: format!("r{i}"),
        started_at: at,
        dialect: Dialect::AnthropicMessages,
        provider: Some("anthropic".into()),
        model_requested: Some(model.into()),
        model_served: Some(model.into()),
        priced_as: None,
        streamed: i.is_multiple_of(2),
        status: if i % 5 == 4 { 529 } else { 200 },
        // A provider's 529 is relayed whole: completed, and counted as an error by status.
        outcome: Outcome::Completed,
        error: None,
        latency: Duration::from_millis(100 + i),
        overhead: Duration::from_micros(50),
        usage: Some(Usage {
            input: 1000,
            output: 100,
            cache_read: 600,
            cache_write: 200,
            reasoning: 0,
        }),
        estimated: Estimated::default(),
        kind: Kind::Generation,
        applied: if i.is_multiple_of(2) {
            "tool_output=auto".into()
        } else {
            String::new()
        },
        saved_tokens: if i.is_multiple_of(2) { 400 } else { 0 },
        saved_bytes: if i.is_multiple_of(2) { 1600 } else { 0 },
        gateway_key: Some("ci".into()),
        passes: if i.is_multiple_of(2) {
            vec![PassTokens {
                pass: "tool_output",
                before: 500,
                after: 100,
            }]
        } else {
            Vec::new()
        },
        // Every fourth request went through the response cache; one in eight was answered.
        cache: match i % 8 {
            1 => Some(cache::Status::Hit),
            3 | 5 | 7 => Some(cache::Status::Miss),
            _ => None,
        },
        avoided: None,
        // Odd requests were translated and left two fields out; all carry a session.
        dropped: if i % 2 == 1 {
            "context_management,tools.defer_loading".into()
        } else {
            String::new()
        },
        session: Some(format!("session-{}", i % 3)),
        // Every tenth request was answered on its second attempt (see `retried_attempt`).
        attempt: if i.is_multiple_of(10) { 2 } else { 1 },
        api_key: None,
        cache_break: None,
        first_byte: Some(Duration::from_millis(3)),
        rewrites: Vec::new(),
        secrets: String::new(),
    }
}

/// The row of a failed first attempt that was tried again: same request id, no usage.
fn retried_attempt(answered: &RequestRecord) -> RequestRecord {
    RequestRecord {
        status: 529,
        outcome: Outcome::Retried,
        error: Some("overloaded"),
        usage: None,
        applied: String::new(),
        saved_tokens: 0,
        saved_bytes: 0,
        passes: Vec::new(),
        cache: None,
        model_served: None,
        attempt: 1,
        ..answered.clone()
    }
}

/// Writes 40 rows over two hours and two models, reopens, and checks every aggregate.
async fn rows_prices_and_totals(url: &str) {
    let pool = ledger::open(url).await.unwrap();
    let (ledger, recorder) = Ledger::start(
        pool,
        Arc::new(MemoryRecorder::new(1)),
        Arc::new(Pricing::bundled()),
    );
    let base = UNIX_EPOCH + Duration::from_secs(1_796_130_000);
    for i in 0..40u64 {
        let model = if i < 30 {
            "claude-sonnet-4-5"
        } else {
            "claude-haiku-4-5"
        };
        let at = base + Duration::from_secs(3600 * (i % 2));
        let answered = record(i, model, at);
        if answered.attempt == 2 {
            recorder.record(std::sync::Arc::new(retried_attempt(&answered)));
        }
        recorder.record(std::sync::Arc::new(answered));
    }
    // A request the client left midway, charged for what it used (its output the
    // gateway's count), and a token count, which is no model call.
    let mut left = record(40, "claude-sonnet-4-5", base);
    left.outcome = Outcome::ClientCancelled;
    left.error = Some("client_cancelled");
    left.usage = Some(Usage {
        input: 1000,
        output: 40,
        ..Usage::default()
    });
    left.estimated = Estimated {
        input: false,
        output: true,
    };
    left.saved_tokens = 0;
    left.passes = Vec::new();
    recorder.record(std::sync::Arc::new(left));
    let mut count = record(41, "claude-sonnet-4-5", base);
    count.kind = Kind::CountTokens;
    count.usage = None;
    count.status = 500;
    recorder.record(std::sync::Arc::new(count));
    ledger.close().await;

    // Reopened: the migrations are recorded and not run again.
    let pool = ledger::open(url).await.unwrap();
    let marks: Vec<(String, Option<String>)> =
        sqlx::query("SELECT kind, tokens_estimated FROM requests WHERE request_id IN ('r40', 'r41') ORDER BY request_id")
            .fetch_all(&pool)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get("kind"), r.get("tokens_estimated")))
            .collect();
    assert_eq!(
        marks,
        [
            ("generation".to_owned(), Some("output".to_owned())),
            ("count_tokens".to_owned(), None)
        ]
    );
    let by_model = stats::totals(&pool, 0, stats::By::Model).await.unwrap();
    assert_eq!(by_model.len(), 2);
    let sonnet = &by_model[0];
    assert_eq!(sonnet.key, "claude-sonnet-4-5", "largest cost first");
    // The cancelled request is counted, not as an error; the token count not at all.
    assert_eq!(
        (sonnet.requests, sonnet.errors, sonnet.cancelled),
        (31, 6, 1)
    );
    let left_cost = (1000.0 * 3.0 + 40.0 * 15.0) / 1e6;
    let sonnet = stats::Totals {
        requests: 30,
        input_tokens: sonnet.input_tokens - 1000,
        output_tokens: sonnet.output_tokens - 40,
        cost_usd: sonnet.cost_usd - left_cost,
        ..sonnet.clone()
    };
    let sonnet = &sonnet;
    assert_eq!(
        (
            sonnet.input_tokens,
            sonnet.output_tokens,
            sonnet.cache_read_tokens
        ),
        (30_000, 3_000, 18_000)
    );
    assert_eq!(sonnet.saved_tokens, 15 * 400);
    // Sonnet per request: 200 fresh × $3 + 600 reads × $0.30 + 200 writes × $3.75 + 100 out × $15, per million.
    let each = (200.0 * 3.0 + 600.0 * 0.30 + 200.0 * 3.75 + 100.0 * 15.0) / 1e6;
    assert!(
        (sonnet.cost_usd - 30.0 * each).abs() < 1e-9,
        "{}",
        sonnet.cost_usd
    );
    assert!((sonnet.saved_usd - 15.0 * 400.0 * 3.0 / 1e6).abs() < 1e-9);
    assert!((sonnet.cache_hit_rate() - 0.6).abs() < 1e-9);

    let by_passes = stats::totals(&pool, 0, stats::By::Passes).await.unwrap();
    let keys: Vec<&str> = by_passes.iter().map(|t| t.key.as_str()).collect();
    assert!(
        keys.contains(&"tool_output=auto") && keys.contains(&""),
        "{keys:?}"
    );
    let by_pass = stats::totals(&pool, 0, stats::By::Pass).await.unwrap();
    assert_eq!(by_pass.len(), 1);
    let tool_output = &by_pass[0];
    assert_eq!(
        (
            tool_output.key.as_str(),
            tool_output.requests,
            tool_output.saved_tokens
        ),
        ("tool_output", 20, 20 * 400)
    );
    // 15 Sonnet rows at $3 and 5 Haiku rows at $1 per million input tokens.
    assert!(
        (tool_output.saved_usd - (15.0 * 400.0 * 3.0 + 5.0 * 400.0 * 1.0) / 1e6).abs() < 1e-9,
        "{}",
        tool_output.saved_usd
    );
    let all: (i64, i64) = by_model
        .iter()
        .fold((0, 0), |(l, h), t| (l + t.cache_lookups, h + t.cache_hits));
    assert_eq!(all, (20, 5));

    let by_hour = stats::totals(&pool, 0, stats::By::Bucket(3_600_000))
        .await
        .unwrap();
    assert_eq!(
        by_hour.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(),
        ["1796130000000", "1796133600000"]
    );
    assert_eq!(
        by_hour[0].requests, 21,
        "the cancelled request, not the token count"
    );
    let late = stats::totals(&pool, 1_796_133_600_000, stats::By::Provider)
        .await
        .unwrap();
    assert_eq!(
        (late.len(), late[0].key.as_str(), late[0].requests),
        (1, "anthropic", 20)
    );

    // A request tried twice has a row per attempt; the totals above counted it once.
    let attempts: Vec<(i64, String, i64)> = sqlx::query(
        "SELECT attempt, outcome, status FROM requests WHERE request_id = $1 ORDER BY attempt",
    )
    .bind("r10".to_owned())
    .fetch_all(&pool)
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get("attempt"), r.get("outcome"), r.get("status")))
    .collect();
    assert_eq!(
        attempts,
        [
            (1, "retried".to_owned(), 529),
            (2, "completed".to_owned(), 200)
        ]
    );

    let row = sqlx::query(
        "SELECT request_id, gateway_key, streamed, latency_ms, dropped, session FROM requests WHERE request_id = $1",
    )
    .bind("r7".to_owned())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        row.get::<Option<String>, _>("gateway_key").as_deref(),
        Some("ci")
    );
    assert_eq!(row.get::<i64, _>("streamed"), 0);
    assert!((row.get::<f64, _>("latency_ms") - 107.0).abs() < 1e-6);
    assert_eq!(
        row.get::<Option<String>, _>("dropped").as_deref(),
        Some("context_management,tools.defer_loading")
    );
    assert_eq!(
        row.get::<Option<String>, _>("session").as_deref(),
        Some("session-1")
    );
}

/// The gateway binary writes a row per request to the ledger at `url`.
async fn gateway_writes_rows(url: &str) {
    let mock = start_mock(MockConfig::default()).await;
    let extra = format!("[ledger]\nurl = \"{url}\"\n");
    let mut gw = Gateway::spawn(&mock_config(&mock.url, "", &extra));
    for stream in [false, true] {
        let body = json!({"model": "gpt-5", "stream": stream, "messages": [{"role": "user", "content": "count me"}]});
        let res = post_json(
            &format!("{}/v1/chat/completions", gw.url),
            body.to_string(),
            &[],
        )
        .await;
        assert_eq!(res.status(), 200);
        let _ = res.text().await.unwrap();
    }
    gw.signal("TERM");
    assert!(
        gw.wait_exit(Duration::from_secs(15)).is_some(),
        "{}",
        gw.stderr()
    );
    let pool = ledger::open(url).await.unwrap();
    let rows =
        sqlx::query("SELECT streamed, input_tokens, output_tokens FROM requests ORDER BY streamed")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(rows.len(), 2, "{}", gw.stderr());
    for (row, streamed) in rows.iter().zip([0, 1]) {
        assert_eq!(row.get::<i64, _>("streamed"), streamed);
        assert!(row.get::<Option<i64>, _>("input_tokens").unwrap() > 0);
        assert!(row.get::<Option<i64>, _>("output_tokens").unwrap() > 0);
    }
}

#[tokio::test]
async fn sqlite_rows_prices_and_totals() {
    let dir = tempfile::tempdir().unwrap();
    rows_prices_and_totals(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_rows_prices_and_totals() {
    rows_prices_and_totals(&fresh_postgres().await).await;
}

#[tokio::test]
async fn sqlite_gateway_writes_rows() {
    let dir = tempfile::tempdir().unwrap();
    gateway_writes_rows(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_gateway_writes_rows() {
    gateway_writes_rows(&fresh_postgres().await).await;
}

/// Virtual keys on each backend: made (only the digest kept) with every setting checked and
/// read back as written, found by digest, listed, revoked, and their spend summed from the
/// priced rows of their requests.
async fn virtual_keys(url: &str) {
    use gateway_core::ledger::keys::{self, NewKey};
    let pool = ledger::open(url).await.unwrap();
    let new = NewKey {
        name: "ci".into(),
        limits: keys::Limits {
            models: vec!["claude-*".into(), "gpt-5*".into()],
            rpm: Some(600),
            tpm: Some(2_000_000),
            budget_day_usd: Some(50.0),
            budget_month_usd: Some(800.5),
            expires_ms: Some(1_900_000_000_000),
            providers: vec!["anthropic".into(), "openai-eu".into()],
            optimize: keys::Overrides {
                tool_output: Some("Light".into()),
                terse: Some("off".into()),
                prune: None,
                squeeze: Some(false),
            },
            guard: Some("block".into()),
        },
    };
    // A bad override or provider name: nothing made.
    for (bad, field) in [
        (
            keys::Limits {
                optimize: keys::Overrides {
                    prune: Some("sometimes".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
            "optimize.prune",
        ),
        (
            keys::Limits {
                providers: vec![" ".into()],
                ..Default::default()
            },
            "providers",
        ),
        (
            keys::Limits {
                guard: Some("sometimes".into()),
                ..Default::default()
            },
            "guard mode",
        ),
    ] {
        let refused = keys::create(
            &pool,
            NewKey {
                name: "bad".into(),
                limits: bad,
            },
            1_796_130_000_000,
        )
        .await;
        assert!(
            matches!(&refused, Err(keys::KeyError::Invalid(m)) if m.contains(field)),
            "{refused:?}"
        );
    }
    let (key, stored) = keys::create(&pool, new.clone(), 1_796_130_000_000)
        .await
        .unwrap();
    assert!(key.starts_with(keys::PREFIX));
    assert!(matches!(
        keys::create(&pool, new, 1_796_130_000_000).await,
        Err(keys::KeyError::Exists(_))
    ));
    let found = keys::find(&pool, &keys::digest(&key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found, stored);
    assert_eq!(found.limits.models, ["claude-*", "gpt-5*"]);
    assert_eq!(found.limits.budget_month_usd, Some(800.5));
    assert_eq!(found.limits.providers, ["anthropic", "openai-eu"]);
    // Modes are kept as the config writes them.
    assert_eq!(found.limits.optimize.tool_output.as_deref(), Some("light"));
    assert_eq!(found.limits.optimize.terse.as_deref(), Some("off"));
    assert_eq!(found.limits.optimize.prune, None);
    assert_eq!(found.limits.optimize.squeeze, Some(false));
    assert!(keys::find(&pool, &keys::digest("tg-vk-nope"))
        .await
        .unwrap()
        .is_none());
    assert!(keys::any_active(&pool, 1_796_130_000_000).await.unwrap());
    assert!(
        !keys::any_active(&pool, 1_900_000_000_001).await.unwrap(),
        "expired"
    );
    let stored_text: Vec<String> = sqlx::query("SELECT digest, hint FROM virtual_keys")
        .fetch_all(&pool)
        .await
        .unwrap()
        .iter()
        .flat_map(|r| [r.get::<String, _>("digest"), r.get::<String, _>("hint")])
        .collect();
    assert!(
        stored_text.iter().all(|t| !t.contains(&key)),
        "the key is not stored"
    );

    // As stored: the providers comma-joined, the overrides as JSON of the passes set.
    let raw = sqlx::query("SELECT providers, optimize FROM virtual_keys WHERE name = 'ci'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(raw.get::<String, _>("providers"), "anthropic,openai-eu");
    let optimize: serde_json::Value =
        serde_json::from_str(&raw.get::<String, _>("optimize")).unwrap();
    assert_eq!(
        optimize,
        json!({"tool_output": "light", "terse": "off", "squeeze": false})
    );
    // A key made without providers or overrides stores NULL for both, read back as any
    // provider and no overrides.
    let (plain, _) = keys::create(
        &pool,
        NewKey {
            name: "plain".into(),
            limits: keys::Limits::default(),
        },
        1_796_130_000_000,
    )
    .await
    .unwrap();
    let plain = keys::find(&pool, &keys::digest(&plain))
        .await
        .unwrap()
        .unwrap();
    assert!(plain.limits.providers.is_empty() && plain.limits.optimize.is_empty());
    let nulls: i64 = sqlx::query(
        "SELECT COUNT(*) AS n FROM virtual_keys WHERE providers IS NULL AND optimize IS NULL",
    )
    .fetch_one(&pool)
    .await
    .unwrap()
    .get("n");
    assert_eq!(nulls, 1);

    // Spend: the priced rows of the key's requests since a time.
    let (ledger, recorder) = Ledger::start(
        pool.clone(),
        Arc::new(MemoryRecorder::new(1)),
        Arc::new(Pricing::bundled()),
    );
    let at = UNIX_EPOCH + Duration::from_secs(1_796_130_000);
    for i in 0..3 {
        recorder.record(Arc::new(record(i, "claude-sonnet-4-5", at)));
    }
    ledger.close().await;
    let pool = ledger::open(url).await.unwrap();
    let spent = keys::spent_since(&pool, "ci", 1_796_130_000_000)
        .await
        .unwrap();
    // The same dollars the ledger's totals give the key.
    let by_key = stats::totals(&pool, 1_796_130_000_000, stats::By::Key)
        .await
        .unwrap();
    let ci = by_key.iter().find(|t| t.key == "ci").unwrap();
    assert_eq!(ci.requests, 3);
    assert!(
        spent > 0.0 && (spent - ci.cost_usd).abs() < 1e-12,
        "{spent} vs {ci:?}"
    );
    assert_eq!(
        keys::spent_since(&pool, "ci", 1_796_130_001_000)
            .await
            .unwrap(),
        0.0
    );

    keys::revoke(&pool, "ci", 1_796_130_500_000).await.unwrap();
    assert!(matches!(
        keys::revoke(&pool, "ci", 1_796_130_600_000).await,
        Err(keys::KeyError::NotFound(_))
    ));
    keys::revoke(&pool, "plain", 1_796_130_500_000)
        .await
        .unwrap();
    let listed = keys::list(&pool).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].name, "ci");
    assert_eq!(listed[0].revoked_ms, Some(1_796_130_500_000));
    assert_eq!(listed[0].limits, found.limits);
    assert!(!keys::any_active(&pool, 1_796_130_600_000).await.unwrap());
}

#[tokio::test]
async fn sqlite_virtual_keys() {
    let dir = tempfile::tempdir().unwrap();
    virtual_keys(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_virtual_keys() {
    virtual_keys(&fresh_postgres().await).await;
}

/// Keys with and without budgets, one after the other on one pool.
async fn keys_with_and_without_budgets(url: &str) {
    use gateway_core::ledger::keys::{self, NewKey};
    let pool = ledger::open(url).await.unwrap();
    // A key without budgets, then one with: a NULL budget must not fix the parameter's type
    // for the next key (PostgreSQL refused the second once the statement was kept).
    for (name, budget) in [("plain", None), ("budgeted", Some(5.5)), ("plain2", None)] {
        let limits = keys::Limits {
            budget_day_usd: budget,
            ..Default::default()
        };
        keys::create(
            &pool,
            NewKey {
                name: name.into(),
                limits,
            },
            1_796_130_000_000,
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_eq!(keys::list(&pool).await.unwrap().len(), 3);
}

#[tokio::test]
async fn sqlite_keys_with_and_without_budgets() {
    let dir = tempfile::tempdir().unwrap();
    keys_with_and_without_budgets(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_keys_with_and_without_budgets() {
    keys_with_and_without_budgets(&fresh_postgres().await).await;
}

/// Elided outputs written once per id, read back by id within their time, gone after.
async fn originals_kept(url: &str) {
    use gateway_core::ledger::originals::{delete_older_than, Kept, OriginalsDb};
    let pool = ledger::open(url).await.unwrap();
    let db = OriginalsDb::start(pool.clone(), std::time::Duration::from_secs(3600), u64::MAX);
    let text: std::sync::Arc<str> = "line\n".repeat(500).into();
    for _ in 0..3 {
        db.keep(Kept {
            id: "0123456789abcdef0123".into(),
            pass: "tool_output",
            original: text.clone(),
        });
    }
    let mut found = None;
    for _ in 0..100 {
        found = db.get("0123456789abcdef0123").await.unwrap();
        if found.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(found.as_deref(), Some(&*text));
    assert_eq!(db.get("ffffffffffffffffffff").await.unwrap(), None);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM originals")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 1);
    // Past its time (a zero keep deletes everything kept before now).
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert_eq!(
        delete_older_than(&pool, std::time::Duration::ZERO)
            .await
            .unwrap(),
        1
    );
    assert_eq!(db.get("0123456789abcdef0123").await.unwrap(), None);
}

/// A full store deletes its oldest outputs first and keeps the newest within the bound.
async fn originals_bounded(url: &str) {
    use gateway_core::ledger::originals::{Kept, OriginalsDb};
    let pool = ledger::open(url).await.unwrap();
    // Room for four outputs of 1,000 bytes; twelve are written, one after another.
    let db = OriginalsDb::start(pool.clone(), std::time::Duration::from_secs(3600), 4_000);
    let id = |i: usize| format!("{i:020x}");
    for i in 0..12 {
        db.keep(Kept {
            id: id(i),
            pass: "tool_output",
            original: format!("{i:04}").repeat(250).into(),
        });
        // Distinct times, so "oldest" is the order they were written in.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    // The writer evicts right after the write that passes the bound: wait for both.
    let (mut newest, mut bytes) = (None, i64::MAX);
    for _ in 0..200 {
        newest = db.get(&id(11)).await.unwrap();
        bytes = sqlx::query_scalar("SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM originals")
            .fetch_one(&pool)
            .await
            .unwrap();
        if newest.is_some() && bytes <= 4_000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(newest.as_deref(), Some(&*"0011".repeat(250)));
    assert!(bytes <= 4_000, "{bytes} bytes kept over a bound of 4,000");
    assert_eq!(
        db.get(&id(0)).await.unwrap(),
        None,
        "the oldest is gone first"
    );
    assert!(db.get(&id(10)).await.unwrap().is_some(), "the newest stay");
}

#[tokio::test]
async fn sqlite_originals_bounded() {
    let dir = tempfile::tempdir().unwrap();
    originals_bounded(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_originals_bounded() {
    originals_bounded(&fresh_postgres().await).await;
}

#[tokio::test]
async fn sqlite_originals_kept() {
    let dir = tempfile::tempdir().unwrap();
    originals_kept(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_originals_kept() {
    originals_kept(&fresh_postgres().await).await;
}

/// Sessions on each backend: the cache-break column written and counted by cause, and the
/// holdout comparison from held-out and optimized rows of one model.
async fn sessions_and_holdout(url: &str) {
    use gateway_core::sessions::Cause;
    let pool = ledger::open(url).await.unwrap();
    let (ledger, recorder) = Ledger::start(
        pool,
        Arc::new(MemoryRecorder::new(1)),
        Arc::new(Pricing::bundled()),
    );
    let base = UNIX_EPOCH + Duration::from_secs(1_796_130_000);
    // Eight sessions of three turns: the first four held out, sending 1,000 tokens a
    // turn; the others optimized, the passes taking 400 of the same 1,000.
    for s in 0..8u64 {
        for turn in 0..3u64 {
            let i = s * 3 + turn;
            let held = s < 4;
            let mut r = record(i, "claude-sonnet-4-5", base + Duration::from_secs(i));
            r.status = 200;
            r.attempt = 1;
            r.cache = None;
            r.session = Some(format!("s{s}"));
            r.usage = Some(Usage {
                input: if held { 1000 } else { 600 },
                output: 100,
                cache_read: 0,
                cache_write: 0,
                reasoning: 0,
            });
            r.applied = if held { "holdout" } else { "tool_output=auto" }.into();
            r.saved_tokens = if held { 0 } else { 400 };
            r.passes = Vec::new();
            r.cache_break = match (s, turn) {
                (1, 2) => Some(Cause::Client),
                (5, 1) => Some(Cause::Provider),
                (5, 2) => Some(Cause::Gateway),
                _ => None,
            };
            recorder.record(Arc::new(r));
        }
    }
    ledger.close().await;

    let pool = ledger::open(url).await.unwrap();
    let report = stats::sessions(&pool, 0, 5).await.unwrap();
    assert_eq!(report.session_count, 8);
    let listed: Vec<&str> = report.sessions.iter().map(|s| s.session.as_str()).collect();
    assert_eq!(
        listed,
        ["s7", "s6", "s5", "s4", "s3"],
        "newest first, limited"
    );
    let s5 = &report.sessions[2];
    assert_eq!(
        (s5.requests, s5.input_tokens, s5.saved_tokens),
        (3, 1800, 1200)
    );
    assert_eq!(
        s5.breaks,
        stats::Breaks {
            gateway: 1,
            client: 0,
            provider: 1
        }
    );
    assert!(!s5.held_out);
    assert!(report.sessions[4].held_out, "s3 was held out");
    assert_eq!(
        report.breaks,
        stats::Breaks {
            gateway: 1,
            client: 1,
            provider: 1
        }
    );
    let h = &report.holdout;
    assert_eq!(h.models, ["claude-sonnet-4-5"]);
    assert_eq!((h.held_out.sessions, h.held_out.requests), (4, 12));
    assert_eq!((h.optimized.sessions, h.optimized.requests), (4, 12));
    // Both sides sent 12,000 input-equivalent tokens; the optimized side paid for 7,200.
    assert_eq!((h.held_out.tokens, h.optimized.tokens), (12_000, 12_000));
    let net = h.net_saved_usd.unwrap();
    assert!(
        (net - (h.held_out.cost_usd - h.optimized.cost_usd)).abs() < 1e-9,
        "{h:?}"
    );
    assert!(net > 0.0, "{h:?}");
    let cached: Option<String> =
        sqlx::query_scalar("SELECT cache_break FROM requests WHERE request_id = 'r17'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(cached.as_deref(), Some("gateway"));
}

#[tokio::test]
async fn sqlite_sessions_and_holdout() {
    let dir = tempfile::tempdir().unwrap();
    sessions_and_holdout(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_sessions_and_holdout() {
    sessions_and_holdout(&fresh_postgres().await).await;
}

/// The Guard page's figures on each backend: the requests whose secrets were replaced in
/// the window counted once (not their retried attempts, nor rows before the window), the
/// secrets summed by kind from the column's `kind:count` lists, the latest requests newest
/// first and limited, and the column in the Requests page's search rows.
async fn guard_figures(url: &str) {
    use gateway_core::guard::SecretKind;
    use gateway_core::ledger::{guard_stats, search};
    let pool = ledger::open(url).await.unwrap();
    let (ledger, recorder) = Ledger::start(
        pool,
        Arc::new(MemoryRecorder::new(1)),
        Arc::new(Pricing::bundled()),
    );
    let base = UNIX_EPOCH + Duration::from_secs(1_796_130_000);
    let github = SecretKind::GithubToken.as_str();
    let env = SecretKind::EnvSecret.as_str();
    let secrets = [
        // Yesterday's: outside the window.
        (-86_400i64, format!("{github}:5")),
        (10, format!("{github}:1,{env}:2")),
        (20, String::new()),
        (30, format!("{env}:1")),
        (40, format!("{github}:2")),
        // Written by some other version: nothing readable, not counted.
        (50, "???".to_owned()),
    ];
    for (i, (secs, column)) in secrets.iter().enumerate() {
        let at = if *secs < 0 {
            base - Duration::from_secs(secs.unsigned_abs())
        } else {
            base + Duration::from_secs(*secs as u64)
        };
        let mut r = record(100 + i as u64, "claude-sonnet-4-5", at);
        r.status = 200;
        r.attempt = 1;
        r.secrets = column.clone();
        if i == 4 {
            // Tried twice: the failed attempt carries the same secrets and counts nothing.
            recorder.record(Arc::new(RequestRecord {
                started_at: at - Duration::from_secs(1),
                ..retried_attempt(&r)
            }));
            r.attempt = 2;
        }
        recorder.record(Arc::new(r));
    }
    ledger.close().await;

    let pool = ledger::open(url).await.unwrap();
    let since = gateway_core::clock::unix_ms(base);
    let report = guard_stats::report(&pool, since, 2).await.unwrap();
    assert_eq!(report.since_ms, since);
    assert_eq!(report.requests, 3);
    assert_eq!(
        report
            .by_kind
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect::<Vec<_>>(),
        [(env, 3), (github, 3)]
    );
    assert_eq!(report.secrets(), 6);
    let recent: Vec<(&str, i64)> = report
        .recent
        .iter()
        .map(|f| (f.request_id.as_str(), f.ts_ms - since))
        .collect();
    assert_eq!(
        recent,
        [("r105", 50_000), ("r104", 40_000)],
        "newest first, limited"
    );
    assert_eq!(
        report.recent[1].model_requested.as_deref(),
        Some("claude-sonnet-4-5")
    );
    assert_eq!(report.recent[1].kinds.get(github), Some(&2));
    assert!(
        report.recent[0].kinds.is_empty(),
        "an unreadable list lists no kind"
    );

    // The whole history, and a window with nothing in it.
    let all = guard_stats::report(&pool, 0, guard_stats::RECENT)
        .await
        .unwrap();
    assert_eq!(
        (all.requests, all.by_kind[github], all.recent.len()),
        (4, 8, 5)
    );
    let none = guard_stats::report(&pool, since + 3_600_000, 20)
        .await
        .unwrap();
    assert_eq!(
        (none.requests, none.by_kind.len(), none.recent.len()),
        (0, 0, 0)
    );

    // The Requests page's rows carry the column: NULL when the guard replaced nothing.
    let rows = search::search(
        &pool,
        &search::Filter {
            since_ms: since,
            limit: 10,
            ..search::Filter::default()
        },
    )
    .await
    .unwrap();
    let column = |id: &str| {
        rows.iter()
            .find(|r| r.id == id)
            .map(|r| r.secrets.clone())
            .unwrap()
    };
    assert_eq!(
        column("r101").as_deref(),
        Some("github_token:1,env_secret:2")
    );
    assert_eq!(column("r102"), None);
    let (attempts, _) = search::by_id(&pool, "r104").await.unwrap();
    assert_eq!(attempts.len(), 2);
    assert!(attempts
        .iter()
        .all(|a| a.secrets.as_deref() == Some("github_token:2")));
}

#[tokio::test]
async fn sqlite_guard_figures() {
    let dir = tempfile::tempdir().unwrap();
    guard_figures(&fresh_sqlite(&dir)).await;
}

#[tokio::test]
async fn postgres_guard_figures() {
    guard_figures(&fresh_postgres().await).await;
}

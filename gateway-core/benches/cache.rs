//! Response-cache lookups on a full cache (4,096 live entries of one model, so the model
//! filter rules nothing out), in the cases seed 000 measured for its similar cache:
//!
//! - `similar/miss`: 13 words against 13-word entries sharing none — every entry reaches
//!   the signature test;
//! - `similar/hit`: 14 words, a near duplicate of one entry;
//! - `similar/size_pruned`: 10 words against 13-word entries (10/13 < 0.9);
//! - `similar/gate`: "continue", under the minimum words: refused before any scan;
//! - `exact/hit`: the exact path on the same cache.
//!
//! Each lookup is what the gateway does per request once the body is read: the exact key
//! probe, then the similar scan. `prepare/*` is the other half, reading a short chat
//! request's top level and words. Run: `cargo bench -p gateway-core --bench cache`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use gateway_core::cache::{self, Prepared, ResponseCache, Rule, Settings};
use gateway_core::dialect::Dialect;
use http::HeaderMap;

const ENTRIES: usize = 4096;

/// A deterministic word: entries use words 0..; queries that must share nothing use
/// words from far above.
fn word(n: usize) -> String {
    format!("w{:x}z", n.wrapping_mul(2_654_435_761) % 1_000_003)
}

fn body(words: &[String]) -> String {
    serde_json::json!({
        "model": "gpt-5",
        "temperature": 0,
        "messages": [{"role": "user", "content": words.join(" ")}],
    })
    .to_string()
}

fn prepare(cache: &ResponseCache, body: &str) -> Option<Prepared> {
    let req = cache::Request {
        provider: "openai",
        model: "gpt-5",
        dialect: Dialect::OpenAiChat,
        gateway_key: None,
        credential: None,
        temperature: Some(0.0),
        body: body.as_bytes(),
    };
    cache.prepare(&req, &HeaderMap::new())
}

fn full_cache() -> (ResponseCache, Vec<Vec<String>>) {
    let mut rule = Rule::new("gpt-5").unwrap();
    rule.similar = Some(true);
    let settings = Settings {
        rules: vec![rule],
        max_entries: ENTRIES,
        max_bytes: 256 * 1024 * 1024,
        ..Settings::default()
    };
    let cache = ResponseCache::new(settings);
    let mut texts = Vec::new();
    for e in 0..ENTRIES {
        let words: Vec<String> = (0..13).map(|i| word(e * 13 + i)).collect();
        let p = prepare(&cache, &body(&words)).unwrap();
        cache.put(
            &p,
            cache::whole_entry(
                Bytes::from_static(b"{\"answer\":true}"),
                Some("gpt-5".into()),
                None,
                Duration::from_secs(3600),
            ),
        );
        texts.push(words);
    }
    assert_eq!(cache.len(), ENTRIES);
    (cache, texts)
}

fn lookups(c: &mut Criterion) {
    let (cache, texts) = full_cache();
    let now = gateway_core::clock::now_ms();

    let unrelated: Vec<String> = (0..13).map(|i| word(10_000_000 + i)).collect();
    let miss = prepare(&cache, &body(&unrelated)).unwrap();
    let mut near = texts[1234].clone();
    near.push(word(20_000_000));
    let hit = prepare(&cache, &body(&near)).unwrap();
    let short: Vec<String> = (0..10).map(|i| word(30_000_000 + i)).collect();
    let pruned = prepare(&cache, &body(&short)).unwrap();
    let exact = prepare(&cache, &body(&texts[77])).unwrap();

    // The answers the timings stand for.
    assert!(cache.get(&miss, now).is_none());
    let found = cache.get(&hit, now).unwrap();
    assert_eq!(found.status, cache::Status::Similar);
    assert!(cache.get(&pruned, now).is_none());
    assert_eq!(cache.get(&exact, now).unwrap().status, cache::Status::Hit);
    let gate_body = body(&["continue".to_owned()]);
    let mut no_temp: serde_json::Value = serde_json::from_str(&gate_body).unwrap();
    no_temp.as_object_mut().unwrap().remove("temperature");
    let gate_body = no_temp.to_string();
    let gate = |body: &str| {
        let req = cache::Request {
            provider: "openai",
            model: "gpt-5",
            dialect: Dialect::OpenAiChat,
            gateway_key: None,
            credential: None,
            temperature: None,
            body: body.as_bytes(),
        };
        cache.prepare(&req, &HeaderMap::new())
    };
    assert!(gate(&gate_body).is_none(), "under the words gate");

    let mut group = c.benchmark_group("similar");
    group.bench_function("miss", |b| b.iter(|| cache.get(black_box(&miss), now)));
    group.bench_function("hit", |b| b.iter(|| cache.get(black_box(&hit), now)));
    group.bench_function("size_pruned", |b| {
        b.iter(|| cache.get(black_box(&pruned), now))
    });
    group.bench_function("gate", |b| b.iter(|| gate(black_box(&gate_body))));
    group.finish();
    c.bench_function("exact/hit", |b| {
        b.iter(|| cache.get(black_box(&exact), now))
    });
    let near_body = body(&near);
    c.bench_function("prepare/short_chat_request", |b| {
        b.iter(|| prepare(&cache, black_box(&near_body)))
    });
}

criterion_group!(benches, lookups);
criterion_main!(benches);

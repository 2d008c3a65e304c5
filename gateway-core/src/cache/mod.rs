//! The response cache: an answer the provider gave once is replayed, byte for byte, to the
//! same request — as JSON or as the same SSE stream, in the client's dialect, since what is
//! stored is what the client received.
//!
//! - **Exact**: the key is a BLAKE3 hash over the provider, the served model, the client's
//!   dialect, the gateway key, and every top-level field of the request as it goes
//!   upstream (after the optimizer), in sorted order, except the fields listed in
//!   [`IGNORED`] that name the caller rather than shape the answer. Only deterministic
//!   requests are cached by default (`temperature` 0); a model rule can cache all of a
//!   model's requests (side calls such as title generation) or none.
//! - **Similar** (opt-in per model): a request of the same shape whose words score at
//!   least the threshold against a stored one gets that answer ([`similar`]).
//!
//! Bounded by entries and bytes (least recently used goes first), each entry with a TTL;
//! persisted to the ledger's database when there is one ([`persist`]), so both survive a
//! restart. `cache-control: no-cache` skips the lookup (the fresh answer is stored);
//! `no-store` skips the cache altogether.

pub mod persist;
pub mod similar;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use globset::{Glob, GlobMatcher};
use http::HeaderMap;
use lru::LruCache;
use memchr::memmem;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::dialect::Dialect;
use crate::usage::Usage;
use similar::Words;

pub type Key = [u8; 32];

/// Top-level request fields left out of the key: who is asking, not what.
pub const IGNORED: &[&str] = &[
    "metadata",
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
];

/// Top-level fields whose text the similar cache compares by words; every other field
/// must match exactly (it is part of the request's shape).
const TEXT_FIELDS: &[&str] = &["messages", "system", "input", "instructions"];

/// Keys whose string values are text to compare, at any depth of a text field.
const TEXT_KEYS: &[&str] = &[
    "content",
    "text",
    "system",
    "instructions",
    "input",
    "output",
    "arguments",
    "thinking",
];

/// Which requests of a model the exact cache answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExactMode {
    Off,
    /// Requests with `temperature` 0.
    Deterministic,
    /// Every request (for models used only for side calls).
    Always,
}

impl ExactMode {
    pub fn parse(text: &str) -> Result<ExactMode, String> {
        match text {
            "off" => Ok(ExactMode::Off),
            "deterministic" => Ok(ExactMode::Deterministic),
            "always" => Ok(ExactMode::Always),
            other => Err(format!(
                "{other:?} is not a cache mode: use off, deterministic or always"
            )),
        }
    }
}

/// How one model's answers are cached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    pub exact: ExactMode,
    pub similar: bool,
    pub ttl: Duration,
}

/// A `[[cache.models]]` rule: the settings it overrides for the models it matches.
#[derive(Clone, Debug)]
pub struct Rule {
    matcher: GlobMatcher,
    pub exact: Option<ExactMode>,
    pub similar: Option<bool>,
    pub ttl: Option<Duration>,
}

impl Rule {
    pub fn new(pattern: &str) -> Result<Rule, String> {
        let glob =
            Glob::new(pattern).map_err(|e| format!("{pattern:?} is not a valid glob: {e}"))?;
        Ok(Rule {
            matcher: glob.compile_matcher(),
            exact: None,
            similar: None,
            ttl: None,
        })
    }
}

/// The validated `[cache]` section.
#[derive(Clone, Debug)]
pub struct Settings {
    pub enabled: bool,
    pub defaults: Policy,
    pub rules: Vec<Rule>,
    pub max_entries: usize,
    pub max_bytes: usize,
    /// Keep entries in the ledger's database across restarts.
    pub persist: bool,
    /// The similar cache's threshold and its gate: requests with fewer distinct words
    /// ("continue", "yes") are never answered by similarity.
    pub similarity: f64,
    pub min_words: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            defaults: Policy {
                exact: ExactMode::Deterministic,
                similar: false,
                ttl: Duration::from_secs(3600),
            },
            rules: Vec::new(),
            max_entries: 4096,
            max_bytes: 64 * 1024 * 1024,
            persist: true,
            similarity: 0.9,
            min_words: 8,
        }
    }
}

impl Settings {
    /// The defaults, then every matching rule in order.
    pub fn policy(&self, model: &str) -> Policy {
        let mut p = self.defaults;
        for rule in self.rules.iter().filter(|r| r.matcher.is_match(model)) {
            p.exact = rule.exact.unwrap_or(p.exact);
            p.similar = rule.similar.unwrap_or(p.similar);
            p.ttl = rule.ttl.unwrap_or(p.ttl);
        }
        p
    }

    /// One answer may take at most this much of the cache.
    fn max_entry_bytes(&self) -> usize {
        (self.max_bytes / 4).min(8 * 1024 * 1024)
    }
}

/// What a request is, for the cache.
pub struct Request<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub dialect: Dialect,
    pub gateway_key: Option<&'a str>,
    /// The client's own credential, when it is forwarded to the provider: one login never
    /// gets another's answers.
    pub credential: Option<&'a [u8]>,
    /// The client's `temperature`, when it sent a number.
    pub temperature: Option<f64>,
    /// The body as it goes upstream, after the optimizer.
    pub body: &'a [u8],
}

/// A request the cache deals with: its key, its words when the similar cache applies,
/// and whether to look (not under `no-cache`).
#[derive(Clone, Debug)]
pub struct Prepared {
    pub key: Key,
    pub similar: Option<(u64, Words)>,
    pub ttl: Duration,
    pub lookup: bool,
}

/// How a request went through the cache (plain data, so it lives with the record).
pub use crate::record::CacheStatus as Status;

/// A stored answer: the bytes the client received and what the provider reported.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub body: Bytes,
    pub streamed: bool,
    pub model: String,
    pub usage: Option<Usage>,
    pub created_ms: i64,
    pub expires_ms: i64,
}

impl Entry {
    fn size(&self) -> usize {
        self.body.len() + self.model.len() + 128
    }
}

pub struct Hit {
    pub entry: Arc<Entry>,
    pub status: Status,
    pub similarity: Option<f64>,
}

struct Stored {
    entry: Arc<Entry>,
    /// Its slot in the similar index, when it is there.
    slot: Option<usize>,
}

struct Inner {
    lru: LruCache<Key, Stored>,
    bytes: usize,
    similar: similar::Index,
}

pub struct ResponseCache {
    pub settings: Settings,
    inner: Mutex<Inner>,
    /// Where stored and evicted entries go to be persisted, once a database is attached.
    sink: OnceLock<mpsc::Sender<persist::Op>>,
}

use crate::clock::now_ms;

fn cache_control(headers: &HeaderMap) -> (bool, bool) {
    let mut no_cache = false;
    let mut no_store = false;
    for value in headers.get_all(http::header::CACHE_CONTROL) {
        for directive in value.to_str().unwrap_or("").split(',') {
            match directive.trim().to_ascii_lowercase().as_str() {
                "no-cache" => no_cache = true,
                "no-store" => no_store = true,
                _ => {}
            }
        }
    }
    (no_cache, no_store)
}

impl ResponseCache {
    pub fn new(settings: Settings) -> ResponseCache {
        ResponseCache {
            settings,
            inner: Mutex::new(Inner {
                lru: LruCache::unbounded(),
                bytes: 0,
                similar: similar::Index::default(),
            }),
            sink: OnceLock::new(),
        }
    }

    /// Whether this request is the cache's business, and its key if so. Reads the body's
    /// top level only when the model's policy could cache it.
    pub fn prepare(&self, req: &Request<'_>, headers: &HeaderMap) -> Option<Prepared> {
        if !self.settings.enabled {
            return None;
        }
        let policy = self.settings.policy(req.model);
        let eligible = match policy.exact {
            ExactMode::Off => false,
            ExactMode::Deterministic => req.temperature == Some(0.0),
            ExactMode::Always => true,
        };
        if !eligible && !policy.similar {
            return None;
        }
        let (no_cache, no_store) = cache_control(headers);
        if no_store {
            return None;
        }
        let fields: BTreeMap<String, &RawValue> = serde_json::from_slice(req.body).ok()?;
        let key = exact_key(req, &fields);
        let similar = policy
            .similar
            .then(|| similar_of(req, &fields))
            .flatten()
            .filter(|(_, words)| words.len() >= self.settings.min_words);
        if !eligible && similar.is_none() {
            return None;
        }
        Some(Prepared {
            key,
            similar,
            ttl: policy.ttl,
            lookup: !no_cache,
        })
    }

    /// The stored answer for `p`: the exact one, else the closest similar one.
    pub fn get(&self, p: &Prepared, now_ms: i64) -> Option<Hit> {
        if !p.lookup {
            return None;
        }
        let mut inner = self.inner.lock().ok()?;
        if let Some(hit) = inner.live(&p.key, now_ms) {
            return Some(Hit {
                entry: hit,
                status: Status::Hit,
                similarity: None,
            });
        }
        let (shape, words) = p.similar.as_ref()?;
        let found = inner
            .similar
            .find(*shape, words, self.settings.similarity, now_ms)?;
        let entry = inner.live(&found.key, now_ms)?;
        Some(Hit {
            entry,
            status: Status::Similar,
            similarity: Some(found.score),
        })
    }

    /// Stores the answer to `p`.
    pub fn put(&self, p: &Prepared, entry: Entry) {
        let entry = Arc::new(entry);
        self.insert(p.key, entry.clone(), p.similar.clone());
        if let Some(sink) = self.sink.get() {
            let _ = sink.try_send(persist::Op::Put {
                key: p.key,
                entry,
                similar: p.similar.clone(),
            });
        }
    }

    /// Adds an entry, evicting the least recently used ones past the bounds.
    fn insert(&self, key: Key, entry: Arc<Entry>, similar: Option<(u64, Words)>) {
        let size = entry.size();
        if size > self.settings.max_entry_bytes() {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        inner.remove(&key);
        let slot =
            similar.map(|(shape, words)| inner.similar.push(shape, &words, entry.expires_ms, key));
        inner.bytes += size;
        inner.lru.put(key, Stored { entry, slot });
        let mut evicted = Vec::new();
        while inner.lru.len() > self.settings.max_entries || inner.bytes > self.settings.max_bytes {
            let Some((old, _)) = inner.lru.peek_lru() else {
                break;
            };
            let old = *old;
            inner.remove(&old);
            evicted.push(old);
        }
        metrics::gauge!("trimgate_cache_entries").set(inner.lru.len() as f64);
        metrics::gauge!("trimgate_cache_bytes").set(inner.bytes as f64);
        drop(inner);
        if let Some(sink) = self.sink.get() {
            for key in evicted {
                let _ = sink.try_send(persist::Op::Delete { key });
            }
        }
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.lru.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the stored answers take, as the bound counts it.
    pub fn bytes(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.bytes)
    }
}

impl Inner {
    /// The entry under `key` if it has not expired (an expired one is dropped).
    fn live(&mut self, key: &Key, now_ms: i64) -> Option<Arc<Entry>> {
        let stored = self.lru.get(key)?;
        if stored.entry.expires_ms > now_ms {
            return Some(stored.entry.clone());
        }
        self.remove(key);
        None
    }

    fn remove(&mut self, key: &Key) {
        let Some(stored) = self.lru.pop(key) else {
            return;
        };
        self.bytes = self.bytes.saturating_sub(stored.entry.size());
        if let Some(slot) = stored.slot {
            // The index's last entry moved into the freed slot: point its owner there.
            if let Some(moved) = self.similar.swap_remove(slot) {
                if let Some(s) = self.lru.peek_mut(&moved) {
                    s.slot = Some(slot);
                }
            }
        }
    }
}

fn hash_identity(h: &mut blake3::Hasher, tag: &str, req: &Request<'_>) {
    for part in [
        tag,
        req.provider,
        req.model,
        req.dialect.as_str(),
        req.gateway_key.unwrap_or(""),
    ] {
        h.update(part.as_bytes());
        h.update(&[0]);
    }
    h.update(req.credential.unwrap_or_default());
    h.update(&[0]);
}

/// The exact key: who serves it, then every field that shapes the answer, sorted.
fn exact_key(req: &Request<'_>, fields: &BTreeMap<String, &RawValue>) -> Key {
    let mut h = blake3::Hasher::new();
    hash_identity(&mut h, "trimgate-cache/1", req);
    for (name, value) in fields {
        if name == "model" || IGNORED.contains(&name.as_str()) {
            continue;
        }
        h.update(name.as_bytes());
        h.update(&[0]);
        h.update(value.get().as_bytes());
        h.update(&[0]);
    }
    *h.finalize().as_bytes()
}

/// The request's shape (every field but the text, plus the sequence of roles) and the
/// words of its text; `None` when the text fields cannot be read.
fn similar_of(req: &Request<'_>, fields: &BTreeMap<String, &RawValue>) -> Option<(u64, Words)> {
    let mut h = blake3::Hasher::new();
    hash_identity(&mut h, "trimgate-similar/1", req);
    let mut texts: Vec<String> = Vec::new();
    for (name, value) in fields {
        if name == "model" || IGNORED.contains(&name.as_str()) {
            continue;
        }
        h.update(name.as_bytes());
        h.update(&[0]);
        if TEXT_FIELDS.contains(&name.as_str()) {
            let v: Value = serde_json::from_str(value.get()).ok()?;
            // The roles in order: a longer conversation is another shape.
            if let Value::Array(items) = &v {
                for item in items {
                    let role = item
                        .get("role")
                        .or_else(|| item.get("type"))
                        .and_then(Value::as_str)
                        .unwrap_or("-");
                    h.update(role.as_bytes());
                    h.update(&[1]);
                }
            }
            collect_text(&v, true, &mut texts);
        } else {
            h.update(value.get().as_bytes());
        }
        h.update(&[0]);
    }
    let shape = u64::from_le_bytes(h.finalize().as_bytes()[..8].try_into().ok()?);
    Some((shape, Words::of(texts.iter().map(String::as_str))))
}

fn collect_text(v: &Value, textual: bool, out: &mut Vec<String>) {
    match v {
        Value::String(s) if textual => out.push(s.clone()),
        Value::Array(items) => {
            for item in items {
                collect_text(item, textual, out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                collect_text(item, TEXT_KEYS.contains(&k.as_str()), out);
            }
        }
        _ => {}
    }
}

/// Whether a captured stream ended the way a complete answer ends, with no error in it.
pub fn stream_completed(dialect: Dialect, body: &[u8]) -> bool {
    let has = |needle: &[u8]| memmem::find(body, needle).is_some();
    match dialect {
        Dialect::AnthropicMessages => has(b"event: message_stop") && !has(b"event: error"),
        Dialect::OpenAiResponses => {
            has(b"\"type\":\"response.completed\"") && !has(b"\"type\":\"error\"")
        }
        Dialect::OpenAiChat => has(b"data: [DONE]") && !has(b"data: {\"error\""),
        // Gemini's stream just ends; its last frame names why.
        Dialect::Gemini => has(b"\"finishReason\"") && !has(b"data: {\"error\""),
    }
}

/// A streamed answer being copied for the cache as it goes to the client.
pub struct Capture {
    cache: Arc<ResponseCache>,
    prepared: Prepared,
    buf: Vec<u8>,
    /// Set when the answer outgrew what one entry may hold.
    overflowed: bool,
}

impl Capture {
    pub fn new(cache: Arc<ResponseCache>, prepared: Prepared) -> Capture {
        Capture {
            cache,
            prepared,
            buf: Vec::new(),
            overflowed: false,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if self.overflowed {
            return;
        }
        if self.buf.len() + bytes.len() > self.cache.settings.max_entry_bytes() {
            self.overflowed = true;
            self.buf = Vec::new();
            return;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The stream ended normally: store it if it is a complete answer.
    pub fn finish(self, dialect: Dialect, usage: Option<Usage>, model: Option<String>) {
        if self.overflowed || !stream_completed(dialect, &self.buf) {
            return;
        }
        let now = now_ms();
        let entry = Entry {
            body: Bytes::from(self.buf),
            streamed: true,
            model: model.unwrap_or_default(),
            usage,
            created_ms: now,
            expires_ms: now.saturating_add(self.prepared.ttl.as_millis() as i64),
        };
        self.cache.put(&self.prepared, entry);
    }
}

/// An entry for a whole (non-streamed) answer.
pub fn whole_entry(
    body: Bytes,
    model: Option<String>,
    usage: Option<Usage>,
    ttl: Duration,
) -> Entry {
    let now = now_ms();
    Entry {
        body,
        streamed: false,
        model: model.unwrap_or_default(),
        usage,
        created_ms: now,
        expires_ms: now.saturating_add(ttl.as_millis() as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(body: &'a [u8], model: &'a str, temperature: Option<f64>) -> Request<'a> {
        Request {
            provider: "p",
            model,
            dialect: Dialect::OpenAiChat,
            gateway_key: None,
            credential: None,
            temperature,
            body,
        }
    }

    fn entry(text: &str) -> Entry {
        whole_entry(
            Bytes::from(text.to_owned()),
            Some("m".into()),
            None,
            Duration::from_secs(60),
        )
    }

    #[test]
    fn only_deterministic_requests_by_default_and_rules_override() {
        let mut settings = Settings::default();
        let mut rule = Rule::new("*haiku*").unwrap();
        rule.exact = Some(ExactMode::Always);
        settings.rules.push(rule);
        let cache = ResponseCache::new(settings);
        let h = HeaderMap::new();
        let body = br#"{"model":"m","messages":[]}"#;
        assert!(cache.prepare(&req(body, "gpt-x", Some(0.7)), &h).is_none());
        assert!(cache.prepare(&req(body, "gpt-x", None), &h).is_none());
        assert!(cache.prepare(&req(body, "gpt-x", Some(0.0)), &h).is_some());
        assert!(cache
            .prepare(&req(body, "claude-haiku-4-5", Some(1.0)), &h)
            .is_some());
    }

    #[test]
    fn key_covers_every_field_but_the_callers_identity() {
        let cache = ResponseCache::new(Settings::default());
        let h = HeaderMap::new();
        let key = |body: &[u8], model: &str| {
            cache
                .prepare(&req(body, model, Some(0.0)), &h)
                .map(|p| p.key)
                .unwrap()
        };
        let a = key(
            br#"{"model":"a","temperature":0,"messages":[{"role":"user","content":"hi"}]}"#,
            "m",
        );
        // Field order, the client's model name and who is asking do not matter…
        assert_eq!(a, key(br#"{"messages":[{"role":"user","content":"hi"}],"user":"u1","temperature":0,"model":"b","metadata":{"user_id":"x"}}"#, "m"));
        // …the served model, any other field and the text do.
        assert_ne!(
            a,
            key(
                br#"{"model":"a","temperature":0,"messages":[{"role":"user","content":"hi"}]}"#,
                "m2"
            )
        );
        assert_ne!(a, key(br#"{"model":"a","temperature":0,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#, "m"));
        assert_ne!(a, key(br#"{"model":"a","temperature":0,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#, "m"));
        assert_ne!(
            a,
            key(
                br#"{"model":"a","temperature":0,"messages":[{"role":"user","content":"hi!"}]}"#,
                "m"
            )
        );
    }

    #[test]
    fn no_cache_skips_the_lookup_and_no_store_skips_the_cache() {
        let cache = ResponseCache::new(Settings::default());
        let body = br#"{"model":"m","temperature":0,"messages":[]}"#;
        let mut h = HeaderMap::new();
        let p = cache.prepare(&req(body, "m", Some(0.0)), &h).unwrap();
        cache.put(&p, entry("answer"));
        assert_eq!(cache.get(&p, now_ms()).unwrap().entry.body, "answer");
        h.insert(http::header::CACHE_CONTROL, "no-cache".parse().unwrap());
        let p2 = cache.prepare(&req(body, "m", Some(0.0)), &h).unwrap();
        assert!(!p2.lookup && cache.get(&p2, now_ms()).is_none());
        h.insert(
            http::header::CACHE_CONTROL,
            "max-age=0, No-Store".parse().unwrap(),
        );
        assert!(cache.prepare(&req(body, "m", Some(0.0)), &h).is_none());
    }

    #[test]
    fn bounded_by_entries_and_bytes_and_entries_expire() {
        let settings = Settings {
            max_entries: 3,
            max_bytes: 4 * 1024,
            ..Settings::default()
        };
        let cache = ResponseCache::new(settings);
        let h = HeaderMap::new();
        let prepared: Vec<Prepared> = (0..5)
            .map(|i| {
                let body = format!(r#"{{"model":"m","temperature":0,"n":{i}}}"#);
                cache
                    .prepare(&req(body.as_bytes(), "m", Some(0.0)), &h)
                    .unwrap()
            })
            .collect();
        for p in &prepared {
            cache.put(p, entry("x"));
        }
        assert_eq!(cache.len(), 3);
        assert!(cache.get(&prepared[0], now_ms()).is_none());
        assert!(cache.get(&prepared[4], now_ms()).is_some());
        // Too large for one entry (a quarter of the bytes): not stored.
        cache.put(&prepared[0], entry(&"y".repeat(2000)));
        assert!(cache.get(&prepared[0], now_ms()).is_none());
        // Expired.
        assert!(cache.get(&prepared[4], i64::MAX).is_none());
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn similar_requests_of_the_same_shape_share_an_answer() {
        let mut settings = Settings::default();
        let mut rule = Rule::new("m").unwrap();
        rule.similar = Some(true);
        settings.rules.push(rule);
        let cache = ResponseCache::new(settings);
        let h = HeaderMap::new();
        let ask = |text: &str, extra: &str| {
            let body = format!(
                r#"{{"model":"m","temperature":0.7{extra},"messages":[{{"role":"system","content":"You answer questions about Rust."}},{{"role":"user","content":"{text}"}}]}}"#
            );
            cache.prepare(&req(body.as_bytes(), "m", Some(0.7)), &h)
        };
        let q = "How do I read a whole file into a String in Rust without extra crates?";
        let first = ask(q, "").unwrap();
        cache.put(&first, entry("use std::fs::read_to_string"));
        let again = ask(&format!("{q} please"), "").unwrap();
        let hit = cache.get(&again, now_ms()).unwrap();
        assert_eq!(hit.status, Status::Similar);
        assert!(hit.similarity.unwrap() >= 0.9);
        // Other parameters: another shape.
        let other = ask(q, r#","max_tokens":10"#).unwrap();
        assert!(cache.get(&other, now_ms()).is_none());
        // Under the words gate: never by similarity (and not deterministic: no key either).
        assert!(ask("continue", "").is_none());
        // Evicting the answer removes it from the similar index too.
        let settings = Settings {
            max_entries: 1,
            ..cache.settings.clone()
        };
        let small = ResponseCache::new(settings);
        small.put(&first, entry("a"));
        let other_first = ask(
            "Which crate parses TOML files in Rust and how stable is it today?",
            "",
        )
        .unwrap();
        small.put(&other_first, entry("b"));
        assert!(small.get(&again, now_ms()).is_none());
        assert_eq!(small.inner.lock().unwrap().similar.len(), 1);
    }

    #[test]
    fn a_stream_counts_as_complete_only_with_its_closing_event_and_no_error() {
        assert!(stream_completed(
            Dialect::AnthropicMessages,
            b"event: message_start\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        ));
        assert!(!stream_completed(
            Dialect::AnthropicMessages,
            b"event: error\ndata: {}\n\nevent: message_stop\ndata: {}\n\n"
        ));
        assert!(stream_completed(
            Dialect::OpenAiChat,
            b"data: {\"id\":1}\n\ndata: [DONE]\n\n"
        ));
        assert!(!stream_completed(
            Dialect::OpenAiChat,
            b"data: {\"id\":1}\n\n"
        ));
        assert!(!stream_completed(
            Dialect::OpenAiChat,
            b"data: {\"error\":{}}\n\ndata: [DONE]\n\n"
        ));
        assert!(stream_completed(
            Dialect::OpenAiResponses,
            b"event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n"
        ));
    }
}

//! The last requests, in memory, for the window's live feed: what each was, what it cost
//! in tokens and what the optimizer and the cache did. Never a prompt or a key.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::record::{Recorder, RequestRecord};

/// How many requests the feed keeps.
pub const KEPT: usize = 200;

#[derive(Clone, Debug, Serialize)]
pub struct PassRow {
    pub pass: &'static str,
    pub before: u64,
    pub after: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub id: String,
    pub time_ms: i64,
    pub dialect: &'static str,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub served: Option<String>,
    pub streamed: bool,
    pub status: u16,
    pub outcome: &'static str,
    pub latency_ms: f64,
    pub overhead_ms: f64,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub applied: String,
    pub saved_tokens: i64,
    pub cache: Option<&'static str>,
    pub passes: Vec<PassRow>,
    pub first_byte_ms: Option<f64>,
    pub error: Option<&'static str>,
    pub attempt: u32,
    pub session: Option<String>,
    pub gateway_key: Option<String>,
    pub api_key: Option<String>,
    pub dropped: String,
    pub cache_break: Option<&'static str>,
    /// How many blocks the optimizer rewrote (their ids are in the request's detail).
    pub rewrites: usize,
    pub kind: &'static str,
    /// Which token counts are the gateway's own (`input`, `output`, `input,output`).
    pub tokens_estimated: Option<&'static str>,
    /// The secrets the guard replaced, by kind (`github_token:1,env_secret:2`). Never a value.
    pub secrets: Option<String>,
}

impl Row {
    fn of(r: &RequestRecord) -> Row {
        Row {
            id: r.request_id.clone(),
            time_ms: r.started_ms(),
            dialect: r.dialect.as_str(),
            provider: r.provider.clone(),
            model: r.model_requested.clone(),
            served: r.model_served.clone(),
            streamed: r.streamed,
            status: r.status,
            outcome: r.outcome.as_str(),
            latency_ms: r.latency.as_secs_f64() * 1e3,
            overhead_ms: r.overhead.as_secs_f64() * 1e3,
            input_tokens: r.usage.map(|u| u.input),
            output_tokens: r.usage.map(|u| u.output),
            cache_read_tokens: r.usage.map(|u| u.cache_read),
            applied: r.applied.clone(),
            saved_tokens: r.saved_tokens,
            cache: r.cache.map(crate::cache::Status::as_str),
            passes: r
                .passes
                .iter()
                .map(|p| PassRow {
                    pass: p.pass,
                    before: p.before,
                    after: p.after,
                })
                .collect(),
            first_byte_ms: r.first_byte.map(|d| d.as_secs_f64() * 1e3),
            error: r.error,
            attempt: r.attempt,
            session: r.session.clone(),
            gateway_key: r.gateway_key.clone(),
            api_key: r.api_key.clone(),
            dropped: r.dropped.clone(),
            cache_break: r.cache_break.map(crate::sessions::Cause::as_str),
            rewrites: r.rewrites.len(),
            kind: r.kind.as_str(),
            tokens_estimated: r.estimated.as_str(),
            secrets: Some(r.secrets.clone()).filter(|s| !s.is_empty()),
        }
    }
}

/// The feed: the last [`KEPT`] requests and how many there were since launch.
#[derive(Debug, Default)]
pub struct Recent {
    /// The records themselves, shared with the ledger queue: a row is built only when
    /// the window asks for the feed, not on every request.
    rows: Mutex<VecDeque<Arc<RequestRecord>>>,
    total: AtomicU64,
}

impl Recent {
    /// The newest `limit` rows, newest first.
    pub fn newest(&self, limit: usize) -> Vec<Row> {
        self.rows
            .lock()
            .map(|rows| rows.iter().rev().take(limit).map(|r| Row::of(r)).collect())
            .unwrap_or_default()
    }

    /// Every attempt of request `id` still in the feed, first first, and the ids of the
    /// blocks its last attempt's optimizer rewrote.
    pub fn by_id(&self, id: &str) -> (Vec<Row>, Vec<String>) {
        let Ok(rows) = self.rows.lock() else {
            return (Vec::new(), Vec::new());
        };
        let found: Vec<&Arc<RequestRecord>> = rows.iter().filter(|r| r.request_id == id).collect();
        let rewrites = found
            .iter()
            .rev()
            .find(|r| !r.rewrites.is_empty())
            .map(|r| r.rewrites.clone())
            .unwrap_or_default();
        (found.into_iter().map(|r| Row::of(r)).collect(), rewrites)
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    fn push(&self, record: Arc<RequestRecord>) {
        self.total.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut rows) = self.rows.lock() {
            if rows.len() == KEPT {
                rows.pop_front();
            }
            rows.push_back(record);
        }
    }
}

/// Adds each record to the feed, then hands it on.
pub struct RecentRecorder {
    pub recent: Arc<Recent>,
    pub inner: Arc<dyn Recorder>,
}

impl Recorder for RecentRecorder {
    fn record(&self, r: Arc<RequestRecord>) {
        self.recent.push(r.clone());
        self.inner.record(r);
    }
}

//! The record stage: every request, served or failed, ends as one [`RequestRecord`]
//! handed to a [`Recorder`]. Recorders must not block: the ledger (a later stage of the
//! project) queues records and writes them off the hot path.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::dialect::Dialect;
use crate::usage::Usage;

/// How a request went through the response cache, for the record and `x-trimgate-cache`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    /// Answered by a stored request of other, close enough words.
    Similar,
    Miss,
}

impl CacheStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Similar => "similar",
            CacheStatus::Miss => "miss",
        }
    }

    /// What `x-trimgate-cache` says: a hit either way.
    pub fn header(self) -> &'static str {
        match self {
            CacheStatus::Hit | CacheStatus::Similar => "hit",
            CacheStatus::Miss => "miss",
        }
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The provider answered (any status) and the answer reached the client whole.
    Completed,
    /// The gateway answered with its own error before reaching the provider, or instead of it.
    GatewayError,
    /// The client went away before the answer was complete.
    ClientCancelled,
    /// The provider's stream broke off, timed out, or the gateway shut down mid-answer.
    UpstreamFailed,
    /// This attempt failed before the first byte and another attempt followed (a row of
    /// its own, with the request's id).
    Retried,
}

impl Outcome {
    /// The name used in the ledger and in metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::GatewayError => "gateway_error",
            Outcome::ClientCancelled => "client_cancelled",
            Outcome::UpstreamFailed => "upstream_failed",
            Outcome::Retried => "retried",
        }
    }
}

/// What a request asked for. Only a model's answer uses tokens; the other calls are
/// kept in the ledger (they reach providers, take time and can fail) but stay out of the
/// token, cost and error figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// A model's answer (Chat, Responses, Messages, Gemini's `generateContent`).
    #[default]
    Generation,
    /// A count of a request's input tokens (Anthropic's and Gemini's).
    CountTokens,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Generation => "generation",
            Kind::CountTokens => "count_tokens",
        }
    }
}

pub use crate::estimate::Estimated;

#[derive(Clone, Debug)]
pub struct RequestRecord {
    pub request_id: String,
    pub started_at: SystemTime,
    pub dialect: Dialect,
    pub provider: Option<String>,
    pub model_requested: Option<String>,
    pub model_served: Option<String>,
    /// What the price table knows this request by when a cloud served it
    /// ([`crate::pricing::cloud_key`]: `bedrock:regional:us.anthropic.claude-…`,
    /// `azure:<deployment>`), made from the provider and the model it was asked for;
    /// `None` for other providers, which are priced by the model served.
    pub priced_as: Option<String>,
    pub streamed: bool,
    pub status: u16,
    pub outcome: Outcome,
    /// Low-cardinality reason for a failure (`upstream_timeout`, …).
    pub error: Option<&'static str>,
    pub latency: Duration,
    /// Time spent in the gateway itself, upstream wait excluded.
    pub overhead: Duration,
    pub usage: Option<Usage>,
    /// The counts of `usage` the gateway made itself.
    pub estimated: Estimated,
    pub kind: Kind,
    /// What the optimizer did: `pass=mode` of each pass that changed the request.
    pub applied: String,
    /// Exact o200k tokens and wire bytes the passes removed (negative if they added).
    pub saved_tokens: i64,
    pub saved_bytes: i64,
    /// The gateway key the client presented, by name.
    pub gateway_key: Option<String>,
    /// Exact o200k tokens of what each pass changed, before and after.
    pub passes: Vec<crate::optimize::PassTokens>,
    /// How the response cache answered, when it applied to this request.
    pub cache: Option<CacheStatus>,
    /// What the provider reported for the answer a cache hit replayed: the usage it spared.
    pub avoided: Option<Usage>,
    /// Request fields a translation left out, comma-separated (`x-trimgate-dropped`).
    pub dropped: String,
    /// The session: the agent's id from its request headers, else one derived from the
    /// model and the first user message ([`crate::sessions::derived_id`]).
    pub session: Option<String>,
    /// The provider's cached prefix shrank against the session's previous turn, and why.
    pub cache_break: Option<crate::sessions::Cause>,
    /// Which attempt of the request this row is, from 1; 0 when no provider was tried.
    pub attempt: u32,
    /// The pool key that served this attempt, by name (never the key).
    pub api_key: Option<String>,
    /// From arrival to the provider's response headers, when it answered.
    pub first_byte: Option<Duration>,
    /// The ids of the blocks the optimizer rewrote ([`crate::optimize::originals`]): the
    /// window's request detail shows each one's original and replacement while the
    /// gateway still holds them. Ids, never text.
    pub rewrites: Vec<String>,
    /// The secrets the guard replaced, by kind: `kind:count` joined by commas
    /// (`github_token:1,env_secret:2`); empty when none. Never a value.
    pub secrets: String,
}

impl RequestRecord {
    /// When the request arrived, as Unix milliseconds.
    pub fn started_ms(&self) -> i64 {
        crate::clock::unix_ms(self.started_at)
    }

    /// A record of a request that has just arrived.
    pub fn new(request_id: String, dialect: Dialect) -> RequestRecord {
        RequestRecord {
            request_id,
            started_at: SystemTime::now(),
            dialect,
            provider: None,
            model_requested: None,
            model_served: None,
            priced_as: None,
            streamed: false,
            status: 0,
            outcome: Outcome::Completed,
            error: None,
            latency: Duration::ZERO,
            overhead: Duration::ZERO,
            usage: None,
            estimated: Estimated::default(),
            kind: Kind::Generation,
            applied: String::new(),
            saved_tokens: 0,
            saved_bytes: 0,
            gateway_key: None,
            passes: Vec::new(),
            cache: None,
            avoided: None,
            dropped: String::new(),
            session: None,
            cache_break: None,
            attempt: 0,
            api_key: None,
            first_byte: None,
            rewrites: Vec::new(),
            secrets: String::new(),
        }
    }
}

/// Receives finished requests. One job, so tests and the ledger can swap it in. A record
/// is shared, not copied, between the recorders that keep it (the feed, the ledger queue).
pub trait Recorder: Send + Sync {
    fn record(&self, record: Arc<RequestRecord>);
}

/// Logs each request as one structured line (never a prompt, never a key). What most
/// requests leave unset (an error, the cache, savings, a served model other than the one
/// asked) is left out rather than written as `-` or `0`: at the default `info` level
/// this line is the dearest part of a request, and its cost is per field.
#[derive(Debug, Default)]
pub struct LogRecorder;

impl Recorder for LogRecorder {
    fn record(&self, r: Arc<RequestRecord>) {
        let usage = r.usage.unwrap_or_default();
        let served = r
            .model_served
            .as_deref()
            .filter(|served| Some(*served) != r.model_requested.as_deref());
        tracing::info!(
            request_id = %r.request_id,
            dialect = r.dialect.as_str(),
            provider = r.provider.as_deref().unwrap_or("-"),
            model = r.model_requested.as_deref().unwrap_or("-"),
            served,
            streamed = r.streamed,
            status = r.status,
            outcome = r.outcome.as_str(),
            error = r.error,
            latency_ms = %Millis(r.latency),
            overhead_ms = %Millis(r.overhead),
            input_tokens = usage.input,
            output_tokens = usage.output,
            cache_read_tokens = (usage.cache_read > 0).then_some(usage.cache_read),
            applied = (!r.applied.is_empty()).then_some(r.applied.as_str()),
            saved_tokens = (r.saved_tokens != 0).then_some(r.saved_tokens),
            saved_bytes = (r.saved_bytes != 0).then_some(r.saved_bytes),
            cache = r.cache.map(CacheStatus::as_str),
            cache_break = r.cache_break.map(crate::sessions::Cause::as_str),
            "request"
        );
    }
}

/// A duration as milliseconds with three decimals (`12.345`), written digit by digit:
/// formatting an `f64` (`{:.3}`) costs several times as much, and was a percent of a
/// request's CPU. The request's log line shows it, `x-trimgate-overhead-ms` carries it.
#[derive(Clone, Copy)]
pub struct Millis(pub std::time::Duration);

impl Millis {
    /// The text, written into `buf` (past `u64::MAX` microseconds, that many).
    pub fn text(self, buf: &mut [u8; 24]) -> &str {
        let micros = u64::try_from(self.0.as_micros()).unwrap_or(u64::MAX);
        let mut i = buf.len();
        let mut frac = micros % 1000;
        for _ in 0..3 {
            i -= 1;
            buf[i] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        i -= 1;
        buf[i] = b'.';
        let mut whole = micros / 1000;
        loop {
            i -= 1;
            buf[i] = b'0' + (whole % 10) as u8;
            whole /= 10;
            if whole == 0 {
                break;
            }
        }
        std::str::from_utf8(&buf[i..]).unwrap_or("0.000")
    }
}

impl std::fmt::Display for Millis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text(&mut [0; 24]))
    }
}

/// Keeps the last `capacity` records in memory, newest last (a test double).
#[cfg(any(test, feature = "test-util"))]
#[derive(Debug)]
pub struct MemoryRecorder {
    capacity: usize,
    records: std::sync::Mutex<std::collections::VecDeque<Arc<RequestRecord>>>,
}

#[cfg(any(test, feature = "test-util"))]
impl MemoryRecorder {
    pub fn new(capacity: usize) -> Self {
        MemoryRecorder {
            capacity,
            records: std::sync::Mutex::new(std::collections::VecDeque::with_capacity(
                capacity.min(1024),
            )),
        }
    }

    pub fn records(&self) -> Vec<RequestRecord> {
        self.lock()
            .iter()
            .map(|r| RequestRecord::clone(r))
            .collect()
    }

    /// The records, read past a panic of another holder (a test's assertion).
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<Arc<RequestRecord>>> {
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(any(test, feature = "test-util"))]
impl Recorder for MemoryRecorder {
    fn record(&self, record: Arc<RequestRecord>) {
        let mut records = self.lock();
        if records.len() == self.capacity {
            records.pop_front();
        }
        records.push_back(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_are_written_with_three_decimals() {
        let shown = |us: u64| Millis(std::time::Duration::from_micros(us)).to_string();
        assert_eq!(shown(0), "0.000");
        assert_eq!(shown(7), "0.007");
        assert_eq!(shown(42_017), "42.017");
        assert_eq!(shown(1_234_567_890), "1234567.890");
    }
}

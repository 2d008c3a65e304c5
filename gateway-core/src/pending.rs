//! A request on its way to its record: the pipeline's side of the record stage.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tracing::Span;

use crate::dialect::Dialect;
use crate::estimate::{Evidence, Said};
use crate::record::{Kind, Outcome, Recorder, RequestRecord};
use crate::sessions::{Sessions, Turn};

/// Past this many bytes to count, a record's estimate is made on a blocking thread.
const COUNT_INLINE: usize = 64 * 1024;

/// A request on its way: stages fill in its record, and the record goes to the recorder
/// exactly once — by [`Pending::finish`], or on drop when the client went away first
/// (a dropped handler future or response body drops its `Pending`). It also holds the
/// request's span (the current span when it was created), which the record fills in
/// and closes.
pub struct Pending {
    recorder: Arc<dyn Recorder>,
    record: RequestRecord,
    started: std::time::Instant,
    span: Span,
    done: bool,
    /// The turn the cache-break detector compares with the session's previous one, once
    /// the provider's usage is in the record.
    turn: Option<(Arc<Sessions>, Turn)>,
    /// What the request and its answer said, to count them by when the provider did not.
    evidence: Evidence,
}

impl Pending {
    pub fn new(
        recorder: Arc<dyn Recorder>,
        record: RequestRecord,
        started: std::time::Instant,
    ) -> Self {
        Pending {
            recorder,
            record,
            started,
            span: Span::current(),
            done: false,
            turn: None,
            evidence: Evidence::default(),
        }
    }

    /// The request as it goes to a provider (each attempt's, the last one standing).
    pub fn sent(&mut self, dialect: Dialect, body: Bytes) {
        self.evidence.sent = Some((dialect, body));
    }

    /// What the answer said, for a request whose usage the provider did not (fully) give.
    pub fn said(&mut self, said: Said) {
        self.evidence.said = said;
    }

    /// The record so far, for stages that fill in fields.
    pub fn record(&mut self) -> &mut RequestRecord {
        &mut self.record
    }

    pub fn add_overhead(&mut self, spent: Duration) {
        self.record.overhead += spent;
    }

    /// Hands the detector this request's turn: when the request completes with the
    /// provider's usage, the detector says whether the cached prefix broke
    /// ([`RequestRecord::cache_break`]).
    pub fn watch(&mut self, sessions: Arc<Sessions>, turn: Turn) {
        self.turn = Some((sessions, turn));
    }

    pub fn finish(mut self, outcome: Outcome, error: Option<&'static str>) {
        self.emit(outcome, error);
    }

    /// Moves the record into a new `Pending`, for a response body that outlives the
    /// handler; this one then records nothing.
    pub fn hand_over(&mut self) -> Pending {
        self.done = true;
        Pending {
            recorder: self.recorder.clone(),
            record: self.take_record(),
            started: self.started,
            span: std::mem::replace(&mut self.span, Span::none()),
            done: false,
            turn: self.turn.take(),
            evidence: std::mem::take(&mut self.evidence),
        }
    }

    /// Moves the record out rather than cloning it: a finished record is not read again.
    fn take_record(&mut self) -> RequestRecord {
        let placeholder = RequestRecord::new(String::new(), self.record.dialect);
        std::mem::replace(&mut self.record, placeholder)
    }

    fn emit(&mut self, outcome: Outcome, error: Option<&'static str>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let mut record = self.take_record();
        record.outcome = outcome;
        record.error = record.error.or(error);
        record.latency = self.started.elapsed();
        let served = outcome == Outcome::Completed && (200..300).contains(&record.status);
        if let Some((sessions, turn)) = self.turn.take() {
            if let (true, Some(usage)) = (served, record.usage.as_ref()) {
                record.cache_break = sessions.observe(turn, usage);
            }
        }
        let span = std::mem::replace(&mut self.span, Span::none());
        let recorder = self.recorder.clone();
        let finish = move |record: RequestRecord| {
            crate::telemetry::end_request_span(span, &record);
            recorder.record(Arc::new(record));
        };
        // A request that reached a provider and was left midway, broke off, or was answered
        // without usage is counted by what the gateway holds (see `estimate`).
        let unreported = served && record.usage.is_none_or(|u| u.input == 0 && u.output == 0);
        let counts = record.kind == Kind::Generation
            && self.evidence.sent.is_some()
            && (unreported
                || matches!(outcome, Outcome::ClientCancelled | Outcome::UpstreamFailed));
        if !counts {
            return finish(record);
        }
        let evidence = std::mem::take(&mut self.evidence);
        let weight = evidence.weight();
        let estimate = move |mut record: RequestRecord| {
            let (usage, estimated) = evidence.fill(record.usage, served);
            record.usage = usage;
            record.estimated = estimated;
            finish(record);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) if weight > COUNT_INLINE => {
                rt.spawn_blocking(move || estimate(record));
            }
            _ => estimate(record),
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.emit(Outcome::ClientCancelled, Some("client_cancelled"));
    }
}

//! A request on its way to its record: the pipeline's side of the record stage.

use std::sync::Arc;
use std::time::Duration;

use tracing::Span;

use crate::record::{Outcome, Recorder, RequestRecord};
use crate::sessions::{Sessions, Turn};

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
        }
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
        if let Some((sessions, turn)) = self.turn.take() {
            let served = outcome == Outcome::Completed && (200..300).contains(&record.status);
            if let (true, Some(usage)) = (served, record.usage.as_ref()) {
                record.cache_break = sessions.observe(turn, usage);
            }
        }
        crate::telemetry::end_request_span(
            std::mem::replace(&mut self.span, Span::none()),
            &record,
        );
        self.recorder.record(Arc::new(record));
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.emit(Outcome::ClientCancelled, Some("client_cancelled"));
    }
}

//! Faults served on purpose: which ones a request gets (its `x-mock-*` headers, the
//! `--fail-*`/`--drop-every` settings, `x-mock-fail-first` counting per key), the counts
//! `/_mock/faults` reports, and the slow drip that can wrap any body.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, BodyDataStream, HttpBody};
use axum::response::Response;
use bytes::Bytes;
use futures_util::Stream;
use http::header::CONTENT_LENGTH;
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use tokio::time::Sleep;

pub(crate) const ERROR_STATUS: &str = "x-mock-error-status";
pub(crate) const RETRY_AFTER: &str = "x-mock-retry-after";
pub(crate) const STREAM_ERROR_AFTER: &str = "x-mock-stream-error-after";
pub(crate) const STALL_AFTER: &str = "x-mock-stall-after";
pub(crate) const RESET_AFTER: &str = "x-mock-reset-after";
pub(crate) const MALFORMED_AFTER: &str = "x-mock-malformed-after";
pub(crate) const DRIP_MS: &str = "x-mock-drip-ms";
pub(crate) const DROP: &str = "x-mock-drop";
pub(crate) const FAIL_FIRST: &str = "x-mock-fail-first";
pub(crate) const FAULT_KEY: &str = "x-mock-fault-key";
pub(crate) const TRUNCATE_AFTER: &str = "x-mock-truncate-after";
pub(crate) const BAD_CRC_AFTER: &str = "x-mock-bad-crc-after";
pub(crate) const AWS_ERROR_TYPE: &str = "x-mock-aws-error-type";
pub(crate) const AWS_ERROR_MESSAGE: &str = "x-mock-aws-error-message";

/// How many bytes a dripped body releases at a time.
pub(crate) const DRIP_PIECE: usize = 16;

/// What the mock served, fault or not, since it started or `/_mock/faults` was cleared.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FaultStats {
    /// Every answer of a provider endpoint by status (`{"200": 1, "529": 2}`), whatever
    /// caused it; dropped connections have no status and are not here.
    pub statuses: BTreeMap<u16, u64>,
    /// The error answers a fault asked for (`x-mock-error-status`, `--fail-status`), by status.
    pub injected: BTreeMap<u16, u64>,
    /// Connections closed without an answer (`x-mock-drop`, `--drop-every`).
    pub dropped: u64,
    /// Streams aborted mid-body (`x-mock-reset-after`).
    pub reset: u64,
    /// Streams gone silent (`x-mock-stall-after`).
    pub stalled: u64,
    /// Frames sent with broken JSON (`x-mock-malformed-after`).
    pub malformed: u64,
    /// Bodies sent in small slow pieces (`x-mock-drip-ms`).
    pub dripped: u64,
    /// Streams ended by an in-stream error event (`x-mock-stream-error-after`).
    pub stream_errors: u64,
    /// Streams whose body ended halfway through a frame (`x-mock-truncate-after`).
    pub truncated: u64,
    /// Event-stream frames sent with a wrong message CRC (`x-mock-bad-crc-after`).
    pub bad_crc: u64,
}

/// The counts plus what decides the next faults: the request ordinal the `--*-every`
/// settings count with, and the requests seen per `x-mock-fault-key`.
#[derive(Default)]
pub(crate) struct Ledger {
    pub stats: FaultStats,
    pub ordinal: u64,
    pub keys: HashMap<String, u64>,
}

impl Ledger {
    /// The 1-based number of this request among those the provider endpoints received.
    pub fn next_ordinal(&mut self) -> u64 {
        self.ordinal += 1;
        self.ordinal
    }

    /// How many requests carried `key` so far, this one included.
    pub fn count_key(&mut self, key: &str) -> u64 {
        let seen = self.keys.entry(key.to_owned()).or_insert(0);
        *seen += 1;
        *seen
    }
}

/// Marks a response whose connection the server must close without sending it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DropConnection;

/// The stand-in a dropped request's handler returns; `serve` closes the connection instead.
pub(crate) fn dropped() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.extensions_mut().insert(DropConnection);
    response
}

/// The error `serve` hands hyper for a dropped request: hyper closes the connection
/// without writing a status line.
#[derive(Debug)]
pub(crate) struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by the mock")
    }
}

impl std::error::Error for Dropped {}

/// Sends `response`'s body `DRIP_PIECE` bytes at a time, `interval` apart; a whole body keeps
/// its `content-length`.
pub(crate) fn drip(response: Response, interval: Duration) -> Response {
    let (mut parts, body) = response.into_parts();
    if let Some(len) = body.size_hint().exact() {
        parts
            .headers
            .entry(CONTENT_LENGTH)
            .or_insert_with(|| HeaderValue::from(len));
    }
    let dripping = Drip {
        inner: body.into_data_stream(),
        pending: Bytes::new(),
        interval,
        pause: None,
        sent_any: false,
    };
    Response::from_parts(parts, Body::from_stream(dripping))
}

struct Drip {
    inner: BodyDataStream,
    pending: Bytes,
    interval: Duration,
    pause: Option<Pin<Box<Sleep>>>,
    sent_any: bool,
}

impl Stream for Drip {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        while this.pending.is_empty() {
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => this.pending = chunk,
                other => return other,
            }
        }
        if this.sent_any && !this.interval.is_zero() {
            let interval = this.interval;
            let pause = this
                .pause
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(interval)));
            if pause.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.pause = None;
        }
        this.sent_any = true;
        let take = this.pending.len().min(DRIP_PIECE);
        Poll::Ready(Some(Ok(this.pending.split_to(take))))
    }
}

/// A duration the way OpenAI's `x-ratelimit-reset-*` headers write it (Go's format):
/// `0s`, `1s`, `6m0s`, `1h0m0s`.
pub(crate) fn go_duration(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::go_duration;

    #[test]
    fn reset_durations_are_written_as_openai_writes_them() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(1), "1s");
        assert_eq!(go_duration(360), "6m0s");
        assert_eq!(go_duration(3725), "1h2m5s");
    }
}

//! The body of a streamed response: pre-rendered SSE frames released one at a time.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::Stream;
use http::header::CACHE_CONTROL;
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use tokio::time::Sleep;

use super::MockState;

/// One SSE frame: an optional `event:` line, one `data:` line, a blank line.
pub(super) fn frame(event: Option<&str>, payload: &impl Serialize) -> Bytes {
    let mut buf = Vec::with_capacity(256);
    if let Some(event) = event {
        buf.extend_from_slice(b"event: ");
        buf.extend_from_slice(event.as_bytes());
        buf.push(b'\n');
    }
    buf.extend_from_slice(b"data: ");
    // Writing into a Vec cannot fail and the payloads have string keys only.
    let _ = serde_json::to_writer(&mut buf, payload);
    buf.extend_from_slice(b"\n\n");
    Bytes::from(buf)
}

/// A frame whose data line is written verbatim (`[DONE]`, Anthropic's spaced ping).
pub(super) fn raw_frame(event: Option<&str>, data: &str) -> Bytes {
    let mut buf = Vec::with_capacity(data.len() + 32);
    if let Some(event) = event {
        buf.extend_from_slice(b"event: ");
        buf.extend_from_slice(event.as_bytes());
        buf.push(b'\n');
    }
    buf.extend_from_slice(b"data: ");
    buf.extend_from_slice(data.as_bytes());
    buf.extend_from_slice(b"\n\n");
    Bytes::from(buf)
}

/// Cuts the stream after `after` frames and ends it with `error` frames instead, as a
/// provider does when it fails mid-response.
pub(super) fn inject_error(
    frames: &mut Vec<Bytes>,
    after: Option<usize>,
    error: impl FnOnce(usize) -> Vec<Bytes>,
) {
    if let Some(after) = after {
        if after < frames.len() {
            frames.truncate(after);
            let tail = error(after);
            frames.extend(tail);
        }
    }
}

/// A `200 text/event-stream` response whose frames go out one body chunk each, `interval` apart.
pub(super) fn response(state: &MockState, frames: Vec<Bytes>, interval: Duration) -> Response {
    let body = SseBody::new(state.clone(), frames, interval);
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

struct SseBody {
    frames: std::vec::IntoIter<Bytes>,
    interval: Duration,
    pause: Option<Pin<Box<Sleep>>>,
    sent_any: bool,
    finished: bool,
    state: MockState,
}

impl SseBody {
    fn new(state: MockState, frames: Vec<Bytes>, interval: Duration) -> Self {
        state.stream_started();
        Self {
            frames: frames.into_iter(),
            interval,
            pause: None,
            sent_any: false,
            finished: false,
            state,
        }
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(None);
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
        match this.frames.next() {
            Some(frame) => {
                this.sent_any = true;
                if this.frames.len() == 0 {
                    this.finished = true;
                    this.state.stream_completed();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            None => {
                this.finished = true;
                this.state.stream_completed();
                Poll::Ready(None)
            }
        }
    }
}

impl Drop for SseBody {
    // Hyper drops the body when the client goes away; that is the only way to end unfinished.
    fn drop(&mut self) {
        if !self.finished {
            self.state.stream_cancelled();
        }
    }
}

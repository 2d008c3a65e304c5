//! The body of a streamed response: pre-rendered frames (SSE, or AWS's event stream)
//! released one at a time.

use std::future::Future;
use std::io;
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

use super::{Controls, MockState};

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
    state: &MockState,
    frames: &mut Vec<Bytes>,
    after: Option<usize>,
    error: impl FnOnce(usize) -> Vec<Bytes>,
) {
    if let Some(after) = after {
        if after < frames.len() {
            frames.truncate(after);
            let tail = error(after);
            frames.extend(tail);
            state.record(|stats| stats.stream_errors += 1);
        }
    }
}

/// A `200 text/event-stream` response whose frames go out one body chunk each, the frame
/// interval apart, with the stream faults `controls` ask for: a broken frame inserted after
/// `malformed_after` frames, the stream reset or stalled after `reset_after` or
/// `stall_after` frames, or cut in the middle of frame `truncate_after + 1` (a count at or
/// past the frame count changes nothing).
pub(super) fn response(state: &MockState, frames: Vec<Bytes>, controls: &Controls) -> Response {
    framed(state, frames, controls, malformed)
}

/// `response` for frames of another framing (AWS's event stream): `broken` makes the frame
/// `x-mock-malformed-after` inserts from the one it goes before. The caller sets the
/// content type.
pub(super) fn framed(
    state: &MockState,
    mut frames: Vec<Bytes>,
    controls: &Controls,
    broken: fn(&Bytes) -> Bytes,
) -> Response {
    let ending = match (controls.reset_after, controls.stall_after) {
        (Some(n), _) if n < frames.len() => {
            frames.truncate(n);
            Ending::Reset
        }
        (_, Some(n)) if n < frames.len() => {
            frames.truncate(n);
            Ending::Stall
        }
        _ => Ending::Complete,
    };
    if let Some(n) = controls.truncate_after.filter(|&n| n < frames.len()) {
        let half = frames[n].slice(..frames[n].len() / 2);
        frames.truncate(n);
        frames.push(half);
        state.record(|stats| stats.truncated += 1);
    }
    let malformed_at = controls.malformed_after.filter(|&n| n < frames.len());
    if let Some(n) = malformed_at {
        let broken = broken(&frames[n]);
        frames.insert(n, broken);
    }
    let mut body = SseBody::new(
        state.clone(),
        frames,
        controls.frame_interval,
        ending,
        malformed_at,
    );
    body.linger = controls.linger;
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

/// `next` cut off halfway through its data line, event line and line endings kept: a frame a
/// client cannot parse, as a proxy that mangles a stream sends. A piece of a streamed JSON
/// array (Gemini without `alt=sse`) has no data line: its first half is sent.
fn malformed(next: &Bytes) -> Bytes {
    let text = String::from_utf8_lossy(next);
    let Some((head, data)) = text.split_once("data: ") else {
        return Bytes::from(first_half(&text).to_owned());
    };
    let end = if data.ends_with("\r\n\r\n") {
        "\r\n\r\n"
    } else {
        "\n\n"
    };
    Bytes::from(format!("{head}data: {}{end}", first_half(data.trim_end())))
}

fn first_half(text: &str) -> &str {
    let mut cut = text.len() / 2;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// How a stream ends once its frames are out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The body ends cleanly.
    Complete,
    /// The body never ends and never sends again; the connection stays open.
    Stall,
    /// The body fails, which makes hyper abort the connection without a final chunk.
    Reset,
}

struct SseBody {
    frames: std::vec::IntoIter<Bytes>,
    interval: Duration,
    pause: Option<Pin<Box<Sleep>>>,
    sent: usize,
    ending: Ending,
    malformed_at: Option<usize>,
    stalled: bool,
    flushed: bool,
    finished: bool,
    /// How long the body stays open after the last frame of a complete stream.
    linger: Duration,
    state: MockState,
}

impl SseBody {
    fn new(
        state: MockState,
        frames: Vec<Bytes>,
        interval: Duration,
        ending: Ending,
        malformed_at: Option<usize>,
    ) -> Self {
        state.stream_started();
        Self {
            frames: frames.into_iter(),
            interval,
            pause: None,
            sent: 0,
            ending,
            malformed_at,
            stalled: false,
            flushed: false,
            finished: false,
            linger: Duration::ZERO,
            state,
        }
    }

    /// The frames are out: end the way the stream was asked to.
    fn end(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, io::Error>>> {
        match self.ending {
            Ending::Complete if !self.linger.is_zero() => {
                let linger = self.linger;
                let pause = self
                    .pause
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(linger)));
                if pause.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.pause = None;
                self.linger = Duration::ZERO;
                self.end(cx)
            }
            Ending::Complete => {
                self.finished = true;
                self.state.stream_completed();
                Poll::Ready(None)
            }
            Ending::Stall => {
                if !self.stalled {
                    self.stalled = true;
                    self.state.record(|stats| stats.stalled += 1);
                }
                // Nothing will wake this body: it is silent until the client gives up.
                Poll::Pending
            }
            // Hyper writes what it holds when the body is pending; without that pause it
            // would abort before the head and the frames left.
            Ending::Reset if !self.flushed => {
                self.flushed = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Ending::Reset => {
                self.finished = true;
                self.state.record(|stats| stats.reset += 1);
                Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "stream reset by the mock",
                ))))
            }
        }
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(None);
        }
        if this.frames.len() == 0 {
            return this.end(cx);
        }
        if this.sent > 0 && !this.interval.is_zero() {
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
                if this.malformed_at == Some(this.sent) {
                    this.state.record(|stats| stats.malformed += 1);
                }
                this.sent += 1;
                if this.frames.len() == 0
                    && this.ending == Ending::Complete
                    && this.linger.is_zero()
                {
                    this.finished = true;
                    this.state.stream_completed();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            None => this.end(cx),
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

//! Relays a provider's response to the client. Event streams go frame by frame as they
//! arrive (a frame is never held back waiting for the next one); usage is read on the
//! way; an upstream failure after the 200 becomes an error event in the client's dialect.
//!
//! What a provider sends is bounded: one event within `max_event`, a whole stream within
//! `max_stream`, a whole body within the limit [`read_whole`] is given. Past a bound the
//! client gets an error event and the stream ends.

use std::pin::Pin;
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures_util::{FutureExt, Stream, StreamExt};
use http_body_util::BodyDataStream;
use memchr::memmem;
use tokio::sync::watch;

use crate::answer_text::AnswerText;
use crate::dialect::Dialect;
use crate::error::{GatewayError, ResponsesPosition};
use crate::estimate::Said;
use crate::pending::Pending;
use crate::record::Outcome;
use crate::translate::ir::ProviderError;
use crate::translate::stream::{Decoder, Encoder, Event};
use crate::upstream::{classify, BodyError, UpBody};
use crate::usage::StreamUsage;
use trimgate_wire::sse::{scan, Scan};

/// SSE framing, kept with the rest of the wire layer.
pub use trimgate_wire::sse::{frame_data, frame_end};

type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// What a relay needs to know besides the bytes.
pub struct RelayParams {
    pub dialect: Dialect,
    pub provider: String,
    pub idle: Duration,
    /// The largest event the provider may send; a larger one ends the stream.
    pub max_event: usize,
    /// The most bytes the provider may send in all; past it the stream is cut.
    pub max_stream: usize,
    /// Drop the usage-only chunk and `"usage":null` fields the gateway asked an OpenAI Chat
    /// stream for, so the client sees the stream it asked for.
    pub hide_usage: bool,
    /// Turns true when the shutdown grace period is over: open streams end with an error event.
    pub abort: watch::Receiver<bool>,
    /// Set when the provider speaks another dialect: its events are rewritten as the client's.
    pub translate: Option<Translator>,
    /// Set when a complete answer goes into the response cache: a copy of what the client gets.
    pub capture: Option<crate::cache::Capture>,
}

/// The two halves of a stream translation (see [`crate::translate::stream`]).
pub struct Translator {
    pub decoder: Decoder,
    pub encoder: Encoder,
}

/// Why a whole body could not be read.
#[derive(Debug)]
pub enum ReadFailed {
    /// It broke off or stalled: asking again may fix it.
    Cut(GatewayError),
    /// It is larger than the limit: it would be again.
    TooLarge(GatewayError),
}

impl ReadFailed {
    pub fn into_error(self) -> GatewayError {
        match self {
            ReadFailed::Cut(e) | ReadFailed::TooLarge(e) => e,
        }
    }
}

/// `f`'s output, or `Err` if it takes until `deadline()`. A future ready at its first
/// poll (a body whose bytes came with its headers) is not given a timer: making and
/// dropping the timer's entry cost more than reading the body.
pub(crate) async fn ready_or_within<F: std::future::Future>(
    f: F,
    deadline: impl FnOnce() -> tokio::time::Instant,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    let mut f = std::pin::pin!(f);
    if let Some(out) = f.as_mut().now_or_never() {
        return Ok(out);
    }
    tokio::time::timeout_at(deadline(), f).await
}

/// Reads a whole non-streamed body, each chunk within the idle timeout and the total within `limit`.
pub async fn read_whole(
    body: UpBody,
    provider: &str,
    idle: Duration,
    limit: usize,
    declared: Option<usize>,
) -> Result<Bytes, ReadFailed> {
    let too_large = || {
        ReadFailed::TooLarge(GatewayError::UpstreamBroken {
            provider: provider.to_owned(),
            detail: format!("response body exceeds {limit} bytes (server.max_answer_bytes)"),
        })
    };
    // A declared length past the cap is refused before a byte of it is held.
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut chunks = BodyDataStream::new(body);
    // Chunks are kept as they come and joined once at the end, into a buffer of the
    // declared size when there is one: never a buffer that grows by doubling.
    let mut parts: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    loop {
        match ready_or_within(chunks.next(), || tokio::time::Instant::now() + idle).await {
            Err(_) => {
                return Err(ReadFailed::Cut(GatewayError::UpstreamTimeout {
                    provider: provider.to_owned(),
                    phase: "the response body",
                }))
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ReadFailed::Cut(GatewayError::UpstreamBroken {
                    provider: provider.to_owned(),
                    detail: match &e {
                        BodyError::Convert(reason) => reason.clone(),
                        BodyError::Transport(_) => classify(provider, &e).to_string(),
                    },
                }))
            }
            Ok(Some(Ok(chunk))) => {
                total += chunk.len();
                if total > limit {
                    return Err(too_large());
                }
                parts.push(chunk);
            }
        }
    }
    // Most bodies arrive in one chunk: that one is kept without copying.
    Ok(match parts.len() {
        0 => Bytes::new(),
        1 => parts.swap_remove(0),
        _ => {
            let mut joined = BytesMut::with_capacity(total);
            for part in parts.drain(..) {
                joined.extend_from_slice(&part);
            }
            joined.freeze()
        }
    })
}

const USAGE_NULL: &[u8] = b",\"usage\":null";

struct Relay {
    chunks: Chunks,
    buf: BytesMut,
    /// Where the scan of `buf` for a frame's end resumes.
    scanned: usize,
    /// Bytes the provider has sent so far.
    received: usize,
    /// The provider's usage and where its answer ends, read from its own frames.
    usage: StreamUsage,
    /// What the answer has said, while it has not ended.
    text: AnswerText,
    /// The provider's dialect (the client's, unless translated).
    upstream: Dialect,
    /// The client has been handed the event that ends its answer: the request is complete,
    /// whatever the client does next.
    answered: bool,
    params: RelayParams,
    pending: Option<Pending>,
    done: bool,
    /// The end of the stream or a failure met while gathering a burst, handled next.
    stashed: Option<Option<Result<Bytes, BodyError>>>,
    /// A bound the provider went past while gathering a burst, handled next.
    failed: Option<GatewayError>,
    /// A relayed Responses stream: the number its next event takes.
    next_sequence: u64,
}

/// At most this many further upstream chunks, or this many bytes, go into one write.
const BURST_TURNS: usize = 64;
const BURST_BYTES: usize = 64 * 1024;
const HANDOVER_TURNS: usize = 3;

impl Relay {
    /// Takes one upstream chunk and returns the complete frames it finishes (possibly
    /// none), or the bound the provider went past.
    fn process(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
        self.received = self.received.saturating_add(chunk.len());
        if self.received > self.params.max_stream {
            return Err(self.too_large(format!(
                "the stream exceeds {} bytes (server.max_stream_bytes)",
                self.params.max_stream
            )));
        }
        if self.buf.is_empty()
            && chunk.len() <= self.params.max_event
            && (chunk.ends_with(b"\n\n") || chunk.ends_with(b"\r\n\r\n"))
        {
            return Ok(self.filter(chunk));
        }
        self.buf.extend_from_slice(&chunk);
        // The buffer starts at a frame's start; frames end one after the other.
        let mut start = 0;
        let mut from = self.scanned;
        loop {
            match scan(&self.buf, from) {
                Scan::End(end) => {
                    if end - start > self.params.max_event {
                        return Err(self.event_too_large());
                    }
                    start = end;
                    from = end;
                }
                Scan::More(resume) => {
                    if self.buf.len() - start > self.params.max_event {
                        return Err(self.event_too_large());
                    }
                    self.scanned = resume - start;
                    break;
                }
            }
        }
        if start == 0 {
            return Ok(Bytes::new());
        }
        let complete = self.buf.split_to(start).freeze();
        Ok(self.filter(complete))
    }

    fn event_too_large(&self) -> GatewayError {
        self.too_large(format!(
            "a stream event exceeds {} bytes (server.max_event_bytes)",
            self.params.max_event
        ))
    }

    fn too_large(&self, detail: String) -> GatewayError {
        GatewayError::UpstreamBroken {
            provider: self.params.provider.clone(),
            detail,
        }
    }

    /// Rewrites complete provider frames as the client's frames.
    fn translate(&mut self, complete: &[u8]) -> Bytes {
        let Some(t) = self.params.translate.as_mut() else {
            return Bytes::new();
        };
        let mut out = Vec::with_capacity(complete.len() + 64);
        let mut events = Vec::new();
        let mut start = 0;
        while start < complete.len() {
            let end = frame_end(complete, start).unwrap_or(complete.len());
            if let Some(data) = frame_data(&complete[start..end]) {
                observe(&mut self.usage, &mut self.text, self.upstream, &data);
                t.decoder.decode(&data, &mut events);
                for event in events.drain(..) {
                    t.encoder.encode(event, &mut out);
                }
            }
            start = end;
        }
        // A provider whose stream has no closing event (Gemini) has sent its last frame:
        // the client's stream is closed now, not when the body ends.
        if self.usage.closed && !t.encoder.is_finished() {
            t.encoder.finish(&mut out);
        }
        Bytes::from(out)
    }

    /// Whether what has been handed to the client holds its answer's last event.
    fn holds_the_end(&self) -> bool {
        match &self.params.translate {
            Some(t) => t.encoder.answered(),
            // A Chat client whose usage chunk the gateway hides ends with `[DONE]`.
            None => self.usage.closed || (self.usage.ended && !self.params.hide_usage),
        }
    }

    /// Nothing is left for the client: its stream may end without waiting for the
    /// provider's body to.
    fn nothing_due(&self) -> bool {
        match &self.params.translate {
            Some(t) => t.encoder.is_finished(),
            None => self.usage.closed,
        }
    }

    /// Reads usage from each frame and, when asked, hides what the gateway added.
    fn filter(&mut self, complete: Bytes) -> Bytes {
        if self.params.translate.is_some() {
            return self.translate(&complete);
        }
        let mut kept: Option<Vec<u8>> = None;
        let mut start = 0;
        while start < complete.len() {
            let end = frame_end(&complete, start).unwrap_or(complete.len());
            let frame = &complete[start..end];
            let mut drop_frame = false;
            if let Some(data) = frame_data(frame) {
                let usage_only = observe(&mut self.usage, &mut self.text, self.upstream, &data);
                drop_frame = self.params.hide_usage && usage_only;
            }
            let strip =
                self.params.hide_usage && !drop_frame && memmem::find(frame, USAGE_NULL).is_some();
            if drop_frame || strip || kept.is_some() {
                let out = kept.get_or_insert_with(|| complete[..start].to_vec());
                if strip {
                    if let Some(at) = memmem::find(frame, USAGE_NULL) {
                        out.extend_from_slice(&frame[..at]);
                        out.extend_from_slice(&frame[at + USAGE_NULL.len()..]);
                    }
                } else if !drop_frame {
                    out.extend_from_slice(frame);
                }
            }
            start = end;
        }
        if self.params.dialect == Dialect::OpenAiResponses {
            if let Some(n) = last_sequence_number(&complete) {
                self.next_sequence = n + 1;
            }
        }
        match kept {
            Some(v) => Bytes::from(v),
            None => complete,
        }
    }

    /// Frames the provider sent together wait, already read, in the upstream connection's
    /// buffer, and its task hands them over one per turn. Lets it take its turns before
    /// `out` is written, so a burst reaches the client in one write instead of one per
    /// frame; nothing is waited for that has not arrived. An end or a failure met on the
    /// way is stashed for the relay's next turn. Returns what to write and the time spent
    /// processing.
    async fn gather_burst(&mut self, out: Bytes) -> (Bytes, Duration) {
        let mut spent = Duration::ZERO;
        let mut burst: Option<BytesMut> = None;
        for _ in 0..BURST_TURNS {
            // A poll that finds nothing is what tells the connection's task to decode the
            // next chunk; it takes two turns of the scheduler to hand it over (measured; a
            // third is allowed for slack).
            let mut next = self.chunks.next().now_or_never();
            for _ in 0..HANDOVER_TURNS {
                if next.is_some() {
                    break;
                }
                tokio::task::yield_now().await;
                next = self.chunks.next().now_or_never();
            }
            let Some(next) = next else {
                break;
            };
            let Some(Ok(chunk)) = next else {
                self.stashed = Some(next);
                break;
            };
            let started = Instant::now();
            let more = match self.process(chunk) {
                Ok(more) => more,
                Err(e) => {
                    // Written after what the burst gathered so far: the relay's next turn
                    // sends the error event and ends the stream.
                    self.failed = Some(e);
                    break;
                }
            };
            if !more.is_empty() {
                burst
                    .get_or_insert_with(|| BytesMut::from(&out[..]))
                    .extend_from_slice(&more);
            }
            spent += started.elapsed();
            if burst.as_ref().is_some_and(|b| b.len() >= BURST_BYTES) {
                break;
            }
        }
        (burst.map_or(out, BytesMut::freeze), spent)
    }

    fn finish(&mut self, outcome: Outcome, error: Option<&'static str>) {
        if let Some(t) = &self.params.translate {
            if self.usage.usage.is_none() && t.encoder.usage() != crate::usage::Usage::default() {
                self.usage.usage = Some(t.encoder.usage());
            }
            if self.usage.model.is_none() && !t.encoder.model().is_empty() {
                self.usage.model = Some(t.encoder.model().to_owned());
            }
        }
        if let Some(capture) = self.params.capture.take() {
            if outcome == Outcome::Completed {
                capture.finish(
                    self.params.dialect,
                    self.usage.usage,
                    self.usage.model.clone(),
                );
            }
        }
        if let Some(mut pending) = self.pending.take() {
            self.keep_in(&mut pending);
            pending.finish(outcome, error);
        }
        self.done = true;
    }

    /// Puts what the stream told into the record: the provider's usage and model, and
    /// the text relayed, counted only if the usage stopped short or never came.
    fn keep_in(&mut self, pending: &mut Pending) {
        let record = pending.record();
        record.usage = self.usage.usage;
        if self.usage.model.is_some() {
            record.model_served = self.usage.model.take();
        }
        pending.said(Said::Streamed(std::mem::take(&mut self.text)));
    }

    fn fail(&mut self, err: GatewayError) -> Bytes {
        if self.answered {
            // The client has its whole answer: what the provider does after is not its
            // concern, and no error event follows the end.
            self.finish(Outcome::Completed, None);
            return Bytes::new();
        }
        // A partial frame cannot be completed; the error event replaces it.
        self.buf.clear();
        self.scanned = 0;
        tracing::warn!(provider = %self.params.provider, error = %err, "stream ended early");
        let label = err.metric_label();
        let frame = self.error_frames(&err);
        self.finish(Outcome::UpstreamFailed, Some(label));
        frame
    }
}

impl Relay {
    /// The client's error event(s), continuing its stream: a Responses stream goes on
    /// from its last event number, and a translated one is failed by its encoder, which
    /// knows the output items written so far.
    fn error_frames(&mut self, err: &GatewayError) -> Bytes {
        if self.params.dialect != Dialect::OpenAiResponses {
            return err.sse_frame(self.params.dialect, &ResponsesPosition::default());
        }
        if let Some(t) = self.params.translate.as_mut() {
            if !t.encoder.is_finished() {
                let mut out = Vec::new();
                t.encoder.encode(
                    Event::Error(ProviderError {
                        kind: err.openai_code().to_owned(),
                        message: err.to_string(),
                    }),
                    &mut out,
                );
                return Bytes::from(out);
            }
        }
        let at = ResponsesPosition {
            next_sequence: self.next_sequence,
            id: self.usage.response_id.clone(),
            model: self.usage.model.clone(),
        };
        err.sse_frame(self.params.dialect, &at)
    }
}

/// Reads one provider frame's data, translated or not: its text while the answer has not
/// ended, then its usage and whether it ends the answer. Returns what
/// [`StreamUsage::observe`] does (an OpenAI Chat usage-only chunk).
fn observe(usage: &mut StreamUsage, text: &mut AnswerText, upstream: Dialect, data: &[u8]) -> bool {
    if !usage.ended {
        text.observe(upstream, data);
    }
    usage.observe(upstream, data)
}

/// The `sequence_number` of the last Responses event in `frames`: numbers only grow, so
/// the last one written is the stream's latest.
fn last_sequence_number(frames: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"sequence_number\":";
    let at = memmem::rfind(frames, KEY)? + KEY.len();
    let digits = frames[at..].trim_ascii_start();
    let end = digits
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

impl Drop for Relay {
    fn drop(&mut self) {
        // The body was dropped before the end: the client went away. With its answer's
        // last event in hand, the request is complete; before it, the client cancelled
        // (recorded as the `Pending` drops), with what was seen so far.
        if self.answered {
            self.finish(Outcome::Completed, None);
        } else if let Some(mut pending) = self.pending.take() {
            self.keep_in(&mut pending);
        }
    }
}

enum Next {
    Abort,
    Idle,
    Chunk(Option<Result<Bytes, BodyError>>),
}

/// Relays an event stream; `pending` is finished when the stream ends, however it ends.
pub fn relay_stream(body: UpBody, params: RelayParams, pending: Pending) -> Body {
    let upstream = params
        .translate
        .as_ref()
        .map_or(params.dialect, |t| t.decoder.dialect());
    let relay = Relay {
        chunks: Box::pin(BodyDataStream::new(body)),
        buf: BytesMut::new(),
        scanned: 0,
        received: 0,
        usage: StreamUsage::default(),
        text: AnswerText::default(),
        upstream,
        answered: false,
        params,
        pending: Some(pending),
        done: false,
        stashed: None,
        failed: None,
        next_sequence: 0,
    };
    let stream = futures_util::stream::unfold(relay, |mut relay| async move {
        loop {
            if relay.done {
                return None;
            }
            if relay.answered && relay.nothing_due() && relay.failed.is_none() {
                // The client's stream ends with its answer. What is left of the provider's
                // body (usually just its end, already read) is not waited for.
                if relay.stashed.is_none() {
                    relay.stashed = relay.chunks.next().now_or_never();
                }
                if !matches!(relay.stashed, Some(None)) {
                    relay.finish(Outcome::Completed, None);
                    return None;
                }
            }
            if let Some(err) = relay.failed.take() {
                let out = relay.fail(err);
                if out.is_empty() {
                    continue;
                }
                return Some((Ok(out), relay));
            }
            let idle = relay.params.idle;
            let next = if let Some(stashed) = relay.stashed.take() {
                Next::Chunk(stashed)
            } else {
                let abort = &mut relay.params.abort;
                let chunks = &mut relay.chunks;
                tokio::select! {
                    biased;
                    _ = async {
                        if abort.wait_for(|stop| *stop).await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    } => Next::Abort,
                    r = tokio::time::timeout(idle, chunks.next()) => match r {
                        Ok(item) => Next::Chunk(item),
                        Err(_) => Next::Idle,
                    },
                }
            };
            let out = match next {
                Next::Abort => relay.fail(GatewayError::ShuttingDown),
                Next::Idle => {
                    let provider = relay.params.provider.clone();
                    relay.fail(GatewayError::UpstreamTimeout {
                        provider,
                        phase: "the next stream event",
                    })
                }
                Next::Chunk(Some(Err(e))) => {
                    let provider = relay.params.provider.clone();
                    // A body that could not be read back (a broken frame) says why itself;
                    // a transport failure is worded as one.
                    let detail = match &e {
                        BodyError::Convert(reason) => reason.clone(),
                        BodyError::Transport(_) => classify(&provider, &e).to_string(),
                    };
                    relay.fail(GatewayError::UpstreamBroken { provider, detail })
                }
                Next::Chunk(None) => {
                    let rest = relay.buf.split().freeze();
                    let rest = match relay.params.translate.as_mut() {
                        // A translated stream is closed the client's way even when the
                        // provider ended without its own closing event.
                        Some(_) => {
                            let mut out = relay.translate(&rest).to_vec();
                            if let Some(t) = relay.params.translate.as_mut() {
                                t.encoder.finish(&mut out);
                            }
                            Bytes::from(out)
                        }
                        // Forward a trailing partial frame as is: it is the provider's to get right.
                        None => rest,
                    };
                    if let Some(capture) = relay.params.capture.as_mut() {
                        capture.push(&rest);
                    }
                    relay.finish(Outcome::Completed, None);
                    rest
                }
                Next::Chunk(Some(Ok(chunk))) => {
                    let started = Instant::now();
                    let out = match relay.process(chunk) {
                        Ok(out) => out,
                        Err(err) => {
                            let out = relay.fail(err);
                            if out.is_empty() {
                                continue;
                            }
                            return Some((Ok(out), relay));
                        }
                    };
                    let spent = started.elapsed();
                    let (out, more_spent) = relay.gather_burst(out).await;
                    let spent = spent + more_spent;
                    if let Some(capture) = relay.params.capture.as_mut() {
                        capture.push(&out);
                    }
                    if let Some(p) = relay.pending.as_mut() {
                        p.add_overhead(spent);
                    }
                    out
                }
            };
            if !out.is_empty() {
                relay.answered = relay.answered || relay.holds_the_end();
                return Some((Ok::<Bytes, std::convert::Infallible>(out), relay));
            }
        }
    });
    Body::from_stream(stream)
}

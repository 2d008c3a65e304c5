//! Stage 6, relay: the provider's answer on its way to the client — streamed as its frames
//! come, or read whole and passed on, and translated back when the provider speaks another
//! dialect.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, HeaderMap};

use super::optimized::settle_savings;
use super::prepare::{Outgoing, Via};
use super::stamp::{relayed_headers, stamp};
use super::{passthrough, translated, Ctx};
use crate::cache;
use crate::config::Provider;
use crate::error::GatewayError;
use crate::pending::Pending;
use crate::relay::{read_whole, relay_stream, ReadFailed, RelayParams, Translator};
use crate::state::AppState;
use crate::translate::stream::{Decoder, Encoder};

/// A provider's answer on its way to the client: headers with the body still to come,
/// or a whole body already read.
pub(super) enum Upstream {
    Headers(http::Response<crate::upstream::UpBody>),
    Whole(Whole),
}

/// A non-streamed answer, read whole.
pub(super) struct Whole {
    pub status: http::StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Whether an answer is relayed as a stream: an event stream, which for a translated
/// answer must also be a success (a provider's error is re-shaped whole).
pub(super) fn streams(response: &http::Response<crate::upstream::UpBody>, via: &Via) -> bool {
    is_event_stream(response.headers())
        && (matches!(via, Via::Same { .. }) || response.status().is_success())
}

/// 6. relay: the provider's answer to the client, streamed or whole, translated or not.
pub(super) async fn deliver(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    outgoing: Outgoing,
    answer: Upstream,
) -> Result<Response, GatewayError> {
    let headers_at = Instant::now();
    settle_savings(ctx, pending).await;
    let status = match &answer {
        Upstream::Headers(response) => response.status(),
        Upstream::Whole(whole) => whole.status,
    };
    pending.record().status = status.as_u16();
    let streaming = match &answer {
        Upstream::Headers(response) => streams(response, &outgoing.via),
        Upstream::Whole(_) => false,
    };
    let Outgoing {
        provider,
        store,
        via,
        forwarded,
        ..
    } = outgoing;
    watch_turn(state, ctx, pending, forwarded);
    let store = store.filter(|_| status == http::StatusCode::OK);
    let whole = match answer {
        Upstream::Headers(response) if streaming => {
            let translate = match &via {
                Via::Same { .. } => None,
                Via::Translated(how) => Some(Translator {
                    decoder: Decoder::new(how.provider_dialect),
                    encoder: Encoder::new(ctx.dialect(), how.stream_usage, unix_now())
                        .with_freeform_tools(how.freeform_tools.clone()),
                }),
            };
            let streamed = Streamed {
                headers_at,
                hide_usage: matches!(via, Via::Same { hide_usage: true }),
                translate,
                store,
            };
            return Ok(stream_out(
                state, ctx, pending, &provider, response, streamed,
            ));
        }
        // A retryable failure's answer, relayed as the last one.
        Upstream::Headers(response) => {
            let limit = ctx.rt.config.server.max_answer_bytes;
            whole_body(&provider, response, limit)
                .await
                .map_err(ReadFailed::into_error)?
        }
        Upstream::Whole(whole) => whole,
    };
    match via {
        Via::Same { .. } => passthrough::answer(state, ctx, pending, store, whole).await,
        Via::Translated(how) => {
            translated::answer(state, ctx, pending, &provider, how, store, whole).await
        }
    }
}

/// Hands the detector this turn, compared with the session's previous one when the
/// record is finished (with the provider's usage).
fn watch_turn(
    state: &AppState,
    ctx: &mut Ctx,
    pending: &mut Pending,
    forwarded: Option<crate::sessions::Sent>,
) {
    let Some(client) = ctx.client_sent.take() else {
        return;
    };
    let record = pending.record();
    let (Some(session), Some(model)) = (&record.session, &record.model_requested) else {
        return;
    };
    let turn = crate::sessions::Turn {
        key: crate::sessions::Turn::key_of(session, model),
        client,
        forwarded,
    };
    pending.watch(state.sessions.clone(), turn);
}

/// A non-streamed answer: its status, headers and whole body.
pub(super) async fn whole_body(
    provider: &Provider,
    response: http::Response<crate::upstream::UpBody>,
    limit: usize,
) -> Result<Whole, ReadFailed> {
    let (parts, body) = response.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let body = read_whole(
        body,
        &provider.name,
        provider.timeouts.idle,
        limit,
        declared,
    )
    .await?;
    Ok(Whole {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

/// How a streamed answer is relayed.
struct Streamed {
    /// When the provider's headers arrived, to count the gateway's time from there.
    headers_at: Instant,
    hide_usage: bool,
    translate: Option<Translator>,
    /// Where a complete answer is kept in the response cache.
    store: Option<cache::Prepared>,
}

/// The client's response for a provider's event stream: status and headers now, frames
/// as they come; the record goes with the body and is finished when the stream ends.
fn stream_out(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    provider: &Provider,
    response: http::Response<crate::upstream::UpBody>,
    streamed: Streamed,
) -> Response {
    let (parts, body) = response.into_parts();
    let mut out = Response::new(Body::empty());
    *out.status_mut() = parts.status;
    *out.headers_mut() = relayed_headers(parts.headers);
    ctx.overhead += streamed.headers_at.elapsed();
    stamp(&mut out, ctx);
    pending.record().overhead = ctx.overhead;
    let params = RelayParams {
        dialect: ctx.dialect(),
        provider: provider.name.clone(),
        idle: provider.timeouts.idle,
        max_event: ctx.rt.config.server.max_event_bytes,
        max_stream: ctx.rt.config.server.max_stream_bytes,
        hide_usage: streamed.hide_usage,
        abort: state.abort_streams(),
        translate: streamed.translate,
        capture: streamed
            .store
            .map(|store| cache::Capture::new(state.cache.clone(), store)),
    };
    *out.body_mut() = relay_stream(body, params, pending.hand_over());
    out
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

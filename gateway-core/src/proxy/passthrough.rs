//! The exchange when the provider speaks the client's dialect: the client's bytes go on,
//! with only the optimizer's edits, the model alias and the stream-usage request spliced
//! in; the answer comes back as the provider sent it.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::HeaderMap;

use super::answer::Whole;
use super::cached::{cached, Cached};
use super::prepare::{Outgoing, Via};
use super::stamp::{relayed_headers, stamp};
use super::Ctx;
use crate::cache;
use crate::config::Provider;
use crate::dialect::{Dialect, Endpoint};
use crate::estimate::Said;
use crate::pending::Pending;
use crate::sniff::{Edits, Sniffed};
use crate::state::AppState;

/// The request as it goes to the provider, or the cached answer.
#[allow(clippy::too_many_arguments)]
pub(super) async fn prepare(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &Bytes,
    sniffed: &Sniffed,
    optimized: Vec<(std::ops::Range<usize>, Vec<u8>)>,
    provider: &Arc<Provider>,
    model: &str,
    gateway_key: Option<&str>,
    breakpoints: bool,
) -> Result<Outgoing, Response> {
    let stream = sniffed.stream && ctx.endpoint.can_stream();
    let mut edits = Edits::default();
    let rewritten = !optimized.is_empty();
    edits.extend(optimized);
    // Gemini's model is in the path, which is made for the provider below.
    let path = (ctx.dialect() == Dialect::Gemini).then(|| ctx.endpoint.model_path(model, stream));
    if model != sniffed.model && path.is_none() {
        edits.rewrite_model(sniffed, model);
    }
    if stream && ctx.endpoint == Endpoint::ChatCompletions && provider.stream_usage {
        edits.request_stream_usage(body, sniffed);
    }
    let hide_usage = edits.injected_usage;
    let mut body = edits.apply(body.clone());
    // What the passes left is what the detector compares; the marks below move by design.
    let forwarded = rewritten.then(|| crate::sessions::Sent {
        dialect: ctx.dialect(),
        bytes: body.clone(),
    });
    if breakpoints && ctx.endpoint == Endpoint::Messages {
        let marks = crate::optimize::breakpoints::place(&body, model);
        if !marks.is_empty() {
            body = Bytes::from(crate::optimize::splice(&body, &marks));
        }
    }
    let lookup = cache::Request {
        provider: &provider.name,
        model,
        dialect: ctx.dialect(),
        gateway_key,
        credential: crate::upstream::client_credential(provider, headers),
        temperature: sniffed.temperature,
        body: &body,
    };
    let store = match cached(state, ctx, pending, headers, &lookup).await {
        Cached::Answer(response) => return Err(response),
        Cached::Store(store) => store,
    };
    Ok(Outgoing {
        provider: provider.clone(),
        endpoint: ctx.endpoint,
        path,
        query: query.map(str::to_owned),
        model: model.to_owned(),
        stream,
        headers: None,
        body,
        store,
        via: Via::Same { hide_usage },
        forwarded,
    })
}

/// A whole (not streamed) answer, passed on as the provider sent it.
pub(super) async fn answer(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    store: Option<cache::Prepared>,
    whole: Whole,
) -> Result<Response, crate::error::GatewayError> {
    let Whole {
        status,
        headers: upstream_headers,
        body: bytes,
    } = whole;
    let body_at = Instant::now();
    if status.is_success() {
        let (usage, served) = crate::usage::from_response(ctx.dialect(), &bytes);
        if let (Some(store), http::StatusCode::OK) = (&store, status) {
            let entry = cache::whole_entry(bytes.clone(), served.clone(), usage, store.ttl);
            state.cache.put(store, entry);
        }
        if usage.is_none() {
            // Counted by the gateway when the record is made (see `estimate`).
            pending.said(Said::Whole(ctx.dialect(), bytes.clone()));
        }
        pending.record().usage = usage;
        pending.record().model_served = served;
    }
    let mut out = Response::new(Body::from(bytes));
    *out.status_mut() = status;
    *out.headers_mut() = relayed_headers(upstream_headers);
    ctx.overhead += body_at.elapsed();
    stamp(&mut out, ctx);
    pending.record().overhead = ctx.overhead;
    Ok(out)
}

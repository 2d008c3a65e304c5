//! The response cache's stage, once a step's request is prepared: a stored answer
//! replayed, or where this one's answer is to be kept.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, HeaderValue};

use super::optimized::settle_savings;
use super::stamp::stamp;
use super::Ctx;
use crate::cache;
use crate::headers::X_CACHE_SIMILARITY;
use crate::pending::Pending;
use crate::state::AppState;

/// What the response cache made of a request.
pub(super) enum Cached {
    /// A stored answer, ready to send.
    Answer(Response),
    /// Not found (or not the cache's business): go upstream, and store the answer here.
    Store(Option<cache::Prepared>),
}

/// The cache stage: replays a stored answer, or says where to store this one.
pub(super) async fn cached(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    headers: &HeaderMap,
    request: &cache::Request<'_>,
) -> Cached {
    let Some(prepared) = state.cache.prepare(request, headers) else {
        return Cached::Store(None);
    };
    let Some(hit) = state.cache.get(&prepared, crate::clock::now_ms()) else {
        ctx.cache = Some(cache::Status::Miss);
        pending.record().cache = ctx.cache;
        metrics::counter!("trimgate_cache_lookups_total", "result" => "miss").increment(1);
        return Cached::Store(Some(prepared));
    };
    metrics::counter!("trimgate_cache_lookups_total", "result" => hit.status.as_str()).increment(1);
    ctx.cache = Some(hit.status);
    settle_savings(ctx, pending).await;
    let entry = hit.entry;
    let mut out = Response::new(Body::from(entry.body.clone()));
    let content_type = if entry.streamed {
        "text/event-stream"
    } else {
        "application/json"
    };
    out.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(score) = hit.similarity {
        if let Ok(v) = HeaderValue::from_str(&format!("{score:.3}")) {
            out.headers_mut().insert(X_CACHE_SIMILARITY, v);
        }
    }
    ctx.overhead = ctx.started.elapsed();
    stamp(&mut out, ctx);
    let record = pending.record();
    record.status = 200;
    record.cache = Some(hit.status);
    record.avoided = entry.usage;
    record.model_served = Some(entry.model.clone());
    record.overhead = ctx.overhead;
    Cached::Answer(out)
}

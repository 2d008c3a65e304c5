//! The exchange when the provider speaks another dialect: the body goes through the IR
//! both ways, and a provider error is re-shaped for the client (its status unchanged).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue};

use super::answer::{unix_now, Whole};
use super::cached::{cached, Cached};
use super::optimized::OFF_THREAD_BYTES;
use super::prepare::{Outgoing, Via};
use super::stamp::{relayed_headers, stamp};
use super::Ctx;
use crate::cache;
use crate::config::Provider;
use crate::dialect::{Dialect, Endpoint};
use crate::error::GatewayError;
use crate::headers::kept_headers;
use crate::pending::Pending;
use crate::state::AppState;
use crate::translate;

/// What a translated answer needs to be turned back into the client's dialect.
pub(super) struct Translation {
    pub provider_dialect: Dialect,
    pub stream_usage: bool,
    pub freeform_tools: Vec<String>,
}

/// The request in the provider's dialect, or the cached answer in the client's.
#[allow(clippy::too_many_arguments)]
pub(super) async fn prepare(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    inbound: &HeaderMap,
    body: &[u8],
    model: String,
    stream: bool,
    provider: &Arc<Provider>,
    provider_dialect: Dialect,
    gateway_key: Option<&str>,
    temperature: Option<f64>,
    breakpoints: bool,
) -> Result<Result<Outgoing, Response>, GatewayError> {
    let client_dialect = ctx.dialect();
    let target = translate::Target {
        dialect: provider_dialect,
        provider: &provider.name,
        kind: provider.kind,
        strict: provider.strict,
        max_output_tokens: provider.max_output_tokens,
    };
    let (ir, mut upstream_body, report) =
        translate::request_for(client_dialect, body, model, stream, &target)?;
    // What the detector compares is the body before the marks, which move by design.
    let mut unmarked = None;
    if breakpoints && provider_dialect == Dialect::AnthropicMessages {
        // A client of another dialect cannot ask for Anthropic's prompt cache itself.
        let marks = crate::optimize::breakpoints::place(&upstream_body, &ir.model);
        if !marks.is_empty() {
            let before = std::mem::take(&mut upstream_body);
            upstream_body = crate::optimize::splice(&before, &marks);
            unmarked = Some(Bytes::from(before));
        }
    }
    if !report.is_empty() {
        log_dropped(&report, inbound, &target);
        ctx.dropped = report.header_value();
        pending.record().dropped.clone_from(&ctx.dropped);
    }
    // The client's own provider's headers (`anthropic-beta`, `openai-organization`) mean
    // nothing to a provider of another dialect.
    let headers = kept_headers(
        inbound,
        match client_dialect {
            Dialect::AnthropicMessages => |name: &str| !name.starts_with("anthropic-"),
            Dialect::Gemini => |name: &str| !name.starts_with("x-goog-"),
            _ => |name: &str| !name.starts_with("openai-"),
        },
        0,
    );
    let lookup = cache::Request {
        provider: &provider.name,
        model: &ir.model,
        dialect: client_dialect,
        gateway_key,
        credential: crate::upstream::client_credential(provider, &headers),
        temperature,
        body: &upstream_body,
    };
    let store = match cached(state, ctx, pending, &headers, &lookup).await {
        Cached::Answer(response) => return Ok(Err(response)),
        Cached::Store(store) => store,
    };
    let upstream_body = Bytes::from(upstream_body);
    let forwarded = ctx.client_sent.as_ref().map(|_| crate::sessions::Sent {
        dialect: provider_dialect,
        bytes: unmarked.unwrap_or_else(|| upstream_body.clone()),
    });
    let endpoint = Endpoint::for_dialect(provider_dialect);
    // Gemini names the model and the stream in the path, and streams SSE only when asked.
    let (path, query) = match provider_dialect {
        Dialect::Gemini => (
            Some(endpoint.model_path(&ir.model, ir.stream)),
            ir.stream.then(|| "alt=sse".to_owned()),
        ),
        _ => (None, None),
    };
    Ok(Ok(Outgoing {
        provider: provider.clone(),
        endpoint,
        path,
        query,
        model: ir.model.clone(),
        stream: ir.stream,
        headers: Some(headers),
        body: upstream_body,
        store,
        via: Via::Translated(Translation {
            provider_dialect,
            stream_usage: ir.stream_usage,
            freeform_tools: ir.freeform_tools(),
        }),
        forwarded,
    }))
}

/// A whole (not streamed) answer in the client's dialect: the provider's success decoded
/// and encoded again, its error re-shaped.
pub(super) async fn answer(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    provider: &Provider,
    how: Translation,
    store: Option<cache::Prepared>,
    whole: Whole,
) -> Result<Response, GatewayError> {
    let client_dialect = ctx.dialect();
    let Whole {
        status,
        headers: upstream_headers,
        body: bytes,
    } = whole;
    let body_at = Instant::now();
    let out_body = if status.is_success() {
        let sent_whole = bytes.clone();
        let (decoded, mut out) = translate_answer(
            &provider.name,
            how.provider_dialect,
            client_dialect,
            bytes,
            how.freeform_tools,
        )
        .await?;
        // An answer without usage decodes to zeros: the gateway counts it when the record is
        // made, from the answer as the provider sent it.
        let reported = Some(decoded.usage).filter(|u| *u != crate::usage::Usage::default());
        if reported.is_none() {
            pending.said(crate::estimate::Said::Whole(
                how.provider_dialect,
                sent_whole,
            ));
        }
        if ctx.json_array {
            out.insert(0, b'[');
            out.push(b']');
        }
        pending.record().usage = reported;
        pending.record().model_served = Some(decoded.model.clone());
        if let (Some(store), http::StatusCode::OK) = (&store, status) {
            let entry = cache::whole_entry(
                Bytes::from(out.clone()),
                Some(decoded.model.clone()),
                Some(decoded.usage),
                store.ttl,
            );
            state.cache.put(store, entry);
        }
        out
    } else {
        match translate::decode_error(how.provider_dialect, &bytes) {
            Some(e) => translate::encode_error(client_dialect, status.as_u16(), &e),
            None => bytes.to_vec(),
        }
    };
    let mut out = Response::new(Body::from(out_body));
    *out.status_mut() = status;
    *out.headers_mut() = relayed_headers(upstream_headers);
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    ctx.overhead += body_at.elapsed();
    stamp(&mut out, ctx);
    pending.record().overhead = ctx.overhead;
    Ok(out)
}

/// A provider's whole answer rewritten in the client's dialect: the decoded answer and
/// the client's bytes. A large answer is parsed on a blocking thread, so the other
/// requests of this serving thread go on meanwhile.
async fn translate_answer(
    provider: &str,
    from: Dialect,
    to: Dialect,
    bytes: Bytes,
    freeform_tools: Vec<String>,
) -> Result<(translate::ir::Response, Vec<u8>), GatewayError> {
    let small = bytes.len() < OFF_THREAD_BYTES;
    let name = provider.to_owned();
    let work = move || {
        let decoded =
            translate::decode_response(from, &bytes).map_err(|e| GatewayError::UpstreamBroken {
                provider: name,
                detail: format!("its response could not be read: {e}"),
            })?;
        let out = translate::encode_response(to, &decoded, unix_now(), &freeform_tools)?;
        Ok((decoded, out))
    };
    if small {
        return work();
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| GatewayError::UpstreamBroken {
            provider: provider.to_owned(),
            detail: "its response could not be translated".into(),
        })?
}

/// Logs each dropped field once per client program (its `user-agent` product, version
/// left out), so an agent's every request does not repeat the same lines.
fn log_dropped(report: &translate::Report, headers: &HeaderMap, target: &translate::Target<'_>) {
    static SEEN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    /// Enough for every agent's fields; past it, fields are logged at debug only.
    const SEEN_MAX: usize = 1024;
    let client = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split(['/', ' ']).next())
        .unwrap_or("unknown")
        .chars()
        .take(64)
        .collect::<String>();
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    for field in report.dropped() {
        let key = (client.clone(), field.clone());
        if seen.contains(&key) {
            continue;
        }
        if seen.len() < SEEN_MAX {
            tracing::info!(client = %client, field = %field, provider = target.provider, dialect = %target.dialect, "request field dropped: the target has no place for it (reported in x-trimgate-dropped)");
            seen.push(key);
        } else {
            tracing::debug!(client = %client, field = %field, provider = target.provider, "request field dropped");
        }
    }
}

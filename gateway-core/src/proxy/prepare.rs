//! Stage 4, prepare: the request as it goes to one step's provider — optimized, then in
//! the client's dialect ([`passthrough`]) or through the IR into one the provider speaks
//! ([`translated`]).

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::HeaderMap;

use super::optimized::optimize;
use super::plan::{plan_for, Step};
use super::{passthrough, translated, Ctx};
use crate::cache;
use crate::config::{GatewayKey, Provider};
use crate::dialect::Endpoint;
use crate::error::GatewayError;
use crate::pending::Pending;
use crate::state::AppState;
use crate::translate;

/// The request as it goes to one provider: built once per step of the chain, sent again
/// as it is when that step is retried.
pub(super) struct Outgoing {
    pub provider: Arc<Provider>,
    pub endpoint: Endpoint,
    /// The path below the base URL, for an endpoint whose path names the model (Gemini's).
    pub path: Option<String>,
    /// The model and whether a stream is asked for, as sent: a cloud's path names them.
    pub model: String,
    pub stream: bool,
    pub query: Option<String>,
    /// The headers to send, when not the client's own (a translated request's are filtered).
    pub headers: Option<HeaderMap>,
    pub body: Bytes,
    /// Where a complete answer is kept in the response cache.
    pub store: Option<cache::Prepared>,
    pub via: Via,
    /// The body as forwarded (before cache breakpoints) when it is not the client's, for
    /// the cache-break detector.
    pub forwarded: Option<crate::sessions::Sent>,
}

pub(super) enum Via {
    /// The client's dialect; `hide_usage` when the gateway asked for the usage chunk.
    Same {
        hide_usage: bool,
    },
    Translated(translated::Translation),
}

/// Optimizes and prepares the request for one step's provider: in the client's dialect,
/// or through the IR into one the provider speaks. `Ok(Err(_))` is a cached answer.
#[allow(clippy::too_many_arguments)]
pub(super) async fn prepare(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    parts: &http::request::Parts,
    body: &Bytes,
    sniffed: &crate::sniff::Sniffed,
    key: Option<&GatewayKey>,
    gateway_key: Option<&str>,
    step: &Step,
) -> Result<Result<Outgoing, Response>, GatewayError> {
    let provider = &step.provider;
    let plan = plan_for(
        state,
        &ctx.rt,
        &step.model,
        key,
        &parts.headers,
        ctx.dialect(),
        body,
    )?;
    // On Bedrock only Claude takes the marks (Converse turns them into cache points,
    // which other models refuse).
    let breakpoints = plan.breakpoints
        && provider.kind.takes_cache_control()
        && (provider.kind != crate::config::ProviderKind::Bedrock
            || crate::upstream::cloud::is_anthropic_model(&step.model));
    // A provider whose dialect depends on the model (Vertex: Claude or Gemini) speaks
    // only that one for it.
    let per_model = crate::upstream::cloud::dialect_for(provider, &step.model);
    if per_model.map_or(provider.speaks(ctx.dialect()), |d| d == ctx.dialect()) {
        // 3. optimize, 4. prepare
        let edits = optimize(state, ctx, body, &step.model, &plan).await;
        return Ok(passthrough::prepare(
            state,
            ctx,
            pending,
            &parts.headers,
            parts.uri.query(),
            body,
            sniffed,
            edits,
            provider,
            &step.model,
            gateway_key,
            breakpoints,
        )
        .await);
    }
    let translatable = match per_model {
        Some(d) => translate::can_translate(ctx.dialect(), d).then_some(d),
        None => provider
            .dialects
            .iter()
            .copied()
            .find(|d| translate::can_translate(ctx.dialect(), *d)),
    };
    let Some(provider_dialect) = translatable else {
        return Err(GatewayError::DialectUnsupported {
            provider: provider.name.clone(),
            provider_dialects: provider.dialect_names(),
            client: ctx.dialect(),
            model: sniffed.model.clone(),
        });
    };
    // 3. optimize, on the client's bytes, before they are translated
    let edits = optimize(state, ctx, body, &step.model, &plan).await;
    let body = if edits.is_empty() {
        body.clone()
    } else {
        Bytes::from(crate::optimize::splice(body, &edits))
    };
    translated::prepare(
        state,
        ctx,
        pending,
        &parts.headers,
        &body,
        step.model.to_string(),
        sniffed.stream && ctx.endpoint.can_stream() && !ctx.json_array,
        provider,
        provider_dialect,
        gateway_key,
        sniffed.temperature,
        breakpoints,
    )
    .await
}

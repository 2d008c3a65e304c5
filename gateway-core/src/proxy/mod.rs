//! The request stages, in the order they run:
//!
//! 1. **ingress** — the path gave the endpoint; check the content type, read the body
//!    within the size limit, read `model` and `stream` from it.
//! 2. **route** — model → provider; refuse a provider that does not speak the client's dialect.
//! 3. **optimize** — the passes the plan turns on rewrite blocks of the original bytes.
//! 4. **prepare** — splice the model alias and the stream-usage request into the original bytes.
//! 5. **upstream** — send with the provider's key; wait for the headers. The exact token
//!    count of what the optimizer saved runs meanwhile on a blocking thread.
//! 6. **relay** — stream frames as they come, or read the whole body and pass it on.
//! 7. **record** — always, success or failure, through [`Pending`].
//!
//! Steps 3–5 run once per attempt: a failure before the response headers that a retry
//! may fix ([`crate::retry`]) is tried again on the same provider or the route's next
//! fallback, each with its own model, key and optimizer modes; the path for a provider of
//! the client's dialect is [`passthrough`], for one of another dialect [`translated`].
//!
//! Where each stage lives:
//!
//! - [`inbound`] — 1: the request's id and session, its content type, its body within the
//!   limits.
//! - [`plan`] — 2: the chain of steps (the routed provider, then the fallbacks) and each
//!   step's optimizer plan.
//! - [`guard`] — the request's secrets replaced and the pre hooks, before anything keeps or
//!   forwards its bytes; the values put back into the answer.
//! - [`attempts`] — `run`: stages 1–2 once, then 3–5 per attempt, with retries and fallbacks.
//! - [`key_pool`] — which key of a provider's pool an attempt goes out with.
//! - [`optimized`] — 3: the optimizer's passes and the exact count of what they saved.
//! - [`prepare`] — 4: the request for one step's provider, by [`passthrough`] or [`translated`].
//! - [`cached`] — the response cache: a stored answer replayed, or where to keep this one.
//! - [`answer`] — 6: the provider's answer relayed to the client, streamed or whole.
//! - [`count`] — `count_tokens` answered here for a provider without that endpoint.
//! - [`stamp`] — the response headers: the provider's that go on, and the gateway's own.
//!
//! This file holds the entry point, [`handle`], which finishes the record (7) whether the
//! request was served or refused, and what the stages share, [`Ctx`].

mod answer;
mod attempts;
mod cached;
mod count;
mod guard;
mod inbound;
mod key_pool;
mod optimized;
mod passthrough;
mod plan;
mod prepare;
mod stamp;
mod translated;

pub use inbound::{request_id, PathModel};

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::response::Response;

use crate::cache;
use crate::config::Provider;
use crate::dialect::{Dialect, Endpoint};
use crate::error::Culprit;
use crate::pending::Pending;
use crate::record::{Outcome, RequestRecord};
use crate::state::{AppState, Runtime};

use attempts::run;
use optimized::Optimized;
use stamp::stamp;

/// Per-request facts the stages share.
struct Ctx {
    /// The config in force when the request arrived, with its clients and optimizer.
    rt: Arc<Runtime>,
    id: String,
    endpoint: Endpoint,
    started: Instant,
    /// Gateway time spent so far, upstream wait excluded.
    overhead: Duration,
    /// What the optimizer did, once it ran.
    optimized: Option<Optimized>,
    /// How the response cache took this request, when it applies.
    cache: Option<cache::Status>,
    /// Fields a translation left out, for `x-trimgate-dropped`.
    dropped: String,
    /// Attempts made so far, for `x-trimgate-attempts`.
    attempts: u32,
    /// The request as the client sent it, for the cache-break detector (a generation
    /// request); what was forwarded goes with the [`Outgoing`].
    client_sent: Option<crate::sessions::Sent>,
    /// The provider and model of the attempt under way, for `x-trimgate-provider`/`-model`.
    served: Option<(Arc<Provider>, Arc<str>)>,
    /// A Gemini client asked for its stream as one JSON array (no `alt=sse`): translated,
    /// it gets the whole answer as that array's one element.
    json_array: bool,
    /// In redact mode, the values the answer gets back (its scope's).
    restore: Option<crate::guard::Values>,
    /// Guardrail hooks that see the answer.
    post_hooks: Option<guard::PostHooks>,
}

impl Ctx {
    fn dialect(&self) -> Dialect {
        self.endpoint.dialect()
    }
}

pub async fn handle(
    State(state): State<Arc<AppState>>,
    endpoint: Endpoint,
    request: Request,
) -> Response {
    let started = Instant::now();
    let mut ctx = Ctx {
        rt: state.runtime(),
        id: request_id(request.headers()),
        endpoint,
        started,
        overhead: Duration::ZERO,
        optimized: None,
        cache: None,
        dropped: String::new(),
        attempts: 0,
        served: None,
        client_sent: None,
        json_array: false,
        restore: None,
        post_hooks: None,
    };
    let record = RequestRecord::new(ctx.id.clone(), ctx.dialect());
    // Created before any stage runs, so a client that leaves mid-request is still recorded.
    let mut pending = Pending::new(state.recorder.clone(), record, started);
    let result = match run(&state, &mut ctx, &mut pending, request).await {
        Ok(response) => guard::after(&state, &mut ctx, response).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(response) => {
            // A streamed answer handed its record to the body; this finishes the others.
            pending.finish(Outcome::Completed, None);
            response
        }
        Err(err) => {
            if err.culprit() == Culprit::Client {
                tracing::debug!(request_id = %ctx.id, error = %err, kind = err.metric_label(), "request refused");
            } else {
                tracing::warn!(request_id = %ctx.id, error = %err, kind = err.metric_label(), "request failed");
            }
            // Refused before the upstream call: all of the time was the gateway's.
            if ctx.overhead.is_zero() {
                ctx.overhead = ctx.started.elapsed();
            }
            let label = err.metric_label();
            let record = pending.record();
            record.status = err.status().as_u16();
            record.overhead = ctx.overhead;
            pending.finish(Outcome::GatewayError, Some(label));
            let mut response = err.into_response(ctx.dialect());
            stamp(&mut response, &ctx);
            response
        }
    }
}

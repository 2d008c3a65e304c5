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

mod guard;
mod passthrough;
mod translated;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue};
use http_body_util::BodyExt;

use crate::cache;
use crate::config::{GatewayKey, Provider};
use crate::dialect::{Dialect, Endpoint};
use crate::error::{Culprit, GatewayError};
use crate::headers::{
    relayed_response_header, retain_headers, SESSION_HEADERS, X_APPLIED, X_ATTEMPTS, X_CACHE,
    X_CACHE_SIMILARITY, X_DROPPED, X_MODEL, X_OPTIMIZE, X_OVERHEAD_MS, X_PROVIDER, X_REQUEST_ID,
    X_RETRY, X_SAVED_BYTES, X_SAVED_TOKENS, X_UPSTREAM_REQUEST_ID,
};
use crate::optimize::{PassTokens, Plan, PlanPatch};
use crate::pending::Pending;
use crate::record::{Millis, Outcome, RequestRecord};
use crate::relay::{
    read_whole, ready_or_within, relay_stream, ReadFailed, RelayParams, Translator,
};
use crate::sniff::{sniff_for_model, sniff_within, Limits};
use crate::state::{AppState, Runtime};
use crate::translate;
use crate::translate::stream::{Decoder, Encoder};

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

/// The optimizer's echo: `x-trimgate-applied`, `-saved-bytes`, `-saved-tokens`.
struct Optimized {
    applied: String,
    saved_bytes: i64,
    saved_tokens: Option<i64>,
    /// Per pass, exact.
    passes: Vec<PassTokens>,
    /// The exact token count, running while the request is upstream.
    counting: Option<tokio::task::JoinHandle<Vec<PassTokens>>>,
    /// The ids of the blocks rewritten, for the record.
    rewrites: Vec<String>,
}

impl Ctx {
    fn dialect(&self) -> Dialect {
        self.endpoint.dialect()
    }
}

/// The model and stream a Gemini request's path names (`models/{model}:streamGenerateContent`),
/// handed to [`handle`] in the request's extensions: its body names neither.
#[derive(Clone, Debug)]
pub struct PathModel {
    model: String,
    stream: bool,
    /// A stream asked without `alt=sse`: Google then streams one JSON array.
    array: bool,
}

impl PathModel {
    pub fn new(model: &str, stream: bool, sse: bool) -> PathModel {
        PathModel {
            model: model.to_owned(),
            stream,
            array: stream && !sse,
        }
    }
}

/// The agent's session id, when it sent a sane one (see [`SESSION_HEADERS`]).
fn session_id(headers: &HeaderMap) -> Option<String> {
    SESSION_HEADERS.iter().find_map(|name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
            .map(str::to_owned)
    })
}

/// The request id: the client's, when it sent a sane one, else a fresh one.
pub fn request_id(headers: &HeaderMap) -> String {
    headers
        .get(&X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| {
            // Written straight into a buffer: `to_string` goes through the formatter.
            let mut text = uuid::Uuid::encode_buffer();
            uuid::Uuid::new_v4()
                .hyphenated()
                .encode_lower(&mut text)
                .to_owned()
        })
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

fn stamp(response: &mut Response, ctx: &Ctx) {
    if let Ok(v) = HeaderValue::from_str(&ctx.id) {
        response.headers_mut().insert(X_REQUEST_ID, v);
    }
    response
        .headers_mut()
        .insert(X_OVERHEAD_MS, millis_header(ctx.overhead));
    if let Some((provider, model)) = &ctx.served {
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&provider.name) {
            headers.insert(X_PROVIDER, v);
        }
        if let Ok(v) = HeaderValue::from_str(model) {
            headers.insert(X_MODEL, v);
        }
        headers.insert(
            X_ATTEMPTS,
            match ctx.attempts {
                1 => HeaderValue::from_static("1"),
                n => HeaderValue::from(n),
            },
        );
    }
    if let Some(status) = ctx.cache {
        response
            .headers_mut()
            .insert(X_CACHE, HeaderValue::from_static(status.header()));
    }
    if !ctx.dropped.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&ctx.dropped) {
            response.headers_mut().insert(X_DROPPED, v);
        }
    }
    if let Some(o) = &ctx.optimized {
        let headers = response.headers_mut();
        if o.applied.is_empty() {
            headers.insert(X_APPLIED, HeaderValue::from_static(""));
        } else if let Ok(v) = HeaderValue::from_str(&o.applied) {
            headers.insert(X_APPLIED, v);
        }
        headers.insert(X_SAVED_BYTES, count_header(o.saved_bytes));
        if let Some(tokens) = o.saved_tokens {
            headers.insert(X_SAVED_TOKENS, count_header(tokens));
        }
    }
}

/// Headers `stamp` and `relayed_headers` add to a response at most.
const STAMPED: usize = 10;

/// A count as a header value; the zero that most requests carry without an allocation.
fn count_header(n: i64) -> HeaderValue {
    if n == 0 {
        HeaderValue::from_static("0")
    } else {
        HeaderValue::from(n)
    }
}

/// `x-trimgate-overhead-ms`: milliseconds with three decimals (`0.042`).
fn millis_header(d: Duration) -> HeaderValue {
    HeaderValue::from_str(Millis(d).text(&mut [0; 24])).unwrap_or(HeaderValue::from_static("0.000"))
}

/// Waits for the exact count of saved tokens (it ran while the request was upstream).
async fn settle_savings(ctx: &mut Ctx, pending: &mut Pending) {
    let Some(o) = &mut ctx.optimized else {
        return;
    };
    if let Some(task) = o.counting.take() {
        let waited = Instant::now();
        if let Ok(passes) = task.await {
            o.saved_tokens = Some(PassTokens::saved(&passes));
            o.passes = passes;
        }
        ctx.overhead += waited.elapsed();
    }
    let record = pending.record();
    record.applied.clone_from(&o.applied);
    record.saved_bytes = o.saved_bytes;
    record.saved_tokens = o.saved_tokens.unwrap_or(0);
    record.passes.clone_from(&o.passes);
    record.rewrites.clone_from(&o.rewrites);
}

/// Runs the passes the plan turns on and starts the exact count of what they saved.
async fn optimize(
    state: &AppState,
    ctx: &mut Ctx,
    body: &Bytes,
    model: &str,
    plan: &Planned,
) -> Vec<(std::ops::Range<usize>, Vec<u8>)> {
    if plan.held_out {
        ctx.optimized = Some(Optimized {
            applied: HOLDOUT.into(),
            saved_bytes: 0,
            saved_tokens: Some(0),
            passes: Vec::new(),
            counting: None,
            rewrites: Vec::new(),
        });
        return Vec::new();
    }
    let outcome = if body.len() < OFF_THREAD_BYTES {
        ctx.rt.optimizer.run(ctx.dialect(), body, model, &plan.plan)
    } else {
        // Milliseconds of work: a blocking thread, so other requests on this worker go on.
        let (optimizer, body, model, plan, dialect) = (
            ctx.rt.optimizer.clone(),
            body.clone(),
            model.to_owned(),
            plan.plan,
            ctx.dialect(),
        );
        tokio::task::spawn_blocking(move || optimizer.run(dialect, &body, &model, &plan))
            .await
            .unwrap_or_default()
    };
    // Each rewritten block's id, once: the record names them, and the ledger keeps those a
    // marker points at.
    let rewrites: Vec<String> = outcome
        .changes
        .iter()
        .map(|c| crate::optimize::originals::id(&c.hash))
        .collect();
    // What a marker says is kept must outlive this process's memory: into the ledger.
    if let Some(db) = state.originals_db() {
        for (change, id) in outcome
            .changes
            .iter()
            .zip(&rewrites)
            .filter(|(c, _)| c.replacement.contains("/originals/"))
        {
            db.keep(crate::ledger::originals::Kept {
                id: id.clone(),
                pass: change.pass,
                original: change.original.clone(),
            });
        }
    }
    let counting = (!outcome.changes.is_empty() || outcome.added.is_some()).then(|| {
        let optimizer = ctx.rt.optimizer.clone();
        let applied = outcome.for_counting();
        tokio::task::spawn_blocking(move || applied.exact_tokens(&optimizer.shared.counts))
    });
    ctx.optimized = Some(Optimized {
        applied: outcome.applied_header(),
        saved_bytes: outcome.saved_bytes,
        saved_tokens: if counting.is_some() { None } else { Some(0) },
        passes: Vec::new(),
        counting,
        rewrites,
    });
    outcome.edits
}

/// Bodies from this size are optimized on a blocking thread.
const OFF_THREAD_BYTES: usize = 64 * 1024;

/// `x-trimgate-applied` for a request of the control group.
const HOLDOUT: &str = "holdout";

/// The passes a request runs, or that it is held out of them as a control.
struct Planned {
    plan: Plan,
    held_out: bool,
    /// Mark prompt-cache breakpoints when the request goes to Anthropic without any: on
    /// unless turned off, paused, held out (the control group gets nothing of the
    /// gateway's) or the request says `x-trimgate-optimize: off`.
    breakpoints: bool,
}

/// The plan for this request: the model's modes, then the gateway key's, then the header's.
/// A request that names its own modes is never held out.
fn plan_for(
    state: &AppState,
    rt: &Runtime,
    model: &str,
    key: Option<&GatewayKey>,
    headers: &HeaderMap,
    dialect: Dialect,
    body: &[u8],
) -> Result<Planned, GatewayError> {
    if state.paused.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(Planned {
            plan: Plan::OFF,
            held_out: false,
            breakpoints: false,
        });
    }
    let modes = &rt.optimizer.modes;
    let mut plan = modes.for_model(model);
    if let Some(key) = key {
        plan.apply(&key.optimize);
    }
    let Some(value) = headers.get(&X_OPTIMIZE) else {
        let held_out = !plan.is_off() && modes.held_out(model, dialect, body);
        return Ok(Planned {
            plan,
            held_out,
            breakpoints: modes.cache_breakpoints && !held_out,
        });
    };
    let text = value
        .to_str()
        .map_err(|_| GatewayError::InvalidOptimizeHeader("not ASCII".into()))?;
    let patch = PlanPatch::from_header(text).map_err(GatewayError::InvalidOptimizeHeader)?;
    plan.apply(&patch);
    Ok(Planned {
        plan,
        held_out: false,
        breakpoints: modes.cache_breakpoints && !text.trim().eq_ignore_ascii_case("off"),
    })
}

fn is_json(headers: &HeaderMap) -> Result<(), GatewayError> {
    let value = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = value.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(GatewayError::UnsupportedMediaType(value.to_owned()))
    }
}

/// Reads the body within the size limit and the time limit. An over-limit body is read
/// on and thrown away (up to `max_discard_bytes`, within the time limit) before the 413
/// goes out, so a client that writes its whole body before reading gets the answer rather
/// than a reset; one that asked `Expect: 100-continue` has sent nothing to throw away.
async fn read_body(
    mut body: Body,
    headers: &HeaderMap,
    server: &crate::config::Server,
) -> Result<Bytes, GatewayError> {
    let limit = server.max_body_bytes;
    let too_large = GatewayError::BodyTooLarge { limit };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let deadline = tokio::time::Instant::now() + server.body_timeout;
    if declared.is_some_and(|n| n > limit as u64) {
        let expects_continue = headers
            .get(header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if !expects_continue {
            discard(body, server.max_discard_bytes, deadline).await;
        }
        return Err(too_large);
    }
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    loop {
        let frame = match ready_or_within(body.frame(), || deadline).await {
            Err(_) => {
                return Err(GatewayError::BodyTimeout {
                    secs: server.body_timeout.as_secs_f64(),
                })
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(GatewayError::InvalidJson(format!(
                    "could not read the request body: {e}"
                )))
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total += data.len();
        if total > limit {
            discard(body, server.max_discard_bytes, deadline).await;
            return Err(too_large);
        }
        chunks.push(data);
    }
    // One chunk is passed on as it is; several are joined once.
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.swap_remove(0),
        _ => {
            let mut joined = bytes::BytesMut::with_capacity(total);
            for chunk in &chunks {
                joined.extend_from_slice(chunk);
            }
            joined.freeze()
        }
    })
}

/// Reads and drops what is left of a body, up to `max` bytes or the deadline.
async fn discard(mut body: Body, max: usize, deadline: tokio::time::Instant) {
    let mut dropped = 0usize;
    while dropped <= max {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                dropped += frame.data_ref().map_or(0, Bytes::len);
            }
            _ => return,
        }
    }
}

/// The request as it goes to one provider: built once per step of the chain, sent again
/// as it is when that step is retried.
struct Outgoing {
    provider: Arc<Provider>,
    endpoint: Endpoint,
    /// The path below the base URL, for an endpoint whose path names the model (Gemini's).
    path: Option<String>,
    /// The model and whether a stream is asked for, as sent: a cloud's path names them.
    model: String,
    stream: bool,
    query: Option<String>,
    /// The headers to send, when not the client's own (a translated request's are filtered).
    headers: Option<HeaderMap>,
    body: Bytes,
    /// Where a complete answer is kept in the response cache.
    store: Option<cache::Prepared>,
    via: Via,
    /// The body as forwarded (before cache breakpoints) when it is not the client's, for
    /// the cache-break detector.
    forwarded: Option<crate::sessions::Sent>,
}

enum Via {
    /// The client's dialect; `hide_usage` when the gateway asked for the usage chunk.
    Same {
        hide_usage: bool,
    },
    Translated(translated::Translation),
}

/// One step of a request's chain: the routed provider first, then the route's fallbacks.
struct Step {
    provider: Arc<Provider>,
    /// The model name this step sends.
    model: Arc<str>,
}

/// The steps for this request, and how many attempts they may take together. A step on a
/// provider the client may not use is left out, before `x-trimgate-retry: off` keeps only
/// the first: that one attempt goes where the client may be served.
fn chain(
    target: &crate::routing::Target<'_, Provider>,
    requested: &str,
    headers: &HeaderMap,
    settings: &crate::retry::Settings,
    may_use: impl Fn(&Provider) -> bool,
) -> (Vec<Step>, u32) {
    let mut steps: Vec<Step> = target
        .steps(requested)
        .filter(|(provider, _)| may_use(provider))
        .map(|(provider, model)| Step {
            provider: provider.clone(),
            model: Arc::from(model),
        })
        .collect();
    let retry_off = headers
        .get(&X_RETRY)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"off"));
    if retry_off {
        steps.truncate(1);
        return (steps, 1);
    }
    (steps, target.max_attempts.unwrap_or(settings.max_attempts))
}

async fn run(
    state: &Arc<AppState>,
    ctx: &mut Ctx,
    pending: &mut Pending,
    request: Request,
) -> Result<Response, GatewayError> {
    // 1. ingress
    let peer = crate::ingress::peer(&request);
    let (mut parts, body) = request.into_parts();
    let client = state.client_key(&parts.headers, peer).await?;
    let virtual_key = client.as_ref().and_then(|c| c.virtual_key.clone());
    let key = client.map(|c| c.gateway_key);
    state.strip_local_key(&mut parts.headers);
    pending.record().gateway_key = key.as_ref().map(|k| k.name.clone());
    let header_session = session_id(&parts.headers);
    pending.record().session.clone_from(&header_session);
    is_json(&parts.headers)?;
    let config = ctx.rt.config.clone();
    let body = read_body(body, &parts.headers, &config.server).await?;
    let limits = Limits {
        model_bytes: config.server.max_model_bytes,
        json_depth: config.server.max_json_depth,
    };
    let path_model = parts.extensions.remove::<PathModel>();
    ctx.json_array = path_model.as_ref().is_some_and(|named| named.array);
    let sniff = |body: &[u8]| match &path_model {
        Some(named) => sniff_for_model(body, limits, &named.model, named.stream),
        None => sniff_within(body, limits),
    };
    let sniffed = sniff(&body)?;
    let stream = sniffed.stream && ctx.endpoint.can_stream();
    pending.record().model_requested = Some(sniffed.model.clone());
    pending.record().streamed = stream;
    if ctx.endpoint.counts_tokens() {
        pending.record().kind = crate::record::Kind::CountTokens;
    }
    if !ctx.endpoint.counts_tokens() {
        // A session for every request: an SDK script's turns group by their first message.
        if header_session.is_none() {
            pending.record().session = sniffed
                .first_user
                .clone()
                .map(|span| crate::sessions::derived_id(&sniffed.model, &body[span]));
        }
    }

    // 2. route
    let target = config.routes.resolve(&sniffed.model);
    // A virtual key's models, providers and limits, before a model nothing serves is
    // answered (a key kept to some models does not learn what else is served). A key that
    // may use no provider of the route is refused here, so its steps are never all skipped.
    let admitted = match (&virtual_key, state.keys()) {
        (Some(vk), Some(book)) => {
            let route: Vec<&str> = target
                .iter()
                .flat_map(|t| {
                    std::iter::once(t.provider).chain(t.fallbacks.iter().map(|s| &s.provider))
                })
                .map(|p| p.name.as_str())
                .collect();
            book.admit(vk, &sniffed.model, &route).await?;
            Some(vk)
        }
        _ => None,
    };
    let target = target.ok_or_else(|| GatewayError::UnknownModel {
        model: sniffed.model.clone(),
        served: config.routes.served_summary(),
    })?;
    let settings = &config.retry;
    let (steps, max_attempts) = chain(&target, &sniffed.model, &parts.headers, settings, |p| {
        admitted.is_none_or(|vk| vk.may_use(&p.name))
    });

    // 2b. guard: the request's secrets, before anything keeps or forwards its bytes.
    let decision = config.guard.decide(
        &sniffed.model,
        &steps[0].provider.name,
        key.as_ref().and_then(|k| k.guard),
    );
    let scope = |session: Option<&str>| guard::scope(key.as_ref(), &parts.headers, session);
    let guarded = guard::request(
        state,
        pending,
        &config.guard,
        decision.mode,
        scope,
        ctx.dialect(),
        &body,
    )
    .await?;
    ctx.restore = guarded.restore;
    let mut changed = guarded.body;
    // Hooks see the request as it will go: its secrets already replaced.
    if !decision.hooks.is_empty() {
        let meta = crate::hooks::Meta {
            request_id: &ctx.id,
            model: &sniffed.model,
            dialect: ctx.dialect().as_str(),
            provider: &steps[0].provider.name,
        };
        let current = changed.clone().unwrap_or_else(|| body.clone());
        let checked = state
            .hooks
            .before(&decision.hooks, &meta, current.clone())
            .await?;
        if checked != current {
            changed = Some(checked.clone());
        }
        if decision.hooks.iter().any(|h| h.post) {
            ctx.post_hooks = Some(guard::PostHooks {
                hooks: decision.hooks.clone(),
                request: checked,
                model: sniffed.model.clone(),
                provider: steps[0].provider.name.clone(),
            });
        }
    }
    // Spans of the sniffed fields move with a changed body.
    let (body, sniffed) = match changed {
        Some(redacted) => {
            let sniffed = sniff(&redacted)?;
            (redacted, sniffed)
        }
        None => (body, sniffed),
    };
    if !ctx.endpoint.counts_tokens() {
        ctx.client_sent = Some(crate::sessions::Sent {
            dialect: ctx.dialect(),
            bytes: body.clone(),
        });
    }

    if ctx.endpoint.counts_tokens()
        && (!steps[0].provider.speaks(ctx.dialect())
            || crate::upstream::cloud::counts_locally(
                &steps[0].provider,
                &steps[0].model,
                ctx.dialect(),
            ))
    {
        pending.record().provider = Some(steps[0].provider.name.clone());
        return count_locally(ctx, pending, body).await;
    }
    let gateway_key = key.as_ref().map(|k| k.name.as_str());

    // 3–5, per attempt: optimize and prepare for the step's provider, then send; a failure
    // before the response headers that a retry may fix goes round again.
    let mut step_at = 0usize;
    let mut tries_on_step = 0u32;
    let mut prepared: Option<(usize, Outgoing)> = None;
    // A session sticks to one key of a pool; worked out only when a step has a pool.
    let session = steps
        .iter()
        .any(|s| s.provider.pool.len() > 1)
        .then(|| session_of(header_session.as_deref(), &body))
        .flatten();
    let mut key_index: Option<usize> = None;
    let mut waited_out = false;
    // The arrival time is close enough for a window of a minute, and costs no clock read.
    state
        .health
        .note_request(&steps[0].provider.name, settings, ctx.started);
    loop {
        // The step to try: the current one, unless it is cooling down.
        let mut cooling: Option<Duration> = None;
        let step_index = loop {
            let Some(step) = steps.get(step_at) else {
                break None;
            };
            match state
                .health
                .admit(&step.provider.name, settings, Instant::now)
            {
                crate::health::Admit::Yes | crate::health::Admit::Probe => {
                    match pool_key(state, &step.provider, session, settings) {
                        Ok(index) => {
                            key_index = index;
                            break Some(step_at);
                        }
                        // Every key of its pool is out of rotation.
                        Err(()) => {
                            cooling = Some(
                                cooling.map_or(settings.cooldown, |c| c.min(settings.cooldown)),
                            );
                            step_at += 1;
                            tries_on_step = 0;
                        }
                    }
                }
                crate::health::Admit::No { retry_in } => {
                    cooling = Some(cooling.map_or(retry_in, |c| c.min(retry_in)));
                    step_at += 1;
                    tries_on_step = 0;
                }
            }
        };
        // Every step out of rotation (before the first attempt: a retry goes ahead only to
        // a step in rotation). Out for less than `max_wait`, as after a 429's short reset,
        // the chain is waited out once, as a `retry-after` would be; for longer, the client
        // hears it at once rather than piling up.
        let Some(step_index) = step_index else {
            let retry_in = cooling.unwrap_or(settings.cooldown);
            if !waited_out
                && retry_in <= settings.max_wait
                && ctx.started.elapsed() + retry_in < settings.deadline
            {
                waited_out = true;
                tokio::time::sleep(retry_in).await;
                step_at = 0;
                tries_on_step = 0;
                continue;
            }
            return Err(GatewayError::CoolingDown {
                model: sniffed.model.clone(),
                retry_in_secs: retry_in.as_secs().max(1),
            });
        };
        let step = &steps[step_index];
        ctx.attempts += 1;
        tries_on_step += 1;
        ctx.served = Some((step.provider.clone(), step.model.clone()));
        let record = pending.record();
        record.provider = Some(step.provider.name.clone());
        record.priced_as = step
            .provider
            .cloud
            .as_ref()
            .map(|c| c.price_key(&step.model));
        record.attempt = ctx.attempts;
        record.api_key = key_index.map(|i| step.provider.pool[i].name.clone());
        if prepared.as_ref().is_none_or(|(i, _)| *i != step_index) {
            // What was left out is said for the step that answers, not an earlier one.
            if !ctx.dropped.is_empty() {
                ctx.dropped.clear();
                pending.record().dropped.clear();
            }
            let outgoing = match prepare(
                state,
                ctx,
                pending,
                &parts,
                &body,
                &sniffed,
                key.as_ref(),
                gateway_key,
                step,
            )
            .await?
            {
                Ok(outgoing) => outgoing,
                Err(cached_answer) => return Ok(cached_answer),
            };
            // The client's betas a cloud's Claude does not offer are left out, and said.
            let left = crate::upstream::cloud::betas::left_out(
                &outgoing.provider,
                &outgoing.model,
                &parts.headers,
            );
            if !left.is_empty() {
                for beta in left {
                    if !ctx.dropped.is_empty() {
                        ctx.dropped.push(',');
                    }
                    ctx.dropped.push_str("anthropic-beta=");
                    ctx.dropped.push_str(&beta);
                }
                pending.record().dropped.clone_from(&ctx.dropped);
            }
            if state.bodies.is_on() {
                state.bodies.keep(
                    &ctx.id,
                    ctx.dialect(),
                    &body,
                    crate::bodies::Sent {
                        provider: outgoing.provider.name.clone(),
                        dialect: outgoing.endpoint.dialect(),
                        body: outgoing.body.clone(),
                    },
                );
            }
            prepared = Some((step_index, outgoing));
        }
        let Some((_, outgoing)) = prepared.as_mut() else {
            unreachable!("prepared just above");
        };
        let last_try = ctx.attempts >= max_attempts;
        pending.sent(outgoing.endpoint.dialect(), outgoing.body.clone());
        let attempt_started = Instant::now();
        if ctx.attempts == 1 {
            ctx.overhead += ctx.started.elapsed();
        }
        let result = ctx
            .rt
            .upstream
            .send(
                &outgoing.provider,
                key_index.map_or(&outgoing.provider.key, |i| {
                    &outgoing.provider.pool[i].source
                }),
                outgoing.endpoint,
                outgoing.path.as_deref(),
                outgoing.query.as_deref(),
                &outgoing.model,
                &sniffed.model,
                outgoing.stream,
                outgoing.headers.as_ref().unwrap_or(&parts.headers),
                outgoing.body.clone(),
            )
            .await;
        let answered_after = ctx.started.elapsed();
        // A whole answer is read here, so that a body that breaks off can be asked for
        // again: nothing of it has reached the client yet.
        let (result, body_failed) = match result {
            Ok(response)
                if !crate::retry::is_retryable_status(response.status().as_u16())
                    && !streams(&response, &outgoing.via) =>
            {
                let limit = ctx.rt.config.server.max_answer_bytes;
                match whole_body(&outgoing.provider, response, limit).await {
                    Ok(whole) => (Ok(Upstream::Whole(whole)), false),
                    Err(ReadFailed::Cut(e)) => (Err(e), true),
                    Err(ReadFailed::TooLarge(e)) => return Err(e),
                }
            }
            other => (other.map(Upstream::Headers), false),
        };
        let failure = match &result {
            Ok(Upstream::Headers(response))
                if crate::retry::is_retryable_status(response.status().as_u16()) =>
            {
                crate::retry::Failure::Status(response.status().as_u16())
            }
            Ok(_) => {
                state.health.succeeded(&outgoing.provider.name);
                pending.record().first_byte = Some(answered_after);
                let Some((_, outgoing)) = prepared else {
                    unreachable!("prepared above");
                };
                let answer = result?;
                return deliver(state, ctx, pending, outgoing, answer).await;
            }
            Err(_) if body_failed => crate::retry::Failure::Body,
            Err(GatewayError::UpstreamUnreachable { .. }) => crate::retry::Failure::Unreachable,
            Err(GatewayError::UpstreamTimeout { .. }) => crate::retry::Failure::Timeout,
            Err(_) => return result.map(|_| unreachable!("only errors here")),
        };
        let now = Instant::now();
        let asked = match &result {
            Ok(Upstream::Headers(r)) => crate::retry::asked_wait(r.headers(), SystemTime::now()),
            _ => None,
        };
        let provider_name = outgoing.provider.name.clone();
        // A cooldown counts failed requests, not attempts: one request retried three
        // times is one provider failing once. A 429's reset time counts at once.
        let reset_in = asked.filter(|_| failure == crate::retry::Failure::Status(429));
        // A 429 with a pool is that key's limit: it cools down, and another key of the
        // same provider is tried at once.
        let other_key = match key_index {
            Some(i) if failure == crate::retry::Failure::Status(429) => {
                let pool_key = &outgoing.provider.pool[i];
                let target = key_target(&provider_name, &pool_key.name);
                let cool_for = reset_in.unwrap_or(settings.cooldown);
                state.health.failed(&target, settings, Some(cool_for), now);
                outgoing.provider.pool.iter().any(|k| {
                    !state
                        .health
                        .cooling(&key_target(&provider_name, &k.name), settings, now)
                })
            }
            _ => {
                if tries_on_step == 1 || reset_in.is_some() {
                    state.health.failed(&provider_name, settings, reset_in, now);
                }
                false
            }
        };
        metrics::counter!("trimgate_upstream_failures_total", "provider" => provider_name.clone(), "kind" => failure.label()).increment(1);

        // Where the next attempt goes, and after how long.
        let is_last_step = step_index + 1 >= steps.len();
        let move_on = !other_key
            && !is_last_step
            && (tries_on_step >= settings.attempts_per_step
                || asked.is_some_and(|w| w > settings.max_wait));
        let wait = if move_on || other_key {
            Duration::ZERO
        } else {
            asked.unwrap_or_else(|| crate::retry::backoff(settings, tries_on_step))
        };
        let in_time = ctx.started.elapsed() + wait < settings.deadline
            && (move_on || wait <= settings.max_wait);
        // A retry goes ahead only to a step in rotation when it goes out, after the wait:
        // this one may just have cooled down, for longer than the wait, or only until the
        // 429's reset that the wait is.
        let next_in_rotation = steps[step_index + usize::from(move_on)..]
            .iter()
            .any(|s| !state.health.cooling(&s.provider.name, settings, now + wait));
        let retry = !last_try
            && in_time
            && next_in_rotation
            && state.health.take_retry(&provider_name, settings, now);
        if !retry {
            // The last failure is the answer: a provider's error relayed as any answer is,
            // in the client's dialect.
            let answer = result?;
            let Some((_, outgoing)) = prepared else {
                unreachable!("prepared above");
            };
            return deliver(state, ctx, pending, outgoing, answer).await;
        }
        metrics::counter!("trimgate_retries_total", "provider" => provider_name.clone(), "kind" => failure.label()).increment(1);
        let status = match &result {
            Ok(Upstream::Headers(response)) => response.status().as_u16(),
            Ok(Upstream::Whole(whole)) => whole.status.as_u16(),
            Err(e) => e.status().as_u16(),
        };
        tracing::info!(request_id = %ctx.id, provider = %provider_name, attempt = ctx.attempts, status, kind = failure.label(), wait_ms = wait.as_millis() as u64, "attempt failed before the first byte: trying again");
        record_attempt(state, pending, status, failure.label(), attempt_started);
        drop(result);
        if move_on {
            step_at += 1;
            tries_on_step = 0;
        }
        if other_key {
            // Another key is another try of this step, not a second failure of it.
            tries_on_step -= 1;
        }
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// The health entry of one key of a provider's pool.
fn key_target(provider: &str, key: &str) -> String {
    format!("{provider}#{key}")
}

/// The pool key for this request at `provider`: `Ok(None)` without a pool, `Err` when
/// every key of it is cooling down.
fn pool_key(
    state: &AppState,
    provider: &Provider,
    session: Option<u64>,
    settings: &crate::retry::Settings,
) -> Result<Option<usize>, ()> {
    if provider.pool.is_empty() {
        return Ok(None);
    }
    let now = Instant::now();
    let turn = state.health.next_turn(&provider.name);
    crate::keys::pick(provider.pool.len(), session, turn, |i| {
        let target = key_target(&provider.name, &provider.pool[i].name);
        !state.health.cooling(&target, settings, now)
    })
    .map(Some)
    .ok_or(())
}

/// The session a request belongs to, for keeping it on one key: the agent's session header,
/// else Claude Code's `metadata.user_id` (which ends in its session id) or Codex's
/// `prompt_cache_key`, else the first user message, which a conversation keeps.
fn session_of(header: Option<&str>, body: &[u8]) -> Option<u64> {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(borrow)]
        user_id: Option<std::borrow::Cow<'a, str>>,
    }
    #[derive(serde::Deserialize)]
    struct Ids<'a> {
        #[serde(borrow)]
        metadata: Option<Meta<'a>>,
        #[serde(borrow)]
        prompt_cache_key: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        messages: Option<Vec<&'a RawValue>>,
        #[serde(borrow)]
        input: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Role<'a> {
        #[serde(borrow)]
        role: Option<std::borrow::Cow<'a, str>>,
    }
    if let Some(id) = header {
        return Some(crate::keys::session_hash(id));
    }
    let ids: Ids<'_> = serde_json::from_slice(body).ok()?;
    if let Some(id) = ids
        .metadata
        .and_then(|m| m.user_id)
        .or(ids.prompt_cache_key)
        .filter(|id| !id.is_empty())
    {
        return Some(crate::keys::session_hash(&id));
    }
    let items = match (ids.messages, ids.input) {
        (Some(messages), _) => messages,
        (None, Some(input)) if input.get().starts_with('[') => {
            serde_json::from_str(input.get()).ok()?
        }
        (None, Some(text)) => return Some(crate::keys::session_hash(text.get())),
        (None, None) => return None,
    };
    items
        .iter()
        .find(|m| {
            serde_json::from_str::<Role<'_>>(m.get())
                .ok()
                .and_then(|r| r.role)
                .is_some_and(|r| r == "user")
        })
        .map(|m| crate::keys::session_hash(m.get()))
}

/// A row for an attempt that failed and was followed by another: the request's record as
/// it stands, with this attempt's status, reason and time, and no savings (those go with
/// the answer).
fn record_attempt(
    state: &AppState,
    pending: &mut Pending,
    status: u16,
    error: &'static str,
    started: Instant,
) {
    let mut row = pending.record().clone();
    row.status = status;
    row.outcome = Outcome::Retried;
    row.error = Some(error);
    row.latency = started.elapsed();
    row.overhead = Duration::ZERO;
    row.usage = None;
    row.applied = String::new();
    row.saved_tokens = 0;
    row.saved_bytes = 0;
    row.passes = Vec::new();
    row.cache = None;
    state.recorder.record(Arc::new(row));
}

/// Optimizes and prepares the request for one step's provider: in the client's dialect,
/// or through the IR into one the provider speaks. `Ok(Err(_))` is a cached answer.
#[allow(clippy::too_many_arguments)]
async fn prepare(
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

/// A provider's answer on its way to the client: headers with the body still to come,
/// or a whole body already read.
enum Upstream {
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
fn streams(response: &http::Response<crate::upstream::UpBody>, via: &Via) -> bool {
    is_event_stream(response.headers())
        && (matches!(via, Via::Same { .. }) || response.status().is_success())
}

/// 6. relay: the provider's answer to the client, streamed or whole, translated or not.
async fn deliver(
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

/// What the response cache made of a request.
enum Cached {
    /// A stored answer, ready to send.
    Answer(Response),
    /// Not found (or not the cache's business): go upstream, and store the answer here.
    Store(Option<cache::Prepared>),
}

/// The cache stage: replays a stored answer, or says where to store this one.
async fn cached(
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

/// A non-streamed answer: its status, headers and whole body.
async fn whole_body(
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

/// Answers `count_tokens` here for a provider without that endpoint.
async fn count_locally(
    ctx: &mut Ctx,
    pending: &mut Pending,
    body: Bytes,
) -> Result<Response, GatewayError> {
    // Counting reads what the model would see; fields it drops cannot add tokens.
    let dialect = ctx.dialect();
    let mut ignored = translate::Report::new(dialect);
    // Gemini's `countTokens` may wrap a whole `generateContentRequest`: only a body that
    // names one is read twice.
    let wrapped = dialect == Dialect::Gemini
        && memchr::memmem::find(&body, b"\"generateContentRequest\"").is_some();
    let inner = wrapped
        .then(|| {
            #[derive(serde::Deserialize)]
            struct Wrapper<'a> {
                #[serde(rename = "generateContentRequest", borrow)]
                request: Option<&'a serde_json::value::RawValue>,
            }
            let w: Wrapper<'_> = serde_json::from_slice(&body).ok()?;
            w.request.map(|r| r.get().as_bytes())
        })
        .flatten();
    let req = translate::decode_request(
        dialect,
        inner.unwrap_or(&body),
        translate::Policy::default(),
        &mut ignored,
    )?;
    // Tokenizing a large request takes milliseconds: keep it off the async workers.
    let tokens = tokio::task::spawn_blocking(move || translate::count::count_tokens(&req))
        .await
        .map_err(|_| GatewayError::UpstreamBroken {
            provider: "local tokenizer".into(),
            detail: "counting failed".into(),
        })?;
    let answer = match dialect {
        Dialect::Gemini => format!("{{\"totalTokens\":{tokens}}}"),
        _ => format!("{{\"input_tokens\":{tokens}}}"),
    };
    let mut out = Response::new(Body::from(answer));
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    ctx.overhead = ctx.started.elapsed();
    stamp(&mut out, ctx);
    let record = pending.record();
    record.status = 200;
    record.overhead = ctx.overhead;
    Ok(out)
}

fn unix_now() -> u64 {
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

/// The provider's response headers that go on to the client, in the map they came in:
/// the others are taken out, and the provider's request id is renamed, since
/// `x-request-id` carries the gateway's.
fn relayed_headers(mut headers: HeaderMap) -> HeaderMap {
    let upstream_id = headers.remove(&X_REQUEST_ID);
    retain_headers(&mut headers, relayed_response_header);
    // Room for the upstream id and what `stamp` adds, so the map grows once, not twice.
    headers.reserve(STAMPED);
    if let Some(id) = upstream_id {
        headers.insert(X_UPSTREAM_REQUEST_ID, id);
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_milliseconds_with_three_decimals() {
        let shown = |us: u64| millis_header(Duration::from_micros(us));
        assert_eq!(shown(0), "0.000");
        assert_eq!(shown(5), "0.005");
        assert_eq!(shown(42_017), "42.017");
        assert_eq!(shown(1_234_567_890), "1234567.890");
        assert_eq!(
            millis_header(Duration::MAX),
            format!("{}.{:03}", u64::MAX / 1000, u64::MAX % 1000).as_str()
        );
    }
}

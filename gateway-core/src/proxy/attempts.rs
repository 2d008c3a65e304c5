//! The request's run: ingress, route and guard once, then stages 3–5 per attempt. A
//! failure before the response headers that a retry may fix goes round again, on the same
//! step, another key of its pool or the route's next fallback; the first answer delivered
//! ends the loop, and each attempt that failed before it leaves a row of its own.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::extract::Request;
use axum::response::Response;

use super::answer::{deliver, streams, whole_body, Upstream};
use super::count::count_locally;
use super::inbound::{is_json, read_body, session_id, PathModel};
use super::key_pool::{key_target, pool_key, session_of};
use super::plan::chain;
use super::prepare::{prepare, Outgoing};
use super::{guard, Ctx};
use crate::error::GatewayError;
use crate::pending::Pending;
use crate::record::Outcome;
use crate::relay::ReadFailed;
use crate::sniff::{sniff_for_model, sniff_within, Limits};
use crate::state::AppState;

pub(super) async fn run(
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

//! The guard stage: a request's secrets are replaced (or the request refused) before
//! anything else reads its bytes, and the values are put back into the answer on its way
//! to the client. The detection and the vault are `crate::guard`'s; this file places them
//! on the request path.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{header, HeaderMap};
use sha2::Digest as _;

use crate::dialect::Dialect;
use crate::error::GatewayError;
use crate::guard::answer::{restore_whole, SseRestorer};
use crate::guard::{body, Mode, Values};
use crate::pending::Pending;
use crate::state::AppState;
use trimgate_wire::sse::{frame_data, scan, Scan};

/// Bodies from this size are searched on a blocking thread.
const OFF_THREAD_BYTES: usize = 64 * 1024;

/// The scope a request's secrets belong to: the client's key (or its own credential,
/// hashed) and its session. An answer gets back only what its own scope sent.
pub(super) fn scope(
    key: Option<&crate::config::GatewayKey>,
    headers: &HeaderMap,
    session: Option<&str>,
) -> String {
    let credential = match key {
        Some(k) => format!("key:{}", k.name),
        None => {
            let mut hash = sha2::Sha256::new();
            for name in [
                header::AUTHORIZATION.as_str(),
                crate::headers::X_API_KEY.as_str(),
                crate::headers::X_GOOG_API_KEY.as_str(),
            ] {
                if let Some(v) = headers.get(name) {
                    hash.update(name.as_bytes());
                    hash.update(v.as_bytes());
                }
            }
            let digest = hash.finalize();
            digest[..8].iter().map(|b| format!("{b:02x}")).collect()
        }
    };
    format!("{credential}\u{1f}{}", session.unwrap_or(""))
}

/// What the guard did to a request.
#[derive(Default)]
pub(super) struct Guarded {
    /// The body to go on with, when it changed.
    pub body: Option<Bytes>,
    /// What the answer gets back: the scope's values, the request's own among them
    /// (redact mode, when the scope has any).
    pub restore: Option<Values>,
}

/// Runs the request's mode on `body`: `redact` replaces its secrets, `block` refuses a
/// request that holds one, `off` passes it. `scope` gives the scope of the request's
/// session; it is worked out only when a secret is found or the vault holds any (most
/// requests need neither).
pub(super) async fn request(
    state: &Arc<AppState>,
    pending: &mut Pending,
    settings: &crate::guard::Settings,
    mode: Mode,
    scope: impl Fn(Option<&str>) -> String,
    dialect: Dialect,
    body: &Bytes,
) -> Result<Guarded, GatewayError> {
    if mode == Mode::Off {
        return Ok(Guarded::default());
    }
    let scope = |pending: &mut Pending| scope(pending.record().session.as_deref());
    // What the scope was given back in earlier answers goes out replaced wherever it
    // stands: the agent's history sends it again, bare in a command no rule would read.
    let earlier = (mode == Mode::Redact && !state.vault().is_empty())
        .then(|| scope(pending))
        .and_then(|scope| held(state, &scope).map(|values| (scope, values)));
    let known = earlier
        .as_ref()
        .map(|(_, values)| values.known())
        .unwrap_or_default();
    let hits = if body.len() < OFF_THREAD_BYTES {
        crate::guard::body::scan_with(body, &settings.detect, &known, &state.clean)
    } else {
        let (rules, bytes, state) = (settings.detect.clone(), body.clone(), state.clone());
        tokio::task::spawn_blocking(move || {
            crate::guard::body::scan_with(&bytes, &rules, &known, &state.clean)
        })
        .await
        .unwrap_or_default()
    };
    if mode == Mode::Block {
        let found = hits.into_found();
        let Some(first) = found.first() else {
            return Ok(Guarded::default());
        };
        pending.record().secrets = body::tally(&found);
        count(&found, dialect, mode);
        return Err(GatewayError::SecretBlocked {
            kind: first.kind.as_str(),
            location: first.to_string(),
        });
    }
    if hits.is_empty() {
        return Ok(Guarded {
            body: None,
            restore: earlier.map(|(_, values)| values),
        });
    }
    let scope = earlier.map_or_else(|| scope(pending), |(scope, _)| scope);
    let (redacted, restore) = {
        let mut vault = state.vault();
        let redacted = hits.redact(body, &mut vault, &scope);
        (redacted, vault.values_of(&scope))
    };
    pending.record().secrets = body::tally(&redacted.found);
    count(&redacted.found, dialect, mode);
    Ok(Guarded {
        body: redacted.body.map(Bytes::from),
        restore: Some(restore),
    })
}

/// The values `scope` has sent so far; none when it has sent none.
fn held(state: &AppState, scope: &str) -> Option<Values> {
    let values = state.vault().values_of(scope);
    (!values.is_empty()).then_some(values)
}

fn count(found: &[body::Found], dialect: Dialect, mode: Mode) {
    for f in found {
        metrics::counter!("trimgate_guard_secrets_total", "kind" => f.kind.as_str(), "mode" => mode.as_str(), "dialect" => dialect.as_str()).increment(1);
    }
}

/// The hooks that see a request's answer, with what they are told about it.
pub(super) struct PostHooks {
    pub hooks: Vec<Arc<crate::guard::Hook>>,
    /// The request as it went upstream.
    pub request: Bytes,
    pub model: String,
    pub provider: String,
}

impl PostHooks {
    fn meta<'a>(&'a self, request_id: &'a str, dialect: Dialect) -> crate::hooks::Meta<'a> {
        crate::hooks::Meta {
            request_id,
            model: &self.model,
            dialect: dialect.as_str(),
            provider: &self.provider,
        }
    }
}

/// The answer on its way out: a whole one through the post hooks (which see
/// placeholders, never values), then the values back in place.
pub(super) async fn after(
    state: &Arc<AppState>,
    ctx: &mut super::Ctx,
    response: Response,
) -> Result<Response, GatewayError> {
    let response = match ctx.post_hooks.take() {
        Some(post) if !is_stream(response.headers()) => {
            let (mut parts, body) = response.into_parts();
            let whole = axum::body::to_bytes(body, usize::MAX).await.map_err(|e| {
                GatewayError::UpstreamBroken {
                    provider: post.provider.clone(),
                    detail: e.to_string(),
                }
            })?;
            let meta = post.meta(&ctx.id, ctx.dialect());
            let checked = state
                .hooks
                .after(&post.hooks, &meta, &post.request, whole)
                .await?;
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(checked))
        }
        Some(post) => StreamReport {
            state: state.clone(),
            post,
            id: ctx.id.clone(),
            dialect: ctx.dialect(),
        }
        .wrap(response),
        None => response,
    };
    Ok(match ctx.restore.take() {
        Some(values) => answer(ctx.dialect(), values, response).await,
        None => response,
    })
}

/// A streamed answer's post hooks: a stream is not held back for them (the agent reads
/// it as it comes), so they get its text once it has ended, and what they say is
/// reported (a warning naming the hook, the metric), not enforced.
struct StreamReport {
    state: Arc<AppState>,
    post: PostHooks,
    id: String,
    dialect: Dialect,
}

type Collected = (StreamReport, crate::answer_text::AnswerText, Vec<u8>);

impl StreamReport {
    fn wrap(self, response: Response) -> Response {
        let (parts, body) = response.into_parts();
        let start: Option<Collected> =
            Some((self, crate::answer_text::AnswerText::default(), Vec::new()));
        let stream = futures_util::stream::unfold(
            (body.into_data_stream(), start),
            |(mut chunks, mut report)| async move {
                let next = chunks.next().await;
                match (&next, report.as_mut()) {
                    (Some(Ok(chunk)), Some((r, text, buf))) => {
                        buf.extend_from_slice(chunk);
                        let mut from = 0;
                        while let Scan::End(end) = scan(buf, from) {
                            if let Some(data) = frame_data(&buf[from..end]) {
                                text.observe(r.dialect, &data);
                            }
                            from = end;
                        }
                        buf.drain(..from);
                    }
                    (None, Some(_)) => {
                        if let Some((r, text, _)) = report.take() {
                            r.send(&text);
                        }
                    }
                    _ => {}
                }
                next.map(|item| (item, (chunks, report)))
            },
        );
        Response::from_parts(parts, Body::from_stream(stream))
    }

    /// Calls the hooks off the stream's path, with what the answer said.
    fn send(self, text: &crate::answer_text::AnswerText) {
        let (said, cut) = text.kept();
        let answer = serde_json::json!({"streamed": true, "text": said, "truncated": cut});
        let answer = Bytes::from(answer.to_string());
        tokio::spawn(async move {
            let meta = self.post.meta(&self.id, self.dialect);
            if let Err(e) = self
                .state
                .hooks
                .after(&self.post.hooks, &meta, &self.post.request, answer)
                .await
            {
                tracing::warn!(request_id = %self.id, error = %e, "a guardrail hook objected to a streamed answer the client already has");
            }
        });
    }
}

fn is_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The client's response with the values back in place: a stream restored as it goes, a
/// whole body at once.
async fn answer(dialect: Dialect, values: Values, response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    if is_stream(&parts.headers) {
        let restorer = SseRestorer::new(dialect, values);
        let stream = futures_util::stream::unfold(
            (body.into_data_stream(), Some(restorer), None),
            |(mut chunks, mut restorer, failed)| async move {
                if let Some(e) = failed {
                    return Some((Err(e), (chunks, None, None)));
                }
                let r = restorer.as_mut()?;
                loop {
                    match chunks.next().await {
                        Some(Ok(chunk)) => {
                            let out = r.push(&chunk);
                            if !out.is_empty() {
                                return Some((Ok(Bytes::from(out)), (chunks, restorer, None)));
                            }
                        }
                        // What is held goes out before the error ends the body.
                        Some(Err(e)) => {
                            let out = r.finish();
                            return Some((Ok(Bytes::from(out)), (chunks, None, Some(e))));
                        }
                        None => {
                            let out = r.finish();
                            return Some((Ok(Bytes::from(out)), (chunks, None, None)));
                        }
                    }
                }
            },
        );
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    // A whole answer is in memory already (a Gemini stream asked as one JSON array is
    // read to its end: its values can only be put back into the whole).
    let whole = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::warn!(error = %e, "an answer could not be read to restore its secrets");
            parts.status = http::StatusCode::BAD_GATEWAY;
            parts.headers.remove(header::CONTENT_LENGTH);
            return Response::from_parts(parts, Body::empty());
        }
    };
    match restore_whole(&values, &whole) {
        Some(restored) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(restored))
        }
        None => Response::from_parts(parts, Body::from(whole)),
    }
}

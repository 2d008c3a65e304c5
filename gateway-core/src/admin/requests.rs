//! The requests the gateway handled: the live feed, a search over the ledger, and one
//! request's detail — its attempts, passes, timing, the blocks the optimizer rewrote
//! (each original while the gateway still holds it), and its bodies when the user keeps
//! them ([`crate::bodies`]).

use super::*;
use crate::ledger::search::{self, Filter};

#[derive(Deserialize)]
pub(super) struct RequestsQuery {
    limit: Option<usize>,
}

/// The live feed, from memory.
pub(super) async fn requests(
    State(state): State<AdminState>,
    Query(q): Query<RequestsQuery>,
) -> Response {
    let rows = state
        .recent
        .newest(q.limit.unwrap_or(50).min(crate::feed::KEPT));
    answer(ok(json!({ "requests": rows })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchQuery {
    since: Option<String>,
    before_ms: Option<i64>,
    model: Option<String>,
    provider: Option<String>,
    status: Option<String>,
    session: Option<String>,
    limit: Option<i64>,
}

/// Requests by time, model, provider, status and session: the ledger's when there is
/// one, else the feed's.
pub(super) async fn search_requests(
    State(state): State<AdminState>,
    Query(q): Query<SearchQuery>,
) -> Response {
    answer(
        async {
            let admin = state.admin()?;
            let now = crate::clock::now_ms();
            let since = stats::parse_since(q.since.as_deref().unwrap_or("24h"), now)
                .map_err(AdminError::BadRequest)?;
            let status = q
                .status
                .as_deref()
                .filter(|s| !s.trim().is_empty())
                .map(search::Status::parse)
                .transpose()
                .map_err(AdminError::BadRequest)?;
            let given =
                |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
            let filter = Filter {
                since_ms: since,
                before_ms: q.before_ms,
                model: given(q.model),
                provider: given(q.provider),
                status,
                session: given(q.session),
                limit: q.limit.unwrap_or(100).clamp(1, 500),
            };
            let Some(pool) = &admin.ledger else {
                let rows: Vec<_> = state
                    .recent
                    .newest(crate::feed::KEPT)
                    .into_iter()
                    .filter(|r| feed_row_matches(r, &filter))
                    .take(usize::try_from(filter.limit).unwrap_or(100))
                    .collect();
                return ok(json!({"ledger": false, "since_ms": since, "requests": rows}));
            };
            let rows = search::search(pool, &filter)
                .await
                .map_err(|e| AdminError::Unavailable(format!("cannot read the ledger: {e}")))?;
            ok(json!({"ledger": true, "since_ms": since, "requests": rows}))
        }
        .await,
    )
}

fn feed_row_matches(r: &crate::feed::Row, f: &Filter) -> bool {
    let contains = |v: &Option<String>, part: &str| {
        v.as_deref()
            .is_some_and(|v| v.to_lowercase().contains(&part.to_lowercase()))
    };
    r.time_ms >= f.since_ms
        && r.outcome != "retried"
        && f.before_ms.is_none_or(|b| r.time_ms < b)
        && f.model
            .as_deref()
            .is_none_or(|m| contains(&r.model, m) || contains(&r.served, m))
        && f.provider
            .as_deref()
            .is_none_or(|p| r.provider.as_deref() == Some(p))
        && f.session
            .as_deref()
            .is_none_or(|s| r.session.as_deref() == Some(s))
        && match f.status {
            None => true,
            Some(search::Status::Ok) => r.status < 400 && r.outcome == "completed",
            Some(search::Status::Failed) => {
                r.status >= 400 || matches!(r.outcome, "gateway_error" | "upstream_failed")
            }
            Some(search::Status::Cancelled) => r.outcome == "client_cancelled",
            Some(search::Status::Code(c)) => r.status == c,
        }
}

/// One request: from the feed while it is there (with the ids of the blocks rewritten),
/// else from the ledger; its bodies when kept.
pub(super) async fn request_detail(
    State(state): State<AdminState>,
    Path(id): Path<String>,
) -> Response {
    answer(
        async {
            let admin = state.admin()?;
            let (rows, rewrite_ids) = state.recent.by_id(&id);
            let kept = state.bodies.get(&id);
            let (source, attempts, passes) = if rows.is_empty() {
                let Some(pool) = &admin.ledger else {
                    return Err(not_held(&id));
                };
                let (attempts, passes) = search::by_id(pool, &id).await.map_err(|e| {
                    AdminError::Unavailable(format!("cannot read the ledger: {e}"))
                })?;
                if attempts.is_empty() && kept.is_none() {
                    return Err(not_held(&id));
                }
                ("ledger", json!(attempts), json!(passes))
            } else {
                let passes = rows.last().map(|r| json!(r.passes)).unwrap_or(json!([]));
                ("memory", json!(rows), passes)
            };
            let originals = &state.runtime().optimizer.shared.originals;
            let rewrites: Vec<Value> = rewrite_ids
                .iter()
                .map(|rid| match originals.get(rid) {
                    Some(o) => json!({
                        "id": rid,
                        "pass": o.pass,
                        "held": true,
                        "original_chars": o.original.chars().count(),
                        "replacement": &*o.replacement,
                        // The bodies hold it anyway: shown in place, not one click away.
                        "original": kept.as_ref().map(|_| &*o.original),
                    }),
                    None => json!({"id": rid, "held": false}),
                })
                .collect();
            let bodies = kept.map(|k| {
                json!({
                    "client": {"dialect": k.client_dialect.as_str(), "text": String::from_utf8_lossy(&k.client)},
                    "sent": k.sent.iter().map(|s| json!({
                        "provider": s.provider,
                        "dialect": s.dialect.as_str(),
                        "text": String::from_utf8_lossy(&s.body),
                    })).collect::<Vec<_>>(),
                })
            });
            ok(json!({
                "id": id,
                "source": source,
                "attempts": attempts,
                "passes": passes,
                "rewrites": rewrites,
                "bodies": bodies,
                "bodies_kept": state.bodies.is_on(),
            }))
        }
        .await,
    )
}

fn not_held(id: &str) -> AdminError {
    AdminError::NotFound(format!(
        "no request {id:?} is in the live feed or the ledger"
    ))
}

/// A rewritten block's original (and replacement, while in memory), by its id.
pub(super) async fn original(State(state): State<AdminState>, Path(id): Path<String>) -> Response {
    answer(
        async {
            state.admin()?;
            let id = id.to_ascii_lowercase();
            if !crate::optimize::originals::is_id(&id) {
                return Err(AdminError::BadRequest(format!(
                    "{id:?} is not an original's id (20 hex digits)"
                )));
            }
            if let Some(o) = state.runtime().optimizer.shared.originals.get(&id) {
                return ok(json!({"id": id, "pass": o.pass, "original": &*o.original, "replacement": &*o.replacement}));
            }
            match state.kept_original(&id).await {
                Some(original) => ok(json!({"id": id, "original": original, "replacement": null})),
                None => Err(AdminError::NotFound(format!(
                    "the original {id} is no longer held: its time ran out or the store was full"
                ))),
            }
        }
        .await,
    )
}

/// Whether bodies are kept, and how much.
pub(super) async fn get_bodies(State(state): State<AdminState>) -> Response {
    answer(state.admin().and_then(|_| ok(json!(state.bodies.usage()))))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BodiesIn {
    keep: bool,
}

/// Turns keeping bodies on or off until the next start; off forgets what was kept.
pub(super) async fn put_bodies(State(state): State<AdminState>, body: Bytes) -> Response {
    answer((|| {
        state.admin()?;
        let BodiesIn { keep } = parse(&body)?;
        state.bodies.set(keep);
        ok(json!(state.bodies.usage()))
    })())
}

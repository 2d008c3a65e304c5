//! What the ledger says: savings over time, sessions with their net savings against the
//! holdout.

use super::*;

#[derive(Deserialize)]
pub(super) struct SavingsQuery {
    since: Option<String>,
    by: Option<String>,
}

pub(super) async fn savings(
    State(state): State<AdminState>,
    Query(q): Query<SavingsQuery>,
) -> Response {
    answer(
        async {
            let admin = state.admin()?;
            let by_text = q.by.unwrap_or_else(|| "model".into());
            let by = By::parse(&by_text).map_err(AdminError::BadRequest)?;
            let now = crate::clock::now_ms();
            let since = stats::parse_since(q.since.as_deref().unwrap_or("7d"), now)
                .map_err(AdminError::BadRequest)?;
            let Some(pool) = &admin.ledger else {
                return ok(json!({"ledger": false, "since_ms": since, "by": by_text, "rows": [], "total": stats::Totals::default()}));
            };
            let rows = stats::totals(pool, since, by)
                .await
                .map_err(|e| AdminError::Unavailable(format!("cannot read the ledger: {e}")))?;
            let total = stats::sum(&rows);
            ok(json!({"ledger": true, "since_ms": since, "by": by_text, "rows": rows, "total": total}))
        }
        .await,
    )
}

#[derive(Deserialize)]
pub(super) struct SessionsQuery {
    since: Option<String>,
    limit: Option<i64>,
}

/// The latest sessions, cache breaks by cause, and the holdout comparison
/// ([`stats::sessions`]).
pub(super) async fn sessions(
    State(state): State<AdminState>,
    Query(q): Query<SessionsQuery>,
) -> Response {
    answer(
        async {
            let admin = state.admin()?;
            let now = crate::clock::now_ms();
            let since = stats::parse_since(q.since.as_deref().unwrap_or("7d"), now)
                .map_err(AdminError::BadRequest)?;
            let limit = q.limit.unwrap_or(10).clamp(0, 200);
            let Some(pool) = &admin.ledger else {
                let empty = stats::SessionsReport {
                    since_ms: since,
                    holdout: stats::compare(&[]),
                    ..stats::SessionsReport::default()
                };
                return ok(json!({"ledger": false, "report": empty}));
            };
            let report = stats::sessions(pool, since, limit)
                .await
                .map_err(|e| AdminError::Unavailable(format!("cannot read the ledger: {e}")))?;
            ok(json!({"ledger": true, "report": report}))
        }
        .await,
    )
}

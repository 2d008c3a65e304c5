//! The admin actions log: who changed what through the admin API, and when.

use super::*;

#[derive(Deserialize)]
pub(super) struct AuditQuery {
    limit: Option<u32>,
}

/// The newest actions (`limit`, default 100, at most 1000), newest first.
pub(super) async fn audit(
    State(state): State<AdminState>,
    Query(q): Query<AuditQuery>,
) -> Response {
    answer(
        async {
            let pool = state.admin()?.ledger.as_ref().ok_or_else(|| {
                AdminError::Unavailable(
                    "the admin actions log lives in the ledger's database, and the ledger is off"
                        .into(),
                )
            })?;
            let limit = q.limit.unwrap_or(100).clamp(1, 1000);
            let actions = crate::ledger::audit::recent(pool, limit)
                .await
                .map_err(|e| AdminError::Unavailable(format!("cannot read the ledger: {e}")))?;
            ok(json!({ "actions": actions }))
        }
        .await,
    )
}

//! The admin actions log in the ledger's database: one row per change made through the
//! admin API.

use sqlx::{AnyPool, Row};

/// One change made through the admin API.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Action {
    pub at_ms: i64,
    /// `local window` (loopback, the launch's token) or `admin key`.
    pub who: String,
    pub method: String,
    pub path: String,
    pub status: u16,
    /// The client's address, as the peer or a trusted proxy gave it.
    pub addr: Option<String>,
}

pub async fn record(pool: &AnyPool, action: &Action) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO admin_actions (at_ms, who, method, path, status, addr) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(action.at_ms)
    .bind(&action.who)
    .bind(&action.method)
    .bind(&action.path)
    .bind(i64::from(action.status))
    .bind(action.addr.as_deref())
    .execute(pool)
    .await
    .map(|_| ())
}

/// The newest `limit` actions, newest first.
pub async fn recent(pool: &AnyPool, limit: u32) -> Result<Vec<Action>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT at_ms, who, method, path, status, addr FROM admin_actions \
         ORDER BY at_ms DESC LIMIT $1",
    )
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Action {
                at_ms: r.try_get("at_ms")?,
                who: r.try_get("who")?,
                method: r.try_get("method")?,
                path: r.try_get("path")?,
                status: u16::try_from(r.try_get::<i64, _>("status")?).unwrap_or(0),
                addr: r.try_get("addr")?,
            })
        })
        .collect()
}

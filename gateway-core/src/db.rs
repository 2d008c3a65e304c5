//! What the stores that share one database (the ledger, the cache's persistence) both
//! need from a pool, so neither reaches into the other.

/// Closes a connection whose write failed instead of returning it to the pool: a COMMIT
/// that failed (a full disk) can leave SQLite inside the transaction, and every later
/// one would nest in it and never be committed.
pub(crate) async fn discard_if_failed<T>(
    conn: sqlx::pool::PoolConnection<sqlx::Any>,
    result: &Result<T, sqlx::Error>,
) {
    if result.is_err() {
        let _ = sqlx::Connection::close(conn.detach()).await;
    }
}

//! Elided tool outputs kept in the ledger's database, so that a marker's id gives its
//! output back after a restart or from another replica: written off the request path by
//! one task, read by id, deleted after their time, and the oldest deleted first when
//! their bytes pass the bound.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::{AnyPool, Row};
use tokio::sync::mpsc;

/// One output to keep.
pub struct Kept {
    pub id: String,
    pub pass: &'static str,
    pub original: Arc<str>,
}

/// Outputs waiting to be written; past this the newest are dropped (and counted).
const QUEUE: usize = 1024;
/// Ids written by this process, remembered so that a block repeated on every turn is
/// written once; past this many the memory starts over (a repeat write is harmless).
const REMEMBERED: usize = 65_536;

/// The writer's handle and the pool reads go to.
pub struct OriginalsDb {
    pool: AnyPool,
    tx: mpsc::Sender<Kept>,
    written: Mutex<HashSet<String>>,
    keep_for: Duration,
}

impl OriginalsDb {
    /// Starts the writer, which keeps the table's outputs within `max_bytes`, and the
    /// daily deletion of rows older than `keep_for`.
    pub fn start(pool: AnyPool, keep_for: Duration, max_bytes: u64) -> Arc<OriginalsDb> {
        let (tx, mut rx) = mpsc::channel::<Kept>(QUEUE);
        let writer = pool.clone();
        tokio::spawn(async move {
            // Other replicas write to the same table: the total is read again after each
            // eviction, and counted locally in between.
            let mut total = stored_bytes(&writer).await.unwrap_or(0);
            while let Some(kept) = rx.recv().await {
                if let Err(e) = insert(&writer, &kept, crate::clock::now_ms()).await {
                    metrics::counter!("trimgate_originals_write_errors_total").increment(1);
                    tracing::warn!(error = %e, id = %kept.id, "an original cannot be written to the ledger");
                    continue;
                }
                total += kept.original.len() as u64;
                if total > max_bytes {
                    match evict_oldest(&writer, total, max_bytes).await {
                        Ok(n) => {
                            metrics::counter!("trimgate_originals_evicted_total", "store" => "ledger")
                                .increment(n);
                        }
                        Err(e) => tracing::warn!(error = %e, "old originals cannot be deleted"),
                    }
                    total = stored_bytes(&writer).await.unwrap_or(total);
                }
            }
        });
        super::spawn_daily_deletion(
            pool.clone(),
            "originals past their time",
            move |pool| async move {
                let n = delete_older_than(&pool, keep_for).await?;
                metrics::counter!("trimgate_originals_expired_total").increment(n);
                Ok(n)
            },
        );
        Arc::new(OriginalsDb {
            pool,
            tx,
            written: Mutex::new(HashSet::new()),
            keep_for,
        })
    }

    /// Queues an output for writing, once per id in this process; never waits.
    pub fn keep(&self, kept: Kept) {
        {
            let mut written = self
                .written
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if written.len() >= REMEMBERED {
                written.clear();
            }
            if !written.insert(kept.id.clone()) {
                return;
            }
        }
        if self.tx.try_send(kept).is_err() {
            metrics::counter!("trimgate_originals_dropped_total").increment(1);
        }
    }

    /// The output kept under `id`, if within its time.
    pub async fn get(&self, id: &str) -> Result<Option<String>, sqlx::Error> {
        let since = crate::clock::now_ms() - self.keep_for.as_millis() as i64;
        let row = sqlx::query("SELECT original FROM originals WHERE id = $1 AND kept_ms >= $2")
            .bind(id)
            .bind(since)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| r.try_get("original")).transpose()
    }
}

async fn insert(pool: &AnyPool, kept: &Kept, now_ms: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO originals (id, kept_ms, pass, original, bytes) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (id) DO UPDATE SET kept_ms = excluded.kept_ms",
    )
    .bind(&kept.id)
    .bind(now_ms)
    .bind(kept.pass)
    .bind(&*kept.original)
    .bind(kept.original.len() as i64)
    .execute(pool)
    .await
    .map(|_| ())
}

/// Bytes of every output kept, by all replicas.
async fn stored_bytes(pool: &AnyPool) -> Result<u64, sqlx::Error> {
    let total: i64 =
        sqlx::query_scalar("SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM originals")
            .fetch_one(pool)
            .await?;
    Ok(total.max(0) as u64)
}

/// Deletes the oldest outputs until the rest fit in nine tenths of `max_bytes` (so that
/// eviction runs in batches, not on every write); returns how many went.
async fn evict_oldest(pool: &AnyPool, total: u64, max_bytes: u64) -> Result<u64, sqlx::Error> {
    let target = max_bytes / 10 * 9;
    let mut freed = 0u64;
    let mut evicted = 0u64;
    while total.saturating_sub(freed) > target {
        let oldest = sqlx::query("SELECT id, bytes FROM originals ORDER BY kept_ms, id LIMIT 256")
            .fetch_all(pool)
            .await?;
        if oldest.is_empty() {
            break;
        }
        let mut ids = Vec::new();
        for row in &oldest {
            if total.saturating_sub(freed) <= target {
                break;
            }
            let bytes: i64 = row.try_get("bytes")?;
            freed += bytes.max(0) as u64;
            ids.push(row.try_get::<String, _>("id")?);
        }
        for id in &ids {
            evicted += sqlx::query("DELETE FROM originals WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected();
        }
    }
    Ok(evicted)
}

/// Deletes outputs kept more than `keep_for` ago; returns how many.
pub async fn delete_older_than(pool: &AnyPool, keep_for: Duration) -> Result<u64, sqlx::Error> {
    let cutoff = crate::clock::now_ms() - keep_for.as_millis() as i64;
    sqlx::query("DELETE FROM originals WHERE kept_ms < $1")
        .bind(cutoff)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
}

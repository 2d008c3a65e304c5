//! Keeps the response cache in the ledger's database (SQLite or PostgreSQL), so it
//! survives a restart: stored and evicted entries go to a writer task through a bounded
//! channel (a full channel skips the write, never the request); at start the newest live
//! entries are loaded back within the cache's bounds.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use sqlx::{AnyPool, Row};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::similar::Words;
use super::{Entry, Key, ResponseCache};
use crate::clock::now_ms;
use crate::usage::Usage;

/// A change to persist.
pub enum Op {
    Put {
        key: Key,
        entry: Arc<Entry>,
        similar: Option<(u64, Words)>,
    },
    Delete {
        key: Key,
    },
    /// Answered once everything before it is written.
    Flush(oneshot::Sender<()>),
}

const QUEUE: usize = 1024;

fn hex(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Key> {
    let mut key = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(key)
}

fn words_text(words: &Words) -> String {
    words
        .hashes
        .iter()
        .map(|h| format!("{h:016x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn words_of(text: &str) -> Option<Words> {
    let hashes = text
        .split_ascii_whitespace()
        .map(|w| u64::from_str_radix(w, 16).ok())
        .collect::<Option<Vec<u64>>>()?;
    Some(Words::from_hashes(hashes))
}

/// Loads the live entries (newest first, within the bounds), then persists every change.
pub async fn attach(
    cache: &Arc<ResponseCache>,
    pool: AnyPool,
) -> Result<JoinHandle<()>, sqlx::Error> {
    let now = now_ms();
    sqlx::query("DELETE FROM cache_entries WHERE expires_ms <= $1")
        .bind(now)
        .execute(&pool)
        .await?;
    let rows = sqlx::query(
        "SELECT key, created_ms, expires_ms, streamed, model, input_tokens, output_tokens, \
         cache_read_tokens, cache_write_tokens, reasoning_tokens, body, shape, words \
         FROM cache_entries WHERE expires_ms > $1 ORDER BY created_ms DESC LIMIT $2",
    )
    .bind(now)
    .bind(cache.settings.max_entries as i64)
    .fetch_all(&pool)
    .await?;
    let mut loaded = 0usize;
    // Oldest first, so the newest end up the most recently used.
    for row in rows.iter().rev() {
        let Some(key) = unhex(&row.try_get::<String, _>("key")?) else {
            continue;
        };
        let tokens = |name: &str| -> Result<Option<u64>, sqlx::Error> {
            Ok(row
                .try_get::<Option<i64>, _>(name)?
                .map(|n| n.max(0) as u64))
        };
        let usage = match tokens("input_tokens")? {
            None => None,
            Some(input) => Some(Usage {
                input,
                output: tokens("output_tokens")?.unwrap_or(0),
                cache_read: tokens("cache_read_tokens")?.unwrap_or(0),
                cache_write: tokens("cache_write_tokens")?.unwrap_or(0),
                reasoning: tokens("reasoning_tokens")?.unwrap_or(0),
            }),
        };
        let entry = Entry {
            body: Bytes::from(row.try_get::<String, _>("body")?),
            streamed: row.try_get::<i64, _>("streamed")? != 0,
            model: row.try_get("model")?,
            usage,
            created_ms: row.try_get("created_ms")?,
            expires_ms: row.try_get("expires_ms")?,
        };
        let shape = row.try_get::<Option<i64>, _>("shape")?;
        let words = row.try_get::<Option<String>, _>("words")?;
        let similar = match (shape, words.as_deref().and_then(words_of)) {
            (Some(shape), Some(words)) => Some((shape as u64, words)),
            _ => None,
        };
        cache.insert(key, Arc::new(entry), similar);
        loaded += 1;
    }
    if loaded > 0 {
        tracing::info!(entries = cache.len(), "response cache loaded");
    }
    let (tx, rx) = mpsc::channel(QUEUE);
    let _ = cache.sink.set(tx);
    Ok(tokio::spawn(write_loop(pool, rx)))
}

/// Waits until every change queued so far is written (at shutdown, before the pool closes).
pub async fn flush(cache: &ResponseCache) {
    let Some(sink) = cache.sink.get() else {
        return;
    };
    let (done, written) = oneshot::channel();
    if sink.send(Op::Flush(done)).await.is_ok() {
        let _ = tokio::time::timeout(Duration::from_secs(5), written).await;
    }
}

async fn write_loop(pool: AnyPool, mut rx: mpsc::Receiver<Op>) {
    let mut batch = Vec::new();
    let mut purge = tokio::time::interval(Duration::from_secs(3600));
    loop {
        tokio::select! {
            got = rx.recv_many(&mut batch, 256) => {
                if got == 0 {
                    return;
                }
                if let Err(e) = write(&pool, &batch).await {
                    metrics::counter!("trimgate_cache_write_errors_total").increment(1);
                    tracing::warn!(error = %e, "response cache: could not persist entries");
                }
                for op in batch.drain(..) {
                    if let Op::Flush(done) = op {
                        let _ = done.send(());
                    }
                }
            }
            _ = purge.tick() => {
                let _ = sqlx::query("DELETE FROM cache_entries WHERE expires_ms <= $1")
                    .bind(now_ms())
                    .execute(&pool)
                    .await;
            }
        }
    }
}

async fn write(pool: &AnyPool, ops: &[Op]) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let result = write_on(&mut conn, ops).await;
    crate::db::discard_if_failed(conn, &result).await;
    result
}

async fn write_on(conn: &mut sqlx::AnyConnection, ops: &[Op]) -> Result<(), sqlx::Error> {
    let mut tx = sqlx::Connection::begin(conn).await?;
    for op in ops {
        match op {
            Op::Put {
                key,
                entry,
                similar,
            } => {
                let tokens = |f: fn(&Usage) -> u64| entry.usage.as_ref().map(|u| f(u) as i64);
                sqlx::query(
                    "INSERT INTO cache_entries (key, created_ms, expires_ms, streamed, model, \
                     input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, \
                     reasoning_tokens, body, shape, words) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
                     ON CONFLICT (key) DO UPDATE SET created_ms = excluded.created_ms, \
                     expires_ms = excluded.expires_ms, streamed = excluded.streamed, \
                     model = excluded.model, input_tokens = excluded.input_tokens, \
                     output_tokens = excluded.output_tokens, \
                     cache_read_tokens = excluded.cache_read_tokens, \
                     cache_write_tokens = excluded.cache_write_tokens, \
                     reasoning_tokens = excluded.reasoning_tokens, body = excluded.body, \
                     shape = excluded.shape, words = excluded.words",
                )
                .bind(hex(key))
                .bind(entry.created_ms)
                .bind(entry.expires_ms)
                .bind(i64::from(entry.streamed))
                .bind(entry.model.clone())
                .bind(tokens(|u| u.input))
                .bind(tokens(|u| u.output))
                .bind(tokens(|u| u.cache_read))
                .bind(tokens(|u| u.cache_write))
                .bind(tokens(|u| u.reasoning))
                .bind(String::from_utf8_lossy(&entry.body).into_owned())
                .bind(similar.as_ref().map(|(shape, _)| *shape as i64))
                .bind(similar.as_ref().map(|(_, words)| words_text(words)))
                .execute(&mut *tx)
                .await?;
            }
            Op::Delete { key } => {
                sqlx::query("DELETE FROM cache_entries WHERE key = $1")
                    .bind(hex(key))
                    .execute(&mut *tx)
                    .await?;
            }
            Op::Flush(_) => {}
        }
    }
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_words_round_trip_as_text() {
        let key: Key = std::array::from_fn(|i| (i * 7) as u8);
        assert_eq!(unhex(&hex(&key)), Some(key));
        assert_eq!(unhex("zz"), None);
        let words = Words::of(["alpha beta gamma"]);
        assert_eq!(words_of(&words_text(&words)), Some(words));
    }
}

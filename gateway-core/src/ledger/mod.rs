//! The ledger: one row per request in SQLite (the default, in the platform data dir, WAL
//! mode) or PostgreSQL, through the same sqlx code. Rows are written off the hot path: the
//! record stage puts them on a bounded channel and a writer task stores them in batches,
//! one transaction each. A full channel never blocks or fails a request; the row is
//! dropped and counted.

pub mod audit;
pub mod guard_stats;
pub mod keys;
pub mod originals;
pub mod search;
mod sqlite;
pub mod stats;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
pub use sqlx::AnyPool;
use sqlx::ConnectOptions;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use crate::pricing::{Cost, Prices, Pricing};
use crate::record::{Recorder, RequestRecord};

/// Rows waiting to be written; past this the newest are dropped.
const QUEUE: usize = 8192;
/// Rows per transaction at most.
const BATCH: usize = 512;
/// How long the writer gathers a batch before writing what it has.
const GATHER: Duration = Duration::from_millis(200);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("cannot create the ledger's folder {path}: {detail}")]
    Folder { path: String, detail: String },
    #[error("cannot open the ledger at {url}: {detail}")]
    Open { url: String, detail: String },
    #[error("cannot bring the ledger at {url} up to date: {detail}")]
    Migrate { url: String, detail: String },
}

/// Where the ledger lives by default: `<platform data dir>/trimgate/ledger.sqlite`.
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("dev", "trimgate", "trimgate")
        .map(|dirs| dirs.data_dir().join("ledger.sqlite"))
}

/// The sqlx URL for a SQLite file.
pub fn sqlite_url(path: &std::path::Path) -> String {
    format!("sqlite://{}", path.display())
}

/// Shows a ledger URL without a password (see [`crate::secrets::redact_url`]).
pub use crate::secrets::redact_url as redact;

/// Opens (creating if needed) and migrates the ledger at `url`.
pub async fn open(url: &str) -> Result<AnyPool, LedgerError> {
    sqlx::any::install_default_drivers();
    let shown = redact(url);
    if let Some(path) = url.strip_prefix("sqlite://") {
        let file = path.split('?').next().unwrap_or(path);
        if let Some(dir) = std::path::Path::new(file).parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                crate::files::create_private_dir(dir).map_err(|e| LedgerError::Folder {
                    path: dir.display().to_string(),
                    detail: e.to_string(),
                })?;
            }
        }
    }
    // A SQLite file is created when missing, unless the URL says otherwise; owner-only,
    // since it holds cached answers and the words of prompts (SQLite gives its journal
    // files the same mode).
    let creates =
        url.starts_with("sqlite:") && (!url.contains("mode=") || url.contains("mode=rwc"));
    if let Some(file) = sqlite::file_of(url).filter(|_| creates) {
        crate::files::create_private_file(&file).map_err(|e| LedgerError::Open {
            url: shown.clone(),
            detail: e.to_string(),
        })?;
    }
    let url = if url.starts_with("sqlite:") && !url.contains("mode=") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}mode=rwc")
    } else {
        url.to_owned()
    };
    let options = AnyConnectOptions::from_str(&url)
        .map_err(|e| LedgerError::Open {
            url: shown.clone(),
            detail: e.to_string(),
        })?
        .disable_statement_logging();
    let pool = AnyPoolOptions::new()
        .max_connections(if url.starts_with("sqlite:") { 1 } else { 4 })
        // A file that is not a database, or a server that does not answer, is reported
        // at start within seconds, not after the pool's default half minute of retries.
        .acquire_timeout(Duration::from_secs(if url.starts_with("sqlite:") {
            2
        } else {
            10
        }))
        .after_connect(|conn, _| {
            Box::pin(async move {
                if conn.backend_name() == "SQLite" {
                    // WAL: readers never wait for the writer; NORMAL: a crash can lose the
                    // last transactions, never corrupt the file.
                    sqlx::query("PRAGMA journal_mode=WAL")
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query("PRAGMA synchronous=NORMAL")
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query("PRAGMA busy_timeout=5000")
                        .execute(&mut *conn)
                        .await?;
                }
                Ok(())
            })
        })
        .connect_with(options)
        .await
        .map_err(|e| LedgerError::Open {
            url: shown.clone(),
            detail: e.to_string(),
        })?;
    MIGRATOR
        .run(&pool)
        .await
        .map_err(|e| LedgerError::Migrate {
            url: shown,
            detail: e.to_string(),
        })?;
    Ok(pool)
}

/// The record stage's side of the ledger: hands each record to the inner recorder (the
/// log line) and queues it for the writer.
pub struct LedgerRecorder {
    inner: Arc<dyn Recorder>,
    queue: mpsc::Sender<Arc<RequestRecord>>,
    /// Wakes the writer before its gathering time is up, when a batch is waiting.
    full: Arc<Notify>,
    dropped: AtomicU64,
}

impl Recorder for LedgerRecorder {
    fn record(&self, record: Arc<RequestRecord>) {
        // The inner recorder (the log line) gets the row from the writer, after it is
        // stored: nothing is cloned or formatted on the request path. A row the queue
        // cannot take is still logged here.
        match self.queue.try_send(record) {
            Ok(()) => {
                if self.queue.max_capacity() - self.queue.capacity() >= BATCH {
                    self.full.notify_one();
                }
            }
            Err(
                mpsc::error::TrySendError::Full(record) | mpsc::error::TrySendError::Closed(record),
            ) => {
                self.inner.record(record);
                metrics::counter!("trimgate_ledger_dropped_total").increment(1);
                let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_power_of_two() {
                    tracing::warn!(dropped = n, "ledger queue full: rows dropped");
                }
            }
        }
    }
}

/// The writer task and what stops it.
pub struct Ledger {
    stop: watch::Sender<bool>,
    writer: JoinHandle<()>,
}

impl Ledger {
    /// Starts the writer on `pool`; records go through the returned recorder.
    pub fn start(
        pool: AnyPool,
        inner: Arc<dyn Recorder>,
        pricing: Arc<Pricing>,
    ) -> (Ledger, Arc<LedgerRecorder>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let (stop, stopped) = watch::channel(false);

        let full = Arc::new(Notify::new());
        let store = Store::for_pool(pool, &pricing);
        let writer = tokio::spawn(write_loop(
            store,
            rx,
            full.clone(),
            stopped,
            pricing,
            inner.clone(),
        ));
        let recorder = Arc::new(LedgerRecorder {
            inner,
            queue: tx,
            full,
            dropped: AtomicU64::new(0),
        });
        (Ledger { stop, writer }, recorder)
    }

    /// Writes every queued row, then stops the writer.
    pub async fn close(self) {
        let _ = self.stop.send(true);
        let _ = self.writer.await;
    }
}

/// Deletes rows older than `keep` now and once a day, until the pool closes.
pub fn spawn_retention(pool: AnyPool, keep: Duration) -> JoinHandle<()> {
    spawn_daily_deletion(pool, "ledger rows past retention", move |pool| async move {
        prune_older_than(&pool, keep).await
    })
}

/// Runs `delete` (rows past their time, named `what` in the log) now and once a day,
/// until the pool closes.
pub(crate) fn spawn_daily_deletion<F, Fut>(
    pool: AnyPool,
    what: &'static str,
    delete: F,
) -> JoinHandle<()>
where
    F: Fn(AnyPool) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<u64, sqlx::Error>> + Send,
{
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(86_400));
        loop {
            tick.tick().await;
            if pool.is_closed() {
                return;
            }
            match delete(pool.clone()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "{what} deleted"),
                Err(e) => tracing::warn!(error = %e, "{what} could not be deleted"),
            }
        }
    })
}

/// Deletes rows that started more than `keep` ago; returns how many.
pub async fn prune_older_than(pool: &AnyPool, keep: Duration) -> Result<u64, sqlx::Error> {
    let cutoff = crate::clock::now_ms() - keep.as_millis() as i64;
    let done = sqlx::query("DELETE FROM requests WHERE ts_ms < $1")
        .bind(cutoff)
        .execute(pool)
        .await?;
    sqlx::query("DELETE FROM request_passes WHERE ts_ms < $1")
        .bind(cutoff)
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}

/// Where the writer puts its batches.
enum Store {
    /// PostgreSQL (and an in-memory SQLite database): through the pool.
    Pool(AnyPool),
    /// A SQLite file: on a thread of its own; the pool stays open for the rest.
    Sqlite(AnyPool, sqlite::SqliteWriter),
}

/// Why a batch was not written.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error(transparent)]
    Sqlx(#[from] sqlx::Error),
    #[error(transparent)]
    Sqlite(rusqlite::Error),
    #[error("the ledger's writer thread has stopped")]
    Stopped,
}

impl WriteError {
    /// SQLite's "database or disk is full" (SQLITE_FULL, 13), PostgreSQL's `disk_full`
    /// (53100), or the OS's ENOSPC.
    fn is_disk_full(&self) -> bool {
        match self {
            WriteError::Sqlx(sqlx::Error::Database(db)) => {
                matches!(db.code().as_deref(), Some("13" | "53100"))
            }
            WriteError::Sqlx(sqlx::Error::Io(io)) => io.raw_os_error() == Some(28),
            WriteError::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => {
                e.code == rusqlite::ErrorCode::DiskFull
            }
            _ => false,
        }
    }
}

impl Store {
    fn for_pool(pool: AnyPool, pricing: &Arc<Pricing>) -> Store {
        let url = pool.connect_options().database_url.to_string();
        let Some(file) = sqlite::file_of(&url) else {
            return Store::Pool(pool);
        };
        match sqlite::SqliteWriter::start(file, pricing.clone()) {
            Ok(writer) => Store::Sqlite(pool, writer),
            Err(e) => {
                tracing::warn!(error = %e, "no thread for the ledger's writes: they go through the pool");
                Store::Pool(pool)
            }
        }
    }

    fn pool(&self) -> &AnyPool {
        match self {
            Store::Pool(pool) | Store::Sqlite(pool, _) => pool,
        }
    }

    /// Writes `rows` in one transaction; gives them back with the outcome.
    async fn write(
        &self,
        rows: Vec<Arc<RequestRecord>>,
        pricing: &Pricing,
    ) -> (Vec<Arc<RequestRecord>>, Result<(), WriteError>) {
        match self {
            Store::Pool(pool) => {
                let result = write(pool, &rows, pricing).await.map_err(WriteError::from);
                (rows, result)
            }
            Store::Sqlite(_, writer) => writer.write(rows).await,
        }
    }
}

async fn write_loop(
    store: Store,
    mut rx: mpsc::Receiver<Arc<RequestRecord>>,
    full: Arc<Notify>,
    mut stopped: watch::Receiver<bool>,
    pricing: Arc<Pricing>,
    inner: Arc<dyn Recorder>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let mut stopping = tokio::select! {
            got = rx.recv() => match got {
                Some(r) => { batch.push(r); false }
                None => true,
            },
            _ = stopped.changed() => true,
        };
        if !stopping && rx.len() + 1 < BATCH {
            // Gather what arrives in the next moment by sleeping, not by waiting on each row:
            // a writer waiting on the queue is woken by every request, a thread switch on
            // the serving thread's path. The recorder wakes it early when a batch is full.
            tokio::select! {
                () = tokio::time::sleep(GATHER) => {}
                () = full.notified() => {}
                _ = stopped.changed() => stopping = true,
            }
        }
        let limit = if stopping { usize::MAX } else { BATCH };
        while batch.len() < limit {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        metrics::gauge!("trimgate_ledger_queue_depth").set(rx.len() as f64);
        // A batch is longer than BATCH only when stopping.
        let mut pending = std::mem::take(&mut batch);
        while !pending.is_empty() {
            let rest = pending.split_off(pending.len().min(BATCH));
            let (rows, result) = store.write(pending, &pricing).await;
            if let Err(e) = result {
                metrics::counter!("trimgate_ledger_write_errors_total").increment(1);
                let cause = if e.is_disk_full() {
                    "the disk is full; writing resumes when there is space"
                } else {
                    "the database refused the write"
                };
                tracing::warn!(error = %e, rows = rows.len(), cause, "ledger write failed: rows lost");
            }
            batch.extend(rows);
            pending = rest;
        }
        // The batch's log lines reach stderr and the file together: a write each per
        // batch, not per request.
        crate::logs::coalesced(|| {
            for r in batch.drain(..) {
                inner.record(r);
            }
        });
        if stopping {
            let pool = store.pool().clone();
            // The SQLite thread ends with its handle, after the batch written above.
            drop(store);
            pool.close().await;
            return;
        }
    }
}

const COLUMNS: &str = "INSERT INTO requests (ts_ms, request_id, dialect, provider, \
    model_requested, model_served, gateway_key, streamed, status, outcome, error, latency_ms, \
    overhead_ms, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, \
    reasoning_tokens, applied, saved_tokens, saved_bytes, cost_usd, saved_usd, cache, dropped, \
    session, attempt, api_key, cache_break, first_byte_ms, kind, tokens_estimated, secrets) VALUES ";
const PER_ROW: usize = 33;
const PASS_COLUMNS: &str = "INSERT INTO request_passes (ts_ms, request_id, pass, \
    tokens_before, tokens_after, saved_usd) VALUES ";
const PER_PASS_ROW: usize = 6;
/// Rows per INSERT: one statement for many rows costs far less than one per row, and
/// 64 × 33 parameters stay under every backend's limit.
const ROWS_PER_INSERT: usize = 64;

/// How a statement's parameters are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placeholders {
    /// `$1, $2, …`: PostgreSQL's only form.
    Numbered,
    /// `?, ?, …`: SQLite binds these by position. Numbered ones cost it a search of the
    /// statement's parameter names for each bind (sqlx asks `sqlite3_bind_parameter_name`
    /// for every index, a linear scan), which is quadratic in the parameters of a
    /// statement: with 64 rows of 24 columns that scan took a third of the gateway's CPU
    /// at saturation.
    Anonymous,
}

impl Placeholders {
    fn for_backend(conn: &sqlx::AnyConnection) -> Placeholders {
        if conn.backend_name() == "SQLite" {
            Placeholders::Anonymous
        } else {
            Placeholders::Numbered
        }
    }
}

/// `INSERT … VALUES (…), (…)` for `rows` rows of `per_row` parameters each.
fn values_sql(columns: &str, per_row: usize, rows: usize, style: Placeholders) -> String {
    let mut sql = String::with_capacity(columns.len() + rows * per_row * 6);
    sql.push_str(columns);
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for col in 0..per_row {
            if col > 0 {
                sql.push_str(", ");
            }
            match style {
                Placeholders::Numbered => {
                    use std::fmt::Write;
                    let _ = write!(sql, "${}", row * per_row + col + 1);
                }
                Placeholders::Anonymous => sql.push('?'),
            }
        }
        sql.push(')');
    }
    sql
}

/// The names a request is priced by ([`Pricing::for_request`]): where a cloud served it,
/// and the model served (else the one asked for).
type PricedBy<'a> = (Option<&'a str>, Option<&'a str>);

fn priced_by(r: &RequestRecord) -> PricedBy<'_> {
    (
        r.priced_as.as_deref(),
        r.model_served.as_deref().or(r.model_requested.as_deref()),
    )
}

/// Each model's prices, looked up once per batch: a lookup matches the model against every
/// pattern of the table in turn, and a batch's rows name one or two models.
struct PriceMemo<'a> {
    pricing: &'a Pricing,
    seen: Vec<(PricedBy<'a>, Option<Prices>)>,
}

impl<'a> PriceMemo<'a> {
    fn new(pricing: &'a Pricing) -> PriceMemo<'a> {
        PriceMemo {
            pricing,
            seen: Vec::new(),
        }
    }

    fn prices(&mut self, r: &'a RequestRecord) -> Option<Prices> {
        let by = priced_by(r);
        if let Some((_, p)) = self.seen.iter().find(|(seen, _)| *seen == by) {
            return *p;
        }
        let p = self.pricing.for_request(by.0, by.1);
        // A bound on the list, for a batch that names many models.
        if self.seen.len() < 16 {
            self.seen.push((by, p));
        }
        p
    }

    /// What a request cost and saved: the optimizer's savings at the input price, plus the
    /// whole answer when the response cache replayed it.
    fn priced(&mut self, r: &'a RequestRecord) -> Option<Cost> {
        let prices = self.prices(r)?;
        let spent = match (&r.usage, &r.avoided) {
            (Some(u), _) => prices.cost(u, r.saved_tokens),
            (None, Some(_)) => prices.cost(&crate::usage::Usage::default(), r.saved_tokens),
            (None, None) => return None,
        };
        let avoided = r.avoided.map_or(0.0, |a| prices.cost(&a, 0).cost);
        Some(Cost {
            cost: spent.cost,
            saved: spent.saved + avoided,
        })
    }
}

/// One column's value, as both write paths bind it.
#[derive(Clone, Copy, Debug)]
enum Value<'a> {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<&'a str>),
}

/// A `requests` row's values, in [`COLUMNS`]' order.
fn request_values<'a>(r: &'a RequestRecord, memo: &mut PriceMemo<'a>) -> [Value<'a>; PER_ROW] {
    use Value::{Int, Real, Text};
    let usage = r.usage;
    // Counts come from the provider: one past what a column holds is stored as its largest.
    let tokens = |f: fn(&crate::usage::Usage) -> u64| {
        Int(usage
            .as_ref()
            .map(|u| i64::try_from(f(u)).unwrap_or(i64::MAX)))
    };
    let cost = memo.priced(r);
    [
        Int(Some(r.started_ms())),
        Text(Some(r.request_id.as_str())),
        Text(Some(r.dialect.as_str())),
        Text(r.provider.as_deref()),
        Text(r.model_requested.as_deref()),
        Text(r.model_served.as_deref()),
        Text(r.gateway_key.as_deref()),
        Int(Some(i64::from(r.streamed))),
        Int(Some(i64::from(r.status))),
        Text(Some(r.outcome.as_str())),
        Text(r.error),
        Real(Some(r.latency.as_secs_f64() * 1e3)),
        Real(Some(r.overhead.as_secs_f64() * 1e3)),
        tokens(|u| u.input),
        tokens(|u| u.output),
        tokens(|u| u.cache_read),
        tokens(|u| u.cache_write),
        tokens(|u| u.reasoning),
        Text(Some(r.applied.as_str())),
        Int(Some(r.saved_tokens)),
        Int(Some(r.saved_bytes)),
        Real(cost.map(|c| c.cost)),
        Real(cost.map(|c| c.saved)),
        Text(r.cache.map(|c| c.as_str())),
        Text(Some(r.dropped.as_str()).filter(|d| !d.is_empty())),
        Text(r.session.as_deref()),
        Int(Some(i64::from(r.attempt))),
        Text(r.api_key.as_deref()),
        Text(r.cache_break.map(crate::sessions::Cause::as_str)),
        Real(r.first_byte.map(|d| d.as_secs_f64() * 1e3)),
        Text(Some(r.kind.as_str())),
        Text(r.estimated.as_str()),
        Text(Some(r.secrets.as_str()).filter(|s| !s.is_empty())),
    ]
}

/// Every optimizer pass of `rows`, with the request it belongs to.
fn passes_of(rows: &[Arc<RequestRecord>]) -> Vec<(&RequestRecord, &crate::optimize::PassTokens)> {
    rows.iter()
        .flat_map(|r| r.passes.iter().map(move |p| (&**r, p)))
        .collect()
}

/// A `request_passes` row's values, in [`PASS_COLUMNS`]' order.
fn pass_values<'a>(
    r: &'a RequestRecord,
    p: &'a crate::optimize::PassTokens,
    memo: &mut PriceMemo<'a>,
) -> [Value<'a>; PER_PASS_ROW] {
    let input_price = memo
        .prices(r)
        // At the input rate the request was billed at (long prompts cost more).
        .map(|prices| prices.rates_for(r.usage.map_or(0, |u| u.input)).input);
    let saved = p.before as f64 - p.after as f64;
    [
        Value::Int(Some(r.started_ms())),
        Value::Text(Some(r.request_id.as_str())),
        Value::Text(Some(p.pass)),
        Value::Int(Some(p.before as i64)),
        Value::Int(Some(p.after as i64)),
        Value::Real(input_price.map(|price| saved * price / 1e6)),
    ]
}

async fn write(
    pool: &AnyPool,
    rows: &[Arc<RequestRecord>],
    pricing: &Pricing,
) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let result = write_on(&mut conn, rows, pricing).await;
    crate::db::discard_if_failed(conn, &result).await;
    result
}

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

fn bind<'q>(query: AnyQuery<'q>, value: Value<'q>) -> AnyQuery<'q> {
    match value {
        Value::Int(v) => query.bind(v),
        Value::Real(v) => query.bind(v),
        Value::Text(v) => query.bind(v),
    }
}

/// A statement the connection does not keep prepared. sqlx's Any driver gives PostgreSQL a
/// NULL `f64` as a `float4` parameter: a statement kept from a batch whose first cost was
/// NULL then refuses every later batch's real costs ("incorrect binary data format").
/// Prepared afresh, each batch's statement takes its own parameters' types.
fn unprepared(sql: &str) -> AnyQuery<'_> {
    sqlx::query(sql).persistent(false)
}

async fn write_on(
    conn: &mut sqlx::AnyConnection,
    rows: &[Arc<RequestRecord>],
    pricing: &Pricing,
) -> Result<(), sqlx::Error> {
    let style = Placeholders::for_backend(conn);
    let mut memo = PriceMemo::new(pricing);
    let mut tx = sqlx::Connection::begin(conn).await?;
    for group in rows.chunks(ROWS_PER_INSERT) {
        let sql = values_sql(COLUMNS, PER_ROW, group.len(), style);
        let mut query = unprepared(&sql);
        for r in group {
            // Text is bound by reference: the rows outlive the statement.
            for value in request_values(r, &mut memo) {
                query = bind(query, value);
            }
        }
        query.execute(&mut *tx).await?;
    }
    let passes = passes_of(rows);
    for group in passes.chunks(ROWS_PER_INSERT) {
        let sql = values_sql(PASS_COLUMNS, PER_PASS_ROW, group.len(), style);
        let mut query = unprepared(&sql);
        for (r, p) in group {
            for value in pass_values(r, p, &mut memo) {
                query = bind(query, value);
            }
        }
        query.execute(&mut *tx).await?;
    }
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Dialect;
    use crate::record::MemoryRecorder;
    use crate::record::Outcome;
    use sqlx::Row;
    use std::time::{SystemTime, UNIX_EPOCH};

    /// A fresh SQLite ledger in a temp dir: its folder, URL, writer and recorder.
    async fn started(tag: &str) -> (PathBuf, String, Ledger, Arc<LedgerRecorder>) {
        let dir = std::env::temp_dir().join(format!("tg-{tag}-{}", uuid::Uuid::new_v4()));
        let url = sqlite_url(&dir.join("ledger.sqlite"));
        let pool = open(&url).await.unwrap();
        let (ledger, recorder) = Ledger::start(
            pool,
            Arc::new(MemoryRecorder::new(1)),
            Arc::new(Pricing::bundled()),
        );
        (dir, url, ledger, recorder)
    }

    fn record(id: &str) -> RequestRecord {
        RequestRecord {
            request_id: id.into(),
            started_at: SystemTime::now(),
            dialect: Dialect::AnthropicMessages,
            provider: Some("p".into()),
            model_requested: Some("claude-x".into()),
            model_served: Some("claude-sonnet-4-5".into()),
            priced_as: None,
            streamed: true,
            status: 200,
            outcome: Outcome::Completed,
            error: None,
            latency: Duration::from_millis(12),
            overhead: Duration::from_micros(40),
            usage: Some(crate::usage::Usage {
                input: 100,
                output: 20,
                cache_read: 80,
                cache_write: 0,
                reasoning: 5,
            }),
            estimated: crate::record::Estimated::default(),
            kind: crate::record::Kind::Generation,
            applied: "tool_output=auto".into(),
            saved_tokens: 1234,
            saved_bytes: 5678,
            gateway_key: None,
            passes: Vec::new(),
            cache: None,
            avoided: None,
            dropped: String::new(),
            session: None,
            cache_break: None,
            attempt: 1,
            api_key: None,
            first_byte: Some(Duration::from_millis(9)),
            rewrites: Vec::new(),
            secrets: "github_token:1".into(),
        }
    }

    #[tokio::test]
    async fn rows_are_written_in_batches_and_flushed_on_close() {
        let dir = std::env::temp_dir().join(format!("tg-ledger-{}", uuid::Uuid::new_v4()));
        let url = sqlite_url(&dir.join("nested").join("ledger.sqlite"));
        let pool = open(&url).await.unwrap();
        let memory = Arc::new(MemoryRecorder::new(10));
        let (ledger, recorder) = Ledger::start(pool, memory.clone(), Arc::new(Pricing::bundled()));
        for i in 0..50 {
            recorder.record(Arc::new(record(&format!("r{i}"))));
        }
        ledger.close().await;
        assert_eq!(
            memory.records().len(),
            10,
            "the inner recorder still sees every record"
        );

        // Reopened, as after a restart: migrations are not run twice, rows are there.
        let pool = open(&url).await.unwrap();
        let row = sqlx::query(
            "SELECT COUNT(*) AS n, SUM(input_tokens) AS i, SUM(saved_tokens) AS s, SUM(cost_usd) AS c FROM requests",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(row.get::<i64, _>("n"), 50);
        assert_eq!(row.get::<i64, _>("i"), 5000);
        assert_eq!(row.get::<i64, _>("s"), 50 * 1234);
        // Sonnet: 20 fresh input × $3, 80 cache reads × $0.30, 20 output × $15, per million.
        let each = (20.0 * 3.0 + 80.0 * 0.30 + 20.0 * 15.0) / 1e6;
        assert!((row.get::<f64, _>("c") - 50.0 * each).abs() < 1e-9);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A row a cloud served is priced by where it went (`priced_as`), not by the Anthropic
    /// name its answer carried; its passes' savings at that input price too.
    #[test]
    fn a_cloud_row_is_priced_by_its_cloud() {
        let pricing = Pricing::bundled();
        let mut memo = PriceMemo::new(&pricing);
        let first_party = record("a");
        let mut bedrock = record("b");
        bedrock.model_served = Some("claude-sonnet-4-5-20250929".into());
        bedrock.priced_as = Some(crate::pricing::cloud_key(
            crate::pricing::Site::Bedrock,
            "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ));
        bedrock.passes = vec![crate::optimize::PassTokens {
            pass: "squeeze",
            before: 1_000_100,
            after: 100,
        }];
        let mut nova = record("c");
        nova.priced_as = Some("bedrock:regional:us.amazon.nova-pro-v1:0".into());
        let listed = memo.priced(&first_party).unwrap().cost;
        let regional = memo.priced(&bedrock).unwrap().cost;
        // 10% over, bucket for bucket.
        assert!(
            (regional - listed * 1.1).abs() < 1e-12,
            "{regional} vs {listed}"
        );
        assert!(memo.priced(&nova).is_none(), "no cloud price, no cost");
        let pass = pass_values(&bedrock, &bedrock.passes[0], &mut memo);
        assert!(
            matches!(pass[5], Value::Real(Some(v)) if (v - 3.30).abs() < 1e-9),
            "{:?}",
            pass[5]
        );
    }

    #[tokio::test]
    async fn a_file_is_written_on_the_ledger_thread_and_memory_through_the_pool() {
        let dir = std::env::temp_dir().join(format!("tg-store-{}", uuid::Uuid::new_v4()));
        let pricing = Arc::new(Pricing::bundled());
        for (url, on_thread) in [
            (sqlite_url(&dir.join("ledger.sqlite")), true),
            ("sqlite::memory:".to_owned(), false),
        ] {
            let pool = open(&url).await.unwrap();
            let store = Store::for_pool(pool.clone(), &pricing);
            assert_eq!(matches!(store, Store::Sqlite(..)), on_thread, "{url}");
            let mut with_pass = record("p");
            with_pass.passes = vec![crate::optimize::PassTokens {
                pass: "squeeze",
                before: 100,
                after: 60,
            }];
            let rows = vec![Arc::new(record("a")), Arc::new(with_pass)];
            let (back, result) = store.write(rows, &pricing).await;
            result.unwrap();
            assert_eq!(back.len(), 2, "the rows come back for the log line");
            let (n, saved): (i64, i64) = sqlx::query_as(
                "SELECT (SELECT COUNT(*) FROM requests), \
                 (SELECT SUM(tokens_before - tokens_after) FROM request_passes)",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            assert_eq!((n, saved), (2, 40), "{url}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn totals_group_by_model_and_by_hour() {
        let (dir, url, ledger, recorder) = started("stats").await;
        let hour = Duration::from_secs(3600);
        for i in 0..6u64 {
            let mut r = record(&format!("r{i}"));
            r.started_at = UNIX_EPOCH + hour * 1000 + hour * (i as u32 % 2);
            if i >= 4 {
                r.model_served = Some("gpt-5".into());
                r.status = 500;
                r.outcome = Outcome::UpstreamFailed;
            }
            recorder.record(Arc::new(r));
        }
        ledger.close().await;
        let pool = open(&url).await.unwrap();
        let by_model = stats::totals(&pool, 0, stats::By::Model).await.unwrap();
        assert_eq!(by_model.len(), 2);
        let sonnet = by_model
            .iter()
            .find(|t| t.key == "claude-sonnet-4-5")
            .unwrap();
        assert_eq!(
            (sonnet.requests, sonnet.errors, sonnet.input_tokens),
            (4, 0, 400)
        );
        assert!((sonnet.cache_hit_rate() - 0.8).abs() < 1e-9);
        let gpt = by_model.iter().find(|t| t.key == "gpt-5").unwrap();
        assert_eq!((gpt.requests, gpt.errors), (2, 2));
        let by_hour = stats::totals(&pool, 0, stats::By::Bucket(3_600_000))
            .await
            .unwrap();
        let keys: Vec<&str> = by_hour.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["3600000000", "3603600000"]);
        assert_eq!(by_hour.iter().map(|t| t.requests).sum::<i64>(), 6);
        let recent = stats::totals(&pool, 3_603_600_000, stats::By::Model)
            .await
            .unwrap();
        assert_eq!(recent.iter().map(|t| t.requests).sum::<i64>(), 3);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn retention_deletes_only_rows_past_it() {
        let (dir, url, ledger, recorder) = started("retain").await;
        let day = Duration::from_secs(86_400);
        for (i, age) in [0u32, 1, 5, 40].iter().enumerate() {
            let mut r = record(&format!("r{i}"));
            r.started_at = SystemTime::now() - day * *age;
            recorder.record(Arc::new(r));
        }
        ledger.close().await;
        let pool = open(&url).await.unwrap();
        assert_eq!(prune_older_than(&pool, day * 30).await.unwrap(), 1);
        assert_eq!(prune_older_than(&pool, day * 2).await.unwrap(), 1);
        let left: i64 = sqlx::query("SELECT COUNT(*) FROM requests")
            .fetch_one(&pool)
            .await
            .unwrap()
            .get(0);
        assert_eq!(left, 2);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn placeholders_are_numbered_for_postgres_and_positional_for_sqlite() {
        assert_eq!(
            values_sql("INSERT INTO t (a, b) VALUES ", 2, 2, Placeholders::Numbered),
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"
        );
        assert_eq!(
            values_sql(
                "INSERT INTO t (a, b) VALUES ",
                2,
                2,
                Placeholders::Anonymous
            ),
            "INSERT INTO t (a, b) VALUES (?, ?), (?, ?)"
        );
    }

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://tg:s3cret@db:5432/ledger"),
            "postgres://tg:…@db:5432/ledger"
        );
        assert_eq!(redact("sqlite:///x/l.sqlite"), "sqlite:///x/l.sqlite");
        assert_eq!(
            redact("postgres://tg@db/ledger?password=s3cret"),
            "postgres://tg@db/ledger?password=…"
        );
    }
}

//! The ledger's SQLite writes, on a thread of their own through rusqlite.
//!
//! sqlx runs a SQLite connection on a worker thread and passes every bound value through
//! its `Any` driver: building each row's arguments, converting them, and handing each
//! statement and its results between threads cost about 3.3 µs per row at saturation (a
//! third of it on the writer task, the rest on sqlx's worker). Here a batch crosses to this
//! thread once, values are bound from the records in place, and statements are prepared
//! once: about 2 µs per row, most of it SQLite's insert and its WAL writes. Reads,
//! migrations, retention and PostgreSQL stay on sqlx; the file is the one sqlx opened and
//! migrated.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags, ToSql};
use tokio::sync::oneshot;

use super::{
    pass_values, passes_of, request_values, values_sql, Placeholders, PriceMemo, Value, COLUMNS,
    PASS_COLUMNS, PER_PASS_ROW, PER_ROW, ROWS_PER_INSERT,
};
use crate::pricing::Pricing;
use crate::record::RequestRecord;

impl ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Value::Int(Some(v)) => ValueRef::Integer(v),
            Value::Real(Some(v)) => ValueRef::Real(v),
            Value::Text(Some(v)) => ValueRef::Text(v.as_bytes()),
            Value::Int(None) | Value::Real(None) | Value::Text(None) => ValueRef::Null,
        }))
    }
}

/// The file a sqlx SQLite URL names, when it names one a second connection can open: not
/// an in-memory database, which each connection would see as its own.
pub(super) fn file_of(url: &str) -> Option<PathBuf> {
    use std::str::FromStr;
    if !url.starts_with("sqlite:") || url.contains("mode=memory") {
        return None;
    }
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url).ok()?;
    let file = options.get_filename();
    let name = file.to_str()?;
    if name.is_empty() || name == ":memory:" || name.starts_with("file:") {
        return None;
    }
    Some(file.to_path_buf())
}

type Rows = Vec<Arc<RequestRecord>>;

/// A batch handed to the thread, and where its rows come back with what failed.
struct Job {
    rows: Rows,
    done: oneshot::Sender<(Rows, Result<(), rusqlite::Error>)>,
}

/// The writer thread's handle. Dropping it ends the thread once its last batch is written.
pub(super) struct SqliteWriter {
    jobs: std::sync::mpsc::Sender<Job>,
}

impl SqliteWriter {
    /// Starts the thread; it opens `file` on its first batch (and again after a failure).
    pub(super) fn start(file: PathBuf, pricing: Arc<Pricing>) -> std::io::Result<SqliteWriter> {
        let (jobs, inbox) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("trimgate-ledger".into())
            .spawn(move || {
                let mut inbox = inbox.into_iter();
                // Each pass opens a connection and writes until a batch fails: a failed
                // COMMIT (a full disk) can leave a connection inside its transaction, and
                // a fresh one starts clean.
                while let Some(first) = inbox.next() {
                    let conn = match open(&file) {
                        Ok(conn) => conn,
                        Err(e) => {
                            let _ = first.done.send((first.rows, Err(e)));
                            continue;
                        }
                    };
                    let mut writer = Batches::new(&conn);
                    for job in std::iter::once(first).chain(inbox.by_ref()) {
                        let result = writer.write(&job.rows, &pricing);
                        let failed = result.is_err();
                        let _ = job.done.send((job.rows, result));
                        if failed {
                            break;
                        }
                    }
                }
            })?;
        Ok(SqliteWriter { jobs })
    }

    /// Writes `rows` in one transaction; gives them back with the outcome.
    pub(super) async fn write(
        &self,
        rows: Vec<Arc<RequestRecord>>,
    ) -> (Vec<Arc<RequestRecord>>, Result<(), super::WriteError>) {
        let (done, answer) = oneshot::channel();
        if let Err(std::sync::mpsc::SendError(job)) = self.jobs.send(Job { rows, done }) {
            return (job.rows, Err(super::WriteError::Stopped));
        }
        match answer.await {
            Ok((rows, result)) => (rows, result.map_err(super::WriteError::Sqlite)),
            // The thread panicked with the batch: its rows are gone with it.
            Err(_) => (Vec::new(), Err(super::WriteError::Stopped)),
        }
    }
}

fn open(file: &Path) -> rusqlite::Result<Connection> {
    // The file exists: sqlx created and migrated it, and set WAL mode, which is kept in it.
    let conn = Connection::open_with_flags(
        file,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // The writer only appends, which touches the last pages of the table and its indexes;
    // SQLite's default page cache (2 MiB) filled up over hours of traffic and showed as a
    // gateway whose memory grew by that much (the soak in RELIABILITY.md). 256 KiB holds
    // what appends touch.
    conn.pragma_update(None, "cache_size", -256)?;
    Ok(conn)
}

/// Rows per INSERT here, with the CPU offered to any thread waiting for it after each: a
/// request woken onto this thread's core waits for the statement in progress (tens of µs),
/// not for the batch (a millisecond for 512 rows). Measured at one request at a time,
/// where the batch's burst made the gateway's p99.9 twice that without a ledger.
const SLICE: usize = 16;

/// One connection's writes, with a statement for each group size prepared once: 16 rows,
/// and 8, 4, 2 and 1 for what is left of a batch after its full groups. Looking a
/// statement up in rusqlite's cache hashes and compares its SQL (over a kilobyte), and a
/// statement for each remainder's own size was prepared afresh nearly every batch (its
/// size changes with the traffic): about 500 instructions a row at a thousand requests a
/// second (BENCHMARKS.md).
struct Batches<'c> {
    conn: &'c Connection,
    /// By group size: `SLICE >> i` rows at index `i`.
    statements: [Option<rusqlite::Statement<'c>>; GROUP_SIZES],
}

/// Group sizes kept: SLICE, SLICE/2, …, 1.
const GROUP_SIZES: usize = SLICE.trailing_zeros() as usize + 1;

impl<'c> Batches<'c> {
    fn new(conn: &'c Connection) -> Batches<'c> {
        Batches {
            conn,
            statements: Default::default(),
        }
    }

    /// The rows of `rows` in groups of the kept sizes: full groups first, then the
    /// remainder by halves.
    fn groups<T>(rows: &[T]) -> impl Iterator<Item = &[T]> {
        let mut rest = rows;
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let size = if rest.len() >= SLICE {
                SLICE
            } else {
                1 << rest.len().ilog2()
            };
            let (group, after) = rest.split_at(size);
            rest = after;
            Some(group)
        })
    }

    fn write(&mut self, rows: &[Arc<RequestRecord>], pricing: &Pricing) -> rusqlite::Result<()> {
        // IMMEDIATE: take the write lock at the start, so a reader that upgrades to writing
        // (the response cache's persistence, retention) waits on busy_timeout instead of
        // failing the transaction half way.
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let result = self.insert(rows, pricing);
        match result {
            Ok(()) => self.conn.execute_batch("COMMIT"),
            Err(e) => {
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                Err(e)
            }
        }
    }

    fn insert(&mut self, rows: &[Arc<RequestRecord>], pricing: &Pricing) -> rusqlite::Result<()> {
        let mut memo = PriceMemo::new(pricing);
        for group in Self::groups(rows) {
            let slot = (SLICE / group.len()).trailing_zeros() as usize;
            let statement = match &mut self.statements[slot] {
                Some(statement) => statement,
                empty => empty.insert(self.conn.prepare(&values_sql(
                    COLUMNS,
                    PER_ROW,
                    group.len(),
                    Placeholders::Anonymous,
                ))?),
            };
            execute(
                statement,
                group.iter().flat_map(|r| request_values(r, &mut memo)),
            )?;
            std::thread::yield_now();
        }
        let passes = passes_of(rows);
        for group in passes.chunks(ROWS_PER_INSERT) {
            let sql = values_sql(
                PASS_COLUMNS,
                PER_PASS_ROW,
                group.len(),
                Placeholders::Anonymous,
            );
            execute(
                &mut *self.conn.prepare_cached(&sql)?,
                group.iter().flat_map(|(r, p)| pass_values(r, p, &mut memo)),
            )?;
        }
        Ok(())
    }
}

/// Binds `values` to `statement`'s parameters in order, then runs it.
fn execute<'v>(
    statement: &mut rusqlite::Statement<'_>,
    values: impl Iterator<Item = Value<'v>>,
) -> rusqlite::Result<()> {
    for (index, value) in values.enumerate() {
        statement.raw_bind_parameter(index + 1, value)?;
    }
    statement.raw_execute()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_goes_in_groups_of_the_kept_sizes() {
        for n in 0..100usize {
            let rows: Vec<usize> = (0..n).collect();
            let groups: Vec<&[usize]> = Batches::groups(&rows).collect();
            assert_eq!(groups.concat(), rows, "every row once, in order");
            for g in &groups {
                assert!(
                    g.len().is_power_of_two() && g.len() <= SLICE,
                    "{n}: {}",
                    g.len()
                );
                assert!((SLICE / g.len()).trailing_zeros() < GROUP_SIZES as u32);
            }
            // Full groups, then each smaller size at most once.
            let smaller: Vec<usize> = groups
                .iter()
                .map(|g| g.len())
                .filter(|&l| l < SLICE)
                .collect();
            assert!(smaller.windows(2).all(|w| w[0] > w[1]), "{n}: {smaller:?}");
            assert_eq!(groups.len(), n / SLICE + (n % SLICE).count_ones() as usize);
        }
    }

    #[test]
    fn only_files_get_a_second_connection() {
        assert_eq!(
            file_of("sqlite:///var/lib/tg/ledger.sqlite?mode=rwc"),
            Some(PathBuf::from("/var/lib/tg/ledger.sqlite"))
        );
        assert_eq!(
            file_of("sqlite://ledger.sqlite"),
            Some(PathBuf::from("ledger.sqlite"))
        );
        assert_eq!(file_of("sqlite::memory:"), None);
        assert_eq!(file_of("sqlite://x.sqlite?mode=memory"), None);
        assert_eq!(file_of("postgres://u@h/db"), None);
    }
}

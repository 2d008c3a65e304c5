//! The Guard page's figures from the ledger: the requests in which the guard found secrets
//! over a window (replaced them, or refused the request in block mode), the secrets by
//! kind, and the latest such requests. The `secrets` column (`kind:count` joined by
//! commas, NULL when none) is read the same way on SQLite and PostgreSQL: the window's
//! non-NULL rows are selected and their lists summed here.

use std::collections::BTreeMap;

use futures_util::TryStreamExt;
use serde::Serialize;
use sqlx::{AnyPool, Row};

/// Requests listed in [`GuardReport::recent`] by default.
pub const RECENT: i64 = 20;

/// Secrets by kind name (`github_token`), in name order.
pub type ByKind = BTreeMap<String, i64>;

/// What the guard found over a window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GuardReport {
    /// Start of the window, Unix milliseconds.
    pub since_ms: i64,
    /// Requests with at least one secret (a request retried counts once).
    pub requests: i64,
    /// Secrets found, by kind.
    pub by_kind: ByKind,
    /// The latest such requests, newest first.
    pub recent: Vec<Flagged>,
}

impl GuardReport {
    /// Every secret found, whatever its kind.
    pub fn secrets(&self) -> i64 {
        self.by_kind.values().sum()
    }
}

/// A request in which the guard found secrets. Kinds and counts, never a value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Flagged {
    pub request_id: String,
    pub ts_ms: i64,
    pub model_requested: Option<String>,
    pub kinds: ByKind,
}

/// The column's `kind:count` list as counts by kind. A kind listed twice is summed; an
/// entry that is not a lower-case name and a positive count is skipped, so a row written
/// by another version never breaks the page.
pub fn parse_counts(column: &str) -> ByKind {
    let mut out = ByKind::new();
    add_counts(&mut out, column);
    out
}

fn add_counts(into: &mut ByKind, column: &str) {
    for entry in column.split(',') {
        let Some((name, count)) = entry.trim().split_once(':') else {
            continue;
        };
        let name = name.trim();
        let well_formed = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        match count.trim().parse::<i64>() {
            Ok(n) if n > 0 && well_formed => *into.entry(name.to_owned()).or_default() += n,
            _ => {}
        }
    }
}

/// Rows with secrets since `since_ms`: a request's failed attempts have rows of their own
/// (`retried`), and it counts once, by its last.
const FLAGGED: &str =
    "FROM requests WHERE ts_ms >= $1 AND secrets IS NOT NULL AND outcome <> 'retried'";

/// The guard's figures for rows since `since_ms`, listing at most `limit` requests.
pub async fn report(pool: &AnyPool, since_ms: i64, limit: i64) -> Result<GuardReport, sqlx::Error> {
    let mut report = GuardReport {
        since_ms,
        ..GuardReport::default()
    };
    // Streamed: a busy day's rows are summed as they come, never held together.
    let sql = format!("SELECT secrets {FLAGGED}");
    let mut rows = sqlx::query(&sql).bind(since_ms).fetch(pool);
    while let Some(row) = rows.try_next().await? {
        let column: String = row.try_get("secrets")?;
        let before = report.secrets();
        add_counts(&mut report.by_kind, &column);
        if report.secrets() > before {
            report.requests += 1;
        }
    }
    drop(rows);

    let sql = format!(
        "SELECT request_id, ts_ms, model_requested, secrets {FLAGGED} \
         ORDER BY ts_ms DESC, request_id DESC LIMIT $2"
    );
    let rows = sqlx::query(&sql)
        .bind(since_ms)
        .bind(limit.max(0))
        .fetch_all(pool)
        .await?;
    report.recent = rows
        .iter()
        .map(|r| {
            Ok(Flagged {
                request_id: r.try_get("request_id")?,
                ts_ms: r.try_get("ts_ms")?,
                model_requested: r.try_get("model_requested")?,
                kinds: parse_counts(&r.try_get::<String, _>("secrets")?),
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_summed_by_kind_and_bad_entries_skipped() {
        let counts = parse_counts("github_token:1, env_secret:2,github_token:3");
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            [("env_secret".to_owned(), 2), ("github_token".to_owned(), 4)]
        );
        for bad in [
            "",
            "github_token",
            "github_token:",
            ":3",
            "x:-1",
            "x:0",
            "Bad Name:1",
            "x:y",
        ] {
            assert!(parse_counts(bad).is_empty(), "{bad:?}");
        }
        assert_eq!(parse_counts("jwt:1,,oops").len(), 1);
    }
}

//! `[ledger]`: where request rows go, and for how long.

use std::time::Duration;

use serde::Deserialize;

use super::ConfigProblem;

/// `[ledger]`: where request rows go.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerConfig {
    /// `false` keeps no ledger (the log line per request stays).
    pub enabled: Option<bool>,
    /// `sqlite:///path/ledger.sqlite` or `postgres://user@host/db`; default: SQLite in the
    /// platform data dir.
    pub url: Option<String>,
    /// Rows older than this many days are deleted (at start and daily); none by default.
    pub retention_days: Option<u32>,
}

/// `retention_days` as a duration; `None` keeps every row.
pub(super) fn validate_retention(
    retention_days: Option<u32>,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Duration> {
    match retention_days {
        Some(0) => {
            problems.push(ConfigProblem {
                path: "ledger.retention_days".into(),
                message: "must be at least 1 (leave it out to keep every row)".into(),
            });
            None
        }
        days => days.map(|d| Duration::from_secs(u64::from(d) * 86_400)),
    }
}

pub(super) fn validate_ledger(
    ledger: LedgerConfig,
    problems: &mut Vec<ConfigProblem>,
) -> Option<String> {
    if ledger.enabled == Some(false) {
        return None;
    }
    match ledger.url {
        None => crate::ledger::default_path().map(|p| crate::ledger::sqlite_url(&p)),
        Some(url)
            if url.starts_with("sqlite:")
                || url.starts_with("postgres://")
                || url.starts_with("postgresql://") =>
        {
            Some(url)
        }
        Some(_) => {
            problems.push(ConfigProblem {
                path: "ledger.url".into(),
                message: "must be a sqlite:// or postgres:// URL".into(),
            });
            None
        }
    }
}

//! Aggregations over the ledger for `trimgate stats` and the window's charts: totals by a
//! dimension, and time series by hour or day. Plain SQL that SQLite and PostgreSQL read
//! the same way.

use serde::Serialize;
use sqlx::{AnyPool, Row};

/// What to group rows by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Model,
    Provider,
    /// Each optimizer pass: the requests it changed and the exact tokens it removed.
    Pass,
    /// The set of passes applied (`tool_output=auto prune=auto`; empty when none).
    Passes,
    /// The gateway key or virtual key each request came with (`-` for none).
    Key,
    /// Time buckets of this many milliseconds (an hour, a day).
    Bucket(i64),
}

impl By {
    pub fn parse(text: &str) -> Result<By, String> {
        match text {
            "model" => Ok(By::Model),
            "provider" => Ok(By::Provider),
            "pass" => Ok(By::Pass),
            "passes" => Ok(By::Passes),
            "key" => Ok(By::Key),
            "hour" => Ok(By::Bucket(3_600_000)),
            "day" => Ok(By::Bucket(86_400_000)),
            other => Err(format!(
                "cannot group by {other:?}: use model, provider, pass, passes, key, hour or day"
            )),
        }
    }

    fn key_sql(self) -> String {
        match self {
            By::Model => "COALESCE(r.model_served, r.model_requested, '-')".into(),
            By::Provider => "COALESCE(r.provider, '-')".into(),
            By::Pass => "p.pass".into(),
            By::Passes => "r.applied".into(),
            By::Key => "COALESCE(r.gateway_key, '-')".into(),
            By::Bucket(ms) => format!("CAST((r.ts_ms / {ms}) * {ms} AS TEXT)"),
        }
    }
}

/// One group's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    /// The model, provider, passes, or the bucket's start in Unix milliseconds.
    pub key: String,
    pub requests: i64,
    pub errors: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub saved_tokens: i64,
    pub cost_usd: f64,
    pub saved_usd: f64,
    pub overhead_ms_avg: f64,
    /// Requests the response cache could answer, and those it did (exact or similar).
    pub cache_lookups: i64,
    pub cache_hits: i64,
}

impl Totals {
    /// Share of cacheable requests the response cache answered.
    pub fn response_cache_hit_rate(&self) -> f64 {
        if self.cache_lookups == 0 {
            0.0
        } else {
            self.cache_hits as f64 / self.cache_lookups as f64
        }
    }

    /// Share of input tokens served from the provider's cache.
    pub fn cache_hit_rate(&self) -> f64 {
        if self.input_tokens == 0 {
            0.0
        } else {
            self.cache_read_tokens as f64 / self.input_tokens as f64
        }
    }
}

/// Totals of rows since `since_ms` (Unix milliseconds), grouped `by`, largest cost first
/// (time buckets in time order). Grouped by pass, a request counts once under each pass
/// that changed it, with that pass's own tokens and dollars saved.
pub async fn totals(pool: &AnyPool, since_ms: i64, by: By) -> Result<Vec<Totals>, sqlx::Error> {
    let key = by.key_sql();
    let order = match by {
        By::Bucket(_) => "k",
        _ => "cost DESC, requests DESC, k",
    };
    let (from, saved, saved_usd) = match by {
        By::Pass => (
            "request_passes p JOIN requests r ON r.request_id = p.request_id AND r.ts_ms = p.ts_ms \
             WHERE p.ts_ms >= $1 AND r.outcome <> 'retried'",
            "SUM(p.tokens_before - p.tokens_after)",
            "SUM(p.saved_usd)",
        ),
        // A request's failed attempts have rows of their own ('retried'): it counts once.
        _ => (
            "requests r WHERE r.ts_ms >= $1 AND r.outcome <> 'retried'",
            "SUM(r.saved_tokens)",
            "SUM(r.saved_usd)",
        ),
    };
    let sql = format!(
        // PostgreSQL sums BIGINT into NUMERIC: cast back, so both backends return integers.
        "SELECT {key} AS k, COUNT(*) AS requests, \
         CAST(SUM(CASE WHEN r.status >= 400 OR r.outcome <> 'completed' THEN 1 ELSE 0 END) AS BIGINT) AS errors, \
         CAST(COALESCE(SUM(r.input_tokens), 0) AS BIGINT) AS input, \
         CAST(COALESCE(SUM(r.output_tokens), 0) AS BIGINT) AS output, \
         CAST(COALESCE(SUM(r.cache_read_tokens), 0) AS BIGINT) AS cache_read, \
         CAST(COALESCE({saved}, 0) AS BIGINT) AS saved, \
         COALESCE(SUM(r.cost_usd), 0.0) AS cost, COALESCE({saved_usd}, 0.0) AS saved_usd, \
         COALESCE(AVG(r.overhead_ms), 0.0) AS overhead, \
         CAST(SUM(CASE WHEN r.cache IS NULL THEN 0 ELSE 1 END) AS BIGINT) AS cache_lookups, \
         CAST(SUM(CASE WHEN r.cache IN ('hit', 'similar') THEN 1 ELSE 0 END) AS BIGINT) AS cache_hits \
         FROM {from} GROUP BY k ORDER BY {order}"
    );
    let rows = sqlx::query(&sql).bind(since_ms).fetch_all(pool).await?;
    rows.iter()
        .map(|r| {
            Ok(Totals {
                key: r.try_get("k")?,
                requests: r.try_get("requests")?,
                errors: r.try_get("errors")?,
                input_tokens: r.try_get("input")?,
                output_tokens: r.try_get("output")?,
                cache_read_tokens: r.try_get("cache_read")?,
                saved_tokens: r.try_get("saved")?,
                cost_usd: r.try_get("cost")?,
                saved_usd: r.try_get("saved_usd")?,
                overhead_ms_avg: r.try_get("overhead")?,
                cache_lookups: r.try_get("cache_lookups")?,
                cache_hits: r.try_get("cache_hits")?,
            })
        })
        .collect()
}

/// The total of `rows` (for a table's last line and the window's headline figures).
pub fn sum(rows: &[Totals]) -> Totals {
    let mut all = Totals {
        key: "total".into(),
        ..Totals::default()
    };
    for t in rows {
        all.requests += t.requests;
        all.errors += t.errors;
        all.input_tokens += t.input_tokens;
        all.output_tokens += t.output_tokens;
        all.cache_read_tokens += t.cache_read_tokens;
        all.saved_tokens += t.saved_tokens;
        all.cost_usd += t.cost_usd;
        all.saved_usd += t.saved_usd;
        all.cache_lookups += t.cache_lookups;
        all.cache_hits += t.cache_hits;
    }
    let weighted: f64 = rows
        .iter()
        .map(|t| t.overhead_ms_avg * t.requests as f64)
        .sum();
    if all.requests > 0 {
        all.overhead_ms_avg = weighted / all.requests as f64;
    }
    all
}

/// Parses `--since`: `30m`, `24h`, `7d`, or a Unix time in milliseconds; relative to `now_ms`.
pub fn parse_since(text: &str, now_ms: i64) -> Result<i64, String> {
    let text = text.trim();
    let (digits, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: i64 = digits
        .parse()
        .map_err(|_| format!("--since {text:?}: expected 30m, 24h, 7d or a Unix time in ms"))?;
    let ms = match unit {
        "" => return Ok(n),
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("--since {text:?}: the unit must be s, m, h or d")),
    };
    Ok(now_ms - n.saturating_mul(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_and_by_parse() {
        assert_eq!(
            parse_since("2h", 10_000_000).unwrap(),
            10_000_000 - 7_200_000
        );
        assert_eq!(parse_since("1700000000000", 0).unwrap(), 1_700_000_000_000);
        assert!(parse_since("3w", 0).is_err());
        assert!(parse_since("soon", 0).is_err());
        assert_eq!(By::parse("day").unwrap(), By::Bucket(86_400_000));
        assert!(By::parse("colour").is_err());
    }
}

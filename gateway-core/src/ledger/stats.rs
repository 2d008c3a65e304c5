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
    /// The passes applied (`tool_output=auto prune=auto`; empty when none).
    Passes,
    /// Time buckets of this many milliseconds (an hour, a day).
    Bucket(i64),
}

impl By {
    pub fn parse(text: &str) -> Result<By, String> {
        match text {
            "model" => Ok(By::Model),
            "provider" => Ok(By::Provider),
            "pass" | "passes" => Ok(By::Passes),
            "hour" => Ok(By::Bucket(3_600_000)),
            "day" => Ok(By::Bucket(86_400_000)),
            other => Err(format!(
                "cannot group by {other:?}: use model, provider, pass, hour or day"
            )),
        }
    }

    fn key_sql(self) -> String {
        match self {
            By::Model => "COALESCE(model_served, model_requested, '-')".into(),
            By::Provider => "COALESCE(provider, '-')".into(),
            By::Passes => "applied".into(),
            By::Bucket(ms) => format!("CAST((ts_ms / {ms}) * {ms} AS TEXT)"),
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
}

impl Totals {
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
/// (time buckets in time order).
pub async fn totals(pool: &AnyPool, since_ms: i64, by: By) -> Result<Vec<Totals>, sqlx::Error> {
    let key = by.key_sql();
    let order = match by {
        By::Bucket(_) => "k",
        _ => "cost DESC, requests DESC, k",
    };
    let sql = format!(
        // PostgreSQL sums BIGINT into NUMERIC: cast back, so both backends return integers.
        "SELECT {key} AS k, COUNT(*) AS requests, \
         CAST(SUM(CASE WHEN status >= 400 OR outcome <> 'completed' THEN 1 ELSE 0 END) AS BIGINT) AS errors, \
         CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT) AS input, \
         CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT) AS output, \
         CAST(COALESCE(SUM(cache_read_tokens), 0) AS BIGINT) AS cache_read, \
         CAST(COALESCE(SUM(saved_tokens), 0) AS BIGINT) AS saved, \
         COALESCE(SUM(cost_usd), 0.0) AS cost, COALESCE(SUM(saved_usd), 0.0) AS saved_usd, \
         COALESCE(AVG(overhead_ms), 0.0) AS overhead \
         FROM requests WHERE ts_ms >= $1 GROUP BY k ORDER BY {order}"
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
            })
        })
        .collect()
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

//! Aggregations over the ledger for `trimgate stats` and the window's charts: totals by a
//! dimension, and time series by hour or day. Plain SQL that SQLite and PostgreSQL read
//! the same way.

use serde::Serialize;
use sqlx::{AnyPool, Row};

/// A row that failed: the provider's or the gateway's error, or a stream that broke off. A
/// request the client left is not one. (Column names alone: the totals, the Requests page's
/// filter and the pass join read it alike.)
pub(crate) const FAILED: &str =
    "(status >= 400 OR outcome IN ('gateway_error', 'upstream_failed'))";

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
                "cannot group by {other:?}: use model, provider, pass, passes, key, session, hour or day"
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
    /// Requests that failed: the provider's or the gateway's error, or a stream that broke
    /// off. A request the client left is not one.
    pub errors: i64,
    /// Requests the client left before their answer was whole (charged for what they used).
    pub cancelled: i64,
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
/// (time buckets in time order). Only model calls count: `count_tokens` calls (kind
/// `count_tokens`) use no tokens and stay out. Grouped by pass, a request counts once under each pass
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
             WHERE p.ts_ms >= $1 AND r.outcome <> 'retried' AND r.kind = 'generation'",
            "SUM(p.tokens_before - p.tokens_after)",
            "SUM(p.saved_usd)",
        ),
        // A request's failed attempts have rows of their own ('retried'): it counts once.
        _ => (
            "requests r WHERE r.ts_ms >= $1 AND r.outcome <> 'retried' AND r.kind = 'generation'",
            "SUM(r.saved_tokens)",
            "SUM(r.saved_usd)",
        ),
    };
    let sql = format!(
        // PostgreSQL sums BIGINT into NUMERIC: cast back, so both backends return integers.
        "SELECT {key} AS k, COUNT(*) AS requests, \
         CAST(SUM(CASE WHEN {FAILED} THEN 1 ELSE 0 END) AS BIGINT) AS errors, \
         CAST(SUM(CASE WHEN r.outcome = 'client_cancelled' AND r.status < 400 THEN 1 ELSE 0 END) AS BIGINT) AS cancelled, \
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
                cancelled: r.try_get("cancelled")?,
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
        all.cancelled += t.cancelled;
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

/// A session's totals, for `trimgate stats --by session` and the window's Overview.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SessionTotals {
    pub session: String,
    pub first_ms: i64,
    pub last_ms: i64,
    /// The model it used (the greatest name, when it used several).
    pub model: String,
    pub requests: i64,
    pub input_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// Tokens the passes removed.
    pub saved_tokens: i64,
    pub cost_usd: f64,
    /// Dollars the passes (and response-cache hits) saved, as each request counted them.
    pub saved_usd: f64,
    pub breaks: Breaks,
    /// Its requests were held out of the passes (the control group).
    pub held_out: bool,
}

/// Cache breaks by cause (see [`crate::sessions::Cause`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Breaks {
    pub gateway: i64,
    pub client: i64,
    pub provider: i64,
}

impl Breaks {
    pub fn total(&self) -> i64 {
        self.gateway + self.client + self.provider
    }
}

/// One side of the holdout comparison: requests that completed with the provider's usage
/// and a price.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Side {
    pub sessions: i64,
    pub requests: i64,
    /// Input-equivalent tokens: what the clients sent, as the provider counted the input
    /// plus what the passes removed.
    pub tokens: i64,
    pub cost_usd: f64,
}

impl Side {
    /// Dollars per million input-equivalent tokens, when there were any.
    pub fn usd_per_mtok(&self) -> Option<f64> {
        (self.tokens > 0).then(|| self.cost_usd * 1e6 / self.tokens as f64)
    }

    fn add(&mut self, other: &Side) {
        self.sessions += other.sessions;
        self.requests += other.requests;
        self.tokens += other.tokens;
        self.cost_usd += other.cost_usd;
    }
}

/// One model's traffic on one side of the comparison, as the ledger sums it.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub model: String,
    pub held_out: bool,
    pub side: Side,
}

/// Held-out sessions a model needs before its rate is trusted.
pub const MIN_HELD_OUT_SESSIONS: i64 = 3;
/// Held-out requests a model needs before its rate is trusted.
pub const MIN_HELD_OUT_REQUESTS: i64 = 10;

/// Optimized traffic against the held-out control group of the same model.
///
/// The formula, the one place it is written: for each model whose held-out side has at
/// least [`MIN_HELD_OUT_SESSIONS`] sessions and [`MIN_HELD_OUT_REQUESTS`] requests,
///
/// ```text
/// rate_held(m)  = cost_held(m) / tokens_held(m)        ($ per input-equivalent token)
/// expected(m)   = tokens_optimized(m) × rate_held(m)   (the optimized traffic at the control's rate)
/// net saved     = Σ_m expected(m) − Σ_m cost_optimized(m)
/// ```
///
/// where a request's input-equivalent tokens are its input tokens as the provider counted
/// them (cache reads and writes included) plus the tokens the passes removed, so both
/// sides are measured by what the clients sent. Costs are the ledger's (cache reads and
/// writes at their own prices, output included), so a pass that broke the prompt cache or
/// lengthened answers shows here as a smaller net.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Holdout {
    /// All of the window's traffic, each side.
    pub optimized: Side,
    pub held_out: Side,
    /// The models compared (with enough held-out traffic), and their sides.
    pub models: Vec<String>,
    pub compared_optimized: Side,
    pub compared_held_out: Side,
    /// What the compared optimized traffic would have cost at the held-out rate.
    pub expected_usd: Option<f64>,
    pub net_saved_usd: Option<f64>,
    /// Net saved as a share of `expected_usd`.
    pub net_saved_share: Option<f64>,
    /// Why there is no net figure, when there is none.
    pub note: Option<String>,
}

/// The comparison of [`Holdout`] from the ledger's groups.
pub fn compare(groups: &[Group]) -> Holdout {
    let mut out = Holdout::default();
    for g in groups {
        if g.held_out {
            out.held_out.add(&g.side);
        } else {
            out.optimized.add(&g.side);
        }
    }
    let mut expected = 0.0;
    for held in groups.iter().filter(|g| g.held_out) {
        let enough = held.side.sessions >= MIN_HELD_OUT_SESSIONS
            && held.side.requests >= MIN_HELD_OUT_REQUESTS;
        let (true, Some(rate)) = (enough, held.side.usd_per_mtok()) else {
            continue;
        };
        let Some(optimized) = groups.iter().find(|g| !g.held_out && g.model == held.model) else {
            continue;
        };
        expected += optimized.side.tokens as f64 * rate / 1e6;
        out.models.push(held.model.clone());
        out.compared_optimized.add(&optimized.side);
        out.compared_held_out.add(&held.side);
    }
    if out.models.is_empty() {
        out.note = Some(if out.held_out.requests == 0 {
            "not enough held-out traffic: none in this window (set [optimize] holdout, e.g. 0.1)"
                .to_owned()
        } else {
            format!(
                "not enough held-out traffic: {} sessions, {} requests (a model needs {} held-out sessions and {} requests beside optimized ones)",
                out.held_out.sessions,
                out.held_out.requests,
                MIN_HELD_OUT_SESSIONS,
                MIN_HELD_OUT_REQUESTS
            )
        });
        return out;
    }
    let net = expected - out.compared_optimized.cost_usd;
    out.expected_usd = Some(expected);
    out.net_saved_usd = Some(net);
    out.net_saved_share = (expected > 0.0).then(|| net / expected);
    out
}

/// Sessions and their net savings: the latest sessions, the cache breaks, and the
/// holdout comparison over the whole window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SessionsReport {
    pub since_ms: i64,
    /// Most recent first, at most the limit asked for.
    pub sessions: Vec<SessionTotals>,
    /// Sessions in the window, all of them.
    pub session_count: i64,
    pub breaks: Breaks,
    pub holdout: Holdout,
}

/// The sessions report for rows since `since_ms`, listing at most `limit` sessions.
pub async fn sessions(
    pool: &AnyPool,
    since_ms: i64,
    limit: i64,
) -> Result<SessionsReport, sqlx::Error> {
    // PostgreSQL sums BIGINT into NUMERIC: cast back, so both backends return integers.
    let count_of = |cause: &str| {
        format!("CAST(SUM(CASE WHEN r.cache_break = '{cause}' THEN 1 ELSE 0 END) AS BIGINT)")
    };
    let sql = format!(
        "SELECT r.session AS k, MIN(r.ts_ms) AS first_ms, MAX(r.ts_ms) AS last_ms, \
         MAX(COALESCE(r.model_served, r.model_requested, '-')) AS model, COUNT(*) AS requests, \
         CAST(COALESCE(SUM(r.input_tokens), 0) AS BIGINT) AS input, \
         CAST(COALESCE(SUM(r.cache_read_tokens), 0) AS BIGINT) AS cache_read, \
         CAST(COALESCE(SUM(r.cache_write_tokens), 0) AS BIGINT) AS cache_write, \
         CAST(COALESCE(SUM(r.saved_tokens), 0) AS BIGINT) AS saved, \
         COALESCE(SUM(r.cost_usd), 0.0) AS cost, COALESCE(SUM(r.saved_usd), 0.0) AS saved_usd, \
         {} AS b_gateway, {} AS b_client, {} AS b_provider, \
         CAST(SUM(CASE WHEN r.applied = 'holdout' THEN 1 ELSE 0 END) AS BIGINT) AS held \
         FROM requests r WHERE r.ts_ms >= $1 AND r.outcome <> 'retried' AND r.kind = 'generation' AND r.session IS NOT NULL \
         GROUP BY r.session ORDER BY last_ms DESC, k LIMIT $2",
        count_of("gateway"),
        count_of("client"),
        count_of("provider"),
    );
    let rows = sqlx::query(&sql)
        .bind(since_ms)
        .bind(limit.max(0))
        .fetch_all(pool)
        .await?;
    let sessions = rows
        .iter()
        .map(|r| {
            Ok(SessionTotals {
                session: r.try_get("k")?,
                first_ms: r.try_get("first_ms")?,
                last_ms: r.try_get("last_ms")?,
                model: r.try_get("model")?,
                requests: r.try_get("requests")?,
                input_tokens: r.try_get("input")?,
                cache_read_tokens: r.try_get("cache_read")?,
                cache_write_tokens: r.try_get("cache_write")?,
                saved_tokens: r.try_get("saved")?,
                cost_usd: r.try_get("cost")?,
                saved_usd: r.try_get("saved_usd")?,
                breaks: Breaks {
                    gateway: r.try_get("b_gateway")?,
                    client: r.try_get("b_client")?,
                    provider: r.try_get("b_provider")?,
                },
                held_out: r.try_get::<i64, _>("held")? > 0,
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;

    let sql = format!(
        "SELECT COUNT(DISTINCT r.session) AS sessions, {} AS b_gateway, {} AS b_client, \
         {} AS b_provider FROM requests r WHERE r.ts_ms >= $1 AND r.outcome <> 'retried' AND r.kind = 'generation'",
        count_of("gateway"),
        count_of("client"),
        count_of("provider"),
    );
    let row = sqlx::query(&sql).bind(since_ms).fetch_one(pool).await?;
    let breaks = Breaks {
        gateway: row.try_get::<Option<i64>, _>("b_gateway")?.unwrap_or(0),
        client: row.try_get::<Option<i64>, _>("b_client")?.unwrap_or(0),
        provider: row.try_get::<Option<i64>, _>("b_provider")?.unwrap_or(0),
    };
    let session_count: i64 = row.try_get("sessions")?;

    let sql = "SELECT COALESCE(r.model_served, r.model_requested, '-') AS m, \
         CAST(CASE WHEN r.applied = 'holdout' THEN 1 ELSE 0 END AS BIGINT) AS held, \
         COUNT(DISTINCT r.session) AS sessions, COUNT(*) AS requests, \
         CAST(SUM(r.input_tokens + r.saved_tokens) AS BIGINT) AS tokens, \
         COALESCE(SUM(r.cost_usd), 0.0) AS cost \
         FROM requests r WHERE r.ts_ms >= $1 AND r.outcome = 'completed' AND r.status < 400 AND r.kind = 'generation' \
         AND r.input_tokens IS NOT NULL AND r.cost_usd IS NOT NULL \
         GROUP BY m, held ORDER BY m, held";
    let rows = sqlx::query(sql).bind(since_ms).fetch_all(pool).await?;
    let groups = rows
        .iter()
        .map(|r| {
            Ok(Group {
                model: r.try_get("m")?,
                held_out: r.try_get::<i64, _>("held")? == 1,
                side: Side {
                    sessions: r.try_get("sessions")?,
                    requests: r.try_get("requests")?,
                    tokens: r.try_get("tokens")?,
                    cost_usd: r.try_get("cost")?,
                },
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok(SessionsReport {
        since_ms,
        sessions,
        session_count,
        breaks,
        holdout: compare(&groups),
    })
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

    fn group(
        model: &str,
        held_out: bool,
        sessions: i64,
        requests: i64,
        tokens: i64,
        cost: f64,
    ) -> Group {
        Group {
            model: model.into(),
            held_out,
            side: Side {
                sessions,
                requests,
                tokens,
                cost_usd: cost,
            },
        }
    }

    #[test]
    fn net_savings_price_the_optimized_traffic_at_the_held_out_rate() {
        // Held out: $3 per million input-equivalent tokens. Optimized: 10M tokens sent by
        // the clients, $24 paid; at the control's rate they would have cost $30.
        let groups = [
            group("a", false, 40, 400, 10_000_000, 24.0),
            group("a", true, 5, 40, 1_000_000, 3.0),
            // Too few held-out sessions of b: left out of the comparison.
            group("b", false, 10, 100, 1_000_000, 9.0),
            group("b", true, 2, 20, 100_000, 1.0),
        ];
        let h = compare(&groups);
        assert_eq!(h.models, ["a"]);
        assert!((h.expected_usd.unwrap() - 30.0).abs() < 1e-9);
        assert!((h.net_saved_usd.unwrap() - 6.0).abs() < 1e-9);
        assert!((h.net_saved_share.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(h.optimized.requests, 500);
        assert_eq!(h.held_out.sessions, 7);
        assert_eq!(h.compared_optimized.cost_usd, 24.0);
        assert!(h.note.is_none());
    }

    #[test]
    fn without_enough_held_out_traffic_there_is_no_net_figure() {
        let none = compare(&[group("a", false, 4, 40, 1000, 1.0)]);
        assert_eq!(none.net_saved_usd, None);
        assert!(none.note.unwrap().contains("not enough held-out traffic"));
        let tiny = compare(&[
            group("a", false, 4, 40, 1000, 1.0),
            group("a", true, 3, 9, 100, 0.1),
        ]);
        assert_eq!(tiny.net_saved_usd, None);
        assert!(tiny.note.unwrap().contains("3 sessions, 9 requests"));
    }
}

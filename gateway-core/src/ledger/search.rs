//! Finding requests in the ledger for the window's Requests page and request detail: by
//! time, model, provider, status and session; one request's attempts and passes by id.

use serde::Serialize;
use sqlx::{AnyPool, Row};

/// Which requests to list; every field narrows.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub since_ms: i64,
    /// Only requests that arrived before this (the page before the last one seen).
    pub before_ms: Option<i64>,
    /// Part of the model asked for or served.
    pub model: Option<String>,
    pub provider: Option<String>,
    pub status: Option<Status>,
    pub session: Option<String>,
    pub limit: i64,
}

/// A status filter as the window offers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Completed with a status below 400.
    Ok,
    /// A status of 400 or more, or failed on the way (not a request the client left).
    Failed,
    /// Left by the client before its answer was whole.
    Cancelled,
    /// Exactly this status.
    Code(u16),
}

impl Status {
    pub fn parse(text: &str) -> Result<Status, String> {
        match text.trim() {
            "ok" => Ok(Status::Ok),
            "error" | "failed" => Ok(Status::Failed),
            "cancelled" => Ok(Status::Cancelled),
            code => code
                .parse::<u16>()
                .ok()
                .filter(|c| (100..600).contains(c))
                .map(Status::Code)
                .ok_or_else(|| {
                    format!(
                        "status {text:?} is not ok, error, cancelled or an HTTP status (100 to 599)"
                    )
                }),
        }
    }
}

/// One attempt of a request, as the ledger has it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Attempt {
    pub id: String,
    pub time_ms: i64,
    pub dialect: String,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub served: Option<String>,
    pub gateway_key: Option<String>,
    pub streamed: bool,
    pub status: i64,
    pub outcome: String,
    pub error: Option<String>,
    pub latency_ms: f64,
    pub overhead_ms: f64,
    pub first_byte_ms: Option<f64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cache_read_tokens: Option<i64>,
    pub applied: String,
    pub saved_tokens: i64,
    pub cost_usd: Option<f64>,
    pub saved_usd: Option<f64>,
    pub cache: Option<String>,
    pub dropped: Option<String>,
    pub session: Option<String>,
    pub attempt: Option<i64>,
    pub api_key: Option<String>,
    pub cache_break: Option<String>,
    /// `generation`, or `count_tokens` for a count of a request's tokens.
    pub kind: String,
    /// Which token counts are the gateway's own (`input`, `output`, `input,output`).
    pub tokens_estimated: Option<String>,
    /// The secrets the guard replaced, by kind (`github_token:1,env_secret:2`). Never a value.
    pub secrets: Option<String>,
}

/// One pass of a request, exact tokens before and after.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Pass {
    pub pass: String,
    pub before: i64,
    pub after: i64,
}

const SELECT: &str = "SELECT ts_ms, request_id, dialect, provider, model_requested, model_served, \
    gateway_key, streamed, status, outcome, error, latency_ms, overhead_ms, first_byte_ms, \
    input_tokens, output_tokens, cache_read_tokens, applied, saved_tokens, cost_usd, saved_usd, \
    cache, dropped, session, attempt, api_key, cache_break, kind, tokens_estimated, secrets FROM requests";

/// The requests `filter` lets through, newest first: a request retried is one row, its
/// last attempt's.
pub async fn search(pool: &AnyPool, filter: &Filter) -> Result<Vec<Attempt>, sqlx::Error> {
    let mut sql = format!("{SELECT} WHERE ts_ms >= $1 AND outcome <> 'retried'");
    let mut n = 1;
    let mut next = || {
        n += 1;
        n
    };
    if filter.before_ms.is_some() {
        sql += &format!(" AND ts_ms < ${}", next());
    }
    if filter.model.is_some() {
        let (a, b) = (next(), next());
        sql += &format!(
            " AND (LOWER(COALESCE(model_requested, '')) LIKE ${a} ESCAPE '\\' \
             OR LOWER(COALESCE(model_served, '')) LIKE ${b} ESCAPE '\\')"
        );
    }
    if filter.provider.is_some() {
        sql += &format!(" AND provider = ${}", next());
    }
    if filter.session.is_some() {
        sql += &format!(" AND session = ${}", next());
    }
    match filter.status {
        Some(Status::Ok) => sql += " AND status < 400 AND outcome = 'completed'",
        Some(Status::Failed) => sql += &format!(" AND {}", super::stats::FAILED),
        Some(Status::Cancelled) => sql += " AND outcome = 'client_cancelled'",
        Some(Status::Code(_)) => sql += &format!(" AND status = ${}", next()),
        None => {}
    }
    sql += &format!(" ORDER BY ts_ms DESC LIMIT ${}", next());
    let mut query = sqlx::query(&sql).bind(filter.since_ms);
    if let Some(before) = filter.before_ms {
        query = query.bind(before);
    }
    if let Some(model) = &filter.model {
        let pattern = format!("%{}%", like_escaped(&model.to_lowercase()));
        query = query.bind(pattern.clone()).bind(pattern);
    }
    if let Some(provider) = &filter.provider {
        query = query.bind(provider.clone());
    }
    if let Some(session) = &filter.session {
        query = query.bind(session.clone());
    }
    if let Some(Status::Code(code)) = filter.status {
        query = query.bind(i64::from(code));
    }
    let rows = query.bind(filter.limit).fetch_all(pool).await?;
    rows.iter().map(attempt).collect()
}

/// Every attempt of request `id`, first first, and its passes.
pub async fn by_id(pool: &AnyPool, id: &str) -> Result<(Vec<Attempt>, Vec<Pass>), sqlx::Error> {
    let sql = format!("{SELECT} WHERE request_id = $1 ORDER BY ts_ms, attempt");
    let rows = sqlx::query(&sql)
        .bind(id.to_owned())
        .fetch_all(pool)
        .await?;
    let attempts = rows.iter().map(attempt).collect::<Result<Vec<_>, _>>()?;
    let rows = sqlx::query(
        "SELECT pass, tokens_before, tokens_after FROM request_passes WHERE request_id = $1",
    )
    .bind(id.to_owned())
    .fetch_all(pool)
    .await?;
    let passes = rows
        .iter()
        .map(|r| {
            Ok(Pass {
                pass: r.try_get("pass")?,
                before: r.try_get("tokens_before")?,
                after: r.try_get("tokens_after")?,
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok((attempts, passes))
}

/// `%`, `_` and `\` typed by the user match themselves (`LIKE … ESCAPE '\'`, which
/// SQLite and PostgreSQL both read).
fn like_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn attempt(r: &sqlx::any::AnyRow) -> Result<Attempt, sqlx::Error> {
    Ok(Attempt {
        id: r.try_get("request_id")?,
        time_ms: r.try_get("ts_ms")?,
        dialect: r.try_get("dialect")?,
        provider: r.try_get("provider")?,
        model: r.try_get("model_requested")?,
        served: r.try_get("model_served")?,
        gateway_key: r.try_get("gateway_key")?,
        streamed: r.try_get::<i64, _>("streamed")? != 0,
        status: r.try_get("status")?,
        outcome: r.try_get("outcome")?,
        error: r.try_get("error")?,
        latency_ms: r.try_get("latency_ms")?,
        overhead_ms: r.try_get("overhead_ms")?,
        first_byte_ms: r.try_get("first_byte_ms")?,
        input_tokens: r.try_get("input_tokens")?,
        output_tokens: r.try_get("output_tokens")?,
        cache_read_tokens: r.try_get("cache_read_tokens")?,
        applied: r.try_get("applied")?,
        saved_tokens: r.try_get("saved_tokens")?,
        cost_usd: r.try_get("cost_usd")?,
        saved_usd: r.try_get("saved_usd")?,
        cache: r.try_get("cache")?,
        dropped: r.try_get("dropped")?,
        session: r.try_get("session")?,
        attempt: r.try_get("attempt")?,
        api_key: r.try_get("api_key")?,
        cache_break: r.try_get("cache_break")?,
        kind: r.try_get("kind")?,
        tokens_estimated: r.try_get("tokens_estimated")?,
        secrets: r.try_get("secrets")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_filters_parse() {
        assert_eq!(Status::parse("ok"), Ok(Status::Ok));
        assert_eq!(Status::parse("error"), Ok(Status::Failed));
        assert_eq!(Status::parse("429"), Ok(Status::Code(429)));
        assert!(Status::parse("42").is_err());
        assert!(Status::parse("teapot").unwrap_err().contains("teapot"));
    }

    #[test]
    fn wildcards_typed_match_one_character_only() {
        assert_eq!(like_escaped("gpt_5%"), "gpt\\_5\\%");
    }
}

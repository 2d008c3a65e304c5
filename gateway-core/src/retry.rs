//! When a failed attempt is tried again, and after how long: a pure decision over what the
//! provider answered (or how it failed) and the settings. The pipeline does the waiting and
//! the sending; [`crate::health`] keeps the state (cooldowns, the retry budget).
//!
//! Only failures before the first byte reached the client are retried, and only those the
//! client did not cause: a connection that could not be made, no response headers in time,
//! 429, 500, 502, 503, 504 and Anthropic's 529 "overloaded".

use std::time::{Duration, SystemTime};

use http::HeaderMap;

/// The retry settings, as validated from `[retry]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Attempts per request, all steps of a chain together (a route may set its own).
    pub max_attempts: u32,
    /// Tries of one step before the chain moves on to its next.
    pub attempts_per_step: u32,
    /// The first backoff; each retry doubles it, up to `backoff_max`.
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// The longest wait a `retry-after` may ask for; a longer one moves on (or fails).
    pub max_wait: Duration,
    /// No attempt starts later than this after the request arrived.
    pub deadline: Duration,
    /// Retries may add at most this share of a provider's requests over `budget_window`…
    pub budget_share: f64,
    /// …but this many per window are always allowed, so a lone agent is retried too.
    pub budget_floor: u32,
    pub budget_window: Duration,
    /// Requests in a row that failed at a provider (however many attempts each made)
    /// that take it out of rotation…
    pub cooldown_failures: u32,
    /// …for this long, after which one request probes it.
    pub cooldown: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_attempts: 3,
            attempts_per_step: 2,
            backoff_initial: Duration::from_millis(250),
            backoff_max: Duration::from_secs(8),
            max_wait: Duration::from_secs(30),
            deadline: Duration::from_secs(60),
            budget_share: 0.1,
            budget_floor: 10,
            budget_window: Duration::from_secs(60),
            cooldown_failures: 3,
            cooldown: Duration::from_secs(30),
        }
    }
}

/// How an attempt failed, as far as retrying goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No connection, or it broke before the response headers.
    Unreachable,
    /// No response headers within the first-byte timeout.
    Timeout,
    /// The provider answered with this status.
    Status(u16),
    /// A whole (not streamed) answer's body broke off or stalled: nothing of it has
    /// reached the client, so it may be asked for again.
    Body,
}

impl Failure {
    /// Whether another attempt may fix it: never for a 4xx the client caused.
    pub fn is_retryable(self) -> bool {
        match self {
            Failure::Unreachable | Failure::Timeout | Failure::Body => true,
            Failure::Status(status) => is_retryable_status(status),
        }
    }

    /// The low-cardinality name the record and the metrics use.
    pub fn label(self) -> &'static str {
        match self {
            Failure::Unreachable => "upstream_unreachable",
            Failure::Timeout => "upstream_timeout",
            Failure::Status(429) => "rate_limited",
            Failure::Status(529) => "overloaded",
            Failure::Status(_) => "upstream_status",
            Failure::Body => "upstream_body",
        }
    }
}

/// 429, 500, 502, 503, 504 and 529 (Anthropic's "overloaded").
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
}

/// How long the provider asked us to wait, from its response headers: `retry-after-ms`,
/// `retry-after` (seconds or an HTTP date), else the latest reset among the rate limits
/// it reports as used up (OpenAI's `x-ratelimit-reset-*` durations, Anthropic's
/// `anthropic-ratelimit-*-reset` times).
pub fn asked_wait(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1e3));
        }
    }
    if let Some(v) = text("retry-after") {
        if let Ok(secs) = v.parse::<f64>() {
            if secs.is_finite() && secs >= 0.0 {
                return Some(Duration::from_secs_f64(secs.min(86_400.0)));
            }
        } else if let Ok(at) = httpdate::parse_http_date(v) {
            return Some(at.duration_since(now).unwrap_or(Duration::ZERO));
        }
    }
    let mut latest: Option<Duration> = None;
    for limit in ["requests", "tokens"] {
        let spent = text(&format!("x-ratelimit-remaining-{limit}")) == Some("0");
        if let Some(d) = text(&format!("x-ratelimit-reset-{limit}")).and_then(go_duration) {
            if spent {
                latest = latest.max(Some(d));
            }
        }
    }
    for limit in ["requests", "tokens", "input-tokens", "output-tokens"] {
        let spent = text(&format!("anthropic-ratelimit-{limit}-remaining")) == Some("0");
        let reset = text(&format!("anthropic-ratelimit-{limit}-reset"))
            .and_then(|v| humantime::parse_rfc3339_weak(v).ok());
        if let (true, Some(at)) = (spent, reset) {
            latest = latest.max(Some(at.duration_since(now).unwrap_or(Duration::ZERO)));
        }
    }
    latest
}

/// A Go duration as OpenAI writes its resets: `1s`, `6m0s`, `20ms`, `1h2m3.5s`.
fn go_duration(text: &str) -> Option<Duration> {
    let mut total = 0.0_f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit..];
    }
    (total.is_finite() && total <= 86_400.0).then(|| Duration::from_secs_f64(total))
}

/// The pause before retry number `retry` (1 for the first): doubling from the initial
/// backoff, capped, with jitter over its upper half so that clients failed together do
/// not come back together.
pub fn backoff(settings: &Settings, retry: u32) -> Duration {
    let doubled = settings
        .backoff_initial
        .saturating_mul(1u32 << retry.saturating_sub(1).min(20));
    let cap = doubled.min(settings.backoff_max);
    let half = cap / 2;
    half + half.mul_f64(fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_failures_the_client_did_not_cause_are_retried() {
        for status in [429, 500, 502, 503, 504, 529] {
            assert!(Failure::Status(status).is_retryable(), "{status}");
        }
        for status in [400, 401, 403, 404, 408, 413, 422, 501] {
            assert!(!Failure::Status(status).is_retryable(), "{status}");
        }
        assert!(Failure::Unreachable.is_retryable());
        assert!(Failure::Timeout.is_retryable());
    }

    #[test]
    fn the_wait_a_provider_asks_for_is_read_from_each_form() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(
            asked_wait(&headers(&[("retry-after", "3")]), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            asked_wait(&headers(&[("retry-after-ms", "1500")]), now),
            Some(Duration::from_millis(1500))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(
            asked_wait(&headers(&[("retry-after", &date)]), now),
            Some(Duration::from_secs(7))
        );
        // OpenAI: the used-up limit's reset counts, the other one's does not.
        let openai = headers(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "1m2.5s"),
            ("x-ratelimit-remaining-tokens", "900"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(
            asked_wait(&openai, now),
            Some(Duration::from_millis(62_500))
        );
        let at = humantime::format_rfc3339(now + Duration::from_secs(12)).to_string();
        let anthropic = headers(&[
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", &at),
        ]);
        assert_eq!(asked_wait(&anthropic, now), Some(Duration::from_secs(12)));
        assert_eq!(asked_wait(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(asked_wait(&HeaderMap::new(), now), None);
    }

    #[test]
    fn go_durations_parse_and_nonsense_does_not() {
        assert_eq!(go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(go_duration("1h0m1s"), Some(Duration::from_secs(3601)));
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("5"), None);
        assert_eq!(go_duration("5parsecs"), None);
    }

    #[test]
    fn backoff_doubles_within_its_cap_and_jitters_in_the_upper_half() {
        let s = Settings {
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_millis(350),
            ..Settings::default()
        };
        for _ in 0..50 {
            let first = backoff(&s, 1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let second = backoff(&s, 2);
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200));
            let capped = backoff(&s, 30);
            assert!(capped >= Duration::from_millis(175) && capped <= Duration::from_millis(350));
        }
    }
}

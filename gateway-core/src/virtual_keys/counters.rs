//! What a virtual key used in the last minute, and the check of a request against its
//! limits: the [`Counters`] trait, and [`LocalCounters`], which count in this process.
//! [`super::shared::SharedCounters`] counts in a Redis every replica shares.

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::future::BoxFuture;

pub(super) const MINUTE_MS: i64 = 60_000;

/// One request to admit: the key's limits, and what it spent as this process knows it
/// (the ledger's figure, read every [`super::KeyBook::FRESH`], and this process's
/// requests since).
#[derive(Clone, Copy, Debug)]
pub struct Ask<'a> {
    pub name: &'a str,
    pub rpm: Option<u64>,
    pub tpm: Option<u64>,
    pub budget_day_usd: Option<f64>,
    pub budget_month_usd: Option<f64>,
    pub spent_day_usd: f64,
    pub spent_month_usd: f64,
    pub now_ms: i64,
}

/// Why a request was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Past {
    Rpm,
    Tpm,
    DayBudget,
    MonthBudget,
    /// The shared counters cannot be reached and the config says to refuse then.
    Unavailable,
}

/// Where keys' use is counted. One job: admit a request (counting it) or say which limit
/// it is past, and count a finished request's tokens and cost.
pub trait Counters: Send + Sync {
    fn admit<'a>(&'a self, ask: Ask<'a>) -> BoxFuture<'a, Result<(), Past>>;
    /// A finished request of key `name`: its tokens and cost (0 for a key without a budget).
    fn charge(&self, name: &str, tokens: u64, cost_usd: f64, now_ms: i64);
}

/// Counts in this process: each key's requests and tokens in this minute and the last.
#[derive(Default)]
pub struct LocalCounters {
    windows: Mutex<HashMap<String, Window>>,
}

impl LocalCounters {
    /// Checks `ask` with its rpm and tpm scaled by `share`, counting it when admitted.
    pub fn admit_share(&self, ask: &Ask<'_>, share: f64) -> Result<(), Past> {
        let mut all = self.lock();
        let window = all.entry(ask.name.to_owned()).or_default();
        window.roll(ask.now_ms);
        if let Some(rpm) = ask.rpm {
            if window.in_window(&window.requests, ask.now_ms) >= rpm as f64 * share {
                return Err(Past::Rpm);
            }
        }
        if let Some(tpm) = ask.tpm {
            if window.in_window(&window.tokens, ask.now_ms) >= tpm as f64 * share {
                return Err(Past::Tpm);
            }
        }
        if ask.budget_day_usd.is_some_and(|b| ask.spent_day_usd >= b) {
            return Err(Past::DayBudget);
        }
        if ask
            .budget_month_usd
            .is_some_and(|b| ask.spent_month_usd >= b)
        {
            return Err(Past::MonthBudget);
        }
        window.requests[1] += 1;
        Ok(())
    }

    /// Counts a request another store admitted, so that this process's own figures are
    /// at hand when that store goes away.
    pub fn note(&self, name: &str, now_ms: i64) {
        let mut all = self.lock();
        let window = all.entry(name.to_owned()).or_default();
        window.roll(now_ms);
        window.requests[1] += 1;
    }

    /// Counts a finished request's tokens; false for a name no request was admitted for
    /// here (a gateway key from the config, which has no limits).
    pub fn count_tokens(&self, name: &str, tokens: u64, now_ms: i64) -> bool {
        let mut all = self.lock();
        let Some(window) = all.get_mut(name) else {
            return false;
        };
        window.roll(now_ms);
        window.tokens[1] += tokens;
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Window>> {
        self.windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Counters for LocalCounters {
    fn admit<'a>(&'a self, ask: Ask<'a>) -> BoxFuture<'a, Result<(), Past>> {
        let verdict = self.admit_share(&ask, 1.0);
        Box::pin(std::future::ready(verdict))
    }

    fn charge(&self, name: &str, tokens: u64, _cost_usd: f64, now_ms: i64) {
        self.count_tokens(name, tokens, now_ms);
    }
}

/// Requests and tokens in this minute and the one before (a sliding window).
#[derive(Default)]
struct Window {
    minute: i64,
    requests: [u64; 2],
    tokens: [u64; 2],
}

impl Window {
    /// Moves the window on to the minute of `now_ms`.
    fn roll(&mut self, now_ms: i64) {
        let minute = now_ms.div_euclid(MINUTE_MS);
        match minute - self.minute {
            0 => {}
            1 => {
                self.requests = [self.requests[1], 0];
                self.tokens = [self.tokens[1], 0];
            }
            _ => {
                self.requests = [0, 0];
                self.tokens = [0, 0];
            }
        }
        self.minute = minute;
    }

    /// The count over the last 60 s: this minute's, and the part of the last minute's that
    /// the window still covers.
    fn in_window(&self, counts: &[u64; 2], now_ms: i64) -> f64 {
        counts[1] as f64 + counts[0] as f64 * last_minute_weight(now_ms)
    }
}

/// The share of the last minute that a 60 s window ending at `now_ms` still covers.
pub(super) fn last_minute_weight(now_ms: i64) -> f64 {
    1.0 - now_ms.rem_euclid(MINUTE_MS) as f64 / MINUTE_MS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(now_ms: i64, rpm: u64) -> Ask<'static> {
        Ask {
            name: "k",
            rpm: Some(rpm),
            tpm: None,
            budget_day_usd: Some(1.0),
            budget_month_usd: None,
            spent_day_usd: 0.0,
            spent_month_usd: 0.0,
            now_ms,
        }
    }

    #[test]
    fn the_window_slides_over_two_minutes() {
        let mut w = Window::default();
        w.roll(0);
        w.requests[1] = 60;
        // Half a minute into the next one, half of the last minute's 60 still count.
        w.roll(MINUTE_MS + MINUTE_MS / 2);
        assert_eq!(w.in_window(&w.requests, MINUTE_MS + MINUTE_MS / 2), 30.0);
        w.roll(5 * MINUTE_MS);
        assert_eq!(w.in_window(&w.requests, 5 * MINUTE_MS), 0.0);
    }

    #[test]
    fn a_share_of_the_limit_is_admitted_and_then_the_limit_named() {
        let local = LocalCounters::default();
        let admitted = (0..10)
            .filter(|_| local.admit_share(&ask(1_000, 10), 0.5).is_ok())
            .count();
        assert_eq!(admitted, 5);
        assert_eq!(local.admit_share(&ask(1_000, 10), 0.5), Err(Past::Rpm));
        let mut spent = ask(1_000, 100);
        spent.spent_day_usd = 1.0;
        assert_eq!(local.admit_share(&spent, 1.0), Err(Past::DayBudget));
    }
}

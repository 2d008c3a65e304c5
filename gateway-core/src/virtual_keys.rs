//! Virtual keys at request time: which key a client presents, whether it is in force, may
//! use the model, and is within its limits (requests and tokens per minute, spend per day
//! and per month). The keys live in the ledger's database ([`crate::ledger::keys`]); a
//! key found is remembered for [`KeyBook::FRESH`], so a key revoked or made by another
//! process (`trimgate keys`) takes effect within that. Limits are counted in this process;
//! spend is read back from the ledger's priced rows each [`KeyBook::FRESH`] and counted
//! here in between.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use globset::{Glob, GlobSet, GlobSetBuilder};
use http::HeaderMap;
use sqlx::AnyPool;

use crate::error::GatewayError;
use crate::ledger::keys::{self, StoredKey};
use crate::pricing::Pricing;
use crate::record::{Recorder, RequestRecord};

use crate::clock::{day_start, month_start, DAY_MS};

const MINUTE_MS: i64 = 60_000;

/// Whole seconds until the next minute starts, at least 1.
fn to_next_minute(now_ms: i64) -> u64 {
    ((MINUTE_MS - now_ms.rem_euclid(MINUTE_MS)) / 1000 + 1) as u64
}

/// The virtual keys this gateway knows, and their use.
pub struct KeyBook {
    pool: AnyPool,
    /// Whether any key is in force: then every client needs a key.
    any: AtomicBool,
    found: Mutex<HashMap<String, Found>>,
    /// Each key's counters, by name: they outlive a refresh of what was found.
    usage: Mutex<HashMap<String, Usage>>,
    /// Failed key attempts per client address in the current minute: (minute, count).
    failures: Mutex<HashMap<std::net::IpAddr, (i64, u32)>>,
}

#[derive(Clone)]
struct Found {
    key: Option<Arc<InForce>>,
    at: Instant,
}

/// A key found.
pub struct InForce {
    pub stored: StoredKey,
    models: GlobSet,
}

#[derive(Default)]
struct Usage {
    /// Requests and tokens in this minute and the one before (a sliding window).
    minute: i64,
    requests: [u64; 2],
    tokens: [u64; 2],
    /// Spend read from the ledger, when, and what this process added since.
    spent_day: f64,
    spent_month: f64,
    spent_read: Option<Instant>,
}

impl KeyBook {
    /// How long a key found (or not found) is taken as it was.
    pub const FRESH: Duration = Duration::from_secs(2);

    /// The book over `pool`, knowing whether any key is in force.
    pub async fn open(pool: AnyPool) -> Result<Arc<KeyBook>, keys::KeyError> {
        let any = keys::any_active(&pool, crate::clock::now_ms()).await?;
        let book = Arc::new(KeyBook {
            pool,
            any: AtomicBool::new(any),
            found: Mutex::new(HashMap::new()),
            usage: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
        });
        // Keys made or revoked by another process change whether keys are needed at all.
        let weak = Arc::downgrade(&book);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(KeyBook::FRESH);
            loop {
                tick.tick().await;
                let Some(book) = weak.upgrade() else { return };
                if let Ok(any) = keys::any_active(&book.pool, crate::clock::now_ms()).await {
                    book.any.store(any, Ordering::Relaxed);
                }
            }
        });
        Ok(book)
    }

    /// A key was made here: keys are needed from now on.
    pub fn made(&self) {
        self.any.store(true, Ordering::Relaxed);
    }

    /// A key was revoked here: what was remembered of it goes, so the next request with it
    /// reads it again and is refused.
    pub fn forget(&self, name: &str) {
        self.lock()
            .retain(|_, f| f.key.as_ref().is_none_or(|k| k.stored.name != name));
    }

    /// Whether any virtual key is in force, so that a client without a key is refused.
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// The virtual key a request presents (`Authorization: Bearer` or `x-api-key`), if it
    /// presents one: anything starting with [`keys::PREFIX`].
    pub fn presented(headers: &HeaderMap) -> Option<&str> {
        crate::headers::presented_key(headers).filter(|k| k.starts_with(keys::PREFIX))
    }

    /// Failed attempts an address may make in a minute before it is refused without a look.
    pub const FAILURES_PER_MINUTE: u32 = 30;

    /// The key presented from `peer`, in force and found, or why not (401; 429 for an
    /// address past [`KeyBook::FAILURES_PER_MINUTE`] failed attempts this minute).
    pub async fn find(
        &self,
        presented: &str,
        peer: Option<std::net::IpAddr>,
    ) -> Result<Arc<InForce>, GatewayError> {
        let minute = crate::clock::now_ms().div_euclid(MINUTE_MS);
        if let Some(ip) = peer {
            let failures = self.failures_lock();
            if let Some(&(m, n)) = failures.get(&ip) {
                if m == minute && n >= Self::FAILURES_PER_MINUTE {
                    return Err(GatewayError::KeyAttempts {
                        retry_in_secs: to_next_minute(crate::clock::now_ms()),
                    });
                }
            }
        }
        let found = self.look_up(presented).await;
        if let (Err(e), Some(ip)) = (&found, peer) {
            if !matches!(e, GatewayError::KeysUnavailable) {
                let mut failures = self.failures_lock();
                // An address flood is not remembered without end.
                if failures.len() > 10_000 {
                    failures.retain(|_, (m, _)| *m == minute);
                }
                let entry = failures.entry(ip).or_insert((minute, 0));
                if entry.0 != minute {
                    *entry = (minute, 0);
                }
                entry.1 += 1;
            }
        }
        found
    }

    fn failures_lock(&self) -> std::sync::MutexGuard<'_, HashMap<std::net::IpAddr, (i64, u32)>> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn look_up(&self, presented: &str) -> Result<Arc<InForce>, GatewayError> {
        let digest = keys::digest(presented);
        let now = Instant::now();
        let cached = self.lock().get(&digest).cloned();
        let found = match cached {
            Some(f) if now.duration_since(f.at) < Self::FRESH => f.key,
            _ => {
                let key = keys::find(&self.pool, &digest).await.map_err(|e| {
                    tracing::error!(error = %e, "virtual keys cannot be read");
                    GatewayError::KeysUnavailable
                })?;
                let key = key.map(|stored| {
                    Arc::new(InForce {
                        models: globs(&stored.limits.models),
                        stored,
                    })
                });
                let mut found = self.lock();
                // A flood of made-up keys is not remembered without end.
                if found.len() > 10_000 {
                    found.retain(|_, f| f.key.is_some());
                }
                found.insert(
                    digest,
                    Found {
                        key: key.clone(),
                        at: now,
                    },
                );
                key
            }
        };
        let key = found.ok_or(GatewayError::GatewayKeyInvalid)?;
        let now_ms = crate::clock::now_ms();
        if key.stored.revoked_ms.is_some() {
            return Err(GatewayError::KeyRevoked(key.stored.name.clone()));
        }
        if key.stored.limits.expires_ms.is_some_and(|at| at <= now_ms) {
            return Err(GatewayError::KeyExpired(key.stored.name.clone()));
        }
        Ok(key)
    }

    /// Takes one request of `key` for `model`, or says which limit it is past.
    pub async fn admit(&self, key: &InForce, model: &str) -> Result<(), GatewayError> {
        if !key.stored.limits.models.is_empty() && !key.models.is_match(model) {
            return Err(GatewayError::KeyModelNotAllowed {
                key: key.stored.name.clone(),
                model: model.to_owned(),
            });
        }
        self.read_spend(key).await;
        let now_ms = crate::clock::now_ms();
        let s = &key.stored;
        let mut all = self.usage_lock();
        let usage = all.entry(s.name.clone()).or_default();
        usage.roll(now_ms);
        let past = |limit: &'static str, retry_in_secs: u64| GatewayError::KeyLimit {
            key: s.name.clone(),
            limit,
            retry_in_secs: retry_in_secs.max(1),
        };
        if let Some(rpm) = s.limits.rpm {
            if usage.in_window(&usage.requests, now_ms) >= rpm as f64 {
                return Err(past("requests per minute (rpm)", to_next_minute(now_ms)));
            }
        }
        if let Some(tpm) = s.limits.tpm {
            if usage.in_window(&usage.tokens, now_ms) >= tpm as f64 {
                return Err(past("tokens per minute (tpm)", to_next_minute(now_ms)));
            }
        }
        if let Some(budget) = s.limits.budget_day_usd {
            if usage.spent_day >= budget {
                let next_day = (day_start(now_ms) + DAY_MS - now_ms) / 1000;
                return Err(past("daily budget", next_day as u64));
            }
        }
        if let Some(budget) = s.limits.budget_month_usd {
            if usage.spent_month >= budget {
                let next_month = (month_start(now_ms, 1) - now_ms) / 1000;
                return Err(past("monthly budget", next_month as u64));
            }
        }
        usage.requests[1] += 1;
        Ok(())
    }

    /// Reads what the key spent today and this month from the ledger, at most once per
    /// [`KeyBook::FRESH`]; in between, this process's requests are added as they finish.
    async fn read_spend(&self, key: &InForce) {
        let s = &key.stored;
        if s.limits.budget_day_usd.is_none() && s.limits.budget_month_usd.is_none() {
            return;
        }
        let due = self
            .usage_lock()
            .get(&s.name)
            .and_then(|u| u.spent_read)
            .is_none_or(|at| at.elapsed() >= Self::FRESH);
        if !due {
            return;
        }
        let Ok((day, month)) =
            keys::spent_today_and_month(&self.pool, &s.name, crate::clock::now_ms()).await
        else {
            tracing::warn!(key = %s.name, "a virtual key's spend cannot be read: its budget is checked against what this process counted");
            return;
        };
        let mut all = self.usage_lock();
        let usage = all.entry(s.name.clone()).or_default();
        usage.spent_day = day;
        usage.spent_month = month;
        usage.spent_read = Some(Instant::now());
    }

    fn usage_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Usage>> {
        self.usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Found>> {
        self.found
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a finished request's tokens and cost against its key: one this book let in
    /// (a gateway key from the config has no counters here, and costs nothing to look up).
    fn charge(&self, r: &RequestRecord, pricing: &Pricing) {
        let (Some(name), Some(tokens)) = (r.gateway_key.as_deref(), r.usage) else {
            return;
        };
        let mut all = self.usage_lock();
        let Some(usage) = all.get_mut(name) else {
            return;
        };
        let model = r
            .model_served
            .as_deref()
            .or(r.model_requested.as_deref())
            .unwrap_or_default();
        let cost = pricing.cost(model, &tokens, 0).map_or(0.0, |c| c.cost);
        usage.roll(crate::clock::now_ms());
        usage.tokens[1] += tokens.input.saturating_add(tokens.output);
        usage.spent_day += cost;
        usage.spent_month += cost;
    }
}

impl Usage {
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
        let into = now_ms.rem_euclid(MINUTE_MS) as f64 / MINUTE_MS as f64;
        counts[1] as f64 + counts[0] as f64 * (1.0 - into)
    }
}

fn globs(patterns: &[String]) -> GlobSet {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        // Checked when the key was made.
        if let Ok(glob) = Glob::new(p) {
            set.add(glob);
        }
    }
    set.build().unwrap_or_else(|_| GlobSet::empty())
}

/// Counts each finished request's tokens and cost against its virtual key, then hands the
/// record on.
pub struct Metering {
    pub book: Arc<KeyBook>,
    pub pricing: Arc<Pricing>,
    pub inner: Arc<dyn Recorder>,
}

impl Recorder for Metering {
    fn record(&self, r: Arc<RequestRecord>) {
        self.book.charge(&r, &self.pricing);
        self.inner.record(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_slides_over_two_minutes() {
        let mut u = Usage::default();
        u.roll(0);
        u.requests[1] = 60;
        // Half a minute into the next one, half of the last minute's 60 still count.
        u.roll(MINUTE_MS + MINUTE_MS / 2);
        assert_eq!(u.in_window(&u.requests, MINUTE_MS + MINUTE_MS / 2), 30.0);
        u.roll(5 * MINUTE_MS);
        assert_eq!(u.in_window(&u.requests, 5 * MINUTE_MS), 0.0);
    }
}

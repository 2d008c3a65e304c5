//! Virtual keys at request time: which key a client presents, whether it is in force, may
//! use the model, and is within its limits (requests and tokens per minute, spend per day
//! and per month). The keys live in the ledger's database ([`crate::ledger::keys`]); a
//! key found is remembered for [`KeyBook::FRESH`], so a key revoked or made by another
//! process (`trimgate keys`) takes effect within that. Requests and tokens per minute are
//! counted by [`Counters`]: in this process ([`counters::LocalCounters`]), or in a Redis
//! the replicas share ([`shared::SharedCounters`]). Spend is read back from the ledger's
//! priced rows each [`KeyBook::FRESH`] and counted here in between.

pub mod counters;
pub mod shared;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use globset::{Glob, GlobSet, GlobSetBuilder};
use http::HeaderMap;
use sqlx::AnyPool;

use crate::error::GatewayError;
use crate::ledger::keys::{self, StoredKey};
use crate::optimize::PlanPatch;
use crate::pricing::Pricing;
use crate::record::{Recorder, RequestRecord};

use crate::clock::{day_start, month_start, DAY_MS};
use counters::{Ask, Counters, Past, MINUTE_MS};

/// Milliseconds until the next minute starts.
fn to_next_minute(now_ms: i64) -> i64 {
    MINUTE_MS - now_ms.rem_euclid(MINUTE_MS)
}

/// A `retry-after` for a wait of `ms`: whole seconds, rounded up past it, at least 1.
fn retry_secs(ms: i64) -> u64 {
    (ms / 1000 + 1).max(1) as u64
}

/// The virtual keys this gateway knows, and their use.
pub struct KeyBook {
    pool: AnyPool,
    /// Whether any key is in force: then every client needs a key.
    any: AtomicBool,
    found: Mutex<HashMap<String, Found>>,
    /// Each key's spend as this process knows it, by name: it outlives a refresh of what
    /// was found.
    spend: Mutex<HashMap<String, Spend>>,
    counters: Arc<dyn Counters>,
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
    /// Its optimizer overrides, read once when it is found.
    pub optimize: PlanPatch,
    /// Its guard mode, when it sets one.
    pub guard: Option<crate::guard::Mode>,
}

impl InForce {
    /// Whether the key may be served by the provider of this name.
    pub fn may_use(&self, provider: &str) -> bool {
        let providers = &self.stored.limits.providers;
        providers.is_empty() || providers.iter().any(|p| p == provider)
    }
}

/// What a key spent today and this month: the ledger's figure when last read, and what
/// this process's requests added since.
#[derive(Default)]
struct Spend {
    day: f64,
    month: f64,
    read: Option<Instant>,
}

impl KeyBook {
    /// How long a key found (or not found) is taken as it was.
    pub const FRESH: Duration = Duration::from_secs(2);

    /// The book over `pool`, knowing whether any key is in force, counting keys' use in
    /// `counters`.
    pub async fn open(
        pool: AnyPool,
        counters: Arc<dyn Counters>,
    ) -> Result<Arc<KeyBook>, keys::KeyError> {
        let any = keys::any_active(&pool, crate::clock::now_ms()).await?;
        let book = Arc::new(KeyBook {
            pool,
            any: AtomicBool::new(any),
            found: Mutex::new(HashMap::new()),
            spend: Mutex::new(HashMap::new()),
            counters,
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
                        retry_in_secs: retry_secs(to_next_minute(crate::clock::now_ms())),
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
                let key = match key {
                    Some(stored) => {
                        // Checked when the key was made; a mode this version does not know
                        // (a newer one made the key) refuses the key rather than serving it
                        // as it was not meant to be.
                        let optimize = stored.limits.optimize.patch().map_err(|e| {
                            tracing::error!(key = %stored.name, error = %e, "a virtual key's optimizer overrides cannot be read");
                            GatewayError::KeysUnavailable
                        })?;
                        let guard = match stored.limits.guard.as_deref() {
                            None => None,
                            Some(mode) => Some(crate::guard::Mode::parse(mode).map_err(|e| {
                                tracing::error!(key = %stored.name, error = %e, "a virtual key's guard mode cannot be read");
                                GatewayError::KeysUnavailable
                            })?),
                        };
                        Some(Arc::new(InForce {
                            models: globs(&stored.limits.models),
                            optimize,
                            guard,
                            stored,
                        }))
                    }
                    None => None,
                };
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

    /// Takes one request of `key` for `model`, routed to `providers` (the route's steps in
    /// order; none when nothing serves the model), or says why not: a model it may not use,
    /// or a route with no provider it may use (neither counted), or the limit it is past.
    /// The steps on providers it may not use are the caller's to skip ([`InForce::may_use`]).
    pub async fn admit(
        &self,
        key: &InForce,
        model: &str,
        providers: &[&str],
    ) -> Result<(), GatewayError> {
        if !key.stored.limits.models.is_empty() && !key.models.is_match(model) {
            return Err(GatewayError::KeyModelNotAllowed {
                key: key.stored.name.clone(),
                model: model.to_owned(),
            });
        }
        if let Some(routed) = providers.first() {
            if !providers.iter().any(|p| key.may_use(p)) {
                return Err(GatewayError::KeyProviderNotAllowed {
                    key: key.stored.name.clone(),
                    provider: (*routed).to_owned(),
                });
            }
        }
        self.read_spend(key).await;
        let s = &key.stored;
        let now_ms = crate::clock::now_ms();
        let (spent_day_usd, spent_month_usd) = self
            .spend_lock()
            .get(&s.name)
            .map_or((0.0, 0.0), |spend| (spend.day, spend.month));
        let ask = Ask {
            name: &s.name,
            rpm: s.limits.rpm,
            tpm: s.limits.tpm,
            budget_day_usd: s.limits.budget_day_usd,
            budget_month_usd: s.limits.budget_month_usd,
            spent_day_usd,
            spent_month_usd,
            now_ms,
        };
        let past = match self.counters.admit(ask).await {
            Ok(()) => return Ok(()),
            Err(past) => past,
        };
        let (limit, retry_in_ms) = match past {
            Past::Rpm => ("requests per minute (rpm)", to_next_minute(now_ms)),
            Past::Tpm => ("tokens per minute (tpm)", to_next_minute(now_ms)),
            Past::DayBudget => ("daily budget", day_start(now_ms) + DAY_MS - now_ms),
            Past::MonthBudget => ("monthly budget", month_start(now_ms, 1) - now_ms),
            Past::Unavailable => return Err(GatewayError::LimitsUnavailable),
        };
        Err(GatewayError::KeyLimit {
            key: s.name.clone(),
            limit,
            retry_in_secs: retry_secs(retry_in_ms),
        })
    }

    /// Reads what the key spent today and this month from the ledger, at most once per
    /// [`KeyBook::FRESH`]; in between, this process's requests are added as they finish.
    async fn read_spend(&self, key: &InForce) {
        let s = &key.stored;
        if s.limits.budget_day_usd.is_none() && s.limits.budget_month_usd.is_none() {
            return;
        }
        let due = self
            .spend_lock()
            .get(&s.name)
            .and_then(|u| u.read)
            .is_none_or(|at| at.elapsed() >= Self::FRESH);
        if !due {
            return;
        }
        let Ok((day, month)) =
            keys::spent_today_and_month(&self.pool, &s.name, crate::clock::now_ms()).await
        else {
            tracing::warn!(key = %s.name, "a virtual key's spend cannot be read: its budget is checked against what this process counted");
            self.spend_lock().entry(s.name.clone()).or_default();
            return;
        };
        let mut all = self.spend_lock();
        let spend = all.entry(s.name.clone()).or_default();
        spend.day = day;
        spend.month = month;
        spend.read = Some(Instant::now());
    }

    fn spend_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Spend>> {
        self.spend
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Found>> {
        self.found
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a finished request's tokens and cost against its key: one this book let in
    /// (a gateway key from the config is not counted, and costs nothing to look up).
    fn charge(&self, r: &RequestRecord, pricing: &Pricing) {
        let (Some(name), Some(tokens)) = (r.gateway_key.as_deref(), r.usage) else {
            return;
        };
        // Only keys with a budget are priced.
        let mut all = self.spend_lock();
        let cost = match all.get_mut(name) {
            Some(spend) => {
                let model = r.model_served.as_deref().or(r.model_requested.as_deref());
                let cost = pricing
                    .for_request(r.priced_as.as_deref(), model)
                    .map_or(0.0, |p| p.cost(&tokens, 0).cost);
                spend.day += cost;
                spend.month += cost;
                cost
            }
            None => 0.0,
        };
        drop(all);
        self.counters.charge(
            name,
            tokens.input.saturating_add(tokens.output),
            cost,
            crate::clock::now_ms(),
        );
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

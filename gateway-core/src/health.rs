//! Which providers are in rotation, and how many retries each may still take: the state
//! behind [`crate::retry`]'s decisions, kept in memory across config reloads.
//!
//! - **Cooldowns** (a circuit per provider): after `cooldown_failures` failed requests in a row,
//!   or a 429 that says when its limit resets, a provider is out of rotation until then;
//!   after that, one request probes it (half-open) and its answer closes or reopens it.
//! - **The retry budget**: per provider over a sliding window, retries may add at most
//!   `budget_share` of its requests (and `budget_floor` are always allowed), so that an
//!   outage does not turn every client into three.

use fnv::FnvHashMap as HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::retry::Settings;

/// Buckets the budget's window is cut into.
const BUCKETS: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Circuit {
    Closed {
        failures: u32,
    },
    /// Out until `until`. A provider out for `failures` in a row is then probed; one that
    /// only said when its rate limit resets is back in rotation at the reset: it is not
    /// down, and holding every other request behind one probe would refuse them.
    Open {
        until: Instant,
        failures: u32,
    },
    /// One probe went out at `since`; until it answers, others wait. A probe whose client
    /// went away is given up after a cooldown, and another goes.
    HalfOpen {
        since: Instant,
    },
}

impl Circuit {
    /// How long it stays out of rotation from `now`; `None` when a request may go.
    fn out_for(self, settings: &Settings, now: Instant) -> Option<Duration> {
        let until = match self {
            Circuit::Closed { .. } => return None,
            Circuit::Open { until, .. } => until,
            Circuit::HalfOpen { since } => since + settings.cooldown,
        };
        (now < until).then(|| until - now)
    }
}

/// Whether a request may go to a provider now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Yes,
    /// Cooling down, and this request is the one that probes it.
    Probe,
    /// Cooling down: try another, or come back after this long.
    No {
        retry_in: Duration,
    },
}

/// A provider's state for `/metrics`, `trimgate status` and the window.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ProviderHealth {
    pub provider: String,
    /// `up`, `cooling_down` or `probing`.
    pub state: &'static str,
    /// Failures in a row so far.
    pub failures: u32,
    /// Seconds until it is probed, while cooling down.
    pub retry_in_secs: Option<f64>,
}

#[derive(Default)]
struct Budget {
    /// (bucket number, first attempts, retries) per slot.
    slots: [(u64, u32, u32); BUCKETS],
}

impl Budget {
    fn slot(&mut self, bucket: u64) -> &mut (u64, u32, u32) {
        let slot = &mut self.slots[(bucket % BUCKETS as u64) as usize];
        if slot.0 != bucket {
            *slot = (bucket, 0, 0);
        }
        slot
    }

    fn totals(&self, bucket: u64) -> (u32, u32) {
        self.slots
            .iter()
            .filter(|(b, _, _)| *b + (BUCKETS as u64) > bucket && *b <= bucket)
            .fold((0, 0), |(r, t), (_, req, ret)| (r + req, t + ret))
    }
}

#[derive(Default)]
struct Inner {
    circuits: HashMap<String, Circuit>,
    budgets: HashMap<String, Budget>,
    /// Per provider with a key pool: whose turn it is, for requests without a session.
    turns: HashMap<String, usize>,
}

pub struct Health {
    inner: Mutex<Inner>,
    /// How many circuits are not plainly up: while none is, a request asks nothing of
    /// the lock (the common case, kept off the hot path).
    unsettled: AtomicUsize,
    epoch: Instant,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            inner: Mutex::new(Inner::default()),
            unsettled: AtomicUsize::new(0),
            epoch: Instant::now(),
        }
    }
}

impl Health {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn bucket(&self, settings: &Settings, now: Instant) -> u64 {
        let width = (settings.budget_window / BUCKETS as u32).max(Duration::from_millis(1));
        (now.saturating_duration_since(self.epoch).as_nanos() / width.as_nanos()) as u64
    }

    /// Whether `provider` takes a request now; a cooldown that has run out lets one probe through.
    pub fn admit(&self, provider: &str, settings: &Settings, now: impl Fn() -> Instant) -> Admit {
        if self.unsettled.load(Ordering::Acquire) == 0 {
            return Admit::Yes;
        }
        let now = now();
        let mut inner = self.lock();
        let Some(circuit) = inner.circuits.get_mut(provider) else {
            return Admit::Yes;
        };
        if let Circuit::Closed { .. } = *circuit {
            return Admit::Yes;
        }
        if let Some(retry_in) = circuit.out_for(settings, now) {
            return Admit::No { retry_in };
        }
        if matches!(*circuit, Circuit::Open { failures, .. } if failures < settings.cooldown_failures)
        {
            inner.circuits.remove(provider);
            self.unsettled
                .store(inner.circuits.len(), Ordering::Release);
            set_gauge(provider, 0.0);
            tracing::warn!(provider, "provider's rate limit reset: back in rotation");
            return Admit::Yes;
        }
        *circuit = Circuit::HalfOpen { since: now };
        set_gauge(provider, 2.0);
        tracing::info!(provider, "provider cooldown over: one request probes it");
        Admit::Probe
    }

    /// The next turn at `provider`'s key pool.
    pub fn next_turn(&self, provider: &str) -> usize {
        let mut inner = self.lock();
        let turn = match inner.turns.get_mut(provider) {
            Some(t) => t,
            None => inner.turns.entry(provider.to_owned()).or_default(),
        };
        *turn = turn.wrapping_add(1);
        *turn - 1
    }

    /// Whether `provider` is out of rotation now (without taking a probe's turn).
    pub fn cooling(&self, provider: &str, settings: &Settings, now: Instant) -> bool {
        if self.unsettled.load(Ordering::Acquire) == 0 {
            return false;
        }
        self.lock()
            .circuits
            .get(provider)
            .is_some_and(|c| c.out_for(settings, now).is_some())
    }

    /// The provider answered (any answer the client did not need retried).
    pub fn succeeded(&self, provider: &str) {
        if self.unsettled.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut inner = self.lock();
        // An entry is a provider that is not plainly up: a success takes it out.
        let Some(circuit) = inner.circuits.remove(provider) else {
            return;
        };
        self.unsettled
            .store(inner.circuits.len(), Ordering::Release);
        let was_out = !matches!(circuit, Circuit::Closed { .. });
        if was_out {
            set_gauge(provider, 0.0);
            tracing::warn!(provider, "provider back in rotation");
        }
    }

    /// The provider failed in a way a retry may fix. `reset_in` is when it said its rate
    /// limit resets, which takes it out of rotation until then at once.
    pub fn failed(
        &self,
        provider: &str,
        settings: &Settings,
        reset_in: Option<Duration>,
        now: Instant,
    ) {
        let mut inner = self.lock();
        let circuit = inner
            .circuits
            .entry(provider.to_owned())
            .or_insert(Circuit::Closed { failures: 0 });
        // A rate limit's reset is not a failure toward an outage: it only keeps the
        // provider out until then.
        let (before, out_until) = match *circuit {
            Circuit::Closed { failures } => (failures, None),
            Circuit::Open { until, failures } => (failures, Some(until)),
            Circuit::HalfOpen { .. } => (settings.cooldown_failures, None),
        };
        let rate_limited = reset_in.filter(|r| !r.is_zero());
        let failures = if rate_limited.is_some() {
            before
        } else {
            before + 1
        };
        let failing = failures >= settings.cooldown_failures;
        let until = [
            out_until,
            rate_limited.map(|r| now + r.max(Duration::from_secs(1))),
            (failing && rate_limited.is_none()).then(|| now + settings.cooldown),
        ]
        .into_iter()
        .flatten()
        .max();
        match until {
            Some(until) => {
                let was_open = matches!(*circuit, Circuit::Open { .. });
                *circuit = Circuit::Open { until, failures };
                if !was_open {
                    set_gauge(provider, 1.0);
                    tracing::warn!(
                        provider,
                        failures,
                        cooldown_secs = until.saturating_duration_since(now).as_secs_f64(),
                        "provider out of rotation: cooling down"
                    );
                }
            }
            None => *circuit = Circuit::Closed { failures },
        }
        self.unsettled
            .store(inner.circuits.len(), Ordering::Release);
    }

    /// Counts a request's first attempt at `provider` toward its retry budget.
    pub fn note_request(&self, provider: &str, settings: &Settings, now: Instant) {
        let bucket = self.bucket(settings, now);
        let mut inner = self.lock();
        let budget = match inner.budgets.get_mut(provider) {
            Some(b) => b,
            None => inner.budgets.entry(provider.to_owned()).or_default(),
        };
        budget.slot(bucket).1 += 1;
    }

    /// Takes one retry from `provider`'s budget, or says there is none left.
    pub fn take_retry(&self, provider: &str, settings: &Settings, now: Instant) -> bool {
        let bucket = self.bucket(settings, now);
        let mut inner = self.lock();
        let budget = inner.budgets.entry(provider.to_owned()).or_default();
        let (requests, retries) = budget.totals(bucket);
        let allowed = (f64::from(requests) * settings.budget_share) as u32;
        if retries >= allowed.max(settings.budget_floor) {
            metrics::counter!("trimgate_retry_budget_exhausted_total", "provider" => provider.to_owned())
                .increment(1);
            return false;
        }
        budget.slot(bucket).2 += 1;
        true
    }

    /// Every provider that is not plainly up (cooling down, probing, or failing without
    /// being out yet), in name order.
    pub fn report(&self, now: Instant) -> Vec<ProviderHealth> {
        let inner = self.lock();
        let mut out: Vec<ProviderHealth> = inner
            .circuits
            .iter()
            .map(|(name, circuit)| {
                let (state, failures, retry_in) = match *circuit {
                    Circuit::Closed { failures } => ("up", failures, None),
                    Circuit::Open { until, .. } => (
                        "cooling_down",
                        0,
                        Some(until.saturating_duration_since(now).as_secs_f64()),
                    ),
                    Circuit::HalfOpen { .. } => ("probing", 0, None),
                };
                ProviderHealth {
                    provider: name.clone(),
                    state,
                    failures,
                    retry_in_secs: retry_in,
                }
            })
            .collect();
        out.sort_by(|a, b| a.provider.cmp(&b.provider));
        out
    }

    /// Every provider named, in the order given, with those that have not failed since
    /// the start as `up`; then the keys of pools that have a circuit of their own
    /// (`provider#key`), in name order.
    pub fn report_for<'a>(
        &self,
        providers: impl IntoIterator<Item = &'a str>,
        now: Instant,
    ) -> Vec<ProviderHealth> {
        let mut known: HashMap<String, ProviderHealth> = self
            .report(now)
            .into_iter()
            .map(|h| (h.provider.clone(), h))
            .collect();
        let mut out: Vec<ProviderHealth> = providers
            .into_iter()
            .map(|name| {
                known.remove(name).unwrap_or_else(|| ProviderHealth {
                    provider: name.to_owned(),
                    state: "up",
                    failures: 0,
                    retry_in_secs: None,
                })
            })
            .collect();
        let mut keys: Vec<ProviderHealth> = known.into_values().collect();
        keys.sort_by(|a, b| a.provider.cmp(&b.provider));
        out.extend(keys);
        out
    }
}

/// `trimgate_provider_cooldown`: 0 in rotation, 1 cooling down, 2 probing.
fn set_gauge(provider: &str, value: f64) {
    metrics::gauge!("trimgate_provider_cooldown", "provider" => provider.to_owned()).set(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            cooldown_failures: 2,
            cooldown: Duration::from_secs(10),
            budget_share: 0.1,
            budget_floor: 2,
            budget_window: Duration::from_secs(10),
            ..Settings::default()
        }
    }

    #[test]
    fn failures_in_a_row_cool_a_provider_down_then_one_probe_decides() {
        let (h, s, t0) = (Health::default(), settings(), Instant::now());
        assert_eq!(h.admit("a", &s, || t0), Admit::Yes);
        h.failed("a", &s, None, t0);
        assert_eq!(h.admit("a", &s, || t0), Admit::Yes);
        h.succeeded("a");
        h.failed("a", &s, None, t0);
        assert_eq!(
            h.admit("a", &s, || t0),
            Admit::Yes,
            "a success broke the run"
        );
        h.failed("a", &s, None, t0);
        assert_eq!(
            h.admit("a", &s, || t0 + Duration::from_secs(4)),
            Admit::No {
                retry_in: Duration::from_secs(6)
            }
        );
        assert_eq!(h.report(t0)[0].state, "cooling_down");
        let later = t0 + Duration::from_secs(11);
        assert_eq!(h.admit("a", &s, || later), Admit::Probe);
        assert!(
            matches!(h.admit("a", &s, || later), Admit::No { .. }),
            "one probe at a time"
        );
        // The probe fails: out again for a full cooldown.
        h.failed("a", &s, None, later);
        assert!(matches!(
            h.admit("a", &s, || later + Duration::from_secs(9)),
            Admit::No { .. }
        ));
        assert_eq!(
            h.admit("a", &s, || later + Duration::from_secs(10)),
            Admit::Probe
        );
        h.succeeded("a");
        assert_eq!(
            h.admit("a", &s, || later + Duration::from_secs(10)),
            Admit::Yes
        );
        assert!(
            h.report(later).is_empty(),
            "a provider plainly up is not reported"
        );
        assert_eq!(
            h.admit("b", &s, || later),
            Admit::Yes,
            "providers are apart"
        );
    }

    #[test]
    fn a_rate_limit_reset_cools_down_at_once_for_that_long_then_all_may_go() {
        let (h, s, t0) = (Health::default(), settings(), Instant::now());
        h.failed("a", &s, Some(Duration::from_secs(3)), t0);
        assert_eq!(
            h.admit("a", &s, || t0),
            Admit::No {
                retry_in: Duration::from_secs(3)
            }
        );
        // Rate-limited, not down: at the reset it is back for everyone, with no probe
        // holding the others back.
        let t3 = t0 + Duration::from_secs(3);
        assert_eq!(h.admit("a", &s, || t3), Admit::Yes);
        assert_eq!(h.admit("a", &s, || t3), Admit::Yes);
        assert!(h.report(t3).is_empty());

        // A provider failing as well as rate-limited is probed when the later ends.
        h.failed("b", &s, None, t0);
        h.failed("b", &s, None, t0);
        h.failed("b", &s, Some(Duration::from_secs(30)), t0);
        assert!(matches!(
            h.admit("b", &s, || t0 + Duration::from_secs(29)),
            Admit::No { .. }
        ));
        assert_eq!(
            h.admit("b", &s, || t0 + Duration::from_secs(30)),
            Admit::Probe
        );
    }

    #[test]
    fn a_probe_whose_client_left_is_given_up_after_a_cooldown() {
        let (h, s, t0) = (Health::default(), settings(), Instant::now());
        h.failed("a", &s, None, t0);
        h.failed("a", &s, None, t0);
        let t1 = t0 + s.cooldown;
        assert_eq!(h.admit("a", &s, || t1), Admit::Probe);
        assert!(matches!(
            h.admit("a", &s, || t1 + Duration::from_secs(9)),
            Admit::No { .. }
        ));
        assert_eq!(
            h.admit("a", &s, || t1 + Duration::from_secs(10)),
            Admit::Probe
        );
    }

    #[test]
    fn retries_stay_within_their_share_of_requests_over_the_window() {
        let (h, s, t0) = (Health::default(), settings(), Instant::now());
        // The floor: two retries with no traffic at all.
        assert!(h.take_retry("a", &s, t0));
        assert!(h.take_retry("a", &s, t0));
        assert!(!h.take_retry("a", &s, t0));
        // 50 requests allow 5 retries in the window, 2 of them taken.
        for _ in 0..50 {
            h.note_request("a", &s, t0);
        }
        let granted = (0..10).filter(|_| h.take_retry("a", &s, t0)).count();
        assert_eq!(granted, 3);
        assert!(h.take_retry("b", &s, t0), "budgets are per provider");
        // A window later, the old requests and retries are forgotten: the floor again.
        let later = t0 + Duration::from_secs(11);
        let granted = (0..10).filter(|_| h.take_retry("a", &s, later)).count();
        assert_eq!(granted, 2);
    }
}

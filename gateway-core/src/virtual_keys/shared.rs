//! Virtual keys' limits counted in a Redis that every replica shares (`[limits] redis`):
//! one Lua script checks and counts a request atomically against the key's minute windows
//! and spend, so N replicas hold one key to one rpm between them. When Redis cannot be
//! reached a replica counts on its own, each rpm and tpm cut to `[limits] local_share`
//! (or refuses, with `on_redis_down = "refuse"`), says so in the log and in the
//! `trimgate_limits_shared` gauge, and goes back to Redis once it answers again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::counters::{last_minute_weight, Ask, Counters, LocalCounters, Past, MINUTE_MS};
use crate::clock::{day_start, month_start, DAY_MS};

/// Checks a request against its key's windows and spend and counts it, in one step.
/// KEYS: requests this minute, the last; tokens this minute, the last; spend today, this
/// month. ARGV: rpm, tpm (-1: none), the last minute's weight, day and month budgets
/// (-1: none), the ledger's spend today and this month, the spend keys' lifetimes (ms).
/// The ledger's figure seeds a spend counter Redis does not hold (a Redis restarted, a
/// day begun) and is the floor of one it holds.
const ADMIT: &str = r#"
local function num(k) return tonumber(redis.call('GET', k) or '0') end
local rpm, tpm, w = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if rpm >= 0 and num(KEYS[1]) + num(KEYS[2]) * w >= rpm then return 1 end
if tpm >= 0 and num(KEYS[3]) + num(KEYS[4]) * w >= tpm then return 2 end
local budgets = {{tonumber(ARGV[4]), KEYS[5], ARGV[6], ARGV[8], 3}, {tonumber(ARGV[5]), KEYS[6], ARGV[7], ARGV[9], 4}}
for _, b in ipairs(budgets) do
  if b[1] >= 0 then
    redis.call('SET', b[2], b[3], 'PX', b[4], 'NX')
    if math.max(num(b[2]), tonumber(b[3])) >= b[1] then return b[5] end
  end
end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], 2 * 60000 + 5000)
return 0
"#;

/// A key's counters' names: `{name}` is a hash tag, so a cluster keeps one key's
/// counters in one slot (a script's keys must share one).
struct Names {
    requests: [String; 2],
    tokens: [String; 2],
    day: String,
    month: String,
    day_ttl_ms: i64,
    month_ttl_ms: i64,
}

impl Names {
    fn new(name: &str, now_ms: i64) -> Names {
        let minute = now_ms.div_euclid(MINUTE_MS);
        let day = day_start(now_ms);
        let month = month_start(now_ms, 0);
        let at = |what: &str, n: i64| format!("trimgate:{{{name}}}:{what}:{n}");
        Names {
            requests: [at("r", minute), at("r", minute - 1)],
            tokens: [at("t", minute), at("t", minute - 1)],
            day: at("d", day / DAY_MS),
            month: at("m", month / DAY_MS),
            // Kept an hour past their period, so a clock a little behind still finds them.
            day_ttl_ms: day + DAY_MS - now_ms + 3_600_000,
            month_ttl_ms: month_start(now_ms, 1) - now_ms + 3_600_000,
        }
    }
}

/// Where the replicas' shared limits are counted (`[limits]`), and what a replica does
/// without it.
#[derive(Clone, Debug)]
pub struct SharedLimits {
    /// `redis://…` or `rediss://…`.
    pub redis: String,
    /// Each rpm and tpm is cut to this share while Redis is out.
    pub local_share: f64,
    /// Refuse requests with a virtual key while Redis is out, rather than count locally.
    pub refuse_without_redis: bool,
    /// Time Redis has to answer.
    pub timeout: Duration,
}

pub struct SharedCounters {
    redis: ConnectionManager,
    script: redis::Script,
    /// Whether Redis answered the last time it was asked.
    up: AtomicBool,
    local: LocalCounters,
    settings: SharedLimits,
}

impl SharedCounters {
    /// Counters in the Redis at `settings.redis`, connected on first use; a replica that
    /// cannot reach it counts locally until it can.
    pub fn open(settings: SharedLimits) -> Result<Arc<SharedCounters>, redis::RedisError> {
        let client = redis::Client::open(settings.redis.as_str())?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(settings.timeout))
            .set_response_timeout(Some(settings.timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let redis = ConnectionManager::new_lazy_with_config(client, config)?;
        let counters = Arc::new(SharedCounters {
            redis,
            script: redis::Script::new(ADMIT),
            up: AtomicBool::new(true),
            local: LocalCounters::default(),
            settings,
        });
        tokio::spawn(probe(Arc::downgrade(&counters)));
        Ok(counters)
    }

    /// Redis did not answer: from now on this replica counts on its own, until the probe
    /// reaches Redis again.
    fn went_down(&self, error: &dyn std::fmt::Display) {
        if self.up.swap(false, Ordering::Relaxed) {
            metrics::gauge!("trimgate_limits_shared").set(0.0);
            if self.settings.refuse_without_redis {
                tracing::error!(error = %error, "the limits' Redis cannot be reached: requests with virtual keys are refused until it answers (`on_redis_down = \"refuse\"`)");
            } else {
                tracing::warn!(error = %error, local_share = self.settings.local_share, "the limits' Redis cannot be reached: this replica counts virtual keys' limits on its own, each rpm and tpm cut to its local share, until Redis answers");
            }
        }
    }

    /// Without Redis: this replica's share of the limits, or a refusal.
    fn alone(&self, ask: &Ask<'_>) -> Result<(), Past> {
        metrics::counter!("trimgate_limits_local_total").increment(1);
        if self.settings.refuse_without_redis {
            return Err(Past::Unavailable);
        }
        self.local.admit_share(ask, self.settings.local_share)
    }

    async fn ask_redis(&self, ask: &Ask<'_>) -> Result<i64, redis::RedisError> {
        let names = Names::new(ask.name, ask.now_ms);
        let limit = |l: Option<u64>| l.map_or(-1, |n| n as i64);
        let budget = |b: Option<f64>| b.unwrap_or(-1.0);
        let mut redis = self.redis.clone();
        self.script
            .key(&names.requests[0])
            .key(&names.requests[1])
            .key(&names.tokens[0])
            .key(&names.tokens[1])
            .key(&names.day)
            .key(&names.month)
            .arg(limit(ask.rpm))
            .arg(limit(ask.tpm))
            .arg(last_minute_weight(ask.now_ms))
            .arg(budget(ask.budget_day_usd))
            .arg(budget(ask.budget_month_usd))
            .arg(ask.spent_day_usd)
            .arg(ask.spent_month_usd)
            .arg(names.day_ttl_ms)
            .arg(names.month_ttl_ms)
            .invoke_async::<i64>(&mut redis)
            .await
    }
}

impl Counters for SharedCounters {
    fn admit<'a>(&'a self, ask: Ask<'a>) -> BoxFuture<'a, Result<(), Past>> {
        Box::pin(async move {
            if !self.up.load(Ordering::Relaxed) {
                return self.alone(&ask);
            }
            let answer = tokio::time::timeout(self.settings.timeout, self.ask_redis(&ask)).await;
            match answer {
                Ok(Ok(0)) => {
                    self.local.note(ask.name, ask.now_ms);
                    Ok(())
                }
                Ok(Ok(1)) => Err(Past::Rpm),
                Ok(Ok(2)) => Err(Past::Tpm),
                Ok(Ok(3)) => Err(Past::DayBudget),
                Ok(Ok(4)) => Err(Past::MonthBudget),
                Ok(Ok(other)) => {
                    self.went_down(&format!("the limits script answered {other}"));
                    self.alone(&ask)
                }
                Ok(Err(e)) => {
                    self.went_down(&e);
                    self.alone(&ask)
                }
                Err(_) => {
                    self.went_down(&format!("no answer in {:?}", self.settings.timeout));
                    self.alone(&ask)
                }
            }
        })
    }

    fn charge(&self, name: &str, tokens: u64, cost_usd: f64, now_ms: i64) {
        // This replica's own figures, for when Redis goes away; a name it never admitted
        // is a config's gateway key, which has no limits.
        if !self.local.count_tokens(name, tokens, now_ms) || !self.up.load(Ordering::Relaxed) {
            return;
        }
        let names = Names::new(name, now_ms);
        let mut pipe = redis::pipe();
        pipe.incr(&names.tokens[0], tokens)
            .ignore()
            .pexpire(&names.tokens[0], 2 * MINUTE_MS + 5_000)
            .ignore();
        if cost_usd > 0.0 {
            pipe.incr(&names.day, cost_usd)
                .ignore()
                .pexpire(&names.day, names.day_ttl_ms)
                .ignore()
                .incr(&names.month, cost_usd)
                .ignore()
                .pexpire(&names.month, names.month_ttl_ms)
                .ignore();
        }
        let mut redis = self.redis.clone();
        let timeout = self.settings.timeout;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let sent = tokio::time::timeout(timeout, pipe.query_async::<()>(&mut redis)).await;
            if !matches!(sent, Ok(Ok(()))) {
                // The request is in the ledger: the next spend read counts it; the minute's
                // tokens are lost to the shared window (the probe notices Redis is out).
                metrics::counter!("trimgate_limits_charge_errors_total").increment(1);
            }
        });
    }
}

/// Every second while Redis is out, asks it for a `PING`; once it answers, the replica
/// counts in Redis again. Keeps `trimgate_limits_shared` up to date.
async fn probe(counters: Weak<SharedCounters>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let Some(c) = counters.upgrade() else { return };
        if c.up.load(Ordering::Relaxed) {
            // Set each second: the metrics' recorder is installed after the counters open.
            metrics::gauge!("trimgate_limits_shared").set(1.0);
            continue;
        }
        let mut redis = c.redis.clone();
        let ping = tokio::time::timeout(
            c.settings.timeout,
            redis::cmd("PING").query_async::<String>(&mut redis),
        )
        .await;
        if matches!(ping, Ok(Ok(_))) {
            c.up.store(true, Ordering::Relaxed);
            metrics::gauge!("trimgate_limits_shared").set(1.0);
            tracing::info!(
                "the limits' Redis answers again: virtual keys' limits are shared once more"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_counters_share_one_hash_tag_and_outlive_their_period() {
        // 2026-12-03 12:00:30 UTC.
        let now = 1_796_299_230_000;
        let n = Names::new("ci", now);
        for name in [
            &n.requests[0],
            &n.requests[1],
            &n.tokens[0],
            &n.day,
            &n.month,
        ] {
            assert!(name.starts_with("trimgate:{ci}:"), "{name}");
        }
        assert_ne!(n.requests[0], n.requests[1]);
        assert!(n.day_ttl_ms > 3_600_000 && n.day_ttl_ms <= DAY_MS + 3_600_000);
        assert!(n.month_ttl_ms > n.day_ttl_ms);
    }
}

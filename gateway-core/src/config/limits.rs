//! `[limits]`: where virtual keys' rate limits and spend are counted when replicas share
//! them, and what a replica does when that store is out.

use std::time::Duration;

use serde::Deserialize;

use super::ConfigProblem;
pub use crate::virtual_keys::shared::SharedLimits;

/// `[limits]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// `redis://[user:password@]host:port[/db]` (or `rediss://`): every replica counts its
    /// virtual keys' requests, tokens and spend there. Without it each process counts its own.
    pub redis: Option<String>,
    /// While Redis cannot be reached, the share of each rpm and tpm limit one replica lets
    /// through on its own: `1 / replicas` holds the whole to about its limit. Default 1.
    pub local_share: Option<f64>,
    /// `local` (default): count locally while Redis is out; `refuse`: answer 503 to every
    /// request with a virtual key until Redis is back.
    pub on_redis_down: Option<String>,
    /// Time Redis has to answer before a replica counts locally. Default 0.25 s.
    pub redis_timeout_secs: Option<f64>,
}

pub(super) fn validate_limits(
    limits: LimitsConfig,
    problems: &mut Vec<ConfigProblem>,
) -> Option<SharedLimits> {
    let LimitsConfig {
        redis,
        local_share,
        on_redis_down,
        redis_timeout_secs,
    } = limits;
    let local_share = match local_share {
        None => 1.0,
        Some(s) if s.is_finite() && s > 0.0 && s <= 1.0 => s,
        Some(s) => {
            problems.push(ConfigProblem {
                path: "limits.local_share".into(),
                message: format!("must be more than 0 and at most 1, got {s}"),
            });
            1.0
        }
    };
    let refuse_without_redis = match on_redis_down.as_deref() {
        None | Some("local") => false,
        Some("refuse") => true,
        Some(other) => {
            problems.push(ConfigProblem {
                path: "limits.on_redis_down".into(),
                message: format!("must be \"local\" or \"refuse\", got {other:?}"),
            });
            false
        }
    };
    let timeout = super::secs(
        redis_timeout_secs,
        Duration::from_millis(250),
        "limits.redis_timeout_secs".into(),
        problems,
    );
    let redis = redis?;
    if let Err(e) = redis::Client::open(redis.as_str()) {
        problems.push(ConfigProblem {
            path: "limits.redis".into(),
            message: format!("must be a redis:// or rediss:// URL ({})", e.category()),
        });
        return None;
    }
    Some(SharedLimits {
        redis,
        local_share,
        refuse_without_redis,
        timeout,
    })
}

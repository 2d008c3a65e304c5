//! `[retry]`: retries before the first byte, the attempt limit, the retry budget and
//! cooldowns, validated into [`crate::retry::Settings`].

use serde::Deserialize;

use super::{secs, ConfigProblem};

/// `[retry]`: retries before the first byte, fallbacks' attempt limit, the retry budget
/// and cooldowns (see [`crate::retry::Settings`] for each).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    pub max_attempts: Option<u32>,
    pub attempts_per_step: Option<u32>,
    pub backoff_initial_secs: Option<f64>,
    pub backoff_max_secs: Option<f64>,
    pub max_wait_secs: Option<f64>,
    pub deadline_secs: Option<f64>,
    pub budget_share: Option<f64>,
    pub budget_floor: Option<u32>,
    pub budget_window_secs: Option<f64>,
    pub cooldown_failures: Option<u32>,
    pub cooldown_secs: Option<f64>,
}

pub(super) fn validate_retry(
    retry: RetryConfig,
    problems: &mut Vec<ConfigProblem>,
) -> crate::retry::Settings {
    let d = crate::retry::Settings::default();
    let RetryConfig {
        max_attempts,
        attempts_per_step,
        backoff_initial_secs,
        backoff_max_secs,
        max_wait_secs,
        deadline_secs,
        budget_share,
        budget_floor,
        budget_window_secs,
        cooldown_failures,
        cooldown_secs,
    } = retry;
    let mut at_least_one = |value: Option<u32>, default: u32, name: &str| match value {
        Some(0) => {
            problems.push(ConfigProblem {
                path: format!("retry.{name}"),
                message: "must be at least 1".into(),
            });
            default
        }
        v => v.unwrap_or(default),
    };
    let max_attempts = at_least_one(max_attempts, d.max_attempts, "max_attempts");
    let attempts_per_step =
        at_least_one(attempts_per_step, d.attempts_per_step, "attempts_per_step");
    let cooldown_failures =
        at_least_one(cooldown_failures, d.cooldown_failures, "cooldown_failures");
    let budget_share = match budget_share {
        None => d.budget_share,
        Some(v) if (0.0..=1.0).contains(&v) => v,
        Some(v) => {
            problems.push(ConfigProblem {
                path: "retry.budget_share".into(),
                message: format!("must be between 0 and 1, got {v}"),
            });
            d.budget_share
        }
    };
    let backoff_initial = secs(
        backoff_initial_secs,
        d.backoff_initial,
        "retry.backoff_initial_secs".into(),
        problems,
    );
    let backoff_max = secs(
        backoff_max_secs,
        d.backoff_max,
        "retry.backoff_max_secs".into(),
        problems,
    );
    if backoff_max < backoff_initial {
        problems.push(ConfigProblem {
            path: "retry.backoff_max_secs".into(),
            message: "must not be less than backoff_initial_secs".into(),
        });
    }
    crate::retry::Settings {
        max_attempts,
        attempts_per_step,
        backoff_initial,
        backoff_max,
        max_wait: secs(
            max_wait_secs,
            d.max_wait,
            "retry.max_wait_secs".into(),
            problems,
        ),
        deadline: secs(
            deadline_secs,
            d.deadline,
            "retry.deadline_secs".into(),
            problems,
        ),
        budget_share,
        budget_floor: budget_floor.unwrap_or(d.budget_floor),
        budget_window: secs(
            budget_window_secs,
            d.budget_window,
            "retry.budget_window_secs".into(),
            problems,
        ),
        cooldown_failures,
        cooldown: secs(
            cooldown_secs,
            d.cooldown,
            "retry.cooldown_secs".into(),
            problems,
        ),
    }
}

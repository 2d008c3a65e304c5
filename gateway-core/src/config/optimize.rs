//! `[optimize]` and `[[optimize.models]]`: the passes each model runs, checked.

use serde::Deserialize;

use super::ConfigProblem;
use crate::optimize::modes::ModelRule;
use crate::optimize::{Modes, Plan, PlanPatch};

/// `[optimize]`: the passes every model runs, then `[[optimize.models]]` rules by glob.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptimizeConfig {
    pub tool_output: Option<String>,
    pub terse: Option<String>,
    pub prune: Option<String>,
    pub squeeze: Option<bool>,
    /// Memory for rewritten blocks' originals, in MiB.
    pub originals_mib: Option<usize>,
    /// Share of sessions sent unoptimized as a control group (0 to 0.5).
    pub holdout: Option<f64>,
    /// Prompt-cache breakpoints for Anthropic-bound requests that carry none; default true.
    pub cache_breakpoints: Option<bool>,
    /// Days an elided output is kept in the ledger's database for its marker; default 7.
    pub originals_days: Option<u32>,
    /// MiB of elided outputs the ledger's database keeps at most (oldest out); default 512.
    pub originals_db_mib: Option<u64>,
    #[serde(default)]
    pub models: Vec<ModelOptimizeConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelOptimizeConfig {
    #[serde(rename = "match")]
    pub pattern: String,
    pub tool_output: Option<String>,
    pub terse: Option<String>,
    pub prune: Option<String>,
    pub squeeze: Option<bool>,
    pub holdout: Option<f64>,
}

/// Pass settings that override others (a gateway key's).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PassesConfig {
    pub tool_output: Option<String>,
    pub terse: Option<String>,
    pub prune: Option<String>,
    pub squeeze: Option<bool>,
}

/// One set of pass settings as a patch; problems are reported under `path`.
pub(super) fn passes_patch(
    settings: [(&str, Option<String>); 3],
    squeeze: Option<bool>,
    path: &str,
    problems: &mut Vec<ConfigProblem>,
) -> PlanPatch {
    let mut patch = PlanPatch::default();
    for (pass, mode) in settings {
        if let Some(mode) = mode {
            if let Err(message) = patch.set(pass, &mode) {
                problems.push(ConfigProblem {
                    path: format!("{path}{pass}"),
                    message,
                });
            }
        }
    }
    patch.squeeze = squeeze;
    patch
}

pub(super) fn validate_optimize(
    optimize: OptimizeConfig,
    problems: &mut Vec<ConfigProblem>,
) -> Modes {
    let OptimizeConfig {
        tool_output,
        terse,
        prune,
        squeeze,
        originals_mib,
        holdout,
        cache_breakpoints,
        originals_days,
        originals_db_mib,
        models,
    } = optimize;
    let mut defaults = Plan::DEFAULT;
    defaults.apply(&passes_patch(
        [
            ("tool_output", tool_output),
            ("terse", terse),
            ("prune", prune),
        ],
        squeeze,
        "optimize.",
        problems,
    ));
    let mut rules = Vec::new();
    for (i, m) in models.into_iter().enumerate() {
        let path = format!("optimize.models[{i}].");
        let patch = passes_patch(
            [
                ("tool_output", m.tool_output),
                ("terse", m.terse),
                ("prune", m.prune),
            ],
            m.squeeze,
            &path,
            problems,
        );
        let model_holdout = m
            .holdout
            .map(|h| holdout_permille(h, &format!("{path}holdout"), problems));
        match ModelRule::new(&m.pattern, patch) {
            Ok(mut rule) if !m.pattern.is_empty() => {
                rule.holdout_permille = model_holdout;
                rules.push(rule);
            }
            Ok(_) => problems.push(ConfigProblem {
                path: format!("{path}match"),
                message: "must not be empty".into(),
            }),
            Err(message) => problems.push(ConfigProblem {
                path: format!("{path}match"),
                message,
            }),
        }
    }
    let mut modes = Modes {
        defaults,
        rules,
        holdout_permille: holdout.map_or(0, |h| holdout_permille(h, "optimize.holdout", problems)),
        cache_breakpoints: cache_breakpoints.unwrap_or(true),
        ..Modes::default()
    };
    match originals_days {
        Some(0) => problems.push(ConfigProblem {
            path: "optimize.originals_days".into(),
            message: "must be at least 1".into(),
        }),
        Some(days) => {
            modes.originals_for = std::time::Duration::from_secs(u64::from(days) * 86_400)
        }
        None => {}
    }
    if let Some(mib) = originals_mib {
        modes.originals_bytes = mib.saturating_mul(1024 * 1024);
    }
    match originals_db_mib {
        Some(0) => problems.push(ConfigProblem {
            path: "optimize.originals_db_mib".into(),
            message: "must be at least 1".into(),
        }),
        Some(mib) => modes.originals_db_bytes = mib.saturating_mul(1024 * 1024),
        None => {}
    }
    modes
}

pub(super) fn holdout_permille(share: f64, path: &str, problems: &mut Vec<ConfigProblem>) -> u16 {
    if share.is_finite() && (0.0..=0.5).contains(&share) {
        (share * 1000.0).round() as u16
    } else {
        problems.push(ConfigProblem {
            path: path.to_owned(),
            message: format!("must be a share between 0 and 0.5, got {share}"),
        });
        0
    }
}

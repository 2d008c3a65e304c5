//! `[[gateway_keys]]`: the keys clients may present, each with its optimizer overrides.

use serde::Deserialize;

use super::optimize::passes_patch;
use super::providers::key_source;
use super::{ConfigProblem, KeySourceConfig, PassesConfig};
use crate::optimize::PlanPatch;
use crate::secrets::KeySource;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayKeyConfig {
    pub name: String,
    pub key: KeySourceConfig,
    #[serde(default)]
    pub optimize: PassesConfig,
    /// The guard's mode for this key's requests (`redact`, `block`, `off`).
    pub guard: Option<String>,
}

/// A key a client presents to use the gateway, with its optimizer overrides.
#[derive(Debug, Clone)]
pub struct GatewayKey {
    pub name: String,
    pub key: KeySource,
    pub optimize: PlanPatch,
    pub guard: Option<crate::guard::Mode>,
}

pub(super) fn validate_gateway_keys(
    keys: Vec<GatewayKeyConfig>,
    problems: &mut Vec<ConfigProblem>,
) -> Vec<GatewayKey> {
    let mut out: Vec<GatewayKey> = Vec::new();
    for (i, k) in keys.into_iter().enumerate() {
        let path = format!("gateway_keys[{i}]");
        if k.name.is_empty() || out.iter().any(|o| o.name == k.name) {
            problems.push(ConfigProblem {
                path: format!("{path}.name"),
                message: "must be non-empty and unique".into(),
            });
            continue;
        }
        let Some(key) = key_source(Some(k.key), &format!("{path}.key"), problems) else {
            continue;
        };
        let o = k.optimize;
        let optimize = passes_patch(
            [
                ("tool_output", o.tool_output),
                ("terse", o.terse),
                ("prune", o.prune),
            ],
            o.squeeze,
            &format!("{path}.optimize."),
            problems,
        );
        let guard = match k.guard.as_deref().map(crate::guard::Mode::parse) {
            None => None,
            Some(Ok(mode)) => Some(mode),
            Some(Err(message)) => {
                problems.push(ConfigProblem {
                    path: format!("{path}.guard"),
                    message,
                });
                None
            }
        };
        out.push(GatewayKey {
            name: k.name,
            key,
            optimize,
            guard,
        });
    }
    out
}

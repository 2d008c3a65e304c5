//! `[guard]`: what happens to secrets in requests, the user's own patterns, the
//! allow-list, and the HTTP guardrail hooks, checked.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use globset::Glob;
use serde::Deserialize;

use super::ConfigProblem;
use crate::guard::{policy, CustomPattern, FailMode, Hook, Mode, Rules, Settings};

/// Longest a hook may be given to answer.
const MAX_HOOK_TIMEOUT_MS: u64 = 60_000;
/// A hook's time to answer when the config says none.
const DEFAULT_HOOK_TIMEOUT_MS: u64 = 2_000;

/// `[guard]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardConfig {
    /// `redact` (default), `block` or `off`.
    pub mode: Option<String>,
    /// Values never replaced, as they are.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Regexes a whole value must match to be let through.
    #[serde(default)]
    pub allow_patterns: Vec<String>,
    #[serde(default)]
    pub patterns: Vec<PatternConfig>,
    /// The file holding this installation's placeholder key (default: `guard-key`
    /// beside the config). Replicas that share one give the same placeholders.
    pub key_file: Option<PathBuf>,
    /// Secrets kept for answers at most, over every session.
    pub vault_capacity: Option<usize>,
    /// Hooks every request meets.
    #[serde(default)]
    pub use_hooks: Vec<String>,
    #[serde(default)]
    pub hooks: Vec<HookConfig>,
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternConfig {
    pub id: String,
    pub regex: String,
    #[serde(default)]
    pub keywords: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    pub name: String,
    pub url: String,
    /// `["pre"]`, `["post"]` or both (default both).
    pub on: Option<Vec<String>>,
    pub timeout_ms: Option<u64>,
    /// `open` (default: a hook that fails lets the request go on) or `closed`.
    pub fail: Option<String>,
    /// Header name → environment variable holding its value.
    #[serde(default)]
    pub headers_from_env: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// A model name or glob.
    #[serde(rename = "match")]
    pub pattern: Option<String>,
    /// The provider the route sends the request to.
    pub provider: Option<String>,
    pub mode: Option<String>,
    #[serde(default)]
    pub hooks: Vec<String>,
}

pub(super) fn validate_guard(
    guard: GuardConfig,
    providers: &[String],
    problems: &mut Vec<ConfigProblem>,
) -> Settings {
    let GuardConfig {
        mode,
        allow,
        allow_patterns,
        patterns,
        key_file,
        vault_capacity,
        use_hooks,
        hooks,
        rules,
    } = guard;
    let mut problem =
        |path: String, message: String| problems.push(ConfigProblem { path, message });
    let mode = match mode.as_deref().map(Mode::parse) {
        None => Mode::Redact,
        Some(Ok(mode)) => mode,
        Some(Err(message)) => {
            problem("guard.mode".into(), message);
            Mode::Redact
        }
    };

    let mut built_hooks: Vec<Arc<Hook>> = Vec::new();
    for (i, h) in hooks.into_iter().enumerate() {
        let path = format!("guard.hooks[{i}]");
        if h.name.is_empty() || built_hooks.iter().any(|b| b.name == h.name) {
            problem(
                format!("{path}.name"),
                "must be non-empty and unique".into(),
            );
            continue;
        }
        match h.url.parse::<http::Uri>() {
            Ok(u) if matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some() => {}
            _ => {
                problem(format!("{path}.url"), "must be an http or https URL".into());
                continue;
            }
        }
        let (mut pre, mut post) = (true, true);
        if let Some(on) = &h.on {
            pre = false;
            post = false;
            for stage in on {
                match stage.as_str() {
                    "pre" => pre = true,
                    "post" => post = true,
                    other => problem(
                        format!("{path}.on"),
                        format!("{other:?} is not a stage: pre or post"),
                    ),
                }
            }
        }
        let timeout_ms = h.timeout_ms.unwrap_or(DEFAULT_HOOK_TIMEOUT_MS);
        if timeout_ms == 0 || timeout_ms > MAX_HOOK_TIMEOUT_MS {
            problem(
                format!("{path}.timeout_ms"),
                format!("must be between 1 and {MAX_HOOK_TIMEOUT_MS}"),
            );
        }
        let fail = match h.fail.as_deref() {
            None | Some("open") => FailMode::Open,
            Some("closed") => FailMode::Closed,
            Some(other) => {
                problem(
                    format!("{path}.fail"),
                    format!("{other:?} is not a fail mode: open or closed"),
                );
                FailMode::Open
            }
        };
        for name in h.headers_from_env.keys() {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                problem(
                    format!("{path}.headers_from_env"),
                    format!("{name:?} is not a header name"),
                );
            }
        }
        built_hooks.push(Arc::new(Hook {
            name: h.name,
            url: h.url,
            pre,
            post,
            timeout: Duration::from_millis(timeout_ms.clamp(1, MAX_HOOK_TIMEOUT_MS)),
            fail,
            headers: h.headers_from_env.into_iter().collect(),
        }));
    }
    let named = |names: Vec<String>, path: &str, problem: &mut dyn FnMut(String, String)| {
        let mut out: Vec<Arc<Hook>> = Vec::new();
        for name in names {
            match built_hooks.iter().find(|h| h.name == name) {
                Some(h) => out.push(h.clone()),
                None => problem(
                    path.to_owned(),
                    format!("no hook named {name:?} in [[guard.hooks]]"),
                ),
            }
        }
        out
    };
    let every = named(use_hooks, "guard.use_hooks", &mut problem);

    let mut built_rules = Vec::new();
    for (i, r) in rules.into_iter().enumerate() {
        let path = format!("guard.rules[{i}]");
        let matcher = match r.pattern.as_deref() {
            None => None,
            Some("") => {
                problem(format!("{path}.match"), "must not be empty".into());
                None
            }
            Some(p) => match Glob::new(p) {
                Ok(g) => Some(g.compile_matcher()),
                Err(e) => {
                    problem(
                        format!("{path}.match"),
                        format!("{p:?} is not a valid glob: {e}"),
                    );
                    None
                }
            },
        };
        if r.pattern.is_none() && r.provider.is_none() {
            problem(path.clone(), "needs `match`, `provider` or both".into());
        }
        if let Some(p) = &r.provider {
            if !providers.iter().any(|name| name == p) {
                problem(
                    format!("{path}.provider"),
                    format!("no provider named {p:?}"),
                );
            }
        }
        let mode = match r.mode.as_deref().map(Mode::parse) {
            None => None,
            Some(Ok(m)) => Some(m),
            Some(Err(message)) => {
                problem(format!("{path}.mode"), message);
                None
            }
        };
        let hooks = named(r.hooks, &format!("{path}.hooks"), &mut problem);
        built_rules.push(policy::Rule {
            pattern: r.pattern,
            matcher,
            provider: r.provider,
            mode,
            hooks,
        });
    }

    let mut custom = Vec::new();
    for (i, p) in patterns.into_iter().enumerate() {
        let path = format!("guard.patterns[{i}]");
        if p.id.is_empty() || custom.iter().any(|c: &CustomPattern| c.id == p.id) {
            problem(format!("{path}.id"), "must be non-empty and unique".into());
            continue;
        }
        if let Err(e) = regex::Regex::new(&p.regex) {
            problem(format!("{path}.regex"), format!("not a valid regex: {e}"));
            continue;
        }
        custom.push(CustomPattern {
            id: p.id,
            regex: p.regex,
            keywords: p
                .keywords
                .into_iter()
                .map(|k| k.to_ascii_lowercase())
                .collect(),
        });
    }
    for (i, a) in allow_patterns.iter().enumerate() {
        if let Err(e) = regex::Regex::new(a) {
            problem(
                format!("guard.allow_patterns[{i}]"),
                format!("not a valid regex: {e}"),
            );
        }
    }
    let detect = if custom.is_empty() && allow.is_empty() && allow_patterns.is_empty() {
        policy::default_rules()
    } else {
        match Rules::with(&custom, &allow, &allow_patterns) {
            Ok(rules) => Arc::new(rules),
            Err(e) => {
                problem("guard.patterns".into(), e.to_string());
                policy::default_rules()
            }
        }
    };
    if vault_capacity == Some(0) {
        problem("guard.vault_capacity".into(), "must be at least 1".into());
    }
    Settings {
        mode,
        rules: built_rules,
        hooks: every,
        detect,
        key_file,
        vault_capacity: vault_capacity
            .unwrap_or(crate::guard::vault::DEFAULT_CAPACITY)
            .max(1),
        patterns: custom.into_iter().map(|c| c.id).collect(),
        allowed: allow.len() + allow_patterns.len(),
    }
}

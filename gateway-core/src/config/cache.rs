//! `[cache]` and `[[cache.models]]`: the response cache's settings, checked.

use std::time::Duration;

use serde::Deserialize;

use super::ConfigProblem;

/// `[cache]`: the response cache, then `[[cache.models]]` rules by glob.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// `false` turns the cache off for every model.
    pub enabled: Option<bool>,
    /// `off`, `deterministic` (temperature 0; the default) or `always`.
    pub exact: Option<String>,
    /// Answer requests of the same shape whose words are close enough (off by default).
    pub similar: Option<bool>,
    pub ttl_secs: Option<f64>,
    pub max_entries: Option<usize>,
    pub max_mib: Option<f64>,
    /// Keep entries in the ledger's database across restarts (default true).
    pub persist: Option<bool>,
    /// The similar cache's word-set Jaccard threshold (0.5 to 1; default 0.9).
    pub similarity: Option<f64>,
    /// Requests with fewer distinct words are never answered by similarity (default 8).
    pub min_words: Option<usize>,
    #[serde(default)]
    pub models: Vec<ModelCacheConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCacheConfig {
    #[serde(rename = "match")]
    pub pattern: String,
    pub exact: Option<String>,
    pub similar: Option<bool>,
    pub ttl_secs: Option<f64>,
}

pub(super) fn validate_cache(
    cache: CacheConfig,
    problems: &mut Vec<ConfigProblem>,
) -> crate::cache::Settings {
    use crate::cache::{ExactMode, Rule, Settings};
    let mut out = Settings::default();
    let mut problem =
        |path: String, message: String| problems.push(ConfigProblem { path, message });
    let ttl = |v: Option<f64>, path: String, problem: &mut dyn FnMut(String, String)| match v {
        None => None,
        Some(s) if s.is_finite() && (1.0..=365.0 * 86_400.0).contains(&s) => {
            Some(Duration::from_secs_f64(s))
        }
        Some(s) => {
            problem(
                path,
                format!("must be between 1 second and a year, got {s}"),
            );
            None
        }
    };
    let mode = |v: Option<String>, path: String, problem: &mut dyn FnMut(String, String)| {
        v.and_then(|m| ExactMode::parse(&m).map_err(|e| problem(path, e)).ok())
    };
    if let Some(enabled) = cache.enabled {
        out.enabled = enabled;
    }
    if let Some(m) = mode(cache.exact, "cache.exact".into(), &mut problem) {
        out.defaults.exact = m;
    }
    if let Some(similar) = cache.similar {
        out.defaults.similar = similar;
    }
    if let Some(t) = ttl(cache.ttl_secs, "cache.ttl_secs".into(), &mut problem) {
        out.defaults.ttl = t;
    }
    match cache.max_entries {
        Some(0) => problem(
            "cache.max_entries".into(),
            "must be at least 1 (set enabled = false to turn the cache off)".into(),
        ),
        Some(n) => out.max_entries = n,
        None => {}
    }
    match cache.max_mib {
        Some(m) if m.is_finite() && m > 0.0 && m <= 65_536.0 => {
            out.max_bytes = (m * 1024.0 * 1024.0) as usize
        }
        Some(m) => problem(
            "cache.max_mib".into(),
            format!("must be between 0 and 65536 MiB, got {m}"),
        ),
        None => {}
    }
    if let Some(persist) = cache.persist {
        out.persist = persist;
    }
    match cache.similarity {
        Some(t) if t.is_finite() && (0.5..=1.0).contains(&t) => out.similarity = t,
        Some(t) => problem(
            "cache.similarity".into(),
            format!("must be between 0.5 and 1, got {t}"),
        ),
        None => {}
    }
    if let Some(n) = cache.min_words {
        out.min_words = n.max(1);
    }
    for (i, m) in cache.models.into_iter().enumerate() {
        let path = format!("cache.models[{i}].");
        if m.pattern.is_empty() {
            problem(format!("{path}match"), "must not be empty".into());
            continue;
        }
        let mut rule = match Rule::new(&m.pattern) {
            Ok(rule) => rule,
            Err(message) => {
                problem(format!("{path}match"), message);
                continue;
            }
        };
        rule.exact = mode(m.exact, format!("{path}exact"), &mut problem);
        rule.similar = m.similar;
        rule.ttl = ttl(m.ttl_secs, format!("{path}ttl_secs"), &mut problem);
        out.rules.push(rule);
    }
    out
}

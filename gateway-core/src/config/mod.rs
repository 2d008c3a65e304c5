//! Configuration: TOML parsed into raw `*Config` types (unknown keys rejected), then
//! validated once into the runtime types the gateway uses. Validation collects every
//! problem with its path (`routes[2].provider`) instead of stopping at the first.
//!
//! Each component's section lives in its own file with its validation: [`server`],
//! [`telemetry`], [`ledger`], [`cache`], [`optimize`], [`gateway_keys`], [`providers`]
//! (providers, where their keys come from, and the routes over them). This file holds
//! the whole file's types, the errors, loading, and the [`GatewayConfig::validate`] that
//! calls each section's.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::optimize::Modes;
use crate::pricing::Pricing;
use crate::routing::RouteTable;

pub mod admin;
pub mod cache;
pub mod clouds;
pub mod env;
pub mod gateway_keys;
pub mod guard;
pub mod ledger;
pub mod limits;
pub mod optimize;
pub mod providers;
pub mod retry;
pub mod server;
pub mod telemetry;

pub use admin::{Admin, AdminConfig};
pub use cache::{CacheConfig, ModelCacheConfig};
pub use gateway_keys::{GatewayKey, GatewayKeyConfig};
pub use ledger::LedgerConfig;
pub use limits::{LimitsConfig, SharedLimits};
pub use optimize::{ModelOptimizeConfig, OptimizeConfig, PassesConfig};
pub use providers::{
    ClientAuth, KeySourceConfig, Provider, ProviderConfig, ProviderKind, RouteConfig, Routes,
    Timeouts, TimeoutsConfig,
};
pub use retry::RetryConfig;
pub use server::{parse_listen, Server, ServerConfig};
pub use telemetry::{otlp_traces_url, Telemetry, TelemetryConfig};

/// Where the shells read the path of the config file.
pub const ENV_CONFIG: &str = "TRIMGATE_CONFIG";

/// The config file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// Provider used when no route matches the requested model.
    pub default_provider: Option<String>,
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub routes: Vec<RouteConfig>,
    #[serde(default)]
    pub optimize: OptimizeConfig,
    /// Keys clients must present; when none are listed, any client on the listen address is served.
    #[serde(default)]
    pub gateway_keys: Vec<GatewayKeyConfig>,
    #[serde(default)]
    pub ledger: LedgerConfig,
    #[serde(default)]
    pub cache: CacheConfig,
    /// Prices matched before the bundled table.
    #[serde(default)]
    pub pricing: Vec<crate::pricing::PriceConfig>,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    #[serde(default)]
    pub admin: AdminConfig,
    #[serde(default)]
    pub retry: RetryConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub guard: guard::GuardConfig,
}

/// The validated configuration the gateway runs on.
#[derive(Debug)]
pub struct Config {
    pub server: Server,
    pub providers: Vec<Arc<Provider>>,
    pub routes: Routes,
    pub optimize: Modes,
    pub gateway_keys: Vec<GatewayKey>,
    /// The ledger's URL; `None` when there is no ledger.
    pub ledger_url: Option<String>,
    /// How long ledger rows are kept; `None` keeps them all.
    pub ledger_retention: Option<Duration>,
    pub pricing: Pricing,
    pub cache: crate::cache::Settings,
    pub telemetry: Telemetry,
    /// The admin API and `/ui` (`[admin]`).
    pub admin: Admin,
    pub retry: crate::retry::Settings,
    /// Virtual keys' limits counted in a Redis the replicas share (`[limits] redis`).
    pub limits: Option<SharedLimits>,
    /// Secrets in requests (`[guard]`).
    pub guard: crate::guard::Settings,
}

/// One problem found in a config, with the path of the value at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    pub path: String,
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {detail}")]
    Read { path: PathBuf, detail: String },
    #[error("config {path} is not valid: {detail}")]
    Parse { path: String, detail: String },
    #[error("config {path} has {} problem(s):\n{}", .problems.len(), problem_lines(.problems))]
    Invalid {
        path: String,
        problems: Vec<ConfigProblem>,
    },
}

/// TOML text as `T`. toml's Display quotes the offending line, which could be a key pasted
/// in by mistake: say where and what, never the line itself.
fn parse<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        ConfigError::Parse {
            path: origin.to_owned(),
            detail: match line {
                Some(line) => format!("line {line}: {}", redact_quoted(e.message().trim())),
                None => redact_quoted(e.message().trim()),
            },
        }
    })
}

/// Replaces each double-quoted value in a parser message with `"…"`: serde quotes the
/// value it rejected, and that value may be a secret.
fn redact_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut inside = false;
    for c in message.chars() {
        if c == '"' {
            if !inside {
                out.push_str("\"…\"");
            }
            inside = !inside;
        } else if !inside {
            out.push(c);
        }
    }
    out
}

fn problem_lines(problems: &[ConfigProblem]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("  {}: {}", p.path, p.message))
        .collect();
    lines.join("\n")
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Where the config lives by default: `<platform config dir>/trimgate/config.toml`.
pub fn default_config_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("dev", "trimgate", "trimgate")
        .map(|dirs| dirs.config_dir().join("config.toml"))
}

impl Config {
    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_owned(),
            detail: e.to_string(),
        })?;
        Config::from_toml(&text, &path.display().to_string())
    }

    /// Parses and validates TOML text; `origin` names it in messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let raw: GatewayConfig = parse(text, origin)?;
        raw.validate().map_err(|problems| ConfigError::Invalid {
            path: origin.to_owned(),
            problems,
        })
    }

    /// The file at `path`, if any, with the `TRIMGATE__` variables ([`env`]) over it. A
    /// value a variable set that does not fit is reported under the variable's name.
    pub fn load_layered(path: Option<&Path>, vars: &[env::Var]) -> Result<Config, ConfigError> {
        let (text, origin) = match path {
            Some(path) => (
                std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
                    path: path.to_owned(),
                    detail: e.to_string(),
                })?,
                path.display().to_string(),
            ),
            None => (String::new(), "the environment".to_owned()),
        };
        if vars.is_empty() {
            return Config::from_toml(&text, &origin);
        }
        let file: toml::Table = parse(&text, &origin)?;
        let layered = |vars: &[env::Var]| -> Result<GatewayConfig, ConfigError> {
            let mut table = file.clone();
            env::apply(&mut table, vars)?;
            toml::Value::Table(table)
                .try_into::<GatewayConfig>()
                .map_err(|e| ConfigError::Parse {
                    path: origin.clone(),
                    detail: redact_quoted(e.message().trim()),
                })
        };
        let raw = match layered(vars) {
            Ok(raw) => raw,
            Err(ConfigError::Parse { path, detail }) if path == origin => {
                // The variable at fault: the one without which the rest would do.
                let culprit = (0..vars.len()).find(|&i| {
                    let mut others = vars.to_vec();
                    others.remove(i);
                    layered(&others).is_ok()
                });
                return Err(ConfigError::Parse {
                    path: culprit.map_or(origin.clone(), |i| vars[i].name.clone()),
                    detail,
                });
            }
            Err(e) => return Err(e),
        };
        raw.validate().map_err(|problems| ConfigError::Invalid {
            path: format!("{origin} with the TRIMGATE__ variables"),
            problems: env::attribute(problems, vars),
        })
    }

    /// The config used when there is no file: one provider per well-known key found in
    /// the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `DEEPSEEK_API_KEY`,
    /// `GEMINI_API_KEY`).
    pub fn from_env_keys(present: impl Fn(&str) -> bool) -> Config {
        let mut raw = GatewayConfig::default();
        for kind in [
            ProviderKind::OpenAi,
            ProviderKind::Anthropic,
            ProviderKind::DeepSeek,
            ProviderKind::Gemini,
        ] {
            if let Some(var) = providers::default_key_env(kind) {
                if present(var) {
                    raw.providers.insert(
                        kind.as_str().to_owned(),
                        ProviderConfig {
                            kind: kind.as_str().to_owned(),
                            base_url: None,
                            anthropic_base_url: None,
                            api_key: None,
                            api_keys: None,
                            headers: BTreeMap::new(),
                            models: None,
                            dialects: None,
                            stream_usage: None,
                            timeouts: TimeoutsConfig::default(),
                            strict: None,
                            max_output_tokens: None,
                            client_auth: None,
                            client_org: None,
                            api_version: None,
                            entra: None,
                            region: None,
                            aws_profile: None,
                            bedrock_api: None,
                            project: None,
                            location: None,
                            credentials_file: None,
                        },
                    );
                }
            }
        }
        // Built from known-good defaults, so validation has nothing to reject.
        raw.validate().unwrap_or_else(|_| Config {
            server: Server::default(),
            providers: Vec::new(),
            routes: RouteTable::default(),
            optimize: Modes::default(),
            gateway_keys: Vec::new(),
            ledger_url: None,
            ledger_retention: None,
            pricing: Pricing::bundled(),
            cache: crate::cache::Settings::default(),
            telemetry: Telemetry::default(),
            admin: Admin::default(),
            retry: crate::retry::Settings::default(),
            limits: None,
            guard: crate::guard::Settings::default(),
        })
    }
}

/// A number of seconds from the file, checked; `default` when absent or wrong (reported).
pub(super) fn secs(
    value: Option<f64>,
    default: Duration,
    path: String,
    problems: &mut Vec<ConfigProblem>,
) -> Duration {
    match value {
        None => default,
        Some(v) if v.is_finite() && v > 0.0 && v < 1e9 => Duration::from_secs_f64(v),
        Some(v) => {
            problems.push(ConfigProblem {
                path,
                message: format!("must be a positive number of seconds, got {v}"),
            });
            default
        }
    }
}

impl GatewayConfig {
    /// Turns the raw file into the runtime config, or lists everything wrong with it.
    pub fn validate(self) -> Result<Config, Vec<ConfigProblem>> {
        let GatewayConfig {
            default_provider,
            server,
            providers,
            routes,
            optimize,
            gateway_keys,
            ledger,
            cache,
            pricing,
            telemetry,
            admin,
            retry,
            limits,
            guard,
        } = self;
        let mut problems = Vec::new();
        let retry = retry::validate_retry(retry, &mut problems);
        let admin = admin::validate_admin(admin, &mut problems);
        let limits = limits::validate_limits(limits, &mut problems);
        let telemetry = telemetry::validate_telemetry(telemetry, &mut problems);
        let server = server::validate_server(server, &mut problems);
        let optimize = optimize::validate_optimize(optimize, &mut problems);
        let gateway_keys = gateway_keys::validate_gateway_keys(gateway_keys, &mut problems);
        let ledger_retention = ledger::validate_retention(ledger.retention_days, &mut problems);
        let ledger_url = ledger::validate_ledger(ledger, &mut problems);
        let cache = cache::validate_cache(cache, &mut problems);
        let pricing = Pricing::new(&pricing).unwrap_or_else(|message| {
            problems.push(ConfigProblem {
                path: "pricing".into(),
                message,
            });
            Pricing::bundled()
        });

        let context = providers::ProviderContext {
            loopback: server.listen.ip().is_loopback(),
            gateway_keys: !gateway_keys.is_empty(),
        };
        let mut built: Vec<Arc<Provider>> = Vec::new();
        for (name, provider) in providers {
            if let Some(p) = providers::validate_provider(&name, provider, &context, &mut problems)
            {
                built.push(Arc::new(p));
            }
        }

        let routes = providers::validate_routes(routes, default_provider, &built, &mut problems);
        let provider_names: Vec<String> = built.iter().map(|p| p.name.clone()).collect();
        let guard = guard::validate_guard(guard, &provider_names, &mut problems);
        if problems.is_empty() {
            Ok(Config {
                server,
                providers: built,
                routes,
                optimize,
                gateway_keys,
                ledger_url,
                ledger_retention,
                pricing,
                cache,
                telemetry,
                admin,
                retry,
                limits,
                guard,
            })
        } else {
            Err(problems)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::providers::ENV_ANTHROPIC_KEY;
    use super::*;

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let text = r#"
            default_provider = "nope"
            [server]
            listen = "not-an-address"
            workers = 0
            [providers.a]
            kind = "openai"
            base_url = "ftp://x"
            [providers.b]
            kind = "martian"
            [providers.c]
            kind = "openai_compatible"
            [[routes]]
            match = "gpt-*"
            provider = "a"
            [[routes]]
            match = "x"
            provider = "missing"
            [[routes]]
            match = "y"
            provider = "zzz"
        "#;
        let Err(ConfigError::Invalid { problems, .. }) = Config::from_toml(text, "t.toml") else {
            panic!("config should be invalid");
        };
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        for expected in [
            "server.listen",
            "server.workers",
            "providers.a.base_url",
            "providers.b.kind",
            "providers.c.base_url",
            "routes[0].provider",
            "routes[1].provider",
            "routes[2].provider",
            "default_provider",
        ] {
            assert!(paths.contains(&expected), "missing {expected} in {paths:?}");
        }
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let text = "[providers.a]\nkind = \"openai\"\napi_kee = { env = \"X\" }\n";
        let err = Config::from_toml(text, "t.toml")
            .err()
            .map(|e| e.to_string());
        assert!(err.unwrap_or_default().contains("api_kee"));
    }

    #[test]
    fn keys_cannot_be_written_inline_and_errors_never_echo_them() {
        let text = "[providers.a]\nkind = \"openai\"\napi_key = \"sk-live-123\"\n";
        let err = Config::from_toml(text, "t.toml")
            .err()
            .map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.contains("line 3"), "{err}");
        assert!(!err.contains("sk-live-123"), "{err}");
    }

    #[test]
    fn env_keys_enable_providers_without_a_file() {
        let config = Config::from_env_keys(|var| var == ENV_ANTHROPIC_KEY);
        assert_eq!(config.providers.len(), 1);
        assert_eq!(config.providers[0].kind, ProviderKind::Anthropic);
        assert_eq!(config.server.listen.to_string(), "127.0.0.1:8788");
        let empty = Config::from_env_keys(|_| false);
        assert!(empty.providers.is_empty());
    }
}

//! Configuration: TOML parsed into raw `*Config` types (unknown keys rejected), then
//! validated once into the runtime types the gateway uses. Validation collects every
//! problem with its path (`routes[2].provider`) instead of stopping at the first.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use serde::Deserialize;

use crate::dialect::Dialect;
use crate::headers::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_DISCARD_BYTES, DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_HEADER_COUNT, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_JSON_DEPTH, DEFAULT_MAX_MODEL_BYTES, DEFAULT_MAX_STREAMS_PER_CONNECTION,
    DEFAULT_MAX_STREAM_BYTES, DEFAULT_PORT, DEFAULT_SERVICE_NAME, ENV_ANTHROPIC_KEY,
    ENV_DEEPSEEK_KEY, ENV_OPENAI_KEY, OTLP_TRACES_PATH,
};
use crate::optimize::modes::ModelRule;
use crate::optimize::{Modes, Plan, PlanPatch};
use crate::pricing::Pricing;
use crate::routing::{Destination, RouteSpec, RouteTable};
use crate::secrets::KeySource;

// ---------------------------------------------------------------------------------------------
// Raw types: what the TOML file says.

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
}

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

/// `[admin]`: the admin API the window uses, and the window at `/ui`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// `false` turns the admin API and `/ui` off; default `true`.
    pub enabled: Option<bool>,
}

/// `[telemetry]`: request traces exported over OTLP/HTTP; nothing is exported without an endpoint.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP base URL (`http://127.0.0.1:4318`); `/v1/traces` is
    /// appended unless the URL already ends in it.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported spans; default `trimgate`.
    pub service_name: Option<String>,
    /// Share of requests traced, 0 to 1; default 1.
    pub sample_ratio: Option<f64>,
}

/// `[ledger]`: where request rows go.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerConfig {
    /// `false` keeps no ledger (the log line per request stays).
    pub enabled: Option<bool>,
    /// `sqlite:///path/ledger.sqlite` or `postgres://user@host/db`; default: SQLite in the
    /// platform data dir.
    pub url: Option<String>,
    /// Rows older than this many days are deleted (at start and daily); none by default.
    pub retention_days: Option<u32>,
}

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayKeyConfig {
    pub name: String,
    pub key: KeySourceConfig,
    #[serde(default)]
    pub optimize: PassesConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// `host:port`; defaults to `127.0.0.1:8788`.
    pub listen: Option<String>,
    pub max_body_bytes: Option<usize>,
    /// Cap on one event of a provider's stream.
    pub max_event_bytes: Option<usize>,
    /// Cap on all of one provider stream.
    pub max_stream_bytes: Option<usize>,
    /// Cap on a provider's whole (non-streamed) answer.
    pub max_answer_bytes: Option<usize>,
    pub shutdown_grace_secs: Option<f64>,
    /// Serving threads; defaults to one per core.
    pub workers: Option<usize>,
    /// Longest `model` name accepted, in bytes.
    pub max_model_bytes: Option<usize>,
    /// Deepest nesting of arrays and objects accepted in a request body.
    pub max_json_depth: Option<usize>,
    /// Time a client has to send a whole request body.
    pub body_timeout_secs: Option<f64>,
    /// Bytes of an over-limit body read and thrown away after the 413, so the client
    /// reads the answer rather than a reset.
    pub max_discard_bytes: Option<usize>,
    /// Open connections at once; more wait in the kernel's queue.
    pub max_connections: Option<usize>,
    /// Requests being served at once; more get a 503 with `retry-after`.
    pub max_in_flight: Option<usize>,
    /// Headers one request may carry, and their names and values in bytes.
    pub max_header_count: Option<usize>,
    pub max_header_bytes: Option<usize>,
    /// A connection with no request open for this long is closed.
    pub idle_timeout_secs: Option<f64>,
    /// Requests open at once on one HTTP/2 connection.
    pub max_streams_per_connection: Option<usize>,
    /// Clients must present the gateway's local key (made on the first start and kept in
    /// an owner-only file next to the config), so other users of the machine cannot.
    pub local_key: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: String,
    pub base_url: Option<String>,
    /// Base URL of an Anthropic-compatible endpoint, for providers that offer one beside
    /// their OpenAI-compatible API (DeepSeek, Ollama).
    pub anthropic_base_url: Option<String>,
    pub api_key: Option<KeySourceConfig>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Model names this provider serves, listed by `GET /v1/models`.
    pub models: Option<Vec<String>>,
    /// Dialects this provider speaks natively; defaults follow `kind`.
    pub dialects: Option<Vec<String>>,
    /// Ask OpenAI-style streams for a usage chunk (`stream_options.include_usage`).
    pub stream_usage: Option<bool>,
    #[serde(default)]
    pub timeouts: TimeoutsConfig,
    /// Refuse, rather than drop and report, request fields unknown to the gateway when a
    /// request is translated for this provider.
    pub strict: Option<bool>,
    /// The most output tokens this provider accepts in one request; a translated request
    /// asking for more is lowered to it.
    pub max_output_tokens: Option<u64>,
    /// Whose credentials go to this provider: `never` (the configured key), `forward` (the
    /// client's own `Authorization`/`x-api-key`, e.g. a Claude subscription login), `auto`
    /// (the client's when no key is configured and the gateway listens on loopback).
    pub client_auth: Option<String>,
    /// Let a client's `OpenAI-Organization` and `OpenAI-Project` headers through, so it
    /// picks which organization the provider's key bills; off by default.
    pub client_org: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySourceConfig {
    pub env: Option<String>,
    pub file: Option<PathBuf>,
    /// An entry in the OS keychain (the desktop app's keys).
    pub keychain: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsConfig {
    pub connect_secs: Option<f64>,
    pub first_byte_secs: Option<f64>,
    pub idle_secs: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// A model name or glob (`claude-*`).
    #[serde(rename = "match")]
    pub pattern: String,
    pub provider: String,
    /// The provider's model name, when the public name is an alias.
    pub model: Option<String>,
    /// Tried in order when the provider fails before answering: `provider/model`, or a
    /// provider alone to send it the same model name.
    #[serde(default)]
    pub fallbacks: Vec<String>,
    /// Attempts for one request of this route, all steps together.
    pub max_attempts: Option<u32>,
}

// ---------------------------------------------------------------------------------------------
// Runtime types.

/// The closed set of provider kinds, whose quirks the codecs know too: it lives with them.
pub use trimgate_wire::provider::ProviderKind;

/// The key's environment variable a provider of this kind reads when the config names none.
fn default_key_env(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::OpenAi => Some(ENV_OPENAI_KEY),
        ProviderKind::Anthropic => Some(ENV_ANTHROPIC_KEY),
        ProviderKind::DeepSeek => Some(ENV_DEEPSEEK_KEY),
        ProviderKind::OpenAiCompatible => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    /// From sending the request to the response headers.
    pub first_byte: Duration,
    /// Longest silence between two chunks of a response body.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(600),
            idle: Duration::from_secs(300),
        }
    }
}

/// Whose credentials go to a provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// The configured key only; the client's credentials are never forwarded.
    Never,
    /// The client's own credentials when it sent any, else the configured key.
    Forward,
    /// The client's own credentials when no key is configured (loopback only).
    WhenNoKey,
}

impl ClientAuth {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::Never => "never",
            ClientAuth::Forward => "forward",
            ClientAuth::WhenNoKey => "auto",
        }
    }
}

#[derive(Debug)]
pub struct Provider {
    pub name: String,
    pub kind: ProviderKind,
    /// Base URL without a trailing slash, ending in the API version (`…/v1`).
    pub base_url: String,
    pub anthropic_base_url: Option<String>,
    pub key: KeySource,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub models: Vec<String>,
    pub dialects: Vec<Dialect>,
    pub stream_usage: bool,
    pub timeouts: Timeouts,
    /// Refuse unknown fields when translating for this provider.
    pub strict: bool,
    pub max_output_tokens: Option<u64>,
    pub client_auth: ClientAuth,
    /// Whether a client's `openai-organization`/`openai-project` headers go on.
    pub client_org: bool,
}

/// The route table over this config's providers.
pub type Routes = RouteTable<Provider>;

impl Destination for Provider {
    fn name(&self) -> &str {
        &self.name
    }

    fn models(&self) -> &[String] {
        &self.models
    }
}

impl Provider {
    pub fn speaks(&self, dialect: Dialect) -> bool {
        self.dialects.contains(&dialect)
    }

    /// The base URL to use for requests in `dialect`.
    pub fn base_for(&self, dialect: Dialect) -> &str {
        match (dialect, &self.anthropic_base_url) {
            (Dialect::AnthropicMessages, Some(url)) => url,
            _ => &self.base_url,
        }
    }

    /// How the key is sent for `dialect`: Anthropic's `x-api-key`, else a bearer token.
    pub fn uses_x_api_key(&self, dialect: Dialect) -> bool {
        dialect == Dialect::AnthropicMessages
    }

    pub fn dialect_names(&self) -> String {
        let names: Vec<&str> = self.dialects.iter().map(|d| d.as_str()).collect();
        names.join(" and ")
    }
}

#[derive(Clone, Debug)]
pub struct Server {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    /// A provider's stream event larger than this ends the stream with an error event.
    pub max_event_bytes: usize,
    /// A provider's stream larger than this in all is cut with an error event.
    pub max_stream_bytes: usize,
    /// A provider's whole answer larger than this is a 502.
    pub max_answer_bytes: usize,
    pub shutdown_grace: Duration,
    /// Serving threads (see [`crate::workers`]).
    pub workers: usize,
    pub max_model_bytes: usize,
    pub max_json_depth: usize,
    pub body_timeout: Duration,
    pub max_discard_bytes: usize,
    pub max_connections: usize,
    pub max_in_flight: usize,
    pub max_header_count: usize,
    pub max_header_bytes: usize,
    pub idle_timeout: Duration,
    pub max_streams_per_connection: usize,
    /// Clients must present the local key (see [`crate::local_key`]).
    pub local_key: bool,
}

impl Default for Server {
    fn default() -> Self {
        Server {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), DEFAULT_PORT),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            shutdown_grace: Duration::from_secs(10),
            workers: crate::workers::default_count(),
            max_model_bytes: DEFAULT_MAX_MODEL_BYTES,
            max_json_depth: DEFAULT_MAX_JSON_DEPTH,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_discard_bytes: DEFAULT_MAX_DISCARD_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_header_count: DEFAULT_MAX_HEADER_COUNT,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_streams_per_connection: DEFAULT_MAX_STREAMS_PER_CONNECTION,
            local_key: false,
        }
    }
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
    /// The admin API and `/ui` are served (`[admin] enabled`).
    pub admin_enabled: bool,
    pub retry: crate::retry::Settings,
}

/// Where request traces go, and how many.
#[derive(Clone, Debug, PartialEq)]
pub struct Telemetry {
    /// The full OTLP/HTTP traces URL (`…/v1/traces`); `None` exports nothing.
    pub otlp_endpoint: Option<String>,
    pub service_name: String,
    /// Share of requests traced, in `0.0..=1.0`.
    pub sample_ratio: f64,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            otlp_endpoint: None,
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            sample_ratio: 1.0,
        }
    }
}

/// A key a client presents to use the gateway, with its optimizer overrides.
#[derive(Debug, Clone)]
pub struct GatewayKey {
    pub name: String,
    pub key: KeySource,
    pub optimize: PlanPatch,
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
        // toml's Display quotes the offending line, which could be a key pasted in by
        // mistake: say where and what, never the line itself.
        let raw: GatewayConfig = toml::from_str(text).map_err(|e| {
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
        })?;
        raw.validate().map_err(|problems| ConfigError::Invalid {
            path: origin.to_owned(),
            problems,
        })
    }

    /// The config used when there is no file: one provider per well-known key found in
    /// the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `DEEPSEEK_API_KEY`).
    pub fn from_env_keys(present: impl Fn(&str) -> bool) -> Config {
        let mut raw = GatewayConfig::default();
        for kind in [
            ProviderKind::OpenAi,
            ProviderKind::Anthropic,
            ProviderKind::DeepSeek,
        ] {
            if let Some(var) = default_key_env(kind) {
                if present(var) {
                    raw.providers.insert(
                        kind.as_str().to_owned(),
                        ProviderConfig {
                            kind: kind.as_str().to_owned(),
                            base_url: None,
                            anthropic_base_url: None,
                            api_key: None,
                            headers: BTreeMap::new(),
                            models: None,
                            dialects: None,
                            stream_usage: None,
                            timeouts: TimeoutsConfig::default(),
                            strict: None,
                            max_output_tokens: None,
                            client_auth: None,
                            client_org: None,
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
            admin_enabled: true,
            retry: crate::retry::Settings::default(),
        })
    }
}

fn secs(
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

fn check_url(url: &str, path: String, problems: &mut Vec<ConfigProblem>) -> String {
    let trimmed = url.trim_end_matches('/');
    match trimmed.parse::<http::Uri>() {
        Ok(uri) if matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some() => {
            trimmed.to_owned()
        }
        Ok(_) => {
            problems.push(ConfigProblem {
                path,
                message: format!(
                    "{:?} must be an http:// or https:// URL with a host",
                    crate::secrets::redact_url(url)
                ),
            });
            String::new()
        }
        Err(e) => {
            problems.push(ConfigProblem {
                path,
                message: format!("{:?} is not a URL: {e}", crate::secrets::redact_url(url)),
            });
            String::new()
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
        } = self;
        let AdminConfig { enabled } = admin;
        let mut problems = Vec::new();
        let retry = validate_retry(retry, &mut problems);
        let telemetry = validate_telemetry(telemetry, &mut problems);
        let server = validate_server(server, &mut problems);
        let optimize = validate_optimize(optimize, &mut problems);
        let gateway_keys = validate_gateway_keys(gateway_keys, &mut problems);
        let ledger_retention = match ledger.retention_days {
            Some(0) => {
                problems.push(ConfigProblem {
                    path: "ledger.retention_days".into(),
                    message: "must be at least 1 (leave it out to keep every row)".into(),
                });
                None
            }
            days => days.map(|d| Duration::from_secs(u64::from(d) * 86_400)),
        };
        let ledger_url = validate_ledger(ledger, &mut problems);
        let cache = validate_cache(cache, &mut problems);
        let pricing = Pricing::new(&pricing).unwrap_or_else(|message| {
            problems.push(ConfigProblem {
                path: "pricing".into(),
                message,
            });
            Pricing::bundled()
        });

        let context = ProviderContext {
            loopback: server.listen.ip().is_loopback(),
            gateway_keys: !gateway_keys.is_empty(),
        };
        let mut built: Vec<Arc<Provider>> = Vec::new();
        for (name, provider) in providers {
            if let Some(p) = validate_provider(&name, provider, &context, &mut problems) {
                built.push(Arc::new(p));
            }
        }

        let find = |name: &str| built.iter().find(|p| p.name == name).cloned();
        let mut specs = Vec::new();
        for (i, route) in routes.into_iter().enumerate() {
            let RouteConfig {
                pattern,
                provider,
                model,
                fallbacks,
                max_attempts,
            } = route;
            let path = format!("routes[{i}]");
            let Some(target) = find(&provider) else {
                problems.push(ConfigProblem {
                    path: format!("{path}.provider"),
                    message: format!("no provider named {provider:?} is configured"),
                });
                continue;
            };
            if pattern.is_empty() {
                problems.push(ConfigProblem {
                    path: format!("{path}.match"),
                    message: "must not be empty".into(),
                });
                continue;
            }
            if model.as_deref() == Some("") {
                problems.push(ConfigProblem {
                    path: format!("{path}.model"),
                    message: "must not be empty".into(),
                });
                continue;
            }
            if max_attempts == Some(0) {
                problems.push(ConfigProblem {
                    path: format!("{path}.max_attempts"),
                    message: "must be at least 1".into(),
                });
            }
            let first = (target.name.clone(), model.clone().unwrap_or_default());
            let fallbacks = validate_fallbacks(&path, first, fallbacks, &find, &mut problems);
            specs.push((
                path,
                RouteSpec {
                    pattern,
                    provider: target,
                    model,
                    fallbacks,
                    max_attempts,
                },
            ));
        }
        // Providers of a well-known kind also serve their kind's model families, after
        // every explicit route, so a config that only lists providers still routes.
        for provider in &built {
            for pattern in provider.kind.implicit_patterns() {
                specs.push((
                    format!("providers.{}.kind", provider.name),
                    RouteSpec {
                        pattern: (*pattern).to_owned(),
                        provider: provider.clone(),
                        model: None,
                        fallbacks: Vec::new(),
                        max_attempts: None,
                    },
                ));
            }
        }
        let default = match default_provider {
            None => None,
            Some(name) => {
                let found = find(&name);
                if found.is_none() {
                    problems.push(ConfigProblem {
                        path: "default_provider".into(),
                        message: format!("no provider named {name:?} is configured"),
                    });
                }
                found
            }
        };
        let (routes, bad) = RouteTable::build(specs, built.clone(), default);
        problems.extend(bad.into_iter().map(|b| ConfigProblem {
            path: b.path,
            message: b.message,
        }));
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
                admin_enabled: enabled.unwrap_or(true),
                retry,
            })
        } else {
            Err(problems)
        }
    }
}

/// A route's fallback chain: each entry names a configured provider, and no step (the
/// route's own included) comes twice, which would be a cycle.
fn validate_fallbacks(
    path: &str,
    first: (String, String),
    entries: Vec<String>,
    find: &dyn Fn(&str) -> Option<Arc<Provider>>,
    problems: &mut Vec<ConfigProblem>,
) -> Vec<crate::routing::Step<Provider>> {
    let mut seen = vec![first];
    let mut steps = Vec::new();
    for (j, entry) in entries.into_iter().enumerate() {
        let at = format!("{path}.fallbacks[{j}]");
        let (name, model) = match entry.split_once('/') {
            Some((name, model)) => (name, Some(model)),
            None => (entry.as_str(), None),
        };
        if model == Some("") || name.is_empty() {
            problems.push(ConfigProblem {
                path: at,
                message: format!("{entry:?} is not `provider/model` or `provider`"),
            });
            continue;
        }
        let Some(provider) = find(name) else {
            problems.push(ConfigProblem {
                path: at,
                message: format!("no provider named {name:?} is configured"),
            });
            continue;
        };
        let step = (name.to_owned(), model.unwrap_or_default().to_owned());
        if seen.contains(&step) {
            problems.push(ConfigProblem {
                path: at,
                message: format!("{entry:?} is already a step of this chain: a cycle"),
            });
            continue;
        }
        seen.push(step);
        steps.push(crate::routing::Step {
            provider,
            model: model.map(str::to_owned),
        });
    }
    steps
}

fn validate_retry(retry: RetryConfig, problems: &mut Vec<ConfigProblem>) -> crate::retry::Settings {
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

/// One set of pass settings as a patch; problems are reported under `path`.
fn passes_patch(
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

fn validate_optimize(optimize: OptimizeConfig, problems: &mut Vec<ConfigProblem>) -> Modes {
    let OptimizeConfig {
        tool_output,
        terse,
        prune,
        squeeze,
        originals_mib,
        holdout,
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
        ..Modes::default()
    };
    if let Some(mib) = originals_mib {
        modes.originals_bytes = mib.saturating_mul(1024 * 1024);
    }
    modes
}

fn holdout_permille(share: f64, path: &str, problems: &mut Vec<ConfigProblem>) -> u16 {
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

fn validate_gateway_keys(
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
        out.push(GatewayKey {
            name: k.name,
            key,
            optimize,
        });
    }
    out
}

/// A `{ env = … }` or `{ file = … }` reference, checked.
fn key_source(
    source: Option<KeySourceConfig>,
    path: &str,
    problems: &mut Vec<ConfigProblem>,
) -> Option<KeySource> {
    match source? {
        KeySourceConfig {
            env: Some(var),
            file: None,
            keychain: None,
        } if !var.is_empty() => Some(KeySource::Env(var)),
        KeySourceConfig {
            env: None,
            file: Some(path),
            keychain: None,
        } => Some(KeySource::File(path)),
        KeySourceConfig {
            env: None,
            file: None,
            keychain: Some(name),
        } if !name.is_empty() => Some(KeySource::Keychain(name)),
        _ => {
            problems.push(ConfigProblem {
                path: path.to_owned(),
                message: "give exactly one of { env = \"VAR\" }, { file = \"/path\" } or { keychain = \"name\" }; keys themselves never go in the config".into(),
            });
            None
        }
    }
}

fn validate_cache(cache: CacheConfig, problems: &mut Vec<ConfigProblem>) -> crate::cache::Settings {
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

fn validate_ledger(ledger: LedgerConfig, problems: &mut Vec<ConfigProblem>) -> Option<String> {
    if ledger.enabled == Some(false) {
        return None;
    }
    match ledger.url {
        None => crate::ledger::default_path().map(|p| crate::ledger::sqlite_url(&p)),
        Some(url)
            if url.starts_with("sqlite:")
                || url.starts_with("postgres://")
                || url.starts_with("postgresql://") =>
        {
            Some(url)
        }
        Some(_) => {
            problems.push(ConfigProblem {
                path: "ledger.url".into(),
                message: "must be a sqlite:// or postgres:// URL".into(),
            });
            None
        }
    }
}

fn validate_telemetry(telemetry: TelemetryConfig, problems: &mut Vec<ConfigProblem>) -> Telemetry {
    let TelemetryConfig {
        otlp_endpoint,
        service_name,
        sample_ratio,
    } = telemetry;
    let defaults = Telemetry::default();
    let otlp_endpoint = otlp_endpoint.and_then(|url| {
        otlp_traces_url(&url)
            .map_err(|message| {
                problems.push(ConfigProblem {
                    path: "telemetry.otlp_endpoint".into(),
                    message,
                })
            })
            .ok()
    });
    let service_name = match service_name {
        None => defaults.service_name,
        Some(name) if !name.trim().is_empty() => name.trim().to_owned(),
        Some(_) => {
            problems.push(ConfigProblem {
                path: "telemetry.service_name".into(),
                message: "must not be empty (leave it out for \"trimgate\")".into(),
            });
            defaults.service_name
        }
    };
    let sample_ratio = match sample_ratio {
        None => defaults.sample_ratio,
        Some(r) if (0.0..=1.0).contains(&r) => r,
        Some(r) => {
            problems.push(ConfigProblem {
                path: "telemetry.sample_ratio".into(),
                message: format!("must be a share between 0 and 1, got {r}"),
            });
            defaults.sample_ratio
        }
    };
    Telemetry {
        otlp_endpoint,
        service_name,
        sample_ratio,
    }
}

/// The OTLP/HTTP traces URL for a collector's base URL: `/v1/traces` is appended unless
/// the URL already ends in it (the rule of `OTEL_EXPORTER_OTLP_ENDPOINT`).
pub fn otlp_traces_url(text: &str) -> Result<String, String> {
    let trimmed = text.trim().trim_end_matches('/');
    let uri = trimmed
        .parse::<http::Uri>()
        .map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return Err(format!(
            "{text:?} must be an http:// or https:// URL with a host, like http://127.0.0.1:4318"
        ));
    }
    if uri.query().is_some() {
        return Err(format!("{text:?} must not have a query string"));
    }
    if trimmed.ends_with(OTLP_TRACES_PATH) {
        Ok(trimmed.to_owned())
    } else {
        Ok(format!("{trimmed}{OTLP_TRACES_PATH}"))
    }
}

fn validate_server(server: ServerConfig, problems: &mut Vec<ConfigProblem>) -> Server {
    let ServerConfig {
        listen,
        max_body_bytes,
        max_event_bytes,
        max_stream_bytes,
        max_answer_bytes,
        shutdown_grace_secs,
        workers,
        max_model_bytes,
        max_json_depth,
        body_timeout_secs,
        max_discard_bytes,
        max_connections,
        max_in_flight,
        max_header_count,
        max_header_bytes,
        idle_timeout_secs,
        max_streams_per_connection,
        local_key,
    } = server;
    let defaults = Server::default();
    let listen = match listen {
        None => defaults.listen,
        Some(text) => match parse_listen(&text) {
            Ok(addr) => addr,
            Err(message) => {
                problems.push(ConfigProblem {
                    path: "server.listen".into(),
                    message,
                });
                defaults.listen
            }
        },
    };
    let max_body_bytes = positive(
        max_body_bytes,
        defaults.max_body_bytes,
        "server.max_body_bytes",
        problems,
    );
    let max_event_bytes = positive(
        max_event_bytes,
        defaults.max_event_bytes,
        "server.max_event_bytes",
        problems,
    );
    let max_stream_bytes = positive(
        max_stream_bytes,
        defaults.max_stream_bytes,
        "server.max_stream_bytes",
        problems,
    );
    let max_answer_bytes = positive(
        max_answer_bytes,
        defaults.max_answer_bytes,
        "server.max_answer_bytes",
        problems,
    );
    let max_model_bytes = positive(
        max_model_bytes,
        defaults.max_model_bytes,
        "server.max_model_bytes",
        problems,
    );
    let max_json_depth = positive(
        max_json_depth,
        defaults.max_json_depth,
        "server.max_json_depth",
        problems,
    );
    let max_connections = positive(
        max_connections,
        defaults.max_connections,
        "server.max_connections",
        problems,
    );
    let max_in_flight = positive(
        max_in_flight,
        defaults.max_in_flight,
        "server.max_in_flight",
        problems,
    );
    let max_header_count = positive(
        max_header_count,
        defaults.max_header_count,
        "server.max_header_count",
        problems,
    );
    let max_header_bytes = positive(
        max_header_bytes,
        defaults.max_header_bytes,
        "server.max_header_bytes",
        problems,
    );
    let max_streams_per_connection = positive(
        max_streams_per_connection,
        defaults.max_streams_per_connection,
        "server.max_streams_per_connection",
        problems,
    );
    let idle_timeout = secs(
        idle_timeout_secs,
        defaults.idle_timeout,
        "server.idle_timeout_secs".into(),
        problems,
    );
    // Zero is allowed: the connection is closed right after the 413.
    let max_discard_bytes = max_discard_bytes.unwrap_or(defaults.max_discard_bytes);
    let body_timeout = secs(
        body_timeout_secs,
        defaults.body_timeout,
        "server.body_timeout_secs".into(),
        problems,
    );
    let shutdown_grace = secs(
        shutdown_grace_secs,
        defaults.shutdown_grace,
        "server.shutdown_grace_secs".into(),
        problems,
    );
    let workers = match workers {
        None => defaults.workers,
        Some(n) if (1..=MAX_WORKERS).contains(&n) => n,
        Some(_) => {
            problems.push(ConfigProblem {
                path: "server.workers".into(),
                message: format!("must be between 1 and {MAX_WORKERS}"),
            });
            defaults.workers
        }
    };
    Server {
        listen,
        max_body_bytes,
        max_event_bytes,
        max_stream_bytes,
        max_answer_bytes,
        shutdown_grace,
        workers,
        max_model_bytes,
        max_json_depth,
        body_timeout,
        max_discard_bytes,
        max_connections,
        max_in_flight,
        max_header_count,
        max_header_bytes,
        idle_timeout,
        max_streams_per_connection,
        local_key: local_key.unwrap_or(defaults.local_key),
    }
}

const MAX_WORKERS: usize = 256;

/// A size that must be above zero; the default when absent or zero (reported).
fn positive(
    value: Option<usize>,
    default: usize,
    path: &str,
    problems: &mut Vec<ConfigProblem>,
) -> usize {
    match value {
        Some(0) => {
            problems.push(ConfigProblem {
                path: path.into(),
                message: "must be greater than 0".into(),
            });
            default
        }
        Some(n) => n,
        None => default,
    }
}

/// Accepts `host:port`, `:port` or a bare port; a bare port binds loopback.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        if let Ok(port) = port.parse::<u16>() {
            return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
        }
    }
    Err(format!(
        "{text:?} is not an address: use host:port with an IP, like 127.0.0.1:{DEFAULT_PORT}"
    ))
}

/// What the rest of the config says that a provider's validation depends on.
struct ProviderContext {
    /// The gateway listens on loopback only.
    loopback: bool,
    /// Clients present gateway keys, in the same headers their own credentials would use.
    gateway_keys: bool,
}

fn validate_provider(
    name: &str,
    provider: ProviderConfig,
    context: &ProviderContext,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Provider> {
    let ProviderConfig {
        kind,
        base_url,
        anthropic_base_url,
        api_key,
        headers,
        models,
        dialects,
        stream_usage,
        timeouts,
        strict,
        max_output_tokens,
        client_auth,
        client_org,
    } = provider;
    let at = |field: &str| format!("providers.{name}.{field}");
    let before = problems.len();
    if name.is_empty() || name.contains('/') {
        problems.push(ConfigProblem {
            path: format!("providers.{name:?}"),
            message: "a provider name must be non-empty and contain no '/'".into(),
        });
    }
    let Some(kind_parsed) = ProviderKind::parse(&kind) else {
        problems.push(ConfigProblem {
            path: at("kind"),
            message: format!(
                "unknown kind {kind:?}; expected one of openai, anthropic, deepseek, openai_compatible"
            ),
        });
        return None;
    };
    let base_url = match base_url.as_deref().or(kind_parsed.default_base_url()) {
        Some(url) => check_url(url, at("base_url"), problems),
        None => {
            problems.push(ConfigProblem {
                path: at("base_url"),
                message: "is required for kind openai_compatible (e.g. http://127.0.0.1:11434/v1 for Ollama)".into(),
            });
            String::new()
        }
    };
    let anthropic_base_url = anthropic_base_url
        .as_deref()
        .or(kind_parsed.default_anthropic_base_url())
        .map(|url| check_url(url, at("anthropic_base_url"), problems));
    let key = match api_key {
        None => match default_key_env(kind_parsed) {
            Some(var) => KeySource::Env(var.to_owned()),
            None => KeySource::None,
        },
        Some(source) => {
            key_source(Some(source), &at("api_key"), problems).unwrap_or(KeySource::None)
        }
    };
    let mut header_list = Vec::new();
    for (header, value) in headers {
        let parsed_name = HeaderName::from_bytes(header.as_bytes());
        let parsed_value = HeaderValue::from_str(&value);
        match (parsed_name, parsed_value) {
            (Ok(n), Ok(v)) => header_list.push((n, v)),
            _ => problems.push(ConfigProblem {
                path: at(&format!("headers.{header}")),
                message: "is not a valid HTTP header name and value".into(),
            }),
        }
    }
    let dialects = match dialects {
        None => kind_parsed.default_dialects(),
        Some(list) => {
            let mut out = Vec::new();
            for (i, d) in list.iter().enumerate() {
                match Dialect::parse(d) {
                    Some(parsed) => out.push(parsed),
                    None => problems.push(ConfigProblem {
                        path: at(&format!("dialects[{i}]")),
                        message: format!(
                            "unknown dialect {d:?}; expected chat, responses or messages"
                        ),
                    }),
                }
            }
            if out.is_empty() && problems.len() == before {
                problems.push(ConfigProblem {
                    path: at("dialects"),
                    message: "must name at least one of chat, responses or messages".into(),
                });
            }
            out
        }
    };
    let defaults = Timeouts::default();
    let TimeoutsConfig {
        connect_secs,
        first_byte_secs,
        idle_secs,
    } = timeouts;
    let timeouts = Timeouts {
        connect: secs(
            connect_secs,
            defaults.connect,
            at("timeouts.connect_secs"),
            problems,
        ),
        first_byte: secs(
            first_byte_secs,
            defaults.first_byte,
            at("timeouts.first_byte_secs"),
            problems,
        ),
        idle: secs(idle_secs, defaults.idle, at("timeouts.idle_secs"), problems),
    };
    let client_auth = match client_auth.as_deref() {
        None if kind_parsed == ProviderKind::Anthropic => ClientAuth::WhenNoKey,
        None | Some("never") => ClientAuth::Never,
        Some("auto") => ClientAuth::WhenNoKey,
        Some("forward") => ClientAuth::Forward,
        Some(other) => {
            problems.push(ConfigProblem {
                path: at("client_auth"),
                message: format!("unknown value {other:?}; expected never, forward or auto"),
            });
            ClientAuth::Never
        }
    };
    // With gateway keys, the client's credential headers hold its gateway key, which must
    // not leave the gateway; off loopback, `auto` would hand any caller's login onward.
    let client_auth = match client_auth {
        ClientAuth::Forward if context.gateway_keys => {
            problems.push(ConfigProblem {
                path: at("client_auth"),
                message: "cannot be forward while gateway keys are configured: clients send their gateway key in the same headers".into(),
            });
            ClientAuth::Never
        }
        ClientAuth::WhenNoKey if context.gateway_keys || !context.loopback => ClientAuth::Never,
        other => other,
    };
    if max_output_tokens == Some(0) {
        problems.push(ConfigProblem {
            path: at("max_output_tokens"),
            message: "must be at least 1 (leave it out for no limit)".into(),
        });
    }
    let models = models.unwrap_or_else(|| {
        kind_parsed
            .default_models()
            .iter()
            .map(|m| (*m).to_owned())
            .collect()
    });
    if problems.len() > before {
        return None;
    }
    Some(Provider {
        name: name.to_owned(),
        kind: kind_parsed,
        base_url,
        anthropic_base_url,
        key,
        headers: header_list,
        models,
        dialects,
        stream_usage: stream_usage.unwrap_or(true),
        timeouts,
        strict: strict.unwrap_or(false),
        max_output_tokens: max_output_tokens.or(kind_parsed.default_max_output_tokens()),
        client_auth,
        client_org: client_org.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
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
    fn the_local_key_is_off_unless_the_server_asks_for_it() {
        let off = Config::from_toml("", "t.toml").map(|c| c.server.local_key);
        assert_eq!(off.ok(), Some(false));
        let on = Config::from_toml("[server]\nlocal_key = true\n", "t.toml");
        assert_eq!(on.map(|c| c.server.local_key).ok(), Some(true));
        let wrong = Config::from_toml("[server]\nlocal_key = \"yes\"\n", "t.toml");
        assert!(wrong.is_err());
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

    #[test]
    fn telemetry_is_off_unless_an_endpoint_is_given() {
        let config = Config::from_toml("", "t.toml").map(|c| c.telemetry);
        assert_eq!(config.ok(), Some(Telemetry::default()));
        let text = "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/\"\nsample_ratio = 0.25\n";
        let telemetry = Config::from_toml(text, "t.toml").map(|c| c.telemetry);
        assert_eq!(
            telemetry.ok(),
            Some(Telemetry {
                otlp_endpoint: Some("http://127.0.0.1:4318/v1/traces".into()),
                service_name: "trimgate".into(),
                sample_ratio: 0.25,
            })
        );
    }

    #[test]
    fn otlp_endpoints_get_the_traces_path_once() {
        for (given, expected) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            (
                "https://otel.example.com/",
                "https://otel.example.com/v1/traces",
            ),
            ("http://collector/otlp", "http://collector/otlp/v1/traces"),
            (
                "http://collector:4318/v1/traces",
                "http://collector:4318/v1/traces",
            ),
        ] {
            assert_eq!(otlp_traces_url(given).as_deref(), Ok(expected), "{given}");
        }
        for bad in [
            "127.0.0.1:4318",
            "grpc://collector:4317",
            "http://",
            "http://x/?a=b",
        ] {
            assert!(otlp_traces_url(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn bad_telemetry_values_are_reported_with_their_paths() {
        let text = r#"
            [telemetry]
            otlp_endpoint = "ftp://collector:4318"
            service_name = " "
            sample_ratio = 1.5
        "#;
        let Err(ConfigError::Invalid { problems, .. }) = Config::from_toml(text, "t.toml") else {
            panic!("config should be invalid");
        };
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "telemetry.otlp_endpoint",
                "telemetry.service_name",
                "telemetry.sample_ratio"
            ]
        );
        for ratio in ["-0.1", "nan", "inf"] {
            let text = format!("[telemetry]\nsample_ratio = {ratio}\n");
            let err = Config::from_toml(&text, "t.toml")
                .err()
                .map(|e| e.to_string());
            assert!(
                err.as_deref()
                    .is_some_and(|e| e.contains("telemetry.sample_ratio")),
                "{ratio}: {err:?}"
            );
        }
        let err = Config::from_toml("[telemetry]\notlp_endpont = \"x\"\n", "t.toml")
            .err()
            .map(|e| e.to_string());
        assert!(err.unwrap_or_default().contains("otlp_endpont"));
    }

    #[test]
    fn listen_accepts_bare_ports() {
        assert_eq!(
            parse_listen("9000").map(|a| a.to_string()),
            Ok("127.0.0.1:9000".into())
        );
        assert_eq!(
            parse_listen("0.0.0.0:80").map(|a| a.to_string()),
            Ok("0.0.0.0:80".into())
        );
        assert!(parse_listen("example.com:80").is_err());
    }
}

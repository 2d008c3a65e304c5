//! `[providers.*]` and `[[routes]]`: each provider, where its key comes from, and the
//! routes over them, checked.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use serde::Deserialize;

use super::{secs, ConfigProblem};
use crate::dialect::Dialect;
use crate::routing::{Destination, RouteSpec, RouteTable};
use crate::secrets::KeySource;

/// The environment variables a well-known provider's key is read from when the config
/// names none.
pub const ENV_OPENAI_KEY: &str = "OPENAI_API_KEY";
pub const ENV_ANTHROPIC_KEY: &str = "ANTHROPIC_API_KEY";
pub const ENV_DEEPSEEK_KEY: &str = "DEEPSEEK_API_KEY";
/// Google AI Studio's key, as Gemini CLI and the `google-genai` SDK read it.
pub const ENV_GEMINI_KEY: &str = "GEMINI_API_KEY";
/// Azure OpenAI's key, as the `openai` SDKs' `AzureOpenAI` clients read it.
pub const ENV_AZURE_OPENAI_KEY: &str = "AZURE_OPENAI_API_KEY";
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: String,
    pub base_url: Option<String>,
    /// Base URL of an Anthropic-compatible endpoint, for providers that offer one beside
    /// their OpenAI-compatible API (DeepSeek, Ollama).
    pub anthropic_base_url: Option<String>,
    pub api_key: Option<KeySourceConfig>,
    /// A pool of keys instead of one: a session sticks to one of them (its prompt cache
    /// and encrypted reasoning are tied to the key), and moves when that one cools down.
    pub api_keys: Option<Vec<KeySourceConfig>>,
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
    /// Azure, Bedrock and Vertex: see [`super::clouds::CloudConfig`], where each is
    /// documented. Listed here because a flattened table cannot refuse unknown fields.
    pub api_version: Option<String>,
    pub entra: Option<super::clouds::EntraConfig>,
    pub region: Option<String>,
    pub aws_profile: Option<String>,
    pub bedrock_api: Option<String>,
    pub project: Option<String>,
    pub location: Option<String>,
    pub credentials_file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySourceConfig {
    pub env: Option<String>,
    pub file: Option<PathBuf>,
    /// An entry in the OS keychain (the desktop app's keys).
    pub keychain: Option<String>,
    /// How a pool key is named in the ledger and logs (never the key itself); defaults to
    /// its variable, file or keychain entry name.
    pub name: Option<String>,
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

/// The closed set of provider kinds, whose quirks the codecs know too: it lives with them.
pub use trimgate_wire::provider::ProviderKind;

/// The key's environment variable a provider of this kind reads when the config names none.
pub(super) fn default_key_env(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::OpenAi => Some(ENV_OPENAI_KEY),
        ProviderKind::Anthropic => Some(ENV_ANTHROPIC_KEY),
        ProviderKind::DeepSeek => Some(ENV_DEEPSEEK_KEY),
        ProviderKind::Gemini => Some(ENV_GEMINI_KEY),
        ProviderKind::AzureOpenAi => Some(ENV_AZURE_OPENAI_KEY),
        // Signed with the AWS chain's or Google's credentials unless a key is named.
        ProviderKind::OpenAiCompatible | ProviderKind::Bedrock | ProviderKind::Vertex => None,
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
    /// The key; with a pool, its first.
    pub key: KeySource,
    /// `api_keys`: the keys sessions are spread over; empty with `api_key`.
    pub pool: Vec<PoolKey>,
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
    /// Azure, Bedrock or Vertex: what the cloud's URLs and credentials are made from.
    pub cloud: Option<super::clouds::Cloud>,
}

/// One key of a provider's pool, with the name the ledger shows for it.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolKey {
    pub name: String,
    pub source: KeySource,
}

/// The name a pool key goes by when the config gives none: where it is read from.
fn pool_key_name(source: &KeySource) -> String {
    match source {
        KeySource::Env(var) => var.clone(),
        KeySource::File(path) => path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        KeySource::Keychain(entry) => entry.clone(),
        KeySource::None => "none".to_owned(),
    }
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

    /// The header the key goes in for `dialect`, as the key alone: Anthropic's
    /// `x-api-key`, Google's `x-goog-api-key`, Azure's `api-key`; `None` for a bearer
    /// token in `authorization` (Bedrock's API keys, Google access tokens among them).
    pub fn key_header(&self, dialect: Dialect) -> Option<http::HeaderName> {
        match self.kind {
            ProviderKind::AzureOpenAi => return Some(http::HeaderName::from_static("api-key")),
            ProviderKind::Bedrock | ProviderKind::Vertex => return None,
            _ => {}
        }
        match dialect {
            Dialect::AnthropicMessages => Some(crate::headers::X_API_KEY),
            Dialect::Gemini => Some(crate::headers::X_GOOG_API_KEY),
            Dialect::OpenAiChat | Dialect::OpenAiResponses => None,
        }
    }

    pub fn dialect_names(&self) -> String {
        let names: Vec<&str> = self.dialects.iter().map(|d| d.as_str()).collect();
        names.join(" and ")
    }
}

pub(super) fn check_url(url: &str, path: String, problems: &mut Vec<ConfigProblem>) -> String {
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

/// A `{ env = … }` or `{ file = … }` reference, checked.
pub(super) fn key_source(
    source: Option<KeySourceConfig>,
    path: &str,
    problems: &mut Vec<ConfigProblem>,
) -> Option<KeySource> {
    match source? {
        KeySourceConfig {
            env: Some(var),
            file: None,
            keychain: None,
            ..
        } if !var.is_empty() => Some(KeySource::Env(var)),
        KeySourceConfig {
            env: None,
            file: Some(path),
            keychain: None,
            ..
        } => Some(KeySource::File(path)),
        KeySourceConfig {
            env: None,
            file: None,
            keychain: Some(name),
            ..
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

/// What the rest of the config says that a provider's validation depends on.
pub(super) struct ProviderContext {
    /// The gateway listens on loopback only.
    pub(super) loopback: bool,
    /// Clients present gateway keys, in the same headers their own credentials would use.
    pub(super) gateway_keys: bool,
}

pub(super) fn validate_provider(
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
        api_keys,
        headers,
        models,
        dialects,
        stream_usage,
        timeouts,
        strict,
        max_output_tokens,
        client_auth,
        client_org,
        api_version,
        entra,
        region,
        aws_profile,
        bedrock_api,
        project,
        location,
        credentials_file,
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
                "unknown kind {kind:?}; expected one of openai, anthropic, deepseek, gemini, openai_compatible, azure_openai, bedrock, vertex"
            ),
        });
        return None;
    };
    let cloud_config = super::clouds::CloudConfig {
        api_version,
        entra,
        region,
        aws_profile,
        bedrock_api,
        project,
        location,
        credentials_file,
    };
    let cloud = super::clouds::validate(name, kind_parsed, cloud_config, problems);
    let cloud_url = cloud
        .as_ref()
        .and_then(super::clouds::Cloud::default_base_url);
    let base_url = match base_url
        .as_deref()
        .or(kind_parsed.default_base_url())
        .or(cloud_url.as_deref())
    {
        Some(url) => check_url(url, at("base_url"), problems),
        None if kind_parsed == ProviderKind::AzureOpenAi => {
            problems.push(ConfigProblem {
                path: at("base_url"),
                message: "is required for kind azure_openai: the resource's endpoint (e.g. https://my-resource.openai.azure.com)".into(),
            });
            String::new()
        }
        // A cloud whose own fields were wrong: already said.
        None if cloud.is_none() && kind_parsed != ProviderKind::OpenAiCompatible => String::new(),
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
    let mut pool = Vec::new();
    for (i, source) in api_keys.into_iter().flatten().enumerate() {
        let path = at(&format!("api_keys[{i}]"));
        let name = source.name.clone();
        if name
            .as_deref()
            .is_some_and(|n| n.is_empty() || n.len() > 64)
        {
            problems.push(ConfigProblem {
                path: format!("{path}.name"),
                message: "must be 1 to 64 characters".into(),
            });
        }
        if let Some(source) = key_source(Some(source), &path, problems) {
            let name = name.unwrap_or_else(|| pool_key_name(&source));
            if pool
                .iter()
                .any(|k: &PoolKey| k.name == name || k.source == source)
            {
                problems.push(ConfigProblem {
                    path,
                    message: format!("{name:?} is already in this pool"),
                });
                continue;
            }
            pool.push(PoolKey { name, source });
        }
    }
    if !pool.is_empty() && api_key.is_some() {
        problems.push(ConfigProblem {
            path: at("api_keys"),
            message: "give api_key or api_keys, not both".into(),
        });
    }
    let entra = matches!(
        cloud,
        Some(super::clouds::Cloud::Azure { entra: Some(_), .. })
    );
    let key = match api_key {
        _ if !pool.is_empty() => pool[0].source.clone(),
        // The Entra ID token is the credential: no api-key is looked for.
        None if entra => KeySource::None,
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
    // A client's login (a Claude or ChatGPT subscription) belongs to its own provider; a
    // cloud takes the account's credentials only.
    let client_auth = match client_auth {
        ClientAuth::Never => ClientAuth::Never,
        _ if cloud.is_some() => {
            problems.push(ConfigProblem {
                path: at("client_auth"),
                message: format!(
                    "must be never for kind {}: a client's own login is not a cloud credential",
                    kind_parsed.as_str()
                ),
            });
            ClientAuth::Never
        }
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
        pool,
        headers: header_list,
        models,
        dialects,
        stream_usage: stream_usage.unwrap_or(true),
        timeouts,
        strict: strict.unwrap_or(false),
        max_output_tokens: max_output_tokens.or(kind_parsed.default_max_output_tokens()),
        client_auth,
        client_org: client_org.unwrap_or(false),
        cloud,
    })
}

/// `[[routes]]` and `default_provider` over the built providers: the explicit routes in
/// order, then each well-known kind's model families.
pub(super) fn validate_routes(
    routes: Vec<RouteConfig>,
    default_provider: Option<String>,
    built: &[Arc<Provider>],
    problems: &mut Vec<ConfigProblem>,
) -> Routes {
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
        let fallbacks = validate_fallbacks(&path, first, fallbacks, &find, problems);
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
    for provider in built {
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
    let (routes, bad) = RouteTable::build(specs, built.to_vec(), default);
    problems.extend(bad.into_iter().map(|b| ConfigProblem {
        path: b.path,
        message: b.message,
    }));
    routes
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

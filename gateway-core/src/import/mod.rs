//! Other tools' provider setups read into one plan the admin API can show and apply: CC
//! Switch's database, claude-code-router's `config.json` and a LiteLLM `config.yaml`.
//!
//! Reading changes nothing: a [`Plan`] lists the providers (with their keys, held in memory
//! only and shown masked), the routes, and every part of the file that cannot be imported
//! with the reason. [`Plan::settle`] then fits it beside an existing config without
//! overwriting anything: a provider whose name is taken is renamed `<name>-<tool>` (and
//! left out when that name is taken too, as by an earlier import of the same file), and a
//! route whose `match` is taken is left out.

mod cc_switch;
mod ccr;
mod litellm;

use std::collections::HashSet;
use std::fmt;

use serde::{Serialize, Serializer};

use crate::config::ProviderKind;
use crate::secrets::{mask, Secret};

/// The most an imported file may hold.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;

/// The formats read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Format {
    #[serde(rename = "cc-switch")]
    CcSwitch,
    #[serde(rename = "claude-code-router")]
    ClaudeCodeRouter,
    #[serde(rename = "litellm")]
    LiteLlm,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "cc-switch" => Some(Format::CcSwitch),
            "claude-code-router" => Some(Format::ClaudeCodeRouter),
            "litellm" => Some(Format::LiteLlm),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::CcSwitch => "cc-switch",
            Format::ClaudeCodeRouter => "claude-code-router",
            Format::LiteLlm => "litellm",
        }
    }

    /// The suffix of a provider renamed because its name was taken.
    fn tag(self) -> &'static str {
        match self {
            Format::CcSwitch => "ccswitch",
            Format::ClaudeCodeRouter => "ccr",
            Format::LiteLlm => "litellm",
        }
    }

    /// The format a file's content is in: SQLite's header, a JSON object with `Providers`,
    /// or YAML with `model_list`.
    pub fn detect(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(cc_switch::SQLITE_MAGIC) {
            return Some(Format::CcSwitch);
        }
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(bytes) {
            return map
                .contains_key("Providers")
                .then_some(Format::ClaudeCodeRouter);
        }
        match yaml_serde::from_slice::<yaml_serde::Value>(bytes) {
            Ok(v) if v.get("model_list").is_some() => Some(Format::LiteLlm),
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a file cannot be imported at all; it names the file.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct ImportError {
    pub file: String,
    pub problem: String,
}

/// A provider to add.
#[derive(Debug, Serialize)]
pub struct NewProvider {
    pub name: String,
    /// Its name in the file, when it had to change (taken, or not a valid name here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    #[serde(serialize_with = "kind_name")]
    pub kind: ProviderKind,
    /// `None`: the kind's own.
    pub base_url: Option<String>,
    /// Dialects it speaks when not its kind's (a Codex relay that takes only Responses).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dialects: Vec<String>,
    pub models: Vec<String>,
    /// Held here until it goes to the keychain; never serialized.
    #[serde(skip)]
    pub key: Option<Secret>,
    /// The key as shown: its mask.
    pub key_mask: Option<String>,
    /// Where the key was found: `the file`, or `env VAR`.
    pub key_from: Option<String>,
}

fn kind_name<S: Serializer>(kind: &ProviderKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.as_str())
}

impl NewProvider {
    fn new(name: String, kind: ProviderKind, base_url: Option<String>) -> NewProvider {
        // The kind's own address is left to the kind.
        let base_url = base_url.filter(|u| Some(u.as_str()) != kind.default_base_url());
        NewProvider {
            name,
            renamed_from: None,
            kind,
            base_url,
            dialects: Vec::new(),
            models: Vec::new(),
            key: None,
            key_mask: None,
            key_from: None,
        }
    }

    fn add_model(&mut self, model: &str) {
        let model = model.trim();
        if !model.is_empty() && !self.models.iter().any(|m| m == model) {
            self.models.push(model.to_owned());
        }
    }

    /// Sets the key found, or reports why there is none usable.
    fn set_key(&mut self, found: KeyFound, skipped: &mut Vec<Skipped>) {
        match found {
            KeyFound::None => {}
            KeyFound::Value { key, .. } if key.trim().is_empty() => {}
            KeyFound::Value { key, from } => {
                if key.chars().any(char::is_control) {
                    skipped.push(Skipped::new(
                        format!("key of provider {:?}", self.name),
                        "it is not one line of printable characters; set it on the Providers page",
                    ));
                    return;
                }
                self.key_mask = Some(mask(&key));
                self.key = Some(Secret::new(key));
                self.key_from = Some(from);
            }
            KeyFound::UnsetEnv(var) => skipped.push(Skipped::new(
                format!("key of provider {:?}", self.name),
                format!(
                    "it names the environment variable {var}, which is not set for the gateway; the provider is added without a key: set it on the Providers page"
                ),
            )),
        }
    }
}

/// A provider the config has, as [`Plan::settle`] compares it.
#[derive(Clone, Debug)]
pub struct Existing {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
}

impl NewProvider {
    /// The same kind at the same address.
    fn is_like(&self, there: &Existing) -> bool {
        let url = self
            .base_url
            .as_deref()
            .or(self.kind.default_base_url())
            .unwrap_or("");
        self.kind == there.kind && url.trim_end_matches('/') == there.base_url.trim_end_matches('/')
    }
}

/// A route to add, as `[[routes]]` holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NewRoute {
    #[serde(rename = "match")]
    pub pattern: String,
    pub provider: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
}

impl NewRoute {
    fn new(pattern: &str, provider: &str, model: Option<&str>) -> NewRoute {
        NewRoute {
            pattern: pattern.to_owned(),
            provider: provider.to_owned(),
            model: model
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_owned),
            fallbacks: Vec::new(),
        }
    }
}

/// A part of the file that is not imported, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    pub item: String,
    pub reason: String,
}

impl Skipped {
    fn new(item: impl Into<String>, reason: impl Into<String>) -> Skipped {
        Skipped {
            item: item.into(),
            reason: reason.into(),
        }
    }
}

/// What a file would add.
#[derive(Debug, Serialize)]
pub struct Plan {
    pub format: Format,
    pub providers: Vec<NewProvider>,
    pub routes: Vec<NewRoute>,
    pub skipped: Vec<Skipped>,
}

impl Plan {
    fn new(format: Format) -> Plan {
        Plan {
            format,
            providers: Vec::new(),
            routes: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Adds a route unless the plan routes its `match` already (the first one wins).
    fn route(&mut self, route: NewRoute, item: &str) {
        if let Some(first) = self.routes.iter().find(|r| r.pattern == route.pattern) {
            let reason = format!(
                "{:?} is routed to {} already by this file",
                route.pattern, first.provider
            );
            self.skipped.push(Skipped::new(item, reason));
        } else {
            self.routes.push(route);
        }
    }

    /// Fits the plan beside the providers and routes in force, overwriting nothing. A
    /// provider whose name is taken by one of the same kind and address is there already
    /// (imported before): it is left out and the routes keep its name. Taken by another, it
    /// becomes `<name>-<tool>` — unless that is taken too (by the same provider: imported
    /// before, the routes follow it; by another: left out, with its routes). A route whose
    /// `match` is taken is left out.
    pub fn settle(&mut self, providers: &[Existing], routes: &[String]) {
        let find = |name: &str| providers.iter().find(|e| e.name == name);
        let mut dropped = HashSet::new();
        let mut renames = Vec::new();
        let tag = self.format.tag();
        let mut kept = Vec::new();
        for mut p in std::mem::take(&mut self.providers) {
            let Some(there) = find(&p.name) else {
                kept.push(p);
                continue;
            };
            if p.is_like(there) {
                self.skipped.push(Skipped::new(
                    format!("provider {:?}", p.name),
                    "a provider of this name, kind and address exists already (imported before?); it is kept as it is, its key too",
                ));
                continue;
            }
            let other = format!("{}-{tag}", p.name);
            match find(&other) {
                None => {
                    renames.push((p.name.clone(), other.clone()));
                    p.renamed_from.get_or_insert_with(|| p.name.clone());
                    p.name = other;
                    kept.push(p);
                }
                Some(there) if p.is_like(there) => {
                    self.skipped.push(Skipped::new(
                        format!("provider {:?}", p.name),
                        format!("it was imported before as {other:?}, which is kept as it is, its key too"),
                    ));
                    renames.push((p.name.clone(), other));
                }
                Some(_) => {
                    self.skipped.push(Skipped::new(
                        format!("provider {:?}", p.name),
                        format!("other providers named {:?} and {other:?} exist; they are kept as they are", p.name),
                    ));
                    dropped.insert(p.name);
                }
            }
        }
        self.providers = kept;
        let renamed = |name: &str| {
            renames
                .iter()
                .find(|(from, _)| from == name)
                .map_or_else(|| name.to_owned(), |(_, to)| to.clone())
        };
        let existing: HashSet<&str> = routes.iter().map(String::as_str).collect();
        let mut kept = Vec::new();
        for mut r in std::mem::take(&mut self.routes) {
            if dropped.contains(&r.provider) {
                self.skipped.push(Skipped::new(
                    format!("route {:?}", r.pattern),
                    format!("its provider {:?} is not imported", r.provider),
                ));
                continue;
            }
            if existing.contains(r.pattern.as_str()) {
                self.skipped.push(Skipped::new(
                    format!("route {:?}", r.pattern),
                    "a route with this match exists already; it is kept as it is",
                ));
                continue;
            }
            r.provider = renamed(&r.provider);
            r.fallbacks = r
                .fallbacks
                .iter()
                .filter_map(|step| {
                    let (provider, model) = match step.split_once('/') {
                        Some((p, m)) => (p, Some(m)),
                        None => (step.as_str(), None),
                    };
                    if dropped.contains(provider) {
                        return None;
                    }
                    let provider = renamed(provider);
                    Some(match model {
                        Some(m) => format!("{provider}/{m}"),
                        None => provider,
                    })
                })
                .collect();
            kept.push(r);
        }
        self.routes = kept;
    }
}

/// Reads a file into a plan; `format` overrides what its content says. `env` looks up the
/// environment variables a file names for its keys.
pub fn read(
    file_name: &str,
    bytes: &[u8],
    format: Option<Format>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, ImportError> {
    let fail = |problem: String| ImportError {
        file: file_name.to_owned(),
        problem,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(fail("the file is empty".into()));
    }
    if bytes.len() > MAX_FILE_BYTES {
        return Err(fail(format!(
            "the file is larger than {} MiB",
            MAX_FILE_BYTES >> 20
        )));
    }
    let format = format.or_else(|| Format::detect(bytes)).ok_or_else(|| {
        fail("not a format this import reads: neither a CC Switch database (SQLite), a claude-code-router config.json (with \"Providers\"), nor a LiteLLM config.yaml (with \"model_list\")".into())
    })?;
    let plan = match format {
        Format::CcSwitch => cc_switch::read(bytes, env),
        Format::ClaudeCodeRouter => ccr::read(bytes, env),
        Format::LiteLlm => litellm::read(bytes, env),
    }
    .map_err(fail)?;
    if plan.providers.is_empty() && plan.routes.is_empty() && plan.skipped.is_empty() {
        return Err(fail(format!(
            "the {format} file lists no providers to import"
        )));
    }
    Ok(plan)
}

/// A key as a file gives it.
enum KeyFound {
    None,
    Value {
        key: String,
        from: String,
    },
    /// It names an environment variable that is not set.
    UnsetEnv(String),
}

impl KeyFound {
    fn literal(key: Option<&str>) -> KeyFound {
        match key.map(str::trim).filter(|k| !k.is_empty()) {
            Some(k) => KeyFound::Value {
                key: k.to_owned(),
                from: "the file".into(),
            },
            None => KeyFound::None,
        }
    }

    fn env(var: &str, env: &dyn Fn(&str) -> Option<String>) -> KeyFound {
        match env(var)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
        {
            Some(key) => KeyFound::Value {
                key,
                from: format!("env {var}"),
            },
            None => KeyFound::UnsetEnv(var.to_owned()),
        }
    }
}

/// A provider name the config takes (1 to 64 of letters, digits, `-`, `_`), made from a
/// name in the file: `Kimi For Coding` → `kimi-for-coding`; `None` when nothing is left.
fn slug(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    let out: String = out.chars().take(64).collect();
    (!out.is_empty()).then_some(out)
}

/// The first of `candidates` not taken yet, else the first with a number; claimed.
fn claim(taken: &mut HashSet<String>, candidates: &[String]) -> String {
    let first = candidates
        .iter()
        .find(|c| !taken.contains(*c))
        .cloned()
        .unwrap_or_else(|| {
            let base = candidates.first().map_or("provider", String::as_str);
            (2..)
                .map(|n| format!("{base}-{n}"))
                .find(|c| !taken.contains(c))
                .unwrap_or_default()
        });
    taken.insert(first.clone());
    first
}

/// The host of a URL, lowercased.
fn host(url: &str) -> Option<String> {
    url.parse::<http::Uri>()
        .ok()?
        .host()
        .map(str::to_ascii_lowercase)
}

/// `url` without a trailing `/` and without the first of `endings` it ends with.
fn strip_endpoint(url: &str, endings: &[&str]) -> String {
    let url = url.trim().trim_end_matches('/');
    for ending in endings {
        if let Some(base) = url.strip_suffix(ending) {
            return base.trim_end_matches('/').to_owned();
        }
    }
    url.to_owned()
}

/// `url` ending in an API version: `version` appended unless one is there (`/v1`, `/v1beta`).
fn with_version(url: &str, version: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    let last = url.rsplit('/').next().unwrap_or("");
    let versioned = last.len() > 1
        && last.starts_with('v')
        && last[1..].starts_with(|c: char| c.is_ascii_digit());
    if versioned {
        url.to_owned()
    } else {
        format!("{url}{version}")
    }
}

/// The kind a provider speaking OpenAI's chat API at `base_url` has: a well-known one for
/// its own host, else OpenAI-compatible.
fn openai_kind(base_url: &str) -> ProviderKind {
    match host(base_url).as_deref() {
        Some("api.openai.com") => ProviderKind::OpenAi,
        Some("api.deepseek.com") => ProviderKind::DeepSeek,
        _ => ProviderKind::OpenAiCompatible,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_urls_and_detection() {
        assert_eq!(slug("Kimi For Coding").as_deref(), Some("kimi-for-coding"));
        assert_eq!(slug("智谱 GLM").as_deref(), Some("glm"));
        assert_eq!(slug("智谱"), None);
        assert_eq!(
            with_version("https://api.moonshot.cn/anthropic/", "/v1"),
            "https://api.moonshot.cn/anthropic/v1"
        );
        assert_eq!(
            with_version("https://example.com/v1beta", "/v1beta"),
            "https://example.com/v1beta"
        );
        assert_eq!(
            strip_endpoint(
                "https://api.openai.com/v1/chat/completions",
                &["/chat/completions"]
            ),
            "https://api.openai.com/v1"
        );
        assert_eq!(
            Format::detect(b"SQLite format 3\0rest"),
            Some(Format::CcSwitch)
        );
        assert_eq!(
            Format::detect(br#"{"Providers": []}"#),
            Some(Format::ClaudeCodeRouter)
        );
        assert_eq!(Format::detect(b"model_list: []\n"), Some(Format::LiteLlm));
        assert_eq!(Format::detect(br#"{"providers": []}"#), None);
        assert_eq!(Format::detect(b"just: text\n"), None);
    }

    #[test]
    fn bad_files_name_the_file_and_the_problem() {
        let none = |_: &str| None;
        let err = read("empty.json", b"  \n", None, &none).unwrap_err();
        assert_eq!(err.to_string(), "empty.json: the file is empty");
        let err = read("notes.txt", b"hello: world\n", None, &none).unwrap_err();
        assert!(
            err.to_string().starts_with("notes.txt: not a format"),
            "{err}"
        );
        let err = read(
            "config.json",
            b"{\"Providers\": [",
            Some(Format::ClaudeCodeRouter),
            &none,
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("config.json: "), "{err}");
    }

    /// A name taken in the config gets the tool's suffix, its routes and fallbacks follow
    /// it; the same provider there already is left out and its routes keep its name; taken
    /// twice by others, the provider and its routes are left out; a taken match is left out.
    #[test]
    fn settling_renames_or_leaves_out_and_never_overwrites() {
        let url = "http://127.0.0.1:1/v1";
        let mut plan = Plan::new(Format::LiteLlm);
        for name in ["openai", "ollama", "fresh", "same"] {
            plan.providers.push(NewProvider::new(
                name.into(),
                ProviderKind::OpenAiCompatible,
                Some(url.into()),
            ));
        }
        let mut r = NewRoute::new("gpt-4o", "openai", None);
        r.fallbacks = vec!["ollama/llama3".into(), "fresh/x".into(), "openai".into()];
        plan.routes.push(r);
        plan.routes.push(NewRoute::new("llama3", "ollama", None));
        plan.routes.push(NewRoute::new("taken", "fresh", None));
        plan.routes.push(NewRoute::new("again", "same", None));
        let other = |name: &str| Existing {
            name: name.into(),
            kind: ProviderKind::OpenAi,
            base_url: "https://api.openai.com/v1".into(),
        };
        let like = Existing {
            name: "same".into(),
            kind: ProviderKind::OpenAiCompatible,
            base_url: url.into(),
        };
        plan.settle(
            &[
                other("openai"),
                other("ollama"),
                other("ollama-litellm"),
                like,
            ],
            &["taken".into()],
        );
        let names: Vec<&str> = plan.providers.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["openai-litellm", "fresh"]);
        assert_eq!(plan.providers[0].renamed_from.as_deref(), Some("openai"));
        assert_eq!(plan.routes.len(), 2);
        assert_eq!(plan.routes[0].provider, "openai-litellm");
        assert_eq!(plan.routes[1].provider, "same");
        assert_eq!(
            plan.routes[0].fallbacks,
            ["fresh/x".to_owned(), "openai-litellm".to_owned()]
        );
        let items: Vec<&str> = plan.skipped.iter().map(|s| s.item.as_str()).collect();
        assert_eq!(
            items,
            [
                "provider \"ollama\"",
                "provider \"same\"",
                "route \"llama3\"",
                "route \"taken\""
            ]
        );
    }
}

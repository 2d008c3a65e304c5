//! Edits of the config file the window makes: providers, their keychain references,
//! routes and optimizer modes. The file is edited as a TOML document, so a person's own
//! comments and layout survive; every edit is validated as the whole config before it is
//! written (atomically) and put in force. Keys never go in it: a key set from the window
//! lives in the keychain and the file says `api_key = { keychain = "<provider>" }`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use toml_edit::{value, Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table};

use crate::config::{Config, ConfigError, ConfigProblem};
use crate::secrets::KeySource;

/// Why an edit was refused.
#[derive(Debug)]
pub enum EditError {
    /// The edited config would not validate; nothing was written.
    Invalid(Vec<ConfigProblem>),
    NotFound(String),
    Io(String),
}

impl From<ConfigError> for EditError {
    fn from(e: ConfigError) -> Self {
        match e {
            ConfigError::Invalid { problems, .. } => EditError::Invalid(problems),
            other => EditError::Invalid(vec![ConfigProblem {
                path: String::new(),
                message: other.to_string(),
            }]),
        }
    }
}

/// The config file as a document, or — when there is none yet — one that lists the
/// providers the gateway found in the environment, so a first edit keeps them.
pub fn read(path: &Path, running: &Config) -> Result<DocumentMut, EditError> {
    match std::fs::read_to_string(path) {
        Ok(text) => text
            .parse::<DocumentMut>()
            .map_err(|e| EditError::Io(format!("{}: {}", path.display(), e.message()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut doc = DocumentMut::new();
            for p in &running.providers {
                if let (KeySource::Env(var), Some(t)) = (&p.key, provider_table(&mut doc, &p.name))
                {
                    t["kind"] = value(p.kind.as_str());
                    let mut key = InlineTable::new();
                    key.insert("env", var.as_str().into());
                    t["api_key"] = value(key);
                }
            }
            Ok(doc)
        }
        Err(e) => Err(EditError::Io(format!("{}: {e}", path.display()))),
    }
}

/// Validates the document as a whole config, then writes it in place of the file.
pub fn write(path: &Path, doc: &DocumentMut) -> Result<Config, EditError> {
    let text = doc.to_string();
    let config = validate(path, &text)?;
    // The file keeps its mode (a new one is owner-only), and a link stays a link.
    crate::files::replace(path, text.as_bytes())
        .map_err(|e| EditError::Io(format!("{}: {e}", path.display())))?;
    Ok(config)
}

/// The config the file would be with `routes` in place of its own, validated as a load
/// and as [`write`] would, without writing anything: what the routes editor checks a
/// draft against.
pub fn with_routes(
    path: &Path,
    running: &Config,
    routes: &[RouteEdit],
) -> Result<Config, EditError> {
    let mut doc = read(path, running)?;
    set_routes(&mut doc, routes);
    validate(path, &doc.to_string())
}

fn validate(path: &Path, text: &str) -> Result<Config, EditError> {
    Ok(Config::from_toml(text, &path.display().to_string())?)
}

/// The provider's table, made when missing (`None` only if the file has `providers` as
/// something other than a table, which validation reports).
fn provider_table<'d>(doc: &'d mut DocumentMut, name: &str) -> Option<&'d mut Table> {
    let all = doc
        .entry("providers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()?;
    all.entry(name)
        .or_insert(Item::Table(Table::new()))
        .as_table_mut()
}

/// A provider as the window sends it. A field left out is left as it is; `null` (or an
/// empty string) clears it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEdit {
    pub name: Option<String>,
    pub kind: Option<String>,
    /// `null` clears it (the kind's default).
    #[serde(default, with = "double_option")]
    pub base_url: Option<Option<String>>,
    pub models: Option<Vec<String>>,
    /// Only on create: goes to the keychain, never here (Azure's `api-key`, a Bedrock API
    /// key).
    pub key: Option<String>,
    /// Azure: the classic paths' `api-version`; `null`, the v1 paths.
    #[serde(default, with = "double_option")]
    pub api_version: Option<Option<String>>,
    /// Azure: a Microsoft Entra ID token instead of the `api-key`; `null`, the key again.
    #[serde(default, with = "double_option")]
    pub entra: Option<Option<EntraEdit>>,
    /// Bedrock: the AWS region.
    #[serde(default, with = "double_option")]
    pub region: Option<Option<String>>,
    /// Bedrock: a profile of the AWS shared config; `null`, the default credential chain.
    #[serde(default, with = "double_option")]
    pub aws_profile: Option<Option<String>>,
    /// Bedrock: `auto`, `invoke` or `converse`.
    #[serde(default, with = "double_option")]
    pub bedrock_api: Option<Option<String>>,
    /// Vertex: the Google Cloud project and location.
    #[serde(default, with = "double_option")]
    pub project: Option<Option<String>>,
    #[serde(default, with = "double_option")]
    pub location: Option<Option<String>>,
    /// Vertex: a service-account key file, by its path (its contents stay in it); `null`,
    /// Application Default Credentials.
    #[serde(default, with = "double_option")]
    pub credentials_file: Option<Option<String>>,
}

/// How an Azure provider gets its Entra ID token: a command, or an app registration.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntraEdit {
    pub command: Option<String>,
    pub tenant_id: Option<String>,
    pub client_id: Option<String>,
    /// The app's secret: to the keychain, never here. Left out, the one stored stays.
    pub client_secret: Option<String>,
    pub authority: Option<String>,
    pub scope: Option<String>,
}

impl EntraEdit {
    /// The client-credentials flow, rather than a command.
    pub fn is_app(&self) -> bool {
        [&self.tenant_id, &self.client_id, &self.client_secret]
            .iter()
            .any(|v| v.as_deref().is_some_and(|v| !v.trim().is_empty()))
    }
}

/// The keychain entry an Azure provider's Entra client secret is kept under: a name no
/// provider can have (names hold no `.`), so it never meets a provider's own key.
pub fn entra_secret_entry(provider: &str) -> String {
    format!("{provider}.entra")
}

mod double_option {
    use serde::{Deserialize, Deserializer};
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Ok(Some(Option::deserialize(d)?))
    }
}

pub fn has_provider(doc: &DocumentMut, name: &str) -> bool {
    doc.get("providers")
        .and_then(Item::as_table)
        .is_some_and(|t| t.contains_key(name))
}

/// Creates or updates a provider's table with the fields given.
pub fn upsert_provider(doc: &mut DocumentMut, name: &str, edit: &ProviderEdit) {
    let Some(t) = provider_table(doc, name) else {
        return;
    };
    if let Some(kind) = &edit.kind {
        t["kind"] = value(kind.as_str());
    }
    match &edit.base_url {
        Some(Some(url)) if !url.trim().is_empty() => t["base_url"] = value(url.trim()),
        Some(_) => {
            t.remove("base_url");
        }
        None => {}
    }
    if let Some(models) = &edit.models {
        if models.is_empty() {
            t.remove("models");
        } else {
            t["models"] = value(models.iter().map(String::as_str).collect::<Array>());
        }
    }
    let ProviderEdit {
        api_version,
        entra,
        region,
        aws_profile,
        bedrock_api,
        project,
        location,
        credentials_file,
        ..
    } = edit;
    for (field, given) in [
        ("api_version", api_version),
        ("region", region),
        ("aws_profile", aws_profile),
        ("bedrock_api", bedrock_api),
        ("project", project),
        ("location", location),
        ("credentials_file", credentials_file),
    ] {
        match given {
            Some(Some(v)) if !v.trim().is_empty() => t[field] = value(v.trim()),
            Some(_) => {
                t.remove(field);
            }
            None => {}
        }
    }
    match entra {
        Some(Some(e)) => t["entra"] = value(entra_table(name, e)),
        Some(None) => {
            t.remove("entra");
        }
        None => {}
    }
}

/// `entra = { … }` as the config reads it: a command, or the app's ids and its secret's
/// keychain entry (the secret itself goes to the keychain, never here).
fn entra_table(provider: &str, e: &EntraEdit) -> InlineTable {
    fn put(out: &mut InlineTable, key: &str, v: &Option<String>) {
        if let Some(v) = v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            out.insert(key, v.into());
        }
    }
    let mut out = InlineTable::new();
    if e.is_app() {
        put(&mut out, "tenant_id", &e.tenant_id);
        put(&mut out, "client_id", &e.client_id);
        let mut secret = InlineTable::new();
        secret.insert("keychain", entra_secret_entry(provider).into());
        out.insert("client_secret", toml_edit::Value::InlineTable(secret));
        put(&mut out, "authority", &e.authority);
        put(&mut out, "scope", &e.scope);
    } else {
        put(&mut out, "command", &e.command);
    }
    out
}

/// Drops the provider's key from the file (a Bedrock provider signs with the AWS
/// credential chain again).
pub fn clear_key(doc: &mut DocumentMut, name: &str) {
    if let Some(t) = provider_table(doc, name) {
        t.remove("api_key");
    }
}

/// Sets the dialects a provider speaks natively, in place of its kind's.
pub fn set_dialects(doc: &mut DocumentMut, name: &str, dialects: &[String]) {
    let Some(t) = provider_table(doc, name) else {
        return;
    };
    t["dialects"] = value(dialects.iter().map(String::as_str).collect::<Array>());
}

/// Points the provider's key at its keychain entry (named after the provider).
pub fn use_keychain(doc: &mut DocumentMut, name: &str) {
    let Some(t) = provider_table(doc, name) else {
        return;
    };
    let mut key = InlineTable::new();
    key.insert("keychain", name.into());
    t["api_key"] = value(key);
}

/// Drops the provider, the routes that lead to it, and the default that names it.
pub fn remove_provider(doc: &mut DocumentMut, name: &str) -> Result<(), EditError> {
    let removed = doc
        .get_mut("providers")
        .and_then(Item::as_table_mut)
        .and_then(|t| t.remove(name));
    if removed.is_none() {
        return Err(EditError::NotFound(format!("no provider named {name:?}")));
    }
    if let Some(routes) = doc.get_mut("routes").and_then(Item::as_array_of_tables_mut) {
        routes.retain(|r| r.get("provider").and_then(Item::as_str) != Some(name));
    }
    if doc.get("default_provider").and_then(Item::as_str) == Some(name) {
        doc.remove("default_provider");
    }
    Ok(())
}

/// `[server] listen` as written, if it is.
pub fn listen(doc: &DocumentMut) -> Option<String> {
    doc.get("server")?
        .get("listen")?
        .as_str()
        .map(str::to_owned)
}

pub fn set_listen(doc: &mut DocumentMut, listen: &str) {
    if !doc.contains_table("server") {
        doc["server"] = Item::Table(Table::new());
    }
    doc["server"]["listen"] = value(listen.trim());
}

/// Sets `[guard] mode`, keeping the rest of the section and the comment beside the old
/// value as written. The value goes in as given: the config's validation says whether it
/// is a mode.
pub fn set_guard_mode(doc: &mut DocumentMut, mode: &str) {
    let guard = doc
        .entry("guard")
        .or_insert_with(|| Item::Table(Table::new()));
    let Some(t) = guard.as_table_like_mut() else {
        return;
    };
    let mut new = toml_edit::Value::from(mode.trim());
    if let Some(old) = t.get("mode").and_then(Item::as_value) {
        *new.decor_mut() = old.decor().clone();
    }
    t.insert("mode", Item::Value(new));
}

/// A route as the window shows and sends it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouteEdit {
    #[serde(rename = "match")]
    pub pattern: String,
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `provider/model` steps tried in order when the provider fails before answering.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

pub fn routes(doc: &DocumentMut) -> Vec<RouteEdit> {
    doc.get("routes")
        .and_then(Item::as_array_of_tables)
        .map(|all| {
            all.iter()
                .map(|t| RouteEdit {
                    pattern: t
                        .get("match")
                        .and_then(Item::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    provider: t
                        .get("provider")
                        .and_then(Item::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    model: t.get("model").and_then(Item::as_str).map(str::to_owned),
                    fallbacks: t
                        .get("fallbacks")
                        .and_then(Item::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|v| v.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                    max_attempts: t
                        .get("max_attempts")
                        .and_then(Item::as_integer)
                        .and_then(|n| u32::try_from(n).ok()),
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn set_routes(doc: &mut DocumentMut, routes: &[RouteEdit]) {
    if routes.is_empty() {
        doc.remove("routes");
        return;
    }
    let mut all = ArrayOfTables::new();
    for r in routes {
        all.push(route_table(r));
    }
    doc["routes"] = Item::ArrayOfTables(all);
}

fn route_table(r: &RouteEdit) -> Table {
    let mut t = Table::new();
    t["match"] = value(r.pattern.as_str());
    t["provider"] = value(r.provider.as_str());
    if let Some(m) = &r.model {
        t["model"] = value(m.as_str());
    }
    if !r.fallbacks.is_empty() {
        t["fallbacks"] = value(r.fallbacks.iter().collect::<toml_edit::Array>());
    }
    if let Some(n) = r.max_attempts {
        t["max_attempts"] = value(i64::from(n));
    }
    t
}

/// Replaces, in one edit, the routes whose `match` is listed in `replace` or is one of
/// `routes`' own with `routes`; every other route stays as written, its comments included.
/// The new routes take the place of the first route replaced, or go first when none was
/// there, so a broader route written earlier (`claude-*`) does not shadow them. Returns the
/// routes as they then stand.
pub fn replace_routes(
    doc: &mut DocumentMut,
    replace: &[String],
    routes: &[RouteEdit],
) -> Vec<RouteEdit> {
    let goes = |t: &Table| {
        t.get("match").and_then(Item::as_str).is_some_and(|m| {
            replace.iter().any(|r| r == m) || routes.iter().any(|r| r.pattern == m)
        })
    };
    let existing: Vec<Table> = doc
        .get("routes")
        .and_then(Item::as_array_of_tables)
        .map(|all| all.iter().cloned().collect())
        .unwrap_or_default();
    // Every route before the first one replaced is kept, so this is also its place among the kept.
    let at = existing.iter().position(goes).unwrap_or(0);
    let mut kept: Vec<Table> = existing.into_iter().filter(|t| !goes(t)).collect();
    let after = kept.split_off(at);
    let mut all = ArrayOfTables::new();
    for t in kept {
        all.push(t);
    }
    for r in routes {
        all.push(route_table(r));
    }
    for t in after {
        all.push(t);
    }
    if all.is_empty() {
        doc.remove("routes");
    } else {
        doc["routes"] = Item::ArrayOfTables(all);
    }
    self::routes(doc)
}

/// Pass modes as the window shows them; every field optional in a per-model rule.
pub use crate::optimize::modes::WrittenModes as ModesEdit;

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelModesEdit {
    #[serde(rename = "match")]
    pub pattern: String,
    #[serde(flatten)]
    pub modes: ModesEdit,
}

const PASSES: [&str; 3] = ["tool_output", "terse", "prune"];

fn modes_of(t: &dyn toml_edit::TableLike) -> ModesEdit {
    let text = |k: &str| t.get(k).and_then(Item::as_str).map(str::to_owned);
    ModesEdit {
        tool_output: text("tool_output"),
        terse: text("terse"),
        prune: text("prune"),
        squeeze: t.get("squeeze").and_then(Item::as_bool),
    }
}

fn write_modes(t: &mut Table, modes: &ModesEdit) {
    for (pass, mode) in PASSES
        .iter()
        .zip([&modes.tool_output, &modes.terse, &modes.prune])
    {
        match mode {
            Some(m) => t[*pass] = value(m.as_str()),
            None => {
                t.remove(pass);
            }
        }
    }
    match modes.squeeze {
        Some(on) => t["squeeze"] = value(on),
        None => {
            t.remove("squeeze");
        }
    }
}

/// The per-model rules as written.
pub fn model_modes(doc: &DocumentMut) -> Vec<ModelModesEdit> {
    doc.get("optimize")
        .and_then(|o| o.get("models"))
        .and_then(Item::as_array_of_tables)
        .map(|all| {
            all.iter()
                .map(|t| ModelModesEdit {
                    pattern: t
                        .get("match")
                        .and_then(Item::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    modes: modes_of(t),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Sets the defaults (all four passes) and replaces the per-model rules; the section's
/// other settings (holdout, originals) stay as they were.
pub fn set_modes(doc: &mut DocumentMut, defaults: &ModesEdit, models: &[ModelModesEdit]) {
    if !doc.contains_table("optimize") {
        doc["optimize"] = Item::Table(Table::new());
    }
    let Some(optimize) = doc["optimize"].as_table_mut() else {
        return;
    };
    write_modes(optimize, defaults);
    if models.is_empty() {
        optimize.remove("models");
        return;
    }
    let mut all = ArrayOfTables::new();
    for m in models {
        let mut t = Table::new();
        t["match"] = value(m.pattern.as_str());
        write_modes(&mut t, &m.modes);
        all.push(t);
    }
    optimize["models"] = Item::ArrayOfTables(all);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> DocumentMut {
        text.parse().unwrap()
    }

    #[test]
    fn edits_keep_comments_and_validate() {
        let mut d = doc("# my gateway\n[providers.openai]\nkind = \"openai\" # the main one\napi_key = { env = \"OPENAI_API_KEY\" }\n");
        upsert_provider(
            &mut d,
            "local",
            &ProviderEdit {
                kind: Some("openai_compatible".into()),
                base_url: Some(Some("http://127.0.0.1:11434/v1".into())),
                models: Some(vec!["qwen3".into()]),
                ..ProviderEdit::default()
            },
        );
        use_keychain(&mut d, "openai");
        set_routes(
            &mut d,
            &[RouteEdit {
                pattern: "qwen*".into(),
                provider: "local".into(),
                model: None,
                fallbacks: Vec::new(),
                max_attempts: None,
            }],
        );
        let text = d.to_string();
        assert!(
            text.contains("# my gateway") && text.contains("# the main one"),
            "{text}"
        );
        assert!(
            text.contains("api_key = { keychain = \"openai\" }"),
            "{text}"
        );
        let config = Config::from_toml(&text, "test").unwrap();
        assert_eq!(config.providers.len(), 2);
        assert_eq!(
            config.routes.resolve("qwen3").unwrap().provider.name,
            "local"
        );

        remove_provider(&mut d, "local").unwrap();
        assert!(routes(&d).is_empty(), "its routes go with it");
        assert!(matches!(
            remove_provider(&mut d, "local"),
            Err(EditError::NotFound(_))
        ));
    }

    fn route(pattern: &str, provider: &str, model: Option<&str>) -> RouteEdit {
        RouteEdit {
            pattern: pattern.into(),
            provider: provider.into(),
            model: model.map(str::to_owned),
            fallbacks: Vec::new(),
            max_attempts: None,
        }
    }

    /// Claude Code's slot routes, applied twice: the second time replaces the first in its
    /// place instead of stacking, a slot left out is removed, and the user's own routes and
    /// comments stay as written, in order, in the file read back.
    #[test]
    fn replacing_routes_keeps_the_others_and_their_place() {
        let text = "[providers.local]\nkind = \"openai_compatible\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n\n\
            # the fast alias\n[[routes]]\nmatch = \"fast\"\nprovider = \"local\"\nmodel = \"qwen3\"\n\n\
            [[routes]]\nmatch = \"claude-*\" # everything else from Claude\nprovider = \"local\"\n";
        let mut d = doc(text);
        let slots: Vec<String> = ["claude-opus-*", "claude-haiku-*", "claude-subagent"]
            .map(String::from)
            .to_vec();
        let first = [
            route("claude-opus-*", "local", Some("qwen3-coder")),
            route("claude-haiku-*", "local", Some("qwen3:8b")),
        ];
        let after = replace_routes(&mut d, &slots, &first);
        let patterns = |routes: &[RouteEdit]| -> Vec<String> {
            routes.iter().map(|r| r.pattern.clone()).collect()
        };
        // None was there: the slots go first, ahead of the broader claude-*.
        assert_eq!(
            patterns(&after),
            ["claude-opus-*", "claude-haiku-*", "fast", "claude-*"]
        );

        // Moved by hand below `fast`, then applied again with haiku left out.
        let mut moved = routes(&d);
        let fast = moved.remove(2);
        moved.insert(0, fast);
        set_routes(&mut d, &moved);
        let second = [
            route("claude-opus-*", "local", Some("qwen3")),
            route("claude-subagent", "local", Some("qwen3")),
        ];
        let after = replace_routes(&mut d, &slots, &second);
        assert_eq!(
            patterns(&after),
            ["fast", "claude-opus-*", "claude-subagent", "claude-*"]
        );
        assert_eq!(after[1].model.as_deref(), Some("qwen3"));

        // From the start again, on the file as written: comments kept, order as returned.
        let mut d = doc(text);
        let after = replace_routes(&mut d, &slots, &first);
        let written = d.to_string();
        assert!(
            written.contains("# the fast alias")
                && written.contains("# everything else from Claude"),
            "{written}"
        );
        let config = Config::from_toml(&written, "t").unwrap();
        assert_eq!(routes(&doc(&written)), after);
        let t = config.routes.resolve("claude-haiku-4-5").unwrap();
        assert_eq!(t.rewrite, Some("qwen3:8b"));

        // Replacing every route leaves none.
        let all: Vec<String> = after.iter().map(|r| r.pattern.clone()).collect();
        assert!(replace_routes(&mut d, &all, &[]).is_empty());
        assert!(d.get("routes").is_none());
    }

    /// The guard's mode set in a file without a `[guard]` section, then in one that has
    /// it: the section's other settings and the comment beside the mode stay.
    #[test]
    fn the_guard_mode_is_set_in_place() {
        let mut d = doc("[server]\n");
        set_guard_mode(&mut d, "block");
        assert!(d.to_string().contains("[guard]\nmode = \"block\""), "{d}");
        Config::from_toml(&d.to_string(), "t").unwrap();

        let mut d = doc("[guard]\nmode = \"redact\" # ours\nallow = [\"x\"]\n");
        set_guard_mode(&mut d, " off ");
        assert_eq!(
            d.to_string(),
            "[guard]\nmode = \"off\" # ours\nallow = [\"x\"]\n"
        );
        let config = Config::from_toml(&d.to_string(), "t").unwrap();
        assert_eq!(config.guard.mode, crate::guard::Mode::Off);

        set_guard_mode(&mut d, "sometimes");
        let EditError::Invalid(problems) =
            EditError::from(Config::from_toml(&d.to_string(), "t").unwrap_err())
        else {
            panic!("not a validation error")
        };
        assert_eq!(problems[0].path, "guard.mode");
    }

    #[test]
    fn modes_round_trip_and_a_bad_mode_is_a_problem_with_its_path() {
        let mut d = doc("[optimize]\nholdout = 0.1\n");
        let defaults = ModesEdit {
            tool_output: Some("aggressive".into()),
            terse: Some("off".into()),
            prune: Some("auto".into()),
            squeeze: Some(false),
        };
        let rules = vec![ModelModesEdit {
            pattern: "claude-*".into(),
            modes: ModesEdit {
                terse: Some("lite".into()),
                ..ModesEdit::default()
            },
        }];
        set_modes(&mut d, &defaults, &rules);
        assert_eq!(model_modes(&d), rules);
        let text = d.to_string();
        assert!(text.contains("holdout = 0.1"));
        Config::from_toml(&text, "t").unwrap();
        set_modes(
            &mut d,
            &ModesEdit {
                tool_output: Some("extreme".into()),
                ..defaults
            },
            &rules,
        );
        let err = Config::from_toml(&d.to_string(), "t").unwrap_err();
        let EditError::Invalid(problems) = EditError::from(err) else {
            panic!("not a validation error")
        };
        assert_eq!(problems[0].path, "optimize.tool_output");
    }
}

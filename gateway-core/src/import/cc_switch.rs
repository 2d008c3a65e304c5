//! CC Switch's database (`~/.cc-switch/cc-switch.db`): its `providers` table, one row per
//! provider and app (`app_type`), whose `settings_config` JSON is what CC Switch writes into
//! that app's own config when it switches to it. Claude Code's rows hold the `env` block of
//! its `settings.json` (`ANTHROPIC_BASE_URL`, `ANTHROPIC_AUTH_TOKEN`, the model variables);
//! Codex's its `auth.json` and `config.toml` text; Gemini CLI's its `.env` variables. The
//! row marked `is_current` of Claude Code is the provider Claude Code uses now: its models
//! become the routes of Claude Code's model slots.
//!
//! The schema is versioned in SQLite's `user_version` (CC Switch's `SCHEMA_VERSION`, 17 as
//! of this import); a newer one is refused rather than guessed at.

use std::collections::HashSet;
use std::io::Write;

use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value};

use super::{
    claim, host, slug, strip_endpoint, with_version, Format, KeyFound, NewProvider, NewRoute, Plan,
    Skipped,
};
use crate::config::ProviderKind;

/// The first bytes of every SQLite database file.
pub(super) const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// The newest schema this import has read (CC Switch's `SCHEMA_VERSION`).
const NEWEST_SCHEMA: i64 = 17;

/// Claude Code's model slots, the variable CC Switch sets for each, and the one it falls
/// back to (`ANTHROPIC_MODEL`, the main model).
const CLAUDE_SLOTS: [(&str, &str); 3] = [
    ("claude-opus-*", "ANTHROPIC_DEFAULT_OPUS_MODEL"),
    ("claude-sonnet-*", "ANTHROPIC_DEFAULT_SONNET_MODEL"),
    ("claude-haiku-*", "ANTHROPIC_DEFAULT_HAIKU_MODEL"),
];

struct Row {
    app: String,
    name: String,
    settings: String,
    current: bool,
    meta: Map<String, Value>,
}

/// Keys are in the database itself, so `_env` is not read.
pub(super) fn read(bytes: &[u8], _env: &dyn Fn(&str) -> Option<String>) -> Result<Plan, String> {
    let rows = rows(bytes)?;
    let mut plan = Plan::new(Format::CcSwitch);
    let mut taken = HashSet::new();
    for row in rows {
        let item = format!("CC Switch {} provider {:?}", row.app, row.name);
        let settings: Value = match serde_json::from_str(&row.settings) {
            Ok(Value::Object(m)) => Value::Object(m),
            _ => {
                plan.skipped.push(Skipped::new(
                    item,
                    "its settings_config is not a JSON object",
                ));
                continue;
            }
        };
        if let Some(kind) = row.meta.get("providerType").and_then(Value::as_str) {
            plan.skipped.push(Skipped::new(
                item,
                format!("it signs in through CC Switch ({kind}), with no key to import"),
            ));
            continue;
        }
        let base = slug(&row.name).unwrap_or_else(|| row.app.clone());
        let mut name_for = |taken: &mut HashSet<String>| {
            claim(taken, &[base.clone(), format!("{base}-{}", row.app)])
        };
        match row.app.as_str() {
            "claude" => claude(&row, &settings, &mut plan, &mut taken, &mut name_for, &item),
            "codex" => codex(&row, &settings, &mut plan, &mut taken, &mut name_for, &item),
            "gemini" => gemini(&row, &settings, &mut plan, &mut taken, &mut name_for, &item),
            other => plan.skipped.push(Skipped::new(
                item,
                format!("this import reads CC Switch's Claude Code, Codex and Gemini CLI providers, not {other}'s"),
            )),
        }
    }
    Ok(plan)
}

/// The `providers` rows, current first within each app, then in CC Switch's own order.
fn rows(bytes: &[u8]) -> Result<Vec<Row>, String> {
    // SQLite opens files only; a private copy (owner-only, removed on drop) is opened
    // read-only, so nothing of the upload is ever written back.
    let mut file = tempfile::NamedTempFile::new()
        .map_err(|e| format!("cannot make a temporary copy to open: {e}"))?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot make a temporary copy to open: {e}"))?;
    let conn = Connection::open_with_flags(
        file.path(),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("not a readable SQLite database: {e}"))?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| format!("not a readable SQLite database: {e}"))?;
    if version > NEWEST_SCHEMA {
        return Err(format!(
            "a CC Switch database of schema version {version}, newer than this import reads (up to {NEWEST_SCHEMA}); nothing was imported"
        ));
    }
    let mut columns = HashSet::new();
    conn.pragma(None, "table_info", "providers", |r| {
        columns.insert(r.get::<_, String>("name")?);
        Ok(())
    })
    .map_err(|e| format!("not a readable SQLite database: {e}"))?;
    let required = ["id", "app_type", "name", "settings_config"];
    if let Some(missing) = required.iter().find(|c| !columns.contains(**c)) {
        return Err(if columns.is_empty() {
            "not a CC Switch database: it has no providers table".to_owned()
        } else {
            format!("not a CC Switch database of a known version: its providers table has no {missing} column")
        });
    }
    // Columns later schema versions added, read when there.
    let optional = |c: &str, fallback: &str| {
        if columns.contains(c) {
            c.to_owned()
        } else {
            fallback.to_owned()
        }
    };
    let sql = format!(
        "SELECT app_type, name, settings_config, {current}, {meta} FROM providers \
         ORDER BY app_type, {current} DESC, {sort} IS NULL, {sort}, {created}, id",
        current = optional("is_current", "0"),
        meta = optional("meta", "'{}'"),
        sort = optional("sort_index", "NULL"),
        created = optional("created_at", "0"),
    );
    let mut statement = conn
        .prepare(&sql)
        .map_err(|e| format!("cannot read its providers: {e}"))?;
    let rows = statement
        .query_map([], |r| {
            let meta: Option<String> = r.get(4)?;
            Ok(Row {
                app: r.get(0)?,
                name: r.get(1)?,
                settings: r.get(2)?,
                current: r.get::<_, Option<bool>>(3)?.unwrap_or(false),
                meta: meta
                    .and_then(|m| serde_json::from_str(&m).ok())
                    .unwrap_or_default(),
            })
        })
        .and_then(|rows| rows.collect::<Result<Vec<Row>, _>>())
        .map_err(|e| format!("cannot read its providers: {e}"))?;
    Ok(rows)
}

fn text<'v>(map: Option<&'v Value>, key: &str) -> Option<&'v str> {
    map?.get(key)?
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn claude(
    row: &Row,
    settings: &Value,
    plan: &mut Plan,
    taken: &mut HashSet<String>,
    name_for: &mut dyn FnMut(&mut HashSet<String>) -> String,
    item: &str,
) {
    let env = settings.get("env");
    let base_url = text(env, "ANTHROPIC_BASE_URL");
    // CC Switch names the variable that holds the key in meta.apiKeyField; either works.
    let field = row.meta.get("apiKeyField").and_then(Value::as_str);
    let key = field
        .and_then(|f| text(env, f))
        .or_else(|| text(env, "ANTHROPIC_AUTH_TOKEN"))
        .or_else(|| text(env, "ANTHROPIC_API_KEY"));
    if base_url.is_none() && key.is_none() {
        plan.skipped.push(Skipped::new(
            item,
            "it has no base URL and no key: Claude Code signs in with its own login there",
        ));
        return;
    }
    match row.meta.get("apiFormat").and_then(Value::as_str) {
        None | Some("anthropic") => {}
        Some(other) => {
            plan.skipped.push(Skipped::new(
                item,
                format!("it speaks {other} through CC Switch's own converter; add it by hand as a provider of that kind"),
            ));
            return;
        }
    }
    let url =
        base_url.map(|u| with_version(&strip_endpoint(u, &["/v1/messages", "/messages"]), "/v1"));
    let mut p = NewProvider::new(name_for(taken), ProviderKind::Anthropic, url);
    for var in [
        "ANTHROPIC_MODEL",
        "ANTHROPIC_DEFAULT_OPUS_MODEL",
        "ANTHROPIC_DEFAULT_SONNET_MODEL",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL",
        "ANTHROPIC_SMALL_FAST_MODEL",
    ] {
        if let Some(m) = text(env, var) {
            p.add_model(m);
        }
    }
    p.set_key(KeyFound::literal(key), &mut plan.skipped);
    if row.current {
        let main = text(env, "ANTHROPIC_MODEL");
        for (pattern, var) in CLAUDE_SLOTS {
            let small = (var == "ANTHROPIC_DEFAULT_HAIKU_MODEL")
                .then(|| text(env, "ANTHROPIC_SMALL_FAST_MODEL"))
                .flatten();
            let model = text(env, var).or(small).or(main);
            let route = NewRoute::new(pattern, &p.name, model);
            plan.route(route, &format!("{item}: Claude Code's {pattern} slot"));
        }
    }
    plan.providers.push(p);
}

fn codex(
    row: &Row,
    settings: &Value,
    plan: &mut Plan,
    taken: &mut HashSet<String>,
    name_for: &mut dyn FnMut(&mut HashSet<String>) -> String,
    item: &str,
) {
    let key = text(settings.get("auth"), "OPENAI_API_KEY");
    let config_text = settings.get("config").and_then(Value::as_str).unwrap_or("");
    let config: toml::Table = match toml::from_str(config_text) {
        Ok(t) => t,
        Err(e) => {
            plan.skipped.push(Skipped::new(
                item,
                format!("its config.toml does not parse: {}", e.message()),
            ));
            return;
        }
    };
    let model = config.get("model").and_then(toml::Value::as_str);
    let chosen = config.get("model_provider").and_then(toml::Value::as_str);
    let custom = chosen.and_then(|id| {
        config
            .get("model_providers")
            .and_then(|all| all.get(id))
            .and_then(toml::Value::as_table)
    });
    let base_url = custom
        .and_then(|t| t.get("base_url"))
        .and_then(toml::Value::as_str)
        .map(|u| strip_endpoint(u, &["/responses", "/chat/completions"]));
    if base_url.is_none() && key.is_none() {
        plan.skipped.push(Skipped::new(
            item,
            "it has no base URL and no key: Codex signs in with its ChatGPT login there",
        ));
        return;
    }
    let kind = match base_url.as_deref().and_then(host).as_deref() {
        None | Some("api.openai.com") => ProviderKind::OpenAi,
        Some(_) => ProviderKind::OpenAiCompatible,
    };
    let mut p = NewProvider::new(name_for(taken), kind, base_url);
    // Codex speaks Responses; a relay CC Switch does not convert for takes it too.
    let wire = custom
        .and_then(|t| t.get("wire_api"))
        .and_then(toml::Value::as_str)
        .unwrap_or("responses");
    let converted = row.meta.get("apiFormat").and_then(Value::as_str) == Some("openai_chat");
    if kind == ProviderKind::OpenAiCompatible && wire == "responses" && !converted {
        p.dialects = vec!["openai_responses".into()];
    }
    add_with_model(p, row, model, key, plan, item);
}

/// `p` with the one model its app is set to and its key; the app's current provider also
/// gets a route for that model, so what the app asked for keeps going there.
fn add_with_model(
    mut p: NewProvider,
    row: &Row,
    model: Option<&str>,
    key: Option<&str>,
    plan: &mut Plan,
    item: &str,
) {
    if let Some(m) = model {
        p.add_model(m);
    }
    p.set_key(KeyFound::literal(key), &mut plan.skipped);
    if let (true, Some(m)) = (row.current, model) {
        plan.route(
            NewRoute::new(m, &p.name, None),
            &format!("{item}: model {m}"),
        );
    }
    plan.providers.push(p);
}

fn gemini(
    row: &Row,
    settings: &Value,
    plan: &mut Plan,
    taken: &mut HashSet<String>,
    name_for: &mut dyn FnMut(&mut HashSet<String>) -> String,
    item: &str,
) {
    let env = settings.get("env");
    let key = text(env, "GEMINI_API_KEY");
    let base_url = text(env, "GOOGLE_GEMINI_BASE_URL");
    if base_url.is_none() && key.is_none() {
        plan.skipped.push(Skipped::new(
            item,
            "it has no base URL and no key: Gemini CLI signs in with its Google login there",
        ));
        return;
    }
    let url = base_url.map(|u| with_version(u, "/v1beta"));
    let p = NewProvider::new(name_for(taken), ProviderKind::Gemini, url);
    let model = text(env, "GEMINI_MODEL");
    add_with_model(p, row, model, key, plan, item);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed sample, made by tests/fixtures/import/make-cc-switch-db.py with CC
    /// Switch's own CREATE TABLE statements.
    const SAMPLE: &[u8] = include_bytes!("../../../tests/fixtures/import/cc-switch.db");

    #[test]
    fn reads_claude_codex_and_gemini_providers_and_the_current_slots() {
        let plan = super::super::read("cc-switch.db", SAMPLE, None, &|_| None).unwrap();
        assert_eq!(plan.format, Format::CcSwitch);
        let deepseek = plan
            .providers
            .iter()
            .find(|p| p.name == "deepseek")
            .unwrap();
        assert_eq!(deepseek.kind, ProviderKind::Anthropic);
        assert_eq!(
            deepseek.base_url.as_deref(),
            Some("https://api.deepseek.com/anthropic/v1")
        );
        assert_eq!(deepseek.models, ["deepseek-v4-pro", "deepseek-v4-flash"]);
        assert!(deepseek.key.is_some() && deepseek.key_mask.as_deref() != Some(""));
        let slots: Vec<(&str, &str, Option<&str>)> = plan
            .routes
            .iter()
            .filter(|r| r.pattern.starts_with("claude-"))
            .map(|r| (r.pattern.as_str(), r.provider.as_str(), r.model.as_deref()))
            .collect();
        assert_eq!(
            slots,
            [
                ("claude-opus-*", "deepseek", Some("deepseek-v4-pro")),
                ("claude-sonnet-*", "deepseek", Some("deepseek-v4-pro")),
                ("claude-haiku-*", "deepseek", Some("deepseek-v4-flash")),
            ]
        );
        let codex = plan
            .providers
            .iter()
            .find(|p| p.kind == ProviderKind::OpenAiCompatible)
            .unwrap();
        assert_eq!(codex.dialects, ["openai_responses"]);
        let gemini = plan
            .providers
            .iter()
            .find(|p| p.kind == ProviderKind::Gemini)
            .unwrap();
        assert!(gemini.base_url.as_deref().unwrap().ends_with("/v1beta"));
        // The official entries (own logins) and other apps are reported, not imported.
        assert!(plan
            .skipped
            .iter()
            .any(|s| s.reason.contains("its own login")));
        assert!(plan.skipped.iter().any(|s| s.item.contains("opencode")));
        // Keys never serialize; their masks do.
        let shown = serde_json::to_string(&plan).unwrap();
        assert!(!shown.contains("sk-fake-ccswitch"), "{shown}");
    }

    #[test]
    fn a_newer_schema_or_another_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE other (a TEXT); PRAGMA user_version = 3;")
            .unwrap();
        drop(conn);
        let bytes = std::fs::read(&path).unwrap();
        let err = read(&bytes, &|_| None).err().unwrap();
        assert!(err.contains("no providers table"), "{err}");

        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA user_version = 99;").unwrap();
        drop(conn);
        let err = read(&std::fs::read(&path).unwrap(), &|_| None)
            .err()
            .unwrap();
        assert!(err.contains("schema version 99"), "{err}");

        let mut garbage = SQLITE_MAGIC.to_vec();
        garbage.extend_from_slice(&[7u8; 200]);
        let err = read(&garbage, &|_| None).err().unwrap();
        assert!(err.contains("not a readable SQLite database"), "{err}");
    }
}

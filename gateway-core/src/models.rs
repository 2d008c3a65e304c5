//! `GET /v1/models`: the models this gateway serves, in the OpenAI list shape, or the
//! Anthropic one when the request carries `anthropic-version` (as Anthropic SDKs do, and
//! Claude Code when it fills its `/model` picker from a gateway).
//!
//! What is listed, in order: each route's name — an exact name as written, a glob route
//! that renames (one with `model`) under a stand-in name ([`stand_in`]) — then each
//! provider's `models`. A glob that passes names through as they are (no `model`, such as a
//! provider's own `claude-*` family) has no one name to list. A renamed entry says where it
//! goes: `display_name` "claude-opus-* → deepseek-chat", and in the Anthropic shape a
//! `description` naming the provider (Claude Code's picker shows both).

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::config::Routes;

/// Fixed creation time for listed models: the gateway does not know when a provider made them.
const LISTED_CREATED: u64 = 1_700_000_000;
const LISTED_CREATED_RFC3339: &str = "2023-11-14T22:13:20Z";

/// The owner of a listed name that no provider serves (a provider's model list that no
/// route reaches).
const NO_OWNER: &str = "trimgate";

/// One listed model.
#[derive(Debug, PartialEq)]
struct Listed {
    id: String,
    /// The provider that serves it, if one does.
    owner: Option<String>,
    /// The model name sent upstream, when the route renames.
    upstream: Option<String>,
    /// The glob route it stands in for.
    pattern: Option<String>,
}

impl Listed {
    fn display_name(&self) -> String {
        match &self.upstream {
            Some(model) => format!("{} → {model}", self.pattern.as_deref().unwrap_or(&self.id)),
            None => self.id.clone(),
        }
    }

    fn description(&self) -> Option<String> {
        let model = self.upstream.as_deref()?;
        let provider = self.owner.as_deref().unwrap_or(NO_OWNER);
        Some(format!("Trimgate sends it to {provider} as {model}"))
    }
}

/// The name a renaming glob route is listed under: each `*` of its pattern replaced by the
/// model it sends to, written in ASCII letters, digits, `.`, `_` and `-` (any other
/// character becomes `-`). `claude-opus-*` sending to `deepseek-chat` is listed as
/// `claude-opus-deepseek-chat`, a name the route itself matches. `None` for a pattern with
/// other glob syntax (`?`, `[…]`, `{…}`).
pub fn stand_in(pattern: &str, model: &str) -> Option<String> {
    if pattern.contains(['?', '[', '{']) || !pattern.contains('*') {
        return None;
    }
    let model: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    Some(pattern.replace('*', &model))
}

fn listed(routes: &Routes) -> Vec<Listed> {
    let mut names: Vec<(String, Option<&str>)> = Vec::new();
    for route in routes.routes() {
        match (route.glob, route.model) {
            (false, _) => names.push((route.pattern.to_owned(), None)),
            (true, Some(model)) => {
                let Some(id) = stand_in(route.pattern, model) else {
                    continue;
                };
                // Only when the table sends it through this route: an earlier one may match first.
                let through_it = routes.resolve(&id).is_some_and(|t| {
                    Arc::ptr_eq(t.provider, route.provider) && t.rewrite == Some(model)
                });
                if through_it {
                    names.push((id, Some(route.pattern)));
                }
            }
            (true, None) => {}
        }
    }
    names.extend(routes.served_models().iter().map(|m| (m.clone(), None)));

    let mut out: Vec<Listed> = Vec::with_capacity(names.len());
    for (id, pattern) in names {
        if out.iter().any(|l| l.id == id) {
            continue;
        }
        let target = routes.resolve(&id);
        let owner = target.as_ref().map(|t| t.provider.name.clone());
        let upstream = target.and_then(|t| t.rewrite).map(str::to_owned);
        out.push(Listed {
            owner,
            upstream,
            pattern: pattern.map(str::to_owned),
            id,
        });
    }
    out
}

pub fn openai_list(routes: &Routes) -> Value {
    let data: Vec<Value> = listed(routes)
        .into_iter()
        .map(|l| {
            let owner = l.owner.as_deref().unwrap_or(NO_OWNER);
            json!({"id": l.id, "object": "model", "created": LISTED_CREATED, "owned_by": owner})
        })
        .collect();
    json!({"object": "list", "data": data})
}

pub fn anthropic_list(routes: &Routes) -> Value {
    let all = listed(routes);
    let data: Vec<Value> = all
        .iter()
        .map(|l| {
            let mut entry = Map::new();
            entry.insert("type".into(), "model".into());
            entry.insert("id".into(), l.id.clone().into());
            entry.insert("display_name".into(), l.display_name().into());
            entry.insert("created_at".into(), LISTED_CREATED_RFC3339.into());
            if let Some(description) = l.description() {
                entry.insert("description".into(), description.into());
            }
            Value::Object(entry)
        })
        .collect();
    let first = all.first().map(|l| l.id.as_str());
    let last = all.last().map(|l| l.id.as_str());
    json!({"data": data, "has_more": false, "first_id": first, "last_id": last})
}

/// One model in Gemini's shape (`models.get`, and each entry of `models.list`). Token
/// limits are left out: the gateway does not know the provider's.
fn gemini_entry(l: &Listed) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), format!("models/{}", l.id).into());
    entry.insert("version".into(), "trimgate".into());
    entry.insert("displayName".into(), l.display_name().into());
    if let Some(description) = l.description() {
        entry.insert("description".into(), description.into());
    }
    entry.insert(
        "supportedGenerationMethods".into(),
        json!(["generateContent", "streamGenerateContent", "countTokens"]),
    );
    Value::Object(entry)
}

/// `GET /v1beta/models`, as Google's `models.list` answers: one page, no `nextPageToken`.
pub fn gemini_list(routes: &Routes) -> Value {
    let models: Vec<Value> = listed(routes).iter().map(gemini_entry).collect();
    json!({ "models": models })
}

/// `GET /v1beta/models/{model}`: the listed model of that name, or one a route serves
/// (a glob's family), else `None`.
pub fn gemini_get(routes: &Routes, name: &str) -> Option<Value> {
    let id = name.strip_prefix("models/").unwrap_or(name);
    if let Some(l) = listed(routes).into_iter().find(|l| l.id == id) {
        return Some(gemini_entry(&l));
    }
    let target = routes.resolve(id)?;
    Some(gemini_entry(&Listed {
        id: id.to_owned(),
        owner: Some(target.provider.name.clone()),
        upstream: target.rewrite.map(str::to_owned),
        pattern: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn config(routes: &str) -> Config {
        let text = format!(
            r#"
            [providers.deepseek]
            kind = "deepseek"
            models = ["deepseek-chat"]
            [providers.local]
            kind = "openai_compatible"
            base_url = "http://127.0.0.1:11434/v1"
            models = ["qwen3"]
            {routes}
            "#
        );
        match Config::from_toml(&text, "t") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    fn ids(list: &Value) -> Vec<&str> {
        list["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str())
            .collect()
    }

    /// Claude Code's slots mapped by globs are listed under names the globs match, each
    /// saying where it goes; exact aliases under their own name; then the providers' models.
    #[test]
    fn anthropic_list_names_what_the_slot_routes_map() {
        let c = config(
            r#"
            [[routes]]
            match = "claude-opus-*"
            provider = "deepseek"
            model = "deepseek-reasoner"
            [[routes]]
            match = "claude-haiku-*"
            provider = "local"
            model = "qwen3:8b"
            [[routes]]
            match = "claude-subagent"
            provider = "local"
            model = "qwen3"
            [[routes]]
            match = "qwen*"
            provider = "local"
            "#,
        );
        let list = anthropic_list(&c.routes);
        assert_eq!(
            ids(&list),
            [
                "claude-opus-deepseek-reasoner",
                "claude-haiku-qwen3-8b",
                "claude-subagent",
                "deepseek-chat",
                "qwen3"
            ]
        );
        let opus = &list["data"][0];
        assert_eq!(opus["type"], "model");
        assert_eq!(opus["display_name"], "claude-opus-* → deepseek-reasoner");
        assert_eq!(
            opus["description"],
            "Trimgate sends it to deepseek as deepseek-reasoner"
        );
        assert_eq!(opus["created_at"], LISTED_CREATED_RFC3339);
        assert_eq!(list["data"][2]["display_name"], "claude-subagent → qwen3");
        // A name no route renames is itself, with no description.
        assert_eq!(list["data"][3]["display_name"], "deepseek-chat");
        assert!(list["data"][3].get("description").is_none());
        assert_eq!(
            (list["first_id"].as_str(), list["last_id"].as_str()),
            (Some("claude-opus-deepseek-reasoner"), Some("qwen3"))
        );
        // Every listed stand-in goes where the listing says.
        let t = c.routes.resolve("claude-haiku-qwen3-8b").unwrap();
        assert_eq!(
            (t.provider.name.as_str(), t.rewrite),
            ("local", Some("qwen3:8b"))
        );

        // The OpenAI shape lists the same names, owned by their providers.
        let openai = openai_list(&c.routes);
        assert_eq!(ids(&openai), ids(&list));
        assert_eq!(openai["data"][0]["owned_by"], "deepseek");
        assert_eq!(openai["data"][0]["object"], "model");
    }

    /// A glob shadowed by an earlier route, or written with syntax other than `*`, has no
    /// stand-in: a listed name is always one the table sends through that route.
    #[test]
    fn a_stand_in_is_listed_only_where_its_route_takes_it() {
        let c = config(
            r#"
            [[routes]]
            match = "claude-*"
            provider = "local"
            [[routes]]
            match = "claude-opus-*"
            provider = "deepseek"
            model = "deepseek-chat"
            [[routes]]
            match = "gpt-?"
            provider = "local"
            model = "qwen3"
            "#,
        );
        assert_eq!(ids(&anthropic_list(&c.routes)), ["deepseek-chat", "qwen3"]);
        assert_eq!(
            stand_in("claude-sonnet-*", "Qwen/Qwen3 Coder"),
            Some("claude-sonnet-Qwen-Qwen3-Coder".into())
        );
        assert_eq!(stand_in("gpt-?", "x"), None);
        assert_eq!(stand_in("exact", "x"), None);
    }
}

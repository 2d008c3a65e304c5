//! claude-code-router's `~/.claude-code-router/config.json`: `Providers` (each with `name`,
//! `api_base_url` — the full chat endpoint —, `api_key`, `models` and an optional
//! `transformer`) and `Router`, whose values are `"provider,model"`. Values may name
//! environment variables as `$VAR` or `${VAR}`, as claude-code-router expands them.
//!
//! The router picks by what a request is: Claude Code's haiku requests go to `background`,
//! everything else to `default` — which is what the routes of Claude Code's model slots
//! say here. Its other rules (`think`, `longContext`, `webSearch`, `image`) look inside the
//! request, which routes by model name cannot, so they are reported. So are transformers
//! beyond the dialect a provider speaks (`maxtoken`, `tooluse`, …): Trimgate does not
//! rewrite requests that way.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{
    claim, openai_kind, slug, strip_endpoint, with_version, Format, KeyFound, NewProvider,
    NewRoute, Plan, Skipped,
};
use crate::config::ProviderKind;

/// Transformers that only say which dialect a provider speaks, which its kind here says.
const DIALECT_TRANSFORMERS: [&str; 6] = [
    "anthropic",
    "gemini",
    "openai",
    "deepseek",
    "openrouter",
    "groq",
];

/// The slots `default` serves, and the ones `background` takes when it is set.
const MAIN_SLOTS: [&str; 2] = ["claude-opus-*", "claude-sonnet-*"];
const BACKGROUND_SLOTS: [&str; 2] = ["claude-haiku-*", "claude-3-5-haiku-*"];

pub(super) fn read(bytes: &[u8], env: &dyn Fn(&str) -> Option<String>) -> Result<Plan, String> {
    let config: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}"))?;
    let providers = config
        .get("Providers")
        .ok_or("not a claude-code-router config: it has no \"Providers\"")?
        .as_array()
        .ok_or("\"Providers\" is not a list")?;
    let mut plan = Plan::new(Format::ClaudeCodeRouter);
    let mut taken = HashSet::new();
    // claude-code-router's provider name → the name here.
    let mut names = HashMap::new();
    for (i, entry) in providers.iter().enumerate() {
        let own = entry.get("name").and_then(Value::as_str).unwrap_or("");
        let item = if own.is_empty() {
            format!("Providers[{i}]")
        } else {
            format!("provider {own:?}")
        };
        match provider(entry, own, &item, env, &mut plan, &mut taken) {
            Ok(p) => {
                names.insert(own.to_owned(), p.name.clone());
                plan.providers.push(p);
            }
            Err(reason) => plan.skipped.push(Skipped::new(item, reason)),
        }
    }
    if let Some(router) = config.get("Router").and_then(Value::as_object) {
        let target = |key: &str, plan: &mut Plan| -> Option<(String, String)> {
            let value = router.get(key)?.as_str()?;
            let Some((provider, model)) = value.split_once(',') else {
                plan.skipped.push(Skipped::new(
                    format!("Router.{key}"),
                    format!("{value:?} is not \"provider,model\""),
                ));
                return None;
            };
            match names.get(provider.trim()) {
                Some(name) => Some((name.clone(), model.trim().to_owned())),
                None => {
                    plan.skipped.push(Skipped::new(
                        format!("Router.{key}"),
                        format!("its provider {:?} is not imported", provider.trim()),
                    ));
                    None
                }
            }
        };
        let default = target("default", &mut plan);
        let background = target("background", &mut plan);
        let mut slots: Vec<(&str, &(String, String), &str)> = Vec::new();
        if let Some(b) = &background {
            slots.extend(BACKGROUND_SLOTS.iter().map(|s| (*s, b, "background")));
        }
        if let Some(d) = &default {
            slots.extend(MAIN_SLOTS.iter().map(|s| (*s, d, "default")));
            if background.is_none() {
                slots.extend(BACKGROUND_SLOTS.iter().map(|s| (*s, d, "default")));
            }
        }
        for (pattern, (provider, model), key) in slots {
            plan.route(
                NewRoute::new(pattern, provider, Some(model)),
                &format!("Router.{key}: Claude Code's {pattern} slot"),
            );
        }
        for (key, why) in [
            ("think", "a request that asks for thinking"),
            ("longContext", "a request past a token count"),
            ("webSearch", "a request with the web search tool"),
            ("image", "a request with an image"),
        ] {
            if router
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty())
            {
                plan.skipped.push(Skipped::new(
                    format!("Router.{key}"),
                    format!("it picks a model for {why}; routes here match the model name only"),
                ));
            }
        }
    }
    Ok(plan)
}

fn provider(
    entry: &Value,
    own: &str,
    item: &str,
    env: &dyn Fn(&str) -> Option<String>,
    plan: &mut Plan,
    taken: &mut HashSet<String>,
) -> Result<NewProvider, String> {
    let name = slug(own).ok_or("it has no name")?;
    let url = entry
        .get("api_base_url")
        .and_then(Value::as_str)
        .ok_or("it has no api_base_url")?;
    let url = match expand(url, env) {
        Expanded::Text(u) => u,
        Expanded::Unset(var) => {
            return Err(format!(
                "its api_base_url names the environment variable {var}, which is not set for the gateway"
            ))
        }
    };
    let uses = transformer_uses(entry.get("transformer").and_then(|t| t.get("use")));
    if let Some(vertex) = uses.iter().find(|u| u.starts_with("vertex")) {
        return Err(format!(
            "its transformer {vertex:?} signs in to Google Cloud, which this gateway does not"
        ));
    }
    let (kind, base_url) = if uses.iter().any(|u| u == "anthropic") {
        let base = with_version(&strip_endpoint(&url, &["/messages"]), "/v1");
        (ProviderKind::Anthropic, base)
    } else if uses.iter().any(|u| u == "gemini") {
        let base = strip_endpoint(&url, &["/models"]);
        (ProviderKind::Gemini, base)
    } else {
        let base = strip_endpoint(&url, &["/chat/completions"]);
        (openai_kind(&base), base)
    };
    let mut p = NewProvider::new(claim(taken, &[name]), kind, Some(base_url));
    if p.name != own {
        p.renamed_from = Some(own.to_owned());
    }
    for m in entry
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        p.add_model(m);
    }
    let key = match entry.get("api_key").and_then(Value::as_str) {
        None => KeyFound::None,
        Some(raw) => match expand(raw, env) {
            Expanded::Text(k) if k == raw => KeyFound::literal(Some(&k)),
            Expanded::Text(k) => KeyFound::Value {
                key: k,
                from: format!("env ({raw})"),
            },
            Expanded::Unset(var) => KeyFound::UnsetEnv(var),
        },
    };
    p.set_key(key, &mut plan.skipped);
    for u in uses
        .iter()
        .filter(|u| !DIALECT_TRANSFORMERS.contains(&u.as_str()))
    {
        plan.skipped.push(Skipped::new(
            format!("{item}: transformer {u:?}"),
            "it rewrites requests in a way this gateway does not; the provider is imported without it",
        ));
    }
    if let Some(per_model) = entry.get("transformer").and_then(Value::as_object) {
        for model in per_model.keys().filter(|k| *k != "use") {
            plan.skipped.push(Skipped::new(
                format!("{item}: transformer of model {model:?}"),
                "per-model request rewriting is not something this gateway does; the model is imported without it",
            ));
        }
    }
    Ok(p)
}

/// The names in a transformer's `use`: `"name"` or `["name", {options}]`.
fn transformer_uses(uses: Option<&Value>) -> Vec<String> {
    uses.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|u| match u {
            Value::String(s) => Some(s.clone()),
            Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_owned),
            _ => None,
        })
        .collect()
}

enum Expanded {
    Text(String),
    /// The first variable named that is not set.
    Unset(String),
}

/// `$VAR` and `${VAR}` replaced by their values, as claude-code-router does (`VAR` of
/// capitals, digits and `_` when unbraced).
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Expanded {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (var, len) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(after.len());
            let var = &after[..end];
            let valid = var.starts_with(|c: char| c.is_ascii_uppercase() || c == '_');
            (if valid { var } else { "" }, end)
        };
        if var.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        match env(var).filter(|v| !v.is_empty()) {
            Some(v) => out.push_str(&v),
            None => return Expanded::Unset(var.to_owned()),
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    Expanded::Text(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = include_bytes!("../../../tests/fixtures/import/claude-code-router.json");

    fn env(var: &str) -> Option<String> {
        (var == "DEEPSEEK_API_KEY").then(|| "sk-fake-deepseek-from-env-0001".to_owned())
    }

    #[test]
    fn reads_providers_router_slots_and_reports_the_rest() {
        let plan = super::super::read("config.json", SAMPLE, None, &env).unwrap();
        assert_eq!(plan.format, Format::ClaudeCodeRouter);
        let by = |n: &str| plan.providers.iter().find(|p| p.name == n).unwrap();
        let deepseek = by("deepseek");
        assert_eq!(deepseek.kind, ProviderKind::DeepSeek);
        assert_eq!(
            deepseek.base_url.as_deref(),
            Some("https://api.deepseek.com")
        );
        assert_eq!(
            deepseek.key_from.as_deref(),
            Some("env ($DEEPSEEK_API_KEY)")
        );
        let gemini = by("gemini");
        assert_eq!(gemini.kind, ProviderKind::Gemini);
        assert_eq!(gemini.base_url, None, "Google's own address is the kind's");
        let openrouter = by("openrouter");
        assert_eq!(openrouter.kind, ProviderKind::OpenAiCompatible);
        assert_eq!(
            openrouter.base_url.as_deref(),
            Some("https://openrouter.ai/api/v1")
        );
        let ollama = by("ollama");
        assert_eq!(
            ollama.base_url.as_deref(),
            Some("http://localhost:11434/v1")
        );
        let routes: Vec<(&str, &str, Option<&str>)> = plan
            .routes
            .iter()
            .map(|r| (r.pattern.as_str(), r.provider.as_str(), r.model.as_deref()))
            .collect();
        assert_eq!(
            routes,
            [
                ("claude-haiku-*", "ollama", Some("qwen2.5-coder:latest")),
                ("claude-3-5-haiku-*", "ollama", Some("qwen2.5-coder:latest")),
                ("claude-opus-*", "deepseek", Some("deepseek-chat")),
                ("claude-sonnet-*", "deepseek", Some("deepseek-chat")),
            ]
        );
        let items: Vec<&str> = plan.skipped.iter().map(|s| s.item.as_str()).collect();
        for expected in [
            "Router.think",
            "Router.longContext",
            "Router.webSearch",
            "provider \"modelscope\": transformer \"maxtoken\"",
            "provider \"deepseek\": transformer of model \"deepseek-chat\"",
            "key of provider \"siliconflow\"",
        ] {
            assert!(items.contains(&expected), "{expected} not in {items:?}");
        }
    }

    #[test]
    fn variables_expand_as_claude_code_router_does() {
        let env = |v: &str| (v == "A_KEY").then(|| "k1".to_owned());
        let text = |e: Expanded| match e {
            Expanded::Text(t) => t,
            Expanded::Unset(v) => format!("unset {v}"),
        };
        assert_eq!(text(expand("$A_KEY", &env)), "k1");
        assert_eq!(text(expand("pre-${A_KEY}-post", &env)), "pre-k1-post");
        assert_eq!(text(expand("sk-$lower", &env)), "sk-$lower");
        assert_eq!(text(expand("${NOPE}", &env)), "unset NOPE");
    }
}

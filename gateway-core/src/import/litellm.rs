//! A LiteLLM proxy's `config.yaml`: `model_list`, each entry a public `model_name` and the
//! `litellm_params` of one deployment (`model: "<provider>/<model>"`, `api_base`,
//! `api_key` — a literal or `os.environ/VAR`), and the `fallbacks` of `router_settings` or
//! `litellm_settings` (`[{model_name: [model_name, …]}]`).
//!
//! Deployments with the same provider, address and key become one provider; each
//! `model_name` a route to its deployment's model. LiteLLM balances load over several
//! deployments of one name; here the first takes the route and the others are its
//! fallbacks, and the report says so.

use std::collections::HashSet;

use yaml_serde::{Mapping, Value};

use super::{
    claim, host, strip_endpoint, with_version, Format, KeyFound, NewProvider, NewRoute, Plan,
    Skipped,
};
use crate::config::ProviderKind;

/// LiteLLM's prefixes for providers that speak OpenAI's chat API at a known address.
const OPENAI_LIKE: [(&str, &str); 6] = [
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("groq", "https://api.groq.com/openai/v1"),
    ("xai", "https://api.x.ai/v1"),
    ("mistral", "https://api.mistral.ai/v1"),
    ("together_ai", "https://api.together.xyz/v1"),
    ("fireworks_ai", "https://api.fireworks.ai/inference/v1"),
];

/// `litellm_params` read here; any other is reported.
const READ_PARAMS: [&str; 4] = ["model", "api_base", "base_url", "api_key"];

/// One deployment's provider, before deployments are grouped.
struct Target {
    prefix: String,
    kind: ProviderKind,
    base_url: Option<String>,
    model: String,
}

pub(super) fn read(bytes: &[u8], env: &dyn Fn(&str) -> Option<String>) -> Result<Plan, String> {
    let config: Value =
        yaml_serde::from_slice(bytes).map_err(|e| format!("not valid YAML: {e}"))?;
    let list = config
        .get("model_list")
        .ok_or("not a LiteLLM config: it has no model_list")?
        .as_sequence()
        .ok_or("model_list is not a list")?;
    // The config's own `environment_variables` come before the gateway's environment.
    let own_env = config
        .get("environment_variables")
        .and_then(Value::as_mapping);
    let lookup = |var: &str| {
        own_env
            .and_then(|m| m.get(var))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| env(var))
    };
    let mut plan = Plan::new(Format::LiteLlm);
    let mut taken = HashSet::new();
    // (prefix, base URL, key as written) of each provider made, in plan order.
    let mut groups: Vec<(String, Option<String>, String)> = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let name = entry
            .get("model_name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let item = if name.is_empty() {
            format!("model_list[{i}]")
        } else {
            format!("model {name:?}")
        };
        if name.is_empty() {
            plan.skipped
                .push(Skipped::new(item, "it has no model_name"));
            continue;
        }
        let Some(params) = entry.get("litellm_params").and_then(Value::as_mapping) else {
            plan.skipped
                .push(Skipped::new(item, "it has no litellm_params"));
            continue;
        };
        let target = match target(params) {
            Ok(t) => t,
            Err(reason) => {
                plan.skipped.push(Skipped::new(item, reason));
                continue;
            }
        };
        let key_written = text(params, "api_key").unwrap_or("").to_owned();
        let group = (
            target.prefix.clone(),
            target.base_url.clone(),
            key_written.clone(),
        );
        let at = match groups.iter().position(|g| *g == group) {
            Some(at) => at,
            None => {
                let base = target.prefix.replace('_', "-");
                let mut p = NewProvider::new(
                    claim(&mut taken, &[base]),
                    target.kind,
                    target.base_url.clone(),
                );
                let key = match key_written.strip_prefix("os.environ/") {
                    Some(var) => KeyFound::env(var, &lookup),
                    None => KeyFound::literal(Some(&key_written)),
                };
                p.set_key(key, &mut plan.skipped);
                plan.providers.push(p);
                groups.push(group);
                groups.len() - 1
            }
        };
        let provider = &mut plan.providers[at];
        provider.add_model(&target.model);
        let provider = provider.name.clone();
        let unread: Vec<&str> = params
            .keys()
            .filter_map(Value::as_str)
            .filter(|k| !READ_PARAMS.contains(k))
            .collect();
        if !unread.is_empty() {
            plan.skipped.push(Skipped::new(
                format!("{item}: {}", unread.join(", ")),
                "per-deployment parameters and limits are not imported",
            ));
        }
        let model = (target.model != name).then_some(target.model.as_str());
        if let Some(route) = plan.routes.iter_mut().find(|r| r.pattern == name) {
            let step = format!("{provider}/{}", target.model);
            route.fallbacks.push(step.clone());
            plan.skipped.push(Skipped::new(
                format!("{item}: load balancing"),
                format!("a model name goes to one provider here: {step} is a fallback of the first deployment"),
            ));
        } else {
            plan.routes.push(NewRoute::new(name, &provider, model));
        }
    }
    for section in ["router_settings", "litellm_settings"] {
        let Some(settings) = config.get(section).and_then(Value::as_mapping) else {
            continue;
        };
        if let Some(fallbacks) = settings.get("fallbacks") {
            read_fallbacks(section, fallbacks, &mut plan);
        }
        for key in ["context_window_fallbacks", "content_policy_fallbacks"] {
            if settings.get(key).is_some() {
                plan.skipped.push(Skipped::new(
                    format!("{section}.{key}"),
                    "fallbacks on a kind of error are not imported: a route's fallbacks here are tried on any failure before an answer",
                ));
            }
        }
        if section == "router_settings" {
            for key in settings.keys().filter_map(Value::as_str) {
                if !key.ends_with("fallbacks") {
                    plan.skipped.push(Skipped::new(
                        format!("{section}.{key}"),
                        "router settings are not imported: this gateway has its own [retry] and routes",
                    ));
                }
            }
        }
    }
    Ok(plan)
}

fn text<'m>(params: &'m Mapping, key: &str) -> Option<&'m str> {
    params
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The provider a deployment's `model` and `api_base` point at.
fn target(params: &Mapping) -> Result<Target, String> {
    let full = text(params, "model").ok_or("its litellm_params has no model")?;
    let api_base = text(params, "api_base").or_else(|| text(params, "base_url"));
    let (prefix, model) = match full.split_once('/') {
        Some((p, m)) => (p.to_owned(), m.to_owned()),
        // LiteLLM knows some models without a prefix; these are the families it sends to
        // OpenAI and Anthropic.
        None if ["gpt-", "o1", "o3", "o4", "chatgpt-"]
            .iter()
            .any(|f| full.starts_with(f)) =>
        {
            ("openai".to_owned(), full.to_owned())
        }
        None if full.starts_with("claude-") => ("anthropic".to_owned(), full.to_owned()),
        None => {
            return Err(format!(
                "{full:?} names no provider (as in openai/{full}); add it by hand"
            ))
        }
    };
    let (kind, base_url) = match prefix.as_str() {
        "openai" => match api_base {
            Some(b) if host(b).as_deref() != Some("api.openai.com") => {
                (ProviderKind::OpenAiCompatible, Some(strip_endpoint(b, &["/chat/completions"])))
            }
            _ => (ProviderKind::OpenAi, None),
        },
        "anthropic" => (
            ProviderKind::Anthropic,
            api_base.map(|b| with_version(&strip_endpoint(b, &["/messages"]), "/v1")),
        ),
        "deepseek" => (
            ProviderKind::DeepSeek,
            api_base.map(|b| strip_endpoint(b, &["/chat/completions"])),
        ),
        "gemini" => (
            ProviderKind::Gemini,
            api_base.map(|b| with_version(b, "/v1beta")),
        ),
        "ollama" | "ollama_chat" => (
            ProviderKind::OpenAiCompatible,
            Some(with_version(api_base.unwrap_or("http://localhost:11434"), "/v1")),
        ),
        "hosted_vllm" | "lm_studio" | "openai_like" => match api_base {
            Some(b) => (ProviderKind::OpenAiCompatible, Some(with_version(b, "/v1"))),
            None => return Err(format!("{prefix}/ needs an api_base, and it has none")),
        },
        other => match OPENAI_LIKE.iter().find(|(p, _)| *p == other) {
            Some((_, url)) => (
                ProviderKind::OpenAiCompatible,
                Some(api_base.map_or_else(|| (*url).to_owned(), |b| strip_endpoint(b, &["/chat/completions"]))),
            ),
            None => {
                return Err(format!(
                    "LiteLLM's {other}/ provider is not a kind this gateway has (OpenAI, Anthropic, DeepSeek, Gemini or an OpenAI-compatible server)"
                ))
            }
        },
    };
    let prefix = match prefix.as_str() {
        "ollama_chat" => "ollama".to_owned(),
        "hosted_vllm" => "vllm".to_owned(),
        _ => prefix,
    };
    Ok(Target {
        prefix,
        kind,
        base_url,
        model,
    })
}

/// `[{model_name: [model_name, …]}]`: each fallback becomes a `provider/model` step of the
/// route of the name it follows.
fn read_fallbacks(section: &str, fallbacks: &Value, plan: &mut Plan) {
    for rule in fallbacks.as_sequence().into_iter().flatten() {
        let Some(rule) = rule.as_mapping() else {
            continue;
        };
        for (from, to) in rule {
            let Some(from) = from.as_str() else { continue };
            let item = format!("{section}.fallbacks of {from:?}");
            let steps: Vec<String> =
                to.as_sequence()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .filter_map(|name| {
                        let step = plan.routes.iter().find(|r| r.pattern == name).map(|r| {
                            format!("{}/{}", r.provider, r.model.as_deref().unwrap_or(name))
                        });
                        if step.is_none() {
                            plan.skipped.push(Skipped::new(
                                item.clone(),
                                format!("{name:?} is not a model this import adds"),
                            ));
                        }
                        step
                    })
                    .collect();
            match plan.routes.iter_mut().find(|r| r.pattern == from) {
                Some(route) => {
                    for step in steps {
                        if !route.fallbacks.contains(&step) {
                            route.fallbacks.push(step);
                        }
                    }
                }
                None => plan.skipped.push(Skipped::new(
                    item,
                    format!("{from:?} is not a model this import adds"),
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = include_bytes!("../../../tests/fixtures/import/litellm.yaml");

    fn env(var: &str) -> Option<String> {
        (var == "OPENAI_API_KEY").then(|| "sk-fake-openai-from-env-0001".to_owned())
    }

    #[test]
    fn reads_deployments_into_providers_routes_and_fallbacks() {
        let plan = super::super::read("config.yaml", SAMPLE, None, &env).unwrap();
        assert_eq!(plan.format, Format::LiteLlm);
        let by = |n: &str| plan.providers.iter().find(|p| p.name == n).unwrap();
        assert_eq!(by("openai").kind, ProviderKind::OpenAi);
        assert_eq!(by("openai").key_from.as_deref(), Some("env OPENAI_API_KEY"));
        assert_eq!(by("anthropic").kind, ProviderKind::Anthropic);
        assert_eq!(
            by("ollama").base_url.as_deref(),
            Some("http://localhost:11434/v1")
        );
        assert_eq!(by("ollama").key, None);
        let route = |m: &str| plan.routes.iter().find(|r| r.pattern == m).unwrap();
        assert_eq!(route("gpt-4o").provider, "openai");
        assert_eq!(route("gpt-4o").model, None);
        assert_eq!(
            route("claude-sonnet").model.as_deref(),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(route("gpt-4o").fallbacks, ["anthropic/claude-sonnet-4-5"]);
        let items: Vec<&str> = plan.skipped.iter().map(|s| s.item.as_str()).collect();
        for expected in [
            "model \"azure-gpt\"",
            "key of provider \"deepseek\"",
            "router_settings.routing_strategy",
        ] {
            assert!(items.contains(&expected), "{expected} not in {items:?}");
        }
    }
}

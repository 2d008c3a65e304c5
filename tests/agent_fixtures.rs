//! The requests the real agents sent (captured by `tests/agents/capture.py` into
//! `tests/agents/fixtures/<agent>-<version>/`), translated for every provider kind of
//! another dialect: every field they carry is one the policy knows, nothing is refused,
//! the conversation arrives whole, and what is dropped is exactly what docs/dialects.md says.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use gateway_core::config::ProviderKind;
use gateway_core::dialect::Dialect;
use gateway_core::translate::{self, Target};
use serde_json::Value;

/// Every provider kind, by the dialect a translated request reaches it in.
const TARGETS: [(Dialect, ProviderKind); 6] = [
    (Dialect::OpenAiChat, ProviderKind::OpenAi),
    (Dialect::OpenAiResponses, ProviderKind::OpenAi),
    (Dialect::AnthropicMessages, ProviderKind::Anthropic),
    (Dialect::OpenAiChat, ProviderKind::OpenAiCompatible),
    (Dialect::OpenAiChat, ProviderKind::DeepSeek),
    (Dialect::Gemini, ProviderKind::Gemini),
];

/// What the policy of docs/dialects.md says each agent's requests lose on the way to a target with
/// no place for them, per (agent, target dialect, kind). Anything else dropped is a change
/// to the policy that docs/dialects.md must say.
fn expected_drops(agent: &str, to: Dialect, kind: ProviderKind) -> &'static [&'static str] {
    match (agent, to, kind) {
        ("claude", Dialect::OpenAiChat, ProviderKind::OpenAi)
        | ("claude", Dialect::OpenAiResponses, ProviderKind::OpenAi) => {
            &["context_management", "tools.defer_loading"]
        }
        ("claude", Dialect::OpenAiChat, _) => &[
            "context_management",
            "tools.defer_loading",
            "output_config.effort",
        ],
        ("codex", Dialect::OpenAiChat, ProviderKind::OpenAi) => &[
            "client_metadata",
            "tools[tool_search]",
            "tools[web_search]",
            "include",
        ],
        ("codex", Dialect::OpenAiChat, _) => &[
            "client_metadata",
            "tools[tool_search]",
            "tools[web_search]",
            "include",
            "reasoning.effort",
            "text.verbosity",
            "prompt_cache_key",
        ],
        ("claude", Dialect::Gemini, _) => &[
            "context_management",
            "metadata.user_id",
            "tools.defer_loading",
        ],
        ("codex", Dialect::Gemini, _) => &[
            "client_metadata",
            "tools[tool_search]",
            "tools[web_search]",
            "text.verbosity",
        ],
        ("codex", Dialect::AnthropicMessages, _) => &[
            "client_metadata",
            "tools[tool_search]",
            "tools[web_search]",
            "text.verbosity",
        ],
        _ => &[],
    }
}

/// What Gemini CLI's requests lose, which depends on what each carries: its sampling
/// `topK` everywhere, its thinking where a Chat server has no effort, and its router's
/// JSON schema where DeepSeek takes JSON without one.
fn gemini_drops(body: &Value, to: Dialect, kind: ProviderKind) -> Vec<&'static str> {
    let generation = &body["generationConfig"];
    let mut out = Vec::new();
    if !generation["topK"].is_null() {
        out.push("generationConfig.topK");
    }
    let effortless = to == Dialect::OpenAiChat && kind != ProviderKind::OpenAi;
    if !generation["thinkingConfig"].is_null() && effortless {
        out.push("generationConfig.thinkingConfig");
    }
    if !generation["responseJsonSchema"].is_null() && kind == ProviderKind::DeepSeek {
        out.push("generationConfig.responseJsonSchema");
    }
    out
}

fn fixtures() -> Vec<(String, PathBuf, Value)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/fixtures");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let agent = dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .split('-')
            .next()
            .unwrap()
            .to_owned();
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let fixture: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            out.push((agent.clone(), path, fixture));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    assert!(out.len() >= 4, "no agent fixtures under {}", root.display());
    out
}

fn dialect_of(path: &str) -> Dialect {
    if path.contains("/models/") && path.contains(':') {
        Dialect::Gemini
    } else if path.starts_with("/v1/messages") {
        Dialect::AnthropicMessages
    } else if path.starts_with("/v1/responses") {
        Dialect::OpenAiResponses
    } else {
        Dialect::OpenAiChat
    }
}

/// Tool calls and tool results in a request of any dialect, by their ids.
fn tool_ids(v: &Value) -> (Vec<String>, Vec<String>) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    fn walk(v: &Value, calls: &mut Vec<String>, results: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                let kind = o.get("type").and_then(Value::as_str);
                let id = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
                match kind {
                    Some("tool_use") | Some("function_call") => calls.extend(
                        id("id")
                            .filter(|_| kind == Some("tool_use"))
                            .or_else(|| id("call_id")),
                    ),
                    Some("tool_result") => results.extend(id("tool_use_id")),
                    Some("function_call_output") => results.extend(id("call_id")),
                    _ => {}
                }
                // Gemini's calls and results name their ids inside the part.
                if let Some(call) = o.get("functionCall") {
                    calls.extend(call.get("id").and_then(Value::as_str).map(str::to_owned));
                }
                if let Some(result) = o.get("functionResponse") {
                    results.extend(result.get("id").and_then(Value::as_str).map(str::to_owned));
                }
                if o.get("role").and_then(Value::as_str) == Some("tool") {
                    results.extend(id("tool_call_id"));
                }
                if let Some(tc) = o.get("tool_calls").and_then(Value::as_array) {
                    calls.extend(
                        tc.iter()
                            .filter_map(|c| c.get("id")?.as_str().map(str::to_owned)),
                    );
                }
                for (k, child) in o {
                    if k != "tool_calls" {
                        walk(child, calls, results);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, calls, results)),
            _ => {}
        }
    }
    walk(v, &mut calls, &mut results);
    calls.sort();
    results.sort();
    (calls, results)
}

#[test]
fn every_field_the_agents_send_is_one_the_policy_names() {
    for (_, path, fixture) in fixtures() {
        let dialect = dialect_of(fixture["path"].as_str().unwrap());
        let table = translate::fields(dialect);
        for key in fixture["body"].as_object().unwrap().keys() {
            assert!(
                table.iter().any(|(name, _)| name == key),
                "{}: the {dialect} field `{key}` is new: decide in its codec's FIELDS whether it is carried, dropped or refused, and say so in docs/dialects.md",
                path.display()
            );
        }
    }
}

#[test]
fn agent_requests_reach_every_provider_kind_whole_and_report_what_they_lose() {
    let mut table: BTreeMap<(String, String), String> = BTreeMap::new();
    for (agent, path, fixture) in fixtures() {
        let from = dialect_of(fixture["path"].as_str().unwrap());
        let body = serde_json::to_vec(&fixture["body"]).unwrap();
        let (calls, results) = tool_ids(&fixture["body"]);
        for (to, kind) in TARGETS {
            if to == from {
                continue;
            }
            let target = Target {
                dialect: to,
                provider: "p",
                kind,
                strict: false,
                max_output_tokens: None,
            };
            let stream = fixture["path"]
                .as_str()
                .unwrap()
                .contains(":streamGenerateContent")
                || fixture["body"]["stream"] == true;
            let (_, out, report) = translate::request_for(from, &body, "m".into(), stream, &target)
                .unwrap_or_else(|e| panic!("{} to {to} ({}): {e}", path.display(), kind.as_str()));
            let out: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(
                tool_ids(&out),
                (calls.clone(), results.clone()),
                "{} to {to}: tool calls and results must arrive paired and whole",
                path.display()
            );
            let mut dropped: Vec<&str> = report.dropped().iter().map(String::as_str).collect();
            let mut expected = expected_drops(&agent, to, kind).to_vec();
            if agent == "gemini" {
                expected = gemini_drops(&fixture["body"], to, kind);
            }
            dropped.sort_unstable();
            expected.sort_unstable();
            assert_eq!(
                dropped,
                expected,
                "{} to {to} ({})",
                path.display(),
                kind.as_str()
            );
            table.insert(
                (agent.clone(), format!("{to} ({})", kind.as_str())),
                dropped.join(", "),
            );
        }
    }
    for ((agent, target), dropped) in table {
        println!("{agent} → {target}: dropped {dropped}");
    }
}

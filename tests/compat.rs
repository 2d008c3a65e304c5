//! The compatibility policy end to end: what a translated request leaves out is named in
//! `x-trimgate-dropped` and the ledger row; what cannot be carried is refused in the
//! client's shape, naming the field and the real provider, with nothing sent upstream; and
//! a client's own credentials reach only a provider configured to receive them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::{MockConfig, MOCK_OAUTH_TOKEN};
use serde_json::{json, Value};

/// Routes `claude-*` to the mock's OpenAI side and `gpt-*` to its Anthropic side.
fn crossed(mock_url: &str, extra_provider: &str) -> String {
    mock_config(
        mock_url,
        "",
        &format!(
            "[[routes]]\nmatch = \"claude-*\"\nprovider = \"mock-openai\"\n[[routes]]\nmatch = \"gpt-*\"\nprovider = \"mock-anthropic\"\n{extra_provider}"
        ),
    )
}

/// A Claude Code turn as 2.1.x sends it: adaptive thinking, an effort, context editing,
/// a JSON user id, a deferred tool.
fn claude_code_turn() -> Value {
    json!({
        "model": "claude-sonnet-4-6", "max_tokens": 128000, "stream": false,
        "metadata": {"user_id": "{\"device_id\":\"bf265275af584aadbf5ebd73ecb7b92e889c2284c12acadff0b0fecfceb19b74\",\"account_uuid\":\"\",\"session_id\":\"s-42\"}"},
        "thinking": {"type": "adaptive", "display": "omitted"},
        "output_config": {"effort": "high"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "system": [{"type": "text", "text": "You are an agent."}],
        "messages": [{"role": "user", "content": "hello"}],
        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}, "defer_loading": true}],
    })
}

#[tokio::test]
async fn dropped_fields_are_named_in_the_response_and_the_ledger_row_and_mapped_ones_arrive() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&crossed(&mock.url, "")).await;
    let res = post_json(
        &format!("{}/v1/messages?beta=true", gw.url),
        claude_code_turn().to_string(),
        &[
            ("x-mock-tool", "none"),
            ("x-claude-code-session-id", "s-42"),
            ("anthropic-beta", "context-management-2025-06-27"),
        ],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["x-trimgate-dropped"],
        "context_management,tools.defer_loading"
    );
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["type"], "message");

    let sent: Value = serde_json::from_slice(&mock.state.requests()[0].body).unwrap();
    assert_eq!(
        mock.state.requests()[0].path_and_query,
        "/v1/chat/completions"
    );
    assert_eq!(
        sent["reasoning_effort"], "high",
        "output_config.effort is mapped"
    );
    assert_eq!(sent["max_completion_tokens"], 128000);
    let user = sent["user"].as_str().unwrap();
    assert_eq!(user.len(), 64, "a long user id goes as its SHA-256: {user}");
    assert!(sent.get("context_management").is_none());
    let headers = &mock.state.requests()[0].headers;
    assert!(!headers.contains_key("anthropic-beta") && !headers.contains_key("anthropic-version"));
    assert_eq!(headers["x-claude-code-session-id"], "s-42");

    assert!(
        eventually(std::time::Duration::from_secs(5), || !gw
            .records
            .records()
            .is_empty())
        .await
    );
    let record = gw.records.records()[0].clone();
    assert_eq!(record.dropped, "context_management,tools.defer_loading");
    assert_eq!(record.session.as_deref(), Some("s-42"));
}

#[tokio::test]
async fn a_field_that_would_change_the_task_is_refused_naming_the_real_provider() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&crossed(&mock.url, "")).await;
    let res = post_json(
        &format!("{}/v1/responses", gw.url),
        json!({"model": "gpt-5", "input": "hi", "previous_response_id": "resp_1"}).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 400);
    let err: Value = res.json().await.unwrap();
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("`previous_response_id`"), "{message}");
    assert!(
        message.contains("provider \"mock-anthropic\" (anthropic_messages)"),
        "{message}"
    );
    assert!(mock.state.requests().is_empty(), "nothing goes upstream");
    assert!(
        eventually(std::time::Duration::from_secs(5), || gw
            .records
            .records()
            .len()
            == 1)
        .await
    );
    assert_eq!(gw.records.records()[0].status, 400);
}

#[tokio::test]
async fn a_malformed_value_in_a_mapped_field_is_a_400_naming_it() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&crossed(&mock.url, "")).await;
    let mut turn = claude_code_turn();
    turn["output_config"] = json!({"effort": 7});
    let res = post_json(&format!("{}/v1/messages", gw.url), turn.to_string(), &[]).await;
    assert_eq!(res.status(), 400);
    let err: Value = res.json().await.unwrap();
    assert_eq!(err["type"], "error", "in the Anthropic client's own shape");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("output_config.effort"), "{message}");
    assert!(mock.state.requests().is_empty());
}

#[tokio::test]
async fn a_strict_provider_refuses_a_field_unknown_to_the_gateway() {
    let mock = start_mock(MockConfig::default()).await;
    let config = format!(
        "[[routes]]\nmatch = \"claude-*\"\nprovider = \"strict\"\n\n[providers.strict]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key = {{ env = \"TG_TEST_OPENAI_KEY\" }}\nstrict = true\n",
        mock.url
    );
    let gw = start_inprocess(&mock_config(&mock.url, "", &config)).await;
    let mut turn = claude_code_turn();
    turn["brand_new_hint"] = json!({"on": true});
    let res = post_json(&format!("{}/v1/messages", gw.url), turn.to_string(), &[]).await;
    assert_eq!(res.status(), 400);
    let message = res.json::<Value>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("`brand_new_hint`") && message.contains("\"strict\""),
        "{message}"
    );
    assert!(mock.state.requests().is_empty());

    // The same field to a provider that is not strict: dropped and reported.
    let lenient = start_inprocess(&crossed(&mock.url, "")).await;
    let res = post_json(
        &format!("{}/v1/messages", lenient.url),
        turn.to_string(),
        &[("x-mock-tool", "none")],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert!(res.headers()["x-trimgate-dropped"]
        .to_str()
        .unwrap()
        .contains("brand_new_hint"));
}

/// The client's own credentials: a Claude login as a bearer token and a key.
const CLIENT_HEADERS: [(&str, &str); 3] = [
    ("authorization", "Bearer sk-ant-oat01-mock-login"),
    ("x-api-key", "sk-client-own-key"),
    ("anthropic-beta", "oauth-2025-04-20"),
];

fn saw_client_credentials(mock: &Mock) -> bool {
    mock.state.requests().iter().any(|r| {
        r.headers.values().any(|v| {
            let v = v.to_str().unwrap_or("");
            v.contains(MOCK_OAUTH_TOKEN) || v.contains("sk-client-own-key")
        })
    })
}

#[tokio::test]
async fn client_credentials_never_reach_a_provider_of_any_kind_with_a_key_of_its_own() {
    let mock = start_mock(MockConfig {
        openai_key: None,
        anthropic_key: None,
        ..MockConfig::default()
    })
    .await;
    let mut providers = String::new();
    for kind in ["openai", "anthropic", "deepseek", "openai_compatible"] {
        providers.push_str(&format!(
            "[[routes]]\nmatch = \"{kind}-*\"\nprovider = \"p-{kind}\"\n\n[providers.p-{kind}]\nkind = \"{kind}\"\nbase_url = \"{url}/v1\"\nanthropic_base_url = \"{url}/v1\"\napi_key = {{ env = \"TG_TEST_OPENAI_KEY\" }}\n\n",
            url = mock.url
        ));
    }
    let gw = start_inprocess(&mock_config(&mock.url, "", &providers)).await;
    for kind in ["openai", "anthropic", "deepseek", "openai_compatible"] {
        for (path, body) in [
            (
                "/v1/chat/completions",
                json!({"model": format!("{kind}-m"), "messages": [{"role": "user", "content": "hi"}]}),
            ),
            (
                "/v1/messages",
                json!({"model": format!("{kind}-m"), "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}),
            ),
            (
                "/v1/responses",
                json!({"model": format!("{kind}-m"), "input": "hi"}),
            ),
        ] {
            let res = post_json(
                &format!("{}{path}", gw.url),
                body.to_string(),
                &CLIENT_HEADERS,
            )
            .await;
            assert_eq!(res.status(), 200, "{kind} {path}");
        }
    }
    assert_eq!(mock.state.requests().len(), 12);
    assert!(
        !saw_client_credentials(&mock),
        "a client credential reached a provider"
    );
}

#[tokio::test]
async fn a_claude_login_goes_to_the_keyless_anthropic_provider_and_never_to_another() {
    let mock = start_mock(MockConfig::default()).await;
    let login = format!(
        "[[routes]]\nmatch = \"claude-*\"\nprovider = \"claude-login\"\n[[routes]]\nmatch = \"gpt-*\"\nprovider = \"mock-openai\"\n\n[providers.claude-login]\nkind = \"anthropic\"\nbase_url = \"{}/v1\"\napi_key = {{ env = \"TG_TEST_UNSET_KEY\" }}\n",
        mock.url
    );
    let gw = start_inprocess(&mock_config(&mock.url, "", &login)).await;
    let turn = json!({"model": "claude-sonnet-4-6", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]});
    let url = format!("{}/v1/messages", gw.url);
    let res = post_json(&url, turn.to_string(), &CLIENT_HEADERS[..1]).await;
    // The mock refuses an OAuth login without its beta: the login itself was forwarded.
    assert_eq!(res.status(), 401);
    let res = post_json(
        &url,
        turn.to_string(),
        &[CLIENT_HEADERS[0], CLIENT_HEADERS[2]],
    )
    .await;
    assert_eq!(res.status(), 200);
    let sent = mock.state.requests();
    assert_eq!(
        sent[1].headers["authorization"],
        format!("Bearer {MOCK_OAUTH_TOKEN}").as_str()
    );

    // A model of another provider, from the same signed-in client: the login stays home.
    mock.state.clear();
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        json!({"model": "gpt-5", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]})
            .to_string(),
        &CLIENT_HEADERS,
    )
    .await;
    assert_eq!(res.status(), 200);
    assert!(!saw_client_credentials(&mock));
}

#[tokio::test]
async fn one_login_never_gets_another_logins_cached_answer() {
    let mock = start_mock(MockConfig {
        anthropic_key: None,
        ..MockConfig::default()
    })
    .await;
    let forward = format!(
        "[[routes]]\nmatch = \"claude-*\"\nprovider = \"shared\"\n\n[providers.shared]\nkind = \"anthropic\"\nbase_url = \"{}/v1\"\nclient_auth = \"forward\"\napi_key = {{ env = \"TG_TEST_ANTHROPIC_KEY\" }}\n\n[cache]\nexact = \"always\"\n",
        mock.url
    );
    let gw = start_inprocess(&mock_config(&mock.url, "", &forward)).await;
    let turn = json!({"model": "claude-sonnet-4-6", "max_tokens": 9, "messages": [{"role": "user", "content": "same question"}]}).to_string();
    let url = format!("{}/v1/messages", gw.url);
    for (key, cache) in [
        ("sk-user-a", "miss"),
        ("sk-user-b", "miss"),
        ("sk-user-a", "hit"),
    ] {
        let res = post_json(&url, turn.clone(), &[("x-api-key", key)]).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["x-trimgate-cache"], cache, "{key}");
    }
    let keys: Vec<String> = mock
        .state
        .requests()
        .iter()
        .map(|r| r.headers["x-api-key"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        keys,
        ["sk-user-a", "sk-user-b"],
        "each login's own key went upstream"
    );
}

/// The policy tables of docs/dialects.md list exactly the fields each codec's table names, each under
/// what the code does with it.
#[test]
fn readme_policy_tables_match_the_codecs() {
    use gateway_core::dialect::Dialect;
    use gateway_core::translate::{self, compat::Field};
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/dialects.md")).unwrap();
    for (marker, dialect) in [
        ("messages", Dialect::AnthropicMessages),
        ("responses", Dialect::OpenAiResponses),
        ("chat", Dialect::OpenAiChat),
        ("gemini", Dialect::Gemini),
    ] {
        let start = readme
            .find(&format!("<!-- policy:{marker} -->"))
            .unwrap_or_else(|| panic!("docs/dialects.md has no policy:{marker} table"));
        let end = readme.find(&format!("<!-- /policy:{marker} -->")).unwrap();
        let mut rows: Vec<(String, Vec<String>)> = Vec::new();
        for line in readme[start..end].lines() {
            let cells: Vec<&str> = line.split(" | ").collect();
            let Some(field) = cells.first().and_then(|c| c.strip_prefix("| `")) else {
                continue;
            };
            let field = field.trim_end_matches('`').to_owned();
            let targets = cells[1..]
                .iter()
                .map(|c| c.trim_end_matches(" |").to_owned())
                .collect();
            rows.push((field, targets));
        }
        let table = translate::fields(dialect);
        let listed: Vec<&str> = rows.iter().map(|(f, _)| f.as_str()).collect();
        let named: Vec<&str> = table.iter().map(|(f, _)| *f).collect();
        assert_eq!(
            listed, named,
            "docs/dialects.md's {marker} table and the codec's FIELDS differ"
        );
        for ((field, targets), (_, disposition)) in rows.iter().zip(table) {
            let says = |word: &str| targets.iter().all(|t| t.starts_with(word));
            match disposition {
                Field::Dropped => assert!(says("dropped"), "{marker} `{field}`: {targets:?}"),
                Field::Refused(_) => assert!(says("refused"), "{marker} `{field}`: {targets:?}"),
                Field::Carried => assert!(
                    targets
                        .iter()
                        .any(|t| t.contains("carried") || t.contains("mapped")),
                    "{marker} `{field}`: {targets:?}"
                ),
            }
        }
    }
}

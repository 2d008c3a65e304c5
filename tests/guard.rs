//! The secrets guard end to end: a request's secrets never reach the provider (the mock
//! shows what it received), the answer gets them back for the session that sent them, in
//! every dialect, streamed or not, native or translated; `block` refuses in the client's
//! shape naming kind and place; rules and keys choose the mode.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

const GITHUB: &str = "ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5q";
const DB_PASSWORD: &str = "Zx9-pQ2_mL7vB4";

fn env_file() -> String {
    format!("GITHUB_TOKEN={GITHUB}\nDB_PASSWORD={DB_PASSWORD}\nDEBUG=true\n")
}

fn config(mock_url: &str, extra: &str) -> String {
    format!(
        "{}\n[providers.mock-gemini]\nkind = \"gemini\"\nbase_url = \"{mock_url}/v1beta\"\napi_key = {{ env = \"TG_TEST_GEMINI_KEY\" }}\nmodels = [\"gemini-2.5-pro\"]\n",
        mock_config(mock_url, "", extra)
    )
}

/// A request per dialect whose last item is the `.env` file as a tool result.
fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [
        {"role": "user", "content": "read .env"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
          "function": {"name": "read", "arguments": "{\"path\":\".env\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": env_file()},
    ]})
}

fn responses(stream: bool) -> Value {
    json!({"model": "gpt-5", "stream": stream, "input": [
        {"role": "user", "content": "read .env"},
        {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\".env\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": env_file()},
    ]})
}

fn messages(model: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 256, "stream": stream, "messages": [
        {"role": "user", "content": "read .env"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": ".env"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": env_file()}]},
    ]})
}

fn gemini() -> Value {
    json!({"contents": [
        {"role": "user", "parts": [{"text": "read .env"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"path": ".env"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"output": env_file()}}}]},
    ]})
}

async fn post(url: &str, path: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, String) {
    let mut req = client()
        .post(format!("{url}{path}"))
        .header("authorization", format!("Bearer {CLIENT_PLACEHOLDER}"))
        .header("x-api-key", CLIENT_PLACEHOLDER)
        .json(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

/// Whatever the provider received holds no value, and a placeholder instead.
fn provider_saw_only_placeholders(mock: &Mock) {
    let bodies: Vec<String> = mock
        .state
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert!(!bodies.is_empty());
    for body in &bodies {
        assert!(!body.contains(GITHUB), "the provider saw the token: {body}");
        assert!(!body.contains(DB_PASSWORD), "the provider saw the password");
    }
    assert!(bodies
        .iter()
        .any(|b| b.contains("TRIMGATE_SECRET_GITHUB_TOKEN_")));
}

/// The text a client got: a whole answer's body or a stream's frames joined (the mock
/// quotes the tool result back, the value's placeholder in it).
fn answered_text(body: &str) -> String {
    body.replace("\\n", "\n")
}

#[tokio::test]
async fn every_dialect_gets_its_values_back_and_the_provider_never_sees_them() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&config(&mock.url, "")).await;
    let cases: Vec<(&str, &str, Value)> = vec![
        ("chat", "/v1/chat/completions", chat("gpt-5", false)),
        ("chat stream", "/v1/chat/completions", chat("gpt-5", true)),
        ("responses", "/v1/responses", responses(false)),
        ("responses stream", "/v1/responses", responses(true)),
        (
            "messages",
            "/v1/messages",
            messages("claude-sonnet-5-5", false),
        ),
        (
            "messages stream",
            "/v1/messages",
            messages("claude-sonnet-5-5", true),
        ),
        (
            "gemini",
            "/v1beta/models/gemini-2.5-pro:generateContent",
            gemini(),
        ),
        (
            "gemini stream",
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            gemini(),
        ),
        // Translated both ways: Chat to an Anthropic provider, Messages to an OpenAI one.
        (
            "chat → anthropic",
            "/v1/chat/completions",
            chat("claude-sonnet-5-5", true),
        ),
        ("messages → openai", "/v1/messages", messages("gpt-5", true)),
    ];
    for (name, path, body) in cases {
        mock.state.clear();
        let id = format!("guard-{}", name.replace([' ', '→'], "-"));
        let (status, text) = post(
            &gw.url,
            path,
            &body,
            &[("x-request-id", &id), ("session-id", "s-one")],
        )
        .await;
        assert_eq!(status, 200, "{name}: {text}");
        provider_saw_only_placeholders(&mock);
        let text = answered_text(&text);
        assert!(
            text.contains(GITHUB),
            "{name}: the answer lacks the value: {text}"
        );
        assert!(
            !text.contains("TRIMGATE_SECRET_"),
            "{name}: a placeholder reached the client: {text}"
        );
        let records = gw.records.records();
        let row = records.iter().find(|r| r.request_id == id).unwrap();
        assert_eq!(row.secrets, "github_token:1,env_secret:1", "{name}");
    }
}

/// A placeholder another session sent is not restored in this one's answer; one the user
/// typed (never issued) stays as typed; the same secret twice is one placeholder.
#[tokio::test]
async fn scopes_look_alikes_and_repeats() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&config(&mock.url, "")).await;
    let (status, _) = post(
        &gw.url,
        "/v1/chat/completions",
        &chat("gpt-5", false),
        &[("session-id", "s-one")],
    )
    .await;
    assert_eq!(status, 200);
    let sent = String::from_utf8_lossy(&mock.state.requests()[0].body).into_owned();
    let at = sent.find("TRIMGATE_SECRET_GITHUB_TOKEN_").unwrap();
    let placeholder = &sent[at..at + "TRIMGATE_SECRET_GITHUB_TOKEN_".len() + 12];

    // Another session pastes session one's placeholder: the echo keeps it.
    let pasted = json!({"model": "gpt-5", "messages": [{"role": "user", "content": format!("what is {placeholder}?")}]});
    let (_, text) = post(
        &gw.url,
        "/v1/chat/completions",
        &pasted,
        &[("session-id", "s-two")],
    )
    .await;
    assert!(
        text.contains(placeholder) && !text.contains(GITHUB),
        "{text}"
    );
    // The same session asking about it gets the value.
    let (_, text) = post(
        &gw.url,
        "/v1/chat/completions",
        &pasted,
        &[("session-id", "s-one")],
    )
    .await;
    assert!(text.contains(GITHUB), "{text}");

    // A look-alike nobody issued stays as typed.
    let typed = "TRIMGATE_SECRET_GITHUB_TOKEN_0123456789ab";
    let body = json!({"model": "gpt-5", "messages": [{"role": "user", "content": format!("echo {typed}")}]});
    let (_, text) = post(
        &gw.url,
        "/v1/chat/completions",
        &body,
        &[("session-id", "s-one")],
    )
    .await;
    assert!(text.contains(typed), "{text}");

    // The same secret in two places, and two secrets sharing a prefix.
    mock.state.clear();
    let twin = format!("{}Z", &GITHUB[..GITHUB.len() - 1]);
    let body = json!({"model": "gpt-5", "messages": [{"role": "user", "content":
        format!("GITHUB_TOKEN={GITHUB}\ngit push https://x:{GITHUB}@github.com/o/r\nOTHER_TOKEN={twin}\n")}]});
    let (status, _) = post(
        &gw.url,
        "/v1/chat/completions",
        &body,
        &[("x-request-id", "twice")],
    )
    .await;
    assert_eq!(status, 200);
    let sent = String::from_utf8_lossy(&mock.state.requests()[0].body).into_owned();
    assert!(!sent.contains(GITHUB) && !sent.contains(&twin));
    let spans: Vec<&str> = sent
        .match_indices("TRIMGATE_SECRET_")
        .map(|(i, _)| {
            let end = sent[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap();
            &sent[i..i + end]
        })
        .collect();
    assert_eq!(spans.len(), 3, "{sent}");
    assert_eq!(spans[0], spans[1]);
    assert_ne!(spans[0], spans[2]);
}

/// `block` refuses in the client's own error shape, naming the kind and where, never the
/// value; nothing reaches the provider. `off` by a rule passes the request as sent.
#[tokio::test]
async fn block_and_off_by_rule() {
    let mock = start_mock(MockConfig::default()).await;
    let extra = r#"
[[guard.rules]]
match = "gpt-5-mini"
mode = "block"

[[guard.rules]]
provider = "mock-anthropic"
mode = "block"

[[guard.rules]]
provider = "mock-gemini"
mode = "off"
"#;
    let gw = start_inprocess(&config(&mock.url, extra)).await;
    let (status, text) = post(
        &gw.url,
        "/v1/chat/completions",
        &chat("gpt-5-mini", false),
        &[("x-request-id", "blocked-chat")],
    )
    .await;
    assert_eq!(status, 400, "{text}");
    let error: Value = serde_json::from_str(&text).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert_eq!(error["error"]["code"], "secret_blocked");
    assert!(message.contains("github_token"), "{message}");
    assert!(message.contains("messages[2].content, line 1"), "{message}");
    assert!(!text.contains(GITHUB) && !text.contains(DB_PASSWORD));

    let (status, text) = post(
        &gw.url,
        "/v1/messages",
        &messages("claude-sonnet-5-5", true),
        &[],
    )
    .await;
    assert_eq!(status, 400, "{text}");
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("messages[2].content[0].content, line 1"));
    assert!(
        mock.state.requests().is_empty(),
        "a blocked request reached the provider"
    );
    let records = gw.records.records();
    let row = records
        .iter()
        .find(|r| r.request_id == "blocked-chat")
        .unwrap();
    assert_eq!(row.status, 400);
    assert_eq!(row.error, Some("secret_blocked"));
    assert_eq!(row.secrets, "github_token:1,env_secret:1");

    // Off: the provider gets the request as sent.
    let (status, _) = post(
        &gw.url,
        "/v1beta/models/gemini-2.5-pro:generateContent",
        &gemini(),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    let sent = String::from_utf8_lossy(&mock.state.requests()[0].body).into_owned();
    assert!(sent.contains(GITHUB));
}

/// A gateway key's mode wins over the rules and the default.
#[tokio::test]
async fn a_gateway_keys_mode_wins() {
    let mock = start_mock(MockConfig::default()).await;
    let extra = r#"
[[gateway_keys]]
name = "strict"
key = { env = "TG_KEY_STRICT" }
guard = "block"

[[gateway_keys]]
name = "open"
key = { env = "TG_KEY_OPEN" }
guard = "off"
"#;
    let gw = start_inprocess_env(
        &config(&mock.url, extra),
        &[
            ("TG_KEY_STRICT", "tg-strict-key"),
            ("TG_KEY_OPEN", "tg-open-key"),
        ],
    )
    .await;
    let send = |key: &'static str| {
        let url = gw.url.clone();
        async move {
            let res = client()
                .post(format!("{url}/v1/chat/completions"))
                .bearer_auth(key)
                .json(&chat("gpt-5", false))
                .send()
                .await
                .unwrap();
            res.status().as_u16()
        }
    };
    assert_eq!(send("tg-strict-key").await, 400);
    assert!(mock.state.requests().is_empty());
    assert_eq!(send("tg-open-key").await, 200);
    let sent = String::from_utf8_lossy(&mock.state.requests()[0].body).into_owned();
    assert!(sent.contains(GITHUB));
}

/// A config with a bad guard section is refused at load, each problem with its path.
#[test]
fn bad_guard_config_is_refused_with_paths() {
    let text = r#"
[providers.p]
kind = "openai"
api_key = { env = "X" }
[guard]
mode = "sometimes"
use_hooks = ["nope"]
allow_patterns = ["("]
[[guard.patterns]]
id = "acme"
regex = "acme_[a-z"
[[guard.hooks]]
name = "h"
url = "ftp://x"
fail = "maybe"
timeout_ms = 0
[[guard.rules]]
mode = "block"
"#;
    let err = gateway_core::config::Config::from_toml(text, "test")
        .unwrap_err()
        .to_string();
    for path in [
        "guard.mode",
        "guard.use_hooks",
        "guard.allow_patterns[0]",
        "guard.patterns[0].regex",
        "guard.hooks[0].url",
        "guard.rules[0]",
    ] {
        assert!(err.contains(path), "{path} missing in: {err}");
    }
}

/// A hook server for the tests: what it answers is chosen by the path the config names.
async fn hook_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::routing::post;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let keep = seen.clone();
    let app = axum::Router::new()
        .route(
            "/{behaviour}",
            post(
                move |axum::extract::Path(behaviour): axum::extract::Path<String>,
                      body: bytes::Bytes| {
                    let keep = keep.clone();
                    async move {
                        let call: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        keep.lock().unwrap().push(call.clone());
                        let (code, text): (u16, String) = match behaviour.as_str() {
                            "allow" => (200, json!({"verdict": true}).to_string()),
                            "refuse" => (
                                200,
                                json!({"verdict": false, "reason": "PII: a phone number"})
                                    .to_string(),
                            ),
                            // Masks the user's text, as a Presidio hook would.
                            "mask" => {
                                let mut request = call["request"]["json"].clone();
                                request["messages"][0]["content"] = json!("call me at <PHONE>");
                                (
                                    200,
                                    json!({"verdict": true, "transformedData": {"request": {"json": request}}})
                                        .to_string(),
                                )
                            }
                            "slow" => {
                                tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                                (200, json!({"verdict": true}).to_string())
                            }
                            "garbage" => (200, "<html>oops</html>".to_owned()),
                            _ => (500, "{}".to_owned()),
                        };
                        (axum::http::StatusCode::from_u16(code).unwrap(), text)
                    }
                },
            ),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, seen)
}

/// Hooks per rule: a refusal is a 400 in the client's shape; a masking hook's request is
/// what the provider gets (and it saw placeholders, never a secret); a hook that times
/// out, answers garbage or 500 goes on (open) or refuses with 503 (closed); a post hook
/// sees the whole answer.
#[tokio::test]
async fn guardrail_hooks() {
    let mock = start_mock(MockConfig::default()).await;
    let (hooks, seen) = hook_server().await;
    let extra = format!(
        r#"
[[guard.hooks]]
name = "refuser"
url = "{hooks}/refuse"
on = ["pre"]
[[guard.hooks]]
name = "masker"
url = "{hooks}/mask"
[[guard.hooks]]
name = "slow-open"
url = "{hooks}/slow"
timeout_ms = 300
[[guard.hooks]]
name = "garbage-open"
url = "{hooks}/garbage"
[[guard.hooks]]
name = "broken-closed"
url = "{hooks}/broken"
fail = "closed"
[[guard.hooks]]
name = "slow-closed"
url = "{hooks}/slow"
timeout_ms = 300
fail = "closed"

[[guard.rules]]
match = "gpt-5-mini"
hooks = ["refuser"]
[[guard.rules]]
match = "gpt-5"
hooks = ["masker", "slow-open", "garbage-open"]
[[guard.rules]]
match = "claude-*"
hooks = ["broken-closed"]
[[guard.rules]]
provider = "mock-gemini"
hooks = ["slow-closed"]
"#
    );
    let gw = start_inprocess(&config(&mock.url, &extra)).await;
    let user = |model: &str| json!({"model": model, "messages": [{"role": "user", "content": "call me at +1 555 0100"}]});

    let (status, text) = post(&gw.url, "/v1/chat/completions", &user("gpt-5-mini"), &[]).await;
    assert_eq!(status, 400, "{text}");
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error["error"]["code"], "guardrail_refused");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("PII: a phone number"));
    assert!(mock.state.requests().is_empty());

    // Masked, then two failing hooks that fail open: the masked request goes on.
    seen.lock().unwrap().clear();
    let mut body = user("gpt-5");
    body["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": format!("GITHUB_TOKEN={GITHUB}")}));
    let (status, text) = post(&gw.url, "/v1/chat/completions", &body, &[]).await;
    assert_eq!(status, 200, "{text}");
    let sent = String::from_utf8_lossy(&mock.state.requests()[0].body).into_owned();
    assert!(
        sent.contains("call me at <PHONE>") && !sent.contains("555 0100"),
        "{sent}"
    );
    assert!(!sent.contains(GITHUB));
    let calls = seen.lock().unwrap().clone();
    assert!(
        calls.iter().all(|c| !c.to_string().contains(GITHUB)),
        "a hook saw a secret"
    );
    let pre = calls
        .iter()
        .filter(|c| c["eventType"] == "beforeRequestHook")
        .count();
    let post_calls: Vec<&Value> = calls
        .iter()
        .filter(|c| c["eventType"] == "afterRequestHook")
        .collect();
    assert_eq!(pre, 3);
    // The masker (pre and post) saw the answer; the failing ones fail open there too.
    assert!(!post_calls.is_empty());
    assert!(post_calls[0]["response"]["json"]["choices"].is_array());

    // A streamed answer is not held back: the post hooks get its text once it has ended.
    seen.lock().unwrap().clear();
    let mut streamed = user("gpt-5");
    streamed["stream"] = json!(true);
    let (status, text) = post(&gw.url, "/v1/chat/completions", &streamed, &[]).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("data: [DONE]"));
    let got_it = eventually(std::time::Duration::from_secs(10), || {
        seen.lock().unwrap().iter().any(|c| {
            c["eventType"] == "afterRequestHook"
                && c["response"]["json"]["streamed"] == true
                && c["response"]["json"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("Hello from the mock"))
        })
    })
    .await;
    assert!(got_it, "{:?}", seen.lock().unwrap());

    // Fail closed: 503 in the client's shape, nothing upstream.
    mock.state.clear();
    let (status, text) = post(
        &gw.url,
        "/v1/messages",
        &messages("claude-sonnet-5-5", false),
        &[],
    )
    .await;
    assert_eq!(status, 503, "{text}");
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error["type"], "error");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("broken-closed"));
    let (status, text) = post(
        &gw.url,
        "/v1beta/models/gemini-2.5-pro:generateContent",
        &gemini(),
        &[],
    )
    .await;
    assert_eq!(status, 503, "{text}");
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error["error"]["code"], 503);
    assert!(mock.state.requests().is_empty());
}

/// The real binary: the placeholder key is the installation's (`guard-key` beside the
/// config, owner-only), so a secret keeps its placeholder across a restart, and another
/// installation names it differently; the window's request detail shows the bodies with
/// placeholders, never the value.
#[tokio::test]
async fn placeholders_survive_a_restart_and_the_detail_shows_no_value() {
    let mock = start_mock(MockConfig::default()).await;
    let toml = config(&mock.url, "[admin]\nkeep_request_bodies = true\n");
    let dir = tempfile::tempdir().unwrap();
    let placeholder_of = |mock: &Mock| {
        let sent = String::from_utf8_lossy(&mock.state.requests().pop().unwrap().body).into_owned();
        let at = sent.find("TRIMGATE_SECRET_GITHUB_TOKEN_").unwrap();
        sent[at..at + "TRIMGATE_SECRET_GITHUB_TOKEN_".len() + 12].to_owned()
    };
    let mut gw = Gateway::spawn_wrapped(&toml, &[], &[], "127.0.0.1:0", dir);
    let (status, _) = post(
        &gw.url,
        "/v1/chat/completions",
        &chat("gpt-5", false),
        &[("x-request-id", "detail-1")],
    )
    .await;
    assert_eq!(status, 200);
    let first = placeholder_of(&mock);
    let key_file = gw.dir.path().join("guard-key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // The request detail: bodies kept, placeholders only.
    let detail = admin_get(&gw, "/requests/detail-1").await;
    let shown = detail.to_string();
    assert!(shown.contains(&first), "{shown}");
    assert!(!shown.contains(GITHUB) && !shown.contains(DB_PASSWORD));

    gw.signal("TERM");
    assert!(gw.wait_exit(std::time::Duration::from_secs(20)).is_some());
    let dir = std::mem::replace(&mut gw.dir, tempfile::tempdir().unwrap());
    drop(gw);
    let gw = Gateway::spawn_wrapped(&toml, &[], &[], "127.0.0.1:0", dir);
    let (status, text) = post(&gw.url, "/v1/chat/completions", &chat("gpt-5", false), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        placeholder_of(&mock),
        first,
        "the placeholder changed with a restart"
    );
    assert!(text.contains(GITHUB));

    let other = Gateway::spawn(&toml);
    let (status, _) = post(
        &other.url,
        "/v1/chat/completions",
        &chat("gpt-5", false),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    assert_ne!(
        placeholder_of(&mock),
        first,
        "two installations share a key"
    );
}

/// The allow-list lets a value through as it is; a pattern of the user's own is found as
/// `custom` and given back like any other.
#[tokio::test]
async fn allow_list_and_custom_patterns() {
    let mock = start_mock(MockConfig::default()).await;
    let extra = format!(
        r#"
[guard]
allow = ["{GITHUB}"]
allow_patterns = ["Zx9-pQ2_.*"]

[[guard.patterns]]
id = "acme-token"
regex = 'acme_[a-z0-9]{{32}}'
keywords = ["acme_"]
"#
    );
    let gw = start_inprocess(&config(&mock.url, &extra)).await;
    let acme = "acme_0123456789abcdef0123456789abcdef";
    let body = json!({"model": "gpt-5", "messages": [
        {"role": "user", "content": "read .env"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
          "function": {"name": "read", "arguments": "{\"path\":\".env\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": format!("ACME={acme}\n{}", env_file())},
    ]});
    let (status, text) = post(
        &gw.url,
        "/v1/chat/completions",
        &body,
        &[("x-request-id", "custom")],
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let sent = String::from_utf8_lossy(&mock.state.requests()[0].body).into_owned();
    assert!(!sent.contains(acme), "{sent}");
    assert!(sent.contains("TRIMGATE_SECRET_CUSTOM_"), "{sent}");
    assert!(
        sent.contains(GITHUB) && sent.contains(DB_PASSWORD),
        "allowed values go as they are"
    );
    assert!(text.contains(acme), "{text}");
    let records = gw.records.records();
    let row = records.iter().find(|r| r.request_id == "custom").unwrap();
    assert_eq!(row.secrets, "custom:1");
}

//! `[server] local_key = true`, through the real binary over real sockets: another user of
//! the machine reaches 127.0.0.1 but cannot read the key file, so every request without
//! the key is refused in its client's shape and nothing goes upstream; the key's owner
//! presents it in `x-trimgate-key` or as the API key, and `trimgate wrap` hands it on.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use gateway_core::mock::{MockConfig, MOCK_OAUTH_TOKEN};
use serde_json::Value;

const CHAT: &str = r#"{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}"#;
const MESSAGES: &str =
    r#"{"model":"claude-sonnet-5-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}"#;
const RESPONSES: &str = r#"{"model":"gpt-5","input":"hi"}"#;

fn key_file(gw: &Gateway) -> PathBuf {
    gw.dir.path().join("local-key")
}

fn local_key(gw: &Gateway) -> String {
    std::fs::read_to_string(key_file(gw)).unwrap()
}

fn spawn_with_local_key(mock: &Mock, extra: &str) -> Gateway {
    Gateway::spawn(&mock_config(&mock.url, "local_key = true", extra))
}

/// Asserts a 401 in the client's shape for `path`.
async fn assert_refused(res: reqwest::Response, path: &str) {
    assert_eq!(res.status(), 401, "{path}");
    let json: Value = res.json().await.unwrap();
    if path.contains("messages") {
        assert_eq!(json["type"], "error", "{path}: {json}");
        assert_eq!(json["error"]["type"], "authentication_error", "{path}");
    } else {
        assert_eq!(
            json["error"]["type"], "authentication_error",
            "{path}: {json}"
        );
        assert_eq!(json["error"]["code"], "invalid_api_key", "{path}");
    }
}

/// Another local user, without the key (none, a guess, a placeholder): every client route
/// answers 401 in its own dialect, and the provider hears nothing.
#[tokio::test]
async fn without_the_local_key_every_client_route_is_refused_and_nothing_goes_upstream() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = spawn_with_local_key(&mock, "");
    for (path, body) in [
        ("/v1/chat/completions", CHAT),
        ("/v1/responses", RESPONSES),
        ("/v1/messages", MESSAGES),
        ("/v1/messages/count_tokens", MESSAGES),
        ("/chat/completions", CHAT),
    ] {
        let url = format!("{}{path}", gw.url);
        for headers in [
            vec![],
            vec![("authorization", "Bearer sk-trimgate")],
            vec![("x-api-key", "tg-local-0000")],
            vec![("x-trimgate-key", "tg-local-0000")],
        ] {
            assert_refused(post_json(&url, body, &headers).await, path).await;
        }
    }
    for path in ["/v1/models", "/models", "/metrics", "/status"] {
        let res = client()
            .get(format!("{}{path}", gw.url))
            .send()
            .await
            .unwrap();
        assert_refused(res, path).await;
    }
    // What carries no provider access stays open: the health checks `wrap` and load
    // balancers use.
    for path in ["/healthz", "/readyz"] {
        let res = client()
            .get(format!("{}{path}", gw.url))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
    }
    assert!(
        mock.state.requests().is_empty(),
        "nothing may reach the provider"
    );
    assert!(
        !gw.stderr().contains(&local_key(&gw)),
        "the key is never logged"
    );
}

/// The key's owner presents it in `x-trimgate-key`, as a bearer token or as `x-api-key`:
/// each is served, and the key goes no further than the gateway.
#[tokio::test]
async fn the_local_key_is_accepted_in_each_way_and_never_forwarded() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = spawn_with_local_key(&mock, "");
    let key = local_key(&gw);
    let bearer = format!("Bearer {key}");
    for (name, value) in [
        ("x-trimgate-key", key.as_str()),
        ("authorization", bearer.as_str()),
        ("x-api-key", key.as_str()),
    ] {
        for (path, body) in [
            ("/v1/chat/completions", CHAT),
            ("/v1/responses", RESPONSES),
            ("/v1/messages", MESSAGES),
        ] {
            let res = post_json(&format!("{}{path}", gw.url), body, &[(name, value)]).await;
            assert_eq!(res.status(), 200, "{name} on {path}");
        }
        for path in ["/v1/models", "/metrics", "/status"] {
            let res = client()
                .get(format!("{}{path}", gw.url))
                .header(name, value)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200, "{name} on {path}");
        }
    }
    let sent = mock.state.requests();
    assert_eq!(sent.len(), 9);
    for request in &sent {
        assert!(
            request
                .headers
                .values()
                .all(|v| !v.to_str().unwrap_or("").contains(&key)),
            "the local key reached the provider: {:?}",
            request.headers
        );
        assert!(!request.headers.contains_key("x-trimgate-key"));
    }
}

/// Claude Code signed in with a subscription sends its login in `Authorization`; with the
/// local key in `x-trimgate-key` beside it, the login still reaches the keyless Anthropic
/// provider, and the key does not.
#[tokio::test]
async fn a_claude_login_still_goes_through_beside_the_local_key() {
    let mock = start_mock(MockConfig::default()).await;
    let login = format!(
        "[[routes]]\nmatch = \"claude-*\"\nprovider = \"claude-login\"\n\n[providers.claude-login]\nkind = \"anthropic\"\nbase_url = \"{}/v1\"\napi_key = {{ env = \"TG_TEST_UNSET_KEY\" }}\n",
        mock.url
    );
    let gw = spawn_with_local_key(&mock, &login);
    let key = local_key(&gw);
    let oauth = format!("Bearer {MOCK_OAUTH_TOKEN}");
    let url = format!("{}/v1/messages", gw.url);
    let client_headers = [
        ("authorization", oauth.as_str()),
        ("anthropic-beta", "oauth-2025-04-20"),
    ];
    assert_refused(
        post_json(&url, MESSAGES, &client_headers).await,
        "/v1/messages",
    )
    .await;
    assert!(mock.state.requests().is_empty());

    // The key sent as the API key to a provider that takes the client's credentials: it
    // is the gateway's, not a login, so it is not passed on (and there is none to pass).
    let res = post_json(&url, MESSAGES, &[("x-api-key", key.as_str())]).await;
    assert_eq!(res.status(), 401);
    assert!(
        mock.state.requests().iter().all(|r| r
            .headers
            .values()
            .all(|v| !v.to_str().unwrap_or("").contains(&key))),
        "the local key reached the provider as a login"
    );
    mock.state.clear();

    let mut with_key = client_headers.to_vec();
    with_key.push(("x-trimgate-key", key.as_str()));
    let res = post_json(&url, MESSAGES, &with_key).await;
    assert_eq!(res.status(), 200);
    let sent = mock.state.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].headers["authorization"], oauth.as_str());
    assert!(!sent[0].headers.contains_key("x-trimgate-key"));
}

/// With gateway keys too, either key lets a request in: a gateway key keeps its name in
/// the record, the local key stands alone.
#[tokio::test]
async fn with_gateway_keys_either_key_is_accepted() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn_with_env(
        &mock_config(
            &mock.url,
            "local_key = true",
            "[[gateway_keys]]\nname = \"ci\"\nkey = { env = \"TG_TEST_GATEWAY_KEY\" }\n",
        ),
        &[("TG_TEST_GATEWAY_KEY", "gk-ci-123")],
    );
    let key = local_key(&gw);
    let url = format!("{}/v1/chat/completions", gw.url);
    for headers in [
        vec![("authorization", "Bearer gk-ci-123")],
        vec![("x-trimgate-key", key.as_str())],
        vec![
            ("x-trimgate-key", key.as_str()),
            ("authorization", "Bearer gk-ci-123"),
        ],
    ] {
        assert_eq!(post_json(&url, CHAT, &headers).await.status(), 200);
    }
    for headers in [vec![], vec![("authorization", "Bearer gk-wrong")]] {
        assert_refused(post_json(&url, CHAT, &headers).await, "chat").await;
    }
    assert_eq!(mock.state.requests().len(), 3);
}

/// The key file is owner-only, and a restart reuses the key the first start made.
#[cfg(unix)]
#[tokio::test]
async fn the_key_file_is_private_and_the_key_survives_a_restart() {
    use std::os::unix::fs::PermissionsExt;
    let mock = start_mock(MockConfig::default()).await;
    let config = mock_config(&mock.url, "local_key = true", "");
    let mut gw = Gateway::spawn(&config);
    let first = local_key(&gw);
    assert!(first.starts_with("tg-local-") && first.len() >= "tg-local-".len() + 64);
    let mode = std::fs::metadata(key_file(&gw))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert!(gw.stderr().contains("local key: required, kept in"));
    // The window gets it from the admin API, for the lines it offers to copy.
    let status = admin_get(&gw, "/status").await;
    assert_eq!(status["local_key"], first.as_str());

    let dir = std::mem::replace(&mut gw.dir, tempfile::tempdir().unwrap());
    drop(gw);
    let gw = Gateway::spawn_wrapped(&config, &[], &[], "127.0.0.1:0", dir);
    assert_eq!(local_key(&gw), first);
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        CHAT,
        &[("x-trimgate-key", &first)],
    )
    .await;
    assert_eq!(res.status(), 200);
}

/// A key file other users can read keeps nobody out: the gateway refuses to start.
#[cfg(unix)]
#[test]
fn a_key_file_others_can_read_stops_the_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[server]\nlocal_key = true\n").unwrap();
    let key = dir.path().join("local-key");
    std::fs::write(&key, format!("tg-local-{}", "ab".repeat(32))).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env("XDG_DATA_HOME", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("can be read by other users"), "{stderr}");
    assert!(!stderr.contains(&"ab".repeat(32)), "{stderr}");
}

#[cfg(unix)]
/// A stand-in agent named `program`: it writes the variables it was given to `out`.
fn fake_agent(dir: &Path, program: &str, out: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(program);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n{{ printf 'ANTHROPIC_CUSTOM_HEADERS=%s\\n' \"$ANTHROPIC_CUSTOM_HEADERS\"; printf 'OPENAI_API_KEY=%s\\n' \"$OPENAI_API_KEY\"; printf 'OPENAI_BASE_URL=%s\\n' \"$OPENAI_BASE_URL\"; printf 'ANTHROPIC_BASE_URL=%s\\n' \"$ANTHROPIC_BASE_URL\"; }} > '{}'\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
/// Runs `trimgate wrap` on the fake agent and returns the variables it saw.
fn wrap(gw: &Gateway, program: &str) -> std::collections::HashMap<String, String> {
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("env.txt");
    let agent = fake_agent(scratch.path(), program, &out);
    let status = Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .arg("wrap")
        .arg("--config")
        .arg(gw.dir.path().join("config.toml"))
        .arg(&agent)
        .env_remove("TRIMGATE_KEY")
        .env_remove("TRIMGATE_URL")
        .env_remove("ANTHROPIC_CUSTOM_HEADERS")
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `trimgate wrap` reads the key file of the config it is given and hands the key on:
/// Claude Code in `x-trimgate-key` through its custom headers, Codex as its API key. What
/// the agents get lets them in.
#[cfg(unix)]
#[tokio::test]
async fn wrap_hands_the_local_key_to_the_agent() {
    let mock = start_mock(MockConfig::default()).await;
    // wrap finds the gateway from the config's listen address: give it a fixed free port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let gw = Gateway::spawn_wrapped(
        &mock_config(
            &mock.url,
            &format!("local_key = true\nlisten = \"{listen}\""),
            "",
        ),
        &[],
        &[],
        &listen,
        tempfile::tempdir().unwrap(),
    );
    let key = local_key(&gw);

    let claude = wrap(&gw, "claude");
    assert_eq!(claude["ANTHROPIC_BASE_URL"], gw.url);
    let header = &claude["ANTHROPIC_CUSTOM_HEADERS"];
    assert_eq!(header, &format!("x-trimgate-key: {key}"));
    let (name, value) = header.split_once(": ").unwrap();
    let res = post_json(
        &format!("{}/v1/messages", claude["ANTHROPIC_BASE_URL"]),
        MESSAGES,
        &[(name, value)],
    )
    .await;
    assert_eq!(res.status(), 200);

    let codex = wrap(&gw, "codex");
    assert_eq!(codex["OPENAI_API_KEY"], key);
    assert_eq!(codex["ANTHROPIC_CUSTOM_HEADERS"], "");
    let res = client()
        .post(format!("{}/responses", codex["OPENAI_BASE_URL"]))
        .bearer_auth(&codex["OPENAI_API_KEY"])
        .header("content-type", "application/json")
        .body(RESPONSES)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

/// `trimgate status` reads the key file of the config it is given, as `wrap` does, and is
/// let in; without the key file's config it is refused like any other client.
#[tokio::test]
async fn status_presents_the_local_key_of_its_config() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = spawn_with_local_key(&mock, "");
    let run = |config: Option<std::path::PathBuf>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_trimgate"));
        command.args(["status", "--gateway", &gw.url]);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        } else {
            // No config at all: nothing names a key file.
            command.env("XDG_CONFIG_HOME", gw.dir.path().join("none"));
        }
        command.env_remove("TRIMGATE_KEY").output().unwrap()
    };
    let out = run(Some(gw.dir.path().join("config.toml")));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(printed.contains(": ok"), "{printed}");
    assert!(printed.contains("mock-openai"), "{printed}");
    assert!(!printed.contains(&local_key(&gw)), "the key is not printed");

    let out = run(None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("401"), "{stderr}");
}

//! The admin API through the real binary: its guard against other sites and rebound DNS
//! names (forged Host and Origin headers, a peer off loopback, no or a wrong token), the
//! config edits it makes (kept in the file, validated, in force at once), the feed,
//! savings, preview and pause — and keys set from it going to the OS keychain, never to
//! a file (those run under a Secret Service: `scripts/test.sh` runs this file under
//! `dbus-run-session`; elsewhere they say so and pass unless `TRIMGATE_REQUIRE_KEYCHAIN=1`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use gateway_core::config::clouds::{BedrockApi, Cloud, Entra};
use gateway_core::config::Config;
use gateway_core::mock::MockConfig;
use gateway_core::secrets::KeySource;
use serde_json::{json, Value};

struct Admin<'a> {
    gw: &'a Gateway,
}

impl Admin<'_> {
    fn url(&self, path: &str) -> String {
        format!("{}/admin/api{path}", self.gw.url)
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = client()
            .request(method.parse().unwrap(), self.url(path))
            .bearer_auth(&self.gw.admin_token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

fn port(url: &str) -> &str {
    url.rsplit(':').next().unwrap()
}

#[tokio::test]
async fn only_the_windows_own_requests_get_through() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    assert_eq!(
        gw.admin_token.len(),
        64,
        "the token is printed with the window's address"
    );
    let status_url = format!("{}/admin/api/status", gw.url);
    let get = |headers: Vec<(&'static str, String)>| {
        let mut req = client().get(&status_url);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        async move { req.send().await.unwrap() }
    };
    let bearer = format!("Bearer {}", gw.admin_token);
    let own = format!("http://127.0.0.1:{}", port(&gw.url));

    // No token, a wrong one: 401.
    assert_eq!(get(vec![]).await.status(), 401);
    assert_eq!(
        get(vec![("authorization", "Bearer 0000".into())])
            .await
            .status(),
        401
    );
    // The right token from the gateway's own page: 200, with the facts.
    let res = get(vec![
        ("authorization", bearer.clone()),
        ("origin", own.clone()),
    ])
    .await;
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["providers"], 2);
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        body["local_key"],
        Value::Null,
        "no local key unless the config asks"
    );

    // DNS rebinding: a page at evil.example resolved to 127.0.0.1 sends its own Host.
    let res = get(vec![
        ("authorization", bearer.clone()),
        ("host", format!("evil.example:{}", port(&gw.url))),
    ])
    .await;
    assert_eq!(res.status(), 403);
    // Another site, or another local port, in Origin: 403 even with the token.
    for origin in [
        "https://evil.example".to_owned(),
        format!(
            "http://127.0.0.1:{}",
            port(&gw.url).parse::<u16>().unwrap() + 1
        ),
        "null".to_owned(),
    ] {
        let res = get(vec![
            ("authorization", bearer.clone()),
            ("origin", origin.clone()),
        ])
        .await;
        assert_eq!(res.status(), 403, "{origin}");
        assert!(res.headers().get("access-control-allow-origin").is_none());
    }
    // The desktop window's preflight is answered for its origin only.
    let preflight = |origin: &'static str| {
        client()
            .request(reqwest::Method::OPTIONS, &status_url)
            .header("origin", origin)
            .header("access-control-request-method", "PUT")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            )
            .send()
    };
    let res = preflight("tauri://localhost").await.unwrap();
    assert_eq!(res.status(), 204);
    assert_eq!(
        res.headers()["access-control-allow-origin"],
        "tauri://localhost"
    );
    assert_eq!(
        preflight("https://evil.example").await.unwrap().status(),
        403
    );

    // Off loopback: listen on every interface and come in through this machine's address.
    let extra = "[ledger]\nenabled = false\n";
    let wide = Gateway::spawn_wrapped(
        &mock_config(&mock.url, "", extra),
        &[("TRIMGATE_INSECURE_OPEN_RELAY", "1")],
        &[],
        "0.0.0.0:0",
        tempfile::tempdir().unwrap(),
    );
    if let Some(ip) = local_ip() {
        let url = format!("http://{ip}:{}/admin/api/status", port(&wide.url));
        let res = client()
            .get(url)
            .header("host", format!("127.0.0.1:{}", port(&wide.url)))
            .bearer_auth(&wide.admin_token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "a peer off loopback");
    } else {
        eprintln!("no non-loopback address on this machine: the off-loopback case is not tested");
    }
}

/// This machine's address on its default route (no packet is sent).
fn local_ip() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("10.255.255.255:1").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test]
async fn edits_go_to_the_file_are_validated_and_take_effect() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&format!(
        "# written by hand\n{}",
        mock_config(&mock.url, "", "[ledger]\nenabled = false\n")
    ));
    let admin = Admin { gw: &gw };
    let file = gw.dir.path().join("config.toml");
    // A local server that takes no key.
    let local = start_mock(MockConfig {
        keyless: true,
        ..MockConfig::default()
    })
    .await;

    // A provider without a key (a local server), then a route to it under an alias.
    let (status, p) = admin
        .call(
            "POST",
            "/providers",
            Some(json!({"name": "local", "kind": "openai_compatible", "base_url": format!("{}/v1", local.url), "models": ["qwen3"]})),
        )
        .await;
    assert_eq!(status, 201, "{p}");
    assert_eq!(p["key"]["source"], "none");
    let (status, _) = admin
        .call(
            "PUT",
            "/routes",
            Some(json!({"routes": [{"match": "fast", "provider": "local", "model": "qwen3"}]})),
        )
        .await;
    assert_eq!(status, 200);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# written by hand"),
        "comments survive: {text}"
    );
    assert!(text.contains("[providers.local]") && text.contains("match = \"fast\""));
    // In force without a restart: the alias routes to the new provider, as its model.
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        json!({"model": "fast", "messages": [{"role": "user", "content": "hi"}]}).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    let sent: Value = serde_json::from_slice(&local.state.requests().last().unwrap().body).unwrap();
    assert_eq!(sent["model"], "qwen3");

    // A change that would break the config is refused with its path; nothing is written.
    let (status, err) = admin
        .call(
            "PUT",
            "/routes",
            Some(json!({"routes": [{"match": "x", "provider": "nobody"}]})),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(err["problems"][0]["path"], "routes[0].provider");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let (status, err) = admin
        .call(
            "POST",
            "/providers",
            Some(json!({"name": "bad name!", "kind": "openai"})),
        )
        .await;
    assert_eq!(
        (status, err["error"]["type"].as_str()),
        (400, Some("invalid_request"))
    );
    let (status, _) = admin
        .call("POST", "/providers", Some(json!({"name": 5})))
        .await;
    assert_eq!(status, 400);

    // Modes: set, read back, and a bad one refused with its path.
    let modes = json!({"defaults": {"tool_output": "aggressive", "terse": "off", "prune": "auto", "squeeze": false},
                       "models": [{"match": "claude-*", "terse": "lite"}]});
    let (status, got) = admin.call("PUT", "/modes", Some(modes)).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["defaults"]["tool_output"], "aggressive");
    assert_eq!(got["models"][0]["terse"], "lite");
    let (status, err) = admin
        .call(
            "PUT",
            "/modes",
            Some(json!({"defaults": {"tool_output": "extreme"}})),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(err["problems"][0]["path"], "optimize.tool_output");

    // Test connection, through the provider's own key.
    let (_, t) = admin
        .call("POST", "/providers/mock-openai/test", None)
        .await;
    assert_eq!(
        (t["ok"].as_bool(), t["status"].as_u64()),
        (Some(true), Some(200)),
        "{t}"
    );

    // Delete: its routes go with it.
    let (status, _) = admin.call("DELETE", "/providers/local", None).await;
    assert_eq!(status, 204);
    let (_, routes) = admin.call("GET", "/routes", None).await;
    assert_eq!(routes["routes"], json!([]));
    let (status, _) = admin.call("DELETE", "/providers/local", None).await;
    assert_eq!(status, 404);

    // The listen address: written, in force at the next start.
    let (status, set) = admin
        .call(
            "PUT",
            "/settings",
            Some(json!({"listen": "127.0.0.1:18999"})),
        )
        .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        (set["listen"].as_str(), set["restart_needed"].as_bool()),
        (Some("127.0.0.1:18999"), Some(true))
    );
    let (status, err) = admin
        .call("PUT", "/settings", Some(json!({"listen": "nowhere"})))
        .await;
    assert_eq!(
        (status, err["problems"][0]["path"].as_str()),
        (400, Some("server.listen"))
    );
    let text = std::fs::read_to_string(&file).unwrap();

    // The file edited by hand, then reloaded.
    std::fs::write(
        &file,
        text.replace(
            "models = [\"gpt-5\", \"gpt-5-mini\"]",
            "models = [\"gpt-5\"]",
        ),
    )
    .unwrap();
    let (status, _) = admin.call("POST", "/reload", None).await;
    assert_eq!(status, 200);
    let (_, list) = admin.call("GET", "/providers", None).await;
    let openai = list["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "mock-openai")
        .unwrap()
        .clone();
    assert_eq!(openai["models"], json!(["gpt-5"]));
    assert_eq!(openai["key"]["source"], "env");
}

#[tokio::test]
async fn feed_preview_pause_and_savings() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let admin = Admin { gw: &gw };
    let log = std::fs::read_to_string("bench/corpus/outputs/cargo-test-failures.txt").unwrap();
    let tool_turn = |log: &str| {
        json!({"model": "gpt-5", "messages": [
            {"role": "user", "content": "run the tests"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": log}]})
    };
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        tool_turn(&log).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    let saved: i64 = res.headers()["x-trimgate-saved-tokens"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(saved > 0);

    // The feed shows it, with its passes and no text of it.
    let (_, feed) = admin.call("GET", "/requests?limit=5", None).await;
    let row = &feed["requests"][0];
    assert_eq!(row["model"], "gpt-5");
    assert_eq!(row["saved_tokens"], saved);
    assert_eq!(row["passes"][0]["pass"], "tool_output");
    assert!(!feed.to_string().contains("run the tests"));

    // The preview makes the same cut the gateway made.
    let (status, p) = admin
        .call(
            "POST",
            "/preview",
            Some(json!({"text": log, "tool_output": "auto"})),
        )
        .await;
    assert_eq!(status, 200);
    assert!(p["tokens_after"].as_u64().unwrap() < p["tokens_before"].as_u64().unwrap());
    let (status, _) = admin
        .call(
            "POST",
            "/preview",
            Some(json!({"text": "x", "tool_output": "extreme"})),
        )
        .await;
    assert_eq!(status, 400);

    // Paused: the same request goes through untouched.
    let (_, paused) = admin
        .call("POST", "/pause", Some(json!({"paused": true})))
        .await;
    assert_eq!(paused["paused"], true);
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        tool_turn(&log).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.headers()["x-trimgate-applied"], "");
    admin
        .call("POST", "/pause", Some(json!({"paused": false})))
        .await;

    // Savings from the ledger, once the writer has stored the rows.
    let mut total = Value::Null;
    for _ in 0..50 {
        let (_, s) = admin.call("GET", "/savings?since=1h&by=model", None).await;
        if s["total"]["requests"] == 2 {
            total = s;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(total["ledger"], true, "{total}");
    assert_eq!(total["rows"][0]["key"], "gpt-5");
    assert_eq!(total["total"]["saved_tokens"], saved);
    let (status, _) = admin.call("GET", "/savings?by=colour", None).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_key_set_in_the_window_goes_to_the_keychain_only() {
    if !keychain_available() {
        return;
    }
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn("[server]\n");
    let admin = Admin { gw: &gw };
    let name = format!("admin-test-{}", std::process::id());
    let (status, p) = admin
        .call(
            "POST",
            "/providers",
            Some(json!({"name": name, "kind": "openai", "base_url": format!("{}/v1", mock.url), "key": OPENAI_KEY})),
        )
        .await;
    assert_eq!(status, 201, "{p}");
    assert_eq!(p["key"]["source"], "keychain");
    assert_eq!(p["key"]["set"], true);
    assert_eq!(p["key"]["mask"], "sk-…enai");
    // Requests use it.
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        json!({"model": format!("{name}/gpt-5"), "messages": [{"role": "user", "content": "hi"}]})
            .to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    // Replaced, deleted: the mask follows; no response ever has the key.
    let (status, m) = admin
        .call(
            "PUT",
            &format!("/providers/{name}/key"),
            Some(json!({"key": "sk-second-key-9876"})),
        )
        .await;
    assert_eq!((status, m["mask"].as_str()), (200, Some("sk-…9876")));
    let (_, list) = admin.call("GET", "/providers", None).await;
    assert!(!list.to_string().contains("sk-second-key-9876"));
    let (status, _) = admin
        .call("DELETE", &format!("/providers/{name}/key"), None)
        .await;
    assert_eq!(status, 204);
    let (_, list) = admin.call("GET", "/providers", None).await;
    assert_eq!(list["providers"][0]["key"]["set"], false);
    let (status, _) = admin
        .call(
            "PUT",
            &format!("/providers/{name}/key"),
            Some(json!({"key": OPENAI_KEY})),
        )
        .await;
    assert_eq!(status, 200);
    // In no file of the gateway's: not the config, not the ledger, not the log.
    for entry in files_below(gw.dir.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(OPENAI_KEY) && !text.contains("sk-second-key-9876"),
            "{}",
            entry.display()
        );
    }
    let (status, _) = admin
        .call("DELETE", &format!("/providers/{name}"), None)
        .await;
    assert_eq!(status, 204);
}

/// The three clouds added from the window: each kind's settings go to the file as the
/// config reads them, are shown back (names, places and ids), and `trimgate check`'s
/// account of their credentials comes with them; a key file's contents, an AWS key where a
/// profile goes, or a key for Vertex are refused with the field's path, and nothing
/// written then holds them.
#[tokio::test]
async fn cloud_providers_are_written_with_their_settings_and_no_secret() {
    let mock = start_mock(MockConfig::default()).await;
    // No region from the environment: a Bedrock provider must name one.
    let gw = Gateway::spawn_with_env(
        &mock_config(&mock.url, "", "[ledger]\nenabled = false\n"),
        &[("AWS_REGION", ""), ("AWS_DEFAULT_REGION", "")],
    );
    let admin = Admin { gw: &gw };
    let file = gw.dir.path().join("config.toml");
    let add = |body: Value| async { admin.call("POST", "/providers", Some(body)).await };

    let (status, b) = add(
        json!({"name": "bedrock-east", "kind": "bedrock", "region": "us-east-1",
        "aws_profile": "work", "bedrock_api": "converse"}),
    )
    .await;
    assert_eq!(status, 201, "{b}");
    assert_eq!(
        b["base_url"],
        "https://bedrock-runtime.us-east-1.amazonaws.com"
    );
    assert_eq!(
        b["cloud"],
        json!({"region": "us-east-1", "aws_profile": "work", "bedrock_api": "converse"})
    );
    assert_eq!(
        b["key"]["source"], "none",
        "the AWS credential chain signs: {b}"
    );
    assert!(
        b["credentials"]
            .as_str()
            .unwrap()
            .contains("AWS credential chain, profile \"work\""),
        "{b}"
    );

    let (status, v) = add(
        json!({"name": "vertex-claude", "kind": "vertex", "project": "my-project",
        "location": "global", "credentials_file": "/keys/vertex-sa.json"}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(
        v["base_url"],
        "https://aiplatform.googleapis.com/v1/projects/my-project/locations/global"
    );
    assert_eq!(v["cloud"]["credentials_file"], "/keys/vertex-sa.json");
    assert!(v["credentials"]
        .as_str()
        .unwrap()
        .contains("service-account key file /keys/vertex-sa.json"));
    let (status, adc) = add(
        json!({"name": "vertex-adc", "kind": "vertex", "project": "my-project",
        "location": "us-east5"}),
    )
    .await;
    assert_eq!(status, 201, "{adc}");
    assert!(adc["credentials"]
        .as_str()
        .unwrap()
        .starts_with("Application Default Credentials"));

    let command = "az account get-access-token --resource https://cognitiveservices.azure.com --query accessToken -o tsv";
    let (status, a) = add(json!({"name": "azure-cmd", "kind": "azure_openai",
        "base_url": "https://my-resource.openai.azure.com", "api_version": "2024-10-21",
        "entra": {"command": command}}))
    .await;
    assert_eq!(status, 201, "{a}");
    assert_eq!(
        a["cloud"],
        json!({"api_version": "2024-10-21", "entra": {"command": command}})
    );
    assert_eq!(
        a["credentials"],
        "a Microsoft Entra ID token from a command"
    );

    // Refused, each with its field's path; the file stays as it was.
    let before = std::fs::read_to_string(&file).unwrap();
    let key_file = "{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQ\\n\"}";
    for (body, path) in [
        (
            json!({"name": "v2", "kind": "vertex", "project": "p", "location": "global", "credentials_file": key_file}),
            "providers.v2.credentials_file",
        ),
        (
            json!({"name": "b2", "kind": "bedrock", "region": "us-east-1", "aws_profile": "AKIAIOSFODNN7EXAMPLE"}),
            "providers.b2.aws_profile",
        ),
        (
            json!({"name": "v3", "kind": "vertex", "project": "p", "location": "global", "key": "sk-not-for-vertex"}),
            "providers.v3.key",
        ),
        (
            json!({"name": "b3", "kind": "bedrock"}),
            "providers.b3.region",
        ),
        (
            json!({"name": "b4", "kind": "bedrock", "region": "us-east-1", "bedrock_api": "sometimes"}),
            "providers.b4.bedrock_api",
        ),
        (
            json!({"name": "a2", "kind": "azure_openai"}),
            "providers.a2.base_url",
        ),
        (
            json!({"name": "a3", "kind": "azure_openai", "base_url": "https://r.openai.azure.com",
                   "entra": {"tenant_id": "contoso.onmicrosoft.com", "client_id": "app"}}),
            "providers.a3.entra.client_secret",
        ),
        (
            json!({"name": "o2", "kind": "openai", "region": "us-east-1"}),
            "providers.o2.region",
        ),
    ] {
        let (status, err) = add(body.clone()).await;
        assert_eq!(status, 400, "{body} → {err}");
        let paths: Vec<&str> = err["problems"]
            .as_array()
            .unwrap_or_else(|| panic!("{err}"))
            .iter()
            .filter_map(|p| p["path"].as_str())
            .collect();
        assert!(paths.contains(&path), "{body} → {err}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);

    // Changed: another region moves the endpoint; no profile is the default chain.
    let (status, b) = admin
        .call(
            "PUT",
            "/providers/bedrock-east",
            Some(json!({"region": "eu-west-1", "aws_profile": null})),
        )
        .await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(
        b["base_url"],
        "https://bedrock-runtime.eu-west-1.amazonaws.com"
    );
    assert_eq!(b["cloud"]["aws_profile"], Value::Null);
    assert_eq!(b["key"]["source"], "none");

    // The file reads back as the same providers, and holds no secret: no key line for a
    // cloud that signs with its own credentials.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("region = \"eu-west-1\"") && !text.contains("aws_profile"),
        "{text}"
    );
    assert!(
        text.contains("credentials_file = \"/keys/vertex-sa.json\""),
        "{text}"
    );
    assert!(
        !text.contains("PRIVATE KEY")
            && !text.contains("AKIA")
            && !text.contains("api_key = { keychain"),
        "{text}"
    );
    let config = Config::from_toml(&text, "written").unwrap();
    let provider = |name: &str| config.providers.iter().find(|p| p.name == name).unwrap();
    assert_eq!(
        provider("bedrock-east").cloud,
        Some(Cloud::Bedrock {
            region: "eu-west-1".into(),
            profile: None,
            api: BedrockApi::Converse
        })
    );
    assert_eq!(provider("bedrock-east").key, KeySource::None);
    assert_eq!(provider("vertex-claude").key, KeySource::None);
    assert_eq!(
        provider("azure-cmd").cloud,
        Some(Cloud::Azure {
            api_version: Some("2024-10-21".into()),
            entra: Some(Entra::Command(command.into())),
        })
    );
    let (_, list) = admin.call("GET", "/providers", None).await;
    let names: Vec<&str> = list["providers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for name in ["bedrock-east", "vertex-claude", "vertex-adc", "azure-cmd"] {
        assert!(names.contains(&name), "{list}");
    }
}

/// A cloud's secrets entered in the window — Azure's api-key, a Bedrock API key, an Entra
/// app's client secret — go to the keychain; the file names their entries, and neither it
/// nor any answer holds them. A Bedrock key deleted leaves the AWS credential chain.
#[tokio::test]
async fn cloud_credentials_set_in_the_window_go_to_the_keychain_only() {
    if !keychain_available() {
        return;
    }
    let gw = Gateway::spawn("[server]\n[ledger]\nenabled = false\n");
    let admin = Admin { gw: &gw };
    let file = gw.dir.path().join("config.toml");
    let id = std::process::id();
    let (azure, bedrock, app) = (
        format!("azure-key-{id}"),
        format!("bedrock-key-{id}"),
        format!("azure-app-{id}"),
    );
    let secrets = [
        "azure-api-key-0123456789abcdef",
        "ABSKQmVkcm9ja0FQSUtleS1leGFtcGxl",
        "entra~client~secret~fedcba9876",
    ];

    let (status, a) = admin
        .call(
            "POST",
            "/providers",
            Some(json!({"name": azure, "kind": "azure_openai",
            "base_url": "https://my-resource.openai.azure.com", "key": secrets[0]})),
        )
        .await;
    assert_eq!(status, 201, "{a}");
    assert_eq!(
        (a["key"]["source"].as_str(), a["key"]["set"].as_bool()),
        (Some("keychain"), Some(true))
    );
    assert_eq!(
        a["credentials"],
        format!("the api-key from keychain entry {azure}")
    );

    let (status, b) = admin
        .call(
            "POST",
            "/providers",
            Some(json!({"name": bedrock, "kind": "bedrock",
            "region": "us-west-2", "key": secrets[1]})),
        )
        .await;
    assert_eq!(status, 201, "{b}");
    assert_eq!(
        b["credentials"],
        format!("a Bedrock API key from keychain entry {bedrock}")
    );

    let (status, e) = admin
        .call(
            "POST",
            "/providers",
            Some(json!({"name": app, "kind": "azure_openai",
            "base_url": "https://my-resource.openai.azure.com",
            "entra": {"tenant_id": "contoso.onmicrosoft.com",
                      "client_id": "11111111-2222-3333-4444-555555555555",
                      "client_secret": secrets[2]}})),
        )
        .await;
    assert_eq!(status, 201, "{e}");
    let entra = &e["cloud"]["entra"];
    assert_eq!(entra["tenant_id"], "contoso.onmicrosoft.com");
    assert_eq!(entra["authority"], "https://login.microsoftonline.com");
    assert_eq!(
        (
            entra["client_secret"]["source"].as_str(),
            entra["client_secret"]["set"].as_bool()
        ),
        (Some("keychain"), Some(true)),
        "{e}"
    );

    // The file names the keychain entries, never their values.
    let text = std::fs::read_to_string(&file).unwrap();
    let config = Config::from_toml(&text, "written").unwrap();
    let provider = |name: &str| {
        config
            .providers
            .iter()
            .find(|p| p.name == name)
            .unwrap()
            .clone()
    };
    assert_eq!(provider(&azure).key, KeySource::Keychain(azure.clone()));
    assert_eq!(provider(&bedrock).key, KeySource::Keychain(bedrock.clone()));
    let entra_app = provider(&app);
    let Some(Cloud::Azure {
        entra: Some(Entra::ClientCredentials {
            secret, client_id, ..
        }),
        ..
    }) = &entra_app.cloud
    else {
        panic!("{text}");
    };
    assert_eq!(*secret, KeySource::Keychain(format!("{app}.entra")));
    assert_eq!(client_id, "11111111-2222-3333-4444-555555555555");
    assert!(
        !matches!(provider(&app).key, KeySource::Keychain(_)),
        "Entra ID signs: {text}"
    );
    let (_, list) = admin.call("GET", "/providers", None).await;
    for secret in secrets {
        assert!(!list.to_string().contains(secret));
        for entry in files_below(gw.dir.path()) {
            let bytes = std::fs::read(&entry).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{}",
                entry.display()
            );
        }
    }

    // Bedrock's key deleted: the file names none, and the AWS chain signs.
    let (status, _) = admin
        .call("DELETE", &format!("/providers/{bedrock}/key"), None)
        .await;
    assert_eq!(status, 204);
    let text = std::fs::read_to_string(&file).unwrap();
    let config = Config::from_toml(&text, "written").unwrap();
    let now = config.providers.iter().find(|p| p.name == bedrock).unwrap();
    assert_eq!(now.key, KeySource::None, "{text}");
    let (_, list) = admin.call("GET", "/providers", None).await;
    let b = list["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == bedrock.as_str())
        .unwrap();
    assert!(
        b["credentials"]
            .as_str()
            .unwrap()
            .starts_with("the AWS credential chain"),
        "{b}"
    );

    for name in [&azure, &bedrock, &app] {
        let (status, _) = admin
            .call("DELETE", &format!("/providers/{name}"), None)
            .await;
        assert_eq!(status, 204);
    }
}

/// Claude Code's slots mapped from the window: the routes replace earlier slot routes
/// instead of stacking, keep the user's own, and take effect at once — `GET /v1/models` in
/// Anthropic's shape lists the mapped names, and a Claude name is served by the chosen
/// provider as the chosen model.
#[tokio::test]
async fn claude_code_slots_are_routed_and_listed() {
    let mock = start_mock(MockConfig::default()).await;
    let own = "[[routes]]\nmatch = \"fast\" # my alias\nprovider = \"mock-openai\"\nmodel = \"gpt-5-mini\"\n\n[ledger]\nenabled = false\n";
    let gw = Gateway::spawn(&mock_config(&mock.url, "", own));
    let admin = Admin { gw: &gw };
    let slots = json!([
        "claude-opus-*",
        "claude-sonnet-*",
        "claude-haiku-*",
        "claude-subagent"
    ]);
    let apply = |haiku_model: &'static str| {
        json!({"replace": slots.clone(), "routes": [
            {"match": "claude-opus-*", "provider": "mock-anthropic", "model": "claude-sonnet-5-5"},
            {"match": "claude-haiku-*", "provider": "mock-openai", "model": haiku_model},
            {"match": "claude-subagent", "provider": "mock-openai", "model": "gpt-5"},
        ]})
    };
    let (status, first) = admin.call("PATCH", "/routes", Some(apply("gpt-5"))).await;
    assert_eq!(status, 200, "{first}");
    let (status, got) = admin
        .call("PATCH", "/routes", Some(apply("gpt-5-mini")))
        .await;
    assert_eq!(status, 200, "{got}");
    let patterns: Vec<&str> = got["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["match"].as_str().unwrap())
        .collect();
    assert_eq!(
        patterns,
        ["claude-opus-*", "claude-haiku-*", "claude-subagent", "fast"],
        "applied twice, listed once; the user's route kept"
    );
    let (_, read) = admin.call("GET", "/routes", None).await;
    assert_eq!(read["routes"], got["routes"]);
    let file = std::fs::read_to_string(gw.dir.path().join("config.toml")).unwrap();
    assert!(file.contains("# my alias"), "{file}");

    // A route to nowhere is refused with its path, and nothing changes.
    let (status, err) = admin
        .call(
            "PATCH",
            "/routes",
            Some(json!({"routes": [{"match": "claude-haiku-*", "provider": "nobody", "model": "x"}]})),
        )
        .await;
    assert_eq!(status, 400, "{err}");
    // Its path is in the file as it would have been: in haiku's place.
    assert_eq!(err["problems"][0]["path"], "routes[1].provider");
    assert_eq!(
        std::fs::read_to_string(gw.dir.path().join("config.toml")).unwrap(),
        file
    );

    // What Claude Code's /model picker reads.
    let list: Value = client()
        .get(format!("{}/v1/models?limit=1000", gw.url))
        .header("anthropic-version", "2023-06-01")
        .header("x-api-key", CLIENT_PLACEHOLDER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entry = |id: &str| {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed: {list}"))
            .clone()
    };
    let haiku = entry("claude-haiku-gpt-5-mini");
    assert_eq!(haiku["type"], "model");
    assert_eq!(haiku["display_name"], "claude-haiku-* → gpt-5-mini");
    assert!(haiku["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        haiku["description"],
        "Trimgate sends it to mock-openai as gpt-5-mini"
    );
    assert_eq!(
        entry("claude-opus-claude-sonnet-5-5")["display_name"],
        "claude-opus-* → claude-sonnet-5-5"
    );
    assert_eq!(
        entry("claude-subagent")["display_name"],
        "claude-subagent → gpt-5"
    );
    assert_eq!(entry("gpt-5")["display_name"], "gpt-5");

    // Claude Code's own name for its haiku slot goes to the chosen provider, as its model.
    mock.state.clear();
    let res = post_json(
        &format!("{}/v1/messages?beta=true", gw.url),
        json!({"model": "claude-haiku-4-5-20251001", "max_tokens": 64,
               "messages": [{"role": "user", "content": "hi"}]})
        .to_string(),
        &[("x-api-key", CLIENT_PLACEHOLDER)],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    let sent = mock.state.requests().pop().unwrap();
    assert!(
        sent.path_and_query.starts_with("/v1/chat/completions"),
        "{}",
        sent.path_and_query
    );
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["model"], "gpt-5-mini");
}

/// The `[guard]` settings the Guard page reads back: hooks by host only (never a hook's
/// credentials, path or query), custom patterns by id, the allow-list by its size.
const GUARD: &str = r#"
[guard]
mode = "redact" # the gateway's own
allow = ["ghp_allowedallowedallowedallowed0000"]
allow_patterns = ["^AKIAALLOWED[0-9A-Z]{9}$"]
use_hooks = ["audit"]

[[guard.patterns]]
id = "acme_token"
regex = "acme_[a-z0-9]{20}"
keywords = ["acme_"]

[[guard.hooks]]
name = "audit"
url = "https://hook-user:hook-pass@hooks.example:8443/v1/check?token=hooktoken123"
on = ["pre"]
timeout_ms = 500
fail = "closed"

[[guard.hooks]]
name = "dlp"
url = "http://127.0.0.1:9/dlp"

[[guard.rules]]
match = "claude-*"
mode = "block"
hooks = ["dlp"]

[[guard.rules]]
provider = "mock-openai"
mode = "off"
"#;

/// The Guard page's answer: the settings in force, today's requests with secrets and the
/// secrets by kind from the ledger (yesterday's rows left out), the latest such requests;
/// then the mode switched from the window, written to the file with its comment kept, in
/// force at once, a mode that is none refused with its path, and both edits in the admin
/// actions log.
#[tokio::test]
async fn the_guard_page_shows_settings_and_todays_secrets_and_switches_the_mode() {
    use gateway_core::dialect::Dialect;
    use gateway_core::ledger::{self, Ledger};
    use gateway_core::pricing::Pricing;
    use gateway_core::record::{MemoryRecorder, Recorder, RequestRecord};
    use std::sync::Arc;
    use std::time::SystemTime;

    // Rows as the proxy writes them, in a ledger the gateway then opens.
    let data = tempfile::tempdir().unwrap();
    let url = fresh_sqlite(&data);
    let (writer, recorder) = Ledger::start(
        ledger::open(&url).await.unwrap(),
        Arc::new(MemoryRecorder::new(1)),
        Arc::new(Pricing::bundled()),
    );
    let now = SystemTime::now();
    let day_start = gateway_core::clock::day_start(gateway_core::clock::unix_ms(now));
    // Early today (or just now, in the day's first minute), and yesterday.
    let today = gateway_core::clock::unix_ms(now).min(day_start + 60_000);
    let at = |ms: i64| std::time::UNIX_EPOCH + Duration::from_millis(ms as u64);
    for (id, when, model, secrets) in [
        ("g1", today, "gpt-5", "github_token:1,env_secret:2"),
        ("g2", today, "gpt-5-mini", ""),
        ("g3", today, "claude-sonnet-5-5", "private_key:1"),
        ("g0", day_start - 3_600_000, "gpt-5", "github_token:7"),
    ] {
        let mut r = RequestRecord::new(id.into(), Dialect::OpenAiChat);
        r.started_at = at(when);
        r.model_requested = Some(model.into());
        r.status = 200;
        r.attempt = 1;
        r.secrets = secrets.into();
        recorder.record(Arc::new(r));
    }
    writer.close().await;

    let mock = start_mock(MockConfig::default()).await;
    let extra = format!("[ledger]\nurl = \"{url}\"\n{GUARD}");
    let gw = Gateway::spawn(&mock_config(&mock.url, "", &extra));
    let admin = Admin { gw: &gw };
    let file = gw.dir.path().join("config.toml");

    let (status, g) = admin.call("GET", "/guard", None).await;
    assert_eq!(status, 200, "{g}");
    assert_eq!(g["mode"], "redact");
    assert_eq!(
        g["rules"],
        json!([
            {"match": "claude-*", "provider": null, "mode": "block", "hooks": ["dlp"]},
            {"match": null, "provider": "mock-openai", "mode": "off", "hooks": []},
        ])
    );
    assert_eq!(
        g["hooks"],
        json!([
            {"name": "audit", "host": "hooks.example:8443", "pre": true, "post": false,
             "timeout_ms": 500, "fail": "closed", "every": true},
            {"name": "dlp", "host": "127.0.0.1:9", "pre": true, "post": true,
             "timeout_ms": 2000, "fail": "open", "every": false},
        ])
    );
    assert_eq!(g["patterns"], json!(["acme_token"]));
    assert_eq!(g["allowed"], 2);
    assert_eq!(g["ledger"], true);
    assert_eq!(g["today"]["since_ms"], day_start);
    assert_eq!(g["today"]["requests"], 2);
    assert_eq!(g["today"]["secrets"], 4);
    assert_eq!(
        g["today"]["by_kind"],
        json!({"env_secret": 2, "github_token": 1, "private_key": 1})
    );
    let recent: Vec<&str> = g["recent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(recent.len(), 2);
    assert!(
        recent.contains(&"g1") && recent.contains(&"g3"),
        "{recent:?}"
    );
    let g1 = g["recent"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["request_id"] == "g1")
        .unwrap();
    assert_eq!(g1["model_requested"], "gpt-5");
    assert_eq!(g1["ts_ms"], today);
    assert_eq!(g1["kinds"], json!({"env_secret": 2, "github_token": 1}));
    // Nothing the window may not see: no allow-list value, no hook credential, path or query.
    let text = g.to_string();
    for hidden in [
        "ghp_allowed",
        "AKIAALLOWED",
        "hook-user",
        "hook-pass",
        "/v1/check",
        "hooktoken123",
        "/dlp",
        "acme_[a-z0-9]",
    ] {
        assert!(!text.contains(hidden), "{hidden} shown: {text}");
    }

    // The request's row in the Requests page's search carries its kinds.
    let (_, found) = admin
        .call("GET", "/requests/search?since=2d&limit=10", None)
        .await;
    let row = |id: &str| {
        found["requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id} not found: {found}"))
            .clone()
    };
    assert_eq!(row("g1")["secrets"], "github_token:1,env_secret:2");
    assert_eq!(row("g2")["secrets"], Value::Null);
    let (_, detail) = admin.call("GET", "/requests/g3", None).await;
    assert_eq!(detail["attempts"][0]["secrets"], "private_key:1");

    // Switched from the window: in the file, comment and rules kept, and in force.
    let (status, set) = admin
        .call("PUT", "/guard", Some(json!({"mode": "block"})))
        .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["mode"], "block");
    assert_eq!(set["today"]["requests"], 2, "the figures come with it");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("mode = \"block\" # the gateway's own"),
        "{text}"
    );
    assert!(text.contains("[[guard.rules]]") && text.contains("hooktoken123"));
    let (_, read) = admin.call("GET", "/guard", None).await;
    assert_eq!(read["mode"], "block");

    // Not a mode: refused by the config's validation, with its path; nothing written.
    let (status, err) = admin
        .call("PUT", "/guard", Some(json!({"mode": "sometimes"})))
        .await;
    assert_eq!(status, 400, "{err}");
    assert_eq!(err["problems"][0]["path"], "guard.mode");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let (status, _) = admin
        .call(
            "PUT",
            "/guard",
            Some(json!({"mode": "off", "allow": ["x"]})),
        )
        .await;
    assert_eq!(status, 400, "only the mode is edited here");

    let (_, log) = admin.call("GET", "/audit?limit=10", None).await;
    let puts: Vec<u64> = log["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["method"] == "PUT" && a["path"] == "/admin/api/guard")
        .map(|a| a["status"].as_u64().unwrap())
        .collect();
    assert_eq!(puts, [400, 400, 200], "newest first: {log}");
}

/// Without a ledger the page still shows the settings, and says there are no figures.
#[tokio::test]
async fn the_guard_page_without_a_ledger_shows_the_settings_only() {
    let mock = start_mock(MockConfig::default()).await;
    let extra = format!("[ledger]\nenabled = false\n{GUARD}");
    let gw = Gateway::spawn(&mock_config(&mock.url, "", &extra));
    let (status, g) = Admin { gw: &gw }.call("GET", "/guard", None).await;
    assert_eq!(status, 200, "{g}");
    assert_eq!(g["ledger"], false);
    assert_eq!(g["mode"], "redact");
    assert_eq!(g["today"]["requests"], 0);
    assert_eq!(g["today"]["by_kind"], json!({}));
    assert_eq!(g["recent"], json!([]));
    assert_eq!(g["patterns"], json!(["acme_token"]));
}

/// The window's "test connection" on a cloud: Azure lists its resource's models with its
/// key; Bedrock, whose runtime API lists none, is tested by having the account's
/// credentials (the AWS chain's, here from the environment), and says so when none are had.
#[tokio::test]
async fn testing_a_cloud_provider_checks_its_key_or_its_credentials() {
    let mock = start_mock(MockConfig::default()).await;
    let empty = tempfile::tempdir().unwrap();
    let nothing = empty.path().join("none");
    std::fs::write(&nothing, "").unwrap();
    let nothing = nothing.to_str().unwrap();
    let clouds = format!(
        r#"
[ledger]
enabled = false

[providers.azure]
kind = "azure_openai"
base_url = "{url}"
api_version = "2024-10-21"
api_key = {{ env = "TG_TEST_AZURE_KEY" }}

[providers.bedrock]
kind = "bedrock"
region = "us-east-1"
base_url = "{url}"
"#,
        url = mock.url
    );
    let isolated = [
        ("TG_TEST_AZURE_KEY", gateway_core::mock::MOCK_AZURE_KEY),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_CONFIG_FILE", nothing),
        ("AWS_SHARED_CREDENTIALS_FILE", nothing),
    ];
    let with_keys = [
        &isolated[..],
        &[
            ("AWS_ACCESS_KEY_ID", "AKIDTESTPROBE"),
            ("AWS_SECRET_ACCESS_KEY", "probe-secret"),
        ],
    ]
    .concat();
    let gw = Gateway::spawn_with_env(&mock_config(&mock.url, "", &clouds), &with_keys);
    let admin = Admin { gw: &gw };
    for name in ["azure", "bedrock"] {
        let (_, t) = admin
            .call("POST", &format!("/providers/{name}/test"), None)
            .await;
        assert_eq!(
            (t["ok"].as_bool(), t["status"].as_u64()),
            (Some(true), Some(200)),
            "{name}: {t}"
        );
    }
    let paths: Vec<String> = mock
        .state
        .requests()
        .into_iter()
        .map(|r| r.path_and_query)
        .collect();
    assert_eq!(
        paths,
        ["/openai/models?api-version=2024-10-21"],
        "Azure's model list asked once; testing Bedrock sends it nothing"
    );

    let gw = Gateway::spawn_with_env(&mock_config(&mock.url, "", &clouds), &isolated);
    let admin = Admin { gw: &gw };
    let (_, t) = admin.call("POST", "/providers/bedrock/test", None).await;
    assert_eq!(t["ok"].as_bool(), Some(false), "{t}");
    let said = t["message"].as_str().unwrap_or_default();
    assert!(said.contains("no AWS credentials"), "{said}");
    assert!(!said.contains("probe-secret"));
}

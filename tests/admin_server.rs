//! The admin API on a server: beyond loopback it answers only with an admin key
//! configured, through a trusted proxy that says the client's connection was TLS, with a
//! same-site `Origin` and the admin key presented; nothing of the config or keys is in a
//! refusal; each change is in the admin actions log with who made it and from where.
//! (The test's peer is loopback; a `Host` that names the server, as a proxy passes it on,
//! is what puts a request beyond loopback.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

const ADMIN_KEY: &str = "tg-admin-0f4c1b2a9e8d7c6b5a4f3e2d1c0b9a88";
const HOST: &str = "gateway.example.com";

fn port(url: &str) -> &str {
    url.rsplit(':').next().unwrap()
}

async fn call(
    gw: &Gateway,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let url = format!("http://127.0.0.1:{}/admin/api{path}", port(&gw.url));
    let mut req = client().request(method, url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn server(mock: &Mock, admin: &str) -> Gateway {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "[ledger]\nurl = \"sqlite://{}\"\n\n[admin]\n{admin}\n",
        dir.path().join("ledger.sqlite").display()
    );
    Gateway::spawn_wrapped(
        &mock_config(&mock.url, "", &extra),
        &[
            ("TRIMGATE_INSECURE_OPEN_RELAY", "1"),
            ("TG_TEST_ADMIN_KEY", ADMIN_KEY),
        ],
        &[],
        "0.0.0.0:0",
        dir,
    )
}

#[tokio::test]
async fn beyond_loopback_only_the_admin_key_through_a_trusted_tls_proxy() {
    let mock = start_mock(MockConfig::default()).await;
    let get = reqwest::Method::GET;
    let bearer = format!("Bearer {ADMIN_KEY}");
    let proxied: Vec<(&str, &str)> = vec![
        ("host", HOST),
        ("x-forwarded-proto", "https"),
        ("x-forwarded-for", "203.0.113.9"),
    ];

    // No admin key configured: loopback only, whatever is presented.
    let plain = server(&mock, "");
    let (status, body) = call(
        &plain,
        get.clone(),
        "/status",
        &[&proxied[..], &[("authorization", &bearer)]].concat(),
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("loopback only"));

    // An admin key, but the proxy is not trusted: refused, TLS named.
    let untrusted = server(&mock, "key = { env = \"TG_TEST_ADMIN_KEY\" }");
    let (status, body) = call(
        &untrusted,
        get.clone(),
        "/status",
        &[&proxied[..], &[("authorization", &bearer)]].concat(),
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("TLS"));

    let gw = server(
        &mock,
        "key = { env = \"TG_TEST_ADMIN_KEY\" }\ntrusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\"]",
    );
    // Through the trusted proxy but over plain http: refused.
    let (status, _) = call(
        &gw,
        get.clone(),
        "/status",
        &[
            ("host", HOST),
            ("x-forwarded-proto", "http"),
            ("authorization", &bearer),
        ],
        None,
    )
    .await;
    assert_eq!(status, 403);
    // Without a key, or with the launch's token (loopback only), or a wrong key: 401, and
    // nothing of the config in the answer.
    for auth in [
        None,
        Some(format!("Bearer {}", gw.admin_token)),
        Some("Bearer tg-admin-wrong".to_owned()),
    ] {
        let mut headers = proxied.clone();
        if let Some(a) = &auth {
            headers.push(("authorization", a));
        }
        let (status, body) = call(&gw, get.clone(), "/providers", &headers, None).await;
        assert_eq!(status, 401, "{auth:?}: {body}");
        let text = body.to_string();
        assert!(
            !text.contains("mock-openai") && !text.contains("TG_TEST"),
            "{text}"
        );
    }
    // Another site's page: refused even with the key.
    let (status, _) = call(
        &gw,
        get.clone(),
        "/status",
        &[
            &proxied[..],
            &[
                ("authorization", &bearer),
                ("origin", "https://evil.example"),
            ],
        ]
        .concat(),
        None,
    )
    .await;
    assert_eq!(status, 403);
    // The page's own origin with the key: in.
    let own_origin = format!("https://{HOST}");
    let (status, body) = call(
        &gw,
        get.clone(),
        "/providers",
        &[
            &proxied[..],
            &[("authorization", &bearer), ("origin", &own_origin)],
        ]
        .concat(),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // A change with the admin key, and one from the local window: both in the log.
    let (status, made) = call(
        &gw,
        reqwest::Method::POST,
        "/keys",
        &[&proxied[..], &[("authorization", &bearer)]].concat(),
        Some(json!({"name": "ci", "rpm": 60})),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let host = format!("127.0.0.1:{}", port(&gw.url));
    let token = format!("Bearer {}", gw.admin_token);
    let (status, _) = call(
        &gw,
        reqwest::Method::DELETE,
        "/keys/ci",
        &[("host", &host), ("authorization", &token)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, log) = call(
        &gw,
        get.clone(),
        "/audit",
        &[&proxied[..], &[("authorization", &bearer)]].concat(),
        None,
    )
    .await;
    assert_eq!(status, 200, "{log}");
    let actions = log["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 2, "{log}");
    assert_eq!(actions[0]["who"], "local window");
    assert_eq!(actions[0]["method"], "DELETE");
    assert_eq!(actions[0]["path"], "/admin/api/keys/ci");
    assert_eq!(actions[0]["status"], 200);
    assert_eq!(actions[1]["who"], "admin key");
    assert_eq!(actions[1]["method"], "POST");
    assert_eq!(actions[1]["status"], 201);
    assert_eq!(actions[1]["addr"], "203.0.113.9");
    assert!(
        !log.to_string().contains(made["key"].as_str().unwrap()),
        "a key made is never in the log"
    );
}

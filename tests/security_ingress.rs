//! The gateway's door, through the real binary on its defaults: what a web page whose DNS
//! name was rebound to 127.0.0.1, or another site in the user's browser, can and cannot
//! make it do. Each test is one attack, sent over a real socket.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::Value;

fn port(url: &str) -> &str {
    url.rsplit(':').next().unwrap()
}

const CHAT: &str = r#"{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}"#;
const MESSAGES: &str =
    r#"{"model":"claude-sonnet-5-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}"#;
const RESPONSES: &str = r#"{"model":"gpt-5","input":"hi"}"#;

/// A page at evil.example, rebound to 127.0.0.1, sends its own name in `Host` to every
/// route: each answers 403 in its client's shape, and the provider hears nothing.
#[tokio::test]
async fn a_rebound_host_is_refused_on_every_route_and_nothing_goes_upstream() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let evil = format!("evil.example:{}", port(&gw.url));
    let origin = format!("http://{evil}");

    for (path, body) in [
        ("/v1/chat/completions", CHAT),
        ("/v1/responses", RESPONSES),
        ("/v1/messages", MESSAGES),
        ("/chat/completions", CHAT),
    ] {
        let res = post_json(
            &format!("{}{path}", gw.url),
            body,
            &[("host", &evil), ("origin", &origin)],
        )
        .await;
        assert_eq!(res.status(), 403, "{path}");
        let json: Value = res.json().await.unwrap();
        if path.contains("messages") {
            assert_eq!(json["type"], "error", "{path}: {json}");
            assert_eq!(json["error"]["type"], "permission_error", "{path}");
        } else {
            assert_eq!(json["error"]["code"], "forbidden", "{path}: {json}");
        }
    }
    // Without an Origin too (a rebound page's fetch in no-cors mode, a script's request).
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        CHAT,
        &[("host", &evil)],
    )
    .await;
    assert_eq!(res.status(), 403);

    for path in ["/v1/models", "/models", "/metrics", "/healthz", "/readyz"] {
        let res = client()
            .get(format!("{}{path}", gw.url))
            .header("host", &evil)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{path}");
    }
    let res = client()
        .get(format!("{}/healthz", gw.url))
        .header("host", &evil)
        .send()
        .await
        .unwrap();
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));

    assert!(
        mock.state.requests().is_empty(),
        "nothing may reach the provider"
    );
}

/// Agents and SDKs send a loopback `Host` (name or address, with or without the port)
/// and no `Origin`: they are served as before.
#[tokio::test]
async fn loopback_hosts_without_an_origin_are_served() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let p = port(&gw.url);
    for host in [
        format!("127.0.0.1:{p}"),
        format!("localhost:{p}"),
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
    ] {
        let res = post_json(
            &format!("{}/v1/chat/completions", gw.url),
            CHAT,
            &[("host", &host)],
        )
        .await;
        assert_eq!(res.status(), 200, "{host}");
    }
    let res = post_json(&format!("{}/v1/messages", gw.url), MESSAGES, &[]).await;
    assert_eq!(res.status(), 200);
}

/// Another site open in the user's browser posts to the gateway with its own `Origin`
/// (the `Host` is right: it names 127.0.0.1). It is refused, gets no CORS grant, and
/// the provider hears nothing; the gateway's own page and the desktop window may.
#[tokio::test]
async fn another_sites_origin_is_refused_on_the_proxy_routes() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let p: u16 = port(&gw.url).parse().unwrap();
    for origin in [
        "https://evil.example".to_owned(),
        format!("http://127.0.0.1:{}", p + 1),
        "null".to_owned(),
    ] {
        for (path, body) in [
            ("/v1/chat/completions", CHAT),
            ("/v1/responses", RESPONSES),
            ("/v1/messages", MESSAGES),
        ] {
            let res = post_json(&format!("{}{path}", gw.url), body, &[("origin", &origin)]).await;
            assert_eq!(res.status(), 403, "{origin} {path}");
            assert!(res.headers().get("access-control-allow-origin").is_none());
        }
        // A preflight gets no grant either.
        let res = client()
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/v1/chat/completions", gw.url),
            )
            .header("origin", &origin)
            .header("access-control-request-method", "POST")
            .send()
            .await
            .unwrap();
        assert!(res.headers().get("access-control-allow-origin").is_none());
    }
    assert!(mock.state.requests().is_empty());

    for origin in [format!("http://127.0.0.1:{p}"), "tauri://localhost".into()] {
        let res = post_json(
            &format!("{}/v1/chat/completions", gw.url),
            CHAT,
            &[("origin", &origin)],
        )
        .await;
        assert_eq!(res.status(), 200, "{origin}");
    }
}

/// Listening on every interface (server mode), the gateway is reached by other names:
/// `Host` is not restricted there.
#[tokio::test]
async fn server_mode_does_not_restrict_host() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn_wrapped(
        &mock_config(&mock.url, "", "[ledger]\nenabled = false\n"),
        &[],
        &[],
        "0.0.0.0:0",
        tempfile::tempdir().unwrap(),
    );
    let url = format!("http://127.0.0.1:{}", port(&gw.url));
    let res = post_json(
        &format!("{url}/v1/chat/completions"),
        CHAT,
        &[("host", &format!("gateway.lan:{}", port(&gw.url)))],
    )
    .await;
    assert_eq!(res.status(), 200);
}

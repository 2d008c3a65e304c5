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

    for path in [
        "/v1/models",
        "/models",
        "/metrics",
        "/status",
        "/healthz",
        "/readyz",
    ] {
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
        &[("TRIMGATE_INSECURE_OPEN_RELAY", "1")],
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

/// Beyond loopback without gateway keys the gateway would be an open relay of the
/// operator's provider keys: the start is refused, naming the ways out; with a gateway key
/// (here from the environment alone) it starts and wants the key.
#[test]
fn serving_beyond_loopback_without_gateway_keys_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        mock_config("http://127.0.0.1:9", "", "[ledger]\nenabled = false\n"),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["serve", "--listen", "0.0.0.0:0", "--config"])
        .arg(&config)
        .env_remove("TRIMGATE_INSECURE_OPEN_RELAY")
        .env("XDG_DATA_HOME", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without gateway keys"), "{stderr}");
    assert!(stderr.contains("--insecure-open-relay"), "{stderr}");
}

#[tokio::test]
async fn a_gateway_key_from_the_environment_lets_it_serve_beyond_loopback() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn_wrapped(
        &mock_config(&mock.url, "", "[ledger]\nenabled = false\n"),
        &[
            ("TRIMGATE__GATEWAY_KEYS__0__NAME", "team"),
            (
                "TRIMGATE__GATEWAY_KEYS__0__KEY",
                "{ env = \"TG_TEST_TEAM_KEY\" }",
            ),
            ("TG_TEST_TEAM_KEY", "gk-team-123"),
        ],
        &[],
        "0.0.0.0:0",
        tempfile::tempdir().unwrap(),
    );
    let url = format!("http://127.0.0.1:{}/v1/chat/completions", port(&gw.url));
    assert_eq!(post_json(&url, CHAT, &[]).await.status(), 401);
    let res = post_json(&url, CHAT, &[("authorization", "Bearer gk-team-123")]).await;
    assert_eq!(res.status(), 200);
}

/// A `model` of 100 kB would be forwarded and kept in logs, the ledger and the window's
/// feed: past 256 bytes it is a 400 naming `model`, and nothing goes upstream.
#[tokio::test]
async fn a_model_name_past_the_limit_is_refused_naming_model() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let long = "gpt-5".to_owned() + &"x".repeat(100_000);
    let body = serde_json::json!({"model": long, "messages": [{"role": "user", "content": "hi"}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        body.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 400);
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["error"]["param"], "model", "{json}");
    let body = serde_json::json!({"model": "claude-".to_owned() + &"x".repeat(300), "max_tokens": 8, "messages": []});
    let res = post_json(&format!("{}/v1/messages", gw.url), body.to_string(), &[]).await;
    assert_eq!(res.status(), 400);
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["error"]["type"], "invalid_request_error", "{json}");
    assert!(mock.state.requests().is_empty());
}

/// JSON nested 200,000 deep is refused with a 400 and not forwarded.
#[tokio::test]
async fn json_nested_past_the_depth_limit_is_refused_and_not_forwarded() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    for levels in [200_000, 129] {
        let body = format!(
            r#"{{"model":"gpt-5","messages":[{{"role":"user","content":"hi"}}],"x":{}{}}}"#,
            "[".repeat(levels - 1),
            "]".repeat(levels - 1)
        );
        let res = post_json(&format!("{}/v1/chat/completions", gw.url), body, &[]).await;
        assert_eq!(res.status(), 400, "{levels} levels");
        let json: Value = res.json().await.unwrap();
        assert!(
            json["error"]["message"].as_str().unwrap().contains("nest"),
            "{json}"
        );
    }
    assert!(mock.state.requests().is_empty());
}

/// A client that writes its whole body before reading (as the Python SDKs do) gets a
/// 413 it can read for a body over the limit, not a reset that it would retry.
#[tokio::test]
async fn a_body_over_the_limit_gets_a_readable_413_not_a_reset() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "max_body_bytes = 1048576", ""));
    let addr = gw.url.strip_prefix("http://").unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let size = 40 * 1024 * 1024;
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let body = vec![b' '; size];
    stream.write_all(&body).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        stream.read_to_end(&mut answer),
    )
    .await
    .expect("the answer comes")
    .expect("the connection is not reset");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    let json: Value = serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["error"]["code"], "body_too_large");
    assert!(mock.state.requests().is_empty());
}

/// A client that starts a body and stops sending gets a 408 once the time to send it is up.
#[tokio::test]
async fn a_body_that_stops_arriving_gets_a_408() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "body_timeout_secs = 1", ""));
    let addr = gw.url.strip_prefix("http://").unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nanthropic-version: 2023-06-01\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{{\"model\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut answer),
    )
    .await
    .expect("the gateway answers within its limit")
    .unwrap();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        text.contains(r#""type":"error""#),
        "Anthropic's shape: {text}"
    );
}

/// Past `max_in_flight` requests at once, another gets a 503 with `retry-after` in its
/// client's shape; once the first is answered, requests are served again.
#[tokio::test]
async fn requests_past_the_in_flight_cap_get_503_with_retry_after() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "max_in_flight = 1", ""));
    let url = format!("{}/v1/chat/completions", gw.url);
    let slow = tokio::spawn({
        let url = url.clone();
        async move { post_json(&url, CHAT, &[("x-mock-delay-ms", "1500")]).await }
    });
    assert!(
        eventually(std::time::Duration::from_secs(5), || !mock
            .state
            .requests()
            .is_empty())
        .await
    );
    let res = post_json(&url, CHAT, &[]).await;
    assert_eq!(res.status(), 503);
    assert_eq!(res.headers()["retry-after"], "1");
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["error"]["code"], "overloaded", "{json}");
    assert_eq!(slow.await.unwrap().status(), 200);
    assert_eq!(post_json(&url, CHAT, &[]).await.status(), 200);
}

/// Past `max_connections` open connections, a new one waits in the kernel's queue until
/// one closes, rather than costing the gateway anything.
#[tokio::test]
async fn connections_past_the_cap_wait_until_one_closes() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "max_connections = 1", ""));
    let addr = gw.url.strip_prefix("http://").unwrap().to_owned();
    let idle = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // Give the gateway time to take the first connection.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let url = format!("{}/healthz", gw.url);
    let waiting = tokio::spawn(async move { client().get(url).send().await.unwrap().status() });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the second connection waits");
    drop(idle);
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
        .await
        .expect("served once the first closed")
        .unwrap();
    assert_eq!(status, 200);
}

/// A holder of the admin token points a provider at another host and asks for a test
/// call: the stored key is unbound first, so the other host never sees it.
#[tokio::test]
async fn a_new_base_url_host_unbinds_the_key_so_the_test_call_never_sends_it() {
    let mock = start_mock(MockConfig::default()).await;
    let other = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let admin = |method: reqwest::Method, path: &str| {
        client()
            .request(method, format!("{}/admin/api{path}", gw.url))
            .bearer_auth(&gw.admin_token)
    };
    // The same host, another path: the key stays.
    let res = admin(reqwest::Method::PUT, "/providers/mock-openai")
        .json(&serde_json::json!({"base_url": format!("{}/v1/", mock.url)}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let json: Value = res.json().await.unwrap();
    assert!(json.get("key_removed").is_none(), "{json}");

    let res = admin(reqwest::Method::PUT, "/providers/mock-openai")
        .json(&serde_json::json!({"base_url": format!("{}/v1", other.url)}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["key_removed"], true, "{json}");

    let res = admin(reqwest::Method::POST, "/providers/mock-openai/test")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    for request in other.state.requests() {
        for (name, value) in &request.headers {
            assert!(
                !value
                    .as_bytes()
                    .windows(OPENAI_KEY.len())
                    .any(|w| w == OPENAI_KEY.as_bytes()),
                "the key went to the new host in {name}"
            );
        }
    }
    // Requests routed there go out without it too.
    let _ = post_json(&format!("{}/v1/chat/completions", gw.url), CHAT, &[]).await;
    for request in other.state.requests() {
        assert!(!format!("{:?}", request.headers).contains(OPENAI_KEY));
    }
}

/// Under systemd or a pipe, stdout is a log: the admin token is not printed there but
/// written to a file only the user can read, whose path is printed.
#[tokio::test]
async fn the_admin_token_goes_to_a_private_file_when_stdout_is_not_a_terminal() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    assert_eq!(
        gw.admin_token.len(),
        64,
        "read from the file the gateway names"
    );
    let file = files_below(gw.dir.path())
        .into_iter()
        .find(|p| p.ends_with("admin-token"))
        .expect("the token file is in the data dir");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(!gw.stderr().contains(&gw.admin_token));
    // The token read from the file opens the admin API.
    admin_get(&gw, "/status").await;
}

/// `[admin] enabled = false`: no admin API, no window; the proxy serves as before.
#[tokio::test]
async fn admin_enabled_false_turns_the_admin_api_and_the_window_off() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", "[admin]\nenabled = false\n"));
    assert!(gw.admin_token.is_empty(), "no token is made or shown");
    let res = client()
        .get(format!("{}/admin/api/status", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    let res = client()
        .get(format!("{}/ui/", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), CHAT, &[]).await;
    assert_eq!(res.status(), 200);
}

/// Past `max_header_count` headers or `max_header_bytes` of them, a request gets a 431
/// in its client's shape and nothing goes upstream.
#[tokio::test]
async fn headers_past_the_limits_get_a_431_in_the_clients_shape() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let many: Vec<(String, String)> = (0..70)
        .map(|i| (format!("x-filler-{i}"), "1".to_owned()))
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), CHAT, &many).await;
    assert_eq!(res.status(), 431);
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["error"]["code"], "headers_too_large", "{json}");

    let big = "b".repeat(40 * 1024);
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        MESSAGES,
        &[("x-big", &big), ("anthropic-version", "2023-06-01")],
    )
    .await;
    assert_eq!(res.status(), 431);
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["type"], "error", "{json}");
    assert_eq!(json["error"]["type"], "invalid_request_error", "{json}");
    assert!(mock.state.requests().is_empty(), "nothing went upstream");

    // Just under both limits is served.
    let under: Vec<(&str, &str)> = many[..40].to_vec();
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), CHAT, &under).await;
    assert_eq!(res.status(), 200);
}

/// An HTTP/2 (h2c) connection: the handshake's sender, and the connection's task, which
/// ends when the gateway closes the connection.
async fn h2c(
    addr: &str,
) -> (
    hyper::client::conn::http2::SendRequest<http_body_util::Full<bytes::Bytes>>,
    tokio::task::JoinHandle<()>,
) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    (sender, task)
}

fn h2_chat(
    addr: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut request = http::Request::post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_owned(),
        )))
        .unwrap()
}

async fn h2_text(response: http::Response<hyper::body::Incoming>) -> String {
    use http_body_util::BodyExt;
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// An HTTP/2 connection that carries no request for `idle_timeout_secs` is closed, but
/// one with a stream open longer than that is not cut.
#[tokio::test]
async fn an_idle_http2_connection_is_closed_but_a_long_stream_is_not() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "idle_timeout_secs = 1", ""));
    let addr = gw.url.strip_prefix("http://").unwrap().to_owned();

    // A stream that takes about three idle timeouts, frame by frame.
    let (mut sender, task) = h2c(&addr).await;
    let stream = r#"{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let response = sender
        .send_request(h2_chat(
            &addr,
            stream,
            &[
                ("x-mock-frame-interval-ms", "300"),
                (
                    "x-mock-reply",
                    "one two three four five six seven eight nine ten",
                ),
            ],
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let started = std::time::Instant::now();
    let text = h2_text(response).await;
    assert!(
        started.elapsed() > std::time::Duration::from_secs(2),
        "the stream outlived the timeout"
    );
    assert!(text.contains("[DONE]"), "the stream was not cut: {text}");

    // Then nothing: the gateway closes the connection.
    let closed = tokio::time::timeout(std::time::Duration::from_secs(10), task).await;
    assert!(closed.is_ok(), "the idle connection was closed");
}

/// At most `max_streams_per_connection` requests are open on one HTTP/2 connection: with
/// one, three requests of 400 ms each sent at once are served one after another.
#[tokio::test]
async fn requests_on_one_http2_connection_are_capped() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(
        &mock.url,
        "max_streams_per_connection = 1",
        "",
    ));
    let addr = gw.url.strip_prefix("http://").unwrap().to_owned();
    let (mut sender, _task) = h2c(&addr).await;
    // One request first, so the client has the gateway's SETTINGS before it opens more
    // (a stream opened past the cap before that is refused, as HTTP/2 says).
    let first = sender
        .send_request(h2_chat(&addr, CHAT, &[]))
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let started = std::time::Instant::now();
    let requests = (0..3).map(|_| {
        let mut sender = sender.clone();
        let request = h2_chat(&addr, CHAT, &[("x-mock-delay-ms", "400")]);
        async move { sender.send_request(request).await.unwrap().status() }
    });
    let statuses = futures_util::future::join_all(requests).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    // A lower bound only: three 400 ms answers in turn cannot take less than 1.2 s.
    assert!(started.elapsed() >= std::time::Duration::from_millis(1200));
}

/// With gateway keys, what is served (`/v1/models`) and the traffic's counts (`/metrics`)
/// need a key too; the health checks do not.
#[tokio::test]
async fn with_gateway_keys_models_and_metrics_need_a_key() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn_with_env(
        &mock_config(
            &mock.url,
            "",
            "[[gateway_keys]]\nname = \"ci\"\nkey = { env = \"TG_TEST_GATEWAY_KEY\" }\n",
        ),
        &[("TG_TEST_GATEWAY_KEY", "gk-ci-123")],
    );
    for path in ["/v1/models", "/metrics", "/status"] {
        let url = format!("{}{path}", gw.url);
        let refused = client().get(&url).send().await.unwrap();
        assert_eq!(refused.status(), 401, "{path}");
        let json: Value = refused.json().await.unwrap();
        assert_eq!(json["error"]["code"], "invalid_api_key", "{path}: {json}");
        let served = client()
            .get(&url)
            .header("authorization", "Bearer gk-ci-123")
            .send()
            .await
            .unwrap();
        assert_eq!(served.status(), 200, "{path}");
    }
    let health = client()
        .get(format!("{}/healthz", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

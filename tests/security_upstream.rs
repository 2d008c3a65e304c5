//! The gateway's side of the provider connection, against a hostile client and a hostile
//! provider. What a provider sends is bounded and read the way the SSE spec says: an
//! event that never ends, or a stream past its total cap, ends with an error event in the
//! client's dialect; events separated by `\r\r` are events (the provider here is a small
//! hostile HTTP server on an ephemeral port). What a client sends reaches the provider
//! only through each dialect's allow-list of headers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use gateway_core::mock::MockConfig;
use gateway_core::record::Outcome;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const CHAT_STREAM: &str =
    r#"{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

/// What the hostile provider does once it has read a request.
#[derive(Clone, Copy)]
enum Hostile {
    /// `data: {` and then filler, never a blank line, until the gateway hangs up.
    EndlessEvent,
    /// Small complete events, one after another, until the gateway hangs up.
    Flood,
    /// A short chat stream whose events end in `\r\r`, sent one byte at a time.
    CarriageReturns,
    /// A whole (non-streamed) Chat answer of a megabyte.
    LargeAnswer,
}

/// Starts the hostile provider; returns its base URL.
async fn hostile(behaviour: Hostile) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                read_request(&mut socket).await;
                if let Hostile::LargeAnswer = behaviour {
                    let body = format!(
                        r#"{{"id":"c","object":"chat.completion","created":1,"model":"gpt-5","choices":[{{"index":0,"message":{{"role":"assistant","content":"{}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}}}"#,
                        "z".repeat(1024 * 1024)
                    );
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", body.len());
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(body.as_bytes()).await;
                    return;
                }
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                match behaviour {
                    Hostile::EndlessEvent => {
                        let filler = vec![b'x'; 16 * 1024];
                        let _ = socket.write_all(b"data: {\"a\":\"").await;
                        while socket.write_all(&filler).await.is_ok() {}
                    }
                    Hostile::Flood => {
                        let frame = format!(
                            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-5\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
                            "y".repeat(900)
                        );
                        while socket.write_all(frame.as_bytes()).await.is_ok() {}
                    }
                    Hostile::LargeAnswer => {}
                    Hostile::CarriageReturns => {
                        let body = concat!(
                            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\r\r",
                            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-5\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}\r\r",
                            "data: [DONE]\r\r",
                        );
                        for byte in body.as_bytes() {
                            if socket.write_all(&[*byte]).await.is_err() {
                                return;
                            }
                            socket.flush().await.ok();
                        }
                    }
                }
            });
        }
    });
    url
}

/// Reads one request's head and its `content-length` body.
async fn read_request(socket: &mut tokio::net::TcpStream) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        let Ok(n) = socket.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        seen.extend_from_slice(&buf[..n]);
        if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&seen[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while seen.len() < head_end + length {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

fn hostile_config(base_url: &str, server: &str) -> String {
    format!(
        r#"
[server]
{server}

[providers.hostile]
kind = "openai"
base_url = "{base_url}"
api_key = {{ env = "TG_TEST_OPENAI_KEY" }}
models = ["gpt-5"]
"#
    )
}

/// Reads a streamed answer to its end, which must come within `limit`.
async fn read_to_end(res: reqwest::Response, limit: Duration) -> String {
    let body = tokio::time::timeout(limit, res.bytes())
        .await
        .expect("the stream did not end")
        .unwrap();
    String::from_utf8_lossy(&body).into_owned()
}

#[tokio::test]
async fn an_event_that_never_ends_is_cut_at_max_event_bytes_with_an_error_event() {
    let upstream = hostile(Hostile::EndlessEvent).await;
    let gw = Gateway::spawn(&hostile_config(&upstream, "max_event_bytes = 65536"));
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), CHAT_STREAM, &[]).await;
    assert_eq!(res.status(), 200);
    let text = read_to_end(res, Duration::from_secs(20)).await;
    // Nothing of the endless event reaches the client: only the error, OpenAI's way.
    assert!(!text.contains("xxxx"), "a partial event was relayed");
    let data = sse_data(&text);
    assert_eq!(data.len(), 1, "{text}");
    let error: serde_json::Value = serde_json::from_str(&data[0]).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_event_bytes"), "{message}");
}

#[tokio::test]
async fn an_anthropic_client_gets_the_event_cap_as_an_anthropic_error_event() {
    let upstream = hostile(Hostile::EndlessEvent).await;
    let gw = Gateway::spawn(&hostile_config(&upstream, "max_event_bytes = 65536"));
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        r#"{"model":"gpt-5","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    let text = read_to_end(res, Duration::from_secs(20)).await;
    let events = sse_events(&text);
    let (event, data) = events.last().expect("an error event");
    assert_eq!(event.as_deref(), Some("error"), "{text}");
    assert!(data.contains("max_event_bytes"), "{data}");
}

#[tokio::test]
async fn a_stream_past_max_stream_bytes_is_cut_and_recorded_as_failed() {
    let upstream = hostile(Hostile::Flood).await;
    let gw = start_inprocess(&hostile_config(&upstream, "max_stream_bytes = 200000")).await;
    let started = Instant::now();
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), CHAT_STREAM, &[]).await;
    assert_eq!(res.status(), 200);
    let text = read_to_end(res, Duration::from_secs(20)).await;
    assert!(
        text.len() <= 200_000 + 1024,
        "{} bytes relayed past the cap",
        text.len()
    );
    let data = sse_data(&text);
    assert!(data.len() > 10, "frames before the cap were relayed");
    let error: serde_json::Value = serde_json::from_str(data.last().unwrap()).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_stream_bytes"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let records = gw.records.clone();
    assert!(eventually(Duration::from_secs(5), || !records.records().is_empty()).await);
    let record = &gw.records.records()[0];
    assert_eq!(record.outcome, Outcome::UpstreamFailed);
    assert_eq!(record.error, Some("upstream_broken"));
}

#[tokio::test]
async fn events_separated_by_carriage_returns_are_relayed_and_their_usage_read() {
    let upstream = hostile(Hostile::CarriageReturns).await;
    let gw = start_inprocess(&hostile_config(&upstream, "")).await;
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        CHAT_STREAM.replace(
            r#""stream":true"#,
            r#""stream":true,"stream_options":{"include_usage":true}"#,
        ),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    let text = read_to_end(res, Duration::from_secs(20)).await;
    assert!(text.contains("hello"), "{text}");
    assert!(text.ends_with("data: [DONE]\r\r"), "{text:?}");
    let records = gw.records.clone();
    assert!(eventually(Duration::from_secs(5), || !records.records().is_empty()).await);
    let record = &gw.records.records()[0];
    assert_eq!(record.outcome, Outcome::Completed);
    let usage = record.usage.expect("usage read from `\\r\\r` events");
    assert_eq!((usage.input, usage.output), (7, 3));
}

#[tokio::test]
async fn a_large_whole_answer_is_translated_for_the_client() {
    let upstream = hostile(Hostile::LargeAnswer).await;
    let config = hostile_config(&upstream, "").replace(
        "models = [\"gpt-5\"]",
        "models = [\"gpt-5\"]\ndialects = [\"chat\"]",
    );
    let gw = Gateway::spawn(&config);
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        r#"{"model":"gpt-5","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}"#,
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    let answer: serde_json::Value = res.json().await.unwrap();
    assert_eq!(answer["type"], "message");
    assert_eq!(
        answer["content"][0]["text"].as_str().unwrap().len(),
        1024 * 1024
    );
    assert_eq!(answer["usage"]["output_tokens"], 9);
}

#[tokio::test]
async fn a_whole_answer_past_max_answer_bytes_is_a_502_in_the_clients_shape() {
    let upstream = hostile(Hostile::LargeAnswer).await;
    let gw = Gateway::spawn(&hostile_config(&upstream, "max_answer_bytes = 65536"));
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}"#,
        &[],
    )
    .await;
    assert_eq!(res.status(), 502);
    let answer: serde_json::Value = res.json().await.unwrap();
    assert_eq!(answer["error"]["code"], "upstream_broken", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_answer_bytes"), "{message}");
}

/// Headers a client may send that must never reach a provider.
const HOSTILE_HEADERS: [(&str, &str); 5] = [
    ("cookie", "session=stolen"),
    ("openai-organization", "org-someone-else"),
    ("openai-project", "proj-someone-else"),
    ("x-goog-api-key", "AIza-client"),
    ("x-evil", "1"),
];

#[tokio::test]
async fn only_headers_the_providers_api_defines_reach_the_provider() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let mut headers = HOSTILE_HEADERS.to_vec();
    headers.extend([
        ("anthropic-beta", "prompt-caching-2024-07-31"),
        ("session-id", "sess-1"),
        ("x-stainless-retry-count", "0"),
    ]);
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        r#"{"model":"claude-sonnet-5-5","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}"#,
        &headers,
    )
    .await;
    assert_eq!(res.status(), 200);
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}"#,
        &headers,
    )
    .await;
    assert_eq!(res.status(), 200);
    let sent = mock.state.requests();
    assert_eq!(sent.len(), 2);
    for got in &sent {
        for (name, _) in HOSTILE_HEADERS {
            assert!(
                !got.headers.contains_key(name),
                "{name} reached the provider"
            );
        }
        assert_eq!(got.headers["session-id"], "sess-1");
        assert_eq!(got.headers["x-stainless-retry-count"], "0");
    }
    assert_eq!(
        sent[0].headers["anthropic-beta"],
        "prompt-caching-2024-07-31"
    );
    assert_eq!(sent[0].headers["x-api-key"], ANTHROPIC_KEY);
    // The client's Anthropic headers mean nothing to OpenAI.
    assert!(!sent[1].headers.contains_key("anthropic-beta"));
}

#[tokio::test]
async fn a_provider_with_client_org_lets_the_client_pick_the_organization() {
    let mock = start_mock(MockConfig::default()).await;
    let config = mock_config(&mock.url, "", "").replace(
        "models = [\"gpt-5\", \"gpt-5-mini\"]",
        "models = [\"gpt-5\", \"gpt-5-mini\"]\nclient_org = true",
    );
    let gw = Gateway::spawn(&config);
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}"#,
        &HOSTILE_HEADERS,
    )
    .await;
    assert_eq!(res.status(), 200);
    let got = mock.state.requests().pop().unwrap();
    assert_eq!(got.headers["openai-organization"], "org-someone-else");
    assert_eq!(got.headers["openai-project"], "proj-someone-else");
    for name in ["cookie", "x-goog-api-key", "x-evil"] {
        assert!(
            !got.headers.contains_key(name),
            "{name} reached the provider"
        );
    }
}

/// Puts `routes` through the admin API, as the window does.
async fn put_routes(gw: &Gateway, routes: &str) -> reqwest::Response {
    client()
        .put(format!("{}/admin/api/routes", gw.url))
        .header("authorization", format!("Bearer {}", gw.admin_token))
        .header("content-type", "application/json")
        .body(routes.to_owned())
        .send()
        .await
        .unwrap()
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[cfg(unix)]
#[tokio::test]
async fn an_edit_from_the_window_keeps_the_configs_mode_and_its_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", "[ledger]\nenabled = false\n"));
    // The user keeps the config in a dotfiles folder, owner-only, linked into place.
    let link = gw.dir.path().join("config.toml");
    let dotfiles = gw.dir.path().join("dotfiles");
    std::fs::create_dir(&dotfiles).unwrap();
    let real = dotfiles.join("trimgate.toml");
    std::fs::rename(&link, &real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("dotfiles/trimgate.toml", &link).unwrap();

    let res = put_routes(
        &gw,
        r#"{"routes":[{"match":"fast","provider":"mock-openai","model":"gpt-5-mini"}]}"#,
    )
    .await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("gpt-5-mini"));
    assert_eq!(mode(&real), 0o600);
}

#[cfg(unix)]
#[tokio::test]
async fn the_ledger_and_its_folder_are_created_owner_only() {
    let mock = start_mock(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("data").join("trimgate");
    let file = folder.join("ledger.sqlite");
    let gw = Gateway::spawn(&mock_config(
        &mock.url,
        "",
        &format!("[ledger]\nurl = \"sqlite://{}\"\n", file.display()),
    ));
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}"#,
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&file), 0o600);
}

#[tokio::test]
async fn passwords_in_ledger_and_provider_urls_never_reach_the_log() {
    let config = r#"
[server]

[ledger]
url = "postgres://tg@127.0.0.1:1/ledger?sslmode=disable&password=s3cret-ledger"

[providers.proxied]
kind = "openai_compatible"
base_url = "http://tg:s3cret-base@127.0.0.1:1/v1"
models = ["local-model"]
"#;
    let gw = Gateway::spawn(config);
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        r#"{"model":"local-model","messages":[{"role":"user","content":"hi"}]}"#,
        &[],
    )
    .await;
    let body = res.text().await.unwrap();
    assert!(!body.contains("s3cret"), "{body}");
    let log = gw.stderr();
    assert!(log.contains("password=…"), "{log}");
    assert!(log.contains("tg:…@127.0.0.1:1/v1"), "{log}");
    assert!(!log.contains("s3cret"), "{log}");
}

#[tokio::test]
async fn the_admin_api_shows_a_base_urls_password_masked_and_keeps_it_on_a_round_trip() {
    let config = r#"
[ledger]
enabled = false

[providers.proxied]
kind = "openai_compatible"
base_url = "http://tg:s3cret-base@127.0.0.1:1/v1"
models = ["local-model"]
"#;
    let gw = Gateway::spawn(config);
    let listed = client()
        .get(format!("{}/admin/api/providers", gw.url))
        .header("authorization", format!("Bearer {}", gw.admin_token))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!listed.contains("s3cret"), "{listed}");
    assert!(listed.contains("http://tg:…@127.0.0.1:1/v1"), "{listed}");

    // The window sends the form back as it was shown: the password must survive.
    let res = client()
        .put(format!("{}/admin/api/providers/proxied", gw.url))
        .header("authorization", format!("Bearer {}", gw.admin_token))
        .header("content-type", "application/json")
        .body(r#"{"base_url":"http://tg:…@127.0.0.1:1/v1","models":["local-model","other"]}"#)
        .send()
        .await
        .unwrap();
    let status = res.status();
    let answer = res.text().await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.contains("s3cret"), "{answer}");
    let file = std::fs::read_to_string(gw.dir.path().join("config.toml")).unwrap();
    assert!(
        file.contains("http://tg:s3cret-base@127.0.0.1:1/v1"),
        "{file}"
    );
    assert!(file.contains("\"other\""), "{file}");
}

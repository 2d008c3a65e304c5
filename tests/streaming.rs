//! Streams: frames relayed one by one as they arrive, usage captured, client disconnects
//! cancelling the upstream request, failures after the 200 delivered as error events,
//! and graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures_util::StreamExt;
use gateway_core::mock::MockConfig;
use gateway_core::record::Outcome;
use serde_json::Value;

const CHAT_STREAM: &str = r#"{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"one two three four five six"}]}"#;

/// Reads a streamed body, noting when each chunk arrived.
async fn timed_chunks(res: reqwest::Response) -> Vec<(Instant, bytes::Bytes)> {
    let mut out = Vec::new();
    let mut stream = res.bytes_stream();
    while let Some(chunk) = stream.next().await {
        out.push((Instant::now(), chunk.unwrap()));
    }
    out
}

#[tokio::test]
async fn frames_arrive_one_by_one_as_the_provider_sends_them() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let interval = Duration::from_millis(150);
    let sent = Instant::now();
    let res = post_json(&format!("{}/v1/messages", gw.url), r#"{"model":"claude-sonnet-5-5","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"a b c"}]}"#, &[("x-mock-frame-interval-ms", &interval.as_millis().to_string())]).await;
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let chunks = timed_chunks(res).await;
    let frames: usize = chunks
        .iter()
        .map(|(_, c)| c.windows(2).filter(|w| w == b"\n\n").count())
        .sum();
    // Each frame must come on its own, not batched: as many chunks as frames, and the
    // gaps the provider left between frames must still be there at the client.
    assert!(
        frames >= 8,
        "expected a full event sequence, got {frames} frames"
    );
    assert_eq!(chunks.len(), frames, "frames were batched together");
    let spread = chunks.last().unwrap().0 - chunks[0].0;
    let expected = interval * (frames as u32 - 1);
    assert!(
        spread >= expected.mul_f64(0.8),
        "frames arrived within {spread:?}, provider spread them over {expected:?}"
    );
    // And the first frame reached the client long before the stream was over.
    assert!(chunks[0].0 - sent < spread, "first frame was held back");
}

#[tokio::test]
async fn a_client_disconnect_cancels_the_upstream_request() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&mock_config(&mock.url, "", "")).await;
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        CHAT_STREAM,
        &[("x-mock-frame-interval-ms", "200")],
    )
    .await;
    let mut stream = res.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.starts_with(b"data: "));
    assert_eq!(mock.state.stats().started, 1);
    drop(stream);
    let state = mock.state.clone();
    assert!(
        eventually(Duration::from_secs(5), || state.stats().cancelled == 1).await,
        "upstream stream was not cancelled: {:?}",
        state.stats()
    );
    assert_eq!(mock.state.stats().completed, 0);
    let records = gw.records.clone();
    assert!(eventually(Duration::from_secs(5), || !records.records().is_empty()).await);
    assert_eq!(gw.records.records()[0].outcome, Outcome::ClientCancelled);
}

#[tokio::test]
async fn chat_streams_report_usage_without_showing_the_client_what_it_did_not_ask_for() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&mock_config(&mock.url, "", "")).await;
    let res = post_json(&format!("{}/v1/chat/completions", gw.url), CHAT_STREAM, &[]).await;
    let text = res.text().await.unwrap();
    assert!(
        !text.contains("\"usage\""),
        "client saw usage it did not ask for:\n{text}"
    );
    let data = sse_data(&text);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    for d in &data[..data.len() - 1] {
        let v: Value = serde_json::from_str(d).unwrap();
        assert_eq!(v["object"], "chat.completion.chunk");
        assert!(!v["choices"].as_array().unwrap().is_empty());
    }
    // The provider was asked for usage...
    let upstream: Value = serde_json::from_slice(&mock.state.requests()[0].body).unwrap();
    assert_eq!(upstream["stream_options"]["include_usage"], true);
    // ...and the record stage got it.
    let records = gw.records.clone();
    assert!(eventually(Duration::from_secs(5), || !records.records().is_empty()).await);
    let r = &gw.records.records()[0];
    assert_eq!(r.outcome, Outcome::Completed);
    assert!(r.streamed);
    let usage = r.usage.expect("usage captured");
    assert!(usage.input > 0 && usage.output > 0, "{usage:?}");
    assert_eq!(r.model_served.as_deref(), Some("gpt-5"));
}

#[tokio::test]
async fn a_client_that_asks_for_usage_gets_the_providers_usage_chunk() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&mock_config(&mock.url, "", "")).await;
    let body = CHAT_STREAM.replace(
        "\"stream\":true",
        "\"stream\":true,\"stream_options\":{\"include_usage\":true}",
    );
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        body.clone(),
        &[],
    )
    .await;
    let text = res.text().await.unwrap();
    let data = sse_data(&text);
    let usage_chunk: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert!(usage_chunk["choices"].as_array().unwrap().is_empty());
    assert!(usage_chunk["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        mock.state.requests()[0].body.as_ref(),
        body.as_bytes(),
        "nothing to add, nothing changed"
    );
}

#[tokio::test]
async fn usage_is_captured_from_anthropic_and_responses_streams() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&mock_config(&mock.url, "", "")).await;
    let a = post_json(&format!("{}/v1/messages", gw.url), r#"{"model":"claude-sonnet-5-5","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hello there"}]}"#, &[("x-mock-cached-tokens", "7")]).await;
    let _ = a.text().await.unwrap();
    let r = post_json(
        &format!("{}/v1/responses", gw.url),
        r#"{"model":"gpt-5","stream":true,"input":"hello there"}"#,
        &[],
    )
    .await;
    let _ = r.text().await.unwrap();
    let records = gw.records.clone();
    assert!(eventually(Duration::from_secs(5), || records.records().len() == 2).await);
    for rec in gw.records.records() {
        let u = rec
            .usage
            .unwrap_or_else(|| panic!("no usage for {:?}", rec.dialect));
        assert!(u.input > 0 && u.output > 0, "{rec:?}");
        if rec.dialect.is_anthropic() {
            assert_eq!(u.cache_read, 7);
        }
    }
}

#[tokio::test]
async fn a_provider_error_mid_stream_reaches_the_client_as_its_dialects_error_event() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let res = post_json(&format!("{}/v1/messages", gw.url), r#"{"model":"claude-sonnet-5-5","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"a b c d e"}]}"#, &[("x-mock-stream-error-after", "3")]).await;
    assert_eq!(res.status(), 200);
    let events = sse_events(&res.text().await.unwrap());
    let (event, data) = events.last().unwrap();
    assert_eq!(event.as_deref(), Some("error"));
    let v: Value = serde_json::from_str(data).unwrap();
    assert_eq!(v["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn a_stalled_stream_ends_with_an_error_event_in_the_clients_dialect() {
    let mock = start_mock(MockConfig::default()).await;
    let config = mock_config(&mock.url, "", "")
        .replace(
            "models = [\"gpt-5\", \"gpt-5-mini\"]",
            "models = [\"gpt-5\"]\ntimeouts = { idle_secs = 0.3 }",
        )
        .replace(
            "models = [\"claude-sonnet-5-5\"]",
            "models = [\"claude-sonnet-5-5\"]\ntimeouts = { idle_secs = 0.3 }",
        );
    let gw = start_inprocess(&config).await;
    for (path, body, check) in [
        ("/v1/chat/completions", CHAT_STREAM, "chat"),
        (
            "/v1/messages",
            r#"{"model":"claude-sonnet-5-5","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"a b"}]}"#,
            "anthropic",
        ),
        (
            "/v1/responses",
            r#"{"model":"gpt-5","stream":true,"input":"a b"}"#,
            "responses",
        ),
        // Translated: the Responses stream is written by the gateway from Anthropic's.
        (
            "/v1/responses",
            r#"{"model":"claude-sonnet-5-5","stream":true,"input":"a b"}"#,
            "responses",
        ),
    ] {
        let res = post_json(
            &format!("{}{path}", gw.url),
            body,
            &[("x-mock-frame-interval-ms", "2000")],
        )
        .await;
        assert_eq!(res.status(), 200);
        let events = sse_events(&res.text().await.unwrap());
        let (event, data) = events.last().unwrap();
        let v: Value = serde_json::from_str(data).unwrap();
        match check {
            "chat" => assert_eq!(v["error"]["code"], "upstream_timeout", "{v}"),
            "anthropic" => {
                assert_eq!(event.as_deref(), Some("error"));
                assert_eq!(v["error"]["type"], "timeout_error");
            }
            _ => {
                // An `error` event, then `response.failed` for the response the stream
                // began, both numbered on from the events before them.
                let data: Vec<Value> = events
                    .iter()
                    .map(|(_, d)| serde_json::from_str(d).unwrap())
                    .collect();
                let n = data.len();
                assert!(n >= 3, "{events:?}");
                assert_eq!(event.as_deref(), Some("response.failed"), "{events:?}");
                assert_eq!(events[n - 2].0.as_deref(), Some("error"), "{events:?}");
                let error = &data[n - 2];
                assert_eq!(error["type"], "error");
                assert_eq!(error["code"], "upstream_timeout");
                assert_eq!(v["type"], "response.failed");
                assert_eq!(v["response"]["status"], "failed");
                assert_eq!(v["response"]["error"]["code"], "upstream_timeout");
                assert_eq!(v["response"]["id"], data[0]["response"]["id"], "{body}");
                assert!(v["response"]["id"].is_string(), "{v}");
                let numbers: Vec<u64> = data
                    .iter()
                    .map(|d| d["sequence_number"].as_u64().unwrap())
                    .collect();
                let counted: Vec<u64> = (0..n as u64).collect();
                assert_eq!(numbers, counted, "{body}");
            }
        }
    }
    let records = gw.records.clone();
    assert!(eventually(Duration::from_secs(5), || records.records().len() == 4).await);
    assert!(gw
        .records
        .records()
        .iter()
        .all(|r| r.outcome == Outcome::UpstreamFailed));
}

#[tokio::test]
async fn shutdown_lets_in_flight_streams_finish_and_refuses_new_connections() {
    let mock = start_mock(MockConfig::default()).await;
    let mut gw = Gateway::spawn(&mock_config(&mock.url, "shutdown_grace_secs = 20", ""));
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        CHAT_STREAM,
        &[("x-mock-frame-interval-ms", "100")],
    )
    .await;
    let mut stream = res.bytes_stream();
    let mut body = stream.next().await.unwrap().unwrap().to_vec();
    gw.signal("TERM");
    let url = gw.url.clone();
    let addr = url.trim_start_matches("http://").to_owned();
    let refused = eventually(Duration::from_secs(5), || {
        std::net::TcpStream::connect(&addr).is_err()
    })
    .await;
    assert!(refused, "new connections still accepted after SIGTERM");
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    let text = String::from_utf8(body).unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "stream was cut: {text}");
    let status = gw
        .wait_exit(Duration::from_secs(10))
        .expect("exited after the stream");
    assert!(status.success());
}

#[tokio::test]
async fn after_the_grace_period_open_streams_end_with_an_error_event() {
    let mock = start_mock(MockConfig::default()).await;
    let mut gw = Gateway::spawn(&mock_config(&mock.url, "shutdown_grace_secs = 0.3", ""));
    let res = post_json(&format!("{}/v1/messages", gw.url), r#"{"model":"claude-sonnet-5-5","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"a b c d e f g"}]}"#, &[("x-mock-frame-interval-ms", "1000")]).await;
    let mut stream = res.bytes_stream();
    let mut body = stream.next().await.unwrap().unwrap().to_vec();
    gw.signal("INT");
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(body).unwrap();
    let events = sse_events(&text);
    let (event, data) = events.last().unwrap();
    assert_eq!(event.as_deref(), Some("error"), "{text}");
    assert!(data.contains("shutting down"));
    assert!(gw.wait_exit(Duration::from_secs(10)).is_some());
}

#[tokio::test]
async fn a_client_that_leaves_before_the_headers_is_recorded_as_cancelled() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = start_inprocess(&mock_config(&mock.url, "", "")).await;
    let res = client()
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("content-type", "application/json")
        .header("x-mock-delay-ms", "5000")
        .timeout(Duration::from_millis(300))
        .body(r#"{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}"#)
        .send()
        .await;
    assert!(res.is_err(), "the client gave up first");
    let records = gw.records.clone();
    assert!(
        eventually(Duration::from_secs(3), || !records.records().is_empty()).await,
        "the abandoned request was never recorded"
    );
    let r = &gw.records.records()[0];
    assert_eq!(r.outcome, Outcome::ClientCancelled);
    assert_eq!(r.provider.as_deref(), Some("mock-openai"));
}

//! Request traces through the real binary: with `[telemetry] otlp_endpoint` the gateway
//! sends a `trimgate.request` span per request, with a `trimgate.upstream` child, to an
//! OTLP/HTTP collector (a small one in the test that keeps every body), and the last of
//! them go out on a graceful stop. No key, prompt or answer text is ever in them, and the
//! log never shows them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use common::*;
use gateway_core::mock::MockConfig;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

/// In the user's message: must never be exported.
const PROMPT: &str = "otter-canary-5c1f9e, what do otters eat?";
/// The keys the mock provider demands: must never be exported.
const OPENAI_SECRET: &str = "sk-otlp-openai-secret-81d4a7";
const ANTHROPIC_SECRET: &str = "sk-ant-otlp-secret-3e7b90";

type Bodies = Arc<Mutex<Vec<Bytes>>>;

/// An OTLP/HTTP collector on an ephemeral port: `POST /v1/traces`, every body kept.
struct Collector {
    url: String,
    bodies: Bodies,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Collector {
    async fn start() -> Collector {
        let bodies = Bodies::default();
        let app = axum::Router::new()
            .route(
                "/v1/traces",
                post(|State(bodies): State<Bodies>, body: Bytes| async move {
                    bodies.lock().unwrap().push(body);
                    // An empty ExportTraceServiceResponse: everything accepted.
                    ([(http::header::CONTENT_TYPE, "application/x-protobuf")], "")
                }),
            )
            .with_state(bodies.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Collector {
            url,
            bodies,
            _stop: tx,
        }
    }

    fn bodies(&self) -> Vec<Bytes> {
        self.bodies.lock().unwrap().clone()
    }

    /// Every span received, with the `service.name` it came under.
    fn spans(&self) -> Vec<(String, Span)> {
        let mut out = Vec::new();
        for body in self.bodies() {
            let request = ExportTraceServiceRequest::decode(body).unwrap();
            for resource_spans in request.resource_spans {
                let service = resource_spans
                    .resource
                    .as_ref()
                    .and_then(|r| str_of(&r.attributes, "service.name"))
                    .unwrap_or_default()
                    .to_owned();
                for scope_spans in resource_spans.scope_spans {
                    for span in scope_spans.spans {
                        out.push((service.clone(), span));
                    }
                }
            }
        }
        out
    }
}

fn value<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn str_of<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match value(attributes, key)? {
        Value::StringValue(s) => Some(s),
        _ => None,
    }
}

fn int_of(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match value(attributes, key)? {
        Value::IntValue(n) => Some(*n),
        _ => None,
    }
}

fn bool_of(attributes: &[KeyValue], key: &str) -> Option<bool> {
    match value(attributes, key)? {
        Value::BoolValue(b) => Some(*b),
        _ => None,
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The mock demands distinctive keys, so a 200 proves they went upstream.
async fn start_strict_mock() -> Mock {
    start_mock(MockConfig {
        openai_key: Some(OPENAI_SECRET.into()),
        anthropic_key: Some(ANTHROPIC_SECRET.into()),
        ..MockConfig::default()
    })
    .await
}

const GATEWAY_KEYS: [(&str, &str); 2] = [
    ("TG_TEST_OPENAI_KEY", OPENAI_SECRET),
    ("TG_TEST_ANTHROPIC_KEY", ANTHROPIC_SECRET),
];

// The collector runs on the test's runtime while the test thread waits for the gateway
// to exit: it needs a worker of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_become_spans_with_their_facts_and_none_of_their_text() {
    let mock = start_strict_mock().await;
    let collector = Collector::start().await;
    let extra = format!(
        r#"
[telemetry]
otlp_endpoint = "{}"
service_name = "trimgate-otlp-test"

[ledger]
enabled = false

[[routes]]
match = "otter-model"
provider = "mock-openai"
model = "gpt-5-mini"
"#,
        collector.url
    );
    let mut env = GATEWAY_KEYS.to_vec();
    // At debug, the refused request below logs an event inside its span.
    env.push(("TRIMGATE_LOG", "debug"));
    let mut gw = Gateway::spawn_with_env(&mock_config(&mock.url, "", &extra), &env);
    let auth = format!("Bearer {CLIENT_PLACEHOLDER}");

    let chat = json!({"model": "otter-model", "messages": [{"role": "user", "content": PROMPT}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat.to_string(),
        &[("authorization", &auth)],
    )
    .await;
    assert_eq!(res.status(), 200);
    let chat_id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(res.text().await.unwrap().contains("otter-canary-5c1f9e"));

    // A streamed answer, with a tool output the optimizer compacts.
    let log = "test parser::tests::case ... ok\n".repeat(300) + "test result: ok. 300 passed\n";
    let streamed = json!({
        "model": "claude-sonnet-5-5", "max_tokens": 50, "stream": true,
        "messages": [
            {"role": "user", "content": PROMPT},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": log}]},
        ],
    });
    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        streamed.to_string(),
        &[("x-api-key", CLIENT_PLACEHOLDER)],
    )
    .await;
    assert_eq!(res.status(), 200);
    let saved: i64 = res.headers()["x-trimgate-saved-tokens"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(saved > 0);
    assert!(res.text().await.unwrap().contains("message_stop"));

    let unknown =
        json!({"model": "no-such-model", "messages": [{"role": "user", "content": PROMPT}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        unknown.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 404);

    // Batches go out every few seconds; a graceful stop sends what is queued.
    gw.signal("TERM");
    let status = gw.wait_exit(Duration::from_secs(20));
    assert!(status.is_some_and(|s| s.success()), "{}", gw.stderr());

    let bodies = collector.bodies();
    assert!(!bodies.is_empty(), "nothing exported; {}", gw.stderr());
    for body in &bodies {
        for secret in [
            "otter-canary-5c1f9e",
            OPENAI_SECRET,
            ANTHROPIC_SECRET,
            CLIENT_PLACEHOLDER,
            "Hello from the mock",
            "parser::tests::case",
        ] {
            assert!(!contains(body, secret), "{secret:?} was exported");
        }
    }

    let spans = collector.spans();
    assert!(spans
        .iter()
        .all(|(service, _)| service == "trimgate-otlp-test"));
    let named = |name: &str| -> Vec<&Span> {
        spans
            .iter()
            .map(|(_, s)| s)
            .filter(|s| s.name == name)
            .collect()
    };
    let requests = named("trimgate.request");
    let upstreams = named("trimgate.upstream");
    assert_eq!(requests.len(), 3, "one span per request");
    assert_eq!(
        upstreams.len(),
        2,
        "one per request that reached a provider"
    );
    let by_model = |model: &str| {
        *requests
            .iter()
            .find(|s| str_of(&s.attributes, "gen_ai.request.model") == Some(model))
            .unwrap()
    };
    let child_of = |parent: &Span| {
        *upstreams
            .iter()
            .find(|s| s.parent_span_id == parent.span_id)
            .unwrap()
    };

    let chat = by_model("otter-model");
    let a = &chat.attributes;
    assert_eq!(chat.kind, SpanKind::Server as i32);
    assert_eq!(str_of(a, "trimgate.request_id"), Some(chat_id.as_str()));
    assert_eq!(str_of(a, "url.path"), Some("/v1/chat/completions"));
    assert_eq!(str_of(a, "trimgate.dialect"), Some("openai_chat"));
    assert_eq!(str_of(a, "trimgate.provider"), Some("mock-openai"));
    assert_eq!(str_of(a, "gen_ai.response.model"), Some("gpt-5-mini"));
    assert_eq!(bool_of(a, "trimgate.streamed"), Some(false));
    assert_eq!(int_of(a, "http.response.status_code"), Some(200));
    assert_eq!(str_of(a, "trimgate.outcome"), Some("completed"));
    assert!(int_of(a, "gen_ai.usage.input_tokens").unwrap() > 0);
    assert!(int_of(a, "gen_ai.usage.output_tokens").unwrap() > 0);
    assert!(matches!(
        value(a, "trimgate.overhead_ms"),
        Some(Value::DoubleValue(ms)) if *ms > 0.0
    ));
    let upstream = child_of(chat);
    assert_eq!(upstream.trace_id, chat.trace_id);
    assert_eq!(upstream.kind, SpanKind::Client as i32);
    assert_eq!(
        str_of(&upstream.attributes, "trimgate.provider"),
        Some("mock-openai")
    );
    assert_eq!(
        int_of(&upstream.attributes, "http.response.status_code"),
        Some(200)
    );
    assert!(value(&upstream.attributes, "trimgate.upstream.first_byte_ms").is_some());
    assert!(upstream.start_time_unix_nano >= chat.start_time_unix_nano);
    assert!(upstream.end_time_unix_nano <= chat.end_time_unix_nano);

    let messages = by_model("claude-sonnet-5-5");
    let a = &messages.attributes;
    assert_eq!(str_of(a, "trimgate.dialect"), Some("anthropic_messages"));
    assert_eq!(
        str_of(a, "gen_ai.response.model"),
        Some("claude-sonnet-5-5")
    );
    assert_eq!(bool_of(a, "trimgate.streamed"), Some(true));
    assert_eq!(int_of(a, "http.response.status_code"), Some(200));
    assert!(
        int_of(a, "gen_ai.usage.output_tokens").unwrap() > 0,
        "usage from the stream"
    );
    assert_eq!(
        str_of(a, "trimgate.optimize.applied"),
        Some("tool_output=auto")
    );
    assert_eq!(int_of(a, "trimgate.optimize.saved_tokens"), Some(saved));
    assert_eq!(
        str_of(&child_of(messages).attributes, "trimgate.provider"),
        Some("mock-anthropic")
    );

    let refused = by_model("no-such-model");
    let a = &refused.attributes;
    assert_eq!(int_of(a, "http.response.status_code"), Some(404));
    assert_eq!(str_of(a, "trimgate.outcome"), Some("gateway_error"));
    assert_eq!(str_of(a, "error.type"), Some("unknown_model"));
    assert!(upstreams
        .iter()
        .all(|s| s.parent_span_id != refused.span_id));

    let stderr = gw.stderr();
    assert!(stderr.contains("traces: OTLP/HTTP to"), "{stderr}");
    assert!(stderr.contains("request refused"), "{stderr}");
    assert!(!stderr.contains("trimgate.request"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standard_endpoint_variable_turns_export_on() {
    let mock = start_strict_mock().await;
    let collector = Collector::start().await;
    let mut env = GATEWAY_KEYS.to_vec();
    env.push(("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url));
    let mut gw = Gateway::spawn_with_env(
        &mock_config(&mock.url, "", "[ledger]\nenabled = false\n"),
        &env,
    );
    let chat = json!({"model": "gpt-5", "messages": [{"role": "user", "content": PROMPT}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    gw.signal("TERM");
    assert!(gw.wait_exit(Duration::from_secs(20)).is_some());
    let spans = collector.spans();
    assert!(
        spans
            .iter()
            .any(|(service, s)| service == "trimgate" && s.name == "trimgate.request"),
        "{}",
        gw.stderr()
    );
}

/// Another tool's gRPC collector, named in the shared environment, is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_meant_for_grpc_is_ignored() {
    let mock = start_strict_mock().await;
    let collector = Collector::start().await;
    let mut env = GATEWAY_KEYS.to_vec();
    env.push(("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url));
    env.push(("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"));
    let mut gw = Gateway::spawn_with_env(
        &mock_config(&mock.url, "", "[ledger]\nenabled = false\n"),
        &env,
    );
    let chat = json!({"model": "gpt-5", "messages": [{"role": "user", "content": PROMPT}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    gw.signal("TERM");
    assert!(gw.wait_exit(Duration::from_secs(20)).is_some());
    let stderr = gw.stderr();
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_ENDPOINT ignored"),
        "{stderr}"
    );
    assert!(!stderr.contains("traces:"), "{stderr}");
    assert!(collector.bodies().is_empty());
}

//! A mock LLM provider that speaks the OpenAI Chat Completions, OpenAI Responses and
//! Anthropic Messages wire formats, for tests and benchmarks where no real provider is
//! reachable.
//!
//! Replies are deterministic (ids and timestamps aside): one call to the first declared
//! tool when the request has tools and did not just return a tool result, text otherwise.
//! `x-mock-*` request headers steer delays, injected errors and the reply text, so tests can
//! drive it through a gateway that forwards client headers; `/_mock/*` shows what arrived.

mod anthropic;
mod openai;
mod openai_chat;
mod reply;
mod responses;
mod sse;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// Enough history for any test to inspect, small enough that a long benchmark stays flat.
const MAX_CAPTURED: usize = 10_000;

/// The subscription login the mock accepts unless configured otherwise.
pub const MOCK_OAUTH_TOKEN: &str = "sk-ant-oat01-mock-login";

/// How the mock behaves when a request does not say otherwise (see the `x-mock-*` headers).
#[derive(Clone, Debug)]
pub struct MockConfig {
    /// Pause before the response headers are sent.
    pub delay: Duration,
    /// Pause between two SSE frames of a streamed response.
    pub frame_interval: Duration,
    /// The bearer key OpenAI endpoints require; `None` accepts any key that is present.
    pub openai_key: Option<String>,
    /// The `x-api-key` Anthropic endpoints require; `None` accepts any key that is present.
    pub anthropic_key: Option<String>,
    /// Serve without any key, like a local model server.
    pub keyless: bool,
    /// The subscription login Anthropic endpoints accept as `Authorization: Bearer` with an
    /// `anthropic-beta: oauth-…` value, as Claude Code sends when signed in with Claude.
    pub anthropic_oauth_token: Option<String>,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            frame_interval: Duration::ZERO,
            keyless: false,
            openai_key: Some("sk-mock-openai".to_owned()),
            anthropic_key: Some("sk-ant-mock".to_owned()),
            anthropic_oauth_token: Some(MOCK_OAUTH_TOKEN.to_owned()),
        }
    }
}

/// The mock's shared state: its config, the requests it received and its stream counters.
#[derive(Clone)]
pub struct MockState {
    inner: Arc<Inner>,
}

struct Inner {
    config: MockConfig,
    requests: Mutex<VecDeque<CapturedRequest>>,
    started: AtomicU64,
    completed: AtomicU64,
    cancelled: AtomicU64,
}

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct CapturedRequest {
    pub method: Method,
    pub path_and_query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Streamed responses: begun, sent to their last frame, and dropped before it (client gone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    pub started: u64,
    pub completed: u64,
    pub cancelled: u64,
}

impl MockState {
    pub fn new(config: MockConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                requests: Mutex::new(VecDeque::new()),
                started: AtomicU64::new(0),
                completed: AtomicU64::new(0),
                cancelled: AtomicU64::new(0),
            }),
        }
    }

    /// Every request received (the last 10,000), oldest first.
    pub fn requests(&self) -> Vec<CapturedRequest> {
        self.lock_requests().iter().cloned().collect()
    }

    /// Forgets the captured requests; the stream counters are kept.
    pub fn clear(&self) {
        self.lock_requests().clear();
    }

    pub fn stats(&self) -> StreamStats {
        StreamStats {
            started: self.inner.started.load(Ordering::Relaxed),
            completed: self.inner.completed.load(Ordering::Relaxed),
            cancelled: self.inner.cancelled.load(Ordering::Relaxed),
        }
    }

    fn config(&self) -> &MockConfig {
        &self.inner.config
    }

    // A test that panicked while holding the lock must not hide the requests from the next one.
    fn lock_requests(&self) -> MutexGuard<'_, VecDeque<CapturedRequest>> {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn capture(&self, method: &Method, uri: &Uri, headers: &HeaderMap, body: &Bytes) {
        let request = CapturedRequest {
            method: method.clone(),
            path_and_query: uri
                .path_and_query()
                .map_or_else(|| uri.path().to_owned(), |pq| pq.as_str().to_owned()),
            headers: headers.clone(),
            body: body.clone(),
        };
        let mut requests = self.lock_requests();
        if requests.len() >= MAX_CAPTURED {
            requests.pop_front();
        }
        requests.push_back(request);
    }

    fn stream_started(&self) {
        self.inner.started.fetch_add(1, Ordering::Relaxed);
    }

    fn stream_completed(&self) {
        self.inner.completed.fetch_add(1, Ordering::Relaxed);
    }

    fn stream_cancelled(&self) {
        self.inner.cancelled.fetch_add(1, Ordering::Relaxed);
    }
}

/// The mock's routes: the provider endpoints plus the `/_mock/*` helpers.
pub fn router(state: MockState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai_chat::handle))
        .route("/v1/responses", post(responses::handle))
        .route("/v1/messages", post(anthropic::handle_messages))
        .route(
            "/v1/messages/count_tokens",
            post(anthropic::handle_count_tokens),
        )
        .route("/v1/models", get(models))
        .route("/_mock/requests", get(list_requests).delete(clear_requests))
        .route("/_mock/stats", get(stats))
        .fallback(fallback)
        // Agents send whole conversations; the real providers accept tens of megabytes.
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

/// Serves the mock on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: MockState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    // As real providers do: without TCP_NODELAY a stream's second small write waits for
    // the client's delayed ACK (40 ms on Linux) on every reused connection.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

/// What the request's `x-mock-*` headers ask for, over the configured defaults.
#[derive(Default)]
pub(crate) struct Controls {
    delay: Duration,
    frame_interval: Duration,
    error_status: Option<StatusCode>,
    stream_error_after: Option<usize>,
    reply: Option<String>,
    cached_tokens: u64,
    /// The tool to call: a declared tool's name, or `none` to answer in text.
    tool: Option<String>,
    /// The call's arguments (JSON object text) instead of ones made from the schema.
    tool_arguments: Option<String>,
}

impl Controls {
    fn read(headers: &HeaderMap, config: &MockConfig) -> Self {
        Self {
            delay: header_u64(headers, "x-mock-delay-ms")
                .map_or(config.delay, Duration::from_millis),
            frame_interval: header_u64(headers, "x-mock-frame-interval-ms")
                .map_or(config.frame_interval, Duration::from_millis),
            error_status: header_u64(headers, "x-mock-error-status")
                .and_then(|n| u16::try_from(n).ok())
                .and_then(|n| StatusCode::from_u16(n).ok())
                .filter(|s| s.is_client_error() || s.is_server_error()),
            stream_error_after: header_u64(headers, "x-mock-stream-error-after")
                .and_then(|n| usize::try_from(n).ok()),
            reply: headers
                .get("x-mock-reply")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            cached_tokens: header_u64(headers, "x-mock-cached-tokens").unwrap_or(0),
            tool: header_text(headers, "x-mock-tool"),
            tool_arguments: header_text(headers, "x-mock-tool-arguments").filter(|a| {
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(a).is_ok()
            }),
        }
    }
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// Records the request and waits out the requested delay; every provider endpoint starts here.
async fn admit(
    state: &MockState,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Controls {
    state.capture(method, uri, headers, body);
    let controls = Controls::read(headers, state.config());
    if !controls.delay.is_zero() {
        tokio::time::sleep(controls.delay).await;
    }
    controls
}

async fn models(
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let controls = admit(&state, &method, &uri, &headers, &body).await;
    if headers.contains_key(anthropic::VERSION_HEADER) {
        anthropic::models(&state, &controls, &headers)
    } else {
        openai::models(&state, &controls, &headers)
    }
}

async fn fallback(
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let controls = admit(&state, &method, &uri, &headers, &body).await;
    if headers.contains_key(anthropic::VERSION_HEADER) {
        anthropic::not_found()
    } else {
        openai::invalid_url(&controls, &method, uri.path())
    }
}

async fn list_requests(State(state): State<MockState>) -> Response {
    let requests = state.requests();
    let listed: Vec<CapturedJson<'_>> = requests.iter().map(CapturedJson).collect();
    json_response(StatusCode::OK, &listed)
}

async fn clear_requests(State(state): State<MockState>) -> Response {
    state.clear();
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

async fn stats(State(state): State<MockState>) -> Response {
    #[derive(Serialize)]
    struct StatsJson {
        started: u64,
        completed: u64,
        cancelled: u64,
    }
    let s = state.stats();
    json_response(
        StatusCode::OK,
        &StatsJson {
            started: s.started,
            completed: s.completed,
            cancelled: s.cancelled,
        },
    )
}

/// A captured request as the Python tests read it.
struct CapturedJson<'a>(&'a CapturedRequest);

impl Serialize for CapturedJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let path = r
            .path_and_query
            .split_once('?')
            .map_or(r.path_and_query.as_str(), |(path, _)| path);
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("method", r.method.as_str())?;
        map.serialize_entry("path", path)?;
        map.serialize_entry("path_and_query", &r.path_and_query)?;
        map.serialize_entry("headers", &HeadersJson(&r.headers))?;
        map.serialize_entry("body", &String::from_utf8_lossy(&r.body))?;
        map.end()
    }
}

/// Header names are already lowercase in a `HeaderMap`; repeated headers are joined as HTTP allows.
struct HeadersJson<'a>(&'a HeaderMap);

impl Serialize for HeadersJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.keys_len()))?;
        for name in self.0.keys() {
            let mut values = self.0.get_all(name).iter();
            let mut joined: Cow<'_, str> = values
                .next()
                .map(|v| String::from_utf8_lossy(v.as_bytes()))
                .unwrap_or_default();
            for more in values {
                let owned = joined.to_mut();
                owned.push_str(", ");
                owned.push_str(&String::from_utf8_lossy(more.as_bytes()));
            }
            map.serialize_entry(name.as_str(), &joined)?;
        }
        map.end()
    }
}

/// Serializes as `[]`.
struct EmptyArray;

impl Serialize for EmptyArray {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_seq(Some(0))?.end()
    }
}

/// Serializes as `{}`.
struct EmptyObject;

impl Serialize for EmptyObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
}

/// Compact JSON; the wire shapes here have string keys only, so serializing cannot fail.
fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

fn json_response(status: StatusCode, value: &impl Serialize) -> Response {
    bytes_response(status, "application/json", Bytes::from(to_json(value)))
}

fn bytes_response(status: StatusCode, content_type: &'static str, body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `prefix` followed by `len` random alphanumerics, like the providers' ids.
fn random_id(prefix: &str, len: usize) -> String {
    const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut id = String::with_capacity(prefix.len() + len);
    id.push_str(prefix);
    let mut bits = 0u128;
    let mut left = 0u32;
    for _ in 0..len {
        // A v4 uuid carries 122 random bits; 6 of them pick one of 62 symbols (a slight bias
        // toward the first two is irrelevant for ids).
        if left < 6 {
            bits = uuid::Uuid::new_v4().as_u128();
            left = 120;
        }
        id.push(char::from(ALPHABET[(bits & 63) as usize % 62]));
        bits >>= 6;
        left -= 6;
    }
    id
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

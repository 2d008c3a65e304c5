//! A mock LLM provider that speaks the OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages and Google Gemini wire formats, and the three clouds that serve them (Azure
//! OpenAI, Amazon Bedrock, Google Vertex AI) with their token endpoints, for tests and
//! benchmarks where no real provider is reachable.
//!
//! Replies are deterministic (ids and timestamps aside): one call to the first declared
//! tool when the request has tools and did not just return a tool result, text otherwise.
//! `x-mock-*` request headers steer delays, injected faults and the reply text, so tests can
//! drive it through a gateway that forwards client headers; `MockConfig`'s fault settings
//! (`trimgate mock --fail-status …`) fail clients that send no such headers; `/_mock/*`
//! shows what arrived and what was served: `GET /_mock/requests` lists the last 10,000
//! requests received, each with its method, path, headers and raw body; `DELETE` forgets them.
//!
//! - `openai`, `openai_chat`, `responses`: the two OpenAI dialects and what they share.
//! - `anthropic`: Anthropic Messages and token counting.
//! - `gemini`: Google's Gemini API (`generateContent`, streamed as SSE or a JSON array,
//!   `countTokens`, the model list) under `/v1beta` and `/v1`; `gemini::request` reads its
//!   bodies as Google does.
//! - `azure`: Azure OpenAI's paths and auth in front of the OpenAI dialects.
//! - `bedrock`: Bedrock's runtime (InvokeModel for Claude, Converse), SigV4's form
//!   (`bedrock::sigv4`), AWS's event stream (`bedrock::eventstream`, an encoder of its own).
//! - `vertex`: Vertex AI's publishers, Claude (the anthropic handler) and Gemini (gemini's).
//! - `cloud_auth`: Entra's and Google's token endpoints, the tokens they issue and check.
//! - `reply`: what the answer says, whatever the dialect.
//! - `sse`: streamed bodies (SSE, or event-stream frames), and the faults that act on them.
//! - `fault`: which faults a request gets, their counts, the slow drip.
//! - `dates`: Unix seconds as the providers write dates (RFC 3339, `x-amz-date`).
//!
//! # Routes
//!
//! | route | speaks |
//! |---|---|
//! | `POST /v1/chat/completions`, `POST /v1/responses` | OpenAI (`Authorization: Bearer`) |
//! | `POST /v1/messages`, `POST /v1/messages/count_tokens` | Anthropic (`x-api-key` + `anthropic-version`) |
//! | `GET /v1/models` | Anthropic's, Gemini's or OpenAI's list, by the client's headers |
//! | `/v1beta/…`, `/v1/models/{model}:{action}` | Gemini (`x-goog-api-key` or `?key=`) |
//! | `POST /openai/deployments/{deployment}/chat/completions?api-version=…` | Azure classic: the deployment is the answer's `model` |
//! | `POST /openai/responses?api-version=…` | Azure classic Responses (model in the body) |
//! | `POST /openai/v1/chat/completions`, `POST /openai/v1/responses` | Azure v1 (model in the body = deployment) |
//! | `GET /openai/models?api-version=…`, `GET /openai/v1/models` | Azure's model list |
//! | `POST /{tenant}/oauth2/v2.0/token` | Entra client credentials → a token for Azure |
//! | `POST /model/{modelId}/invoke`, `…/invoke-with-response-stream` | Bedrock InvokeModel: Claude's Messages body (`anthropic_version: bedrock-2023-05-31`) |
//! | `POST /model/{modelId}/converse`, `…/converse-stream` | Bedrock Converse, any model id |
//! | `POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict` (`:streamRawPredict`) | Vertex Claude (`anthropic_version: vertex-2023-10-16`); also `/v1beta1` |
//! | `POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent` (`:streamGenerateContent`, `:countTokens`) | Vertex Gemini; also `/v1beta1` |
//! | `POST /token` | Google OAuth: a service account's JWT (`jwt-bearer`) or a `refresh_token` → a token for Vertex |
//!
//! Azure takes `api-key` (`MockConfig::azure_key`) or `Authorization: Bearer` with a token
//! from the Entra route for `https://cognitiveservices.azure.com/.default`; a classic path
//! without `api-version` is Azure's 404. Bedrock takes a SigV4 `Authorization`
//! (`Credential=<key id>/<date>/<region>/bedrock/aws4_request`, `x-amz-date` within five
//! minutes; its form is checked, its signature is left to the tests) or
//! `Authorization: Bearer <API key>`; every Bedrock error is `{"message"}` with
//! `x-amzn-ErrorType`. Vertex takes `Authorization: Bearer` with a token from `/token`.
//! Tokens live `MockConfig::token_lifetime_secs` and are refused once expired. The token
//! routes are captured in `/_mock/requests` but take no faults and count as no provider
//! request. A SigV4 request's listing in `/_mock/requests` adds its scope's `aws_region`.
//!
//! # Replies
//!
//! What the answer says (headers; each dialect builds it in its own shape):
//!
//! | header | effect |
//! |---|---|
//! | `x-mock-reply: <text>` | the text answer, instead of the echo of the user's words |
//! | `x-mock-tool: <name>` | call that declared tool rather than the first; `none` answers in text |
//! | `x-mock-tool-arguments: <json>` | the call's arguments (a JSON object), instead of ones built from the tool's schema |
//! | `x-mock-cached-tokens: <n>` | report `n` prompt tokens read from the cache |
//! | `x-mock-fetch-originals: 1` | after a tool result whose marker says where an elided output is kept, call the tool with `curl -s <that address>` |
//! | `x-mock-use-secrets: 1` | after a tool result holding the gateway guard's placeholders (`TRIMGATE_SECRET_<KIND>_<12 hex>`), call the tool with `printf '%s\n' '<p1>' '<p2>' … > <file>`, shell arguments shaped by its schema; a tool result without any is quoted back as usual |
//! | `x-mock-secrets-file: <path>` | the file that command writes (default `secrets.txt`, in the agent's working directory) |
//! | `x-mock-split-chars: 1` | stream a text answer one character per delta, not one word |
//!
//! The clouds answer as their dialect does (Bedrock's Converse by the same rule: the first
//! declared `toolSpec`, or the one `x-mock-tool` or `toolChoice.tool` names; reasoning
//! when `additionalModelRequestFields.thinking` asks).
//!
//! # Faults
//!
//! Per request (headers; a count `n` is of a stream's frames, SSE or Bedrock's event-stream
//! frames, and one at or past the stream's length changes nothing):
//!
//! | header | effect |
//! |---|---|
//! | `x-mock-error-status: <code>` | answer that 4xx/5xx in the endpoint's dialect (529: `overloaded_error`; Azure: OpenAI's; Bedrock: 429 `ThrottlingException`, 400 `ValidationException`, 403 `AccessDeniedException`, 404 `ResourceNotFoundException`, 408 `ModelTimeoutException`, 424 `ModelErrorException`, 500 `InternalServerException`, 503 `ServiceUnavailableException`; Vertex: 429 `RESOURCE_EXHAUSTED` on both publishers, else the publisher's) |
//! | `x-mock-aws-error-type: <Type>` | Bedrock: the type of the injected error (`ExpiredTokenException`…) and of a stream's exception frame, with that type's message |
//! | `x-mock-aws-error-message: <text>` | Bedrock: that error's or exception frame's message |
//! | `x-mock-retry-after: <secs>` | with an injected error: `retry-after`; on a 429 also the dialect's reset headers (Gemini: the body's `RetryInfo`) |
//! | `x-mock-delay-ms: <ms>` | hold the response headers back |
//! | `x-mock-frame-interval-ms: <ms>` | pause between SSE frames |
//! | `x-mock-linger-ms: <ms>` | keep a stream's body open that long after its last frame, as a provider may before it ends the response |
//! | `x-mock-stream-error-after: <n>` | `n` frames, then the dialect's in-stream error, then the end (Bedrock: an exception frame, `internalServerException` unless `x-mock-aws-error-type` says) |
//! | `x-mock-stall-after: <n>` | `n` frames, then silence with the connection open |
//! | `x-mock-reset-after: <n>` | `n` frames, then the connection is cut (no final chunk) |
//! | `x-mock-malformed-after: <n>` | after `n` frames one frame with broken JSON, then the rest (Bedrock: well framed, its payload cut) |
//! | `x-mock-truncate-after: <n>` | `n` frames, then the first half of the next, then the body ends cleanly |
//! | `x-mock-bad-crc-after: <n>` | Bedrock streams: frame `n + 1` has a wrong message CRC |
//! | `x-mock-drip-ms: <ms>` | any body in 16-byte pieces that far apart |
//! | `x-mock-drop: 1` | close the connection without any answer |
//! | `x-mock-fail-first: <n>` | with `x-mock-fault-key: <key>`: only the key's first `n` requests get the faults above (delay included) |
//!
//! Mock-wide (`MockConfig`): `fail_status` every `fail_every`-th request (counting provider
//! requests from the first, so `n`, `2n`, …), `drop_every` likewise, `retry_after` on the
//! `fail_status` answers. A header's error status wins over `fail_status`. A 429 carries a
//! one-second `retry-after` when nothing else is asked, except Gemini's, which says it in
//! its body (`RetryInfo`) as Google does.
//!
//! `GET /_mock/faults` counts what was served (`FaultStats`: answers by status, injected
//! errors by status, dropped, reset, stalled, malformed, dripped, stream errors, truncated,
//! bad CRCs);
//! `DELETE /_mock/faults` starts the counts, the request numbering and the fail-first
//! keys afresh.

mod anthropic;
mod azure;
mod bedrock;
mod cloud_auth;
mod dates;
mod fault;
mod gemini;
mod openai;
mod openai_chat;
pub mod prompt_cache;
mod reply;
mod responses;
mod sse;
#[cfg(test)]
mod tests;
mod vertex;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Method, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use dates::unix_now;
pub use fault::FaultStats;
use fault::{DropConnection, Dropped, Ledger};
/// The type of `MockConfig::fail_status`.
pub use http::StatusCode;

/// Enough history for any test to inspect, small enough that a long benchmark stays flat.
const MAX_CAPTURED: usize = 10_000;

/// The subscription login the mock accepts unless configured otherwise.
pub const MOCK_OAUTH_TOKEN: &str = "sk-ant-oat01-mock-login";

/// The Gemini API key the mock accepts unless configured otherwise.
pub const MOCK_GEMINI_KEY: &str = "AIza-mock-gemini";

/// The Azure OpenAI `api-key` the mock accepts unless configured otherwise.
pub const MOCK_AZURE_KEY: &str = "mock-azure-openai-key";

/// How long the tokens the mock's token endpoints issue live unless configured otherwise:
/// what Entra and Google say (`expires_in: 3599`).
pub const DEFAULT_TOKEN_LIFETIME_SECS: u64 = 3599;

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
    /// The key Gemini endpoints require, in `x-goog-api-key` or `?key=`; `None` accepts any
    /// key that is present.
    pub gemini_key: Option<String>,
    /// The `api-key` Azure OpenAI endpoints require; `None` accepts any key that is present.
    /// (They also take `Authorization: Bearer` with a token from the mock's Entra endpoint.)
    pub azure_key: Option<String>,
    /// How long an access token from the mock's token endpoints (Entra's, Google's) lives:
    /// its `expires_in`, after which Azure and Vertex refuse it.
    pub token_lifetime_secs: u64,
    /// Serve without any key, like a local model server.
    pub keyless: bool,
    /// The subscription login Anthropic endpoints accept as `Authorization: Bearer` with an
    /// `anthropic-beta: oauth-…` value, as Claude Code sends when signed in with Claude.
    pub anthropic_oauth_token: Option<String>,
    /// The error status every `fail_every`-th request gets (in its endpoint's dialect), for
    /// clients that send no `x-mock-*` headers.
    pub fail_status: Option<StatusCode>,
    /// With `fail_status`: fail requests number n, 2n, 3n… counting from the first request
    /// (0 and 1 fail every request).
    pub fail_every: u64,
    /// Close the connection of requests number n, 2n, 3n… without answering; 0 never does.
    /// Counted on the same request numbers as `fail_every`; a dropped request does not fail.
    pub drop_every: u64,
    /// Play the providers' prompt caches: Anthropic's `cache_control` marks write prefixes
    /// that later requests read, reported as `cache_creation_input_tokens` and
    /// `cache_read_input_tokens`; Gemini's implicit cache reads an earlier prompt's prefix
    /// as `cachedContentTokenCount` (see [`prompt_cache`]). Off, a request reads only what
    /// `x-mock-cached-tokens` says.
    pub prompt_cache: bool,
    /// Seconds for `retry-after` on `fail_status` answers (a 429 also gets the dialect's reset
    /// headers); `None` sends none, except the 1 second every 429 carries.
    pub retry_after: Option<u64>,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            frame_interval: Duration::ZERO,
            keyless: false,
            openai_key: Some("sk-mock-openai".to_owned()),
            anthropic_key: Some("sk-ant-mock".to_owned()),
            gemini_key: Some(MOCK_GEMINI_KEY.to_owned()),
            azure_key: Some(MOCK_AZURE_KEY.to_owned()),
            token_lifetime_secs: DEFAULT_TOKEN_LIFETIME_SECS,
            anthropic_oauth_token: Some(MOCK_OAUTH_TOKEN.to_owned()),
            fail_status: None,
            fail_every: 0,
            drop_every: 0,
            retry_after: None,
            prompt_cache: false,
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
    faults: Mutex<Ledger>,
    prompt_cache: prompt_cache::PromptCache,
    /// The access tokens the token endpoints issued.
    tokens: Mutex<cloud_auth::Tokens>,
}

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct CapturedRequest {
    pub method: Method,
    pub path_and_query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl CapturedRequest {
    /// The region a SigV4-signed request's credential scope names
    /// (`Credential=AKID/20261207/us-west-2/bedrock/aws4_request` → `us-west-2`).
    pub fn aws_region(&self) -> Option<String> {
        bedrock::signed_region(&self.headers)
    }
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
                faults: Mutex::new(Ledger::default()),
                prompt_cache: prompt_cache::PromptCache::default(),
                tokens: Mutex::new(cloud_auth::Tokens::default()),
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

    /// What the mock served since it started or the fault counts were last cleared.
    pub fn faults(&self) -> FaultStats {
        self.lock_faults().stats.clone()
    }

    /// Starts the fault counts, the `--*-every` request count and the per-key
    /// `x-mock-fail-first` counts afresh.
    pub fn clear_faults(&self) {
        *self.lock_faults() = Ledger::default();
    }

    fn config(&self) -> &MockConfig {
        &self.inner.config
    }

    /// What a Messages request reads from and writes to the played prompt cache, when on.
    fn prompt_cache(&self, body: &[u8]) -> Option<prompt_cache::Accounted> {
        self.inner
            .config
            .prompt_cache
            .then(|| self.inner.prompt_cache.account(body))
    }

    /// What a Gemini prompt (in blocks, see `gemini::request`) reads from the played
    /// implicit cache, when on.
    fn implicit_cache(&self, blocks: &[String]) -> Option<prompt_cache::Accounted> {
        self.inner
            .config
            .prompt_cache
            .then(|| self.inner.prompt_cache.account_implicit(blocks))
    }

    // A test that panicked while holding the lock must not hide the requests from the next one.
    fn lock_requests(&self) -> MutexGuard<'_, VecDeque<CapturedRequest>> {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_tokens(&self) -> MutexGuard<'_, cloud_auth::Tokens> {
        self.inner
            .tokens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_faults(&self) -> MutexGuard<'_, Ledger> {
        self.inner
            .faults
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn record(&self, count: impl FnOnce(&mut FaultStats)) {
        count(&mut self.lock_faults().stats);
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
        .route("/v1beta/models", get(gemini::handle_list))
        .route(
            "/v1beta/models/{model_action}",
            get(gemini::handle_get).post(gemini::handle_post),
        )
        .route(
            "/v1/models/{model_action}",
            get(gemini::handle_get).post(gemini::handle_post),
        )
        .route(
            "/v1beta/tunedModels/{model_action}",
            post(gemini::handle_post),
        )
        .route("/v1/tunedModels/{model_action}", post(gemini::handle_post))
        .route(
            "/openai/deployments/{deployment}/chat/completions",
            post(azure::chat_deployment),
        )
        .route(
            "/openai/v1/chat/completions",
            post(|s, m, u, h, b| azure::serve(azure::Api::Chat, s, m, u, h, b)),
        )
        .route(
            "/openai/v1/responses",
            post(|s, m, u, h, b| {
                azure::serve(azure::Api::Responses { classic: false }, s, m, u, h, b)
            }),
        )
        .route(
            "/openai/responses",
            post(|s, m, u, h, b| {
                azure::serve(azure::Api::Responses { classic: true }, s, m, u, h, b)
            }),
        )
        .route(
            "/openai/v1/models",
            get(|s, m, u, h, b| azure::serve(azure::Api::Models { classic: false }, s, m, u, h, b)),
        )
        .route(
            "/openai/models",
            get(|s, m, u, h, b| azure::serve(azure::Api::Models { classic: true }, s, m, u, h, b)),
        )
        .route("/{tenant}/oauth2/v2.0/token", post(cloud_auth::entra_token))
        .route("/token", post(cloud_auth::google_token))
        .route("/model/{model_id}/{action}", post(bedrock::handle))
        .route(vertex::ROUTE, post(vertex::handle))
        .route(vertex::ROUTE_V1BETA1, post(vertex::handle))
        .route("/_mock/requests", get(list_requests).delete(clear_requests))
        .route("/_mock/stats", get(stats))
        .route("/_mock/faults", get(faults).delete(clear_faults))
        .fallback(fallback)
        // Agents send whole conversations; the real providers accept tens of megabytes.
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

/// How long `serve` lets open connections finish after `shutdown`: a stalled stream would
/// otherwise hold the mock open forever.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Serves the mock on `listener` until `shutdown` resolves, then gives open connections
/// `SHUTDOWN_GRACE` to finish.
///
/// Connections are served by hyper directly rather than `axum::serve` so that a dropped
/// request (`x-mock-drop`, `--drop-every`) can fail in hyper's hands: hyper then closes the
/// connection without writing a status line, as a provider's crashed backend does.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: MockState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state);
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of file descriptors and the like: back off rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // As real providers do: without TCP_NODELAY a stream's second small write waits for
        // the client's delayed ACK (40 ms on Linux) on every reused connection.
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = TowerToHyperService::new(tower::service_fn(
            move |request: http::Request<hyper::body::Incoming>| {
                let answer = tower::ServiceExt::oneshot(app.clone(), request);
                async move {
                    let response = match answer.await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    };
                    if response.extensions().get::<DropConnection>().is_some() {
                        Err(Dropped)
                    } else {
                        Ok(response)
                    }
                }
            },
        ));
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A dropped request or a client gone mid-stream ends the connection in error:
            // both are the point here, not failures of the mock.
            let _ = connection.await;
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
    Ok(())
}

/// What the request's `x-mock-*` headers ask for, over the configured defaults, once the
/// mock-wide faults and `x-mock-fail-first` have had their say.
#[derive(Default)]
pub(crate) struct Controls {
    delay: Duration,
    frame_interval: Duration,
    /// How long a stream's body stays open after its last frame.
    linger: Duration,
    error_status: Option<StatusCode>,
    /// Seconds for `retry-after` (and the dialect's reset headers on a 429) on an injected error.
    retry_after: Option<u64>,
    stream_error_after: Option<usize>,
    stall_after: Option<usize>,
    reset_after: Option<usize>,
    malformed_after: Option<usize>,
    /// Frames of a stream before one cut in half, where the body ends.
    truncate_after: Option<usize>,
    /// Event-stream frames before one with a wrong message CRC (Bedrock's streams).
    bad_crc_after: Option<usize>,
    /// The AWS error type of an injected Bedrock error or in-stream exception.
    aws_error_type: Option<String>,
    /// The message of an injected Bedrock error or in-stream exception.
    aws_error_message: Option<String>,
    /// Send the body in `fault::DRIP_PIECE`-byte pieces this far apart.
    drip: Option<Duration>,
    /// Close the connection without answering.
    drop: bool,
    reply: Option<String>,
    cached_tokens: u64,
    /// The tool to call: a declared tool's name, or `none` to answer in text.
    tool: Option<String>,
    /// The call's arguments (JSON object text) instead of ones made from the schema.
    tool_arguments: Option<String>,
    /// After a tool result whose marker says an elided output is kept, call the tool with
    /// `curl -s <its address>` (`x-mock-fetch-originals`).
    fetch_originals: bool,
    /// After a tool result holding the guard's placeholders, call the tool with a command
    /// that writes them to `secrets_file` (`x-mock-use-secrets`).
    use_secrets: bool,
    /// Where that command writes them (`x-mock-secrets-file`).
    secrets_file: Option<String>,
    /// How a streamed text answer is cut (`x-mock-split-chars`).
    split: reply::Split,
}

impl Controls {
    fn read(headers: &HeaderMap, config: &MockConfig) -> Self {
        let count = |name: &str| header_u64(headers, name).and_then(|n| usize::try_from(n).ok());
        Self {
            delay: header_u64(headers, "x-mock-delay-ms")
                .map_or(config.delay, Duration::from_millis),
            frame_interval: header_u64(headers, "x-mock-frame-interval-ms")
                .map_or(config.frame_interval, Duration::from_millis),
            linger: header_u64(headers, "x-mock-linger-ms")
                .map_or(Duration::ZERO, Duration::from_millis),
            error_status: header_u64(headers, fault::ERROR_STATUS).and_then(error_status),
            retry_after: header_u64(headers, fault::RETRY_AFTER),
            stream_error_after: count(fault::STREAM_ERROR_AFTER),
            stall_after: count(fault::STALL_AFTER),
            reset_after: count(fault::RESET_AFTER),
            malformed_after: count(fault::MALFORMED_AFTER),
            truncate_after: count(fault::TRUNCATE_AFTER),
            bad_crc_after: count(fault::BAD_CRC_AFTER),
            aws_error_type: header_text(headers, fault::AWS_ERROR_TYPE)
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty()),
            aws_error_message: header_text(headers, fault::AWS_ERROR_MESSAGE)
                .filter(|m| !m.is_empty()),
            drip: header_u64(headers, fault::DRIP_MS)
                .filter(|&ms| ms > 0)
                .map(Duration::from_millis),
            drop: header_text(headers, fault::DROP).is_some_and(|v| is_true(&v)),
            reply: headers
                .get("x-mock-reply")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            cached_tokens: header_u64(headers, "x-mock-cached-tokens").unwrap_or(0),
            tool: header_text(headers, "x-mock-tool"),
            tool_arguments: header_text(headers, "x-mock-tool-arguments").filter(|a| {
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(a).is_ok()
            }),
            fetch_originals: header_text(headers, "x-mock-fetch-originals")
                .is_some_and(|v| is_true(&v)),
            use_secrets: header_text(headers, "x-mock-use-secrets").is_some_and(|v| is_true(&v)),
            secrets_file: header_text(headers, "x-mock-secrets-file").filter(|p| !p.is_empty()),
            split: if header_text(headers, "x-mock-split-chars").is_some_and(|v| is_true(&v)) {
                reply::Split::Chars
            } else {
                reply::Split::Words
            },
        }
    }

    /// Drops the faults the headers asked for (`x-mock-delay-ms` among them), keeping the
    /// frame interval and what shapes the reply.
    fn without_faults(self, config: &MockConfig) -> Self {
        Self {
            delay: config.delay,
            error_status: None,
            retry_after: None,
            stream_error_after: None,
            stall_after: None,
            reset_after: None,
            malformed_after: None,
            truncate_after: None,
            bad_crc_after: None,
            drip: None,
            drop: false,
            ..self
        }
    }
}

/// An error status a fault may ask for: a client or server error.
fn error_status(code: u64) -> Option<StatusCode> {
    u16::try_from(code)
        .ok()
        .and_then(|n| StatusCode::from_u16(n).ok())
        .filter(|s| s.is_client_error() || s.is_server_error())
}

fn is_true(value: &str) -> bool {
    matches!(value.trim(), "1" | "true" | "yes")
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// Every provider endpoint's answer, in stages: record the request; decide its faults (the
/// headers, then `x-mock-fail-first`, then the mock-wide `--drop-every`/`--fail-every`); drop
/// the connection or wait out the delay; let `respond` build the dialect's answer; drip it;
/// count what was served.
async fn answer(
    state: &MockState,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
    respond: impl FnOnce(&Controls) -> Response,
) -> Response {
    state.capture(method, uri, headers, body);
    let controls = decide(state, headers);
    if controls.drop {
        state.record(|stats| stats.dropped += 1);
        return fault::dropped();
    }
    if !controls.delay.is_zero() {
        tokio::time::sleep(controls.delay).await;
    }
    let mut response = respond(&controls);
    if let Some(interval) = controls.drip {
        response = fault::drip(response, interval);
    }
    let status = response.status();
    let injected = controls.error_status == Some(status);
    state.record(|stats| {
        *stats.statuses.entry(status.as_u16()).or_default() += 1;
        if injected {
            *stats.injected.entry(status.as_u16()).or_default() += 1;
        }
        if controls.drip.is_some() {
            stats.dripped += 1;
        }
    });
    response
}

/// The request's faults: its headers' unless `x-mock-fail-first` says its key has had its
/// share, then the mock-wide ones when the request's ordinal comes up. A header's error
/// status wins over `--fail-status`.
fn decide(state: &MockState, headers: &HeaderMap) -> Controls {
    let config = state.config();
    let mut controls = Controls::read(headers, config);
    let fail_first = header_u64(headers, fault::FAIL_FIRST);
    let key = header_text(headers, fault::FAULT_KEY).unwrap_or_default();
    let (ordinal, past_fail_first) = {
        let mut ledger = state.lock_faults();
        let past = fail_first.is_some_and(|n| ledger.count_key(&key) > n);
        (ledger.next_ordinal(), past)
    };
    if past_fail_first {
        controls = controls.without_faults(config);
    }
    let every = |n: u64| n > 0 && ordinal % n == 0;
    if every(config.drop_every) {
        controls.drop = true;
    } else if let Some(status) = config
        .fail_status
        .filter(|_| every(config.fail_every.max(1)))
    {
        if controls.error_status.is_none() {
            controls.error_status = Some(status);
            controls.retry_after = controls.retry_after.or(config.retry_after);
        }
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
    answer(&state, &method, &uri, &headers, &body, |controls| {
        if headers.contains_key(anthropic::VERSION_HEADER) {
            anthropic::models(&state, controls, &headers)
        } else if gemini::speaks_gemini(&headers, &uri) {
            gemini::list_models(&state, controls, &uri, &headers)
        } else {
            openai::models(&state, controls, &headers)
        }
    })
    .await
}

async fn fallback(
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        unknown_route(controls, &method, &uri, &headers)
    })
    .await
}

/// The 404 for a path the mock does not serve, in the dialect the client speaks.
/// A provider's fixed response headers (its rate-limit figures, its server's own), each
/// set once.
fn insert_static(headers: &mut HeaderMap, pairs: &[(&'static str, &'static str)]) {
    for (name, value) in pairs {
        headers.insert(
            http::HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
}

fn unknown_route(controls: &Controls, method: &Method, uri: &Uri, headers: &HeaderMap) -> Response {
    if headers.contains_key(anthropic::VERSION_HEADER) {
        anthropic::not_found(controls)
    } else if uri.path().starts_with("/openai/") {
        azure::not_found(controls)
    } else if gemini::claims(uri, headers) {
        gemini::not_found(controls)
    } else {
        openai::invalid_url(controls, method, uri.path())
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

async fn faults(State(state): State<MockState>) -> Response {
    json_response(StatusCode::OK, &state.faults())
}

async fn clear_faults(State(state): State<MockState>) -> Response {
    state.clear_faults();
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
        let region = r.aws_region();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("method", r.method.as_str())?;
        map.serialize_entry("path", path)?;
        map.serialize_entry("path_and_query", &r.path_and_query)?;
        map.serialize_entry("headers", &HeadersJson(&r.headers))?;
        map.serialize_entry("body", &String::from_utf8_lossy(&r.body))?;
        if let Some(region) = &region {
            map.serialize_entry("aws_region", region)?;
        }
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
#[derive(Clone, Copy)]
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

/// A query parameter, percent-decoded (`+` is a space).
fn query_param(uri: &Uri, name: &str) -> Option<String> {
    form_pairs(uri.query()?)
        .find(|(key, _)| key == name)
        .map(|(_, value)| value)
}

/// The `name=value` pairs of a query string or an `application/x-www-form-urlencoded`
/// body, percent-decoded.
fn form_pairs(text: &str) -> impl Iterator<Item = (String, String)> + '_ {
    text.split('&').filter(|pair| !pair.is_empty()).map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(key), percent_decode(value))
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| {
            bytes
                .get(at)
                .and_then(|b| char::from(*b).to_digit(16))
                .and_then(|d| u8::try_from(d).ok())
        };
        match bytes[i] {
            b'%' => match (hex(i + 1), hex(i + 2)) {
                (Some(high), Some(low)) => {
                    out.push(high * 16 + low);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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

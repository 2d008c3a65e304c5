//! The HTTP surface: the router built from shared state, and `serve`, which takes a bound
//! listener and a shutdown future from the caller (so tests bind `127.0.0.1:0` and stop
//! the server cleanly).
//!
//! Shutdown: when `shutdown` resolves, the listener stops accepting, idle connections
//! close, and in-flight requests and streams get the grace period to finish. After it,
//! open streams end with an error event in their client's dialect and the server returns.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use futures_util::future::Either;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::Instrument;

use crate::config::{Config, GatewayKey};
use crate::dialect::{Dialect, Endpoint};
use crate::error::GatewayError;
use crate::headers::{ANTHROPIC_VERSION, HTTP2_KEEPALIVE_INTERVAL, HTTP2_KEEPALIVE_TIMEOUT};
use crate::headers::{X_API_KEY, X_TRIMGATE_KEY};
use crate::idle::{self, Activity, Tracked};
use crate::ingress::Ingress;
use crate::local_key::LocalKey;
use crate::models;
use crate::optimize::Optimizer;
use crate::proxy;
use crate::record::Recorder;
use crate::secrets::SecretStore;
use crate::telemetry;
use crate::upstream::Upstream;
use crate::workers::Workers;
use arc_swap::ArcSwap;
use metrics_exporter_prometheus::PrometheusHandle;
use sha2::{Digest, Sha256};

/// What a config makes: swapped whole on reload, so a request sees one consistent set.
pub struct Runtime {
    pub config: Arc<Config>,
    pub upstream: Upstream,
    pub optimizer: Arc<Optimizer>,
}

/// What a request's headers say about the local key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LocalKeyCheck {
    NotRequired,
    Presented,
    /// `x-trimgate-key` holds something else.
    Wrong,
    Missing,
}

/// Everything a request handler can reach.
pub struct AppState {
    runtime: ArcSwap<Runtime>,
    /// Every request passes unoptimized while set (the window's and the tray's pause).
    pub paused: AtomicBool,
    pub started: std::time::Instant,
    /// The last requests, for the window's feed.
    pub recent: Arc<crate::feed::Recent>,
    /// The admin API, when the launch turned it on.
    admin: std::sync::OnceLock<crate::admin::Admin>,
    /// The address the listener got (the config may say port 0).
    bound: std::sync::OnceLock<SocketAddr>,
    pub cache: Arc<crate::cache::ResponseCache>,
    secrets: Arc<dyn SecretStore>,
    pub recorder: Arc<dyn Recorder>,
    /// Renders `/metrics`, when the process installed a Prometheus recorder.
    metrics: std::sync::OnceLock<PrometheusHandle>,
    abort: watch::Sender<bool>,
    draining: AtomicBool,
    /// Set at launch when `[server] local_key` is on.
    local_key: std::sync::OnceLock<LocalKey>,
}

impl AppState {
    pub fn new(
        config: Config,
        secrets: Arc<dyn SecretStore>,
        recorder: Arc<dyn Recorder>,
    ) -> Result<Arc<AppState>, std::io::Error> {
        let secrets: Arc<dyn SecretStore> = Arc::new(crate::secrets::Remembered::new(secrets));
        let upstream = Upstream::new(&config, secrets.clone())?;
        let optimizer = Arc::new(Optimizer::new(config.optimize.clone()));
        let cache = Arc::new(crate::cache::ResponseCache::new(config.cache.clone()));
        let recent = Arc::new(crate::feed::Recent::default());
        let recorder = Arc::new(crate::feed::RecentRecorder {
            recent: recent.clone(),
            inner: recorder,
        });
        Ok(Arc::new(AppState {
            recent,
            admin: std::sync::OnceLock::new(),
            bound: std::sync::OnceLock::new(),
            runtime: ArcSwap::from_pointee(Runtime {
                config: Arc::new(config),
                upstream,
                optimizer,
            }),
            paused: AtomicBool::new(false),
            started: std::time::Instant::now(),
            cache,
            secrets,
            metrics: std::sync::OnceLock::new(),
            recorder,
            abort: watch::Sender::new(false),
            draining: AtomicBool::new(false),
            local_key: std::sync::OnceLock::new(),
        }))
    }

    /// Serves `/metrics` from `handle`.
    pub fn set_metrics(&self, handle: PrometheusHandle) {
        let _ = self.metrics.set(handle);
    }

    pub fn config(&self) -> Arc<Config> {
        self.runtime.load().config.clone()
    }

    /// The config, its clients and its optimizer, as one.
    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime.load_full()
    }

    /// Puts a new config in force: requests that started keep the old one to their end.
    /// The response cache, the ledger, the listen address and traces keep what they
    /// started with.
    pub fn reload(&self, mut config: Config) -> Result<(), std::io::Error> {
        // The listener is bound: a new address in the file waits for the next start. So does
        // the local key, which is read or made at launch; until then it stays as it was.
        config.server.listen = self.config().server.listen;
        config.server.local_key = self.config().server.local_key;
        let upstream = Upstream::new(&config, self.secrets.clone())?;
        let optimizer = Arc::new(
            self.runtime
                .load()
                .optimizer
                .with_modes(config.optimize.clone()),
        );
        self.runtime.store(Arc::new(Runtime {
            config: Arc::new(config),
            upstream,
            optimizer,
        }));
        Ok(())
    }

    /// Turns the admin API on (once).
    pub fn enable_admin(&self, admin: crate::admin::Admin) {
        let _ = self.admin.set(admin);
    }

    /// Where the gateway listens: the bound address once serving, else the configured one.
    pub fn listening(&self) -> SocketAddr {
        self.bound
            .get()
            .copied()
            .unwrap_or_else(|| self.config().server.listen)
    }

    pub fn admin(&self) -> Option<&crate::admin::Admin> {
        self.admin.get()
    }

    pub fn secrets(&self) -> &Arc<dyn SecretStore> {
        &self.secrets
    }

    /// Who a request is from, checked before anything else is read: the gateway key it
    /// presents (`Authorization: Bearer` or `x-api-key`) when the config lists any, and
    /// the local key when `[server] local_key` is on. With both, either lets a request in;
    /// one let in by the local key alone has no gateway key's overrides. `Ok(None)` when
    /// no gateway key applies.
    pub fn gateway_key(&self, headers: &HeaderMap) -> Result<Option<GatewayKey>, GatewayError> {
        let config = self.config();
        let local = self.local_key_presented(&config, headers);
        if config.gateway_keys.is_empty() {
            return match local {
                LocalKeyCheck::NotRequired | LocalKeyCheck::Presented => Ok(None),
                LocalKeyCheck::Wrong => Err(GatewayError::LocalKeyInvalid),
                LocalKeyCheck::Missing => Err(GatewayError::LocalKeyMissing),
            };
        }
        match self.matching_gateway_key(&config, headers) {
            Err(_) if local == LocalKeyCheck::Presented => Ok(None),
            found => found.map(Some),
        }
    }

    /// Refuses a request to `/v1/models` or `/metrics` that presents neither a gateway
    /// key nor the local key when either is required: what is served, and the traffic's
    /// counts, are not for anyone who can reach the port.
    pub fn check_client(&self, headers: &HeaderMap) -> Result<(), GatewayError> {
        self.gateway_key(headers).map(|_| ())
    }

    /// Takes the local key off a request that was let in, before anything reads its
    /// credentials for the provider or the cache.
    pub fn strip_local_key(&self, headers: &mut HeaderMap) {
        if let Some(key) = self.local_key.get() {
            key.strip(headers);
        }
    }

    /// The local key in force, when `[server] local_key` is on.
    pub fn local_key(&self) -> Option<&LocalKey> {
        self.local_key.get()
    }

    /// Puts the local key in force (once, at launch).
    pub fn set_local_key(&self, key: LocalKey) {
        let _ = self.local_key.set(key);
    }

    fn local_key_presented(&self, config: &Config, headers: &HeaderMap) -> LocalKeyCheck {
        if !config.server.local_key {
            return LocalKeyCheck::NotRequired;
        }
        // On in the config but never loaded (a gateway built without `launch`): nobody is let in.
        let Some(key) = self.local_key.get() else {
            tracing::error!("local_key is on but no local key was loaded: refusing requests");
            return LocalKeyCheck::Missing;
        };
        if key.presented_in(headers) {
            LocalKeyCheck::Presented
        } else if headers.contains_key(X_TRIMGATE_KEY) {
            LocalKeyCheck::Wrong
        } else {
            LocalKeyCheck::Missing
        }
    }

    fn matching_gateway_key(
        &self,
        config: &Config,
        headers: &HeaderMap,
    ) -> Result<GatewayKey, GatewayError> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .or_else(|| headers.get(X_API_KEY).and_then(|v| v.to_str().ok()))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or(GatewayError::GatewayKeyMissing)?;
        // Digests are compared, so the time taken does not depend on how much of a key matched.
        let digest = Sha256::digest(presented.as_bytes());
        for key in &config.gateway_keys {
            let Ok(Some(secret)) = self.secrets.get(&key.key) else {
                tracing::warn!(gateway_key = %key.name, source = %key.key, "gateway key cannot be read");
                continue;
            };
            if Sha256::digest(secret.expose().as_bytes()) == digest {
                return Ok(key.clone());
            }
        }
        Err(GatewayError::GatewayKeyInvalid)
    }

    /// Turns true when open streams must end (the shutdown grace period is over).
    pub fn abort_streams(&self) -> watch::Receiver<bool> {
        self.abort.subscribe()
    }
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response {
    let mut response = Response::new(Body::from(serde_json::to_vec(value).unwrap_or_default()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn list_models(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(e) = state.check_client(&headers) {
        return e.into_response(Dialect::guess(&headers, "/v1/models"));
    }
    let config = state.config();
    let body = if headers.contains_key(ANTHROPIC_VERSION) {
        models::anthropic_list(&config.routes)
    } else {
        models::openai_list(&config.routes)
    };
    json_response(StatusCode::OK, &body)
}

async fn metrics(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(e) = state.check_client(&headers) {
        return e.into_response(Dialect::OpenAiChat);
    }
    match state.metrics.get() {
        Some(handle) => {
            let mut response = Response::new(Body::from(handle.render()));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            response
        }
        None => json_response(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": "metrics are not enabled in this process"}),
        ),
    }
}

async fn healthz() -> Response {
    json_response(StatusCode::OK, &serde_json::json!({"status": "ok"}))
}

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let config = state.config();
    let providers: Vec<&str> = config.providers.iter().map(|p| p.name.as_str()).collect();
    if state.draining.load(Ordering::Relaxed) {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &serde_json::json!({"status": "draining", "providers": providers}),
        )
    } else if providers.is_empty() {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &serde_json::json!({"status": "no providers configured", "providers": providers}),
        )
    } else {
        json_response(
            StatusCode::OK,
            &serde_json::json!({"status": "ready", "providers": providers}),
        )
    }
}

async fn not_found(request: Request) -> Response {
    let dialect = Dialect::guess(request.headers(), request.uri().path());
    GatewayError::NoSuchEndpoint {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
    }
    .into_response(dialect)
}

async fn method_not_allowed(request: Request) -> Response {
    let dialect = Dialect::guess(request.headers(), request.uri().path());
    let mut response = GatewayError::NoSuchEndpoint {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
    }
    .into_response(dialect);
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
}

/// A proxied endpoint: the handler runs inside the request's span.
fn endpoint(e: Endpoint) -> axum::routing::MethodRouter<Arc<AppState>> {
    post(move |state: State<Arc<AppState>>, request: Request| {
        let span = telemetry::request_span(e, request.uri().path());
        // Boxed where it is made: the request's future is kilobytes (every stage's state),
        // and axum moves the handler's future more than once before polling it.
        Box::pin(proxy::handle(state, e, request)).instrument(span)
    })
}

/// The gateway's routes. The `/v1` prefix is optional, since some clients are pointed at
/// the bare base URL.
pub fn router(state: Arc<AppState>) -> Router {
    let mut router = Router::new();
    for prefix in ["/v1", ""] {
        router = router
            .route(
                &format!("{prefix}/chat/completions"),
                endpoint(Endpoint::ChatCompletions),
            )
            .route(
                &format!("{prefix}/responses"),
                endpoint(Endpoint::Responses),
            )
            .route(&format!("{prefix}/messages"), endpoint(Endpoint::Messages))
            .route(
                &format!("{prefix}/messages/count_tokens"),
                endpoint(Endpoint::CountTokens),
            )
            .route(&format!("{prefix}/models"), get(list_models));
    }
    router
        .merge(crate::admin::router(state.clone()))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/readyz", get(readyz))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Serves until `shutdown` resolves, then drains as described in the module docs.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let grace = state.config().server.shutdown_grace;
    if let Ok(addr) = listener.local_addr() {
        let _ = state.bound.set(addr);
    }
    let limits = state.config().server.clone();
    let ingress = Ingress::new(state.listening(), &limits);
    // Held by each connection; at the cap, new connections wait in the kernel's queue.
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    // Held by each request until its answer starts; past the cap a request gets a 503.
    let in_flight = Arc::new(tokio::sync::Semaphore::new(limits.max_in_flight));
    let app = router(state.clone());
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // One write per response: header and body go out in one buffer rather than a
    // writev of several slices, which is cheaper for the small bodies most calls have.
    // The parser's ceilings sit above the configured header limits, so a request past
    // those gets the gateway's 431 in its own shape; past the ceilings, hyper's bare 431.
    // Up to 100 headers hyper parses into a buffer on the stack.
    let header_ceiling = limits.max_header_bytes.saturating_mul(2);
    let mut http1 = builder.http1();
    http1
        .writev(false)
        .timer(TokioTimer::new())
        .max_headers((limits.max_header_count + limits.max_header_count / 2).max(100));
    if header_ceiling > HYPER_DEFAULT_MAX_BUF {
        http1.max_buf_size(header_ceiling);
    }
    // Pings find peers that went away without closing; one that does not answer is dropped.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(HTTP2_KEEPALIVE_INTERVAL))
        .keep_alive_timeout(HTTP2_KEEPALIVE_TIMEOUT)
        .max_header_list_size(u32::try_from(header_ceiling).unwrap_or(u32::MAX))
        .max_concurrent_streams(
            u32::try_from(limits.max_streams_per_connection).unwrap_or(u32::MAX),
        );
    let idle_timeout = limits.idle_timeout;
    let workers = Workers::start(state.config().server.workers)?;
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = stream;
        // Small SSE frames must not wait for Nagle.
        let _ = stream.set_nodelay(true);
        // Handed to a serving thread, which registers it with its own reactor.
        let Ok(stream) = stream.into_std() else {
            continue;
        };
        let app = app.clone();
        let builder = builder.clone();
        let in_flight = in_flight.clone();
        let watcher = graceful.watcher();
        workers.spawn_connection(move || async move {
            let _connection = permit;
            let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
                return;
            };
            let activity = Activity::new();
            let requests = activity.clone();
            let service = TowerToHyperService::new(tower::service_fn(
                move |mut request: http::Request<hyper::body::Incoming>| {
                    let open = requests.begin();
                    // Refused at the door: the router never sees it, nothing goes upstream.
                    if let Some(refused) = ingress.admit(&request) {
                        let refused = refused.map(|body| Tracked::new(body, open));
                        return Either::Left(std::future::ready(Ok(refused)));
                    }
                    let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                        let dialect = Dialect::guess(request.headers(), request.uri().path());
                        let busy = GatewayError::Overloaded.into_response(dialect);
                        let busy = busy.map(|body| Tracked::new(body, open));
                        return Either::Left(std::future::ready(Ok(busy)));
                    };
                    // The peer's address, for the admin API's loopback check.
                    request
                        .extensions_mut()
                        .insert(axum::extract::ConnectInfo(peer));
                    let answer = tower::ServiceExt::oneshot(app.clone(), request);
                    Either::Right(async move {
                        let answer = answer.await;
                        drop(permit);
                        answer.map(|response| response.map(|body| Tracked::new(body, open)))
                    })
                },
            ));
            let connection = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .into_owned();
            // A client that resets the connection is not the gateway's error. One that
            // holds the connection with nothing open on it is let go.
            tokio::select! {
                _ = watcher.watch(connection) => {}
                () = idle::idle_for(&activity, idle_timeout) => {}
            }
        });
    }
    drop(listener);
    state.draining.store(true, Ordering::Relaxed);
    tracing::info!(
        grace_secs = grace.as_secs_f64(),
        "shutting down: draining in-flight requests"
    );
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    tokio::select! {
        () = &mut drained => {}
        () = tokio::time::sleep(grace) => {
            tracing::warn!("grace period over: ending open streams");
            state.abort.send_replace(true);
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut drained).await;
        }
    }
    // The threads end after the drain: the open connections have closed, or been cut.
    tokio::task::spawn_blocking(move || workers.stop())
        .await
        .ok();
    Ok(())
}

/// hyper's HTTP/1 read buffer when not set: 8 KiB and 4 KiB for each of 100 headers.
const HYPER_DEFAULT_MAX_BUF: usize = 8192 + 4096 * 100;

/// Binds `addr`, with a message that says what to do when the port is taken.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
            format!(
                "{addr} is already in use: another Trimgate may be running, or pick a port with --listen 127.0.0.1:PORT"
            )
        } else {
            format!("cannot listen on {addr}: {e}")
        };
        std::io::Error::new(e.kind(), hint)
    })
}

//! The gateway's own endpoints: the proxied `/v1/…` routes (each handled by [`proxy`]
//! inside its request span), `/v1/models`, `/metrics`, `/healthz` and `/readyz`, and the
//! answers to unknown paths and methods. The launch merges them with the admin API.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use http::{header, HeaderValue, StatusCode};
use tracing::Instrument;

use crate::dialect::{Dialect, Endpoint};
use crate::error::GatewayError;
use crate::headers::ANTHROPIC_VERSION;
use crate::models;
use crate::proxy;
use crate::state::AppState;
use crate::telemetry;

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response {
    let mut response = Response::new(Body::from(serde_json::to_vec(value).unwrap_or_default()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn list_models(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let headers = request.headers();
    if let Err(e) = state
        .check_client(headers, crate::ingress::peer(&request))
        .await
    {
        return e.into_response(Dialect::guess(headers, "/v1/models"));
    }
    let config = state.config();
    // Google's SDKs list `/v1/models` too, with their key header.
    let body = if headers.contains_key(ANTHROPIC_VERSION) {
        models::anthropic_list(&config.routes)
    } else if headers.contains_key(&crate::headers::X_GOOG_API_KEY) {
        models::gemini_list(&config.routes)
    } else {
        models::openai_list(&config.routes)
    };
    json_response(StatusCode::OK, &body)
}

async fn metrics(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let headers = request.headers();
    if let Err(e) = state
        .check_client(headers, crate::ingress::peer(&request))
        .await
    {
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

/// What `trimgate status` shows: each provider in rotation, cooling down or probing. Guarded
/// like `/metrics`: which providers are failing is for the gateway's users only.
async fn status(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let headers = request.headers();
    if let Err(e) = state
        .check_client(headers, crate::ingress::peer(&request))
        .await
    {
        return e.into_response(Dialect::OpenAiChat);
    }
    let config = state.config();
    let providers = state.health.report_for(
        config.providers.iter().map(|p| p.name.as_str()),
        std::time::Instant::now(),
    );
    let status = if state.draining.load(Ordering::Relaxed) {
        "draining"
    } else {
        "ok"
    };
    json_response(
        StatusCode::OK,
        &serde_json::json!({
            "status": status,
            "version": env!("CARGO_PKG_VERSION"),
            "providers": providers,
        }),
    )
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

/// Any path no route has, in the client's dialect.
pub async fn not_found(request: Request) -> Response {
    let dialect = Dialect::guess(request.headers(), request.uri().path());
    GatewayError::NoSuchEndpoint {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
    }
    .into_response(dialect)
}

/// A known path asked with a method it does not take, in the client's dialect.
pub async fn method_not_allowed(request: Request) -> Response {
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
    post(move |State(state): State<Arc<AppState>>, request: Request| call(state, e, request))
}

/// The proxied endpoint a `POST` to `path` asks for, with or without the `/v1` prefix:
/// the routes [`router`] gives [`endpoint`], which [`App`] also takes directly.
fn proxied(path: &str) -> Option<Endpoint> {
    let below = path.strip_prefix("/v1").unwrap_or(path);
    PROXIED.iter().find(|(p, _)| *p == below).map(|(_, e)| *e)
}

/// The whole HTTP surface as one service: a `POST` to a proxied path goes straight to its
/// handler; the router would find the same one, at the cost of its matching, its
/// extractors and a future of its own around the handler's (several thousand
/// instructions a request, BENCHMARKS.md). Everything else goes through the router.
#[derive(Clone)]
pub struct App {
    state: Arc<AppState>,
    router: Router,
}

impl App {
    pub fn new(state: Arc<AppState>, router: Router) -> App {
        App { state, router }
    }
}

type Handled = tracing::instrument::Instrumented<
    std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send>>,
>;

impl tower::Service<http::Request<hyper::body::Incoming>> for App {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures_util::future::Either<
        futures_util::future::Map<Handled, fn(Response) -> Result<Response, Self::Error>>,
        axum::routing::future::RouteFuture<Self::Error>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        // Both the handler and the router are always ready.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<hyper::body::Incoming>) -> Self::Future {
        use futures_util::future::{Either, FutureExt};
        let proxied = (request.method() == http::Method::POST)
            .then(|| proxied(request.uri().path()))
            .flatten();
        match proxied {
            Some(e) => Either::Left(
                call(self.state.clone(), e, request.map(Body::new)).map(Ok as fn(_) -> _),
            ),
            None => Either::Right(self.router.call(request)),
        }
    }
}

/// A proxied request, handled inside its span.
fn call(state: Arc<AppState>, e: Endpoint, request: Request) -> Handled {
    let span = telemetry::request_span(e, request.uri().path());
    // Boxed where it is made: the request's future is kilobytes (every stage's state),
    // and it is moved more than once before it is polled.
    let handled: std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send>> =
        Box::pin(proxy::handle(State(state), e, request));
    handled.instrument(span)
}

/// A Gemini method call, `POST …/models/{model}:{method}`: the model and the method are
/// read from the path (the model may name a provider, `openai/gpt-5.5`), a key the client
/// put in the query (`?key=`) is moved to `x-goog-api-key` so it is checked as every key
/// is and never forwarded, and the request goes on as any proxied one.
async fn gemini_call(
    state: State<Arc<AppState>>,
    axum::extract::Path(rest): axum::extract::Path<String>,
    mut request: Request,
) -> Response {
    let sse = request
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "alt=sse"));
    let called = rest.rsplit_once(':').and_then(|(model, method)| {
        let model = model.strip_prefix("models/").unwrap_or(model);
        let (endpoint, stream) = match method {
            "generateContent" => (Endpoint::GenerateContent, false),
            "streamGenerateContent" => (Endpoint::GenerateContent, true),
            "countTokens" => (Endpoint::GeminiCountTokens, false),
            _ => return None,
        };
        Some((endpoint, proxy::PathModel::new(model, stream, sse)))
    });
    let Some((endpoint, called)) = called else {
        return not_found(request).await;
    };
    crate::auth::key_from_query(&mut request);
    request.extensions_mut().insert(called);
    let span = telemetry::request_span(endpoint, request.uri().path());
    Box::pin(proxy::handle(state, endpoint, request))
        .instrument(span)
        .await
}

/// `GET /v1beta/models`, in Gemini's shape.
async fn gemini_models(State(state): State<Arc<AppState>>, request: Request) -> Response {
    if let Err(e) = state
        .check_client(request.headers(), crate::ingress::peer(&request))
        .await
    {
        return e.into_response(Dialect::Gemini);
    }
    json_response(StatusCode::OK, &models::gemini_list(&state.config().routes))
}

/// `GET /v1beta/models/{model}`, in Gemini's shape; a model nothing serves is a 404.
async fn gemini_model(
    State(state): State<Arc<AppState>>,
    axum::extract::Path(name): axum::extract::Path<String>,
    mut request: Request,
) -> Response {
    crate::auth::key_from_query(&mut request);
    if let Err(e) = state
        .check_client(request.headers(), crate::ingress::peer(&request))
        .await
    {
        return e.into_response(Dialect::Gemini);
    }
    let config = state.config();
    match models::gemini_get(&config.routes, &name) {
        Some(model) => json_response(StatusCode::OK, &model),
        None => GatewayError::UnknownModel {
            model: name,
            served: config.routes.served_summary(),
        }
        .into_response(Dialect::Gemini),
    }
}

/// The proxied paths below the optional `/v1` (see [`proxied`]).
const PROXIED: [(&str, Endpoint); 4] = [
    ("/chat/completions", Endpoint::ChatCompletions),
    ("/responses", Endpoint::Responses),
    ("/messages", Endpoint::Messages),
    ("/messages/count_tokens", Endpoint::CountTokens),
];

/// The gateway's own routes, before the state is given. The `/v1` prefix is optional,
/// since some clients are pointed at the bare base URL. Unknown paths and methods are
/// answered by [`not_found`] and [`method_not_allowed`], set by the launch once every
/// route is in.
pub fn router() -> Router<Arc<AppState>> {
    let mut router = Router::new();
    for prefix in ["/v1", ""] {
        for (path, e) in PROXIED {
            router = router.route(&format!("{prefix}{path}"), endpoint(e));
        }
        router = router.route(&format!("{prefix}/models"), get(list_models));
    }
    // Gemini's API, by version (Gemini CLI and the `google-genai` SDK use `v1beta`), and
    // bare for clients pointed at a base URL with the version in it.
    for prefix in ["/v1", ""] {
        router = router.route(
            &format!("{prefix}/models/{{*call}}"),
            post(gemini_call).get(gemini_model),
        );
    }
    router = router.route("/v1beta/models", get(gemini_models)).route(
        "/v1beta/models/{*call}",
        post(gemini_call).get(gemini_model),
    );
    router
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/readyz", get(readyz))
        .route("/status", get(status))
        .route("/originals/{id}", get(original))
}

/// A tool output as the client sent it, before a pass elided part of it: the id is the one
/// the marker in what the provider got names, and a first line says what follows (and keeps
/// the passes off it when the agent sends it on). Guarded like `/v1/models`; an id that is
/// unknown, or whose block has been evicted, is a 404 (never another block).
async fn original(
    State(state): State<Arc<AppState>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    request: Request,
) -> Response {
    if let Err(e) = state
        .check_client(request.headers(), crate::ingress::peer(&request))
        .await
    {
        return e.into_response(Dialect::OpenAiChat);
    }
    let id = id.to_ascii_lowercase();
    let kept = if crate::optimize::originals::is_id(&id) {
        state.kept_original(&id).await
    } else {
        None
    };
    let Some(kept) = kept else {
        return json_response(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": {"type": "not_found", "message": format!(
                "no original is kept under {id:?}: the id is not one a marker gave, or its time ran out ([optimize] originals_days)"
            )}}),
        );
    };
    let body = crate::optimize::originals::fetched_header(&id) + &kept;
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_direct_lane_takes_exactly_the_proxied_routes() {
        for prefix in ["/v1", ""] {
            for (path, e) in PROXIED {
                assert_eq!(proxied(&format!("{prefix}{path}")), Some(e));
            }
        }
        for other in [
            "/v1/models",
            "/v1chat/completions",
            "/v1/chat/completions/",
            "/v2/chat/completions",
            "/v1/v1/chat/completions",
            "/v1/messages/count_tokens/x",
            "/v1beta/models/gemini:generateContent",
            "/admin/api/status",
            "",
        ] {
            assert_eq!(proxied(other), None, "{other}");
        }
    }
}

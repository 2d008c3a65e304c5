//! The admin API the window uses (`/admin/api/…`, JSON; see `docs/admin-api.md`), and
//! the window's files at `/ui`.
//!
//! Guarded by [`guard`]. On loopback (peer and `Host`; a rebound DNS name is not
//! loopback): a browser's `Origin` is the gateway's own page or the desktop window, and
//! the request carries the per-launch token (or the admin key). Beyond loopback: an admin
//! key is configured, the request came through a proxy in `[admin] trusted_proxies` that
//! says the client's connection was `https`, its `Origin` is the page's own, and it
//! carries the admin key. Every change is written to the admin actions log. Keys go in
//! only: they are stored in the keychain and shown as a mask.

mod audit;
mod diagnostics;
pub mod edit;
mod guard_view;
mod health;
mod history;
mod import;
mod keys;
mod modes;
mod providers;
mod requests;
mod route_check;
mod routes;
mod settings;
pub mod ui;

use audit::audit;
use diagnostics::diagnostics;
use guard_view::{get_guard, put_guard};
use health::get_health;
use history::{savings, sessions};
use import::{apply_import, preview_import};
use keys::{create_key, list_keys, revoke_key};
use modes::{get_modes, pause, preview, put_modes};
use providers::{
    create_provider, delete_key, delete_provider, list_providers, set_key, test_provider,
    update_provider,
};
use requests::{get_bodies, original, put_bodies, request_detail, requests, search_requests};
use route_check::check_routes;
use routes::{get_routes, patch_routes, put_routes};
use settings::{get_settings, put_settings};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post, put, MethodRouter};
use axum::Router;
use http::{header, HeaderValue, Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::config::{ClientAuth, Config, ConfigProblem, Provider};
use crate::ingress::{host_is_loopback, is_loopback, origin_allowed, WINDOW_ORIGINS};
use crate::ledger::stats::{self, By};
use crate::ledger::AnyPool;
use crate::optimize::{compact, tokens, PlanPatch};
use crate::secrets::{mask, KeySource};
use crate::state::AppState;
use edit::{EditError, ModelModesEdit, ModesEdit, ProviderEdit, RouteEdit};

/// What the admin API needs beyond the gateway itself.
pub struct Admin {
    /// Made at each launch; the window gets it from the shell or the printed address.
    pub token: String,
    /// The config file edits go to (made on the first edit when it does not exist).
    pub config_path: Option<PathBuf>,
    pub ledger: Option<AnyPool>,
    /// One edit at a time: each reads, changes and writes the whole file.
    edits: tokio::sync::Mutex<()>,
}

impl Admin {
    pub fn new(config_path: Option<PathBuf>, ledger: Option<AnyPool>) -> Admin {
        Admin {
            token: new_token(),
            config_path,
            ledger,
            edits: tokio::sync::Mutex::new(()),
        }
    }
}

/// `<platform data dir>/trimgate/admin-token`, readable by the user only (0600).
pub fn write_token_file(token: &str) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write;
    let dirs = directories::ProjectDirs::from("dev", "trimgate", "trimgate")
        .ok_or_else(|| std::io::Error::other("no home directory"))?;
    std::fs::create_dir_all(dirs.data_dir())?;
    let path = dirs.data_dir().join(ADMIN_TOKEN_FILE);
    // Made afresh, so a file another user left with wider permissions is not reused.
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path)?;
    file.write_all(token.as_bytes())?;
    Ok(path)
}

/// The admin token's file name in the data dir, when stdout is not a terminal.
pub const ADMIN_TOKEN_FILE: &str = "admin-token";

/// 64 hex characters from two random v4 UUIDs (244 random bits).
fn new_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// An admin API error, as JSON.
#[derive(Debug)]
pub enum AdminError {
    Unauthorized,
    Forbidden(&'static str),
    NotFound(String),
    BadRequest(String),
    TooLarge(String),
    Invalid(Vec<ConfigProblem>),
    Unavailable(String),
    Internal(String),
}

impl AdminError {
    fn into_response(self) -> Response {
        let (status, kind, message, problems) = match self {
            AdminError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this needs the admin token: open the window from the address `trimgate serve` prints, or from the desktop app".to_owned(),
                None,
            ),
            AdminError::Forbidden(why) => (StatusCode::FORBIDDEN, "forbidden", why.to_owned(), None),
            AdminError::NotFound(m) => (StatusCode::NOT_FOUND, "not_found", m, None),
            AdminError::BadRequest(m) => (StatusCode::BAD_REQUEST, "invalid_request", m, None),
            AdminError::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, "too_large", m, None),
            AdminError::Invalid(problems) => (
                StatusCode::BAD_REQUEST,
                "invalid_config",
                "the change would make the config invalid; nothing was saved".to_owned(),
                Some(problems),
            ),
            AdminError::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable", m, None),
            AdminError::Internal(m) => (StatusCode::INTERNAL_SERVER_ERROR, "internal", m, None),
        };
        let mut body = json!({"error": {"type": kind, "message": message}});
        if let Some(problems) = problems {
            body["problems"] = problems
                .iter()
                .map(|p| json!({"path": p.path, "message": p.message}))
                .collect();
        }
        reply(status, &body)
    }
}

impl From<EditError> for AdminError {
    fn from(e: EditError) -> Self {
        match e {
            EditError::Invalid(problems) => AdminError::Invalid(problems),
            EditError::NotFound(m) => AdminError::NotFound(m),
            EditError::Io(m) => AdminError::Internal(format!("cannot write the config: {m}")),
        }
    }
}

type Answer = Result<Response, AdminError>;

fn reply(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(serde_json::to_vec(body).unwrap_or_default()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn ok(body: Value) -> Answer {
    Ok(reply(StatusCode::OK, &body))
}

fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, AdminError> {
    serde_json::from_slice(body).map_err(|e| AdminError::BadRequest(e.to_string()))
}

/// What the admin API's handlers reach: the gateway's shared state (through `Deref`) and
/// the admin API's own part, when the launch turned it on.
#[derive(Clone)]
struct AdminState {
    gateway: Arc<AppState>,
    admin: Option<Arc<Admin>>,
}

impl std::ops::Deref for AdminState {
    type Target = AppState;

    fn deref(&self) -> &AppState {
        &self.gateway
    }
}

impl AdminState {
    fn admin(&self) -> Result<&Admin, AdminError> {
        self.admin
            .as_deref()
            .ok_or(AdminError::Unavailable("the admin API is off".into()))
    }
}

/// The routes under `/admin/api`, behind [`guard`]. With `admin` off (`None`) each one
/// says so; the window's files ([`ui::router`]) are merged by the launch only when it is on.
pub fn router<S: Clone + Send + Sync + 'static>(
    gateway: Arc<AppState>,
    admin: Option<Arc<Admin>>,
) -> Router<S> {
    let state = AdminState { gateway, admin };
    // Each route also takes OPTIONS, so the desktop window's preflight reaches the guard
    // (which answers it) rather than the router's 405.
    let preflight = |m: MethodRouter<AdminState>| m.options(|| async { StatusCode::NO_CONTENT });
    let api = Router::new()
        .route("/status", preflight(get(status)))
        .route(
            "/providers",
            preflight(get(list_providers).post(create_provider)),
        )
        .route(
            "/providers/{name}",
            preflight(put(update_provider).delete(delete_provider)),
        )
        .route(
            "/providers/{name}/key",
            preflight(put(set_key).delete(delete_key)),
        )
        .route("/providers/{name}/test", preflight(post(test_provider)))
        .route("/health", preflight(get(get_health)))
        .route("/keys", preflight(get(list_keys).post(create_key)))
        .route("/keys/{name}", preflight(axum::routing::delete(revoke_key)))
        .route(
            "/routes",
            preflight(get(get_routes).put(put_routes).patch(patch_routes)),
        )
        .route("/routes/check", preflight(post(check_routes)))
        .route("/modes", preflight(get(get_modes).put(put_modes)))
        .route("/pause", preflight(post(pause)))
        .route("/preview", preflight(post(preview)))
        .route("/savings", preflight(get(savings)))
        .route("/sessions", preflight(get(sessions)))
        .route("/requests", preflight(get(requests)))
        .route("/requests/search", preflight(get(search_requests)))
        .route("/requests/{id}", preflight(get(request_detail)))
        .route("/originals/{id}", preflight(get(original)))
        .route("/bodies", preflight(get(get_bodies).put(put_bodies)))
        .route("/reload", preflight(post(reload)))
        .route("/settings", preflight(get(get_settings).put(put_settings)))
        .route("/guard", preflight(get(get_guard).put(put_guard)))
        .route("/audit", preflight(get(audit)))
        .route("/diagnostics", preflight(get(diagnostics)))
        .route("/import/preview", preflight(post(preview_import)))
        .route("/import/apply", preflight(post(apply_import)))
        .fallback(|| async {
            AdminError::NotFound("no such admin endpoint".into()).into_response()
        })
        .layer(middleware::from_fn_with_state(state.clone(), guard));
    Router::new().nest("/admin/api", api).with_state(state)
}

/// POSTs that change nothing and that the window sends as the user types: the actions
/// log would fill with them and hide the changes it is kept for.
const READ_ONLY_POSTS: &[&str] = &["/admin/api/routes/check"];

fn with_cors(mut response: Response, origin: Option<&str>) -> Response {
    if let Some(origin) = origin.filter(|o| WINDOW_ORIGINS.contains(o)) {
        if let Ok(v) = HeaderValue::from_str(origin) {
            let h = response.headers_mut();
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
            h.insert(header::VARY, HeaderValue::from_static("origin"));
        }
    }
    response
}

/// Who an admin request came from, as the audit log names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    /// On loopback, with the launch's token (the window, or the desktop shell).
    Window,
    /// With the configured admin key.
    AdminKey,
}

impl Who {
    fn as_str(self) -> &'static str {
        match self {
            Who::Window => "local window",
            Who::AdminKey => "admin key",
        }
    }
}

/// On loopback (peer and `Host`): own `Origin`, then the launch's token or the admin key.
/// Beyond loopback: an admin key configured, the request come through a trusted proxy
/// that says the client's connection was `https`, a same-site `Origin`, then the admin
/// key. Each change that gets through is written to the admin actions log.
async fn guard(State(state): State<AdminState>, request: Request, next: Next) -> Response {
    let Some(admin) = state.admin.as_deref() else {
        return AdminError::Unavailable("the admin API is off".into()).into_response();
    };
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let config = state.config();
    let on_loopback = peer.is_some_and(is_loopback) && host_is_loopback(&host);
    let mut addr = peer.map(|ip| ip.to_string());
    if on_loopback {
        if let Some(o) = &origin {
            if !origin_allowed(o, &host) {
                return AdminError::Forbidden("requests from other sites are refused")
                    .into_response();
            }
        }
    } else {
        if config.admin.key.is_none() {
            return AdminError::Forbidden(
                "the admin API answers on loopback only; set [admin] key to reach it from elsewhere",
            )
            .into_response();
        }
        let through_trusted = peer.is_some_and(|ip| config.admin.trusts(ip));
        let https = headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
        if !(through_trusted && https) {
            return AdminError::Forbidden(
                "beyond loopback the admin API answers only over TLS: through a proxy listed in [admin] trusted_proxies that sets X-Forwarded-Proto: https",
            )
            .into_response();
        }
        if let Some(o) = &origin {
            if o.strip_prefix("https://") != Some(host.as_str()) {
                return AdminError::Forbidden("requests from other sites are refused")
                    .into_response();
            }
        }
        // The client as the trusted proxy saw it: the address it appended last.
        if let Some(client) = headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
        {
            addr = Some(client.trim().to_owned());
        }
    }
    if request.method() == Method::OPTIONS {
        // A preflight from the desktop window (its origin differs from the gateway's).
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NO_CONTENT;
        let h = response.headers_mut();
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("authorization, content-type"),
        );
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        return with_cors(response, origin.as_deref());
    }
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    // Digests are compared, so the time taken does not depend on how much matched.
    let presented = Sha256::digest(presented.as_bytes());
    let admin_key = config
        .admin
        .key
        .as_ref()
        .and_then(|source| state.secrets().get(source).ok().flatten());
    let who = if admin_key
        .as_ref()
        .is_some_and(|k| Sha256::digest(k.expose().as_bytes()) == presented)
    {
        Who::AdminKey
    } else if on_loopback && presented == Sha256::digest(admin.token.as_bytes()) {
        Who::Window
    } else {
        return with_cors(AdminError::Unauthorized.into_response(), origin.as_deref());
    };
    let method = request.method().clone();
    // Nested under /admin/api, which the router took off the path.
    let path = format!("/admin/api{}", request.uri().path());
    let response = next.run(request).await;
    if matches!(
        method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) && !READ_ONLY_POSTS.contains(&path.as_str())
    {
        if let Some(pool) = admin.ledger.clone() {
            let action = crate::ledger::audit::Action {
                at_ms: crate::clock::now_ms(),
                who: who.as_str().to_owned(),
                method: method.to_string(),
                path,
                status: response.status().as_u16(),
                addr,
            };
            if let Err(e) = crate::ledger::audit::record(&pool, &action).await {
                tracing::error!(error = %e, action = %action.path, "an admin action cannot be written to the log");
            }
        }
    }
    with_cors(response, origin.as_deref())
}

fn answer(result: Answer) -> Response {
    result.unwrap_or_else(AdminError::into_response)
}

async fn status(State(state): State<AdminState>) -> Response {
    answer((|| {
        let admin = state.admin()?;
        let config = state.config();
        ok(json!({
            "version": env!("CARGO_PKG_VERSION"),
            "listen": state.listening().to_string(),
            "uptime_secs": state.started.elapsed().as_secs(),
            "config_path": admin.config_path.as_ref().map(|p| p.display().to_string()),
            "providers": config.providers.len(),
            "ledger": config.ledger_url.as_deref().filter(|_| admin.ledger.is_some()).map(crate::ledger::redact),
            "cache": {"entries": state.cache.len(), "bytes": state.cache.bytes()},
            "optimizer_paused": state.paused.load(Ordering::Relaxed),
            "requests": state.recent.total(),
            // The window's setup lines carry it; this API answers only the token's holder.
            "local_key": state.local_key().map(|k| k.expose()),
        }))
    })())
}

async fn reload(State(state): State<AdminState>) -> Response {
    answer(
        async {
            let admin = state.admin()?;
            let path = admin.config_path.clone().ok_or_else(|| {
                AdminError::Unavailable("the gateway runs without a config file".into())
            })?;
            let config = Config::load(&path).map_err(|e| AdminError::from(EditError::from(e)))?;
            state
                .reload(config)
                .map_err(|e| AdminError::Internal(e.to_string()))?;
            ok(json!({ "ok": true }))
        }
        .await,
    )
}

/// The config file edits go to: the one in use, else the default one (made by the first edit).
fn config_file(admin: &Admin) -> Result<PathBuf, AdminError> {
    admin
        .config_path
        .clone()
        .or_else(crate::config::default_config_path)
        .ok_or_else(|| AdminError::Unavailable("there is no config file to change".into()))
}

/// Reads the config file, lets `change` edit it, validates, writes, and puts it in force.
async fn edit_config(
    state: &AdminState,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<(), AdminError>,
) -> Result<Arc<Config>, AdminError> {
    let admin = state.admin()?;
    let path = config_file(admin)?;
    let _one_at_a_time = admin.edits.lock().await;
    let running = state.config();
    let mut doc = edit::read(&path, &running)?;
    change(&mut doc)?;
    let config = edit::write(&path, &doc)?;
    state
        .reload(config)
        .map_err(|e| AdminError::Internal(e.to_string()))?;
    Ok(state.config())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_and_fresh() {
        assert_eq!(new_token().len(), 64);
        assert_ne!(new_token(), new_token());
    }
}

//! The admin API the window uses (`/admin/api/…`, JSON; see `docs/admin-api.md`), and
//! the window's files at `/ui`.
//!
//! Guarded four ways, checked in this order by [`guard`]: the peer is on loopback; `Host`
//! names loopback (a rebound DNS name does not); a browser's `Origin` is the gateway's own
//! page or the desktop window; and the request carries the per-launch token. Keys go in
//! only: they are stored in the keychain and shown as a mask.

pub mod edit;
pub mod ui;

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
        .route(
            "/routes",
            preflight(get(get_routes).put(put_routes).patch(patch_routes)),
        )
        .route("/modes", preflight(get(get_modes).put(put_modes)))
        .route("/pause", preflight(post(pause)))
        .route("/preview", preflight(post(preview)))
        .route("/savings", preflight(get(savings)))
        .route("/requests", preflight(get(requests)))
        .route("/reload", preflight(post(reload)))
        .route("/settings", preflight(get(get_settings).put(put_settings)))
        .fallback(|| async {
            AdminError::NotFound("no such admin endpoint".into()).into_response()
        })
        .layer(middleware::from_fn_with_state(state.clone(), guard));
    Router::new().nest("/admin/api", api).with_state(state)
}

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

/// Loopback peer, loopback `Host`, own `Origin`, then the token.
async fn guard(State(state): State<AdminState>, request: Request, next: Next) -> Response {
    let Some(admin) = state.admin.as_deref() else {
        return AdminError::Unavailable("the admin API is off".into()).into_response();
    };
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    if !peer.is_some_and(|p| is_loopback(p.ip())) {
        return AdminError::Forbidden("the admin API answers on loopback only").into_response();
    }
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    if !host_is_loopback(&host) {
        return AdminError::Forbidden(
            "the Host header must name this machine's loopback (localhost, 127.0.0.1, [::1])",
        )
        .into_response();
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(o) = &origin {
        if !origin_allowed(o, &host) {
            return AdminError::Forbidden("requests from other sites are refused").into_response();
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
    if Sha256::digest(presented.as_bytes()) != Sha256::digest(admin.token.as_bytes()) {
        return with_cors(AdminError::Unauthorized.into_response(), origin.as_deref());
    }
    with_cors(next.run(request).await, origin.as_deref())
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

fn provider_json(state: &AppState, p: &Provider) -> Value {
    let (source, name) = match &p.key {
        KeySource::Keychain(n) => ("keychain", Some(n.clone())),
        KeySource::Env(var) => ("env", Some(var.clone())),
        KeySource::File(path) => ("file", Some(path.display().to_string())),
        KeySource::None => ("none", None),
    };
    let stored = match &p.key {
        KeySource::None => None,
        key => state.secrets().get(key).ok().flatten(),
    };
    json!({
        "name": p.name,
        "kind": p.kind.as_str(),
        // A password in the URL stays in the config file; the window gets it masked.
        "base_url": crate::secrets::redact_url(&p.base_url),
        "dialects": p.dialects.iter().map(|d| d.as_str()).collect::<Vec<_>>(),
        "models": p.models,
        "client_auth": p.client_auth.as_str(),
        // The client's own login goes to this provider (a Claude subscription, say).
        "uses_client_login": match p.client_auth {
            ClientAuth::Forward => true,
            ClientAuth::WhenNoKey => stored.is_none(),
            ClientAuth::Never => false,
        },
        "key": {
            "source": source,
            "name": name,
            "set": stored.is_some(),
            "mask": stored.map(|s| mask(s.expose())),
        },
    })
}

async fn list_providers(State(state): State<AdminState>) -> Response {
    let config = state.config();
    let all: Vec<Value> = config
        .providers
        .iter()
        .map(|p| provider_json(&state, p))
        .collect();
    answer(ok(json!({ "providers": all })))
}

fn find<'c>(config: &'c Config, name: &str) -> Result<&'c Arc<Provider>, AdminError> {
    config
        .providers
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| AdminError::NotFound(format!("no provider named {name:?}")))
}

/// Reads the config file, lets `change` edit it, validates, writes, and puts it in force.
async fn edit_config(
    state: &AdminState,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<(), AdminError>,
) -> Result<Arc<Config>, AdminError> {
    let admin = state.admin()?;
    let path = admin
        .config_path
        .clone()
        .or_else(crate::config::default_config_path)
        .ok_or_else(|| AdminError::Unavailable("there is no config file to change".into()))?;
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

fn valid_name(name: &str) -> Result<(), AdminError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(AdminError::BadRequest(
            "a provider's name is 1 to 64 letters, digits, - or _".into(),
        ))
    }
}

async fn create_provider(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let edit: ProviderEdit = parse(&body)?;
            let name = edit
                .name
                .clone()
                .ok_or_else(|| AdminError::BadRequest("`name` is required".into()))?;
            valid_name(&name)?;
            if edit.kind.is_none() {
                return Err(AdminError::BadRequest("`kind` is required".into()));
            }
            if state.config().providers.iter().any(|p| p.name == name) {
                return Err(AdminError::BadRequest(format!(
                    "a provider named {name:?} exists"
                )));
            }
            let key = edit.key.clone().filter(|k| !k.trim().is_empty());
            let config = edit_config(&state, |doc| {
                edit::upsert_provider(doc, &name, &edit);
                if key.is_some() || edit.kind.as_deref() != Some("openai_compatible") {
                    edit::use_keychain(doc, &name);
                }
                Ok(())
            })
            .await?;
            if let Some(key) = key {
                store_key(&state, &name, &key)?;
            }
            let p = find(&config, &name)?;
            Ok(reply(StatusCode::CREATED, &provider_json(&state, p)))
        }
        .await,
    )
}

async fn update_provider(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    answer(
        async {
            let mut edit: ProviderEdit = parse(&body)?;
            if edit.name.is_some() || edit.key.is_some() {
                return Err(AdminError::BadRequest(
                    "a provider's name cannot change, and its key is set with PUT …/key".into(),
                ));
            }
            let before = find(&state.config(), &name)?.clone();
            // The window shows a URL's password masked; the masked URL sent back unchanged
            // keeps the password rather than writing the mask into the file.
            if let Some(Some(url)) = &edit.base_url {
                if url.trim() != before.base_url && url.trim() == crate::secrets::redact_url(&before.base_url) {
                    edit.base_url = Some(Some(before.base_url.clone()));
                }
            }
            let mut key_removed = false;
            let config = edit_config(&state, |doc| {
                edit::upsert_provider(doc, &name, &edit);
                // A key goes only to the host it was entered for: pointed elsewhere, the
                // provider's key is unbound (and its keychain entry forgotten) before the
                // change is in force, until it is entered again.
                let after = Config::from_toml(&doc.to_string(), "edit").ok();
                let moved = after
                    .as_ref()
                    .and_then(|c| c.providers.iter().find(|p| p.name == name))
                    .is_some_and(|p| !same_hosts(&before, p));
                if moved && before.key != KeySource::None {
                    let entry = KeySource::Keychain(name.clone());
                    if let Err(e) = state.secrets().delete(&entry) {
                        if before.key == entry {
                            return Err(AdminError::Unavailable(format!(
                                "the key stored for the old host cannot be removed, so the host is not changed: {e}"
                            )));
                        }
                        tracing::warn!(provider = %name, error = %e, "cannot clear the provider's keychain entry");
                    }
                    edit::use_keychain(doc, &name);
                    key_removed = true;
                }
                Ok(())
            })
            .await?;
            let mut body = provider_json(&state, find(&config, &name)?);
            if key_removed {
                body["key_removed"] = json!(true);
                body["message"] = json!(
                    "the provider's address moved to another host: its key was removed; enter it again to use it there"
                );
            }
            ok(body)
        }
        .await,
    )
}

/// Whether two versions of a provider send to the same hosts (scheme, host and port).
fn same_hosts(a: &Provider, b: &Provider) -> bool {
    fn origin(url: &str) -> Option<String> {
        let uri = url.parse::<http::Uri>().ok()?;
        Some(format!(
            "{}://{}",
            uri.scheme_str()?,
            uri.authority()?.as_str().to_ascii_lowercase()
        ))
    }
    origin(&a.base_url) == origin(&b.base_url)
        && a.anthropic_base_url.as_deref().map(origin)
            == b.anthropic_base_url.as_deref().map(origin)
}

async fn delete_provider(State(state): State<AdminState>, Path(name): Path<String>) -> Response {
    answer(
        async {
            let key = find(&state.config(), &name)?.key.clone();
            edit_config(&state, |doc| Ok(edit::remove_provider(doc, &name)?)).await?;
            if let KeySource::Keychain(_) = key {
                // The file no longer names it; a keychain that refuses is only logged.
                if let Err(e) = state.secrets().delete(&key) {
                    tracing::warn!(provider = %name, error = %e, "cannot delete the provider's keychain entry");
                }
            }
            Ok(reply(StatusCode::NO_CONTENT, &Value::Null))
        }
        .await,
    )
}

fn store_key(state: &AppState, name: &str, key: &str) -> Result<String, AdminError> {
    if key.chars().any(char::is_control) || key.trim().is_empty() {
        return Err(AdminError::BadRequest(
            "a key is one line of printable characters".into(),
        ));
    }
    state
        .secrets()
        .set(&KeySource::Keychain(name.to_owned()), key)
        .map_err(|e| AdminError::Unavailable(e.to_string()))?;
    Ok(mask(key.trim()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyIn {
    key: String,
}

async fn set_key(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    answer(
        async {
            let KeyIn { key } = parse(&body)?;
            let provider = find(&state.config(), &name)?.clone();
            let shown = store_key(&state, &name, &key)?;
            if provider.key != KeySource::Keychain(name.clone()) {
                edit_config(&state, |doc| {
                    edit::use_keychain(doc, &name);
                    Ok(())
                })
                .await?;
            }
            ok(json!({ "mask": shown }))
        }
        .await,
    )
}

async fn delete_key(State(state): State<AdminState>, Path(name): Path<String>) -> Response {
    answer((|| {
        let provider = find(&state.config(), &name)?.clone();
        let KeySource::Keychain(_) = provider.key else {
            return Err(AdminError::BadRequest(format!(
                "{name}'s key comes from {}, not the keychain",
                provider.key
            )));
        };
        state
            .secrets()
            .delete(&provider.key)
            .map_err(|e| AdminError::Unavailable(e.to_string()))?;
        Ok(reply(StatusCode::NO_CONTENT, &Value::Null))
    })())
}

async fn test_provider(State(state): State<AdminState>, Path(name): Path<String>) -> Response {
    answer(
        async {
            let runtime = state.runtime();
            let provider = find(&runtime.config, &name)?;
            let started = Instant::now();
            let result = runtime.upstream.probe(provider).await;
            let latency_ms = started.elapsed().as_secs_f64() * 1e3;
            ok(match result {
                Ok(status) => json!({
                    "ok": status.is_success(),
                    "status": status.as_u16(),
                    "latency_ms": latency_ms,
                    "message": match status.as_u16() {
                        200..=299 => "the provider answered with its model list".to_owned(),
                        401 | 403 => "the provider refused the key".to_owned(),
                        s => format!("the provider answered {s}"),
                    },
                }),
                Err(e) => json!({
                    "ok": false, "status": null, "latency_ms": latency_ms, "message": e.to_string(),
                }),
            })
        }
        .await,
    )
}

async fn get_routes(State(state): State<AdminState>) -> Response {
    answer((|| {
        let admin = state.admin()?;
        let routes = match &admin.config_path {
            Some(path) => edit::routes(&edit::read(path, &state.config())?),
            None => Vec::new(),
        };
        ok(json!({ "routes": routes }))
    })())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoutesIn {
    routes: Vec<RouteEdit>,
}

async fn put_routes(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let RoutesIn { routes } = parse(&body)?;
            edit_config(&state, |doc| {
                edit::set_routes(doc, &routes);
                Ok(())
            })
            .await?;
            ok(json!({ "routes": routes }))
        }
        .await,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoutesPatch {
    /// The `match` of each route to take out; the new routes' own are taken out too.
    #[serde(default)]
    replace: Vec<String>,
    routes: Vec<RouteEdit>,
}

/// Replaces some routes and keeps the rest as written, in one edit (the window's presets
/// use it, so applying one twice does not stack, and nothing another edit wrote in between
/// is lost).
async fn patch_routes(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let RoutesPatch { replace, routes } = parse(&body)?;
            let mut after = Vec::new();
            edit_config(&state, |doc| {
                after = edit::replace_routes(doc, &replace, &routes);
                Ok(())
            })
            .await?;
            ok(json!({ "routes": after }))
        }
        .await,
    )
}

fn modes_json(state: &AdminState) -> Result<Value, AdminError> {
    let config = state.config();
    let d = config.optimize.defaults;
    let defaults = ModesEdit {
        tool_output: Some(d.tool_output.map_or("off".into(), |l| l.to_string())),
        terse: Some(d.terse.map_or("off".into(), |t| t.to_string())),
        prune: Some(d.prune.map_or("off".into(), |p| p.to_string())),
        squeeze: Some(d.squeeze),
    };
    let models = match &state.admin()?.config_path {
        Some(path) => edit::model_modes(&edit::read(path, &config)?),
        None => Vec::new(),
    };
    Ok(json!({
        "defaults": defaults,
        "models": models,
        "paused": state.paused.load(Ordering::Relaxed),
    }))
}

async fn get_modes(State(state): State<AdminState>) -> Response {
    answer(modes_json(&state).map(|v| reply(StatusCode::OK, &v)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModesIn {
    defaults: ModesEdit,
    #[serde(default)]
    models: Vec<ModelModesEdit>,
}

async fn put_modes(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let ModesIn { defaults, models } = parse(&body)?;
            edit_config(&state, |doc| {
                edit::set_modes(doc, &defaults, &models);
                Ok(())
            })
            .await?;
            ok(modes_json(&state)?)
        }
        .await,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PauseIn {
    paused: bool,
}

async fn pause(State(state): State<AdminState>, body: Bytes) -> Response {
    answer((|| {
        let PauseIn { paused } = parse(&body)?;
        state.paused.store(paused, Ordering::Relaxed);
        ok(json!({ "paused": paused }))
    })())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PreviewIn {
    text: String,
    #[serde(default = "auto")]
    tool_output: String,
}

fn auto() -> String {
    "auto".into()
}

async fn preview(body: Bytes) -> Response {
    let result = async {
        let PreviewIn { text, tool_output } = parse(&body)?;
        let mut patch = PlanPatch::default();
        patch
            .set("tool_output", &tool_output)
            .map_err(AdminError::BadRequest)?;
        let level = patch.tool_output.flatten();
        // Counting a large text takes milliseconds: off the async workers.
        let (output, before, after) = tokio::task::spawn_blocking(move || {
            let before = tokens::count(&text);
            let compacted = level.and_then(|l| compact::compact(&text, l));
            match compacted {
                Some(out) => {
                    let after = tokens::count(&out);
                    // The pass keeps a rewrite only when it pays (as in the gateway).
                    if crate::optimize::pays(before, after) {
                        (out, before, after)
                    } else {
                        (text, before, before)
                    }
                }
                None => (text, before, before),
            }
        })
        .await
        .map_err(|e| AdminError::Internal(e.to_string()))?;
        ok(json!({"output": output, "tokens_before": before, "tokens_after": after}))
    }
    .await;
    answer(result)
}

#[derive(Deserialize)]
struct SavingsQuery {
    since: Option<String>,
    by: Option<String>,
}

async fn savings(State(state): State<AdminState>, Query(q): Query<SavingsQuery>) -> Response {
    answer(
        async {
            let admin = state.admin()?;
            let by_text = q.by.unwrap_or_else(|| "model".into());
            let by = By::parse(&by_text).map_err(AdminError::BadRequest)?;
            let now = crate::clock::now_ms();
            let since = stats::parse_since(q.since.as_deref().unwrap_or("7d"), now)
                .map_err(AdminError::BadRequest)?;
            let Some(pool) = &admin.ledger else {
                return ok(json!({"ledger": false, "since_ms": since, "by": by_text, "rows": [], "total": stats::Totals::default()}));
            };
            let rows = stats::totals(pool, since, by)
                .await
                .map_err(|e| AdminError::Unavailable(format!("cannot read the ledger: {e}")))?;
            let total = stats::sum(&rows);
            ok(json!({"ledger": true, "since_ms": since, "by": by_text, "rows": rows, "total": total}))
        }
        .await,
    )
}

#[derive(Deserialize)]
struct RequestsQuery {
    limit: Option<usize>,
}

async fn requests(State(state): State<AdminState>, Query(q): Query<RequestsQuery>) -> Response {
    let rows = state
        .recent
        .newest(q.limit.unwrap_or(50).min(crate::feed::KEPT));
    answer(ok(json!({ "requests": rows })))
}

/// The listen address in the file, and whether it differs from the one in use (it takes
/// effect at the next start).
fn settings_json(state: &AdminState) -> Result<Value, AdminError> {
    let running = state.listening().to_string();
    let written = match &state.admin()?.config_path {
        Some(path) => edit::listen(&edit::read(path, &state.config())?),
        None => None,
    };
    let listen = written.unwrap_or_else(|| running.clone());
    Ok(json!({"listen": listen, "running": running, "restart_needed": listen != running}))
}

async fn get_settings(State(state): State<AdminState>) -> Response {
    answer(settings_json(&state).map(|v| reply(StatusCode::OK, &v)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsIn {
    listen: String,
}

async fn put_settings(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let SettingsIn { listen } = parse(&body)?;
            edit_config(&state, |doc| {
                edit::set_listen(doc, &listen);
                Ok(())
            })
            .await?;
            ok(settings_json(&state)?)
        }
        .await,
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_and_fresh() {
        assert_eq!(new_token().len(), 64);
        assert_ne!(new_token(), new_token());
    }
}

//! The window's files, served at `/ui/`. The shells (`trimgate`, the desktop app) embed them
//! (crate `trimgate-ui`) and hand them over with [`provide`] at start: the gateway does not
//! depend on the UI's build, so rebuilding the window recompiles no gateway code. A build
//! without them says how to make them.

use std::borrow::Cow;
use std::sync::OnceLock;

use axum::body::Body;
use axum::extract::Path;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use http::{header, HeaderValue, StatusCode};
/// Looks up a file of the window's build by its path under `ui/dist`.
pub type Files = fn(&str) -> Option<Cow<'static, [u8]>>;

static FILES: OnceLock<Files> = OnceLock::new();

/// Serves the window from `files` (once per process; later calls are ignored).
pub fn provide(files: Files) {
    let _ = FILES.set(files);
}

/// The page may load only its own files and talk only to its own origin.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; \
    connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const NOT_BUILT: &str = "<!doctype html><meta charset=utf-8><title>Trimgate</title>\
<p>The window's files are not in this build. Run <code>npm ci &amp;&amp; npm run build</code> in \
<code>ui/</code>, then build Trimgate again.</p>";

pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/ui", get(|| async { redirect() }))
        .route("/ui/", get(|| async { asset("index.html") }))
        .route(
            "/ui/{*path}",
            get(|Path(path): Path<String>| async move { asset(&path) }),
        )
}

fn redirect() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::PERMANENT_REDIRECT;
    r.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/ui/"));
    r
}

fn asset(path: &str) -> Response {
    let (status, body, mime) = match FILES.get().and_then(|files| files(path)) {
        Some(data) => (
            StatusCode::OK,
            Body::from(data.into_owned()),
            mime_guess::from_path(path)
                .first_or_octet_stream()
                .essence_str()
                .to_owned(),
        ),
        None if path == "index.html" => (
            StatusCode::OK,
            Body::from(NOT_BUILT),
            "text/html".to_owned(),
        ),
        None => (
            StatusCode::NOT_FOUND,
            Body::from("not found"),
            "text/plain".to_owned(),
        ),
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&mime) {
        h.insert(header::CONTENT_TYPE, v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

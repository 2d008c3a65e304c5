//! Who may send a request at all, decided before the router sees it.
//!
//! On a loopback listener every route checks `Host`: a web page whose DNS name was
//! rebound to 127.0.0.1 sends its own name there, and is refused before anything goes
//! upstream. On every listener a browser's `Origin` must be the gateway's own page or the
//! desktop window (agents and SDKs send none); no other origin gets a CORS grant. A
//! gateway listening on another address (server mode) is reached by other names, so
//! `Host` is not restricted there. The admin API keeps its stricter guard (`admin`),
//! which uses the same checks.
//!
//! The checks read the request's headers in place: nothing is allocated unless a
//! request is refused.

use std::net::{IpAddr, SocketAddr};

use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderValue, StatusCode};

use crate::dialect::Dialect;
use crate::error::GatewayError;

/// The desktop window's origins (Linux and macOS, then Windows).
pub const WINDOW_ORIGINS: [&str; 2] = ["tauri://localhost", "http://tauri.localhost"];

/// Names a loopback listener answers to in `Host`, with or without the port.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Whether `ip` is this machine's loopback, IPv4 peers of a dual-stack listener
/// (`::ffff:127.0.0.1`) included.
pub fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// Whether a `Host` (or an origin's authority) names loopback: `localhost`, `127.0.0.1`
/// or `[::1]`, with or without a port.
pub fn host_is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    LOOPBACK_NAMES.iter().any(|n| name.eq_ignore_ascii_case(n))
}

fn port_of(authority: &str) -> Option<&str> {
    let rest = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.1,
        None => authority,
    };
    rest.rsplit_once(':').map(|(_, port)| port)
}

/// Whether a browser's `Origin` is the gateway's own page (same loopback port as the
/// request's `Host`) or the desktop window.
pub fn origin_allowed(origin: &str, host: &str) -> bool {
    if WINDOW_ORIGINS.contains(&origin) {
        return true;
    }
    let Some(authority) = origin.strip_prefix("http://") else {
        return false;
    };
    host_is_loopback(authority) && port_of(authority) == port_of(host)
}

/// The request's `Host`: the header, else the URI's authority (HTTP/2). A header that
/// is not text is `Some("")`, which names nothing.
pub fn host_of<B>(request: &http::Request<B>) -> Option<&str> {
    match request.headers().get(header::HOST) {
        Some(v) => Some(v.to_str().unwrap_or("")),
        None => request.uri().authority().map(|a| a.as_str()),
    }
}

/// The gateway's admission checks, fixed when the listener is bound.
#[derive(Clone, Copy, Debug)]
pub struct Ingress {
    /// `Host` must name loopback.
    loopback_listener: bool,
    max_header_count: usize,
    max_header_bytes: usize,
}

impl Ingress {
    pub fn new(listening: SocketAddr, server: &crate::config::Server) -> Ingress {
        Ingress {
            loopback_listener: is_loopback(listening.ip()),
            max_header_count: server.max_header_count,
            max_header_bytes: server.max_header_bytes,
        }
    }

    /// `None` to let the request in, else the refusal to answer with.
    pub fn admit<B>(&self, request: &http::Request<B>) -> Option<Response> {
        let path = request.uri().path();
        if let Some(refused) = self.headers_within_limits(request) {
            return Some(refused);
        }
        // The admin API guards itself (loopback peer, Host, Origin, token).
        if path == "/admin/api" || path.starts_with("/admin/api/") {
            return None;
        }
        let host = host_of(request);
        if self.loopback_listener && host.is_some_and(|h| !host_is_loopback(h)) {
            return Some(refusal(
                request,
                "the Host header must name this machine's loopback (localhost, 127.0.0.1, [::1])",
            ));
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let allowed = origin
                .to_str()
                .is_ok_and(|o| origin_allowed(o, host.unwrap_or("")));
            if !allowed {
                return Some(refusal(request, "requests from other sites are refused"));
            }
        }
        None
    }
}

impl Ingress {
    /// A 431 in the client's shape past the configured header count or bytes. HTTP/1
    /// parsing has its own, higher ceiling (see `server::serve`); past that the answer
    /// is a bare 431.
    fn headers_within_limits<B>(&self, request: &http::Request<B>) -> Option<Response> {
        let headers = request.headers();
        let over = headers.len() > self.max_header_count
            || headers
                .iter()
                .map(|(name, value)| name.as_str().len() + value.len())
                .sum::<usize>()
                > self.max_header_bytes;
        over.then(|| {
            GatewayError::HeadersTooLarge {
                count: self.max_header_count,
                bytes: self.max_header_bytes,
            }
            .into_response(Dialect::guess(headers, request.uri().path()))
        })
    }
}

/// A 403 in the client's own shape: the dialect's JSON on API paths, plain text on the
/// gateway's own (`/healthz`, `/readyz`, `/metrics`, `/ui`).
fn refusal<B>(request: &http::Request<B>, why: &'static str) -> Response {
    let path = request.uri().path();
    let plain = matches!(path, "/healthz" | "/readyz" | "/metrics" | "/status")
        || path == "/ui"
        || path.starts_with("/ui/");
    if plain {
        let mut response = Response::new(Body::from(why));
        *response.status_mut() = StatusCode::FORBIDDEN;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return response;
    }
    GatewayError::Forbidden(why).into_response(Dialect::guess(request.headers(), path))
}

/// The client's address, as the listener saw it.
pub fn peer<B>(request: &http::Request<B>) -> Option<std::net::IpAddr> {
    request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_and_own_origins_only() {
        for host in [
            "localhost:8788",
            "127.0.0.1:8788",
            "[::1]:8788",
            "[::1]",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert!(host_is_loopback(host), "{host}");
        }
        for host in [
            "evil.example:8788",
            "127.0.0.1.evil.example",
            "[::2]:1",
            "",
            "0.0.0.0:8788",
        ] {
            assert!(!host_is_loopback(host), "{host}");
        }
        assert!(origin_allowed("http://127.0.0.1:8788", "127.0.0.1:8788"));
        assert!(origin_allowed("http://localhost:8788", "127.0.0.1:8788"));
        assert!(origin_allowed("tauri://localhost", "127.0.0.1:8788"));
        assert!(
            !origin_allowed("http://127.0.0.1:9999", "127.0.0.1:8788"),
            "another local port"
        );
        assert!(!origin_allowed("https://evil.example", "127.0.0.1:8788"));
        assert!(!origin_allowed("null", "127.0.0.1:8788"));
        assert!(!origin_allowed(
            "http://evil.example:8788",
            "127.0.0.1:8788"
        ));
    }

    #[test]
    fn mapped_ipv4_loopback_is_loopback() {
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap_or(IpAddr::from([0; 4]));
        assert!(is_loopback(mapped));
        assert!(!is_loopback("::ffff:10.0.0.1".parse().unwrap_or(mapped)));
    }

    fn request(path: &str, headers: &[(&str, &str)]) -> http::Request<()> {
        let mut builder = http::Request::post(path);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        builder.body(()).unwrap_or_default()
    }

    #[test]
    fn a_loopback_listener_refuses_other_hosts_and_origins() {
        let ingress = Ingress::new(
            SocketAddr::from(([127, 0, 0, 1], 8788)),
            &Default::default(),
        );
        let admitted =
            |path: &str, headers: &[(&str, &str)]| ingress.admit(&request(path, headers)).is_none();
        assert!(admitted(
            "/v1/chat/completions",
            &[("host", "127.0.0.1:8788")]
        ));
        assert!(admitted("/v1/messages", &[("host", "localhost")]));
        assert!(admitted("/v1/messages", &[]));
        assert!(!admitted(
            "/v1/chat/completions",
            &[("host", "evil.example:8788")]
        ));
        assert!(!admitted("/metrics", &[("host", "evil.example")]));
        assert!(!admitted(
            "/v1/responses",
            &[
                ("host", "127.0.0.1:8788"),
                ("origin", "https://evil.example")
            ]
        ));
        let wide = Ingress::new(SocketAddr::from(([0, 0, 0, 0], 8788)), &Default::default());
        assert!(wide
            .admit(&request("/v1/models", &[("host", "gateway.lan:8788")]))
            .is_none());
    }
}

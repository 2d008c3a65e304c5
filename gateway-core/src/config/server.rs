//! `[server]`: the listener and its limits, their defaults, and their validation.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::Deserialize;

use super::{secs, ConfigProblem};

/// The port the gateway listens on when nothing else is configured.
pub const DEFAULT_PORT: u16 = 8788;
/// Where the shells read a listen address that overrides `[server] listen`.
pub const ENV_LISTEN: &str = "TRIMGATE_LISTEN";
/// Default cap on an inbound request body.
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// Default time a client has to send a request body.
pub const DEFAULT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// Default bytes of an over-limit body read and dropped after the 413.
/// Loopback carries a GiB in well under a second; the body timeout bounds a slow sender.
pub const DEFAULT_MAX_DISCARD_BYTES: usize = 1024 * 1024 * 1024;
/// Default cap on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default cap on requests served at once.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
/// Default cap on the headers of one request: how many, and their bytes in all. The
/// agents send about 20 headers and 2 KiB.
pub const DEFAULT_MAX_HEADER_COUNT: usize = 64;
pub const DEFAULT_MAX_HEADER_BYTES: usize = 32 * 1024;
/// Default time a connection may stay open with no request on it.
pub const DEFAULT_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);
/// Default cap on requests open at once on one HTTP/2 connection (the least the
/// HTTP/2 spec advises a peer to allow).
pub const DEFAULT_MAX_STREAMS_PER_CONNECTION: usize = 100;
/// Default cap on a non-streamed answer, which is read whole (`server.max_answer_bytes`).
/// The largest real ones are images in base64, tens of MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;
/// Default cap on one event of a provider's stream (`server.max_event_bytes`).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// Default cap on all of one provider stream (`server.max_stream_bytes`).
pub const DEFAULT_MAX_STREAM_BYTES: usize = 256 * 1024 * 1024;
/// Default caps on a request's `model` length and JSON nesting: the sniffer's, kept with it.
pub use crate::sniff::{DEFAULT_MAX_JSON_DEPTH, DEFAULT_MAX_MODEL_BYTES};
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// `host:port`; defaults to `127.0.0.1:8788`.
    pub listen: Option<String>,
    pub max_body_bytes: Option<usize>,
    /// Cap on one event of a provider's stream.
    pub max_event_bytes: Option<usize>,
    /// Cap on all of one provider stream.
    pub max_stream_bytes: Option<usize>,
    /// Cap on a provider's whole (non-streamed) answer.
    pub max_answer_bytes: Option<usize>,
    pub shutdown_grace_secs: Option<f64>,
    /// Serving threads; defaults to one per core.
    pub workers: Option<usize>,
    /// Longest `model` name accepted, in bytes.
    pub max_model_bytes: Option<usize>,
    /// Deepest nesting of arrays and objects accepted in a request body.
    pub max_json_depth: Option<usize>,
    /// Time a client has to send a whole request body.
    pub body_timeout_secs: Option<f64>,
    /// Bytes of an over-limit body read and thrown away after the 413, so the client
    /// reads the answer rather than a reset.
    pub max_discard_bytes: Option<usize>,
    /// Open connections at once; more wait in the kernel's queue.
    pub max_connections: Option<usize>,
    /// Requests being served at once; more get a 503 with `retry-after`.
    pub max_in_flight: Option<usize>,
    /// Headers one request may carry, and their names and values in bytes.
    pub max_header_count: Option<usize>,
    pub max_header_bytes: Option<usize>,
    /// A connection with no request open for this long is closed.
    pub idle_timeout_secs: Option<f64>,
    /// Requests open at once on one HTTP/2 connection.
    pub max_streams_per_connection: Option<usize>,
    /// Clients must present the gateway's local key (made on the first start and kept in
    /// an owner-only file next to the config), so other users of the machine cannot.
    pub local_key: Option<bool>,
}

#[derive(Clone, Debug)]
pub struct Server {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    /// A provider's stream event larger than this ends the stream with an error event.
    pub max_event_bytes: usize,
    /// A provider's stream larger than this in all is cut with an error event.
    pub max_stream_bytes: usize,
    /// A provider's whole answer larger than this is a 502.
    pub max_answer_bytes: usize,
    pub shutdown_grace: Duration,
    /// Serving threads (see [`crate::workers`]).
    pub workers: usize,
    pub max_model_bytes: usize,
    pub max_json_depth: usize,
    pub body_timeout: Duration,
    pub max_discard_bytes: usize,
    pub max_connections: usize,
    pub max_in_flight: usize,
    pub max_header_count: usize,
    pub max_header_bytes: usize,
    pub idle_timeout: Duration,
    pub max_streams_per_connection: usize,
    /// Clients must present the local key (see [`crate::local_key`]).
    pub local_key: bool,
}

impl Default for Server {
    fn default() -> Self {
        Server {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), DEFAULT_PORT),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            shutdown_grace: Duration::from_secs(10),
            workers: crate::workers::default_count(),
            max_model_bytes: DEFAULT_MAX_MODEL_BYTES,
            max_json_depth: DEFAULT_MAX_JSON_DEPTH,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_discard_bytes: DEFAULT_MAX_DISCARD_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_header_count: DEFAULT_MAX_HEADER_COUNT,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_streams_per_connection: DEFAULT_MAX_STREAMS_PER_CONNECTION,
            local_key: false,
        }
    }
}

pub(super) fn validate_server(server: ServerConfig, problems: &mut Vec<ConfigProblem>) -> Server {
    let ServerConfig {
        listen,
        max_body_bytes,
        max_event_bytes,
        max_stream_bytes,
        max_answer_bytes,
        shutdown_grace_secs,
        workers,
        max_model_bytes,
        max_json_depth,
        body_timeout_secs,
        max_discard_bytes,
        max_connections,
        max_in_flight,
        max_header_count,
        max_header_bytes,
        idle_timeout_secs,
        max_streams_per_connection,
        local_key,
    } = server;
    let defaults = Server::default();
    let listen = match listen {
        None => defaults.listen,
        Some(text) => match parse_listen(&text) {
            Ok(addr) => addr,
            Err(message) => {
                problems.push(ConfigProblem {
                    path: "server.listen".into(),
                    message,
                });
                defaults.listen
            }
        },
    };
    let max_body_bytes = positive(
        max_body_bytes,
        defaults.max_body_bytes,
        "server.max_body_bytes",
        problems,
    );
    let max_event_bytes = positive(
        max_event_bytes,
        defaults.max_event_bytes,
        "server.max_event_bytes",
        problems,
    );
    let max_stream_bytes = positive(
        max_stream_bytes,
        defaults.max_stream_bytes,
        "server.max_stream_bytes",
        problems,
    );
    let max_answer_bytes = positive(
        max_answer_bytes,
        defaults.max_answer_bytes,
        "server.max_answer_bytes",
        problems,
    );
    let max_model_bytes = positive(
        max_model_bytes,
        defaults.max_model_bytes,
        "server.max_model_bytes",
        problems,
    );
    let max_json_depth = positive(
        max_json_depth,
        defaults.max_json_depth,
        "server.max_json_depth",
        problems,
    );
    let max_connections = positive(
        max_connections,
        defaults.max_connections,
        "server.max_connections",
        problems,
    );
    let max_in_flight = positive(
        max_in_flight,
        defaults.max_in_flight,
        "server.max_in_flight",
        problems,
    );
    let max_header_count = positive(
        max_header_count,
        defaults.max_header_count,
        "server.max_header_count",
        problems,
    );
    let max_header_bytes = positive(
        max_header_bytes,
        defaults.max_header_bytes,
        "server.max_header_bytes",
        problems,
    );
    let max_streams_per_connection = positive(
        max_streams_per_connection,
        defaults.max_streams_per_connection,
        "server.max_streams_per_connection",
        problems,
    );
    let idle_timeout = secs(
        idle_timeout_secs,
        defaults.idle_timeout,
        "server.idle_timeout_secs".into(),
        problems,
    );
    // Zero is allowed: the connection is closed right after the 413.
    let max_discard_bytes = max_discard_bytes.unwrap_or(defaults.max_discard_bytes);
    let body_timeout = secs(
        body_timeout_secs,
        defaults.body_timeout,
        "server.body_timeout_secs".into(),
        problems,
    );
    let shutdown_grace = secs(
        shutdown_grace_secs,
        defaults.shutdown_grace,
        "server.shutdown_grace_secs".into(),
        problems,
    );
    let workers = match workers {
        None => defaults.workers,
        Some(n) if (1..=MAX_WORKERS).contains(&n) => n,
        Some(_) => {
            problems.push(ConfigProblem {
                path: "server.workers".into(),
                message: format!("must be between 1 and {MAX_WORKERS}"),
            });
            defaults.workers
        }
    };
    Server {
        listen,
        max_body_bytes,
        max_event_bytes,
        max_stream_bytes,
        max_answer_bytes,
        shutdown_grace,
        workers,
        max_model_bytes,
        max_json_depth,
        body_timeout,
        max_discard_bytes,
        max_connections,
        max_in_flight,
        max_header_count,
        max_header_bytes,
        idle_timeout,
        max_streams_per_connection,
        local_key: local_key.unwrap_or(defaults.local_key),
    }
}

pub(super) const MAX_WORKERS: usize = 256;

/// A size that must be above zero; the default when absent or zero (reported).
pub(super) fn positive(
    value: Option<usize>,
    default: usize,
    path: &str,
    problems: &mut Vec<ConfigProblem>,
) -> usize {
    match value {
        Some(0) => {
            problems.push(ConfigProblem {
                path: path.into(),
                message: "must be greater than 0".into(),
            });
            default
        }
        Some(n) => n,
        None => default,
    }
}

/// Accepts `host:port`, `:port` or a bare port; a bare port binds loopback.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        if let Ok(port) = port.parse::<u16>() {
            return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
        }
    }
    Err(format!(
        "{text:?} is not an address: use host:port with an IP, like 127.0.0.1:{DEFAULT_PORT}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_local_key_is_off_unless_the_server_asks_for_it() {
        let off = Config::from_toml("", "t.toml").map(|c| c.server.local_key);
        assert_eq!(off.ok(), Some(false));
        let on = Config::from_toml("[server]\nlocal_key = true\n", "t.toml");
        assert_eq!(on.map(|c| c.server.local_key).ok(), Some(true));
        let wrong = Config::from_toml("[server]\nlocal_key = \"yes\"\n", "t.toml");
        assert!(wrong.is_err());
    }

    #[test]
    fn listen_accepts_bare_ports() {
        assert_eq!(
            parse_listen("9000").map(|a| a.to_string()),
            Ok("127.0.0.1:9000".into())
        );
        assert_eq!(
            parse_listen("0.0.0.0:80").map(|a| a.to_string()),
            Ok("0.0.0.0:80".into())
        );
        assert!(parse_listen("example.com:80").is_err());
    }
}

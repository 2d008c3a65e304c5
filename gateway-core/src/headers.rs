//! Header names, env keys and defaults, named once.

use http::HeaderName;

use crate::dialect::Dialect;

/// The port the gateway listens on when nothing else is configured.
pub const DEFAULT_PORT: u16 = 8788;
/// Default cap on an inbound request body.
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// Default caps on a request's `model` length and JSON nesting: the sniffer's, kept with it.
pub use crate::sniff::{DEFAULT_MAX_JSON_DEPTH, DEFAULT_MAX_MODEL_BYTES};
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
/// How often an HTTP/2 connection is pinged, and how long the answer may take.
pub const HTTP2_KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);
pub const HTTP2_KEEPALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// `retry-after` on a 503 for too many requests at once, in seconds.
pub const OVERLOAD_RETRY_AFTER_SECS: &str = "1";
/// Default cap on a non-streamed answer, which is read whole (`server.max_answer_bytes`).
/// The largest real ones are images in base64, tens of MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;
/// Default cap on one event of a provider's stream (`server.max_event_bytes`).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// Default cap on all of one provider stream (`server.max_stream_bytes`).
pub const DEFAULT_MAX_STREAM_BYTES: usize = 256 * 1024 * 1024;
/// Anthropic version sent when the client did not name one.
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";

pub const ENV_LISTEN: &str = "TRIMGATE_LISTEN";
pub const ENV_CONFIG: &str = "TRIMGATE_CONFIG";
pub const ENV_LOG: &str = "TRIMGATE_LOG";
pub const ENV_OPENAI_KEY: &str = "OPENAI_API_KEY";
pub const ENV_ANTHROPIC_KEY: &str = "ANTHROPIC_API_KEY";
pub const ENV_DEEPSEEK_KEY: &str = "DEEPSEEK_API_KEY";
/// The standard OpenTelemetry variable; when set it overrides `telemetry.otlp_endpoint`.
pub const ENV_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The standard OpenTelemetry protocol variable: the endpoint variable is not for us
/// when it names another protocol than ours.
pub const ENV_OTLP_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// The one OTLP protocol the gateway exports.
pub const OTLP_PROTOCOL: &str = "http/protobuf";
/// Appended to a collector's base URL for OTLP/HTTP traces.
pub const OTLP_TRACES_PATH: &str = "/v1/traces";
/// `service.name` of exported spans unless the config names another.
pub const DEFAULT_SERVICE_NAME: &str = "trimgate";

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const X_OVERHEAD_MS: HeaderName = HeaderName::from_static("x-trimgate-overhead-ms");
/// Where a client presents the gateway's local key (`[server] local_key`), apart from the
/// credential headers its own login may use.
pub const X_TRIMGATE_KEY: HeaderName = HeaderName::from_static("x-trimgate-key");
/// Request header: turn passes off or pick their modes (`off`, `tool_output=aggressive terse=off`).
pub const X_OPTIMIZE: HeaderName = HeaderName::from_static("x-trimgate-optimize");
/// Response headers: what the optimizer did to the request.
pub const X_APPLIED: HeaderName = HeaderName::from_static("x-trimgate-applied");
pub const X_SAVED_TOKENS: HeaderName = HeaderName::from_static("x-trimgate-saved-tokens");
pub const X_SAVED_BYTES: HeaderName = HeaderName::from_static("x-trimgate-saved-bytes");
/// Response headers: whether the response cache answered (`hit`) or not (`miss`), and
/// how close the stored request was when it answered by similarity.
pub const X_CACHE: HeaderName = HeaderName::from_static("x-trimgate-cache");
pub const X_CACHE_SIMILARITY: HeaderName = HeaderName::from_static("x-trimgate-cache-similarity");
/// Request headers that carry an agent's session id: Codex CLI's, Claude Code's.
pub const SESSION_HEADERS: [&str; 2] = ["session-id", "x-claude-code-session-id"];

/// The client's own credential headers, and the ChatGPT workspace a signed-in Codex
/// names beside its login: forwarded only to a provider whose `client_auth` allows it.
pub const CLIENT_CREDENTIAL_HEADERS: [&str; 3] =
    ["authorization", "x-api-key", "chatgpt-account-id"];

/// Response header: request fields a translation left out (see `translate::compat`).
/// Which provider and model answered, and after how many attempts (retries and fallbacks).
pub const X_PROVIDER: HeaderName = HeaderName::from_static("x-trimgate-provider");
pub const X_MODEL: HeaderName = HeaderName::from_static("x-trimgate-model");
pub const X_ATTEMPTS: HeaderName = HeaderName::from_static("x-trimgate-attempts");
/// `off`: one attempt, no retry and no fallback.
pub const X_RETRY: HeaderName = HeaderName::from_static("x-trimgate-retry");
pub const X_DROPPED: HeaderName = HeaderName::from_static("x-trimgate-dropped");
pub const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
pub const ANTHROPIC_VERSION: HeaderName = HeaderName::from_static("anthropic-version");
/// Prefix of the gateway's own request headers; they are never forwarded upstream.
pub const TRIMGATE_PREFIX: &str = "x-trimgate-";

/// Upstream response headers that are relayed to the client unchanged. Everything
/// else (hop-by-hop, content-length, encodings, cookies, server banners) is the
/// gateway's to set.
pub fn relayed_response_header(name: &str) -> bool {
    matches!(
        name,
        "content-type"
            | "retry-after"
            | "request-id"
            | "x-request-id"
            | "openai-processing-ms"
            | "openai-organization"
            | "openai-project"
            | "openai-version"
            | "anthropic-organization-id"
            | "x-should-retry"
            | "cache-control"
    ) || name.starts_with("x-ratelimit-")
        || name.starts_with("anthropic-ratelimit-")
}

/// Takes out of `headers` every name `keep` refuses. In place: a request's or a
/// response's map is passed on rather than copied, and only the few names to drop are
/// looked up (a map holds a dozen or two).
pub fn retain_headers(headers: &mut http::HeaderMap, keep: fn(&str) -> bool) {
    while let Some(name) = headers.keys().find(|n| !keep(n.as_str())).cloned() {
        headers.remove(&name);
    }
}

/// Which inbound headers go on to a provider speaking `dialect`: the ones its API defines
/// and agents send, and no others. Connection headers, cookies, the client's credentials
/// (a provider with `client_auth` gets those back, see `upstream`), the gateway's own
/// headers and anything unknown stay here. `openai-organization` and `openai-project`
/// pick who is billed on the provider's key, so they go only where `client_org` says.
pub fn forwarded_request_header(dialect: Dialect, client_org: bool) -> fn(&str) -> bool {
    match (dialect, client_org) {
        (Dialect::AnthropicMessages, _) => forwarded_to_anthropic,
        (Dialect::OpenAiChat | Dialect::OpenAiResponses, false) => forwarded_to_openai,
        (Dialect::OpenAiChat | Dialect::OpenAiResponses, true) => forwarded_to_openai_org,
    }
}

/// Headers every provider gets: the body's type, the SDKs' own (`x-stainless-*`,
/// `idempotency-key`), the agents' session and client ids, and the mock provider's
/// `x-mock-*` controls, which the tests steer it with.
fn forwarded_to_any(name: &str) -> bool {
    matches!(
        name,
        "content-type"
            | "accept"
            | "user-agent"
            | "idempotency-key"
            | "x-app"
            | "session-id"
            | "thread-id"
            | "originator"
            | "x-claude-code-session-id"
            | "x-client-request-id"
    ) || name.starts_with("x-stainless-")
        || name.starts_with("x-codex-")
        || name.starts_with("x-mock-")
}

fn forwarded_to_anthropic(name: &str) -> bool {
    matches!(
        name,
        "anthropic-version" | "anthropic-beta" | "anthropic-dangerous-direct-browser-access"
    ) || forwarded_to_any(name)
}

fn forwarded_to_openai(name: &str) -> bool {
    name == "openai-beta" || forwarded_to_any(name)
}

fn forwarded_to_openai_org(name: &str) -> bool {
    matches!(name, "openai-organization" | "openai-project") || forwarded_to_openai(name)
}

/// OpenAI's own `x-request-id` is relayed under this name, since `x-request-id` carries the gateway's id.
pub const X_UPSTREAM_REQUEST_ID: HeaderName = HeaderName::from_static("x-upstream-request-id");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_headers_the_providers_define_are_forwarded() {
        let anthropic = forwarded_request_header(Dialect::AnthropicMessages, false);
        let openai = forwarded_request_header(Dialect::OpenAiChat, false);
        let openai_org = forwarded_request_header(Dialect::OpenAiResponses, true);
        for name in [
            "content-type",
            "user-agent",
            "session-id",
            "x-stainless-retry-count",
            "x-codex-turn-metadata",
        ] {
            assert!(
                anthropic(name) && openai(name) && openai_org(name),
                "{name}"
            );
        }
        assert!(anthropic("anthropic-beta") && !openai("anthropic-beta"));
        assert!(openai("openai-beta") && !anthropic("openai-beta"));
        for name in ["openai-organization", "openai-project"] {
            assert!(
                !openai(name) && !anthropic(name) && openai_org(name),
                "{name}"
            );
        }
        for name in [
            "cookie",
            "authorization",
            "x-api-key",
            "chatgpt-account-id",
            "x-goog-api-key",
            "host",
            "content-length",
            "accept-encoding",
            "x-request-id",
            "x-trimgate-optimize",
            "x-evil",
        ] {
            assert!(
                !anthropic(name) && !openai(name) && !openai_org(name),
                "{name}"
            );
        }
    }
}

//! Header names, and what the gateway does with headers: which are relayed, forwarded or
//! dropped. Defaults and environment variables live with the part that reads them.

use http::HeaderName;

use crate::dialect::Dialect;

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
pub const SESSION_HEADERS: [HeaderName; 2] = [
    HeaderName::from_static("session-id"),
    HeaderName::from_static("x-claude-code-session-id"),
];

/// The client's own credential headers, and the ChatGPT workspace a signed-in Codex
/// names beside its login: forwarded only to a provider whose `client_auth` allows it.
pub const CLIENT_CREDENTIAL_HEADERS: [&str; 4] = [
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "chatgpt-account-id",
];

/// Response header: request fields a translation left out (see `translate::compat`).
/// Which provider and model answered, and after how many attempts (retries and fallbacks).
pub const X_PROVIDER: HeaderName = HeaderName::from_static("x-trimgate-provider");
pub const X_MODEL: HeaderName = HeaderName::from_static("x-trimgate-model");
pub const X_ATTEMPTS: HeaderName = HeaderName::from_static("x-trimgate-attempts");
/// `off`: one attempt, no retry and no fallback.
pub const X_RETRY: HeaderName = HeaderName::from_static("x-trimgate-retry");
pub const X_DROPPED: HeaderName = HeaderName::from_static("x-trimgate-dropped");
pub const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
/// Where Google's SDKs and Gemini CLI send their API key.
pub const X_GOOG_API_KEY: HeaderName = HeaderName::from_static("x-goog-api-key");
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

/// A copy of the headers `keep` lets through, leaving the original as it is (a retry
/// sends the same request again).
pub fn kept_headers(
    headers: &http::HeaderMap,
    keep: fn(&str) -> bool,
    room: usize,
) -> http::HeaderMap {
    let mut out = http::HeaderMap::with_capacity(headers.len() + room);
    for (name, value) in headers {
        if keep(name.as_str()) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// Takes out of `headers` every name `keep` refuses. In place: a request's or a
/// response's map is passed on rather than copied, and only the few names to drop are
/// looked up (a map holds a dozen or two).
pub fn retain_headers(headers: &mut http::HeaderMap, keep: fn(&str) -> bool) {
    // The names to drop, found in one pass (a few: `date`, `content-length`, `connection`),
    // then taken out; a map with more than fit here goes round again.
    loop {
        let mut refused: [Option<HeaderName>; 8] = Default::default();
        let mut n = 0;
        for name in headers.keys().filter(|name| !keep(name.as_str())) {
            refused[n] = Some(name.clone());
            n += 1;
            if n == refused.len() {
                break;
            }
        }
        for name in refused.iter().flatten() {
            headers.remove(name);
        }
        if n < refused.len() {
            return;
        }
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
        (Dialect::Gemini, _) => forwarded_to_google,
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

/// Google's client headers: which SDK (`x-goog-api-client`) and, for a key of another
/// project's quota, `x-goog-user-project`.
fn forwarded_to_google(name: &str) -> bool {
    matches!(name, "x-goog-api-client" | "x-goog-user-project") || forwarded_to_any(name)
}

/// OpenAI's own `x-request-id` is relayed under this name, since `x-request-id` carries the gateway's id.
pub const X_UPSTREAM_REQUEST_ID: HeaderName = HeaderName::from_static("x-upstream-request-id");

/// The key a client presents: `Authorization: Bearer <key>`, else `x-api-key`, else
/// Google's `x-goog-api-key`.
pub fn presented_key(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .or_else(|| headers.get(X_API_KEY).and_then(|v| v.to_str().ok()))
        .or_else(|| headers.get(X_GOOG_API_KEY).and_then(|v| v.to_str().ok()))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retaining_drops_every_refused_name_however_many() {
        let mut headers = http::HeaderMap::new();
        for i in 0..20 {
            headers.append(
                HeaderName::try_from(format!("x-drop-{i}")).unwrap(),
                http::HeaderValue::from_static("v"),
            );
            headers.append("x-ratelimit-limit-requests", http::HeaderValue::from(i));
        }
        headers.insert(
            "content-type",
            http::HeaderValue::from_static("application/json"),
        );
        retain_headers(&mut headers, relayed_response_header);
        assert_eq!(headers.len(), 21, "{headers:?}");
        assert!(headers.keys().all(|n| relayed_response_header(n.as_str())));
        assert_eq!(
            headers.get_all("x-ratelimit-limit-requests").iter().count(),
            20
        );
    }

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

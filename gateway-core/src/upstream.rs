//! The upstream side: one pooled HTTP client per provider (keep-alive, HTTP/2 where the
//! provider offers it, rustls with the system's roots), and the provider's URL, key and
//! headers put on each request.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

use crate::config::{Config, Provider};
use crate::dialect::{Dialect, Endpoint};
use crate::error::GatewayError;
use crate::headers::{
    dropped_request_header, ANTHROPIC_VERSION, DEFAULT_ANTHROPIC_VERSION, X_API_KEY,
};
use crate::secrets::{SecretError, SecretStore};

/// Installs ring as the process's TLS crypto provider; harmless when one is already installed.
pub fn install_tls_provider() {
    // An Err means some provider is installed already, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A provider's connection pool and its endpoint URLs, parsed once.
struct ProviderClient {
    client: reqwest::Client,
    urls: Vec<(Endpoint, reqwest::Url)>,
}

const ENDPOINTS: [Endpoint; 4] = [
    Endpoint::ChatCompletions,
    Endpoint::Responses,
    Endpoint::Messages,
    Endpoint::CountTokens,
];

pub struct Upstream {
    clients: HashMap<String, ProviderClient>,
    secrets: Arc<dyn SecretStore>,
}

impl Upstream {
    pub fn new(config: &Config, secrets: Arc<dyn SecretStore>) -> Result<Upstream, reqwest::Error> {
        install_tls_provider();
        let mut clients = HashMap::new();
        for provider in &config.providers {
            let client = reqwest::Client::builder()
                .connect_timeout(provider.timeouts.connect)
                .tcp_nodelay(true)
                .pool_idle_timeout(std::time::Duration::from_secs(90))
                // Proxies are the gateway's business; a stray HTTP_PROXY must not reroute keys.
                .no_proxy()
                .build()?;
            let urls = ENDPOINTS
                .iter()
                .filter_map(|e| {
                    let text = format!("{}{}", provider.base_for(e.dialect()), e.upstream_path());
                    reqwest::Url::parse(&text).ok().map(|url| (*e, url))
                })
                .collect();
            clients.insert(provider.name.clone(), ProviderClient { client, urls });
        }
        Ok(Upstream { clients, secrets })
    }

    /// Sends the request and waits for the response headers (bounded by the first-byte timeout).
    pub async fn send(
        &self,
        provider: &Provider,
        endpoint: Endpoint,
        query: Option<&str>,
        inbound: &HeaderMap,
        body: Bytes,
    ) -> Result<reqwest::Response, GatewayError> {
        let unreachable = |detail: &str| GatewayError::UpstreamUnreachable {
            provider: provider.name.clone(),
            detail: detail.to_owned(),
        };
        let pc = self
            .clients
            .get(&provider.name)
            .ok_or_else(|| unreachable("no client for this provider (config changed?)"))?;
        let dialect = endpoint.dialect();
        let mut url = pc
            .urls
            .iter()
            .find(|(e, _)| *e == endpoint)
            .map(|(_, url)| url.clone())
            .ok_or_else(|| unreachable("its base URL does not form a valid endpoint URL"))?;
        if query.is_some() {
            url.set_query(query);
        }
        let headers = self.headers_for(provider, dialect, inbound)?;
        let request = pc.client.post(url).headers(headers).body(body);
        match tokio::time::timeout(provider.timeouts.first_byte, request.send()).await {
            Err(_) => Err(GatewayError::UpstreamTimeout {
                provider: provider.name.clone(),
                phase: "the response headers",
            }),
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(classify(&provider.name, &e)),
        }
    }

    fn headers_for(
        &self,
        provider: &Provider,
        dialect: Dialect,
        inbound: &HeaderMap,
    ) -> Result<HeaderMap, GatewayError> {
        let mut out = HeaderMap::with_capacity(inbound.len() + provider.headers.len() + 2);
        for (name, value) in inbound {
            if !dropped_request_header(name.as_str()) {
                out.append(name.clone(), value.clone());
            }
        }
        for (name, value) in &provider.headers {
            out.insert(name.clone(), value.clone());
        }
        let key = self
            .secrets
            .get(&provider.key)
            .map_err(|e| GatewayError::MissingKey {
                provider: provider.name.clone(),
                hint: match e {
                    SecretError::Missing(source) => format!("{source} is not set"),
                    other => other.to_string(),
                },
            })?;
        if let Some(key) = key {
            let header_value = if provider.uses_x_api_key(dialect) {
                HeaderValue::from_str(key.expose())
            } else {
                HeaderValue::from_str(&format!("Bearer {}", key.expose()))
            };
            let mut value = header_value.map_err(|_| GatewayError::MissingKey {
                provider: provider.name.clone(),
                hint: "the stored key contains characters that cannot go in a header".into(),
            })?;
            value.set_sensitive(true);
            if provider.uses_x_api_key(dialect) {
                out.insert(X_API_KEY, value);
            } else {
                out.insert(http::header::AUTHORIZATION, value);
            }
        }
        if dialect == Dialect::AnthropicMessages && !out.contains_key(ANTHROPIC_VERSION) {
            out.insert(
                ANTHROPIC_VERSION,
                HeaderValue::from_static(DEFAULT_ANTHROPIC_VERSION),
            );
        }
        Ok(out)
    }
}

/// The innermost cause of an error: the part that says what actually went wrong
/// ("connection refused", "invalid peer certificate"), not reqwest's wrapper text.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// Maps a transport error to what the client should hear. reqwest's messages carry the
/// URL but never headers, so no key can leak through them.
pub fn classify(provider: &str, e: &reqwest::Error) -> GatewayError {
    if e.is_timeout() {
        GatewayError::UpstreamTimeout {
            provider: provider.to_owned(),
            phase: "a connection",
        }
    } else {
        GatewayError::UpstreamUnreachable {
            provider: provider.to_owned(),
            detail: root_cause(e),
        }
    }
}

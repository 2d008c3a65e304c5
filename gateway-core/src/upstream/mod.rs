//! The upstream side (`cloud`: what Azure, Bedrock and Vertex need besides) — each provider's open connections, per serving thread ([`pool`]:
//! keep-alive, HTTP/2 where the provider offers it through ALPN, rustls with the
//! platform's certificate verifier), and the provider's URL, key and headers put on each
//! request.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::InvalidHeaderValue;
use http::uri::PathAndQuery;
use http::{HeaderMap, HeaderValue, Method, Request, Response, Uri};
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;

use crate::config::{ClientAuth, Config, Provider};
use crate::dialect::{Dialect, Endpoint};
use crate::error::GatewayError;
use crate::headers::{
    forwarded_request_header, kept_headers, ANTHROPIC_VERSION, CLIENT_CREDENTIAL_HEADERS,
    X_API_KEY, X_GOOG_API_KEY,
};
use crate::secrets::{KeySource, Secret, SecretError, SecretStore};
use crate::telemetry;

mod body;
pub mod cloud;
mod pool;
pub use body::{BodyError, Convert, UpBody, Whole};
use pool::Pool;

/// Anthropic version sent when the client did not name one.
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";

/// Installs ring as the process's TLS crypto provider; harmless when one is already installed.
pub fn install_tls_provider() {
    // An Err means some provider is installed already, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The TLS client setup of every outgoing connection (providers, guardrail hooks): ring,
/// the platform's certificate verifier, no client certificate.
pub fn tls_config() -> Result<rustls::ClientConfig, String> {
    use hyper_rustls::ConfigBuilderExt as _;
    install_tls_provider();
    Ok(rustls::ClientConfig::builder()
        .try_with_platform_verifier()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_no_client_auth())
}

/// A connector for `http` and `https` URLs over `tls`, without Nagle's delay.
pub fn connector(
    tls: &rustls::ClientConfig,
    connect_timeout: Option<std::time::Duration>,
) -> hyper_rustls::HttpsConnector<HttpConnector> {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(connect_timeout);
    http.set_nodelay(true);
    // The HTTPS connector wrapping it handles `https`; this one must let it through.
    http.enforce_http(false);
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls.clone())
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http)
}

/// A provider's connection pools and its endpoint URLs, parsed once.
struct ProviderClient {
    /// One pool per serving thread (index 0 for any other thread): an upstream connection
    /// is driven by the thread that opened it, so a request borrowing it from another
    /// thread would wake that thread twice per request (see [`crate::workers`]).
    pools: Vec<Pool>,
    /// Each endpoint's URL and the `Host` header that goes with it.
    urls: Vec<(Endpoint, Uri, HeaderValue)>,
    /// Azure, Bedrock, Vertex: their paths, credentials and answers.
    cloud: Option<crate::upstream::cloud::Client>,
}

impl ProviderClient {
    fn pool(&self) -> &Pool {
        let i = crate::workers::current();
        &self.pools[if i < self.pools.len() { i } else { 0 }]
    }
}

/// The most a cloud's whole answer that is rewritten (a Converse answer, an error) may
/// hold; the relay's own bound applies to what comes out.
const MAX_CLOUD_ANSWER: usize = 64 << 20;

/// An upstream connection unused this long is closed rather than used again.
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

const ENDPOINTS: [Endpoint; 4] = [
    Endpoint::ChatCompletions,
    Endpoint::Responses,
    Endpoint::Messages,
    Endpoint::CountTokens,
];

pub struct Upstream {
    /// Keyed with FNV: looked up on every request, by names the config chose.
    clients: fnv::FnvHashMap<String, ProviderClient>,
    secrets: Arc<dyn SecretStore>,
}

impl Upstream {
    pub fn new(config: &Config, secrets: Arc<dyn SecretStore>) -> Result<Upstream, std::io::Error> {
        // One TLS setup for every provider: the platform verifier reads the system's
        // certificate store when made (some milliseconds each).
        let tls = tls_config().map_err(std::io::Error::other)?;
        let mut clients = fnv::FnvHashMap::default();
        for provider in &config.providers {
            let connector = connector(&tls, Some(provider.timeouts.connect));
            let pools = (0..=config.server.workers)
                .map(|_| Pool::new(connector.clone(), IDLE_TIMEOUT))
                .collect();
            let urls = ENDPOINTS
                .iter()
                .filter_map(|e| {
                    let text = format!("{}{}", provider.base_for(e.dialect()), e.upstream_path()?);
                    let uri = text.parse::<Uri>().ok()?;
                    let host = pool::host_header(&uri)?;
                    Some((*e, uri, host))
                })
                .collect();
            let cloud = crate::upstream::cloud::Client::new(provider);
            clients.insert(provider.name.clone(), ProviderClient { pools, urls, cloud });
        }
        Ok(Upstream { clients, secrets })
    }

    /// Sends the request and waits for the response headers (bounded by the first-byte
    /// timeout). `path` is the path below the base URL for an endpoint whose path names the
    /// model (Gemini's, [`Endpoint::model_path`]); the others have theirs made once.
    #[allow(clippy::too_many_arguments)]
    pub async fn send(
        &self,
        provider: &Provider,
        key: &KeySource,
        endpoint: Endpoint,
        path: Option<&str>,
        query: Option<&str>,
        model: &str,
        shown: &str,
        stream: bool,
        inbound: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<UpBody>, GatewayError> {
        let unreachable = |detail: &str| GatewayError::UpstreamUnreachable {
            provider: provider.name.clone(),
            detail: detail.to_owned(),
        };
        let pc = self
            .clients
            .get(&provider.name)
            .ok_or_else(|| unreachable("no client for this provider (config changed?)"))?;
        let dialect = endpoint.dialect();
        if let Some(cloud) = &pc.cloud {
            return self
                .send_to_cloud(
                    pc, cloud, provider, key, endpoint, path, query, model, shown, stream, inbound,
                    body,
                )
                .await;
        }
        let made;
        let (base, host) = match path {
            Some(path) => {
                let text = format!("{}{path}", provider.base_for(dialect));
                let uri = text.parse::<Uri>().map_err(|_| {
                    unreachable("its base URL and the model do not form a valid URL")
                })?;
                let host = pool::host_header(&uri)
                    .ok_or_else(|| unreachable("its base URL names no host"))?;
                made = (uri, host);
                (&made.0, &made.1)
            }
            None => pc
                .urls
                .iter()
                .find(|(e, _, _)| *e == endpoint)
                .map(|(_, uri, host)| (uri, host))
                .ok_or_else(|| unreachable("its base URL does not form a valid endpoint URL"))?,
        };
        let uri = match query {
            None => base.clone(),
            Some(q) => {
                with_query(base, q).ok_or_else(|| unreachable("the query string is not valid"))?
            }
        };
        let headers = self.headers_for(provider, key, dialect, inbound)?;
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        let span = telemetry::upstream_span(&provider.name, endpoint, base);
        let sent = (!span.is_disabled()).then(Instant::now);
        let request = pc.pool().send(request, host);
        let result = match tokio::time::timeout(provider.timeouts.first_byte, request).await {
            Err(_) => Err(GatewayError::UpstreamTimeout {
                provider: provider.name.clone(),
                phase: "the response headers",
            }),
            Ok(Ok(response)) => Ok(response.map(UpBody::Plain)),
            Ok(Err(e)) => Err(classify(&provider.name, &*e)),
        };
        telemetry::end_upstream_span(span, sent, &result);
        result
    }

    /// [`Upstream::send`] for Azure, Bedrock and Vertex: the cloud's path and body, the
    /// dialect's headers (only the needed few for Bedrock, whose every header is signed),
    /// the account's credentials, and the answer read back as the dialect's own.
    #[allow(clippy::too_many_arguments)]
    async fn send_to_cloud(
        &self,
        pc: &ProviderClient,
        cloud: &crate::upstream::cloud::Client,
        provider: &Provider,
        key: &KeySource,
        endpoint: Endpoint,
        path: Option<&str>,
        query: Option<&str>,
        model: &str,
        shown: &str,
        stream: bool,
        inbound: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<UpBody>, GatewayError> {
        let unreachable = |detail: &str| GatewayError::UpstreamUnreachable {
            provider: provider.name.clone(),
            detail: detail.to_owned(),
        };
        let dialect = endpoint.dialect();
        let shaped = cloud.shape(
            provider, endpoint, path, query, model, shown, stream, inbound, body,
        )?;
        let uri = format!("{}{}", provider.base_url, shaped.path)
            .parse::<Uri>()
            .map_err(|_| unreachable("its base URL and the model do not form a valid URL"))?;
        let host =
            pool::host_header(&uri).ok_or_else(|| unreachable("its base URL names no host"))?;
        // The key, when one is configured: Azure's `api-key`, a Bedrock API key.
        let key_set = !matches!(key, KeySource::None);
        // Bedrock: the mock provider's `x-mock-*` controls alone, as every provider gets
        // them (see `headers::forwarded_to_any`).
        let controls;
        let forwarded = if cloud.forwards_headers() {
            inbound
        } else {
            controls = inbound
                .iter()
                .filter(|(k, _)| k.as_str().starts_with("x-mock-"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<HeaderMap>();
            &controls
        };
        let mut headers = self.headers_for(provider, key, dialect, forwarded)?;
        cloud.keep_offered_betas(provider, &mut headers);
        if !cloud.forwards_headers() {
            headers.remove(ANTHROPIC_VERSION);
            headers.insert(
                http::header::ACCEPT,
                HeaderValue::from_static(if stream {
                    "application/vnd.amazon.eventstream"
                } else {
                    "application/json"
                }),
            );
        }
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let mut request = Request::new(Full::new(shaped.body.clone()));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        cloud
            .authorize(
                provider,
                &*self.secrets,
                &mut request,
                &shaped.body,
                key_set,
            )
            .await?;
        let span = telemetry::upstream_span(&provider.name, endpoint, request.uri());
        let sent = (!span.is_disabled()).then(Instant::now);
        let sending = pc.pool().send(request, &host);
        let result = match tokio::time::timeout(provider.timeouts.first_byte, sending).await {
            Err(_) => Err(GatewayError::UpstreamTimeout {
                provider: provider.name.clone(),
                phase: "the response headers",
            }),
            Ok(Ok(response)) => Ok(crate::upstream::cloud::Client::adapt(
                provider,
                &shaped.answer,
                response,
                MAX_CLOUD_ANSWER,
            )),
            Ok(Err(e)) => Err(classify(&provider.name, &*e)),
        };
        telemetry::end_upstream_span(span, sent, &result);
        result
    }

    /// Lists the provider's models with its key (`GET …/models`): the window's "test
    /// connection". Returns the status the provider answered with.
    /// Bedrock and Vertex have no model list on the runtime API the gateway uses: for
    /// them the check is that the account's credentials are had (and 200 says so).
    pub async fn probe(&self, provider: &Provider) -> Result<http::StatusCode, GatewayError> {
        let pc =
            self.clients
                .get(&provider.name)
                .ok_or_else(|| GatewayError::UpstreamUnreachable {
                    provider: provider.name.clone(),
                    detail: "no client for this provider".into(),
                })?;
        let dialect = provider
            .dialects
            .first()
            .copied()
            .unwrap_or(Dialect::OpenAiChat);
        let models_path = match &pc.cloud {
            None => "/models".to_owned(),
            Some(cloud) => match cloud.models_path() {
                Some(path) => path,
                None => {
                    let key_set = !matches!(provider.key, KeySource::None);
                    if key_set {
                        // The configured key must be readable, as for a request.
                        self.headers_for(provider, &provider.key, dialect, &HeaderMap::new())?;
                    }
                    cloud
                        .check_credentials(provider, &*self.secrets, key_set)
                        .await?;
                    return Ok(http::StatusCode::OK);
                }
            },
        };
        let uri: Uri = format!("{}{models_path}", provider.base_for(dialect))
            .parse()
            .map_err(|_| GatewayError::UpstreamUnreachable {
                provider: provider.name.clone(),
                detail: "its base URL does not form a valid URL".into(),
            })?;
        let host = pool::host_header(&uri).ok_or_else(|| GatewayError::UpstreamUnreachable {
            provider: provider.name.clone(),
            detail: "its base URL names no host".into(),
        })?;
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.method_mut() = Method::GET;
        *request.uri_mut() = uri;
        *request.headers_mut() =
            self.headers_for(provider, &provider.key, dialect, &HeaderMap::new())?;
        if let Some(cloud) = &pc.cloud {
            let key_set = !matches!(provider.key, KeySource::None);
            cloud
                .authorize(
                    provider,
                    &*self.secrets,
                    &mut request,
                    &Bytes::new(),
                    key_set,
                )
                .await?;
        }
        let sent = pc.pool().send(request, &host);
        match tokio::time::timeout(provider.timeouts.first_byte, sent).await {
            Err(_) => Err(GatewayError::UpstreamTimeout {
                provider: provider.name.clone(),
                phase: "the response headers",
            }),
            Ok(Ok(response)) => Ok(response.status()),
            Ok(Err(e)) => Err(classify(&provider.name, &*e)),
        }
    }

    fn headers_for(
        &self,
        provider: &Provider,
        source: &KeySource,
        dialect: Dialect,
        inbound: &HeaderMap,
    ) -> Result<HeaderMap, GatewayError> {
        // Only for a provider configured to receive them.
        let client = ClientCredentials::take(provider, inbound);
        // Room for the provider's own headers, the key and the API version.
        let room = provider.headers.len() + 2;
        let mut out = kept_headers(
            inbound,
            forwarded_request_header(dialect, provider.client_org),
            room,
        );
        for (name, value) in &provider.headers {
            out.insert(name.clone(), value.clone());
        }
        let key = self
            .secrets
            .get(source)
            .map_err(|e| GatewayError::MissingKey {
                provider: provider.name.clone(),
                hint: match e {
                    SecretError::Missing(source) => format!("{source} is not set"),
                    other => other.to_string(),
                },
            });
        let key = match (provider.client_auth, client) {
            (ClientAuth::Forward, Some(client)) => {
                client.insert_into(&mut out);
                None
            }
            (ClientAuth::WhenNoKey, Some(client)) if !matches!(key, Ok(Some(_))) => {
                client.insert_into(&mut out);
                None
            }
            _ => key?,
        };
        if let Some(key) = key {
            let name = provider.key_header(dialect);
            let value = key_header(key, name.is_some()).map_err(|_| GatewayError::MissingKey {
                provider: provider.name.clone(),
                hint: "the stored key contains characters that cannot go in a header".into(),
            })?;
            out.insert(name.unwrap_or(http::header::AUTHORIZATION), value);
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

/// The client's own `authorization` and `x-api-key` (a Claude subscription login, say),
/// for a provider whose `client_auth` lets them through. Marked sensitive, never logged.
struct ClientCredentials(Vec<(http::HeaderName, HeaderValue)>);

impl ClientCredentials {
    fn take(provider: &Provider, inbound: &HeaderMap) -> Option<ClientCredentials> {
        if provider.client_auth == ClientAuth::Never {
            return None;
        }
        let found: Vec<_> = CLIENT_CREDENTIAL_HEADERS
            .into_iter()
            .filter_map(|name| {
                let mut value = inbound.get(name)?.clone();
                value.set_sensitive(true);
                Some((http::HeaderName::from_static(name), value))
            })
            .collect();
        (!found.is_empty()).then_some(ClientCredentials(found))
    }

    fn insert_into(self, out: &mut HeaderMap) {
        for (name, value) in self.0 {
            out.insert(name, value);
        }
    }
}

/// The credential a client sends that `provider` may receive, for keying the response
/// cache per login; `None` when the provider never receives client credentials.
pub fn client_credential<'h>(provider: &Provider, headers: &'h HeaderMap) -> Option<&'h [u8]> {
    if provider.client_auth == ClientAuth::Never {
        return None;
    }
    headers
        .get(http::header::AUTHORIZATION)
        .or_else(|| headers.get(X_API_KEY))
        .or_else(|| headers.get(X_GOOG_API_KEY))
        .map(HeaderValue::as_bytes)
}

thread_local! {
    /// The key headers built last on this thread: a key header is a format and two
    /// allocations, and the same few keys go on every request.
    static KEY_HEADERS: RefCell<Vec<(Secret, bool, HeaderValue)>> = const { RefCell::new(Vec::new()) };
}

/// How many key headers a thread keeps; the oldest makes room.
const KEY_HEADERS_KEPT: usize = 8;

/// `key` as the value of `x-api-key`, or of `authorization` as a bearer token; marked
/// sensitive, so it is never logged.
fn key_header(key: Secret, x_api_key: bool) -> Result<HeaderValue, InvalidHeaderValue> {
    let kept = KEY_HEADERS.with(|kept| {
        kept.borrow()
            .iter()
            .find(|(k, x, _)| *x == x_api_key && *k == key)
            .map(|(_, _, value)| value.clone())
    });
    if let Some(value) = kept {
        return Ok(value);
    }
    let mut value = if x_api_key {
        HeaderValue::from_str(key.expose())
    } else {
        HeaderValue::from_str(&format!("Bearer {}", key.expose()))
    }?;
    value.set_sensitive(true);
    KEY_HEADERS.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.len() == KEY_HEADERS_KEPT {
            kept.remove(0);
        }
        kept.push((key, x_api_key, value.clone()));
    });
    Ok(value)
}

/// The innermost cause of an error: the part that says what actually went wrong
/// ("connection refused", "invalid peer certificate"), not the wrappers' text.
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

fn with_query(base: &Uri, query: &str) -> Option<Uri> {
    let mut parts = base.clone().into_parts();
    let path = parts.path_and_query.as_ref().map_or("/", |pq| pq.path());
    parts.path_and_query = Some(PathAndQuery::try_from(format!("{path}?{query}")).ok()?);
    Uri::from_parts(parts).ok()
}

/// Maps a transport error to what the client should hear. Transport errors name hosts
/// and causes, never headers, so no key can leak through them.
pub fn classify(provider: &str, e: &(dyn std::error::Error + 'static)) -> GatewayError {
    GatewayError::UpstreamUnreachable {
        provider: provider.to_owned(),
        detail: root_cause(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_header_is_built_once_per_key_and_rebuilt_when_the_key_changes() {
        let old = Secret::new("sk-old");
        let bearer = key_header(old.clone(), false).unwrap();
        assert_eq!(bearer, "Bearer sk-old");
        assert!(bearer.is_sensitive());
        assert_eq!(key_header(old.clone(), true).unwrap(), "sk-old");
        // The same text read again from the store is the same key.
        assert_eq!(
            key_header(Secret::new("sk-old"), false).unwrap(),
            "Bearer sk-old"
        );
        let new = key_header(Secret::new("sk-new"), false).unwrap();
        assert_eq!(new, "Bearer sk-new");
        assert!(new.is_sensitive());
        assert!(key_header(Secret::new("bad\nkey"), false).is_err());
        // More keys than a thread keeps: each still gets its own header.
        for i in 0..2 * KEY_HEADERS_KEPT {
            let key = format!("sk-{i}");
            assert_eq!(
                key_header(Secret::new(key.as_str()), i % 2 == 0).unwrap(),
                if i % 2 == 0 {
                    key
                } else {
                    format!("Bearer {key}")
                }
                .as_str()
            );
        }
        assert_eq!(key_header(old, false).unwrap(), "Bearer sk-old");
    }
}

//! Who may use the client routes: the gateway keys a config lists and the local key.
//! Checked before anything else of a request is read; the local key is taken off a
//! request that was let in, so it never goes upstream.

use http::{HeaderMap, HeaderValue};
use sha2::{Digest, Sha256};

use crate::config::{Config, GatewayKey};
use crate::error::GatewayError;
use crate::headers::{X_GOOG_API_KEY, X_TRIMGATE_KEY};
use crate::state::AppState;

/// What a request's headers say about the local key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LocalKeyCheck {
    NotRequired,
    Presented,
    /// `x-trimgate-key` holds something else.
    Wrong,
    Missing,
}

/// The key a request was let in with: a gateway key the config lists, or a virtual key
/// (which carries its limits, and whose optimizer overrides its gateway key holds).
#[derive(Clone)]
pub struct ClientKey {
    pub gateway_key: GatewayKey,
    pub virtual_key: Option<std::sync::Arc<crate::virtual_keys::InForce>>,
}

/// Moves a key given in the query (`?key=…`, as Google's API allows) into
/// `x-goog-api-key`, where the checks below look for a client's key (one already in that
/// header wins); the query goes on without it, so it never reaches a provider or a log.
pub fn key_from_query<B>(request: &mut http::Request<B>) {
    let Some(query) = request.uri().query() else {
        return;
    };
    let (keys, rest): (Vec<&str>, Vec<&str>) = query
        .split('&')
        .filter(|p| !p.is_empty())
        .partition(|p| p.starts_with("key="));
    let Some(key) = keys.last().and_then(|p| p.strip_prefix("key=")) else {
        return;
    };
    let key = HeaderValue::from_str(key).ok();
    let path_and_query = match rest.as_slice() {
        [] => request.uri().path().to_owned(),
        _ => format!("{}?{}", request.uri().path(), rest.join("&")),
    };
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = path_and_query.parse().ok();
    let uri = http::Uri::from_parts(parts).ok();
    if let Some(mut key) = key {
        key.set_sensitive(true);
        request.headers_mut().entry(X_GOOG_API_KEY).or_insert(key);
    }
    if let Some(uri) = uri {
        *request.uri_mut() = uri;
    }
}

impl AppState {
    /// Who a request is from, checked before anything else is read: the gateway key it
    /// presents (`Authorization: Bearer` or `x-api-key`) when the config lists any, and
    /// the local key when `[server] local_key` is on. With both, either lets a request in;
    /// one let in by the local key alone has no gateway key's overrides. `Ok(None)` when
    /// no gateway key applies.
    pub fn gateway_key(&self, headers: &HeaderMap) -> Result<Option<GatewayKey>, GatewayError> {
        let config = self.config();
        let local = self.local_key_presented(&config, headers);
        // Virtual keys in force need a key of every client, as listed gateway keys do.
        let virtual_keys = self.keys().is_some_and(|book| book.any())
            || self
                .keys_required
                .load(std::sync::atomic::Ordering::Relaxed);
        if config.gateway_keys.is_empty() && !virtual_keys {
            return match local {
                LocalKeyCheck::NotRequired | LocalKeyCheck::Presented => Ok(None),
                LocalKeyCheck::Wrong => Err(GatewayError::LocalKeyInvalid),
                LocalKeyCheck::Missing => Err(GatewayError::LocalKeyMissing),
            };
        }
        match self.matching_gateway_key(&config, headers) {
            Err(_) if local == LocalKeyCheck::Presented => Ok(None),
            found => found.map(Some),
        }
    }

    /// Refuses a request to `/v1/models` or `/metrics` that presents neither a gateway
    /// key nor the local key when either is required: what is served, and the traffic's
    /// counts, are not for anyone who can reach the port.
    pub async fn check_client(
        &self,
        headers: &HeaderMap,
        peer: Option<std::net::IpAddr>,
    ) -> Result<(), GatewayError> {
        self.client_key(headers, peer).await.map(|_| ())
    }

    /// Who a request is from, virtual keys included: a virtual key presented is looked up
    /// (and must be in force), anything else goes to [`AppState::gateway_key`].
    pub async fn client_key(
        &self,
        headers: &HeaderMap,
        peer: Option<std::net::IpAddr>,
    ) -> Result<Option<ClientKey>, GatewayError> {
        if let Some(book) = self.keys() {
            if let Some(presented) = crate::virtual_keys::KeyBook::presented(headers) {
                let key = book.find(presented, peer).await?;
                return Ok(Some(ClientKey {
                    gateway_key: GatewayKey {
                        name: key.stored.name.clone(),
                        key: crate::secrets::KeySource::None,
                        optimize: key.optimize,
                        guard: key.guard,
                    },
                    virtual_key: Some(key),
                }));
            }
        }
        Ok(self.gateway_key(headers)?.map(|gateway_key| ClientKey {
            gateway_key,
            virtual_key: None,
        }))
    }

    /// Takes the local key off a request that was let in, before anything reads its
    /// credentials for the provider or the cache.
    pub fn strip_local_key(&self, headers: &mut HeaderMap) {
        if let Some(key) = self.local_key() {
            key.strip(headers);
        }
    }

    fn local_key_presented(&self, config: &Config, headers: &HeaderMap) -> LocalKeyCheck {
        if !config.server.local_key {
            return LocalKeyCheck::NotRequired;
        }
        // On in the config but never loaded (a gateway built without `launch`): nobody is let in.
        let Some(key) = self.local_key() else {
            tracing::error!("local_key is on but no local key was loaded: refusing requests");
            return LocalKeyCheck::Missing;
        };
        if key.presented_in(headers) {
            LocalKeyCheck::Presented
        } else if headers.contains_key(X_TRIMGATE_KEY) {
            LocalKeyCheck::Wrong
        } else {
            LocalKeyCheck::Missing
        }
    }

    fn matching_gateway_key(
        &self,
        config: &Config,
        headers: &HeaderMap,
    ) -> Result<GatewayKey, GatewayError> {
        let presented =
            crate::headers::presented_key(headers).ok_or(GatewayError::GatewayKeyMissing)?;
        // Digests are compared, so the time taken does not depend on how much of a key matched.
        let digest = Sha256::digest(presented.as_bytes());
        for key in &config.gateway_keys {
            let Ok(Some(secret)) = self.secrets().get(&key.key) else {
                tracing::warn!(gateway_key = %key.name, source = %key.key, "gateway key cannot be read");
                continue;
            };
            if Sha256::digest(secret.expose().as_bytes()) == digest {
                return Ok(key.clone());
            }
        }
        Err(GatewayError::GatewayKeyInvalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(uri: &str, header: Option<&str>) -> (String, Option<String>) {
        let mut request = http::Request::builder().uri(uri);
        if let Some(h) = header {
            request = request.header(X_GOOG_API_KEY, h);
        }
        let mut request = request.body(()).unwrap();
        key_from_query(&mut request);
        let key = request
            .headers()
            .get(X_GOOG_API_KEY)
            .map(|v| v.to_str().unwrap().to_owned());
        (request.uri().to_string(), key)
    }

    #[test]
    fn a_key_in_the_query_moves_to_the_header_and_leaves_the_query() {
        assert_eq!(
            moved(
                "/v1beta/models/m:streamGenerateContent?key=AIza1&alt=sse",
                None
            ),
            (
                "/v1beta/models/m:streamGenerateContent?alt=sse".into(),
                Some("AIza1".into())
            )
        );
        assert_eq!(
            moved("/v1beta/models/m:generateContent?key=AIza1", None),
            (
                "/v1beta/models/m:generateContent".into(),
                Some("AIza1".into())
            )
        );
        // A key already in the header is the one checked; the query's still goes.
        assert_eq!(
            moved("/m?key=AIza1", Some("AIza2")),
            ("/m".into(), Some("AIza2".into()))
        );
        assert_eq!(moved("/m?alt=sse", None), ("/m?alt=sse".into(), None));
    }
}

//! Who may use the client routes: the gateway keys a config lists and the local key.
//! Checked before anything else of a request is read; the local key is taken off a
//! request that was let in, so it never goes upstream.

use http::{header, HeaderMap};
use sha2::{Digest, Sha256};

use crate::config::{Config, GatewayKey};
use crate::error::GatewayError;
use crate::headers::{X_API_KEY, X_TRIMGATE_KEY};
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

impl AppState {
    /// Who a request is from, checked before anything else is read: the gateway key it
    /// presents (`Authorization: Bearer` or `x-api-key`) when the config lists any, and
    /// the local key when `[server] local_key` is on. With both, either lets a request in;
    /// one let in by the local key alone has no gateway key's overrides. `Ok(None)` when
    /// no gateway key applies.
    pub fn gateway_key(&self, headers: &HeaderMap) -> Result<Option<GatewayKey>, GatewayError> {
        let config = self.config();
        let local = self.local_key_presented(&config, headers);
        if config.gateway_keys.is_empty() {
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
    pub fn check_client(&self, headers: &HeaderMap) -> Result<(), GatewayError> {
        self.gateway_key(headers).map(|_| ())
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
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .or_else(|| headers.get(X_API_KEY).and_then(|v| v.to_str().ok()))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or(GatewayError::GatewayKeyMissing)?;
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

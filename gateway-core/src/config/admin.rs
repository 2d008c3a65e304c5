//! `[admin]`: the admin API the window uses and the window at `/ui`; on a server, the
//! admin key that opens them beyond loopback and the proxies trusted to say the client's
//! connection was TLS.

use serde::Deserialize;

use super::providers::key_source;
use super::{ConfigProblem, KeySourceConfig};
use crate::secrets::KeySource;

/// `[admin]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// `false` turns the admin API and `/ui` off; default `true`.
    pub enabled: Option<bool>,
    /// Where the admin key is read (`{ env = "TRIMGATE_ADMIN_KEY" }` or a secret file):
    /// without one the admin API answers on loopback only.
    pub key: Option<KeySourceConfig>,
    /// Addresses or networks (`10.0.0.0/8`, `127.0.0.1`) of the TLS-terminating proxies
    /// whose `X-Forwarded-Proto` and `X-Forwarded-For` are believed. The admin API
    /// answers a client beyond loopback only through one of them, over `https`.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Keep what clients sent and what providers got, in memory, for the window's request
    /// detail: off unless set (the window can turn it on until the next start).
    pub keep_request_bodies: Option<bool>,
    /// The bound on the bodies kept, in MiB (default 32).
    pub request_bodies_mb: Option<u64>,
}

/// The admin API's settings.
#[derive(Debug, Clone)]
pub struct Admin {
    pub enabled: bool,
    pub key: Option<KeySource>,
    pub trusted_proxies: Vec<ipnet::IpNet>,
    pub keep_request_bodies: bool,
    pub request_bodies_bytes: usize,
}

/// The default bound on request bodies kept for the window.
const REQUEST_BODIES_MB: u64 = 32;

impl Default for Admin {
    fn default() -> Self {
        Admin {
            enabled: true,
            key: None,
            trusted_proxies: Vec::new(),
            keep_request_bodies: false,
            request_bodies_bytes: (REQUEST_BODIES_MB << 20) as usize,
        }
    }
}

impl Admin {
    /// Whether `ip` is one of the trusted proxies.
    pub fn trusts(&self, ip: std::net::IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }
}

pub(super) fn validate_admin(admin: AdminConfig, problems: &mut Vec<ConfigProblem>) -> Admin {
    let AdminConfig {
        enabled,
        key,
        trusted_proxies,
        keep_request_bodies,
        request_bodies_mb,
    } = admin;
    let key = key_source(key, "admin.key", problems);
    let mut nets = Vec::new();
    for (i, text) in trusted_proxies.iter().enumerate() {
        let parsed = text
            .parse::<ipnet::IpNet>()
            .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from));
        match parsed {
            Ok(net) => nets.push(net),
            Err(_) => problems.push(ConfigProblem {
                path: format!("admin.trusted_proxies[{i}]"),
                message: format!("{text:?} is not an IP address or network (10.0.0.0/8)"),
            }),
        }
    }
    let mb = request_bodies_mb.unwrap_or(REQUEST_BODIES_MB);
    if mb == 0 || mb > 4096 {
        problems.push(ConfigProblem {
            path: "admin.request_bodies_mb".into(),
            message: format!("{mb} is out of range: from 1 to 4096 (MiB)"),
        });
    }
    Admin {
        enabled: enabled.unwrap_or(true),
        key,
        trusted_proxies: nets,
        keep_request_bodies: keep_request_bodies.unwrap_or(false),
        request_bodies_bytes: usize::try_from(mb.clamp(1, 4096) << 20).unwrap_or(usize::MAX),
    }
}

//! The local client key (`[server] local_key = true`): a random key made on the first start
//! and kept in an owner-only file next to the config, so that on a machine with several OS
//! users only the one who can read that file can use the gateway on 127.0.0.1.
//!
//! Clients present it in `x-trimgate-key`, which never collides with their own credentials
//! (a Claude subscription login rides in `Authorization`), or as their API key
//! (`Authorization: Bearer` or `x-api-key`), where it stands in for the placeholder key. Either
//! way it is taken off the request before anything goes upstream.

use std::io::Write;
use std::path::{Path, PathBuf};

use http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::files::{create_private_dir, PRIVATE_FILE_MODE};
use crate::headers::{X_API_KEY, X_GOOG_API_KEY, X_TRIMGATE_KEY};
use crate::secrets::Secret;

/// The key file's name, in the config file's folder.
pub const LOCAL_KEY_FILE: &str = "local-key";
/// Says what the key is wherever it is pasted.
pub const LOCAL_KEY_PREFIX: &str = "tg-local-";
/// Random bytes in a key (256 bits), written as hex after the prefix.
const RANDOM_BYTES: usize = 32;

/// The gateway's local key. Its `Debug` shows no part of it.
#[derive(Clone)]
pub struct LocalKey {
    secret: Secret,
    digest: [u8; 32],
}

impl std::fmt::Debug for LocalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalKey(…)")
    }
}

/// Why the key could not be had; the message names the file, never the key.
#[derive(Debug, thiserror::Error)]
pub enum LocalKeyError {
    #[error("cannot read the local key in {path}: {detail}")]
    Read { path: PathBuf, detail: String },
    #[error("cannot write the local key to {path}: {detail}")]
    Write { path: PathBuf, detail: String },
    #[error("{path} is not a local key the gateway made: delete it, and a new key is made on the next start")]
    Malformed { path: PathBuf },
    #[error("{path} can be read by other users (mode {mode:o}): delete it, and a new key is made on the next start")]
    TooOpen { path: PathBuf, mode: u32 },
}

/// Where the key for the config at `config_path` is kept: beside it, and beside the path as
/// given rather than a link's target, so a config kept in a dotfiles repository does not
/// pull the key in with it.
pub fn path_for(config_path: &Path) -> PathBuf {
    config_path
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .join(LOCAL_KEY_FILE)
}

impl LocalKey {
    fn new(text: &str) -> LocalKey {
        LocalKey {
            secret: Secret::new(text),
            digest: Sha256::digest(text.as_bytes()).into(),
        }
    }

    /// The key in `path`, made there (owner-only) when there is none yet.
    pub fn load_or_create(path: &Path) -> Result<LocalKey, LocalKeyError> {
        if path.exists() {
            LocalKey::read(path)
        } else {
            LocalKey::create(path)
        }
    }

    /// The key in `path`, refused when others may read it or it is not one the gateway made.
    pub fn read(path: &Path) -> Result<LocalKey, LocalKeyError> {
        let text = std::fs::read_to_string(path).map_err(|e| LocalKeyError::Read {
            path: path.to_owned(),
            detail: e.to_string(),
        })?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(0);
            // A key others could read keeps nobody out: better no gateway than that.
            if mode & 0o077 != 0 {
                return Err(LocalKeyError::TooOpen {
                    path: path.to_owned(),
                    mode,
                });
            }
        }
        let text = text.trim();
        let well_formed = text.strip_prefix(LOCAL_KEY_PREFIX).is_some_and(|hex| {
            hex.len() >= 2 * RANDOM_BYTES && hex.bytes().all(|b| b.is_ascii_hexdigit())
        });
        if !well_formed {
            return Err(LocalKeyError::Malformed {
                path: path.to_owned(),
            });
        }
        Ok(LocalKey::new(text))
    }

    /// Writes a new key to `path`. The key is written whole to a file of its own, then
    /// linked into place, so a gateway starting at the same moment finds either no key or
    /// the whole of one, and the first to link wins.
    fn create(path: &Path) -> Result<LocalKey, LocalKeyError> {
        let write_error = |e: std::io::Error| LocalKeyError::Write {
            path: path.to_owned(),
            detail: e.to_string(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                create_private_dir(dir).map_err(write_error)?;
            }
        }
        let mut random = [0u8; RANDOM_BYTES];
        getrandom::fill(&mut random).map_err(|e| LocalKeyError::Write {
            path: path.to_owned(),
            detail: format!("no randomness from the system: {e}"),
        })?;
        let mut text = String::with_capacity(LOCAL_KEY_PREFIX.len() + 2 * RANDOM_BYTES);
        text.push_str(LOCAL_KEY_PREFIX);
        for byte in random {
            text.push_str(&format!("{byte:02x}"));
        }
        let mut name = path.file_name().unwrap_or_default().to_owned();
        name.push(format!(".{}.tmp", uuid::Uuid::new_v4().simple()));
        let tmp = path.with_file_name(name);
        let written =
            write_private(&tmp, text.as_bytes()).and_then(|()| std::fs::hard_link(&tmp, path));
        let _ = std::fs::remove_file(&tmp);
        match written {
            Ok(()) => Ok(LocalKey::new(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => LocalKey::read(path),
            Err(e) => Err(write_error(e)),
        }
    }

    /// The key itself, for the agents `trimgate wrap` starts and the window's lines.
    pub fn expose(&self) -> &str {
        self.secret.expose()
    }

    /// Whether `headers` carry the key, in `x-trimgate-key` or as the client's API key.
    pub fn presented_in(&self, headers: &HeaderMap) -> bool {
        candidates(headers).any(|value| self.matches(value))
    }

    /// Takes the key off a request: `x-trimgate-key`, and a credential header that holds
    /// it, so it is neither forwarded as the client's login nor part of a cache key.
    pub fn strip(&self, headers: &mut HeaderMap) {
        headers.remove(X_TRIMGATE_KEY);
        for name in [http::header::AUTHORIZATION, X_API_KEY, X_GOOG_API_KEY] {
            let holds_key = headers
                .get(&name)
                .and_then(|v| v.to_str().ok())
                .map(credential)
                .is_some_and(|v| self.matches(v));
            if holds_key {
                headers.remove(&name);
            }
        }
    }

    /// Digests are compared, so the time taken does not depend on how much of the key matched.
    fn matches(&self, presented: &str) -> bool {
        <[u8; 32]>::from(Sha256::digest(presented.trim().as_bytes())) == self.digest
    }
}

/// The values a client may have put the key in.
fn candidates(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    [
        X_TRIMGATE_KEY,
        http::header::AUTHORIZATION,
        X_API_KEY,
        X_GOOG_API_KEY,
    ]
    .into_iter()
    .filter_map(|name| headers.get(name)?.to_str().ok())
    .map(credential)
}

/// A header's value without a bearer scheme.
fn credential(value: &str) -> &str {
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .unwrap_or(value)
}

/// Creates `path` owner-only (it must not exist) and writes `contents` to disk.
fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tg-local-key-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir(&dir).unwrap();
        dir
    }

    #[test]
    fn a_key_is_made_once_and_read_back_after() {
        let dir = scratch();
        let path = path_for(&dir.join("config.toml"));
        let made = LocalKey::load_or_create(&path).unwrap();
        assert!(made.expose().starts_with(LOCAL_KEY_PREFIX));
        assert_eq!(made.expose().len(), LOCAL_KEY_PREFIX.len() + 64);
        let again = LocalKey::load_or_create(&path).unwrap();
        assert_eq!(made.expose(), again.expose());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o600);
        }
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_others_can_read_or_that_holds_something_else_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch();
        let path = dir.join(LOCAL_KEY_FILE);
        LocalKey::load_or_create(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = LocalKey::load_or_create(&path).unwrap_err();
        assert!(matches!(err, LocalKeyError::TooOpen { .. }), "{err}");
        std::fs::write(&path, "hunter2").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = LocalKey::load_or_create(&path).unwrap_err();
        assert!(matches!(err, LocalKeyError::Malformed { .. }), "{err}");
        assert!(!err.to_string().contains("hunter2"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_key_is_found_in_each_header_and_stripped_from_them() {
        let key = LocalKey::new("tg-local-abc");
        for (name, value) in [
            ("x-trimgate-key", "tg-local-abc"),
            ("authorization", "Bearer tg-local-abc"),
            ("x-api-key", "tg-local-abc"),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(value).unwrap());
            assert!(key.presented_in(&headers), "{name}");
            key.strip(&mut headers);
            assert!(headers.is_empty(), "{name}");
        }
        // A client's own login beside the key stays, to be forwarded where allowed.
        let mut headers = HeaderMap::new();
        headers.insert("x-trimgate-key", HeaderValue::from_static("tg-local-abc"));
        headers.insert(
            "authorization",
            HeaderValue::from_static("Bearer sk-ant-oat-1"),
        );
        key.strip(&mut headers);
        assert_eq!(headers.len(), 1);
        assert!(!key.presented_in(&headers));
        assert!(format!("{key:?}").find("abc").is_none());
    }
}

//! Where provider keys come from. A key is read through a [`SecretStore`] when a
//! request needs it and never written to config, logs or responses.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// A reference to a secret, as written in the config: never the secret itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KeySource {
    /// An environment variable holds the key.
    Env(String),
    /// A file holds the key (container secrets); surrounding whitespace is trimmed.
    File(PathBuf),
    /// The OS keychain holds the key under this account name (service `trimgate`): the
    /// Secret Service on Linux, the Keychain on macOS, the Credential Manager on Windows.
    Keychain(String),
    /// The provider needs no key (a local Ollama, say).
    None,
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::Env(var) => write!(f, "env var {var}"),
            KeySource::File(path) => write!(f, "file {}", path.display()),
            KeySource::Keychain(name) => write!(f, "keychain entry {name}"),
            KeySource::None => f.write_str("no key"),
        }
    }
}

/// A secret value whose `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("{0} is not set")]
    Missing(KeySource),
    #[error("cannot read {source_}: {detail}")]
    Unreadable { source_: KeySource, detail: String },
    #[error("cannot store a key in {0}: this gateway reads keys from env vars and files only")]
    ReadOnly(KeySource),
    #[error("cannot write {source_}: {detail}")]
    Unwritable { source_: KeySource, detail: String },
}

/// Resolves a [`KeySource`] to a key. One job, so tests and the desktop keychain can swap it.
pub trait SecretStore: Send + Sync {
    /// The key, `Ok(None)` for [`KeySource::None`], or why it cannot be had.
    fn get(&self, source: &KeySource) -> Result<Option<Secret>, SecretError>;

    /// Stores a key (the admin API's "set key"); stores that only read refuse.
    fn set(&self, source: &KeySource, _value: &str) -> Result<(), SecretError> {
        Err(SecretError::ReadOnly(source.clone()))
    }

    /// Forgets a key; deleting one that is not there is not an error.
    fn delete(&self, source: &KeySource) -> Result<(), SecretError> {
        Err(SecretError::ReadOnly(source.clone()))
    }
}

/// How a key is shown: its first three and last four characters (`sk-…a1b2`), or only
/// dots when it is too short to show any of it safely.
pub fn mask(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 12 {
        return "…".to_owned();
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}…{tail}")
}

/// Query parameters whose values are secrets (PostgreSQL's `password`, `sslpassword`;
/// the keys some APIs take in the URL).
const SECRET_PARAMS: [&str; 8] = [
    "password",
    "passwd",
    "pwd",
    "sslpassword",
    "key",
    "api_key",
    "access_token",
    "token",
];

/// A URL as it may be shown — in logs, the admin API, errors: the password in its
/// userinfo and the values of secret query parameters become `…`. The one place URLs
/// are redacted (ledger and PostgreSQL URLs, providers' base URLs, collectors).
pub fn redact_url(url: &str) -> String {
    // The last `@` ends the userinfo even when a password holds `/` or `?`; one in the
    // query only hides more than needed.
    let shown = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:…@{}", &url[..scheme + 3], &url[at + 1..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    };
    let Some((base, query)) = shown.split_once('?') else {
        return shown;
    };
    let params: Vec<String> = query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((name, _))
                if SECRET_PARAMS
                    .iter()
                    .any(|secret| name.eq_ignore_ascii_case(secret)) =>
            {
                format!("{name}=…")
            }
            _ => param.to_owned(),
        })
        .collect();
    format!("{base}?{}", params.join("&"))
}

/// Reads env vars and files each time, so a rotated container secret is picked up
/// without a restart.
#[derive(Debug, Default)]
pub struct EnvFileStore;

impl SecretStore for EnvFileStore {
    fn get(&self, source: &KeySource) -> Result<Option<Secret>, SecretError> {
        match source {
            KeySource::None => Ok(None),
            KeySource::Env(var) => match std::env::var(var) {
                Ok(value) if !value.trim().is_empty() => Ok(Some(Secret::new(value.trim()))),
                _ => Err(SecretError::Missing(source.clone())),
            },
            KeySource::File(path) => match std::fs::read_to_string(path) {
                Ok(value) if !value.trim().is_empty() => Ok(Some(Secret::new(value.trim()))),
                Ok(_) => Err(SecretError::Missing(source.clone())),
                Err(e) => Err(SecretError::Unreadable {
                    source_: source.clone(),
                    detail: e.kind().to_string(),
                }),
            },
            KeySource::Keychain(_) => Err(SecretError::Unreadable {
                source_: source.clone(),
                detail: "this gateway does not use the OS keychain (the desktop app does)".into(),
            }),
        }
    }
}

/// The OS keychain for keychain entries, env vars and files for the rest: the desktop
/// app's store. Entries live under the service name [`KEYCHAIN_SERVICE`].
#[cfg(feature = "keychain")]
#[derive(Debug, Default)]
pub struct KeyringStore;

/// The keychain service Trimgate's entries are filed under.
pub const KEYCHAIN_SERVICE: &str = "trimgate";

#[cfg(feature = "keychain")]
fn entry(source: &KeySource, name: &str) -> Result<keyring::Entry, SecretError> {
    keyring::Entry::new(KEYCHAIN_SERVICE, name).map_err(|e| SecretError::Unreadable {
        source_: source.clone(),
        detail: e.to_string(),
    })
}

#[cfg(feature = "keychain")]
impl SecretStore for KeyringStore {
    fn get(&self, source: &KeySource) -> Result<Option<Secret>, SecretError> {
        let KeySource::Keychain(name) = source else {
            return EnvFileStore.get(source);
        };
        match entry(source, name)?.get_password() {
            Ok(value) if !value.trim().is_empty() => Ok(Some(Secret::new(value.trim()))),
            Ok(_) | Err(keyring::Error::NoEntry) => Err(SecretError::Missing(source.clone())),
            Err(e) => Err(SecretError::Unreadable {
                source_: source.clone(),
                detail: e.to_string(),
            }),
        }
    }

    fn set(&self, source: &KeySource, value: &str) -> Result<(), SecretError> {
        let KeySource::Keychain(name) = source else {
            return Err(SecretError::ReadOnly(source.clone()));
        };
        entry(source, name)?
            .set_password(value.trim())
            .map_err(|e| SecretError::Unwritable {
                source_: source.clone(),
                detail: e.to_string(),
            })
    }

    fn delete(&self, source: &KeySource) -> Result<(), SecretError> {
        let KeySource::Keychain(name) = source else {
            return Err(SecretError::ReadOnly(source.clone()));
        };
        match entry(source, name)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(SecretError::Unwritable {
                source_: source.clone(),
                detail: e.to_string(),
            }),
        }
    }
}

/// Remembers the keys another store found for a few seconds. A request needs its
/// provider's key every time; asking the keychain means a D-Bus round trip, a file key
/// three syscalls. A key set or deleted through this store is forgotten at once; one
/// rotated outside the gateway is picked up within [`Remembered::FOR`]. Only keys are
/// remembered, not their absence, so a key that appears is used on the next request.
pub struct Remembered {
    inner: Arc<dyn SecretStore>,
    /// Keyed with FNV: asked on every request, for a few short keys of the config's own.
    found: std::sync::RwLock<fnv::FnvHashMap<KeySource, (Secret, std::time::Instant)>>,
}

impl Remembered {
    pub const FOR: std::time::Duration = std::time::Duration::from_secs(5);

    pub fn new(inner: Arc<dyn SecretStore>) -> Self {
        Remembered {
            inner,
            found: std::sync::RwLock::default(),
        }
    }

    fn forget(&self, source: &KeySource) {
        if let Ok(mut found) = self.found.write() {
            found.remove(source);
        }
    }
}

impl SecretStore for Remembered {
    fn get(&self, source: &KeySource) -> Result<Option<Secret>, SecretError> {
        if *source == KeySource::None {
            return Ok(None);
        }
        let now = std::time::Instant::now();
        if let Ok(found) = self.found.read() {
            if let Some((secret, at)) = found.get(source) {
                if now.duration_since(*at) < Self::FOR {
                    return Ok(Some(secret.clone()));
                }
            }
        }
        let got = self.inner.get(source);
        match &got {
            Ok(Some(secret)) => {
                if let Ok(mut found) = self.found.write() {
                    found.insert(source.clone(), (secret.clone(), now));
                }
            }
            _ => self.forget(source),
        }
        got
    }

    fn set(&self, source: &KeySource, value: &str) -> Result<(), SecretError> {
        let result = self.inner.set(source, value);
        self.forget(source);
        result
    }

    fn delete(&self, source: &KeySource) -> Result<(), SecretError> {
        let result = self.inner.delete(source);
        self.forget(source);
        result
    }
}

/// Keys held in memory, a test double. Env-var and keychain entries are kept by name;
/// keychain entries can be set and deleted.
#[cfg(any(test, feature = "test-util"))]
#[derive(Debug, Default)]
pub struct MemoryStore(std::sync::Mutex<std::collections::HashMap<String, Secret>>);

#[cfg(any(test, feature = "test-util"))]
impl MemoryStore {
    /// Keys by env-var name, standing in for the environment.
    pub fn with_env(self, var: &str, value: &str) -> Self {
        if let Ok(mut keys) = self.0.lock() {
            keys.insert(var.to_owned(), Secret::new(value));
        }
        self
    }

    fn name(source: &KeySource) -> Option<String> {
        match source {
            KeySource::Env(var) => Some(var.clone()),
            KeySource::Keychain(name) => Some(format!("keychain:{name}")),
            KeySource::File(_) | KeySource::None => None,
        }
    }
}

#[cfg(any(test, feature = "test-util"))]
impl SecretStore for MemoryStore {
    fn get(&self, source: &KeySource) -> Result<Option<Secret>, SecretError> {
        if *source == KeySource::None {
            return Ok(None);
        }
        let found =
            MemoryStore::name(source).and_then(|name| self.0.lock().ok()?.get(&name).cloned());
        found
            .map(Some)
            .ok_or_else(|| SecretError::Missing(source.clone()))
    }

    fn set(&self, source: &KeySource, value: &str) -> Result<(), SecretError> {
        match (source, self.0.lock()) {
            (KeySource::Keychain(name), Ok(mut keys)) => {
                keys.insert(format!("keychain:{name}"), Secret::new(value.trim()));
                Ok(())
            }
            _ => Err(SecretError::ReadOnly(source.clone())),
        }
    }

    fn delete(&self, source: &KeySource) -> Result<(), SecretError> {
        match (source, self.0.lock()) {
            (KeySource::Keychain(name), Ok(mut keys)) => {
                keys.remove(&format!("keychain:{name}"));
                Ok(())
            }
            _ => Err(SecretError::ReadOnly(source.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_in_urls_never_show() {
        assert_eq!(
            redact_url("postgres://tg:s3cret@db:5432/ledger"),
            "postgres://tg:…@db:5432/ledger"
        );
        assert_eq!(
            redact_url("postgres://tg@db/ledger?sslmode=require&password=s3cret"),
            "postgres://tg@db/ledger?sslmode=require&password=…"
        );
        assert_eq!(
            redact_url("postgres://tg:pa/ss?w@db/l?PassWord=x&key=k"),
            "postgres://tg:…@db/l?PassWord=…&key=…"
        );
        assert_eq!(
            redact_url("https://user:hunter2@proxy.example/v1"),
            "https://user:…@proxy.example/v1"
        );
        assert_eq!(
            redact_url("sqlite:///x/l.sqlite?mode=rwc"),
            "sqlite:///x/l.sqlite?mode=rwc"
        );
        assert_eq!(
            redact_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
    }

    use super::*;

    #[test]
    fn file_keys_are_trimmed_and_empty_files_are_missing() {
        let dir = std::env::temp_dir().join(format!("tg-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        std::fs::write(&path, "sk-file-123\n").unwrap();
        let store = EnvFileStore;
        let got = store.get(&KeySource::File(path.clone())).unwrap().unwrap();
        assert_eq!(got.expose(), "sk-file-123");
        std::fs::write(&path, "  \n").unwrap();
        assert!(matches!(
            store.get(&KeySource::File(path)),
            Err(SecretError::Missing(_))
        ));
        let missing = store.get(&KeySource::File(dir.join("nope")));
        assert!(matches!(missing, Err(SecretError::Unreadable { .. })));
    }

    #[test]
    fn remembered_keys_are_forgotten_when_set_deleted_or_old() {
        let dir = std::env::temp_dir().join(format!("tg-remember-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        std::fs::write(&path, "sk-first").unwrap();
        let file = KeySource::File(path.clone());
        let store = Remembered::new(Arc::new(EnvFileStore));
        let grow_old = |store: &Remembered| {
            if let Ok(mut found) = store.found.write() {
                found.get_mut(&file).unwrap().1 -= Remembered::FOR;
            }
        };
        assert_eq!(store.get(&file).unwrap().unwrap().expose(), "sk-first");
        // Rotated outside the gateway: the remembered key serves until it is old.
        std::fs::write(&path, "sk-second").unwrap();
        assert_eq!(store.get(&file).unwrap().unwrap().expose(), "sk-first");
        grow_old(&store);
        assert_eq!(store.get(&file).unwrap().unwrap().expose(), "sk-second");
        // A key that goes away is missing on the next read of the source, not remembered.
        std::fs::remove_file(&path).unwrap();
        grow_old(&store);
        assert!(store.get(&file).is_err());

        let memory = Arc::new(MemoryStore::default());
        let store = Remembered::new(memory.clone());
        let chain = KeySource::Keychain("openai".into());
        assert!(matches!(store.get(&chain), Err(SecretError::Missing(_))));
        store.set(&chain, "sk-one").unwrap();
        assert_eq!(store.get(&chain).unwrap().unwrap().expose(), "sk-one");
        store.set(&chain, "sk-two").unwrap();
        assert_eq!(store.get(&chain).unwrap().unwrap().expose(), "sk-two");
        store.delete(&chain).unwrap();
        assert!(matches!(store.get(&chain), Err(SecretError::Missing(_))));
    }

    #[test]
    fn masks_show_only_the_ends() {
        assert_eq!(mask("sk-proj-abcdefghijklmnop1234"), "sk-…1234");
        assert_eq!(mask("short"), "…");
    }

    #[test]
    fn secret_debug_never_shows_the_value() {
        let s = Secret::new("sk-live-abcdef");
        assert_eq!(format!("{s:?}"), "Secret(…)");
    }
}

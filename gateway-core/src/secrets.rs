//! Where provider keys come from. A key is read through a [`SecretStore`] when a
//! request needs it and never written to config, logs or responses.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// A reference to a secret, as written in the config: never the secret itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// An environment variable holds the key.
    Env(String),
    /// A file holds the key (container secrets); surrounding whitespace is trimmed.
    File(PathBuf),
    /// The provider needs no key (a local Ollama, say).
    None,
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::Env(var) => write!(f, "env var {var}"),
            KeySource::File(path) => write!(f, "file {}", path.display()),
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
}

/// Resolves a [`KeySource`] to a key. One job, so tests and the desktop keychain can swap it.
pub trait SecretStore: Send + Sync {
    /// The key, `Ok(None)` for [`KeySource::None`], or why it cannot be had.
    fn get(&self, source: &KeySource) -> Result<Option<Secret>, SecretError>;
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
        }
    }
}

/// Fixed keys held in memory: for tests and for embedding the core in-process.
#[derive(Debug, Default)]
pub struct MemoryStore(HashMap<String, Secret>);

impl MemoryStore {
    /// Keys by env-var name, standing in for the environment.
    pub fn with_env(mut self, var: &str, value: &str) -> Self {
        self.0.insert(var.to_owned(), Secret::new(value));
        self
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, source: &KeySource) -> Result<Option<Secret>, SecretError> {
        match source {
            KeySource::None => Ok(None),
            KeySource::Env(var) => self
                .0
                .get(var)
                .cloned()
                .map(Some)
                .ok_or_else(|| SecretError::Missing(source.clone())),
            KeySource::File(_) => Err(SecretError::Missing(source.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
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
    fn secret_debug_never_shows_the_value() {
        let s = Secret::new("sk-live-abcdef");
        assert_eq!(format!("{s:?}"), "Secret(…)");
    }
}

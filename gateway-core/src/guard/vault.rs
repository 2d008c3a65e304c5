//! Where replaced secrets wait for the answer: placeholder → value, per scope, in memory,
//! bounded.
//!
//! A scope is whatever must not see another's secrets: a session, or the credential
//! the client came with. A value is restored only into an answer of the scope that sent
//! it, so a placeholder that leaks into another session (a pasted log, a shared prompt)
//! stays a placeholder there. Values are handed to nothing but this module's restorer:
//! the methods that read them are private to the guard, and the vault's `Debug` shows
//! counts only.

use std::num::NonZeroUsize;
use std::sync::Arc;

use lru::LruCache;

use super::kind::SecretKind;
use super::placeholder::Placeholders;

/// Values kept by default, across every scope: a session's secrets are a handful, and
/// past this the least recently used is forgotten (its placeholder is then no longer
/// restored, and a later turn that sends the secret again keeps it again).
pub const DEFAULT_CAPACITY: usize = 4096;

/// Placeholder → value, per scope, least recently used forgotten first.
pub struct Vault {
    names: Placeholders,
    /// Keyed by `scope \0 placeholder`: a placeholder never holds a NUL, so the last one
    /// splits the key one way only and two scopes never share a key.
    values: LruCache<String, Arc<str>>,
    /// How many values each scope holds, so that a scope with none (most requests) is
    /// answered without a look at every value.
    held: std::collections::HashMap<String, usize>,
}

impl Vault {
    /// A vault naming secrets with `names` and keeping at most `capacity` values (at
    /// least one).
    pub fn new(names: Placeholders, capacity: usize) -> Vault {
        Vault {
            names,
            values: LruCache::new(NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN)),
            held: std::collections::HashMap::new(),
        }
    }

    /// Values kept, over every scope.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether `scope` has sent the secret behind `placeholder` (and it is still kept).
    pub fn holds(&self, scope: &str, placeholder: &str) -> bool {
        self.values.contains(&key(scope, placeholder))
    }

    /// Forgets everything `scope` sent (a session ended, a credential revoked).
    pub fn forget(&mut self, scope: &str) {
        let prefix = format!("{scope}\0");
        let keys: Vec<String> = self
            .values
            .iter()
            .filter(|(k, _)| is_of_scope(k, &prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.values.pop(&k);
        }
        self.held.remove(scope);
    }

    /// Keeps `value` as a secret of `kind` sent by `scope`, and returns its placeholder.
    /// The same value gets the same placeholder every time; were two values of one scope
    /// ever to share one (odds in `placeholder.rs`), the later would be restored for both.
    pub(super) fn keep(&mut self, scope: &str, kind: SecretKind, value: &str) -> String {
        let placeholder = self.names.name(kind, value);
        let k = key(scope, &placeholder);
        match self.values.get(&k) {
            Some(kept) if **kept == *value => {}
            Some(_) => {
                self.values.put(k, Arc::from(value));
            }
            None => {
                if let Some((evicted, _)) = self.values.push(k, Arc::from(value)) {
                    self.release(&evicted);
                }
                *self.held.entry(scope.to_owned()).or_default() += 1;
            }
        }
        placeholder
    }

    /// The value behind `placeholder` for `scope`, if that scope sent it.
    #[cfg(test)]
    pub(super) fn lookup(&mut self, scope: &str, placeholder: &str) -> Option<Arc<str>> {
        self.values.get(&key(scope, placeholder)).cloned()
    }

    /// One value fewer for the scope of the key `evicted`.
    fn release(&mut self, evicted: &str) {
        let Some(at) = evicted.rfind('\0') else {
            return;
        };
        let scope = &evicted[..at];
        if let Some(n) = self.held.get_mut(scope) {
            *n -= 1;
            if *n == 0 {
                self.held.remove(scope);
            }
        }
    }

    /// Every placeholder `scope` holds, with its value: what a streamed answer may name.
    pub(super) fn of_scope(&self, scope: &str) -> Vec<(Box<str>, Arc<str>)> {
        if !self.held.contains_key(scope) {
            return Vec::new();
        }
        let prefix = format!("{scope}\0");
        self.values
            .iter()
            .filter(|(k, _)| is_of_scope(k, &prefix))
            .map(|(k, v)| (Box::from(&k[prefix.len()..]), Arc::clone(v)))
            .collect()
    }
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault")
            .field("values", &self.values.len())
            .field("capacity", &self.values.cap())
            .finish_non_exhaustive()
    }
}

fn key(scope: &str, placeholder: &str) -> String {
    let mut key = String::with_capacity(scope.len() + 1 + placeholder.len());
    key.push_str(scope);
    key.push('\0');
    key.push_str(placeholder);
    key
}

/// Whether a key belongs to the scope whose prefix (`scope \0`) is given: the rest must
/// hold no NUL, or the key is a longer scope's that merely starts the same way.
fn is_of_scope(key: &str, prefix: &str) -> bool {
    key.strip_prefix(prefix)
        .is_some_and(|placeholder| !placeholder.contains('\0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count per scope follows keeps, evictions and forgetting.
    #[test]
    fn held_counts_follow_the_values() {
        let mut v = vault(2);
        v.keep("a", SecretKind::GithubToken, "one");
        v.keep("a", SecretKind::GithubToken, "one");
        v.keep("b", SecretKind::GithubToken, "two");
        assert_eq!(v.held.get("a"), Some(&1));
        // A third value evicts a's only one.
        v.keep("c", SecretKind::GithubToken, "three");
        assert_eq!(v.held.get("a"), None);
        assert!(v.of_scope("a").is_empty());
        assert_eq!(v.of_scope("b").len(), 1);
        v.forget("b");
        assert_eq!(v.held.get("b"), None);
        assert_eq!(v.held.get("c"), Some(&1));
    }

    fn vault(capacity: usize) -> Vault {
        Vault::new(Placeholders::new([1; 32]), capacity)
    }

    /// The vault holds at most its capacity, forgetting the least recently used.
    #[test]
    fn bounded_with_lru_eviction() {
        let mut vault = vault(2);
        let a = vault.keep("s", SecretKind::EnvSecret, "value-a");
        let b = vault.keep("s", SecretKind::EnvSecret, "value-b");
        // Using `a` makes `b` the least recently used.
        assert_eq!(vault.lookup("s", &a).as_deref(), Some("value-a"));
        let c = vault.keep("s", SecretKind::EnvSecret, "value-c");
        assert_eq!(vault.len(), 2);
        assert!(vault.holds("s", &a));
        assert!(!vault.holds("s", &b));
        assert!(vault.holds("s", &c));
    }

    /// A scope sees only what it sent.
    #[test]
    fn scopes_are_apart() {
        let mut vault = vault(8);
        let p = vault.keep("alice", SecretKind::GithubToken, "ghp_x");
        assert!(vault.holds("alice", &p));
        assert!(!vault.holds("bob", &p));
        assert_eq!(vault.lookup("bob", &p), None);
        // A scope that starts like another is another.
        assert!(!vault.holds("alic", &p));
        assert_eq!(vault.of_scope("alice").len(), 1);
        assert!(vault.of_scope("alic").is_empty());
        assert!(vault.of_scope("bob").is_empty());
        vault.forget("alice");
        assert!(vault.is_empty());
    }

    /// Keeping the same value twice keeps it once, under the same placeholder.
    #[test]
    fn same_value_kept_once() {
        let mut vault = vault(8);
        let a = vault.keep("s", SecretKind::Jwt, "eyJ.x.y");
        let b = vault.keep("s", SecretKind::Jwt, "eyJ.x.y");
        assert_eq!(a, b);
        assert_eq!(vault.len(), 1);
    }

    /// Debug output names no value.
    #[test]
    fn debug_hides_values() {
        let mut vault = vault(8);
        vault.keep("s", SecretKind::EnvSecret, "hunter2-secret");
        assert!(!format!("{vault:?}").contains("hunter2"));
    }
}

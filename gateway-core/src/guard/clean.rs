//! Strings already searched and found clean, by a hash of their bytes. An agent sends its
//! whole history again on every turn: without this, every turn would search every earlier
//! turn's text once more; with it, a request costs the search of its new strings and a
//! hash of the others. Bounded; the oldest forgotten first. A memo never changes what is
//! found, only what finding costs.

use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasherDefault;
use std::sync::Mutex;

/// Hashes kept by default: about 1.5 MiB, a few long sessions' worth of strings.
pub const DEFAULT_ENTRIES: usize = 65_536;

/// The keys are hashes already: they are used as they are.
type Set = HashSet<u64, BuildHasherDefault<fnv::FnvHasher>>;

pub struct Clean {
    inner: Mutex<(Set, VecDeque<u64>)>,
    max: usize,
}

impl Clean {
    pub fn new(max: usize) -> Clean {
        Clean {
            inner: Mutex::new((Set::default(), VecDeque::new())),
            max: max.max(1),
        }
    }

    /// The hash a string's bytes are kept under: seeded by the rules that searched it, so
    /// that other rules (a reload with patterns of the user's own) search it again.
    pub fn hash(rules_seed: u64, bytes: &[u8]) -> u64 {
        // XXH3 with a seed derives a secret from it on every call; mixing the seed in after
        // costs nothing, and for one rule set it still maps strings to hashes one for one.
        xxhash_rust::xxh3::xxh3_64(bytes) ^ rules_seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    pub fn contains(&self, hash: u64) -> bool {
        self.inner.lock().is_ok_and(|inner| inner.0.contains(&hash))
    }

    pub fn insert(&self, hash: u64) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let (set, order) = &mut *inner;
        if !set.insert(hash) {
            return;
        }
        order.push_back(hash);
        while order.len() > self.max {
            if let Some(old) = order.pop_front() {
                set.remove(&old);
            }
        }
    }
}

impl Default for Clean {
    fn default() -> Self {
        Clean::new(DEFAULT_ENTRIES)
    }
}

impl std::fmt::Debug for Clean {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.inner.lock().map_or(0, |inner| inner.0.len());
        f.debug_struct("Clean").field("entries", &n).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_oldest_out_and_seeded() {
        let clean = Clean::new(2);
        let (a, b, c) = (
            Clean::hash(1, b"a"),
            Clean::hash(1, b"b"),
            Clean::hash(1, b"c"),
        );
        clean.insert(a);
        clean.insert(b);
        clean.insert(c);
        assert!(!clean.contains(a) && clean.contains(b) && clean.contains(c));
        assert_ne!(Clean::hash(1, b"a"), Clean::hash(2, b"a"));
    }
}

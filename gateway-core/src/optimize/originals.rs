//! What the client sent, kept by content hash next to what the provider got, so a user
//! can see exactly what a pass changed. Bounded in bytes; the oldest entries go first.

use std::sync::Arc;

use super::memo::Memo;
use super::tokens::{hex, Hash};

/// One rewritten block.
#[derive(Debug, Clone)]
pub struct Original {
    pub hash: String,
    pub pass: &'static str,
    pub original: Arc<str>,
    pub replacement: Arc<str>,
}

pub struct Originals(Memo<String, Original>);

impl Originals {
    pub fn new(max_bytes: usize) -> Originals {
        Originals(Memo::new(usize::MAX, max_bytes))
    }

    pub fn keep(&self, hash: &Hash, pass: &'static str, original: &str, replacement: &str) {
        let key = hex(hash);
        let kept = Original {
            hash: key.clone(),
            pass,
            original: original.into(),
            replacement: replacement.into(),
        };
        self.0.put(key, kept, original.len() + replacement.len());
    }

    /// The block whose hash (hex) is `hash`, if still kept.
    pub fn get(&self, hash: &str) -> Option<Original> {
        self.0.get(&hash.to_owned())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::tokens::hash;

    #[test]
    fn keeps_by_hash_and_evicts_the_oldest_past_the_byte_bound() {
        let store = Originals::new(20);
        store.keep(&hash("aaaaaaaa"), "tool_output", "aaaaaaaa", "a");
        store.keep(&hash("bbbbbbbb"), "tool_output", "bbbbbbbb", "b");
        assert_eq!(store.len(), 2);
        store.keep(&hash("cccccccc"), "tool_output", "cccccccc", "c");
        assert!(store.get(&hex(&hash("aaaaaaaa"))).is_none());
        let kept = store.get(&hex(&hash("cccccccc"))).unwrap();
        assert_eq!((&*kept.original, &*kept.replacement), ("cccccccc", "c"));
        store.keep(&hash("huge"), "x", &"h".repeat(50), "");
        assert!(store.get(&hex(&hash("huge"))).is_none());
    }
}

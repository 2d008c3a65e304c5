//! What the client sent, kept by content hash next to what the provider got, so a user
//! can see exactly what a pass changed. Bounded in bytes; the oldest entries go first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::tokens::{hex, Hash};

/// One rewritten block.
#[derive(Debug, Clone)]
pub struct Original {
    pub hash: String,
    pub pass: &'static str,
    pub original: Arc<str>,
    pub replacement: Arc<str>,
}

pub struct Originals {
    inner: Mutex<Inner>,
    max_bytes: usize,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Original>,
    order: VecDeque<String>,
    bytes: usize,
}

impl Originals {
    pub fn new(max_bytes: usize) -> Originals {
        Originals {
            inner: Mutex::new(Inner::default()),
            max_bytes,
        }
    }

    pub fn keep(&self, hash: &Hash, pass: &'static str, original: &str, replacement: &str) {
        let size = original.len() + replacement.len();
        if size > self.max_bytes {
            return;
        }
        let key = hex(hash);
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.entries.contains_key(&key) {
            return;
        }
        while inner.bytes + size > self.max_bytes {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            if let Some(e) = inner.entries.remove(&old) {
                inner.bytes -= e.original.len() + e.replacement.len();
            }
        }
        inner.bytes += size;
        inner.order.push_back(key.clone());
        inner.entries.insert(
            key.clone(),
            Original {
                hash: key,
                pass,
                original: original.into(),
                replacement: replacement.into(),
            },
        );
    }

    /// The block whose SHA-256 (hex) is `hash`, if still kept.
    pub fn get(&self, hash: &str) -> Option<Original> {
        self.inner.lock().ok()?.entries.get(hash).cloned()
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map(|i| i.entries.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

//! What the client sent, kept by id next to what the provider got, so a user can see
//! exactly what a pass changed, and an agent can get back what a marker says was elided
//! (`GET /originals/<id>`, `trimgate show <id>`). Bounded in bytes; the oldest entries go
//! first. An id is the first 20 hex digits (80 bits) of the block's BLAKE3 hash: the same
//! block gets the same id on every turn (the marker holding it stays prefix-stable), and
//! it cannot be guessed without the block itself.

use std::sync::Arc;

use super::memo::Memo;
use super::tokens::{hex, Hash};

/// One rewritten block.
#[derive(Debug, Clone)]
pub struct Original {
    pub id: String,
    pub pass: &'static str,
    pub original: Arc<str>,
    pub replacement: Arc<str>,
}

pub struct Originals(Memo<String, Original>);

/// The id a block is kept under: 20 hex digits of its hash.
pub fn id(hash: &Hash) -> String {
    let mut id = hex(hash);
    id.truncate(ID_LEN);
    id
}

pub const ID_LEN: usize = 20;

/// Whether `text` is an id's shape (before any lookup).
pub fn is_id(text: &str) -> bool {
    text.len() == ID_LEN && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The first line of an original given back: it tells the agent what it holds, and tells
/// the passes to leave the tool output that carries it whole (the agent asked for all of it).
pub fn fetched_header(id: &str) -> String {
    format!("{FETCHED_OPENING}{id}{FETCHED_CLOSING}\n")
}

const FETCHED_OPENING: &str = "[… original ";
const FETCHED_CLOSING: &str = ", whole as the client sent it …]";

/// Whether a tool output carries an original given back, inside whatever wrapper the agent
/// put around it.
pub fn is_fetched(text: &str) -> bool {
    text.match_indices(FETCHED_OPENING).any(|(at, _)| {
        let rest = &text[at + FETCHED_OPENING.len()..];
        rest.len() > ID_LEN && is_id(&rest[..ID_LEN]) && rest[ID_LEN..].starts_with(FETCHED_CLOSING)
    })
}

/// The line a rewrite that elided something ends with: where the whole block is kept.
pub fn retrieval_line(origin: &str, id: &str) -> String {
    format!("\n[… all of it: curl -s {origin}/originals/{id} (or: trimgate show {id}) …]")
}

impl Originals {
    pub fn new(max_bytes: usize) -> Originals {
        Originals(Memo::new(usize::MAX, max_bytes))
    }

    pub fn keep(&self, hash: &Hash, pass: &'static str, original: &str, replacement: &str) {
        let key = id(hash);
        let kept = Original {
            id: key.clone(),
            pass,
            original: original.into(),
            replacement: replacement.into(),
        };
        let evicted = self.0.put(key, kept, original.len() + replacement.len());
        if evicted > 0 {
            metrics::counter!("trimgate_originals_evicted_total", "store" => "memory")
                .increment(evicted as u64);
        }
    }

    /// The block kept under `id`, if still kept.
    pub fn get(&self, id: &str) -> Option<Original> {
        self.0.get(&id.to_ascii_lowercase())
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
    use crate::tokens::hash;

    #[test]
    fn keeps_by_hash_and_evicts_the_oldest_past_the_byte_bound() {
        let store = Originals::new(20);
        store.keep(&hash("aaaaaaaa"), "tool_output", "aaaaaaaa", "a");
        store.keep(&hash("bbbbbbbb"), "tool_output", "bbbbbbbb", "b");
        assert_eq!(store.len(), 2);
        store.keep(&hash("cccccccc"), "tool_output", "cccccccc", "c");
        assert!(store.get(&id(&hash("aaaaaaaa"))).is_none());
        let kept = store.get(&id(&hash("cccccccc"))).unwrap();
        assert_eq!((&*kept.original, &*kept.replacement), ("cccccccc", "c"));
        store.keep(&hash("huge"), "x", &"h".repeat(50), "");
        assert!(store.get(&id(&hash("huge"))).is_none());
        assert!(is_id(&id(&hash("x"))) && !is_id("../../etc/passwd"));
        let fetched = format!(
            "Chunk ID: 1\nOutput:\n{}log",
            fetched_header(&id(&hash("x")))
        );
        assert!(is_fetched(&fetched));
        assert!(!is_fetched(
            "[… original 123, whole as the client sent it …]"
        ));
    }
}

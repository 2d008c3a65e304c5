//! The providers' prompt caches, as the mock plays them (`MockConfig::prompt_cache`).
//!
//! Anthropic's: a request's blocks in render order (tools, system, then each message's
//! content), each prefix named by a hash of the blocks up to it. A `cache_control` mark
//! writes its prefix (when it is at least [`MIN_TOKENS`] long) for [`TTL`]; a later request
//! reads the longest written prefix found at one of its marks or up to [`LOOKBACK`] blocks
//! before one.
//!
//! Gemini's implicit cache ([`PromptCache::account_implicit`]): no marks; every request
//! writes its whole prompt (when at least [`IMPLICIT_MIN_TOKENS`] long) and reads the longest
//! prefix, at a block boundary, that an earlier request wrote.
//!
//! Tokens are the mock's estimate, a quarter of the block's bytes.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Anthropic's default (5-minute) cache lifetime, renewed by each read.
pub const TTL: Duration = Duration::from_secs(300);
/// Blocks before a mark checked for a written prefix.
pub const LOOKBACK: usize = 20;
/// The smallest prefix written (Sonnet's).
pub const MIN_TOKENS: u64 = 1024;
/// The smallest prompt Gemini's implicit cache keeps (2.5 Flash's).
pub const IMPLICIT_MIN_TOKENS: u64 = 1024;

#[derive(Default)]
pub struct PromptCache {
    written: Mutex<HashMap<u64, Instant>>,
}

/// What a request read from the cache and wrote to it, in tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Accounted {
    pub read: u64,
    pub written: u64,
}

impl PromptCache {
    /// Reads and writes the cache for a Messages request body.
    pub fn account(&self, body: &[u8]) -> Accounted {
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return Accounted::default();
        };
        let blocks = blocks(&request);
        let mut hashes = Vec::with_capacity(blocks.len());
        let mut ends = Vec::with_capacity(blocks.len());
        let mut hasher = DefaultHasher::new();
        let mut tokens = 0;
        for (text, _) in &blocks {
            text.hash(&mut hasher);
            hashes.push(hasher.finish());
            tokens += (text.len() as u64).div_ceil(4);
            ends.push(tokens);
        }
        let marks: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter_map(|(i, (_, marked))| marked.then_some(i))
            .collect();
        let now = Instant::now();
        let mut written = self
            .written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        written.retain(|_, at| now.duration_since(*at) < TTL);
        let hit = marks
            .iter()
            .filter_map(|&m| {
                (m.saturating_sub(LOOKBACK)..=m)
                    .rev()
                    .find(|&i| written.contains_key(&hashes[i]))
            })
            .max();
        if let Some(i) = hit {
            written.insert(hashes[i], now);
        }
        let read = hit.map_or(0, |i| ends[i]);
        let mut furthest = read;
        for &m in &marks {
            if ends[m] >= MIN_TOKENS && ends[m] > read {
                written.insert(hashes[m], now);
                furthest = furthest.max(ends[m]);
            }
        }
        Accounted {
            read,
            written: furthest - read,
        }
    }
}

impl PromptCache {
    /// Reads and writes Gemini's implicit cache for a prompt given as its blocks in order
    /// (whatever comes before the turns, then each turn). Only reads are reported by Gemini;
    /// `written` says what this request added.
    pub fn account_implicit(&self, blocks: &[String]) -> Accounted {
        let mut hasher = DefaultHasher::new();
        // Apart from the Messages prefixes, whatever the texts.
        "gemini-implicit".hash(&mut hasher);
        let mut boundaries = Vec::with_capacity(blocks.len());
        let mut tokens = 0;
        for block in blocks {
            block.hash(&mut hasher);
            tokens += (block.len() as u64).div_ceil(4);
            boundaries.push((hasher.finish(), tokens));
        }
        let now = Instant::now();
        let mut written = self
            .written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        written.retain(|_, at| now.duration_since(*at) < TTL);
        let hit = boundaries
            .iter()
            .rev()
            .find(|(hash, _)| written.contains_key(hash))
            .copied();
        if let Some((hash, _)) = hit {
            written.insert(hash, now);
        }
        let read = hit.map_or(0, |(_, end)| end);
        let mut added = 0;
        if let Some(&(hash, end)) = boundaries.last() {
            if end >= IMPLICIT_MIN_TOKENS && end > read {
                written.insert(hash, now);
                added = end - read;
            }
        }
        Accounted {
            read,
            written: added,
        }
    }
}

/// The request's blocks in render order: each one's canonical text (its JSON without the
/// mark, a message's block with its role) and whether it carries a mark.
fn blocks(request: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |v: &Value, role: &str| {
        let marked = v.get("cache_control").is_some();
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove("cache_control");
        }
        out.push((format!("{role}:{v}"), marked));
    };
    for tool in request["tools"].as_array().into_iter().flatten() {
        push(tool, "tool");
    }
    match &request["system"] {
        Value::String(s) => push(&serde_json::json!({"type": "text", "text": s}), "system"),
        Value::Array(blocks) => blocks.iter().for_each(|b| push(b, "system")),
        _ => {}
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("");
        match &message["content"] {
            Value::String(s) => push(&serde_json::json!({"type": "text", "text": s}), role),
            Value::Array(blocks) => blocks.iter().for_each(|b| push(b, role)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(history: &[&str], mark_last: bool) -> Vec<u8> {
        let mut messages: Vec<Value> = history
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": [{"type": "text", "text": t}]}))
            .collect();
        if mark_last {
            let last = messages.len() - 1;
            messages[last]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"system": [{"type": "text", "text": "s".repeat(8000), "cache_control": {"type": "ephemeral"}}], "messages": messages})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn an_implicit_prompt_is_written_whole_then_read_up_to_the_longest_written_boundary() {
        let cache = PromptCache::default();
        let system = "s".repeat(8000);
        let first = cache.account_implicit(&[system.clone(), "q1".to_owned()]);
        assert_eq!(first.read, 0);
        assert_eq!(first.written, 2000 + 1);
        // The next turn extends the first: it reads all of it.
        let second = cache.account_implicit(&[
            system.clone(),
            "q1".to_owned(),
            "a1".to_owned(),
            "q2".to_owned(),
        ]);
        assert_eq!(second.read, first.written);
        assert_eq!(second.written, 2);
        // A different last turn reads only up to where the prompts part.
        let third = cache.account_implicit(&[system.clone(), "q1".to_owned(), "other".to_owned()]);
        assert_eq!(third.read, 2001);
        // Short prompts are never written.
        let short = PromptCache::default();
        short.account_implicit(&["x".to_owned()]);
        assert_eq!(short.account_implicit(&["x".to_owned()]).read, 0);
    }

    #[test]
    fn a_marked_prefix_is_written_once_then_read() {
        let cache = PromptCache::default();
        let first = cache.account(&turn(&["q1"], true));
        assert_eq!(first.read, 0);
        assert!(first.written > 2000);
        // The next turn reads what the first wrote and writes only what it adds.
        let second = cache.account(&turn(&["q1", "a1", "q2"], true));
        assert_eq!(second.read, first.written);
        assert!(second.written > 0 && second.written < 100, "{second:?}");
        // Without marks nothing is read or written.
        let mut plain: Value = serde_json::from_slice(&turn(&["q1"], false)).unwrap();
        plain["system"][0]
            .as_object_mut()
            .unwrap()
            .remove("cache_control");
        let plain = plain.to_string();
        assert_eq!(
            PromptCache::default().account(plain.as_bytes()),
            Accounted::default()
        );
    }
}

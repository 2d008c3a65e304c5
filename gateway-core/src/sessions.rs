//! Sessions and the per-turn cache-break detector.
//!
//! Every request belongs to a session: the agent's own id from its headers, else one
//! derived from the model and the first user message ([`derived_id`]), which every turn of
//! a conversation repeats, so an SDK script's turns group too.
//!
//! The detector keeps, per session and model (bounded: the least recently seen are
//! forgotten past [`KEPT`]), what the previous turn left in the provider's prompt cache
//! (its cache reads plus writes) and a [`Print`] of the request twice over: as the client
//! sent it and as the gateway forwarded it (after the passes, before cache breakpoints). A
//! turn that reads less from the cache than the previous one left there, by more than
//! [`TOLERANCE_TOKENS`], is a cache break, with its [`Cause`]: the client changed its
//! earlier messages or its system prompt and tools; or it did not but what the gateway
//! forwarded for them changed (the gateway's own rewrite broke the prefix, which it never
//! should); or neither, and the provider let the prefix go (expiry, eviction).
//!
//! A print is a hash per message, so a turn costs one parse of the body and one pass of
//! a fast hash over its bytes; `cache_control` marks are left out of the hash, since an
//! agent moves its marks every turn without changing what the provider caches. Prints are
//! taken only when they can matter — the provider reported prompt-cache use on this turn,
//! or the session's previous turn left something cached — so traffic that never touches a
//! prompt cache pays a reference count per body and nothing else.

use std::hash::Hasher;
use std::num::NonZeroUsize;
use std::sync::Mutex;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::dialect::Dialect;
use crate::usage::Usage;

/// Sessions the detector remembers; past this the least recently seen is forgotten.
pub const KEPT: usize = 4096;

/// Tokens a turn may read short of what the previous turn left cached without it counting
/// as a break: providers cache in blocks (OpenAI in steps of 128 tokens).
pub const TOLERANCE_TOKENS: u64 = 128;

/// Prefix of a derived session id, so it is never taken for an agent's own.
pub const DERIVED_PREFIX: &str = "h-";

/// A session id for a request without the agent's own: `h-` and 16 hex digits of XXH3
/// over the model and the first user message's content as sent (or a Responses string
/// input; the sniffer notes where it is), which every turn of a conversation repeats byte
/// for byte. Every such request pays for this, so the hash is a fast one of a published
/// algorithm (the same id on every replica and after every upgrade), not a cryptographic
/// one: an id names a conversation, it guards nothing.
pub fn derived_id(model: &str, first_user: &[u8]) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(model.as_bytes());
    hasher.update(&[0]);
    hasher.update(first_user);
    let hash = hasher.digest();
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = String::with_capacity(DERIVED_PREFIX.len() + 16);
    id.push_str(DERIVED_PREFIX);
    for shift in (0..16).rev() {
        id.push(char::from(HEX[(hash >> (shift * 4)) as usize & 0xf]));
    }
    id
}

/// Why a turn's cached prefix shrank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The client sent its earlier messages unchanged, but the gateway forwarded them
    /// differently than on the previous turn: its own rewrite broke the prefix.
    Gateway,
    /// The client changed an earlier message, its system prompt or its tools.
    Client,
    /// Neither changed: the provider let the prefix go (expiry, eviction).
    Provider,
}

impl Cause {
    pub const ALL: [Cause; 3] = [Cause::Gateway, Cause::Client, Cause::Provider];

    /// The name in the ledger's `cache_break` column and the metric's `cause` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Gateway => "gateway",
            Cause::Client => "client",
            Cause::Provider => "provider",
        }
    }
}

/// A request's shape for prefix comparison: a hash of what precedes the messages (system
/// prompt, instructions, tools) and one per message, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Print {
    pub preamble: u64,
    pub messages: Vec<u64>,
}

impl Print {
    /// Whether this request keeps `earlier`'s prefix: the same preamble, and `earlier`'s
    /// messages first, unchanged.
    pub fn extends(&self, earlier: &Print) -> bool {
        self.preamble == earlier.preamble && self.messages.starts_with(&earlier.messages)
    }
}

/// The fields a print reads, in any dialect.
#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    system: Option<&'a RawValue>,
    #[serde(borrow)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
    #[serde(borrow)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    /// Gemini's system prompt and messages.
    #[serde(rename = "systemInstruction", alias = "system_instruction", borrow)]
    system_instruction: Option<&'a RawValue>,
    #[serde(borrow)]
    contents: Option<Vec<&'a RawValue>>,
}

/// The print of a request body in `dialect`, or `None` when it is not a JSON object.
pub fn print(dialect: Dialect, body: &[u8]) -> Option<Print> {
    let parsed: Body<'_> = serde_json::from_slice(body).ok()?;
    let mut preamble = std::hash::DefaultHasher::new();
    for (tag, part) in [
        (b's', parsed.system.or(parsed.system_instruction)),
        (b'i', parsed.instructions),
        (b't', parsed.tools),
    ] {
        if let Some(raw) = part {
            preamble.write_u8(tag);
            hash_unmarked(&mut preamble, raw.get().as_bytes());
        }
    }
    let one = |raw: &RawValue| {
        let mut h = std::hash::DefaultHasher::new();
        hash_unmarked(&mut h, raw.get().as_bytes());
        h.finish()
    };
    let messages = match (dialect, parsed.messages, parsed.input) {
        (Dialect::OpenAiResponses, _, Some(input)) if input.get().starts_with('[') => {
            let items: Vec<&RawValue> = serde_json::from_str(input.get()).ok()?;
            items.into_iter().map(one).collect()
        }
        (Dialect::OpenAiResponses, _, Some(input)) => vec![one(input)],
        (Dialect::Gemini, _, _) => parsed
            .contents
            .unwrap_or_default()
            .into_iter()
            .map(one)
            .collect(),
        (_, Some(messages), _) => messages.into_iter().map(one).collect(),
        _ => Vec::new(),
    };
    Some(Print {
        preamble: preamble.finish(),
        messages,
    })
}

const MARK_KEY: &[u8] = b"\"cache_control\"";

/// Hashes a JSON value's bytes with every `"cache_control": …` member cut out (with the
/// comma that joined it), so a value hashes the same marked or not.
fn hash_unmarked(hasher: &mut impl Hasher, json: &[u8]) {
    if memchr::memmem::find(json, MARK_KEY).is_none() {
        hasher.write(json);
        return;
    }
    let mut kept = Vec::with_capacity(json.len());
    let mut from = 0;
    for cut in marks(json) {
        kept.extend_from_slice(&json[from..cut.start]);
        from = cut.end;
    }
    kept.extend_from_slice(&json[from..]);
    hasher.write(&kept);
}

/// The byte ranges of the `"cache_control": value` members of `json`, each with the comma
/// before it (or, for an object's first member, the comma after it).
fn marks(json: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut cuts = Vec::new();
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => {
                let end = string_end(json, i);
                if &json[i..end] == MARK_KEY {
                    let colon = skip_ws(json, end);
                    if json.get(colon) == Some(&b':') {
                        let value_end = value_end(json, skip_ws(json, colon + 1));
                        let before = json[..i]
                            .iter()
                            .rposition(|b| !b.is_ascii_whitespace())
                            .unwrap_or(0);
                        if json.get(before) == Some(&b',') {
                            cuts.push(before..value_end);
                        } else {
                            let after = skip_ws(json, value_end);
                            let end = if json.get(after) == Some(&b',') {
                                skip_ws(json, after + 1)
                            } else {
                                value_end
                            };
                            cuts.push(i..end);
                        }
                        i = value_end;
                        continue;
                    }
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    cuts
}

/// Where the string starting at `start` (a quote) ends, past its closing quote.
fn string_end(json: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(off) = memchr::memchr2(b'"', b'\\', &json[i.min(json.len())..]) {
        let at = i + off;
        if json[at] == b'\\' {
            i = at + 2;
        } else {
            return at + 1;
        }
    }
    json.len()
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while json.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// Where the JSON value starting at `start` ends.
fn value_end(json: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < json.len() {
        match json[i] {
            b'"' => {
                i = string_end(json, i);
                if depth == 0 {
                    return i;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return i;
                }
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    json.len()
}

/// A request body as it went by, printed only if the detector needs it.
#[derive(Clone, Debug)]
pub struct Sent {
    pub dialect: Dialect,
    pub bytes: Bytes,
}

impl Sent {
    fn print(&self) -> Option<Print> {
        print(self.dialect, &self.bytes)
    }
}

/// One turn of a session, to compare with the next.
#[derive(Clone, Debug)]
pub struct Turn {
    /// The session and the model: an agent's side calls to another model are a
    /// conversation of their own.
    pub key: u64,
    /// The request as the client sent it.
    pub client: Sent,
    /// The request as the gateway forwarded it, after the passes and any translation,
    /// before cache breakpoints (marks that move each turn by design); `None` when it went
    /// on as the client sent it.
    pub forwarded: Option<Sent>,
}

impl Turn {
    pub fn key_of(session: &str, model: &str) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        h.write(session.as_bytes());
        h.write_u8(0);
        h.write(model.as_bytes());
        h.finish()
    }
}

/// What a session's last turn left behind.
struct Last {
    /// Tokens the provider held cached after it: what it read plus what it wrote.
    cached: u64,
    client: Print,
    forwarded: Print,
}

/// Why a turn's prefix differs from the one before it, given the cache shrank between
/// them: each side as the client sent it and as the gateway forwarded it.
pub fn cause(before: (&Print, &Print), now: (&Print, &Print)) -> Cause {
    let ((client_before, forwarded_before), (client, forwarded)) = (before, now);
    if !client.extends(client_before) {
        Cause::Client
    } else if !forwarded.extends(forwarded_before) {
        Cause::Gateway
    } else {
        Cause::Provider
    }
}

/// The detector: each session's last turn, least recently seen forgotten first.
pub struct Sessions {
    last: Mutex<lru::LruCache<u64, Last>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::new(KEPT)
    }
}

impl Sessions {
    pub fn new(capacity: usize) -> Sessions {
        Sessions {
            last: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }

    /// Takes a served turn and the usage the provider reported for it: the cache break it
    /// shows, if any. The turn becomes the session's last.
    pub fn observe(&self, turn: Turn, usage: &Usage) -> Option<Cause> {
        let Turn {
            key,
            client,
            forwarded,
        } = turn;
        let cached = usage.cache_read + usage.cache_write;
        let known = self
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&key);
        // Nothing cached before and nothing now: no break to find, none to find later.
        if !known && cached == 0 {
            return None;
        }
        let client = client.print()?;
        let forwarded = match forwarded {
            Some(sent) => sent.print()?,
            None => client.clone(),
        };
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let found = match last.peek(&key) {
            Some(before) if usage.cache_read + TOLERANCE_TOKENS < before.cached => Some(cause(
                (&before.client, &before.forwarded),
                (&client, &forwarded),
            )),
            _ => None,
        };
        last.put(
            key,
            Last {
                cached,
                client,
                forwarded,
            },
        );
        found
    }

    /// Sessions remembered now.
    pub fn len(&self) -> usize {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn usage(read: u64, write: u64) -> Usage {
        Usage {
            input: read + write + 10,
            output: 5,
            cache_read: read,
            cache_write: write,
            reasoning: 0,
        }
    }

    fn anthropic(messages: &[&str]) -> Vec<u8> {
        let messages: Vec<_> = messages
            .iter()
            .enumerate()
            .map(|(i, text)| {
                json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": text})
            })
            .collect();
        json!({"model": "m", "system": "be brief", "messages": messages})
            .to_string()
            .into_bytes()
    }

    fn turn(client: &[u8], forwarded: &[u8]) -> Turn {
        Turn {
            key: Turn::key_of("s1", "m"),
            client: Sent {
                dialect: Dialect::AnthropicMessages,
                bytes: Bytes::copy_from_slice(client),
            },
            forwarded: (client != forwarded).then(|| Sent {
                dialect: Dialect::AnthropicMessages,
                bytes: Bytes::copy_from_slice(forwarded),
            }),
        }
    }

    #[test]
    fn traffic_without_a_prompt_cache_is_never_printed_nor_kept() {
        let sessions = Sessions::default();
        // Not even JSON: were it printed, the turn would be dropped before it was kept.
        let t = Turn {
            key: Turn::key_of("s1", "m"),
            client: Sent {
                dialect: Dialect::AnthropicMessages,
                bytes: Bytes::from_static(b"not json"),
            },
            forwarded: None,
        };
        assert_eq!(sessions.observe(t, &usage(0, 0)), None);
        assert!(sessions.is_empty());
        let one = anthropic(&["q1"]);
        assert_eq!(sessions.observe(turn(&one, &one), &usage(0, 2000)), None);
        assert_eq!(sessions.len(), 1);
    }

    #[test]
    fn marks_do_not_change_a_print() {
        let plain = br#"{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"a \"cache_control\": x"}]}]}"#;
        let marked = br#"{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"cache_control": {"type":"ephemeral", "ttl": "1h"}, "type":"text","text":"a \"cache_control\": x"}]}]}"#;
        let a = print(Dialect::AnthropicMessages, plain).unwrap();
        let b = print(Dialect::AnthropicMessages, marked).unwrap();
        assert_eq!(a, b);
        let other = br#"{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"b"}]}]}"#;
        assert_ne!(a, print(Dialect::AnthropicMessages, other).unwrap());
    }

    #[test]
    fn prints_read_each_dialect_messages() {
        let chat =
            br#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}"#;
        assert_eq!(print(Dialect::OpenAiChat, chat).unwrap().messages.len(), 2);
        let responses = br#"{"instructions":"s","input":[{"role":"user","content":"u"},{"type":"function_call_output","call_id":"c","output":"o"}]}"#;
        assert_eq!(
            print(Dialect::OpenAiResponses, responses)
                .unwrap()
                .messages
                .len(),
            2
        );
        let text = br#"{"input":"hello"}"#;
        assert_eq!(
            print(Dialect::OpenAiResponses, text)
                .unwrap()
                .messages
                .len(),
            1
        );
        assert!(print(Dialect::OpenAiChat, b"[1]").is_none());
    }

    #[test]
    fn a_growing_prefix_is_no_break() {
        let sessions = Sessions::default();
        let one = anthropic(&["q1"]);
        let two = anthropic(&["q1", "a1", "q2"]);
        assert_eq!(sessions.observe(turn(&one, &one), &usage(0, 2000)), None);
        assert_eq!(sessions.observe(turn(&two, &two), &usage(2000, 300)), None);
        // Short by less than the tolerance: the provider's blocks, not a break.
        assert_eq!(sessions.observe(turn(&two, &two), &usage(2200, 0)), None);
    }

    #[test]
    fn an_edited_earlier_message_is_the_clients_break() {
        let sessions = Sessions::default();
        let one = anthropic(&["q1", "a1", "q2"]);
        let edited = anthropic(&["q1 (edited)", "a1", "q2", "a2", "q3"]);
        sessions.observe(turn(&one, &one), &usage(0, 2000));
        assert_eq!(
            sessions.observe(turn(&edited, &edited), &usage(0, 2500)),
            Some(Cause::Client)
        );
    }

    #[test]
    fn a_rewrite_of_an_unchanged_message_is_the_gateways_break() {
        let sessions = Sessions::default();
        let one = anthropic(&["q1", "a1", "q2"]);
        let two = anthropic(&["q1", "a1", "q2", "a2", "q3"]);
        // The gateway forwarded the first message differently on the second turn.
        let two_rewritten = anthropic(&["q1 compacted", "a1", "q2", "a2", "q3"]);
        sessions.observe(turn(&one, &one), &usage(0, 2000));
        assert_eq!(
            sessions.observe(turn(&two, &two_rewritten), &usage(0, 2500)),
            Some(Cause::Gateway)
        );
    }

    #[test]
    fn an_unchanged_prefix_read_short_is_the_providers_break() {
        let sessions = Sessions::default();
        let one = anthropic(&["q1", "a1", "q2"]);
        let two = anthropic(&["q1", "a1", "q2", "a2", "q3"]);
        sessions.observe(turn(&one, &one), &usage(1500, 500));
        assert_eq!(
            sessions.observe(turn(&two, &two), &usage(0, 2500)),
            Some(Cause::Provider)
        );
    }

    #[test]
    fn sessions_are_kept_apart_and_bounded() {
        let sessions = Sessions::new(2);
        let one = anthropic(&["q1"]);
        for s in ["a", "b", "c"] {
            let t = Turn {
                key: Turn::key_of(s, "m"),
                ..turn(&one, &one)
            };
            assert_eq!(sessions.observe(t, &usage(0, 2000)), None);
        }
        assert_eq!(sessions.len(), 2);
        // "a" was forgotten: its next turn is a first turn, not a break.
        let again = Turn {
            key: Turn::key_of("a", "m"),
            ..turn(&one, &one)
        };
        assert_eq!(sessions.observe(again, &usage(0, 0)), None);
    }

    /// The id as the gateway derives it: from where the sniffer found the first user message.
    fn derived(body: &[u8]) -> Option<String> {
        let sniffed = trimgate_wire::sniff::sniff(body).unwrap();
        sniffed
            .first_user
            .map(|span| derived_id(&sniffed.model, &body[span]))
    }

    #[test]
    fn derived_ids_follow_the_first_user_message() {
        let one = anthropic(&["q1"]);
        let later = anthropic(&["q1", "a1", "q2"]);
        let other = anthropic(&["another task"]);
        let id = derived(&one).unwrap();
        assert!(id.starts_with("h-") && id.len() == 18, "{id}");
        assert_eq!(derived(&later).as_ref(), Some(&id));
        assert_ne!(derived(&other).as_ref(), Some(&id));
        let mut renamed: serde_json::Value = serde_json::from_slice(&one).unwrap();
        renamed["model"] = json!("m2");
        assert_ne!(derived(renamed.to_string().as_bytes()).as_ref(), Some(&id));
    }

    #[test]
    fn derived_ids_in_the_openai_dialects() {
        let chat = |n: usize| {
            let mut messages = vec![
                json!({"role": "system", "content": "be brief"}),
                json!({"content": [{"type": "text", "text": "q1"}], "role": "user"}),
            ];
            for i in 0..n {
                messages.push(json!({"role": "assistant", "content": format!("a{i}")}));
                messages.push(json!({"role": "user", "content": format!("q{}", i + 2)}));
            }
            json!({"model": "m", "messages": messages}).to_string()
        };
        let first = derived(chat(0).as_bytes()).unwrap();
        assert_eq!(derived(chat(3).as_bytes()), Some(first.clone()));
        let system_only = br#"{"model":"m","messages":[{"role":"system","content":"s"}]}"#;
        assert_eq!(derived(system_only), None);
        let text = br#"{"model":"m","input":"hello"}"#;
        let items = br#"{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"o"},{"role":"user","content":"hello"}]}"#;
        let (a, b) = (derived(text).unwrap(), derived(items).unwrap());
        assert!(a.starts_with("h-") && b.starts_with("h-"));
        assert_ne!(a, first);
    }
}

//! A request body's secrets, found in every string value of its JSON whatever the dialect:
//! user and system text, tool results, and the tool calls of earlier turns, which carry
//! the values the answers were given back (an agent's history holds them, and sends them
//! again on every turn).
//!
//! The body is walked once as bytes (no tree is built); each string value's escaped
//! content is searched as decoded text. What a provider must get back as it sent it is
//! left alone: ids, signatures of reasoning blocks, encrypted reasoning, inline media
//! (`data`, `data:` URLs), and the fields that name a model, a role or a type.

use std::ops::Range;
use std::sync::Arc;

use super::clean::Clean;
use super::kind::SecretKind;
use super::redact::{splice, spot};
use super::rules::Rules;
use super::vault::Vault;

/// Keys whose string values are never searched: they are the provider's own tokens,
/// identifiers, or media, and a changed byte in them breaks the request.
const SKIPPED: [&str; 18] = [
    "model",
    "type",
    "role",
    "id",
    "call_id",
    "tool_call_id",
    "tool_use_id",
    "signature",
    "thoughtSignature",
    "thought_signature",
    "encrypted_content",
    "data",
    "media_type",
    "mime_type",
    "mimeType",
    "status",
    "name",
    "previous_response_id",
];

/// A secret found in a body: its kind, and where — a path to the string
/// (`messages[3].content[0].text`) and the line within its text, from 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub kind: SecretKind,
    pub path: String,
    pub line: usize,
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, line {}", self.path, self.line)
    }
}

/// One secret in the body: the span of its escaped bytes, and its decoded value.
struct Hit {
    span: Range<usize>,
    kind: SecretKind,
    value: String,
    found: Found,
}

/// A redacted body: the bytes to send (`None` when nothing was found) and what was found.
#[derive(Debug, Default)]
pub struct Redacted {
    pub body: Option<Vec<u8>>,
    pub found: Vec<Found>,
}

/// The secrets in `body`, with where they are; nothing when it is not UTF-8 JSON text.
pub fn find(body: &[u8], rules: &Rules) -> Vec<Found> {
    scan(body, rules).into_found()
}

/// The secrets of a body, found, not yet replaced.
#[derive(Default)]
pub struct Hits(Vec<Hit>);

impl Hits {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn into_found(self) -> Vec<Found> {
        self.0.into_iter().map(|h| h.found).collect()
    }

    /// `body` (the one these were found in) with each secret replaced by its
    /// placeholder, the values kept in `vault` under `scope`.
    pub fn redact(self, body: &[u8], vault: &mut Vault, scope: &str) -> Redacted {
        if self.0.is_empty() {
            return Redacted::default();
        }
        let secrets = self
            .0
            .iter()
            .map(|h| (h.span.clone(), h.kind, h.value.as_str()));
        let out = splice(body, secrets, vault, scope);
        Redacted {
            body: Some(out),
            found: self.into_found(),
        }
    }
}

/// Finds the secrets in `body`; the vault is not needed (nor held) for it.
pub fn scan(body: &[u8], rules: &Rules) -> Hits {
    Hits(hits(body, rules, &[], None))
}

/// As [`scan`], and also finds each of `known` (values the scope was given back in
/// answers) wherever it stands, whether a rule would find it there or not. Strings
/// `clean` holds are not searched by the rules again; those found clean go into it.
pub fn scan_with(
    body: &[u8],
    rules: &Rules,
    known: &[(SecretKind, Arc<str>)],
    clean: &Clean,
) -> Hits {
    Hits(hits(body, rules, known, Some(clean)))
}

/// Values shorter than this are not searched for by value: too likely to be a word.
const MIN_KNOWN_LEN: usize = 8;

/// The kinds found and how many of each, as the ledger keeps them
/// (`github_token:1,env_secret:2`).
pub fn tally(found: &[Found]) -> String {
    let mut counts: Vec<(SecretKind, usize)> = Vec::new();
    for f in found {
        match counts.iter_mut().find(|(k, _)| *k == f.kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((f.kind, 1)),
        }
    }
    counts.sort();
    counts
        .iter()
        .map(|(k, n)| format!("{}:{n}", k.as_str()))
        .collect::<Vec<_>>()
        .join(",")
}

/// Where the walk is: in an object (the key of the value being read) or an array (the
/// index of the value being read).
enum Level {
    Object { key: Option<Range<usize>> },
    Array { index: usize },
}

fn hits(
    body: &[u8],
    rules: &Rules,
    known: &[(SecretKind, Arc<str>)],
    clean: Option<&Clean>,
) -> Vec<Hit> {
    let known: Vec<&(SecretKind, Arc<str>)> = known
        .iter()
        .filter(|(_, v)| v.len() >= MIN_KNOWN_LEN)
        .collect();
    let bytes = body;
    let mut stack: Vec<Level> = Vec::new();
    let mut hits = Vec::new();
    // Every quote of the body in one vector search; between a string's end and the next
    // string's start there are only a few bytes of structure to read one by one.
    let mut quotes = memchr::memchr_iter(b'"', bytes);
    let mut i = 0;
    while let Some(open) = quotes.next() {
        for &b in &bytes[i..open] {
            match b {
                b'{' => stack.push(Level::Object { key: None }),
                b'[' => stack.push(Level::Array { index: 0 }),
                b'}' | b']' => {
                    stack.pop();
                }
                b',' => match stack.last_mut() {
                    Some(Level::Array { index }) => *index += 1,
                    Some(Level::Object { key }) => *key = None,
                    None => {}
                },
                _ => {}
            }
        }
        // The string's end: the next quote no backslash escapes.
        let Some(end) = quotes.by_ref().find(|&q| !escaped_at(bytes, q)) else {
            return hits;
        };
        let content = open + 1..end;
        i = end + 1;
        match stack.last_mut() {
            Some(Level::Object { key }) if key.is_none() => {
                *key = Some(content);
                continue;
            }
            _ => {}
        }
        let raw = &bytes[content.clone()];
        if raw.len() < MIN_SECRET_LEN || skipped(bytes, &stack) || raw.starts_with(b"data:") {
            continue;
        }
        let hash = clean.map(|_| Clean::hash(rules.seed, raw));
        let seen = matches!((clean, hash), (Some(c), Some(h)) if c.contains(h));
        if seen && known.is_empty() {
            continue;
        }
        let Ok(escaped) = std::str::from_utf8(raw) else {
            continue;
        };
        let before = hits.len();
        let rules = if seen { None } else { Some(rules) };
        search(
            bytes,
            escaped,
            content.start,
            &stack,
            rules,
            &known,
            &mut hits,
        );
        if let (false, true, Some(c), Some(h)) = (seen, hits.len() == before, clean, hash) {
            c.insert(h);
        }
    }
    hits
}

/// Whether the quote at `at` is escaped: an odd run of backslashes before it.
fn escaped_at(bytes: &[u8], at: usize) -> bool {
    bytes[..at]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count()
        % 2
        == 1
}

/// Whether the value being read sits under a key that is never searched.
fn skipped(bytes: &[u8], stack: &[Level]) -> bool {
    match stack.last() {
        Some(Level::Object { key: Some(key) }) => {
            let key = &bytes[key.clone()];
            SKIPPED.iter().any(|s| s.as_bytes() == key)
        }
        _ => false,
    }
}

/// No rule finds a secret shorter than this: a string this short is not searched.
const MIN_SECRET_LEN: usize = 8;

/// The secrets in one string value (its escaped content, which starts at `at` in the
/// body): what the rules find, and the known values wherever they stand outside those.
fn search(
    body: &[u8],
    escaped: &str,
    at: usize,
    stack: &[Level],
    rules: Option<&Rules>,
    known: &[&(SecretKind, Arc<str>)],
    hits: &mut Vec<Hit>,
) {
    for s in spot(escaped, rules, known) {
        hits.push(Hit {
            span: at + s.span.start..at + s.span.end,
            kind: s.kind,
            value: s.value,
            found: Found {
                kind: s.kind,
                path: path(body, stack),
                line: s.line,
            },
        });
    }
}

/// The path of the value being read: `messages[3].content[0].text`.
fn path(body: &[u8], stack: &[Level]) -> String {
    let mut out = String::new();
    for level in stack {
        match level {
            Level::Object { key: Some(key) } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&String::from_utf8_lossy(&body[key.clone()]));
            }
            Level::Object { key: None } => {}
            Level::Array { index } => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    if out.is_empty() {
        out.push_str("the body");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::placeholder::{find_placeholders, Placeholders};
    use std::sync::Mutex;

    const GITHUB: &str = "ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5q";

    fn vault() -> Mutex<Vault> {
        Mutex::new(Vault::new(Placeholders::new([9; 32]), 64))
    }

    fn rules() -> &'static Rules {
        crate::guard::tests::rules()
    }

    fn redact(body: &[u8], vault: &Mutex<Vault>, scope: &str) -> Redacted {
        scan(body, rules()).redact(body, &mut vault.lock().unwrap(), scope)
    }

    /// A tool result holding a `.env` file, JSON-escaped in a Chat body: the values go,
    /// every other byte stays, and the body is still the same JSON with placeholders.
    #[test]
    fn chat_tool_result_redacted_in_place() {
        let env = format!("GITHUB_TOKEN={GITHUB}\nDB_PASSWORD=Zx9-pQ2_mL7vB4\nDEBUG=true\n");
        let body = serde_json::json!({
            "model": "gpt-5",
            "messages": [
                {"role": "user", "content": "read .env"},
                {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                  "function": {"name": "read", "arguments": "{\"path\":\".env\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": env},
            ]
        })
        .to_string();
        let vault = vault();
        let out = redact(body.as_bytes(), &vault, "s");
        let sent = String::from_utf8(out.body.unwrap()).unwrap();
        assert!(!sent.contains(GITHUB) && !sent.contains("Zx9-pQ2_mL7vB4"));
        let parsed: serde_json::Value = serde_json::from_str(&sent).unwrap();
        let content = parsed["messages"][2]["content"].as_str().unwrap();
        assert!(content.contains("DEBUG=true"));
        assert_eq!(find_placeholders(content).len(), 2);
        assert_eq!(
            out.found
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>(),
            ["messages[2].content", "messages[2].content"]
        );
        assert_eq!(tally(&out.found), "github_token:1,env_secret:1");
        // Restored, the text is the client's again.
        let v = vault.lock().unwrap();
        assert_eq!(
            v.values_of("s")
                .restore(content, crate::guard::Escape::Plain),
            env
        );
    }

    /// A tool call of an earlier turn, whose arguments (JSON text inside a JSON string)
    /// carry a restored value, is redacted again: the same placeholder as before.
    #[test]
    fn earlier_tool_call_arguments_redacted_to_the_same_placeholder() {
        let vault = vault();
        let first = serde_json::json!({"messages": [{"role": "tool", "content": format!("token: {GITHUB}")}]}).to_string();
        let one = redact(first.as_bytes(), &vault, "s");
        let one = String::from_utf8(one.body.unwrap()).unwrap();
        let args =
            serde_json::json!({"command": format!("gh auth login --with-token <<< \"{GITHUB}\"")})
                .to_string();
        let second = serde_json::json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": args}}]}]}).to_string();
        let two = redact(second.as_bytes(), &vault, "s");
        assert_eq!(two.found.len(), 1);
        assert_eq!(
            two.found[0].path,
            "messages[0].tool_calls[0].function.arguments"
        );
        let two = String::from_utf8(two.body.unwrap()).unwrap();
        let p1 = &one[find_placeholders(&one)[0].clone()];
        assert!(two.contains(p1), "{two}");
        let parsed: serde_json::Value = serde_json::from_str(&two).unwrap();
        let inner: serde_json::Value = serde_json::from_str(
            parsed["messages"][0]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert!(inner["command"].as_str().unwrap().contains(p1));
    }

    /// A value given back in an answer is replaced wherever the agent sends it again, even
    /// bare in a command where no rule would find it; short values are not searched for.
    #[test]
    fn known_values_are_replaced_wherever_they_stand() {
        let vault = vault();
        let password = "3zgUc2-N4Desicqr";
        let first = serde_json::json!({"messages": [{"role": "tool", "content": format!("DATABASE_URL=postgres://app:{password}@db:5432/app")}]}).to_string();
        redact(first.as_bytes(), &vault, "s");
        let known = vault.lock().unwrap().values_of("s").known();
        assert_eq!(known.len(), 1);
        assert_eq!(known[0].0, SecretKind::DbPassword);
        let args = serde_json::json!({"cmd": format!("printf '%s\\n' '{password}' > out.txt")})
            .to_string();
        let second = serde_json::json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": args}}]}]}).to_string();
        assert!(
            scan(second.as_bytes(), rules()).is_empty(),
            "no rule finds it bare"
        );
        let clean = Clean::default();
        let out = scan_with(second.as_bytes(), rules(), &known, &clean).redact(
            second.as_bytes(),
            &mut vault.lock().unwrap(),
            "s",
        );
        let sent = String::from_utf8(out.body.unwrap()).unwrap();
        assert!(!sent.contains(password), "{sent}");
        assert!(sent.contains("TRIMGATE_SECRET_DB_PASSWORD_"));
        let short = [(SecretKind::EnvSecret, Arc::<str>::from("hunter2"))];
        assert!(scan_with(br#"{"a":"say hunter2"}"#, rules(), &short, &clean).is_empty());
    }

    /// A string found clean is not searched again; a string with a secret always is; and
    /// other rules search what one set found clean.
    #[test]
    fn clean_strings_are_remembered() {
        let clean = Clean::default();
        let body = serde_json::json!({"messages": [
            {"role": "user", "content": "the api token rotates weekly, see the docs"},
            {"role": "tool", "content": format!("GITHUB_TOKEN={GITHUB}")},
        ]})
        .to_string();
        let first = scan_with(body.as_bytes(), rules(), &[], &clean).into_found();
        assert_eq!(first.len(), 1);
        let text = "the api token rotates weekly, see the docs";
        assert!(clean.contains(Clean::hash(rules().seed, text.as_bytes())));
        // Found again on the next turn: strings with secrets are never taken as clean.
        let again = scan_with(body.as_bytes(), rules(), &[], &clean).into_found();
        assert_eq!(again, first);
        let other = Rules::with(&[], &[], &[]).unwrap();
        assert!(!clean.contains(Clean::hash(other.seed, text.as_bytes())));
    }

    /// Strings are read whole past escaped quotes and backslashes wherever they fall: the
    /// walk's paths stay right after them.
    #[test]
    fn escaped_quotes_do_not_end_strings() {
        for len in 0..40 {
            for at in 0..len {
                let mut inner: Vec<u8> = vec![b'a'; len];
                inner[at] = b'"';
                if at + 1 < len {
                    inner[at + 1] = b'\\';
                }
                let body = serde_json::json!({
                    "a": String::from_utf8(inner).unwrap(),
                    "b": [1, {"c": format!("GITHUB_TOKEN={GITHUB}")}],
                })
                .to_string();
                let found = find(body.as_bytes(), rules());
                assert_eq!(found.len(), 1, "{body}");
                assert_eq!(found[0].path, "b[1].c", "{body}");
            }
        }
        assert!(find(br#"{"a":"abc\"#, rules()).is_empty());
    }

    /// Ids, signatures, media and model names are never touched, even when they look
    /// like secrets.
    #[test]
    fn skipped_fields_stay() {
        let body = serde_json::json!({
            "model": "x",
            "messages": [{"role": "assistant", "content": [
                {"type": "thinking", "thinking": "ok", "signature": format!("GITHUB_TOKEN={GITHUB}")},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": format!("token={GITHUB}")}},
            ]}]
        })
        .to_string();
        let vault = vault();
        let out = redact(body.as_bytes(), &vault, "s");
        assert!(out.body.is_none() && out.found.is_empty());
    }

    /// Block mode's report: the kind, the path and the line, never the value.
    #[test]
    fn find_names_path_and_line() {
        let body = serde_json::json!({"input": [{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": format!("line one\nline two\nexport GITHUB_TOKEN={GITHUB}\n")}]}]})
        .to_string();
        let found = find(body.as_bytes(), rules());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, SecretKind::GithubToken);
        assert_eq!(found[0].to_string(), "input[0].content[0].text, line 3");
        assert!(!format!("{found:?}").contains(GITHUB));
    }

    /// A body without secrets comes back as none; so does one that is not JSON text.
    #[test]
    fn nothing_found_nothing_changed() {
        let vault = vault();
        let body = br#"{"model":"m","messages":[{"role":"user","content":"the api key rotates weekly; token counts matter"}]}"#;
        let out = redact(body, &vault, "s");
        assert!(out.body.is_none());
        let out = redact(&[0xff, 0xfe, b'{'], &vault, "s");
        assert!(out.body.is_none());
        assert!(vault.lock().unwrap().is_empty());
    }
}

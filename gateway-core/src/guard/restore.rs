//! Putting the values back into the model's answer before the agent reads it: a whole
//! text, or a stream of deltas, written plain or JSON-escaped.
//!
//! Only placeholders the vault holds for the answer's scope are restored. Any other text
//! of the placeholder's shape (another session's, one the user typed, one the model made
//! up) is left as it is.

use std::collections::HashMap;
use std::sync::Arc;

use super::escape::escape_into;
use super::kind::SecretKind;
use super::placeholder::{placeholder_at, PREFIX};
use super::vault::Vault;

/// How a restored value is written into the text around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// As it is: the text is what the agent reads (a message's decoded content).
    Plain,
    /// Escaped as JSON escapes a string's content: the text is a JSON string's escaped
    /// content (a tool call's arguments, which are JSON text, once decoded from the
    /// response), where a value's `"`, `\` or newline would otherwise break the JSON.
    Json,
    /// Escaped twice: a JSON string inside a JSON string's content (a tool call's
    /// arguments as they stand in a response's raw bytes).
    JsonInJson,
}

impl Escape {
    fn write(self, value: &str, out: &mut String) {
        match self {
            Escape::Plain => out.push_str(value),
            Escape::Json => escape_into(value, out),
            Escape::JsonInJson => {
                let mut once = String::with_capacity(value.len() + 8);
                escape_into(value, &mut once);
                escape_into(&once, out);
            }
        }
    }
}

impl Vault {
    /// What `scope` has sent so far, to restore one answer with (taken when the answer
    /// starts: the vault is not held while it streams).
    pub fn values_of(&self, scope: &str) -> Values {
        Values {
            values: Arc::new(self.of_scope(scope).into_iter().collect()),
        }
    }
}

/// Placeholder → value for one scope, as the vault held them when an answer began.
/// Its `Debug` shows a count only.
#[derive(Clone, Default)]
pub struct Values {
    values: Arc<HashMap<Box<str>, Arc<str>>>,
}

impl Values {
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// `text` with every placeholder of these values replaced, written per `escape`.
    pub fn restore(&self, text: &str, escape: Escape) -> String {
        restore_with(text, escape, |p| self.values.get(p).cloned())
    }

    /// Each value with the kind its placeholder names: what the scope's next requests must
    /// not send as it is, wherever it stands (the answers gave these values back, and an
    /// agent's history sends them again where no rule may find them, bare in a command).
    pub fn known(&self) -> Vec<(SecretKind, Arc<str>)> {
        self.values
            .iter()
            .filter_map(|(placeholder, value)| {
                let tag = placeholder
                    .strip_prefix(PREFIX)?
                    .rsplit_once('_')
                    .map(|(tag, _)| tag)?;
                let kind = SecretKind::ALL.into_iter().find(|k| k.tag() == tag)?;
                Some((kind, value.clone()))
            })
            .collect()
    }

    /// A restorer for one streamed text (a message's deltas, a tool call's arguments).
    pub fn restorer(&self, escape: Escape) -> StreamRestorer {
        let longest = self.values.keys().map(|k| k.len()).max().unwrap_or(0);
        StreamRestorer {
            values: self.values.clone(),
            escape,
            held: String::new(),
            longest,
        }
    }
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Values")
            .field("placeholders", &self.values.len())
            .finish()
    }
}

/// Restores placeholders in an answer that arrives in pieces. A placeholder may be split
/// across deltas anywhere, down to a byte a delta; the restorer holds back only a delta's
/// tail that could still become one of the scope's placeholders, and passes everything
/// else on at once. Its output, concatenated, is what a whole restore of the whole answer
/// gives.
pub struct StreamRestorer {
    values: Arc<HashMap<Box<str>, Arc<str>>>,
    escape: Escape,
    /// The tail held back: a proper prefix of one of `values`' placeholders.
    held: String,
    /// The longest placeholder in `values`: nothing longer is ever held.
    longest: usize,
}

impl StreamRestorer {
    /// The next delta, restored, less any tail held back for the next.
    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        if self.values.is_empty() {
            return std::mem::take(&mut self.held);
        }
        let cut = self.held_from(&self.held);
        let out = restore_with(&self.held[..cut], self.escape, |p| {
            self.values.get(p).cloned()
        });
        self.held.drain(..cut);
        out
    }

    /// Whether a tail is held back, waiting for the next delta.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// What is still held, restored: the answer has ended.
    pub fn finish(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        restore_with(&held, self.escape, |p| self.values.get(p).cloned())
    }

    /// Where the tail to hold back starts in `text` (its length when there is none): the
    /// earliest offset after the last whole placeholder from which the rest is a proper
    /// prefix of a placeholder the scope holds.
    fn held_from(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        let mut last_end = 0;
        let mut from = 0;
        while let Some(offset) = memchr::memmem::find(&bytes[from..], PREFIX.as_bytes()) {
            let start = from + offset;
            match placeholder_at(text, start) {
                Some(end) if self.values.contains_key(&text[start..end]) => {
                    last_end = end;
                    from = end;
                }
                _ => from = start + 1,
            }
        }
        let window = text.len().saturating_sub(self.longest.saturating_sub(1));
        (last_end.max(window)..text.len())
            .find(|&i| bytes[i] == b'T' && self.could_become_one(&text[i..]))
            .unwrap_or(text.len())
    }

    /// Whether more text after `tail` could make it one of the scope's placeholders.
    fn could_become_one(&self, tail: &str) -> bool {
        if tail.len() <= PREFIX.len() {
            return PREFIX.starts_with(tail) && tail.len() < self.longest;
        }
        tail.starts_with(PREFIX)
            && self
                .values
                .keys()
                .any(|k| k.len() > tail.len() && k.starts_with(tail))
    }
}

impl std::fmt::Debug for StreamRestorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRestorer")
            .field("placeholders", &self.values.len())
            .field("escape", &self.escape)
            .field("held", &self.held.len())
            .finish()
    }
}

/// `text` with each placeholder `lookup` knows replaced by its value, written per
/// `escape`; left to right, a placeholder's end fixed by its grammar.
fn restore_with(
    text: &str,
    escape: Escape,
    mut lookup: impl FnMut(&str) -> Option<Arc<str>>,
) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(offset) = memchr::memmem::find(&bytes[from..], PREFIX.as_bytes()) {
        let start = from + offset;
        let known = placeholder_at(text, start)
            .and_then(|end| lookup(&text[start..end]).map(|value| (end, value)));
        match known {
            Some((end, value)) => {
                out.push_str(&text[copied..start]);
                escape.write(&value, &mut out);
                copied = end;
                from = end;
            }
            None => from = start + 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::kind::SecretKind;
    use crate::guard::placeholder::Placeholders;

    fn vault() -> Vault {
        Vault::new(Placeholders::new([5; 32]), 64)
    }

    /// A whole answer gets its values back; other text is untouched.
    #[test]
    fn whole_text() {
        let mut vault = vault();
        let p = vault.keep("s", SecretKind::GithubToken, "ghp_value");
        let answer = format!("Run `gh auth login --with-token <<< {p}` now.");
        assert_eq!(
            vault.values_of("s").restore(&answer, Escape::Plain),
            "Run `gh auth login --with-token <<< ghp_value` now."
        );
        assert_eq!(
            vault.values_of("s").restore("nothing here", Escape::Plain),
            "nothing here"
        );
    }

    /// Another scope's placeholder, and one the vault never made, stay as they are.
    #[test]
    fn other_scopes_and_unknown_placeholders_unchanged() {
        let mut vault = vault();
        let mine = vault.keep("me", SecretKind::EnvSecret, "mine-secret");
        let theirs = vault.keep("them", SecretKind::EnvSecret, "their-secret");
        let typed = "TRIMGATE_SECRET_OPENAI_KEY_0123456789ab";
        let answer = format!("{mine} {theirs} {typed}");
        assert_eq!(
            vault.values_of("me").restore(&answer, Escape::Plain),
            format!("mine-secret {theirs} {typed}")
        );
        let mut stream = vault.values_of("me").restorer(Escape::Plain);
        let streamed = stream.push(&answer) + &stream.finish();
        assert_eq!(streamed, format!("mine-secret {theirs} {typed}"));
    }

    /// In JSON-escaped text, a value holding `"`, `\` and a newline is written escaped,
    /// and the JSON still parses to the value: in a tool call's arguments (JSON text), and
    /// in those arguments as they stand inside the response's JSON.
    #[test]
    fn json_escaped_value() {
        let mut vault = vault();
        let value = "pa\"ss\\wo\nrd";
        let p = vault.keep("s", SecretKind::EnvSecret, value);
        let arguments = format!("{{\"command\":\"login --password {p}\"}}");
        let restored = vault.values_of("s").restore(&arguments, Escape::Json);
        assert_eq!(restored, r#"{"command":"login --password pa\"ss\\wo\nrd"}"#);
        let parsed: serde_json::Value = serde_json::from_str(&restored).unwrap();
        assert_eq!(parsed["command"], format!("login --password {value}"));

        // The same arguments inside a response's JSON, restored in its raw bytes.
        let body = serde_json::json!({ "arguments": arguments }).to_string();
        let mut stream = vault.values_of("s").restorer(Escape::JsonInJson);
        let raw = stream.push(&body) + &stream.finish();
        let outer: serde_json::Value = serde_json::from_str(&raw).unwrap();
        let inner: serde_json::Value =
            serde_json::from_str(outer["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(inner["command"], format!("login --password {value}"));
    }

    /// A text with two placeholders, split into two deltas at every byte boundary, and
    /// fed a byte at a time, restores as the whole text does.
    #[test]
    fn streaming_split_anywhere_equals_whole() {
        let mut vault = vault();
        let a = vault.keep("s", SecretKind::SlackToken, "xoxb-1");
        let b = vault.keep("s", SecretKind::SlackWebhook, "https://hooks.slack.com/x");
        let text = format!("T{a}TRIMGATE_ then TRIMGATE_SECRET_SLACK_{b}{a}. TRIM");
        for escape in [Escape::Plain, Escape::Json, Escape::JsonInJson] {
            let whole = match escape {
                Escape::Plain => vault.values_of("s").restore(&text, Escape::Plain),
                Escape::Json => vault.values_of("s").restore(&text, Escape::Json),
                Escape::JsonInJson => restore_with(&text, escape, |p| vault.lookup("s", p)),
            };
            assert!(whole.contains("xoxb-1") && whole.contains("hooks.slack.com"));
            for cut in 0..=text.len() {
                let mut stream = vault.values_of("s").restorer(escape);
                let mut out = stream.push(&text[..cut]);
                out += &stream.push(&text[cut..]);
                out += &stream.finish();
                assert_eq!(out, whole, "cut at {cut}");
            }
            let mut stream = vault.values_of("s").restorer(escape);
            let mut out = String::new();
            for i in 0..text.len() {
                out += &stream.push(&text[i..i + 1]);
            }
            out += &stream.finish();
            assert_eq!(out, whole);
        }
    }

    /// Only a tail that could still become a placeholder waits; the rest goes at once.
    #[test]
    fn streaming_holds_back_only_a_possible_prefix() {
        let mut vault = vault();
        let p = vault.keep("s", SecretKind::GithubToken, "ghp_value");
        let mut stream = vault.values_of("s").restorer(Escape::Plain);
        assert_eq!(stream.push("hello "), "hello ");
        assert_eq!(stream.push("see TRIMGATE_SEC"), "see ");
        assert_eq!(stream.push("RET_GITHUB_"), "");
        // Diverges from every placeholder the scope holds: released at once.
        assert_eq!(stream.push("X"), "TRIMGATE_SECRET_GITHUB_X");
        assert_eq!(stream.push(&p[..30]), "");
        assert_eq!(stream.push(&p[30..]), "ghp_value");
        assert_eq!(stream.push("Tea"), "Tea");
        assert_eq!(stream.push(" T"), " ");
        assert_eq!(stream.finish(), "T");
    }

    /// A scope that sent nothing holds nothing back.
    #[test]
    fn streaming_without_values_passes_through() {
        let vault = vault();
        let mut stream = vault.values_of("s").restorer(Escape::Plain);
        assert_eq!(stream.push("TRIMGATE_SECRET_"), "TRIMGATE_SECRET_");
        assert_eq!(stream.finish(), "");
    }
}

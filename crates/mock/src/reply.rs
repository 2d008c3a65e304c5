//! What the mock answers, independent of dialect: the decision rule, tool arguments built
//! from a JSON schema, the split into stream deltas, and the deterministic token counts.

use serde_json::{Map, Value};

/// Longest excerpt of the user's text or a tool result quoted back in a reply.
const QUOTE_CHARS: usize = 200;
/// Output tokens reported for a tool call, whatever its arguments.
const TOOL_CALL_TOKENS: u64 = 10;
/// How many fragments streamed tool arguments are cut into.
const ARGUMENT_FRAGMENTS: usize = 4;

/// The parts of a request the reply depends on, as each dialect reads them.
#[derive(Default)]
pub(super) struct Conversation {
    /// The text of the last input item, when that item is a tool result.
    pub tool_result: Option<String>,
    /// The declared function tool to call (the one `x-mock-tool` names, else the first);
    /// after a tool result, read only to act on it as a header asks (see `follow_up`).
    pub tool: Option<ToolDecl>,
    /// The last text the user sent: the echo quotes it when there is neither of the above,
    /// the reasoning whenever it does not think about a tool result.
    pub user_text: Option<String>,
}

pub(super) struct ToolDecl {
    pub name: String,
    pub schema: Option<Value>,
}

pub(super) enum Answer {
    Text(String),
    Tool(ToolCall),
}

/// How a streamed text answer is cut into deltas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Split {
    /// Word-sized deltas, each whitespace run in front of its word.
    #[default]
    Words,
    /// One character per delta (`x-mock-split-chars`), so that any word, a placeholder
    /// among them, arrives across several events.
    Chars,
}

pub(super) struct ToolCall {
    pub name: String,
    /// Compact JSON object text.
    pub arguments: String,
}

impl Answer {
    /// A tool result gets quoted back (or, as a header asks, acted on with the tool: see
    /// [`follow_up`]); else tools get called (the one `x-mock-tool` names,
    /// with `x-mock-tool-arguments` when given); else the user gets an echo.
    pub fn decide(conversation: Conversation, controls: &super::Controls) -> Self {
        if let Some(result) = conversation.tool_result {
            if let Some(tool) = conversation.tool {
                if let Some((command, description)) = follow_up(&result, controls) {
                    return Self::Tool(ToolCall {
                        arguments: shell_arguments(tool.schema.as_ref(), &command, description),
                        name: tool.name,
                    });
                }
            }
            return Self::Text(format!("tool result: {}", truncate(&result, QUOTE_CHARS)));
        }
        if let Some(tool) = conversation.tool {
            return Self::Tool(ToolCall {
                arguments: controls
                    .tool_arguments
                    .clone()
                    .unwrap_or_else(|| arguments_for(tool.schema.as_ref())),
                name: tool.name,
            });
        }
        match controls.reply.as_deref() {
            Some(reply) => Self::Text(reply.to_owned()),
            None => Self::Text(format!(
                "Hello from the mock. You said: {}",
                truncate(conversation.user_text.as_deref().unwrap_or(""), QUOTE_CHARS)
            )),
        }
    }

    /// Text deltas cut as `split` says, or argument fragments, in stream order; they
    /// concatenate to the whole.
    pub fn pieces(&self, split: Split) -> Vec<&str> {
        match self {
            Self::Text(text) if split == Split::Chars => char_deltas(text),
            Self::Text(text) => word_deltas(text),
            Self::Tool(call) => fragments(&call.arguments, ARGUMENT_FRAGMENTS),
        }
    }

    pub fn output_tokens(&self) -> u64 {
        match self {
            Self::Text(text) => word_deltas(text).len() as u64,
            Self::Tool(_) => TOOL_CALL_TOKENS,
        }
    }
}

/// The shell command (and what it does) a tool result asks for, when a header says to
/// act on it: an elided output fetched back the way its marker says
/// (`x-mock-fetch-originals`), or the guard's placeholders written to a file, as a model
/// using the secrets it read would (`x-mock-use-secrets`).
fn follow_up(result: &str, controls: &super::Controls) -> Option<(String, &'static str)> {
    if controls.fetch_originals {
        if let Some(url) = retrieval_url(result) {
            return Some((format!("curl -s {url}"), "Fetch the whole output"));
        }
    }
    if controls.use_secrets {
        let found = placeholders(result);
        if !found.is_empty() {
            let path = controls.secrets_file.as_deref().unwrap_or(SECRETS_FILE);
            return Some((write_command(&found, path), "Write the secrets to a file"));
        }
    }
    None
}

/// The reasoning a reply opens with when the request asks for it, before its text or call.
pub(super) struct Reasoning {
    pub text: String,
}

impl Reasoning {
    /// What the mock "thinks": the tool result it is about to quote, or the user's words.
    pub fn about(conversation: &Conversation) -> Self {
        let text = if conversation.tool_result.is_some() {
            "Thinking about the tool result.".to_owned()
        } else {
            format!(
                "Thinking about: {}",
                truncate(conversation.user_text.as_deref().unwrap_or(""), QUOTE_CHARS)
            )
        };
        Self { text }
    }

    /// Word-sized deltas, like a text answer's; they concatenate to the whole.
    pub fn pieces(&self) -> Vec<&str> {
        word_deltas(&self.text)
    }

    /// One token per delta, as for text.
    pub fn tokens(&self) -> u64 {
        word_deltas(&self.text).len() as u64
    }

    /// The signature the mock puts on this reasoning (see [`signature`]).
    pub fn signature(&self) -> String {
        signature(&self.text)
    }
}

/// A deterministic stand-in for a provider's reasoning signature: `sig-` and the base64 of
/// four FNV-1a hashes of the text, so a round trip can prove the text and signature survived.
pub(super) fn signature(thinking: &str) -> String {
    format!("sig-{}", base64(&digest(thinking)))
}

/// Gemini's `thoughtSignature` is a `bytes` field, so it travels as plain base64: the same
/// digest as [`signature`], without the prefix.
pub(super) fn thought_signature(thinking: &str) -> String {
    base64(&digest(thinking))
}

/// Four FNV-1a hashes of the text, 32 bytes.
fn digest(thinking: &str) -> Vec<u8> {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut digest = Vec::with_capacity(32);
    for seed in 0..4u64 {
        let mut hash = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for byte in thinking.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
        digest.extend_from_slice(&hash.to_be_bytes());
    }
    digest
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Token counts every dialect reports, each in its own shape.
#[derive(Clone, Copy)]
pub(super) struct Usage {
    /// All prompt tokens, cached ones included.
    pub input: u64,
    pub cached: u64,
    /// Prompt tokens written to the cache (Anthropic's `cache_creation_input_tokens`).
    pub written: u64,
    /// All output tokens, reasoning ones included.
    pub output: u64,
    pub reasoning: u64,
}

impl Usage {
    pub fn new(body_len: usize, cached: u64, output: u64) -> Self {
        Self {
            input: input_tokens(body_len),
            cached,
            written: 0,
            output,
            reasoning: 0,
        }
    }

    /// The played prompt cache's reads and writes, in place of `cached`.
    pub fn with_prompt_cache(self, accounted: Option<crate::prompt_cache::Accounted>) -> Self {
        match accounted {
            Some(a) => Self {
                cached: a.read.min(self.input),
                written: a.written.min(self.input.saturating_sub(a.read)),
                ..self
            },
            None => self,
        }
    }

    /// Adds the reasoning's tokens, which the providers count as output too.
    pub fn with_reasoning(self, reasoning: Option<&Reasoning>) -> Self {
        let tokens = reasoning.map_or(0, Reasoning::tokens);
        Self {
            output: self.output + tokens,
            reasoning: tokens,
            ..self
        }
    }
}

/// A stand-in for the provider's tokenizer: about four bytes of request per token.
pub(super) fn input_tokens(body_len: usize) -> u64 {
    (body_len as u64).div_ceil(4)
}

/// A JSON object holding every `required` property, each with a placeholder of its type.
fn arguments_for(schema: Option<&Value>) -> String {
    let mut arguments = Map::new();
    if let Some(schema) = schema {
        let properties = schema.get("properties");
        let required = schema.get("required").and_then(Value::as_array);
        for name in required.into_iter().flatten().filter_map(Value::as_str) {
            let property = properties.and_then(|p| p.get(name));
            arguments.insert(name.to_owned(), placeholder(property));
        }
    }
    serde_json::to_string(&Value::Object(arguments)).unwrap_or_else(|_| "{}".to_owned())
}

fn placeholder(property: Option<&Value>) -> Value {
    // An enum's first member is the one value sure to satisfy the schema.
    if let Some(first) = property
        .and_then(|p| p.get("enum"))
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    let kind = match property.and_then(|p| p.get("type")) {
        Some(Value::String(kind)) => kind.as_str(),
        // `["string", "null"]`: the first non-null type is the useful one.
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match kind {
        "integer" | "number" => Value::from(1),
        "boolean" => Value::Bool(true),
        "array" => Value::Array(Vec::new()),
        "object" => Value::Object(Map::new()),
        _ => Value::String("mock".to_owned()),
    }
}

/// Word-sized deltas, each whitespace run kept in front of the word that follows it.
fn word_deltas(text: &str) -> Vec<&str> {
    let mut deltas = Vec::new();
    let mut start = 0;
    let mut previous_was_space = true;
    for (i, c) in text.char_indices() {
        let is_space = c.is_whitespace();
        if is_space && !previous_was_space && i > start {
            deltas.push(&text[start..i]);
            start = i;
        }
        previous_was_space = is_space;
    }
    if start < text.len() {
        deltas.push(&text[start..]);
    }
    deltas
}

/// One delta per character.
fn char_deltas(text: &str) -> Vec<&str> {
    text.char_indices()
        .map(|(i, c)| &text[i..i + c.len_utf8()])
        .collect()
}

/// About `count` fragments of `text`, cut on char boundaries.
fn fragments(text: &str, count: usize) -> Vec<&str> {
    let target = text.len().div_ceil(count).max(1);
    let mut pieces = Vec::with_capacity(count + 1);
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + target).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

fn truncate(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// A message's content as plain text: a string as is, or its parts of the `kinds` types joined.
pub(super) fn joined_text(content: Option<&Value>, kinds: &[&str]) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| text_of(part, kinds))
            .collect::<Vec<_>>()
            .concat(),
        _ => String::new(),
    }
}

/// What the user said last in a message: the string, or its last part of the `kinds` types.
/// Agents put reminders before the prompt, so the last part is the one the user typed.
pub(super) fn last_text(content: Option<&Value>, kinds: &[&str]) -> Option<String> {
    match content {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Array(parts)) => parts
            .iter()
            .rev()
            .find_map(|part| text_of(part, kinds))
            .map(str::to_owned),
        _ => None,
    }
}

fn text_of<'v>(part: &'v Value, kinds: &[&str]) -> Option<&'v str> {
    if let Value::String(text) = part {
        return Some(text);
    }
    let kind = part.get("type").and_then(Value::as_str)?;
    if kinds.contains(&kind) {
        part.get("text").and_then(Value::as_str)
    } else {
        None
    }
}

/// The address in a marker that says where an elided output is kept.
fn retrieval_url(result: &str) -> Option<&str> {
    const SAYS: &str = "[… all of it: curl -s ";
    let at = result.find(SAYS)?;
    result[at + SAYS.len()..].split_whitespace().next()
}

/// Where the placeholders are written when `x-mock-secrets-file` names no file: the
/// agent's working directory.
const SECRETS_FILE: &str = "secrets.txt";

/// What every placeholder the gateway's guard puts in place of a secret starts with.
const PLACEHOLDER_PREFIX: &str = "TRIMGATE_SECRET_";
/// Lower-case hex digits that end a placeholder.
const PLACEHOLDER_ID_HEX: usize = 12;

/// The placeholders in `text`, left to right, each once. Their grammar, restated here (the
/// mock shares no code with the gateway): `TRIMGATE_SECRET_`, one or more words of `A`–`Z`
/// each followed by `_`, then 12 of `0`–`9a`–`f`.
pub(super) fn placeholders(text: &str) -> Vec<&str> {
    let mut found: Vec<&str> = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find(PLACEHOLDER_PREFIX) {
        let start = from + offset;
        match placeholder_end(text.as_bytes(), start) {
            Some(end) => {
                let placeholder = &text[start..end];
                if !found.contains(&placeholder) {
                    found.push(placeholder);
                }
                from = end;
            }
            None => from = start + 1,
        }
    }
    found
}

/// Where the placeholder starting at `start` (with the prefix) ends, if it is one.
fn placeholder_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + PLACEHOLDER_PREFIX.len();
    loop {
        let word = bytes[i..]
            .iter()
            .take_while(|b| b.is_ascii_uppercase())
            .count();
        if word == 0 || bytes.get(i + word) != Some(&b'_') {
            return None;
        }
        i += word + 1;
        if !bytes.get(i).is_some_and(u8::is_ascii_uppercase) {
            break;
        }
    }
    let id = bytes.get(i..i + PLACEHOLDER_ID_HEX)?;
    id.iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        .then_some(i + PLACEHOLDER_ID_HEX)
}

/// `printf '%s\n' 'P1' 'P2' … > PATH`: one placeholder a line. Each is single-quoted, so
/// the value the gateway puts back in its place reaches `printf` as it is, whatever
/// characters it has (a `'` in it aside).
fn write_command(placeholders: &[&str], path: &str) -> String {
    let quoted: Vec<String> = placeholders.iter().map(|p| format!("'{p}'")).collect();
    format!(
        "printf '%s\\n' {} > {}",
        quoted.join(" "),
        shell_quote(path)
    )
}

/// `text` as one shell word: as it is when it has only characters no shell treats
/// specially, else single-quoted.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// A shell tool's arguments for `command`, in the shape its schema asks: `cmd` (Codex's
/// `exec_command`), an argv array (`shell`), or a `command` string (Claude Code's `Bash`,
/// which also wants a `description`).
fn shell_arguments(schema: Option<&Value>, command: &str, description: &str) -> String {
    let properties = schema.and_then(|s| s.get("properties"));
    let has = |name: &str| properties.and_then(|p| p.get(name)).is_some();
    let arguments = if has("cmd") {
        serde_json::json!({"cmd": command})
    } else if properties
        .and_then(|p| p.pointer("/command/type"))
        .and_then(Value::as_str)
        == Some("array")
    {
        serde_json::json!({"command": ["bash", "-lc", command]})
    } else if has("description") {
        serde_json::json!({"command": command, "description": description})
    } else {
        serde_json::json!({"command": command})
    };
    arguments.to_string()
}

#[cfg(test)]
mod tests {
    use super::super::Controls;
    use super::*;
    use serde_json::json;

    #[test]
    fn signatures_are_base64_of_a_hash_and_depend_only_on_the_text() {
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fooba"), "Zm9vYmE=");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
        let sig = signature("Thinking about: x");
        assert_eq!(sig, signature("Thinking about: x"));
        assert_ne!(sig, signature("Thinking about: y"));
        assert_eq!(sig.len(), "sig-".len() + 44);
        assert!(sig.ends_with('='));
    }

    #[test]
    fn word_deltas_keep_every_space_so_they_concatenate_to_the_text() {
        let text = "  Hello from  the\tmock. ";
        let deltas = word_deltas(text);
        assert_eq!(deltas, ["  Hello", " from", "  the", "\tmock.", " "]);
        assert_eq!(deltas.concat(), text);
    }

    #[test]
    fn fragments_concatenate_to_the_arguments_even_across_multibyte_chars() {
        let text = r#"{"city":"Zürich","n":1}"#;
        let pieces = fragments(text, 4);
        assert!(pieces.len() >= 3, "{pieces:?}");
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn arguments_hold_a_placeholder_for_each_required_property_by_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer"},
                "ratio": {"type": "number"},
                "force": {"type": "boolean"},
                "tags": {"type": "array"},
                "opts": {"type": "object"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "maybe": {"type": ["null", "integer"]},
                "optional": {"type": "string"}
            },
            "required": ["path", "limit", "ratio", "force", "tags", "opts", "mode", "maybe"]
        });
        let args: Value = serde_json::from_str(&arguments_for(Some(&schema))).unwrap();
        assert_eq!(
            args,
            json!({"path": "mock", "limit": 1, "ratio": 1, "force": true, "tags": [],
                   "opts": {}, "mode": "fast", "maybe": 1})
        );
    }

    #[test]
    fn a_tool_result_wins_over_declared_tools() {
        let answer = Answer::decide(
            Conversation {
                tool_result: Some("42".to_owned()),
                tool: Some(ToolDecl {
                    name: "t".to_owned(),
                    schema: None,
                }),
                user_text: None,
            },
            &Controls {
                reply: Some("ignored".to_owned()),
                ..Controls::default()
            },
        );
        assert!(matches!(answer, Answer::Text(ref t) if t == "tool result: 42"));
    }

    #[test]
    fn placeholders_follow_the_guards_grammar_and_are_listed_once_in_order() {
        let text = "a=TRIMGATE_SECRET_AWS_SECRET_KEY_0123456789ab,TRIMGATE_SECRET_JWT_ffffffffffff9 \
                    TRIMGATE_SECRET_AWS_SECRET_KEY_0123456789ab TRIMGATE_SECRET_TRIMGATE_SECRET_JWT_000000000000 \
                    TRIMGATE_SECRET_JWT_FFFFFFFFFFFF TRIMGATE_SECRET_JWT_abc TRIMGATE_SECRET__000000000000 \
                    TRIMGATE_SECRET_JWT000000000000 TRIMGATE_SECRET_";
        assert_eq!(
            placeholders(text),
            [
                "TRIMGATE_SECRET_AWS_SECRET_KEY_0123456789ab",
                // A fixed end: 12 hex digits, whatever follows.
                "TRIMGATE_SECRET_JWT_ffffffffffff",
                // The prefix again is only more words of the kind.
                "TRIMGATE_SECRET_TRIMGATE_SECRET_JWT_000000000000",
            ]
        );
        assert!(placeholders("no secrets here").is_empty());
    }

    #[test]
    fn the_write_command_single_quotes_each_placeholder_and_quotes_the_path_when_needed() {
        let p = [
            "TRIMGATE_SECRET_JWT_000000000000",
            "TRIMGATE_SECRET_SK_KEY_111111111111",
        ];
        assert_eq!(
            write_command(&p, "/tmp/x-1/out.txt"),
            "printf '%s\\n' 'TRIMGATE_SECRET_JWT_000000000000' 'TRIMGATE_SECRET_SK_KEY_111111111111' > /tmp/x-1/out.txt"
        );
        assert_eq!(shell_quote("it's here"), r"'it'\''s here'");
        assert_eq!(shell_quote("$HOME/x"), "'$HOME/x'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn split_chars_cuts_text_into_characters_and_leaves_tool_fragments_alone() {
        let text = Answer::Text("aé b".to_owned());
        assert_eq!(text.pieces(Split::Chars), ["a", "é", " ", "b"]);
        assert_eq!(text.pieces(Split::Words), ["aé", " b"]);
        // Tokens are counted by word however the stream is cut.
        assert_eq!(text.output_tokens(), 2);
        let call = Answer::Tool(ToolCall {
            name: "t".to_owned(),
            arguments: r#"{"a":"0123456789"}"#.to_owned(),
        });
        assert_eq!(call.pieces(Split::Chars), call.pieces(Split::Words));
    }

    #[test]
    fn the_echo_quotes_at_most_200_chars_of_the_user_text() {
        let long = "é".repeat(300);
        let answer = Answer::decide(
            Conversation {
                user_text: Some(long),
                ..Conversation::default()
            },
            &Controls::default(),
        );
        let Answer::Text(text) = answer else {
            panic!("expected text")
        };
        assert_eq!(
            text.chars().count(),
            "Hello from the mock. You said: ".len() + 200
        );
    }
}

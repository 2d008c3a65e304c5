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
    /// The first declared function tool; read only when `tool_result` is `None`.
    pub tool: Option<ToolDecl>,
    /// The last text the user sent; read only when there is neither of the above.
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

pub(super) struct ToolCall {
    pub name: String,
    /// Compact JSON object text.
    pub arguments: String,
}

impl Answer {
    /// A tool result gets quoted back; else tools get called; else the user gets an echo.
    pub fn decide(conversation: Conversation, reply_header: Option<&str>) -> Self {
        if let Some(result) = conversation.tool_result {
            return Self::Text(format!("tool result: {}", truncate(&result, QUOTE_CHARS)));
        }
        if let Some(tool) = conversation.tool {
            return Self::Tool(ToolCall {
                arguments: arguments_for(tool.schema.as_ref()),
                name: tool.name,
            });
        }
        match reply_header {
            Some(reply) => Self::Text(reply.to_owned()),
            None => Self::Text(format!(
                "Hello from the mock. You said: {}",
                truncate(conversation.user_text.as_deref().unwrap_or(""), QUOTE_CHARS)
            )),
        }
    }

    /// Text deltas, or argument fragments, in stream order; they concatenate to the whole.
    pub fn pieces(&self) -> Vec<&str> {
        match self {
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

/// Token counts every dialect reports, each in its own shape.
#[derive(Clone, Copy)]
pub(super) struct Usage {
    /// All prompt tokens, cached ones included.
    pub input: u64,
    pub cached: u64,
    pub output: u64,
}

impl Usage {
    pub fn new(body_len: usize, cached: u64, output: u64) -> Self {
        Self {
            input: input_tokens(body_len),
            cached,
            output,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            Some("ignored"),
        );
        assert!(matches!(answer, Answer::Text(ref t) if t == "tool result: 42"));
    }

    #[test]
    fn the_echo_quotes_at_most_200_chars_of_the_user_text() {
        let long = "é".repeat(300);
        let answer = Answer::decide(
            Conversation {
                user_text: Some(long),
                ..Conversation::default()
            },
            None,
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

//! Prompt-cache breakpoints for Anthropic-bound requests that carry none: SDK scripts and
//! OpenAI clients translated to Messages pay full price for the same prefix on every turn,
//! while a cache read costs a tenth of fresh input. Up to four `cache_control` marks go
//! where the prefix is stable, in the order Anthropic renders a request: the last tool, the
//! end of the system prompt, the end of the previous user turn and the end of the request.
//! A request with any `cache_control` of its own is never touched, nor is one too short
//! for the model's smallest cacheable prefix.
//!
//! The marks are insertions into the body's own bytes (a string `system` or `content`
//! becomes the one-block array it stands for); everything else stays byte-identical, and
//! the same request always gets the same marks, so the prefix a turn writes is the one the
//! next turn reads.

use std::borrow::Cow;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Anthropic's limit on breakpoints per request.
pub const MAX_BREAKPOINTS: usize = 4;

const MARK: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// An edit of the body: the bytes at a range, and what replaces them.
type Edit = (Range<usize>, Vec<u8>);

/// The smallest prefix Anthropic caches for `model`, in tokens (a shorter one is sent on
/// uncached, silently).
pub fn min_cacheable_tokens(model: &str) -> usize {
    let m = model.to_ascii_lowercase();
    if [
        "haiku-4-5",
        "haiku-4.5",
        "opus-4-5",
        "opus-4.5",
        "opus-4-6",
        "opus-4.6",
    ]
    .iter()
    .any(|n| m.contains(n))
    {
        4096
    } else if m.contains("opus-5") {
        512
    } else if m.contains("haiku-3") || m.contains("3-haiku") || m.contains("3-5-haiku") {
        2048
    } else {
        1024
    }
}

/// Tokens in `bytes` of JSON, estimated on the low side of what a tokenizer would count
/// (about four bytes a token for English and code), so a breakpoint is not spent on a
/// prefix that cannot be cached.
fn estimated_tokens(bytes: usize) -> usize {
    bytes / 4
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    system: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tools: Vec<&'a RawValue>,
    #[serde(borrow, default)]
    messages: Vec<Message<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow)]
    content: &'a RawValue,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

/// The insertions that mark `body` (a Messages request), sorted by position; none when
/// the request has marks of its own, cannot be read, or is too short to cache.
pub fn place(body: &[u8], model: &str) -> Vec<Edit> {
    if memchr::memmem::find(body, b"\"cache_control\"").is_some() {
        return Vec::new();
    }
    let Ok(request) = serde_json::from_slice::<Request<'_>>(body) else {
        return Vec::new();
    };
    let at = |raw: &RawValue| raw.get().as_ptr() as usize - body.as_ptr() as usize;
    let min = min_cacheable_tokens(model);
    // (prefix bytes up to and with the block, the edit that marks it), in render order.
    let mut candidates: Vec<(usize, Edit)> = Vec::new();
    let mut prefix = 0;
    for tool in &request.tools {
        prefix += tool.get().len();
    }
    if let Some(last) = request.tools.last() {
        if let Some(edit) = mark_object(last, at(last)) {
            candidates.push((prefix, edit));
        }
    }
    if let Some(system) = request.system {
        prefix += system.get().len();
        if let Some(edit) = mark_content(system, at(system)) {
            candidates.push((prefix, edit));
        }
    }
    // The last message ends this turn's prefix; the last user message before it ends the
    // previous turn's, which the previous request wrote.
    let ends: Vec<usize> = request
        .messages
        .iter()
        .map(|m| {
            prefix += m.content.get().len();
            prefix
        })
        .collect();
    let last = request.messages.len().checked_sub(1);
    let previous = last.and_then(|last| {
        request.messages[..last]
            .iter()
            .rposition(|m| m.role == "user")
    });
    for i in [previous, last].into_iter().flatten() {
        let content = request.messages[i].content;
        if let Some(edit) = mark_content(content, at(content)) {
            candidates.push((ends[i], edit));
        }
    }
    // The longest prefixes are worth most: when there are more than four, the first go.
    let mut edits: Vec<Edit> = candidates
        .into_iter()
        .filter(|(prefix, _)| estimated_tokens(*prefix) >= min)
        .map(|(_, edit)| edit)
        .collect();
    if edits.len() > MAX_BREAKPOINTS {
        edits.drain(..edits.len() - MAX_BREAKPOINTS);
    }
    edits.sort_by_key(|(range, _)| range.start);
    edits
}

/// The edit that marks a `system` or `content` value: its last markable block, or a string
/// turned into the one text block it stands for.
fn mark_content(value: &RawValue, start: usize) -> Option<Edit> {
    let text = value.get();
    if text.starts_with('"') {
        // An empty text block cannot be cached (Anthropic refuses it).
        if text == "\"\"" {
            return None;
        }
        let block = format!(r#"[{{"type":"text","text":{text}{MARK}}}]"#);
        return Some((start..start + text.len(), block.into_bytes()));
    }
    let blocks: Vec<&RawValue> = serde_json::from_str(text).ok()?;
    // Thinking blocks cannot carry a mark; the one before them can.
    let block = blocks.iter().rev().find(|b| {
        serde_json::from_str::<Block<'_>>(b.get())
            .is_ok_and(|b| !matches!(b.kind.as_ref(), "thinking" | "redacted_thinking"))
    })?;
    let offset = block.get().as_ptr() as usize - text.as_ptr() as usize;
    mark_object(block, start + offset)
}

/// The insertion of the mark before an object's closing brace.
fn mark_object(object: &RawValue, start: usize) -> Option<Edit> {
    let text = object.get();
    if !text.starts_with('{') || !text.ends_with('}') {
        return None;
    }
    // `{}` has no field for the mark to follow.
    let inner = text[1..text.len() - 1].trim();
    if inner.is_empty() {
        return None;
    }
    let end = start + text.len() - 1;
    Some((end..end, MARK.as_bytes().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(body: &str, model: &str) -> (String, usize) {
        let edits = place(body.as_bytes(), model);
        let n = edits.len();
        (
            String::from_utf8(crate::splice(body.as_bytes(), &edits)).unwrap(),
            n,
        )
    }

    fn long(n: usize) -> String {
        "stable instructions ".repeat(n)
    }

    #[test]
    fn a_session_gets_tools_system_and_both_turn_ends_marked() {
        let body = serde_json::json!({
            "model": "claude-sonnet-5-5",
            "max_tokens": 100,
            "tools": [{"name": "a", "input_schema": {"type": "object"}}, {"name": "b", "description": long(300), "input_schema": {"type": "object"}}],
            "system": long(200),
            "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                {"role": "user", "content": [{"type": "text", "text": "second"}]},
            ]
        })
        .to_string();
        let (out, n) = apply(&body, "claude-sonnet-5-5");
        assert_eq!(n, 4);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let mark = serde_json::json!({"type": "ephemeral"});
        assert_eq!(v["tools"][1]["cache_control"], mark);
        assert!(v["tools"][0].get("cache_control").is_none());
        assert_eq!(v["system"][0]["cache_control"], mark);
        assert_eq!(v["system"][0]["text"], long(200));
        assert_eq!(v["messages"][0]["content"][0]["cache_control"], mark);
        assert_eq!(v["messages"][0]["content"][0]["text"], "first");
        assert!(v["messages"][1]["content"][0]
            .get("cache_control")
            .is_none());
        assert_eq!(v["messages"][2]["content"][0]["cache_control"], mark);
        // Nothing else changed: without the marks the body reads as it came.
        let mut stripped = v.clone();
        stripped["tools"][1]
            .as_object_mut()
            .unwrap()
            .remove("cache_control");
        stripped["system"] = v["system"][0]["text"].clone();
        stripped["messages"][0]["content"] = "first".into();
        stripped["messages"][2]["content"][0]
            .as_object_mut()
            .unwrap()
            .remove("cache_control");
        assert_eq!(
            stripped,
            serde_json::from_str::<serde_json::Value>(&body).unwrap()
        );
        // The same request gets the same marks.
        assert_eq!(apply(&body, "claude-sonnet-5-5").0, out);
    }

    #[test]
    fn a_request_with_its_own_marks_or_too_short_is_untouched() {
        let marked = serde_json::json!({
            "system": [{"type": "text", "text": long(300), "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "hi"}]
        })
        .to_string();
        assert_eq!(place(marked.as_bytes(), "claude-sonnet-5-5"), vec![]);
        let short = r#"{"system":"be brief","messages":[{"role":"user","content":"hi"}]}"#;
        assert_eq!(place(short.as_bytes(), "claude-sonnet-5-5"), vec![]);
        // Long enough for Sonnet, too short for Haiku 4.5's 4096 tokens.
        let mid = serde_json::json!({"system": long(300), "messages": [{"role": "user", "content": "hi"}]})
            .to_string();
        assert_eq!(apply(&mid, "claude-sonnet-5-5").1, 2);
        assert_eq!(apply(&mid, "claude-haiku-4-5").1, 0);
        assert_eq!(place(b"not json", "claude-sonnet-5-5"), vec![]);
    }

    #[test]
    fn thinking_blocks_are_passed_over_and_empty_text_is_not_marked() {
        let body = serde_json::json!({
            "system": long(300),
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "t", "signature": "s"}]},
                {"role": "user", "content": ""}
            ]
        })
        .to_string();
        let (out, n) = apply(&body, "claude-sonnet-5-5");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(n, 2, "{out}");
        assert_eq!(v["messages"][2]["content"], "");
        assert!(v["messages"][1]["content"][1]
            .get("cache_control")
            .is_none());
    }
}

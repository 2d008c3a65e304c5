//! Finds the blocks a pass may rewrite, with their byte spans in the inbound body, for
//! each dialect: tool results (OpenAI `role: tool` messages and their text parts,
//! Responses `function_call_output`, Anthropic `tool_result` with a string or a list of
//! text blocks, Gemini `functionResponse` whose `response` holds its text under `output`,
//! `content` or `result`) and the end of the system prompt. Everything is read through borrowed
//! `RawValue`s, so a span is the exact bytes the client sent.
//!
//! Any shape the locator does not know is skipped, never guessed at: a block it cannot
//! place exactly is simply not a candidate.

use std::borrow::Cow;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use trimgate_wire::dialect::Dialect;

/// One tool result's text, as found in the body.
#[derive(Debug, Clone)]
pub struct ToolBlock {
    /// Span of the JSON string literal (quotes included) holding the text.
    pub span: Range<usize>,
    pub text: String,
    /// The tool call this result answers, when the body says.
    pub call_id: Option<String>,
}

/// Where text can be appended to the end of the system prompt: a string literal whose
/// decoded text the addition follows.
#[derive(Debug, Clone)]
pub struct SystemEnd {
    pub span: Range<usize>,
    pub text: String,
}

/// What the passes need to know about a request.
#[derive(Debug, Default)]
pub struct Located {
    /// Tool results in the order they appear (oldest first).
    pub tool_blocks: Vec<ToolBlock>,
    pub system_end: Option<SystemEnd>,
    /// The request offers tools to the model.
    pub has_tools: bool,
    /// Text of the first user message: fixed for a whole session, so a decision taken
    /// from it never changes between turns.
    pub first_user_text: Option<String>,
    /// The output budget the client asked for, if any.
    pub max_output_tokens: Option<u64>,
    /// Size of the whole body.
    pub body_len: usize,
}

/// Locates blocks in `body`, or `None` when the body is not a shape we can place exactly.
pub fn locate(dialect: Dialect, body: &[u8]) -> Option<Located> {
    let mut located = match dialect {
        Dialect::OpenAiChat => chat(body),
        Dialect::OpenAiResponses => responses(body),
        Dialect::AnthropicMessages => messages(body),
        Dialect::Gemini => gemini(body),
    }?;
    located.body_len = body.len();
    Some(located)
}

fn span_of(outer: &[u8], inner: &RawValue) -> Range<usize> {
    let inner = inner.get();
    let start = (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize);
    start..start + inner.len()
}

/// The decoded text of a raw JSON string, or `None` when it is not a string.
fn string_of(raw: &RawValue) -> Option<String> {
    if !raw.get().starts_with('"') {
        return None;
    }
    serde_json::from_str::<Cow<'_, str>>(raw.get())
        .ok()
        .map(Cow::into_owned)
}

fn non_empty_array(raw: Option<&RawValue>) -> bool {
    raw.is_some_and(|r| {
        let s = r.get().trim();
        s.starts_with('[') && s != "[]" && s.len() > 2 && !s[1..s.len() - 1].trim().is_empty()
    })
}

#[derive(Deserialize)]
struct TextPart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

/// The text parts of a content list whose `type` is one of `kinds`, as (span, text).
fn text_parts(body: &[u8], raw: &RawValue, kinds: &[&str]) -> Option<Vec<(Range<usize>, String)>> {
    let parts: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
    let mut out = Vec::new();
    for part in parts {
        let Ok(p) = serde_json::from_str::<TextPart<'_>>(part.get()) else {
            continue;
        };
        let kind_ok = p.kind.as_deref().is_some_and(|k| kinds.contains(&k));
        if let (true, Some(text)) = (kind_ok, p.text) {
            if let Some(decoded) = string_of(text) {
                out.push((span_of(body, text), decoded));
            }
        }
    }
    Some(out)
}

/// The last text of a string-or-parts content, as a place to append to.
fn last_text(body: &[u8], raw: &RawValue, kinds: &[&str]) -> Option<SystemEnd> {
    if let Some(text) = string_of(raw) {
        return Some(SystemEnd {
            span: span_of(body, raw),
            text,
        });
    }
    let (span, text) = text_parts(body, raw, kinds)?.pop()?;
    Some(SystemEnd { span, text })
}

/// The text of a string-or-parts content, joined.
fn plain_text(body: &[u8], raw: &RawValue, kinds: &[&str]) -> Option<String> {
    if let Some(text) = string_of(raw) {
        return Some(text);
    }
    let parts = text_parts(body, raw, kinds)?;
    Some(
        parts
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn max_tokens(raw: Option<&RawValue>) -> Option<u64> {
    raw.and_then(|r| r.get().parse::<u64>().ok())
}

// ---------------------------------------------------------------------------------------------
// OpenAI Chat Completions

#[derive(Deserialize)]
struct ChatBody<'a> {
    #[serde(borrow)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
    #[serde(borrow)]
    max_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    max_completion_tokens: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ChatMessage<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_call_id: Option<Cow<'a, str>>,
}

const CHAT_TEXT: &[&str] = &["text"];

fn chat(body: &[u8]) -> Option<Located> {
    let parsed: ChatBody<'_> = serde_json::from_slice(body).ok()?;
    let mut located = Located {
        has_tools: non_empty_array(parsed.tools),
        max_output_tokens: max_tokens(parsed.max_completion_tokens)
            .or(max_tokens(parsed.max_tokens)),
        ..Located::default()
    };
    let mut system_done = false;
    for raw in parsed.messages.unwrap_or_default() {
        let Ok(m) = serde_json::from_str::<ChatMessage<'_>>(raw.get()) else {
            continue;
        };
        let Some(content) = m.content else { continue };
        match m.role.as_deref() {
            Some("system") | Some("developer") if !system_done => {
                located.system_end = last_text(body, content, CHAT_TEXT);
            }
            Some("tool") => {
                let call_id = m.tool_call_id.map(Cow::into_owned);
                push_tool_content(body, content, CHAT_TEXT, call_id, &mut located);
            }
            Some("user") if located.first_user_text.is_none() => {
                located.first_user_text = plain_text(body, content, CHAT_TEXT);
            }
            _ => {}
        }
        // Only the leading system message is "the system prompt"; later ones are turns.
        if m.role.as_deref() != Some("system") && m.role.as_deref() != Some("developer") {
            system_done = true;
        }
    }
    Some(located)
}

fn push_tool_content(
    body: &[u8],
    content: &RawValue,
    kinds: &[&str],
    call_id: Option<String>,
    located: &mut Located,
) {
    if let Some(text) = string_of(content) {
        located.tool_blocks.push(ToolBlock {
            span: span_of(body, content),
            text,
            call_id,
        });
    } else if let Some(parts) = text_parts(body, content, kinds) {
        for (span, text) in parts {
            located.tool_blocks.push(ToolBlock {
                span,
                text,
                call_id: call_id.clone(),
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI Responses

#[derive(Deserialize)]
struct ResponsesBody<'a> {
    #[serde(borrow)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
    #[serde(borrow)]
    max_output_tokens: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ResponsesItem<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
}

const RESPONSES_TEXT: &[&str] = &["input_text", "output_text", "text"];

fn responses(body: &[u8]) -> Option<Located> {
    let parsed: ResponsesBody<'_> = serde_json::from_slice(body).ok()?;
    let mut located = Located {
        has_tools: non_empty_array(parsed.tools),
        max_output_tokens: max_tokens(parsed.max_output_tokens),
        ..Located::default()
    };
    if let Some(instructions) = parsed.instructions {
        located.system_end = string_of(instructions).map(|text| SystemEnd {
            span: span_of(body, instructions),
            text,
        });
    }
    let Some(input) = parsed.input else {
        return Some(located);
    };
    if let Some(text) = string_of(input) {
        located.first_user_text = Some(text);
        return Some(located);
    }
    let items: Vec<&RawValue> = serde_json::from_str(input.get()).ok()?;
    for raw in items {
        let Ok(item) = serde_json::from_str::<ResponsesItem<'_>>(raw.get()) else {
            continue;
        };
        match item.kind.as_deref() {
            Some("function_call_output") | Some("custom_tool_call_output") => {
                if let Some(output) = item.output {
                    let call_id = item.call_id.map(Cow::into_owned);
                    push_tool_content(body, output, RESPONSES_TEXT, call_id, &mut located);
                }
            }
            // A message item may omit `type`.
            Some("message") | None
                if item.role.as_deref() == Some("user") && located.first_user_text.is_none() =>
            {
                if let Some(content) = item.content {
                    located.first_user_text = plain_text(body, content, RESPONSES_TEXT);
                }
            }
            _ => {}
        }
    }
    Some(located)
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages

#[derive(Deserialize)]
struct MessagesBody<'a> {
    #[serde(borrow)]
    system: Option<&'a RawValue>,
    #[serde(borrow)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
    #[serde(borrow)]
    max_tokens: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct AnthropicMessage<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct AnthropicBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

const ANTHROPIC_TEXT: &[&str] = &["text"];

fn messages(body: &[u8]) -> Option<Located> {
    let parsed: MessagesBody<'_> = serde_json::from_slice(body).ok()?;
    let mut located = Located {
        has_tools: non_empty_array(parsed.tools),
        max_output_tokens: max_tokens(parsed.max_tokens),
        ..Located::default()
    };
    if let Some(system) = parsed.system {
        located.system_end = last_text(body, system, ANTHROPIC_TEXT);
    }
    for raw in parsed.messages.unwrap_or_default() {
        let Ok(m) = serde_json::from_str::<AnthropicMessage<'_>>(raw.get()) else {
            continue;
        };
        let Some(content) = m.content else { continue };
        if m.role.as_deref() != Some("user") {
            continue;
        }
        if string_of(content).is_some() {
            if located.first_user_text.is_none() {
                located.first_user_text = string_of(content);
            }
            continue;
        }
        let Ok(blocks) = serde_json::from_str::<Vec<&RawValue>>(content.get()) else {
            continue;
        };
        let mut user_text = Vec::new();
        for raw_block in blocks {
            let Ok(block) = serde_json::from_str::<AnthropicBlock<'_>>(raw_block.get()) else {
                continue;
            };
            match block.kind.as_deref() {
                Some("tool_result") => {
                    if let Some(content) = block.content {
                        let call_id = block.tool_use_id.map(Cow::into_owned);
                        push_tool_content(body, content, ANTHROPIC_TEXT, call_id, &mut located);
                    }
                }
                Some("text") => {
                    if let Ok(p) = serde_json::from_str::<TextPart<'_>>(raw_block.get()) {
                        if let Some(t) = p.text.and_then(string_of) {
                            user_text.push(t);
                        }
                    }
                }
                _ => {}
            }
        }
        if located.first_user_text.is_none() && !user_text.is_empty() {
            located.first_user_text = Some(user_text.join("\n"));
        }
    }
    Some(located)
}

// ---------------------------------------------------------------------------------------------
// Gemini

#[derive(Deserialize)]
struct GeminiBody<'a> {
    #[serde(rename = "systemInstruction", alias = "system_instruction", borrow)]
    system_instruction: Option<GeminiContent<'a>>,
    #[serde(borrow)]
    contents: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
    #[serde(rename = "generationConfig", alias = "generation_config", borrow)]
    generation_config: Option<GeminiGeneration<'a>>,
}

#[derive(Deserialize)]
struct GeminiGeneration<'a> {
    #[serde(rename = "maxOutputTokens", alias = "max_output_tokens", borrow)]
    max_output_tokens: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct GeminiContent<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    parts: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct GeminiPart<'a> {
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(default)]
    thought: bool,
    #[serde(rename = "functionResponse", alias = "function_response", borrow)]
    function_response: Option<GeminiFunctionResponse<'a>>,
}

#[derive(Deserialize)]
struct GeminiFunctionResponse<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    response: Option<GeminiResult<'a>>,
}

/// Where a function's text is kept in its `response` object: Gemini CLI writes `output`
/// (or `error`), others `content` or `result`. Only a string is a candidate.
#[derive(Deserialize)]
struct GeminiResult<'a> {
    #[serde(borrow)]
    output: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

/// The text parts of a Gemini content, thoughts left out, as (span, text).
fn gemini_texts(body: &[u8], parts: &[&RawValue]) -> Vec<(Range<usize>, String)> {
    parts
        .iter()
        .filter_map(|raw| serde_json::from_str::<GeminiPart<'_>>(raw.get()).ok())
        .filter(|p| !p.thought)
        .filter_map(|p| {
            let text = p.text?;
            Some((span_of(body, text), string_of(text)?))
        })
        .collect()
}

fn gemini(body: &[u8]) -> Option<Located> {
    let parsed: GeminiBody<'_> = serde_json::from_slice(body).ok()?;
    let mut located = Located {
        has_tools: non_empty_array(parsed.tools),
        max_output_tokens: max_tokens(
            parsed
                .generation_config
                .as_ref()
                .and_then(|g| g.max_output_tokens),
        ),
        ..Located::default()
    };
    if let Some(parts) = parsed.system_instruction.and_then(|s| s.parts) {
        located.system_end = gemini_texts(body, &parts)
            .pop()
            .map(|(span, text)| SystemEnd { span, text });
    }
    for raw in parsed.contents.unwrap_or_default() {
        let Ok(content) = serde_json::from_str::<GeminiContent<'_>>(raw.get()) else {
            continue;
        };
        // A content with no role is the user's.
        if content.role.as_deref().is_some_and(|r| r != "user") {
            continue;
        }
        let parts = content.parts.unwrap_or_default();
        for raw_part in &parts {
            let Ok(part) = serde_json::from_str::<GeminiPart<'_>>(raw_part.get()) else {
                continue;
            };
            let Some(call) = part.function_response else {
                continue;
            };
            let Some(result) = call.response else {
                continue;
            };
            let Some(text) = [result.output, result.content, result.result]
                .into_iter()
                .flatten()
                .find(|raw| raw.get().starts_with('"'))
            else {
                continue;
            };
            if let Some(decoded) = string_of(text) {
                located.tool_blocks.push(ToolBlock {
                    span: span_of(body, text),
                    text: decoded,
                    call_id: call.id.or(call.name).map(Cow::into_owned),
                });
            }
        }
        if located.first_user_text.is_none() {
            let texts = gemini_texts(body, &parts);
            if !texts.is_empty() {
                located.first_user_text = Some(
                    texts
                        .into_iter()
                        .map(|(_, t)| t)
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
        }
    }
    Some(located)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_function_responses_and_the_system_instruction_are_found() {
        let body = br#"{"systemInstruction":{"parts":[{"text":"be brief"}]},
            "contents":[{"role":"user","parts":[{"text":"list files"}]},
              {"role":"model","parts":[{"functionCall":{"name":"ls","args":{}}}]},
              {"role":"user","parts":[{"functionResponse":{"id":"c1","name":"ls","response":{"output":"a\nb"}}}]}],
            "tools":[{"functionDeclarations":[{"name":"ls"}]}],
            "generationConfig":{"maxOutputTokens":99}}"#;
        let l = locate(Dialect::Gemini, body).unwrap();
        assert_eq!(l.tool_blocks.len(), 1);
        assert_eq!(l.tool_blocks[0].text, "a\nb");
        assert_eq!(l.tool_blocks[0].call_id.as_deref(), Some("c1"));
        assert_eq!(&body[l.tool_blocks[0].span.clone()], br#""a\nb""#);
        assert_eq!(l.system_end.unwrap().text, "be brief");
        assert_eq!(l.first_user_text.as_deref(), Some("list files"));
        assert!(l.has_tools);
        assert_eq!(l.max_output_tokens, Some(99));
    }

    fn at<'a>(body: &'a [u8], span: &Range<usize>) -> &'a str {
        std::str::from_utf8(&body[span.clone()]).unwrap()
    }

    #[test]
    fn chat_tool_messages_strings_and_parts() {
        let body = br#"{"model":"m","messages":[
            {"role":"system","content":"You are an agent."},
            {"role":"user","content":"fix it"},
            {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"line\u0041\n"},
            {"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"part one"},{"type":"image_url","image_url":{"url":"x"}}]}
        ],"tools":[{"type":"function"}],"max_completion_tokens":500}"#;
        let l = locate(Dialect::OpenAiChat, body).unwrap();
        assert_eq!(l.tool_blocks.len(), 2);
        assert_eq!(l.tool_blocks[0].text, "lineA\n");
        assert_eq!(at(body, &l.tool_blocks[0].span), r#""line\u0041\n""#);
        assert_eq!(l.tool_blocks[0].call_id.as_deref(), Some("c1"));
        assert_eq!(at(body, &l.tool_blocks[1].span), r#""part one""#);
        assert_eq!(l.system_end.unwrap().text, "You are an agent.");
        assert!(l.has_tools);
        assert_eq!(l.first_user_text.as_deref(), Some("fix it"));
        assert_eq!(l.max_output_tokens, Some(500));
    }

    #[test]
    fn responses_function_call_outputs_and_instructions() {
        let body = br#"{"model":"m","instructions":"Be useful.","input":[
            {"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]},
            {"type":"function_call","call_id":"f1","name":"bash","arguments":"{}"},
            {"type":"function_call_output","call_id":"f1","output":"total 0"}
        ],"tools":[]}"#;
        let l = locate(Dialect::OpenAiResponses, body).unwrap();
        assert_eq!(l.tool_blocks.len(), 1);
        assert_eq!(at(body, &l.tool_blocks[0].span), r#""total 0""#);
        assert_eq!(l.tool_blocks[0].call_id.as_deref(), Some("f1"));
        assert_eq!(l.system_end.unwrap().text, "Be useful.");
        assert!(!l.has_tools, "an empty tools list offers nothing");
        assert_eq!(l.first_user_text.as_deref(), Some("hello"));
    }

    #[test]
    fn anthropic_tool_results_with_strings_and_block_lists() {
        let body = br#"{"model":"m","max_tokens":1024,"system":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}],
          "messages":[
            {"role":"user","content":"first"},
            {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},
            {"role":"user","content":[
               {"type":"tool_result","tool_use_id":"t1","content":"out one"},
               {"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"out two"},{"type":"image","source":{}}]},
               {"type":"text","text":"next"}]}
          ],"tools":[{"name":"bash"}]}"#;
        let l = locate(Dialect::AnthropicMessages, body).unwrap();
        let texts: Vec<&str> = l.tool_blocks.iter().map(|b| b.text.as_str()).collect();
        assert_eq!(texts, ["out one", "out two"]);
        assert_eq!(l.tool_blocks[1].call_id.as_deref(), Some("t2"));
        let sys = l.system_end.unwrap();
        assert_eq!((sys.text.as_str(), at(body, &sys.span)), ("b", r#""b""#));
        assert_eq!(l.first_user_text.as_deref(), Some("first"));
        assert_eq!(l.max_output_tokens, Some(1024));
    }

    #[test]
    fn unknown_shapes_are_skipped_not_guessed() {
        let body = br#"{"model":"m","messages":[{"role":"tool","content":42},{"role":"tool","content":{"x":1}},"junk"]}"#;
        let l = locate(Dialect::OpenAiChat, body).unwrap();
        assert!(l.tool_blocks.is_empty());
        assert!(locate(Dialect::OpenAiChat, b"[1,2]").is_none());
        assert!(locate(Dialect::AnthropicMessages, br#"{"messages":7}"#).is_none());
    }
}

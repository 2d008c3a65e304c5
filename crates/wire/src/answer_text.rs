//! The text of a streamed answer as it goes by: what the model wrote (text, thinking, tool
//! arguments), gathered from each frame so that, when a stream ends before the provider
//! reports its output tokens (the client left midway, or the provider never counts), the
//! gateway can count what was relayed instead of calling it free.
//!
//! Frames are not parsed: the string values of the few members that carry generated text
//! in each dialect are found by their names and copied as they are written (escapes
//! included, which a count barely notices). At most [`AnswerText::KEPT`] bytes are kept;
//! past that only their number is, counted at four bytes a token.

use memchr::{memchr, memmem};

use crate::dialect::Dialect;

/// The members whose string values are generated text, per dialect. A Responses stream's
/// `*.done` events repeat the whole text under other names (`text`, `arguments`), so only
/// its deltas are read.
fn members(dialect: Dialect) -> &'static [&'static [u8]] {
    match dialect {
        Dialect::OpenAiChat => &[
            b"\"content\"",
            b"\"reasoning_content\"",
            b"\"reasoning\"",
            b"\"arguments\"",
        ],
        Dialect::OpenAiResponses => &[b"\"delta\""],
        Dialect::AnthropicMessages => &[b"\"text\"", b"\"thinking\"", b"\"partial_json\""],
        Dialect::Gemini => &[b"\"text\""],
    }
}

/// What an answer has said so far.
#[derive(Debug, Default)]
pub struct AnswerText {
    kept: String,
    /// Bytes past [`AnswerText::KEPT`], not kept.
    over: u64,
}

impl AnswerText {
    /// The most bytes of text kept for counting.
    pub const KEPT: usize = 256 * 1024;

    /// Takes the generated text out of one frame's data.
    pub fn observe(&mut self, dialect: Dialect, data: &[u8]) {
        for member in members(dialect) {
            for at in memmem::find_iter(data, member) {
                if let Some(text) = string_after(&data[at + member.len()..]) {
                    self.push(text);
                }
            }
        }
    }

    fn push(&mut self, text: &[u8]) {
        let room = Self::KEPT.saturating_sub(self.kept.len());
        if text.len() <= room {
            // Whole JSON strings of a valid document: UTF-8 (lossy only if a provider
            // sent something else).
            self.kept.push_str(&String::from_utf8_lossy(text));
        } else {
            self.over = self.over.saturating_add(text.len() as u64);
        }
    }

    /// What was said, as far as it was kept (escapes as the frames wrote them), and
    /// whether more was said than kept.
    pub fn kept(&self) -> (&str, bool) {
        (&self.kept, self.over > 0)
    }

    /// Nothing was said.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.over == 0
    }

    /// The tokens of what was said: o200k over the kept text, a quarter of the bytes past it.
    pub fn tokens(&self) -> u64 {
        crate::tokenizer::count(&self.kept).saturating_add(self.over.div_ceil(4))
    }
}

/// The raw bytes of a JSON string that follows a member's name (`: "…"`), escapes kept;
/// `None` when the value is not a string.
fn string_after(rest: &[u8]) -> Option<&[u8]> {
    let rest = rest
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start();
    let body = rest.strip_prefix(b"\"")?;
    let mut from = 0;
    loop {
        let quote = from + memchr(b'"', &body[from..])?;
        let backslashes = body[..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return Some(&body[..quote]);
        }
        from = quote + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dialects_deltas_are_read() {
        let mut t = AnswerText::default();
        t.observe(
            Dialect::OpenAiChat,
            br#"{"choices":[{"delta":{"content":"Hello \"you\""},"finish_reason":null}],"usage":null}"#,
        );
        t.observe(
            Dialect::OpenAiChat,
            br#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}"#,
        );
        assert_eq!(t.kept, r#"Hello \"you\"{\"a\":1}"#);

        let mut t = AnswerText::default();
        t.observe(
            Dialect::AnthropicMessages,
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ab"}}"#,
        );
        t.observe(
            Dialect::AnthropicMessages,
            br#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"x\""}}"#,
        );
        assert_eq!(t.kept, r#"ab{\"x\""#);

        let mut t = AnswerText::default();
        t.observe(
            Dialect::OpenAiResponses,
            br#"{"type":"response.output_text.delta","delta":"par","sequence_number":4}"#,
        );
        t.observe(
            Dialect::OpenAiResponses,
            br#"{"type":"response.output_text.done","text":"partial","sequence_number":5}"#,
        );
        assert_eq!(
            t.kept, "par",
            "a done event repeats the text: not counted twice"
        );

        let mut t = AnswerText::default();
        t.observe(
            Dialect::Gemini,
            br#"{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"}}]}"#,
        );
        assert_eq!(t.kept, "hi");
        assert!(t.tokens() >= 1);
    }

    #[test]
    fn values_that_are_not_strings_and_names_inside_strings_are_passed_over() {
        let mut t = AnswerText::default();
        t.observe(
            Dialect::OpenAiChat,
            br#"{"choices":[{"delta":{"content":null,"role":"assistant"}}]}"#,
        );
        t.observe(
            Dialect::OpenAiChat,
            br#"{"choices":[{"delta":{"content":"say \"content\": \"x\""}}]}"#,
        );
        // The escaped name inside the text is not a member: the text is read once.
        assert_eq!(t.kept, r#"say \"content\": \"x\""#);
        assert!(!t.is_empty());
        let mut t = AnswerText::default();
        t.observe(Dialect::OpenAiChat, br#"{"content":"unterminated"#);
        assert!(t.is_empty());
    }

    #[test]
    fn past_the_bound_only_the_bytes_are_counted() {
        let mut t = AnswerText::default();
        let big = format!(r#"{{"delta":"{}"}}"#, "a".repeat(AnswerText::KEPT));
        t.observe(Dialect::OpenAiResponses, br#"{"delta":"x"}"#);
        t.observe(Dialect::OpenAiResponses, big.as_bytes());
        assert_eq!(t.kept, "x");
        assert_eq!(t.over, AnswerText::KEPT as u64);
        assert!(t.tokens() >= (AnswerText::KEPT / 4) as u64);
    }
}

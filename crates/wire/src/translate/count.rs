//! Token counting requests (Anthropic's `/v1/messages/count_tokens`, Gemini's
//! `:countTokens`) for providers without that endpoint: counted here with a real BPE
//! tokenizer (o200k_base, the one OpenAI's current models use) over everything the request
//! would send, rather than forwarded to an endpoint that does not exist. It reads the IR,
//! so a request of any dialect counts the same way.

use super::ir::{MediaSource, Part, Request};

/// Per-message framing tokens (role and separators), as OpenAI's counting guide adds.
const PER_MESSAGE: u64 = 3;
/// An image's tokens without decoding it: the cost of a ~1.15-megapixel image, the
/// largest Anthropic and OpenAI bill before scaling down. An upper estimate.
const PER_IMAGE: u64 = 1600;

fn text_tokens(text: &str) -> u64 {
    crate::tokenizer::count(text)
}

fn part_tokens(part: &Part) -> u64 {
    match part {
        Part::Text(t) => text_tokens(&t.text),
        Part::Image { .. } => PER_IMAGE,
        Part::Document {
            source: MediaSource::Text(text),
            ..
        } => text_tokens(text),
        // A PDF is billed per page as text plus page images; without parsing it, count it
        // like an image — a floor, not an estimate of a long document.
        Part::Document { .. } => PER_IMAGE,
        Part::ToolCall {
            name, arguments, ..
        } => text_tokens(name) + text_tokens(arguments),
        Part::ToolResult { content, .. } => {
            content.iter().map(part_tokens).sum::<u64>() + PER_MESSAGE
        }
        Part::Thinking { text, .. } => text_tokens(text),
        Part::RedactedThinking { data } => text_tokens(data),
    }
}

/// The input tokens `req` would cost.
pub fn count_tokens(req: &Request) -> u64 {
    let system: u64 = req.system.iter().map(|t| text_tokens(&t.text)).sum();
    let messages: u64 = req
        .messages
        .iter()
        .map(|m| PER_MESSAGE + m.parts.iter().map(part_tokens).sum::<u64>())
        .sum();
    let tools: u64 = req
        .tools
        .iter()
        .map(|t| {
            text_tokens(&t.name)
                + t.description.as_deref().map_or(0, text_tokens)
                + text_tokens(&t.schema.to_string())
        })
        .sum();
    system + messages + tools + PER_MESSAGE
}

/// The output tokens of a whole answer: what its parts say.
pub fn response_tokens(resp: &super::ir::Response) -> u64 {
    resp.parts.iter().map(part_tokens).sum()
}

/// The gateway's own count of a request as it was sent to a provider in `dialect`, for a
/// request the provider never reported usage for; `None` when the body cannot be read.
/// A stand-in, not the provider's figure: the record says so.
pub fn sent_tokens(dialect: crate::dialect::Dialect, body: &[u8]) -> Option<u64> {
    let mut ignored = super::Report::new(dialect);
    let req = super::decode_request(dialect, body, super::Policy::default(), &mut ignored).ok()?;
    Some(count_tokens(&req))
}

/// The gateway's own count of an answer a provider sent whole in `dialect`.
pub fn answer_tokens(dialect: crate::dialect::Dialect, body: &[u8]) -> Option<u64> {
    super::decode_response(dialect, body)
        .ok()
        .map(|r| response_tokens(&r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::messages;

    #[test]
    fn counts_grow_with_what_is_sent() {
        let small = messages::decode_request(
            br#"{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hello world"}]}"#,
            super::super::Policy::default(),
            &mut super::super::Report::new(crate::dialect::Dialect::AnthropicMessages),
        )
        .unwrap();
        let n = count_tokens(&small);
        // "hello world" is 2 tokens in o200k_base, plus framing.
        assert_eq!(n, 2 + 2 * PER_MESSAGE);
        let big = messages::decode_request(
            br#"{"model":"m","max_tokens":5,"system":"You are a careful engineer.","messages":[{"role":"user","content":"hello world"}],
            "tools":[{"name":"grep","description":"search files","input_schema":{"type":"object","properties":{"pattern":{"type":"string"}}}}]}"#, super::super::Policy::default(), &mut super::super::Report::new(crate::dialect::Dialect::AnthropicMessages))
        .unwrap();
        assert!(count_tokens(&big) > n + 10);
    }
}

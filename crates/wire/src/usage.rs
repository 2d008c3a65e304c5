//! Provider-reported token usage, read from JSON responses and stream frames of each dialect.
//!
//! Buckets are normalized so dialects compare: `input` counts every prompt token,
//! cached or not (Anthropic reports cache reads and writes beside `input_tokens`, OpenAI
//! inside `prompt_tokens`, Gemini inside `promptTokenCount`); `cache_read` and
//! `cache_write` are parts of it. `output` counts reasoning too (Gemini reports thoughts
//! beside `candidatesTokenCount`, OpenAI inside `completion_tokens`); `reasoning` is part
//! of it.

use std::borrow::Cow;

use memchr::memmem;
use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::dialect::Dialect;
use crate::scan::{whole_object, Scanner, Seen, Unsure};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub reasoning: u64,
}

#[derive(Deserialize, Default, Debug, PartialEq)]
struct Details {
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

/// Every usage field any of the three dialects (and DeepSeek) sends; read without
/// building a JSON tree, and with absent fields told apart from zeros.
#[derive(Deserialize, Default, Debug, PartialEq)]
struct UsageWire {
    // OpenAI Chat
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<Details>,
    completion_tokens_details: Option<Details>,
    prompt_cache_hit_tokens: Option<u64>,
    // OpenAI Responses and Anthropic
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens_details: Option<Details>,
    output_tokens_details: Option<Details>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl UsageWire {
    fn to_usage(&self, dialect: Dialect) -> Usage {
        let detail = |d: &Option<Details>, f: fn(&Details) -> Option<u64>| d.as_ref().and_then(f);
        match dialect {
            Dialect::OpenAiChat => Usage {
                input: self.prompt_tokens.unwrap_or(0),
                output: self.completion_tokens.unwrap_or(0),
                cache_read: detail(&self.prompt_tokens_details, |d| d.cached_tokens)
                    .or(self.prompt_cache_hit_tokens)
                    .unwrap_or(0),
                cache_write: 0,
                reasoning: detail(&self.completion_tokens_details, |d| d.reasoning_tokens)
                    .unwrap_or(0),
            },
            Dialect::OpenAiResponses => Usage {
                input: self.input_tokens.unwrap_or(0),
                output: self.output_tokens.unwrap_or(0),
                cache_read: detail(&self.input_tokens_details, |d| d.cached_tokens).unwrap_or(0),
                cache_write: 0,
                reasoning: detail(&self.output_tokens_details, |d| d.reasoning_tokens).unwrap_or(0),
            },
            // Read by `GeminiUsageWire`; a Gemini body has none of these fields.
            Dialect::AnthropicMessages | Dialect::Gemini => {
                let cache_read = self.cache_read_input_tokens.unwrap_or(0);
                let cache_write = self.cache_creation_input_tokens.unwrap_or(0);
                Usage {
                    input: self
                        .input_tokens
                        .unwrap_or(0)
                        .saturating_add(cache_read)
                        .saturating_add(cache_write),
                    output: self.output_tokens.unwrap_or(0),
                    cache_read,
                    cache_write,
                    reasoning: 0,
                }
            }
        }
    }
}

/// Gemini's `usageMetadata`. Its prompt count includes the cached tokens; thoughts are
/// counted apart from the candidates, and tool-use prompts (Google's own tools) apart
/// from the prompt.
#[derive(Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct GeminiUsageWire {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    tool_use_prompt_token_count: Option<u64>,
}

impl GeminiUsageWire {
    fn to_usage(&self) -> Usage {
        let thoughts = self.thoughts_token_count.unwrap_or(0);
        Usage {
            input: self
                .prompt_token_count
                .unwrap_or(0)
                .saturating_add(self.tool_use_prompt_token_count.unwrap_or(0)),
            output: self
                .candidates_token_count
                .unwrap_or(0)
                .saturating_add(thoughts),
            cache_read: self.cached_content_token_count.unwrap_or(0),
            cache_write: 0,
            reasoning: thoughts,
        }
    }
}

/// The parts of a Gemini response, or of one of its stream frames (each a whole response),
/// that carry the served model and the usage so far.
#[derive(Deserialize)]
struct GeminiHead<'a> {
    #[serde(borrow, rename = "modelVersion")]
    model_version: Option<Cow<'a, str>>,
    #[serde(rename = "usageMetadata")]
    usage_metadata: Option<GeminiUsageWire>,
    /// Only whether a candidate names why it finished.
    candidates: Option<Vec<GeminiCandidate>>,
}

#[derive(Deserialize)]
struct GeminiCandidate {
    #[serde(rename = "finishReason")]
    finish_reason: Option<IgnoredAny>,
}

/// The parts of a response object, or of one stream event, that carry model and usage.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<UsageWire>,
    /// Only its length matters: an empty list marks OpenAI's usage-only chunk.
    choices: Option<Vec<IgnoredAny>>,
    /// Responses events nest the response object; Anthropic's `message_start` the message.
    #[serde(borrow)]
    response: Option<Inner<'a>>,
    #[serde(borrow)]
    message: Option<Inner<'a>>,
}

#[derive(Deserialize)]
struct Inner<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<UsageWire>,
}

/// Usage from a `usage` object already parsed as JSON.
pub fn from_usage_value(dialect: Dialect, v: &serde_json::Value) -> Option<Usage> {
    if dialect == Dialect::Gemini {
        return GeminiUsageWire::deserialize(v).ok().map(|u| u.to_usage());
    }
    UsageWire::deserialize(v).ok().map(|u| u.to_usage(dialect))
}

/// Usage and the served model from a whole (non-streamed) JSON response.
pub fn from_response(dialect: Dialect, body: &[u8]) -> (Option<Usage>, Option<String>) {
    if dialect == Dialect::Gemini {
        // Its fields have names of their own, which the direct reader does not know.
        let Ok(head) = serde_json::from_slice::<GeminiHead<'_>>(body) else {
            return (None, None);
        };
        return (
            head.usage_metadata.map(|u| u.to_usage()),
            head.model_version.map(Cow::into_owned),
        );
    }
    let (usage, model) = match scanned(body) {
        Ok(read) => read,
        Err(Unsure) => {
            let Ok(head) = serde_json::from_slice::<Head<'_>>(body) else {
                return (None, None);
            };
            (head.usage, head.model.map(Cow::into_owned))
        }
    };
    (usage.map(|u| u.to_usage(dialect)), model)
}

/// What `serde_json::from_slice::<Head>` reads from a whole response, read directly (see
/// [`crate::scan`]); `Unsure` for anything serde should decide. Members other than these
/// four are passed over by their structure, unchecked (most of an answer's bytes and
/// most of the cost of checking them): on an answer serde reads, the two agree; on one
/// broken inside such a member, this may still read the usage serde would refuse, which
/// the ledger is glad of.
fn scanned(body: &[u8]) -> Result<(Option<UsageWire>, Option<String>), Unsure> {
    let (mut usage, mut model) = (None, None);
    let mut seen = Seen::default();
    whole_object(body, |s, key| {
        match key {
            b"model" => {
                seen.first(0)?;
                model = s.str_or_null()?.map(str::to_owned);
            }
            b"usage" => {
                seen.first(1)?;
                usage = usage_or_null(s)?;
            }
            b"type" => {
                seen.first(2)?;
                s.str_or_null()?;
            }
            b"choices" => {
                seen.first(3)?;
                if !s.eat_null() {
                    s.expect_array()?;
                    s.skip_over()?;
                }
            }
            // Objects that nest the response (stream events): serde reads those.
            b"response" | b"message" => return Err(Unsure),
            _ => s.skip_over()?,
        }
        Ok(())
    })?;
    Ok((usage, model))
}

fn usage_or_null(s: &mut Scanner<'_>) -> Result<Option<UsageWire>, Unsure> {
    s.object_or_null(|s, key, u: &mut UsageWire, seen| {
        let (field, slot): (u32, Slot<'_>) = match key {
            b"prompt_tokens" => (0, Slot::Count(&mut u.prompt_tokens)),
            b"completion_tokens" => (1, Slot::Count(&mut u.completion_tokens)),
            b"prompt_tokens_details" => (2, Slot::Details(&mut u.prompt_tokens_details)),
            b"completion_tokens_details" => (3, Slot::Details(&mut u.completion_tokens_details)),
            b"prompt_cache_hit_tokens" => (4, Slot::Count(&mut u.prompt_cache_hit_tokens)),
            b"input_tokens" => (5, Slot::Count(&mut u.input_tokens)),
            b"output_tokens" => (6, Slot::Count(&mut u.output_tokens)),
            b"input_tokens_details" => (7, Slot::Details(&mut u.input_tokens_details)),
            b"output_tokens_details" => (8, Slot::Details(&mut u.output_tokens_details)),
            b"cache_read_input_tokens" => (9, Slot::Count(&mut u.cache_read_input_tokens)),
            b"cache_creation_input_tokens" => (10, Slot::Count(&mut u.cache_creation_input_tokens)),
            _ => return s.skip_value(1),
        };
        seen.first(field)?;
        match slot {
            Slot::Count(n) => *n = s.u64_or_null()?,
            Slot::Details(d) => *d = details_or_null(s)?,
        }
        Ok(())
    })
}

enum Slot<'u> {
    Count(&'u mut Option<u64>),
    Details(&'u mut Option<Details>),
}

fn details_or_null(s: &mut Scanner<'_>) -> Result<Option<Details>, Unsure> {
    s.object_or_null(|s, key, d: &mut Details, seen| {
        let (field, slot) = match key {
            b"cached_tokens" => (0, &mut d.cached_tokens),
            b"reasoning_tokens" => (1, &mut d.reasoning_tokens),
            _ => return s.skip_value(2),
        };
        seen.first(field)?;
        *slot = s.u64_or_null()?;
        Ok(())
    })
}

/// Collects usage from a stream, one frame's `data` at a time, and notes where the
/// answer ends.
#[derive(Debug, Default)]
pub struct StreamUsage {
    pub usage: Option<Usage>,
    pub model: Option<String>,
    /// A Responses stream's response id, for an error event that ends it early.
    pub response_id: Option<String>,
    /// The answer is whole: the event that ends it has been seen, and with it the
    /// provider's final usage (OpenAI Chat: the chunk with `finish_reason` and the usage
    /// chunk after it; Responses: `response.completed`, `.incomplete` or `.failed`;
    /// Messages: `message_stop`; Gemini: the frame with `finishReason` and
    /// `usageMetadata`).
    pub ended: bool,
    /// Nothing more is due: the answer has ended, and so has its stream (OpenAI Chat:
    /// `[DONE]`; the others end with the event that ends the answer).
    pub closed: bool,
    /// OpenAI Chat: a chunk named why a choice finished.
    finished: bool,
}

/// Whether `data` has `"<key>"` followed by a value other than `null`.
fn carries(data: &[u8], key: &[u8]) -> bool {
    memmem::find_iter(data, key).any(|at| {
        let rest = data[at + key.len()..].trim_ascii_start();
        let value = rest.strip_prefix(b":").map(<[u8]>::trim_ascii_start);
        !value.is_some_and(|v| v.starts_with(b"null"))
    })
}

/// The Responses events that end an answer.
const RESPONSES_ENDS: [&str; 3] = [
    "response.completed",
    "response.incomplete",
    "response.failed",
];

/// Whether a frame has a `"usage"` field that is not `null`: an OpenAI Chat stream asked
/// for usage sends `"usage":null` in every chunk but the last, and parsing each of those
/// would cost more than relaying it.
fn carries_usage(data: &[u8]) -> bool {
    carries(data, b"\"usage\"")
}

impl StreamUsage {
    /// Looks at one frame's data. Returns true when it is an OpenAI Chat usage-only chunk
    /// (`"choices":[]` with a usage object), which the relay may need to hide.
    pub fn observe(&mut self, dialect: Dialect, data: &[u8]) -> bool {
        match dialect {
            Dialect::Gemini => {
                self.observe_gemini(data);
                return false;
            }
            Dialect::OpenAiChat => {
                if data == b"[DONE]" {
                    self.ended = true;
                    self.closed = true;
                    return false;
                }
                if !self.finished && carries(data, b"\"finish_reason\"") {
                    self.finished = true;
                }
            }
            _ => {}
        }
        // Events that may end an answer are read whole, usage or not (a failed response
        // may have none); the names are searched for only in frames that could be one.
        let may_end = match dialect {
            Dialect::OpenAiResponses => RESPONSES_ENDS
                .iter()
                .any(|end| memmem::find(data, end.as_bytes()).is_some()),
            Dialect::AnthropicMessages => memmem::find(data, b"\"message_stop\"").is_some(),
            _ => false,
        };
        let has_usage = carries_usage(data);
        if !has_usage && !may_end && self.model.is_some() {
            return false;
        }
        let Ok(head) = serde_json::from_slice::<Head<'_>>(data) else {
            return false;
        };
        match dialect {
            Dialect::OpenAiChat => {
                self.take_model(head.model);
                if let Some(u) = head.usage {
                    self.usage = Some(u.to_usage(dialect));
                    // Sent after the finish (or with it, by some servers): the answer's
                    // usage is final.
                    self.ended |= self.finished;
                    return head.choices.is_some_and(|c| c.is_empty());
                }
            }
            Dialect::OpenAiResponses => {
                if head
                    .kind
                    .as_deref()
                    .is_some_and(|kind| RESPONSES_ENDS.contains(&kind))
                {
                    self.ended = true;
                    self.closed = true;
                }
                if let Some(response) = head.response {
                    self.take_model(response.model);
                    if self.response_id.is_none() {
                        self.response_id = response.id.map(Cow::into_owned);
                    }
                    if let Some(u) = response.usage {
                        self.usage = Some(u.to_usage(dialect));
                    }
                }
            }
            Dialect::AnthropicMessages => match head.kind.as_deref() {
                Some("message_stop") => {
                    self.ended = true;
                    self.closed = true;
                }
                Some("message_start") => {
                    if let Some(message) = head.message {
                        self.take_model(message.model);
                        self.usage = message.usage.map(|u| u.to_usage(dialect));
                    }
                }
                Some("message_delta") => {
                    if let Some(u) = head.usage {
                        let mut merged = self.usage.unwrap_or_default();
                        // message_delta carries cumulative counts; input buckets appear only
                        // when they changed, so keep what message_start said otherwise.
                        let read = u.cache_read_input_tokens.unwrap_or(merged.cache_read);
                        let write = u.cache_creation_input_tokens.unwrap_or(merged.cache_write);
                        if let Some(input) = u.input_tokens {
                            merged.input = input.saturating_add(read).saturating_add(write);
                        }
                        merged.cache_read = read;
                        merged.cache_write = write;
                        if let Some(output) = u.output_tokens {
                            merged.output = output;
                        }
                        self.usage = Some(merged);
                    }
                }
                _ => {}
            },
            Dialect::Gemini => {}
        }
        false
    }

    /// A Gemini frame is a whole response whose usage counts everything so far: the
    /// latest replaces what came before. Frames without usage are not parsed once the
    /// model is known.
    fn observe_gemini(&mut self, data: &[u8]) {
        if self.model.is_some() && memmem::find(data, b"\"usageMetadata\"").is_none() {
            return;
        }
        // A stream asked without `alt=sse` is one JSON array of responses.
        let heads = if data.trim_ascii_start().starts_with(b"[") {
            serde_json::from_slice::<Vec<GeminiHead<'_>>>(data).ok()
        } else {
            serde_json::from_slice::<GeminiHead<'_>>(data)
                .ok()
                .map(|h| vec![h])
        };
        for head in heads.into_iter().flatten() {
            self.take_model(head.model_version);
            let finished = head
                .candidates
                .iter()
                .flatten()
                .any(|c| c.finish_reason.is_some());
            if let Some(u) = head.usage_metadata {
                self.usage = Some(u.to_usage());
                if finished {
                    self.ended = true;
                    self.closed = true;
                }
            }
        }
    }

    fn take_model(&mut self, model: Option<Cow<'_, str>>) {
        if self.model.is_none() {
            self.model = model.map(Cow::into_owned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_usage_is_not_usage() {
        assert!(!carries_usage(br#"{"choices":[],"usage":null}"#));
        assert!(!carries_usage(br#"{"usage" : null,"x":1}"#));
        assert!(!carries_usage(br#"{"content":"the \"usage\" field"}"#));
        assert!(carries_usage(
            br#"{"choices":[],"usage":{"prompt_tokens":1}}"#
        ));
        assert!(carries_usage(br#"{"a":{"usage":null},"usage":{"x":1}}"#));
    }

    #[test]
    fn chat_chunks_with_null_usage_are_skipped_once_the_model_is_known() {
        let mut u = StreamUsage::default();
        let first = br#"{"model":"gpt-x","choices":[{"delta":{"content":"a"}}],"usage":null}"#;
        assert!(!u.observe(Dialect::OpenAiChat, first));
        assert_eq!(u.model.as_deref(), Some("gpt-x"));
        let last = br#"{"model":"gpt-x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#;
        assert!(u.observe(Dialect::OpenAiChat, last), "a usage-only chunk");
        let usage = u.usage.expect("usage read");
        assert_eq!((usage.input, usage.output), (3, 4));
    }

    #[test]
    fn huge_provider_counts_saturate_instead_of_overflowing() {
        let max = u64::MAX;
        let body = format!(
            r#"{{"usage":{{"input_tokens":{max},"cache_read_input_tokens":{max},"cache_creation_input_tokens":{max},"output_tokens":1}}}}"#
        );
        let (u, _) = from_response(Dialect::AnthropicMessages, body.as_bytes());
        assert_eq!(u.map(|u| u.input), Some(max));
        let mut stream = StreamUsage::default();
        stream.observe(
            Dialect::AnthropicMessages,
            br#"{"type":"message_start","message":{"model":"m","usage":{"input_tokens":1}}}"#,
        );
        stream.observe(
            Dialect::AnthropicMessages,
            body.replace("{\"usage\"", "{\"type\":\"message_delta\",\"usage\"")
                .as_bytes(),
        );
        assert_eq!(stream.usage.map(|u| u.input), Some(max));
    }

    #[test]
    fn anthropic_input_counts_cache_buckets() {
        let body = br#"{"model":"claude-x","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":7}}"#;
        let (u, model) = from_response(Dialect::AnthropicMessages, body);
        assert_eq!(model.as_deref(), Some("claude-x"));
        assert_eq!(
            u,
            Some(Usage {
                input: 115,
                output: 7,
                cache_read: 100,
                cache_write: 5,
                reasoning: 0
            })
        );
    }

    #[test]
    fn openai_chat_usage_chunk_is_recognized() {
        let mut s = StreamUsage::default();
        assert!(!s.observe(
            Dialect::OpenAiChat,
            br#"{"model":"gpt-5","choices":[{"delta":{"content":"hi"}}],"usage":null}"#
        ));
        let hide = s.observe(
            Dialect::OpenAiChat,
            br#"{"model":"gpt-5","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1}}}"#,
        );
        assert!(hide);
        assert_eq!(
            s.usage,
            Some(Usage {
                input: 9,
                output: 2,
                cache_read: 4,
                cache_write: 0,
                reasoning: 1
            })
        );
        assert_eq!(s.model.as_deref(), Some("gpt-5"));
    }

    #[test]
    fn anthropic_stream_merges_start_and_delta() {
        let mut s = StreamUsage::default();
        s.observe(Dialect::AnthropicMessages, br#"{"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":20,"cache_read_input_tokens":3,"output_tokens":1}}}"#);
        s.observe(Dialect::AnthropicMessages, br#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#);
        assert_eq!(
            s.usage,
            Some(Usage {
                input: 23,
                output: 15,
                cache_read: 3,
                cache_write: 0,
                reasoning: 0
            })
        );
    }

    #[test]
    fn responses_usage_comes_from_the_completed_event() {
        let mut s = StreamUsage::default();
        s.observe(
            Dialect::OpenAiResponses,
            br#"{"type":"response.created","response":{"model":"gpt-5","usage":null}}"#,
        );
        s.observe(Dialect::OpenAiResponses, br#"{"type":"response.completed","response":{"model":"gpt-5","usage":{"input_tokens":5,"output_tokens":6,"input_tokens_details":{"cached_tokens":1},"output_tokens_details":{"reasoning_tokens":2}}}}"#);
        assert_eq!(
            s.usage,
            Some(Usage {
                input: 5,
                output: 6,
                cache_read: 1,
                cache_write: 0,
                reasoning: 2
            })
        );
    }

    /// The direct reader and serde agree on every document the reader answers for, and
    /// it answers for the shapes providers send.
    #[test]
    fn the_direct_reader_agrees_with_serde() {
        fn by_serde(body: &[u8]) -> Option<(Option<UsageWire>, Option<String>)> {
            serde_json::from_slice::<Head<'_>>(body)
                .ok()
                .map(|h| (h.usage, h.model.map(Cow::into_owned)))
        }
        for provider_shaped in [
            &br#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-5-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"there\"\n\u00e9","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":301,"completion_tokens":42,"total_tokens":343,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0}},"service_tier":"default","system_fingerprint":null}"#[..],
            br#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":7}}"#,
            br#"{"id":"resp_1","object":"response","model":"gpt-5","output":[],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":1},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":11}}"#,
            b" {\"model\" : \"m\" , \"usage\" : null }\n",
        ] {
            let direct = scanned(provider_shaped).ok();
            assert!(direct.is_some(), "{}", String::from_utf8_lossy(provider_shaped));
            assert_eq!(direct, by_serde(provider_shaped));
        }

        // Random documents, valid and broken: wherever the reader answers on a document
        // serde reads, serde agrees; on a broken one it returns without panicking.
        const TOP: &[&str] = &[
            "model", "usage", "type", "choices", "id", "created", "model", "x\\u0041", "response",
        ];
        const USAGE: &[&str] = &[
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "prompt_tokens_details",
            "completion_tokens_details",
            "input_tokens",
            "output_tokens",
            "input_tokens_details",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "prompt_cache_hit_tokens",
            "output_tokens_details",
            "cached_tokens",
            "reasoning_tokens",
        ];
        const DOCS: usize = 20_000;
        let answered = crate::scan::random::agreement(
            0x2545_f491_4f6c_dd1d,
            DOCS,
            TOP,
            USAGE,
            |doc| {
                let read = scanned(doc).ok();
                serde_json::from_slice::<IgnoredAny>(doc)
                    .is_ok()
                    .then_some(read)
                    .flatten()
            },
            by_serde,
        );
        // Floats, escapes and repeated fields are common here by design, rare from providers.
        assert!(
            answered > DOCS / 10,
            "the reader answered {answered} of {DOCS}"
        );
    }
}

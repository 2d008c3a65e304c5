//! Amazon Bedrock as a provider that speaks Anthropic Messages: pure codecs between
//! Messages and Bedrock's wire, no I/O. The provider edge signs and sends; this turns the
//! bytes.
//!
//! - [`eventstream`] — the AWS event-stream framing Bedrock streams in, read incrementally.
//! - [`invoke`]      — InvokeModel, for Anthropic's models: the body edited, the stream unwrapped.
//! - [`converse`]    — the Converse API, for every other model: requests and answers translated.
//! - [`error`]       — Bedrock's errors, HTTP and in-stream, in Anthropic's shape.
//!
//! [`SseFromEventStream`] is the one entry for a streamed body: event-stream bytes in,
//! Anthropic SSE bytes out, whichever API answered.

pub mod converse;
pub mod error;
pub mod eventstream;
pub mod invoke;

#[cfg(test)]
mod testing;

pub use converse::{converse_request, converse_response, ConverseToSse};
pub use error::error_to_anthropic;
pub use eventstream::{FrameError, FrameReader, HeaderValue, Message};
pub use invoke::{invoke_body, vertex_body, InvokeToSse, VERTEX_ANTHROPIC_VERSION};

/// Whether a Bedrock model id (or inference profile, or ARN) names an Anthropic model,
/// which InvokeModel serves in Anthropic's own Messages shape and Converse as Claude.
pub fn is_anthropic_model(model: &str) -> bool {
    model.starts_with("anthropic.")
        || model.contains(".anthropic.")
        || model.contains("/anthropic.")
}

/// Which Bedrock API a stream comes from: they frame alike and say different things.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamApi {
    /// InvokeModelWithResponseStream: Anthropic's own events, wrapped.
    Invoke,
    /// ConverseStream: Converse's events, translated.
    Converse,
}

#[derive(Debug)]
enum Translator {
    Invoke(InvokeToSse),
    Converse(ConverseToSse),
}

/// A streamed Bedrock body as Anthropic SSE, chunk by chunk.
#[derive(Debug)]
pub struct SseFromEventStream {
    reader: FrameReader,
    translator: Translator,
}

impl SseFromEventStream {
    /// `model` is the name the client asked for (Converse's events do not carry one);
    /// `max_frame` caps one event-stream frame, in bytes.
    pub fn new(api: StreamApi, model: &str, max_frame: usize) -> Self {
        let translator = match api {
            StreamApi::Invoke => Translator::Invoke(InvokeToSse::new()),
            StreamApi::Converse => Translator::Converse(ConverseToSse::new(model)),
        };
        Self {
            reader: FrameReader::new(max_frame),
            translator,
        }
    }

    /// The SSE for the frames `chunk` completes. A frame error is the stream's end (see
    /// [`FrameReader::push`] for what was read before it).
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<u8>, FrameError> {
        let mut out = Vec::new();
        for message in self.reader.push(chunk)? {
            out.extend(match &mut self.translator {
                Translator::Invoke(t) => t.on_message(&message),
                Translator::Converse(t) => t.on_message(&message),
            });
        }
        Ok(out)
    }

    /// At the end of the body: an error if it ended inside a frame (or a frame error is
    /// still unreported), else what ends the answer if Bedrock did not.
    pub fn finish(&mut self) -> Result<Vec<u8>, FrameError> {
        self.reader.finish()?;
        Ok(match &mut self.translator {
            Translator::Invoke(t) => t.finish(),
            Translator::Converse(t) => t.finish(),
        })
    }
}

/// One SSE event as Anthropic frames them. `data` must hold no line break.
pub(crate) fn sse_frame(out: &mut Vec<u8>, event: &str, data: &[u8]) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(event.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
}

/// An id for an answer Bedrock gave none for (Converse's is in a response header, not the
/// body): `msg_bdrk_` and 24 hex digits, unique enough for a client to tell answers apart.
/// std's per-process random hash keys stand in for a random number generator.
pub(crate) fn made_up_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(now);
    let high = hasher.finish();
    hasher.write_u8(0);
    let low = hasher.finish() as u32;
    format!("msg_bdrk_{high:016x}{low:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::testing::{chunk_frame, event_frame, sse_events, Rng};
    use serde_json::json;

    #[test]
    fn anthropic_models_are_told_from_others() {
        assert!(is_anthropic_model("anthropic.claude-3-haiku-20240307-v1:0"));
        assert!(is_anthropic_model(
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
        ));
        assert!(is_anthropic_model(
            "arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-x"
        ));
        assert!(!is_anthropic_model("amazon.nova-pro-v1:0"));
        assert!(!is_anthropic_model("meta.llama3-70b-instruct-v1:0"));
    }

    fn run(api: StreamApi, bytes: &[u8], rng: &mut Rng) -> Result<Vec<u8>, FrameError> {
        let mut s = SseFromEventStream::new(api, "the-model", 1 << 20);
        let mut out = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let to = (at + 1 + rng.below(30)).min(bytes.len());
            out.extend(s.push(&bytes[at..to])?);
            at = to;
        }
        out.extend(s.finish()?);
        Ok(out)
    }

    fn whole(api: StreamApi, bytes: &[u8]) -> Vec<u8> {
        let mut s = SseFromEventStream::new(api, "the-model", 1 << 20);
        let mut out = s.push(bytes).unwrap();
        out.extend(s.finish().unwrap());
        out
    }

    #[test]
    fn an_invoke_stream_split_anywhere_gives_the_same_sse() {
        let events = [
            json!({"type":"message_start","message":{"id":"msg_bdrk_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}),
            json!({"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3,"outputTokenCount":2,"invocationLatency":10,"firstByteLatency":5}}),
        ];
        let bytes: Vec<u8> = events.iter().flat_map(chunk_frame).collect();
        let mut rng = Rng(3);
        let whole = whole(StreamApi::Invoke, &bytes);
        let got = sse_events(&whole);
        assert_eq!(got.len(), events.len());
        for ((name, data), sent) in got.iter().zip(&events) {
            assert_eq!(
                (name.as_str(), data),
                (sent["type"].as_str().unwrap(), sent)
            );
        }
        for _ in 0..50 {
            assert_eq!(run(StreamApi::Invoke, &bytes, &mut rng).unwrap(), whole);
        }
    }

    #[test]
    fn a_converse_stream_split_anywhere_gives_the_same_events() {
        let frames = [
            event_frame("messageStart", br#"{"role":"assistant","p":"abc"}"#),
            event_frame("contentBlockDelta", br#"{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"ab"}"#),
            event_frame("contentBlockStop", br#"{"contentBlockIndex":0}"#),
            event_frame("messageStop", br#"{"stopReason":"end_turn"}"#),
            event_frame("metadata", br#"{"usage":{"inputTokens":5,"outputTokens":1,"totalTokens":6},"metrics":{"latencyMs":1}}"#),
        ];
        let bytes = frames.concat();
        let mut rng = Rng(11);
        // The made-up id differs per stream; everything else is the same.
        let strip = |sse: Vec<u8>| {
            let mut events = sse_events(&sse);
            events[0].1["message"]["id"] = json!("x");
            events
        };
        let whole = strip(whole(StreamApi::Converse, &bytes));
        assert_eq!(whole.len(), 6);
        assert_eq!(whole[0].1["message"]["model"], "the-model");
        assert_eq!(whole[4].1["usage"]["input_tokens"], 5);
        for _ in 0..50 {
            assert_eq!(
                strip(run(StreamApi::Converse, &bytes, &mut rng).unwrap()),
                whole
            );
        }
    }

    #[test]
    fn a_body_cut_inside_a_frame_is_an_error_at_finish() {
        let bytes = event_frame("messageStart", br#"{"role":"assistant"}"#);
        let mut s = SseFromEventStream::new(StreamApi::Converse, "m", 1 << 20);
        assert!(s.push(&bytes[..bytes.len() - 1]).unwrap().is_empty());
        assert_eq!(
            s.finish(),
            Err(FrameError::Truncated {
                have: bytes.len() - 1,
                need: Some(bytes.len())
            })
        );
    }

    /// Random bytes and damaged copies of valid bodies: every codec answers, none panics.
    #[test]
    fn no_codec_panics_on_garbage() {
        let seeds: [&[u8]; 4] = [
            br#"{"model":"m","stream":true,"max_tokens":5,"anthropic_beta":["a"],"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}},{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}],"tools":[{"name":"t","input_schema":{}}],"tool_choice":{"type":"tool","name":"t"}}"#,
            br#"{"output":{"message":{"content":[{"text":"a"},{"toolUse":{"toolUseId":"1","name":"n","input":{}}},{"reasoningContent":{"reasoningText":{"text":"t"}}}]}},"stopReason":"end_turn","usage":{"inputTokens":1}}"#,
            br#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"redactedContent":"AA=="}},"start":{"toolUse":{"toolUseId":"x"}},"stopReason":"end_turn","usage":{}}"#,
            br#"{"message":"Signature expired: now","__type":"a#InvalidSignatureException"}"#,
        ];
        let mut rng = Rng(5);
        for round in 0..3000 {
            let mut input: Vec<u8> = if round % 3 == 0 {
                (0..rng.below(64)).map(|_| rng.below(256) as u8).collect()
            } else {
                seeds[rng.below(seeds.len())].to_vec()
            };
            for _ in 0..rng.below(4) {
                if !input.is_empty() {
                    let at = rng.below(input.len());
                    let damage = b"{}[]\",:0a\x00\\";
                    input[at] = damage[rng.below(damage.len())];
                }
            }
            let _ = invoke_body(&input, &["b1,b2"]);
            let _ = converse_request(&input, "amazon.nova-pro-v1:0");
            let _ = converse_response(&input, "m");
            let _ = error_to_anthropic(
                "p",
                rng.below(600) as u16,
                Some("InvalidSignatureException"),
                &input,
            );
            let mut c = ConverseToSse::new("m");
            for event in [
                "messageStart",
                "contentBlockStart",
                "contentBlockDelta",
                "contentBlockStop",
                "messageStop",
                "metadata",
            ] {
                let m = Message {
                    headers: vec![
                        (":message-type".into(), HeaderValue::String("event".into())),
                        (":event-type".into(), HeaderValue::String(event.into())),
                    ],
                    payload: input.clone().into(),
                };
                let _ = c.on_message(&m);
                let _ = InvokeToSse::new().on_message(&m);
            }
            let _ = c.finish();
        }
    }

    #[test]
    fn made_up_ids_differ() {
        let a = made_up_id();
        assert_eq!(a.len(), "msg_bdrk_".len() + 24);
        assert_ne!(a, made_up_id());
    }
}

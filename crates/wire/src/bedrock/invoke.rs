//! InvokeModel for Anthropic's models: the Messages body as Bedrock wants it, and the
//! streamed answer back as Anthropic's own SSE. Bedrock runs Anthropic's API underneath,
//! so both directions are small edits, not translations.

use std::borrow::Cow;

use base64::Engine as _;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::{sse_error, stream_failure};
use super::eventstream::Message;
use super::sse_frame;

/// The API version Bedrock's Anthropic models take in the body, in place of the header.
pub const BEDROCK_ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";

/// One top-level member, as spans of the original body.
struct Member<'a> {
    key: &'a RawValue,
    value: &'a RawValue,
}

/// Where one top-level member sits in the body.
struct Span<'a> {
    key: Cow<'a, str>,
    key_start: usize,
    value_start: usize,
    value_end: usize,
    value: &'a RawValue,
}

/// The top-level members of a JSON object, in order, borrowed from the input.
struct Members<'a>(Vec<Member<'a>>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<&'de RawValue>()? {
                    let value = map.next_value::<&'de RawValue>()?;
                    out.push(Member { key, value });
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// `body[range]`, empty for a range the parse could not have produced.
fn part(body: &[u8], range: std::ops::Range<usize>) -> &[u8] {
    body.get(range).unwrap_or_default()
}

/// Where `inner`, borrowed from `outer`, sits in it.
fn offset(outer: &[u8], inner: &str) -> Option<usize> {
    (inner.as_ptr() as usize)
        .checked_sub(outer.as_ptr() as usize)
        .filter(|at| at + inner.len() <= outer.len())
}

/// A key's text, with any escapes decoded (`"mod\u0065l"` is `model`).
fn key_text(raw: &RawValue) -> Cow<'_, str> {
    let quoted = raw.get();
    match quoted.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(plain) if !plain.contains('\\') => Cow::Borrowed(plain),
        _ => serde_json::from_str::<String>(quoted)
            .map(Cow::Owned)
            .unwrap_or(Cow::Borrowed(quoted)),
    }
}

/// The client's `anthropic-beta` values, one per feature: a header may list several,
/// comma-separated, and a client may repeat one.
fn beta_list<'a>(betas: &[&'a str], already: &[String]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for beta in betas.iter().flat_map(|b| b.split(',')).map(str::trim) {
        if !beta.is_empty() && !out.contains(&beta) && !already.iter().any(|a| a == beta) {
            out.push(beta);
        }
    }
    out
}

/// The Messages request body as InvokeModel wants it: `model` and `stream` removed (the
/// URL says both), `anthropic_version` added unless the body has one, and the client's
/// `anthropic-beta` header values added as `anthropic_beta` (merged into one the body
/// already has). Everything else stays byte for byte as the client sent it, in its order,
/// so the prefix the provider's prompt cache and our own cache keys see does not move.
pub fn invoke_body(messages_body: &[u8], betas: &[&str]) -> Result<Vec<u8>, String> {
    anthropic_body(messages_body, BEDROCK_ANTHROPIC_VERSION, true, betas)
}

/// The API version Vertex AI's Claude models take in the body.
pub const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// The Messages body as Vertex AI's rawPredict and streamRawPredict want it: `model`
/// removed (the URL names it), `anthropic_version` added unless the body has one; `stream`
/// stays, and betas go as the `anthropic-beta` header, as Anthropic's own.
pub fn vertex_body(messages_body: &[u8]) -> Result<Vec<u8>, String> {
    anthropic_body(messages_body, VERTEX_ANTHROPIC_VERSION, false, &[])
}

/// A cloud's Messages body: `model` (and `stream` when `drop_stream`) removed, its
/// `anthropic_version` added, `betas` merged into `anthropic_beta`; the rest byte for byte.
fn anthropic_body(
    messages_body: &[u8],
    version: &str,
    drop_stream: bool,
    betas: &[&str],
) -> Result<Vec<u8>, String> {
    let Members(members) = serde_json::from_slice::<Members>(messages_body)
        .map_err(|e| format!("the request body is not a JSON object: {e}"))?;
    let out_of_body = || "the request body could not be read in place".to_owned();
    let mut spans = Vec::with_capacity(members.len());
    for m in &members {
        let key_start = offset(messages_body, m.key.get()).ok_or_else(out_of_body)?;
        let value_start = offset(messages_body, m.value.get()).ok_or_else(out_of_body)?;
        spans.push(Span {
            key: key_text(m.key),
            key_start,
            value_start,
            value_end: value_start + m.value.get().len(),
            value: m.value,
        });
    }

    let has_version = spans.iter().any(|s| s.key == "anthropic_version");
    let body_beta = spans.iter().position(|s| s.key == "anthropic_beta");
    // An `anthropic_beta` that is not a list of strings is the client's to fix.
    let existing: Vec<String> = body_beta
        .and_then(|i| serde_json::from_str(spans[i].value.get()).ok())
        .unwrap_or_default();
    let added = beta_list(betas, &existing);
    let merged_beta = match body_beta {
        Some(i) if !added.is_empty() => {
            let mut all: Vec<&str> = existing.iter().map(String::as_str).collect();
            all.extend(&added);
            Some((i, serde_json::to_string(&all).map_err(|e| e.to_string())?))
        }
        _ => None,
    };
    let mut extra = Vec::new();
    if !has_version {
        extra.push(format!(r#""anthropic_version":"{version}""#));
    }
    if body_beta.is_none() && !added.is_empty() {
        let list = serde_json::to_string(&added).map_err(|e| e.to_string())?;
        extra.push(format!(r#""anthropic_beta":{list}"#));
    }

    // The body before the first key and after the last value, kept as they are.
    let open = messages_body
        .iter()
        .position(|b| *b == b'{')
        .ok_or_else(out_of_body)?;
    let head_end = spans.first().map_or(open + 1, |s| s.key_start);
    let tail_start = spans.last().map_or(open + 1, |s| s.value_end);

    let mut out = Vec::with_capacity(messages_body.len() + 64);
    out.extend_from_slice(part(messages_body, 0..head_end));
    let mut wrote_one = false;
    for (i, span) in spans.iter().enumerate() {
        if span.key == "model" || (drop_stream && span.key == "stream") {
            continue;
        }
        if wrote_one {
            // The separator just before this member: a comma and the client's whitespace.
            let separator_start = spans
                .get(i.wrapping_sub(1))
                .map_or(span.key_start, |s| s.value_end);
            out.extend_from_slice(part(messages_body, separator_start..span.key_start));
        }
        match &merged_beta {
            Some((at, list)) if *at == i => {
                out.extend_from_slice(part(messages_body, span.key_start..span.value_start));
                out.extend_from_slice(list.as_bytes());
            }
            _ => out.extend_from_slice(part(messages_body, span.key_start..span.value_end)),
        }
        wrote_one = true;
    }
    for member in extra {
        if wrote_one {
            out.push(b',');
        }
        out.extend_from_slice(member.as_bytes());
        wrote_one = true;
    }
    out.extend_from_slice(part(messages_body, tail_start..messages_body.len()));
    Ok(out)
}

/// A `chunk` event's payload: one Anthropic event, base64'd, beside a padding field `p`
/// (random length, so a response's size does not give its tokens away).
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    bytes: Cow<'a, str>,
}

/// What an Anthropic event says it is.
#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
}

/// InvokeModelWithResponseStream's events as Anthropic's SSE: each `chunk` carries one of
/// Anthropic's own stream events, passed on as it is (the last one's
/// `amazon-bedrock-invocationMetrics` included).
#[derive(Debug, Default)]
pub struct InvokeToSse {
    /// An exception, or a chunk that could not be read, ended the answer.
    ended: bool,
}

impl InvokeToSse {
    pub fn new() -> Self {
        Self::default()
    }

    /// The SSE for one message: an event, an `error` event for an exception or a chunk
    /// that cannot be read, nothing for events of other kinds and after the answer ended.
    pub fn on_message(&mut self, message: &Message) -> Vec<u8> {
        if self.ended {
            return Vec::new();
        }
        if let Some(error) = stream_failure(message) {
            self.ended = true;
            return error;
        }
        if message.event_type() != Some("chunk") {
            return Vec::new();
        }
        match chunk_event(&message.payload) {
            Ok(sse) => sse,
            Err(why) => {
                self.ended = true;
                sse_error("api_error", &format!("Bedrock sent a chunk that {why}"))
            }
        }
    }

    /// Nothing is held back: the stream's own `message_stop` ends it.
    pub fn finish(&mut self) -> Vec<u8> {
        Vec::new()
    }
}

fn chunk_event(payload: &[u8]) -> Result<Vec<u8>, String> {
    let chunk: Chunk =
        serde_json::from_slice(payload).map_err(|e| format!("is not JSON with bytes: {e}"))?;
    let mut json = base64::engine::general_purpose::STANDARD
        .decode(chunk.bytes.as_bytes())
        .map_err(|e| format!("is not base64: {e}"))?;
    let typed: Typed =
        serde_json::from_slice(&json).map_err(|e| format!("holds no Anthropic event: {e}"))?;
    let kind = typed.kind.into_owned();
    if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("names an event {kind:?}"));
    }
    // Line breaks in valid JSON are whitespace between tokens (inside strings they are
    // escaped), and one would end the SSE `data` line early.
    for b in &mut json {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    let mut out = Vec::with_capacity(json.len() + kind.len() + 16);
    sse_frame(&mut out, &kind, &json);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::testing::{
        chunk_frame, event_frame, exception_frame, messages, sse_events,
    };
    use serde_json::{json, Value};

    fn edited(body: &str, betas: &[&str]) -> String {
        String::from_utf8(invoke_body(body.as_bytes(), betas).unwrap()).unwrap()
    }

    const V: &str = r#""anthropic_version":"bedrock-2023-05-31""#;

    #[test]
    fn vertex_keeps_stream_and_takes_its_own_version() {
        let body = r#"{"model":"claude-x", "stream":true,"max_tokens":5,"messages":[]}"#;
        let out = String::from_utf8(vertex_body(body.as_bytes()).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"{"stream":true,"max_tokens":5,"messages":[],"anthropic_version":"vertex-2023-10-16"}"#
        );
        assert!(vertex_body(b"[1]").is_err());
    }

    #[test]
    fn model_and_stream_go_wherever_they_are_and_the_rest_stays_byte_for_byte() {
        // First, last, middle, with the client's whitespace around them.
        assert_eq!(
            edited(r#"{"model":"claude","max_tokens":5,"messages":[]}"#, &[]),
            format!(r#"{{"max_tokens":5,"messages":[],{V}}}"#)
        );
        assert_eq!(
            edited(r#"{"max_tokens":5,"messages":[],"stream":true}"#, &[]),
            format!(r#"{{"max_tokens":5,"messages":[],{V}}}"#)
        );
        assert_eq!(
            edited(
                "{\n  \"max_tokens\" : 5,\n  \"model\" : \"claude\" ,\n  \"stream\":false,\n  \"messages\": [ ]\n}\n",
                &[]
            ),
            format!("{{\n  \"max_tokens\" : 5,\n  \"messages\": [ ],{V}\n}}\n")
        );
        // Numbers, escapes and key order the client chose are not re-encoded.
        assert_eq!(
            edited(r#" { "z":1.50, "model":"m", "a":"\u00e9\/" } "#, &[]),
            format!(r#" {{ "z":1.50, "a":"\u00e9\/",{V} }} "#)
        );
    }

    #[test]
    fn a_nested_model_is_not_touched_and_an_escaped_key_is_still_model() {
        let body = r#"{"metadata":{"model":"x","stream":true},"messages":[{"role":"user","content":"model"}],"mod\u0065l":"m"}"#;
        assert_eq!(
            edited(body, &[]),
            format!(
                r#"{{"metadata":{{"model":"x","stream":true}},"messages":[{{"role":"user","content":"model"}}],{V}}}"#
            )
        );
    }

    #[test]
    fn a_body_of_only_model_and_stream_gets_just_the_version() {
        assert_eq!(
            edited(r#"{"model":"m","stream":true}"#, &[]),
            format!("{{{V}}}")
        );
        assert_eq!(edited("{ }", &[]), format!("{{{V} }}"));
    }

    #[test]
    fn the_clients_version_is_kept() {
        assert_eq!(
            edited(
                r#"{"anthropic_version":"bedrock-2099-01-01","model":"m"}"#,
                &[]
            ),
            r#"{"anthropic_version":"bedrock-2099-01-01"}"#
        );
    }

    #[test]
    fn betas_are_added_split_and_deduplicated_or_merged_into_the_bodys_own() {
        assert_eq!(
            edited(
                r#"{"model":"m","max_tokens":1}"#,
                &[
                    "interleaved-thinking-2025-05-14, context-1m-2025-08-07",
                    "interleaved-thinking-2025-05-14"
                ]
            ),
            format!(
                r#"{{"max_tokens":1,{V},"anthropic_beta":["interleaved-thinking-2025-05-14","context-1m-2025-08-07"]}}"#
            )
        );
        assert_eq!(
            edited(r#"{"anthropic_beta": ["a"], "max_tokens":1}"#, &["a,b"]),
            format!(r#"{{"anthropic_beta": ["a","b"], "max_tokens":1,{V}}}"#)
        );
        // Nothing new to add leaves the body's list as the client wrote it.
        assert_eq!(
            edited(r#"{"anthropic_beta": [ "a" ]}"#, &["a", " ", ""]),
            format!(r#"{{"anthropic_beta": [ "a" ],{V}}}"#)
        );
    }

    #[test]
    fn what_is_not_a_json_object_is_refused() {
        for body in ["", "[]", "{", r#"{"a":1} x"#, "nul", r#"{"a":}"#] {
            assert!(invoke_body(body.as_bytes(), &[]).is_err(), "{body:?}");
        }
    }

    fn translate(frames: &[Vec<u8>]) -> Vec<(String, Value)> {
        let mut t = InvokeToSse::new();
        let mut out = Vec::new();
        for m in messages(&frames.concat()) {
            out.extend(t.on_message(&m));
        }
        out.extend(t.finish());
        sse_events(&out)
    }

    fn text_answer() -> Vec<Value> {
        vec![
            json!({"type":"message_start","message":{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there\n"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}),
            json!({"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12,"outputTokenCount":4,"invocationLatency":511,"firstByteLatency":320}}),
        ]
    }

    #[test]
    fn an_invoke_stream_of_text_is_anthropics_own_sse() {
        let events = text_answer();
        let frames: Vec<Vec<u8>> = events.iter().map(chunk_frame).collect();
        let expected: Vec<(String, Value)> = events
            .iter()
            .map(|e| (e["type"].as_str().unwrap().to_owned(), e.clone()))
            .collect();
        assert_eq!(translate(&frames), expected);
    }

    #[test]
    fn an_invoke_stream_of_a_tool_call_is_anthropics_own_sse() {
        let events = [
            json!({"type":"message_start","message":{"id":"msg_bdrk_02","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":50,"output_tokens":2}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_bdrk_1","name":"Read","input":{}}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\": \"/a"}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":".rs\"}"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}),
            json!({"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":50,"outputTokenCount":30,"invocationLatency":900,"firstByteLatency":400}}),
        ];
        let frames: Vec<Vec<u8>> = events.iter().map(chunk_frame).collect();
        let got = translate(&frames);
        assert_eq!(got.len(), events.len());
        for ((event, data), sent) in got.iter().zip(&events) {
            assert_eq!(event, sent["type"].as_str().unwrap());
            assert_eq!(data, sent);
        }
    }

    #[test]
    fn the_chunks_json_is_passed_on_as_bytes_with_line_breaks_flattened() {
        let inner = "{\"type\":\"ping\",\n\"x\":\"a\\nb\"}";
        let b64 = base64::engine::general_purpose::STANDARD.encode(inner);
        let frame = event_frame(
            "chunk",
            format!(r#"{{"bytes":"{b64}","p":"xyz"}}"#).as_bytes(),
        );
        let m = &messages(&frame)[0];
        assert_eq!(
            InvokeToSse::new().on_message(m),
            b"event: ping\ndata: {\"type\":\"ping\", \"x\":\"a\\nb\"}\n\n"
        );
    }

    #[test]
    fn an_exception_mid_stream_becomes_an_error_event_and_ends_it() {
        let events = text_answer();
        let frames = vec![
            chunk_frame(&events[0]),
            exception_frame(
                "throttlingException",
                br#"{"message":"Too many tokens, please wait before trying again."}"#,
            ),
            chunk_frame(&events[1]),
        ];
        let got = translate(&frames);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].0, "error");
        assert_eq!(
            got[1].1,
            json!({"type":"error","error":{"type":"rate_limit_error","message":"Too many tokens, please wait before trying again."}})
        );
    }

    #[test]
    fn a_chunk_that_cannot_be_read_becomes_an_api_error() {
        let bad = [
            event_frame("chunk", b"not json"),
            event_frame("chunk", br#"{"bytes":"%%%"}"#),
            event_frame("chunk", br#"{"bytes":"bm90IGpzb24="}"#),
            event_frame("chunk", br#"{"bytes":"eyJ0eXBlIjoiYVxuYiJ9"}"#), // {"type":"a\nb"}
        ];
        for frame in bad {
            let got = translate(&[frame]);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].1["error"]["type"], "api_error");
            assert!(got[0].1["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Bedrock sent a chunk that"));
        }
        // Events of other kinds are not the answer's.
        assert!(translate(&[event_frame("somethingElse", b"{}")]).is_empty());
    }
}

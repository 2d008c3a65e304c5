//! What the tests write Bedrock's streams with and read our SSE back with. Frames are
//! written by the SDK's own encoder, so the reader is checked against AWS's code, not
//! against a second copy of our own understanding.

use aws_smithy_types::event_stream::{
    Header as AwsHeader, HeaderValue as AwsValue, Message as AwsMessage,
};
use base64::Engine as _;
use bytes::Bytes;
use serde_json::Value;

use super::eventstream::{FrameReader, Message};

/// A frame with string headers.
pub(crate) fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let headers = headers
        .iter()
        .map(|(n, v)| AwsHeader::new(n.to_string(), AwsValue::String(v.to_string().into())))
        .collect();
    let message = AwsMessage::new_from_parts(headers, Bytes::copy_from_slice(payload));
    let mut out = Vec::new();
    if let Err(e) = aws_smithy_eventstream::frame::write_message_to(&message, &mut out) {
        panic!("the SDK's encoder refused a test frame: {e}");
    }
    out
}

pub(crate) fn event_frame(event_type: &str, payload: &[u8]) -> Vec<u8> {
    frame(
        &[
            (":message-type", "event"),
            (":event-type", event_type),
            (":content-type", "application/json"),
        ],
        payload,
    )
}

pub(crate) fn exception_frame(exception_type: &str, payload: &[u8]) -> Vec<u8> {
    frame(
        &[
            (":message-type", "exception"),
            (":exception-type", exception_type),
            (":content-type", "application/json"),
        ],
        payload,
    )
}

/// An InvokeModelWithResponseStream `chunk` carrying one Anthropic event, padded as
/// Bedrock pads them.
pub(crate) fn chunk_frame(event: &Value) -> Vec<u8> {
    let inner = serde_json::to_vec(event).unwrap_or_default();
    let b64 = base64::engine::general_purpose::STANDARD.encode(inner);
    let payload = serde_json::json!({"bytes": b64, "p": "abcdefghijklmnopqrstuvwxyzABCDEF"});
    event_frame("chunk", &serde_json::to_vec(&payload).unwrap_or_default())
}

/// The messages in `bytes`, read by our reader.
pub(crate) fn messages(bytes: &[u8]) -> Vec<Message> {
    let mut reader = FrameReader::new(1 << 20);
    let out = reader.push(bytes).unwrap();
    reader.finish().unwrap();
    out
}

/// SSE bytes as (event, data) pairs, checking each frame is `event: …\ndata: …\n\n`.
pub(crate) fn sse_events(bytes: &[u8]) -> Vec<(String, Value)> {
    let text = std::str::from_utf8(bytes).unwrap();
    assert!(text.is_empty() || text.ends_with("\n\n"), "{text:?}");
    text.split_terminator("\n\n")
        .map(|frame| {
            let (event, data) = frame.split_once('\n').unwrap();
            let event = event.strip_prefix("event: ").unwrap().to_owned();
            let data = data.strip_prefix("data: ").unwrap();
            assert!(!data.contains('\n'), "{data:?}");
            (event, serde_json::from_str(data).unwrap())
        })
        .collect()
}

/// A small deterministic generator for splits and garbage (xorshift64).
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        if n == 0 {
            0
        } else {
            (self.0 % n as u64) as usize
        }
    }
}

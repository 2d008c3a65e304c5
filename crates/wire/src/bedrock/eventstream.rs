//! The AWS event-stream framing (`application/vnd.amazon.eventstream`) Bedrock streams its
//! answers in: binary frames, each a prelude (total length, headers length, CRC32 of the
//! two), headers, a payload and a CRC32 of everything before it, all big-endian.
//!
//! The SDK's own reader (`aws-smithy-eventstream`) parses each whole frame and checks both
//! CRCs. What it leaves to its caller is done here, on bytes that arrive in any chunks: the
//! prelude is checked as soon as its 12 bytes are in, so a corrupted or hostile length is
//! refused at once instead of being waited for (up to 4 GiB), and a frame over the caller's
//! cap is refused before it is buffered.

use aws_smithy_types::event_stream::HeaderValue as AwsHeaderValue;
use bytes::{Bytes, BytesMut};

/// Total length, headers length, prelude CRC.
const PRELUDE_LEN: usize = 12;
const CRC_LEN: usize = 4;
/// A frame with no headers and no payload.
const MIN_FRAME_LEN: usize = PRELUDE_LEN + CRC_LEN;

pub const MESSAGE_TYPE: &str = ":message-type";
pub const EVENT_TYPE: &str = ":event-type";
pub const EXCEPTION_TYPE: &str = ":exception-type";
pub const ERROR_CODE: &str = ":error-code";
pub const ERROR_MESSAGE: &str = ":error-message";

/// A header's value, in our own type so callers need no AWS crate to read one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderValue {
    Bool(bool),
    Byte(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Bytes(Bytes),
    String(String),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    Uuid(u128),
}

/// One decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub headers: Vec<(String, HeaderValue)>,
    pub payload: Bytes,
}

impl Message {
    /// The first header of that name; event streams do not repeat them.
    pub fn header(&self, name: &str) -> Option<&HeaderValue> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn string_header(&self, name: &str) -> Option<&str> {
        match self.header(name)? {
            HeaderValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// `event`, `exception` or `error`.
    pub fn message_type(&self) -> Option<&str> {
        self.string_header(MESSAGE_TYPE)
    }

    /// What an `event` is (`chunk`, `contentBlockDelta`, …).
    pub fn event_type(&self) -> Option<&str> {
        self.string_header(EVENT_TYPE)
    }

    /// What an `exception` is (`throttlingException`, …); its payload carries the message.
    pub fn exception_type(&self) -> Option<&str> {
        self.string_header(EXCEPTION_TYPE)
    }

    /// What an `error` is; unlike an exception, its message is a header too.
    pub fn error_code(&self) -> Option<&str> {
        self.string_header(ERROR_CODE)
    }

    pub fn error_message(&self) -> Option<&str> {
        self.string_header(ERROR_MESSAGE)
    }
}

/// Why a stream's bytes cannot be read as frames. Frames are numbered from 1 in the order
/// they arrived, so a log line can say which one was bad.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("event-stream frame {frame}: prelude CRC mismatch")]
    PreludeCrc { frame: u64 },
    #[error("event-stream frame {frame}: message CRC mismatch")]
    MessageCrc { frame: u64 },
    #[error("event-stream frame {frame} is {len} bytes, over the limit of {max}")]
    TooLarge { frame: u64, len: usize, max: usize },
    #[error("event-stream frame {frame}: {reason}")]
    Malformed { frame: u64, reason: String },
    /// `need` is `None` when the stream ended before the frame's length was read.
    #[error("the stream ended inside a frame ({})", truncated(.have, .need))]
    Truncated { have: usize, need: Option<usize> },
}

fn truncated(have: &usize, need: &Option<usize>) -> String {
    match need {
        Some(need) => format!("{have} of {need} bytes"),
        None => format!("{have} bytes, before its length"),
    }
}

/// Reads frames out of a body that arrives in chunks of any size.
#[derive(Debug)]
pub struct FrameReader {
    buf: BytesMut,
    max_frame: usize,
    /// The length of the frame at the front of `buf`, once its prelude has been checked,
    /// so a large frame arriving in small chunks has its prelude checked once.
    pending: Option<usize>,
    /// Frames read so far.
    frames: u64,
    /// A stream with one bad frame cannot be resynchronized (the next frame's start is
    /// unknown): every call after it reports the same error.
    failed: Option<FrameError>,
}

impl FrameReader {
    /// `max_frame` caps one frame's total length in bytes, so a bad length cannot make the
    /// reader buffer without bound.
    pub fn new(max_frame: usize) -> Self {
        Self {
            buf: BytesMut::new(),
            max_frame,
            pending: None,
            frames: 0,
            failed: None,
        }
    }

    /// The messages completed by `chunk`, in order. Messages before a bad frame are not
    /// lost: when a chunk holds good frames and then a bad one, this returns the good ones
    /// and the next call (or [`finish`](Self::finish)) returns the error.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Message>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        loop {
            match self.next_message() {
                Ok(Some(message)) => out.push(message),
                Ok(None) => return Ok(out),
                Err(e) => {
                    self.buf.clear();
                    self.failed = Some(e.clone());
                    return if out.is_empty() { Err(e) } else { Ok(out) };
                }
            }
        }
    }

    /// Whether the body ended cleanly: between frames, with no error left unreported.
    pub fn finish(&self) -> Result<(), FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.buf.is_empty() {
            return Ok(());
        }
        Err(FrameError::Truncated {
            have: self.buf.len(),
            need: self.pending,
        })
    }

    fn next_message(&mut self) -> Result<Option<Message>, FrameError> {
        let frame = self.frames + 1;
        let len = match self.pending {
            Some(len) => len,
            None => {
                let Some(prelude) = self.buf.get(..PRELUDE_LEN) else {
                    return Ok(None);
                };
                let len = check_prelude(prelude, frame, self.max_frame)?;
                self.pending = Some(len);
                len
            }
        };
        if self.buf.len() < len {
            return Ok(None);
        }
        let bytes = self.buf.split_to(len).freeze();
        self.pending = None;
        self.frames = frame;
        decode(bytes, frame).map(Some)
    }
}

fn be_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(b) = bytes.get(at..at + 4) {
        word.copy_from_slice(b);
    }
    u32::from_be_bytes(word)
}

/// The frame's total length, from a prelude whose CRC holds and whose lengths fit.
fn check_prelude(prelude: &[u8], frame: u64, max_frame: usize) -> Result<usize, FrameError> {
    if crc32fast::hash(prelude.get(..8).unwrap_or_default()) != be_u32(prelude, 8) {
        return Err(FrameError::PreludeCrc { frame });
    }
    let len = usize::try_from(be_u32(prelude, 0)).unwrap_or(usize::MAX);
    let headers = usize::try_from(be_u32(prelude, 4)).unwrap_or(usize::MAX);
    if len < MIN_FRAME_LEN {
        return Err(FrameError::Malformed {
            frame,
            reason: format!("a length of {len} bytes is shorter than a frame's prelude and CRC"),
        });
    }
    if headers > len - MIN_FRAME_LEN {
        return Err(FrameError::Malformed {
            frame,
            reason: format!("{headers} bytes of headers do not fit in a frame of {len} bytes"),
        });
    }
    if len > max_frame {
        return Err(FrameError::TooLarge {
            frame,
            len,
            max: max_frame,
        });
    }
    Ok(len)
}

/// One whole frame, its prelude already checked: the message CRC is checked here (so its
/// failure has a variant of its own), the headers parsed by the SDK's reader, which checks
/// both CRCs again.
fn decode(bytes: Bytes, frame: u64) -> Result<Message, FrameError> {
    let body_len = bytes.len().saturating_sub(CRC_LEN);
    let body = bytes.get(..body_len).unwrap_or_default();
    if crc32fast::hash(body) != be_u32(&bytes, body_len) {
        return Err(FrameError::MessageCrc { frame });
    }
    let malformed = |reason: String| FrameError::Malformed { frame, reason };
    let aws = aws_smithy_eventstream::frame::read_message_from(bytes)
        .map_err(|e| malformed(format!("malformed header block: {e}")))?;
    let mut headers = Vec::with_capacity(aws.headers().len());
    for header in aws.headers() {
        let value = match header.value() {
            AwsHeaderValue::Bool(b) => HeaderValue::Bool(*b),
            AwsHeaderValue::Byte(b) => HeaderValue::Byte(*b),
            AwsHeaderValue::Int16(n) => HeaderValue::Int16(*n),
            AwsHeaderValue::Int32(n) => HeaderValue::Int32(*n),
            AwsHeaderValue::Int64(n) => HeaderValue::Int64(*n),
            AwsHeaderValue::ByteArray(b) => HeaderValue::Bytes(b.clone()),
            AwsHeaderValue::String(s) => HeaderValue::String(s.as_str().to_owned()),
            AwsHeaderValue::Timestamp(t) => HeaderValue::Timestamp(
                t.to_millis()
                    .map_err(|e| malformed(format!("header {}: {e}", header.name().as_str())))?,
            ),
            AwsHeaderValue::Uuid(u) => HeaderValue::Uuid(*u),
            _ => {
                return Err(malformed(format!(
                    "header {} has a type this reader does not know",
                    header.name().as_str()
                )))
            }
        };
        headers.push((header.name().as_str().to_owned(), value));
    }
    Ok(Message {
        headers,
        payload: aws.payload().clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::testing::{event_frame, frame, Rng};
    use aws_smithy_types::event_stream::{
        Header as AwsHeader, HeaderValue as AwsValue, Message as AwsMessage,
    };
    use aws_smithy_types::DateTime;

    /// Three frames with every header type the format has, written by the SDK's encoder.
    fn stream() -> (Vec<u8>, Vec<Message>) {
        let rich = AwsMessage::new_from_parts(
            vec![
                AwsHeader::new(":message-type", AwsValue::String("event".into())),
                AwsHeader::new("t", AwsValue::Bool(true)),
                AwsHeader::new("f", AwsValue::Bool(false)),
                AwsHeader::new("b", AwsValue::Byte(-3)),
                AwsHeader::new("s", AwsValue::Int16(-300)),
                AwsHeader::new("i", AwsValue::Int32(70_000)),
                AwsHeader::new("l", AwsValue::Int64(-5_000_000_000)),
                AwsHeader::new("x", AwsValue::ByteArray(Bytes::from_static(b"\0\x01"))),
                AwsHeader::new(
                    "ts",
                    AwsValue::Timestamp(DateTime::from_millis(1_700_000_000_123)),
                ),
                AwsHeader::new(
                    "u",
                    AwsValue::Uuid(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
                ),
            ],
            Bytes::from_static(b"payload"),
        );
        let mut bytes = Vec::new();
        bytes.extend(event_frame("chunk", br#"{"a":1}"#));
        if let Err(e) = aws_smithy_eventstream::frame::write_message_to(&rich, &mut bytes) {
            panic!("{e}");
        }
        bytes.extend(frame(&[], b""));
        let expected = vec![
            Message {
                headers: vec![
                    (":message-type".into(), HeaderValue::String("event".into())),
                    (":event-type".into(), HeaderValue::String("chunk".into())),
                    (
                        ":content-type".into(),
                        HeaderValue::String("application/json".into()),
                    ),
                ],
                payload: Bytes::from_static(br#"{"a":1}"#),
            },
            Message {
                headers: vec![
                    (":message-type".into(), HeaderValue::String("event".into())),
                    ("t".into(), HeaderValue::Bool(true)),
                    ("f".into(), HeaderValue::Bool(false)),
                    ("b".into(), HeaderValue::Byte(-3)),
                    ("s".into(), HeaderValue::Int16(-300)),
                    ("i".into(), HeaderValue::Int32(70_000)),
                    ("l".into(), HeaderValue::Int64(-5_000_000_000)),
                    (
                        "x".into(),
                        HeaderValue::Bytes(Bytes::from_static(b"\0\x01")),
                    ),
                    ("ts".into(), HeaderValue::Timestamp(1_700_000_000_123)),
                    (
                        "u".into(),
                        HeaderValue::Uuid(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
                    ),
                ],
                payload: Bytes::from_static(b"payload"),
            },
            Message {
                headers: vec![],
                payload: Bytes::new(),
            },
        ];
        (bytes, expected)
    }

    /// Feeds `bytes` cut at `cuts`, and checks the body ended cleanly.
    fn read_in_pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Message> {
        let mut reader = FrameReader::new(1 << 20);
        let mut out = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
            out.extend(reader.push(&bytes[at..cut]).unwrap());
            at = cut;
        }
        reader.finish().unwrap();
        out
    }

    #[test]
    fn frames_read_the_same_whole_byte_by_byte_and_in_random_splits() {
        let (bytes, expected) = stream();
        assert_eq!(read_in_pieces(&bytes, &[]), expected);
        let every: Vec<usize> = (1..bytes.len()).collect();
        assert_eq!(read_in_pieces(&bytes, &every), expected);
        let mut rng = Rng(7);
        for _ in 0..200 {
            let mut cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.below(bytes.len())).collect();
            cuts.sort_unstable();
            assert_eq!(read_in_pieces(&bytes, &cuts), expected, "cuts {cuts:?}");
        }
    }

    #[test]
    fn the_accessors_read_the_well_known_headers() {
        let (bytes, expected) = stream();
        let first = &read_in_pieces(&bytes, &[])[0];
        assert_eq!(first, &expected[0]);
        assert_eq!(first.message_type(), Some("event"));
        assert_eq!(first.event_type(), Some("chunk"));
        assert_eq!(first.exception_type(), None);
        assert_eq!(first.error_code(), None);
    }

    #[test]
    fn a_bad_prelude_crc_is_refused_as_soon_as_the_prelude_is_in() {
        let (mut bytes, _) = stream();
        let second = be_u32(&bytes, 0) as usize;
        bytes[second + 9] ^= 0x40; // the second frame's prelude CRC
        let mut reader = FrameReader::new(1 << 20);
        // The first frame is delivered; the error comes with the next call.
        assert_eq!(
            reader.push(&bytes[..second + PRELUDE_LEN]).unwrap().len(),
            1
        );
        let e = reader.push(b"").unwrap_err();
        assert_eq!(e, FrameError::PreludeCrc { frame: 2 });
        assert_eq!(e.to_string(), "event-stream frame 2: prelude CRC mismatch");
        // Whatever comes after, and the end, report the same error.
        assert_eq!(reader.push(&bytes[second + PRELUDE_LEN..]), Err(e.clone()));
        assert_eq!(reader.finish(), Err(e));
    }

    #[test]
    fn a_corrupted_length_is_a_prelude_crc_mismatch_not_a_wait() {
        let (mut bytes, _) = stream();
        bytes[0] = 0x7f; // 2 GiB
        let mut reader = FrameReader::new(usize::MAX);
        assert_eq!(
            reader.push(&bytes[..PRELUDE_LEN]),
            Err(FrameError::PreludeCrc { frame: 1 })
        );
    }

    #[test]
    fn a_bad_message_crc_is_refused() {
        let (mut bytes, _) = stream();
        let second = be_u32(&bytes, 0) as usize;
        let end = second + be_u32(&bytes, second) as usize;
        bytes[end - 6] ^= 1; // a payload byte of the second frame
        let mut reader = FrameReader::new(1 << 20);
        assert_eq!(reader.push(&bytes).unwrap().len(), 1);
        let e = reader.finish().unwrap_err();
        assert_eq!(e, FrameError::MessageCrc { frame: 2 });
        assert_eq!(e.to_string(), "event-stream frame 2: message CRC mismatch");
    }

    #[test]
    fn a_body_that_ends_inside_a_frame_is_truncated() {
        let (bytes, _) = stream();
        let first = be_u32(&bytes, 0) as usize;
        let mut reader = FrameReader::new(1 << 20);
        assert!(reader.push(&bytes[..12]).unwrap().is_empty());
        let e = reader.finish().unwrap_err();
        assert_eq!(
            e,
            FrameError::Truncated {
                have: 12,
                need: Some(first)
            }
        );
        assert_eq!(
            e.to_string(),
            format!("the stream ended inside a frame (12 of {first} bytes)")
        );
        let mut reader = FrameReader::new(1 << 20);
        reader.push(&bytes[..first + 5]).unwrap();
        assert_eq!(
            reader.finish().unwrap_err().to_string(),
            "the stream ended inside a frame (5 bytes, before its length)"
        );
    }

    #[test]
    fn a_frame_over_the_cap_is_refused_before_it_is_buffered() {
        let big = frame(&[], &[b'x'; 1000]);
        let mut reader = FrameReader::new(100);
        let e = reader.push(&big[..PRELUDE_LEN]).unwrap_err();
        assert_eq!(
            e,
            FrameError::TooLarge {
                frame: 1,
                len: 1016,
                max: 100
            }
        );
        assert_eq!(
            e.to_string(),
            "event-stream frame 1 is 1016 bytes, over the limit of 100"
        );
    }

    /// A frame whose CRCs hold but whose contents do not parse.
    fn raw_frame(total: u32, headers_len: u32, rest: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend(total.to_be_bytes());
        f.extend(headers_len.to_be_bytes());
        f.extend(crc32fast::hash(&f).to_be_bytes());
        f.extend(rest);
        f.extend(crc32fast::hash(&f).to_be_bytes());
        f
    }

    #[test]
    fn a_malformed_header_block_is_refused() {
        // A string header whose length runs past the header block.
        let headers = [1, b'a', 7, 0, 50, b'x'];
        let f = raw_frame(16 + 6, 6, &headers);
        let mut reader = FrameReader::new(1 << 20);
        let e = reader.push(&f).unwrap_err();
        assert!(matches!(e, FrameError::Malformed { frame: 1, .. }), "{e:?}");
        assert!(e
            .to_string()
            .starts_with("event-stream frame 1: malformed header block"));
        // An unknown header type.
        let f = raw_frame(16 + 4, 4, &[1, b'a', 42, 0]);
        assert!(matches!(
            FrameReader::new(1 << 20).push(&f),
            Err(FrameError::Malformed { .. })
        ));
        // Lengths that cannot hold a frame.
        let f = raw_frame(8, 0, &[]);
        assert_eq!(
            FrameReader::new(1 << 20).push(&f).unwrap_err().to_string(),
            "event-stream frame 1: a length of 8 bytes is shorter than a frame's prelude and CRC"
        );
        let f = raw_frame(20, 5, &[0; 4]);
        assert_eq!(
            FrameReader::new(1 << 20).push(&f).unwrap_err().to_string(),
            "event-stream frame 1: 5 bytes of headers do not fit in a frame of 20 bytes"
        );
    }

    #[test]
    fn no_input_makes_the_reader_panic() {
        let (bytes, _) = stream();
        let mut rng = Rng(99);
        for round in 0..2000 {
            let mut input = if round % 2 == 0 {
                bytes.clone()
            } else {
                (0..rng.below(200)).map(|_| rng.below(256) as u8).collect()
            };
            for _ in 0..rng.below(4) {
                if !input.is_empty() {
                    let at = rng.below(input.len());
                    input[at] = rng.below(256) as u8;
                }
            }
            let mut reader = FrameReader::new(rng.below(4096));
            let mut at = 0;
            while at < input.len() {
                let to = (at + 1 + rng.below(40)).min(input.len());
                let _ = reader.push(&input[at..to]);
                at = to;
            }
            let _ = reader.finish();
        }
        // Frames whose CRCs hold around a header block of random bytes.
        for _ in 0..2000 {
            let headers: Vec<u8> = (0..rng.below(24)).map(|_| rng.below(256) as u8).collect();
            let payload_len = rng.below(8);
            let mut rest = headers.clone();
            rest.extend(std::iter::repeat_n(b'p', payload_len));
            let total = (16 + rest.len()) as u32;
            let f = raw_frame(total, headers.len() as u32, &rest);
            let _ = FrameReader::new(1 << 20).push(&f);
        }
    }
}

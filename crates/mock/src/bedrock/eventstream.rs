//! AWS's event-stream framing (`application/vnd.amazon.eventstream`), written here from its
//! description and not with AWS's libraries, so that the gateway's decoder (aws-smithy) and
//! the tests' (botocore) check an independent encoder.
//!
//! A frame: total length (u32, big-endian), headers length (u32), the CRC32 of those eight
//! bytes (the prelude CRC), the headers, the payload, the CRC32 of everything before it
//! (the message CRC). A header: its name's length (u8) and name, a type byte (7: string), the
//! value's length (u16) and value.

use bytes::{BufMut, Bytes, BytesMut};
use serde::Serialize;

/// The header value type for a UTF-8 string.
const STRING: u8 = 7;
/// Prelude (total length, headers length, prelude CRC).
const PRELUDE_LEN: usize = 12;
const CRC_LEN: usize = 4;

/// The letters Bedrock pads its payloads with (a prefix of them, of varying length, in
/// `"p"`), so that a frame's size does not give its content away.
const PADDING: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// One frame with these string headers and this payload.
pub(crate) fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Bytes {
    let headers_len: usize = headers
        .iter()
        .map(|(name, value)| 1 + name.len() + 1 + 2 + value.len())
        .sum();
    let total = PRELUDE_LEN + headers_len + payload.len() + CRC_LEN;
    let mut buf = BytesMut::with_capacity(total);
    buf.put_u32(u32::try_from(total).unwrap_or(u32::MAX));
    buf.put_u32(u32::try_from(headers_len).unwrap_or(u32::MAX));
    buf.put_u32(crc32fast::hash(&buf[..8]));
    for (name, value) in headers {
        buf.put_u8(u8::try_from(name.len()).unwrap_or(u8::MAX));
        buf.put_slice(name.as_bytes());
        buf.put_u8(STRING);
        buf.put_u16(u16::try_from(value.len()).unwrap_or(u16::MAX));
        buf.put_slice(value.as_bytes());
    }
    buf.put_slice(payload);
    let crc = crc32fast::hash(&buf);
    buf.put_u32(crc);
    buf.freeze()
}

/// An event frame: `:event-type`, `:content-type: application/json`, `:message-type: event`.
pub(crate) fn event(event_type: &str, payload: &[u8]) -> Bytes {
    frame(
        &[
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload,
    )
}

/// An exception frame (`throttlingException`, `internalServerException`, …): the stream's
/// error after it began, `{"message": …}`.
pub(crate) fn exception(exception_type: &str, message: &str) -> Bytes {
    #[derive(Serialize)]
    struct Message<'a> {
        message: &'a str,
    }
    frame(
        &[
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        &super::super::to_json(&Message { message }),
    )
}

/// `value`'s JSON object with Bedrock's `"p"` padding after its own members; `salt` varies
/// the padding's length from frame to frame.
pub(crate) fn padded(value: &impl Serialize, salt: usize) -> Vec<u8> {
    #[derive(Serialize)]
    struct Padded<'a, T: Serialize> {
        #[serde(flatten)]
        value: &'a T,
        p: &'a str,
    }
    let len = 1 + (salt * 7 + 3) % PADDING.len();
    super::super::to_json(&Padded {
        value,
        p: &PADDING[..len],
    })
}

/// The frame with its message CRC made wrong (its other bytes intact).
pub(crate) fn with_bad_crc(frame: &Bytes) -> Bytes {
    let mut bytes = frame.to_vec();
    if let Some(last) = bytes.last_mut() {
        *last ^= 0xff;
    }
    Bytes::from(bytes)
}

/// The frame re-encoded with its payload cut in half: valid framing around JSON no parser
/// takes (`x-mock-malformed-after`). A frame this module did not write is returned whole.
pub(crate) fn with_broken_payload(frame: &Bytes) -> Bytes {
    let Some((headers, payload)) = split(frame) else {
        return frame.clone();
    };
    let names: Vec<(&str, &str)> = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    self::frame(&names, &payload[..payload.len() / 2])
}

/// A frame's string headers, name and value.
type Headers = Vec<(String, String)>;

/// The string headers and the payload of a frame this module wrote.
fn split(frame: &[u8]) -> Option<(Headers, &[u8])> {
    let u32_at = |at: usize| -> Option<usize> {
        let bytes: [u8; 4] = frame.get(at..at + 4)?.try_into().ok()?;
        usize::try_from(u32::from_be_bytes(bytes)).ok()
    };
    let total = u32_at(0)?;
    let headers_len = u32_at(4)?;
    if total != frame.len() || total < PRELUDE_LEN + headers_len + CRC_LEN {
        return None;
    }
    let mut headers = Vec::new();
    let mut at = PRELUDE_LEN;
    let end = PRELUDE_LEN + headers_len;
    while at < end {
        let name_len = usize::from(*frame.get(at)?);
        let name = frame.get(at + 1..at + 1 + name_len)?;
        at += 1 + name_len;
        if *frame.get(at)? != STRING {
            return None;
        }
        let value_len = usize::from(u16::from_be_bytes(
            frame.get(at + 1..at + 3)?.try_into().ok()?,
        ));
        let value = frame.get(at + 3..at + 3 + value_len)?;
        at += 3 + value_len;
        headers.push((
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
    Some((headers, frame.get(end..total - CRC_LEN)?))
}

#[cfg(test)]
mod tests {
    use super::{frame, split, with_broken_payload};

    /// A frame computed by hand (Python's `zlib.crc32`), byte for byte.
    #[test]
    fn a_frame_is_laid_out_as_the_event_stream_specifies() {
        let bytes = frame(&[(":message-type", "event")], b"{}");
        let expected: &[u8] = &[
            0x00, 0x00, 0x00, 0x28, // total length: 40
            0x00, 0x00, 0x00, 0x16, // headers length: 22
            0x60, 0x47, 0x0e, 0xfd, // prelude CRC
            0x0d, b':', b'm', b'e', b's', b's', b'a', b'g', b'e', b'-', b't', b'y', b'p', b'e',
            0x07, 0x00, 0x05, b'e', b'v', b'e', b'n', b't', // string, 5 bytes
            b'{', b'}', // payload
            0xb7, 0x18, 0x4a, 0xfc, // message CRC
        ];
        assert_eq!(&bytes[..], expected);
    }

    #[test]
    fn a_broken_payload_keeps_the_headers_and_valid_framing() {
        let whole = frame(&[(":event-type", "chunk")], br#"{"bytes":"abcd"}"#);
        let broken = with_broken_payload(&whole);
        let (headers, payload) = split(&broken).unwrap();
        assert_eq!(headers, [(":event-type".to_owned(), "chunk".to_owned())]);
        assert_eq!(payload, br#"{"bytes""#);
    }
}

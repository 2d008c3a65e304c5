//! Any sequence of provider stream frames translates to the client's events without
//! panicking, and every frame the encoder writes is a complete SSE frame with JSON data.
#![no_main]

use gateway_core::dialect::Dialect;
use gateway_core::sse::{frame_data, frame_end};
use gateway_core::translate::stream::{Decoder, Encoder};
use libfuzzer_sys::fuzz_target;

const DIALECTS: [Dialect; 4] = [
    Dialect::OpenAiChat,
    Dialect::OpenAiResponses,
    Dialect::AnthropicMessages,
    Dialect::Gemini,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let from = DIALECTS[selector as usize % DIALECTS.len()];
    let to = DIALECTS[(selector as usize / DIALECTS.len()) % DIALECTS.len()];
    let mut decoder = Decoder::new(from);
    let mut encoder = Encoder::new(to, selector & 0x80 != 0, 1);
    let mut out = Vec::new();
    let mut events = Vec::new();
    for frame in rest.split(|b| *b == b'\n') {
        decoder.decode(frame, &mut events);
        for e in events.drain(..) {
            encoder.encode(e, &mut out);
        }
    }
    encoder.finish(&mut out);
    let text = String::from_utf8(out).expect("the encoder writes UTF-8");
    // Gemini's frames end in CRLF, as Google's do; the others' in LF.
    assert!(text.ends_with("\n\n") || text.ends_with("\r\n\r\n"));
    let mut at = 0;
    while let Some(end) = frame_end(text.as_bytes(), at) {
        let data = frame_data(&text.as_bytes()[at..end]).expect("every frame has data");
        let data = std::str::from_utf8(&data).expect("UTF-8 data");
        assert!(data == "[DONE]" || serde_json::from_str::<serde_json::Value>(data).is_ok(), "{data}");
        at = end;
    }
    assert_eq!(at, text.len(), "the encoder writes whole frames");
});

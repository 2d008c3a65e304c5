//! Any sequence of provider stream frames translates to the client's events without
//! panicking, and every frame the encoder writes is a complete SSE frame with JSON data.
#![no_main]

use gateway_core::dialect::Dialect;
use gateway_core::translate::stream::{Decoder, Encoder};
use libfuzzer_sys::fuzz_target;

const DIALECTS: [Dialect; 3] = [Dialect::OpenAiChat, Dialect::OpenAiResponses, Dialect::AnthropicMessages];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let from = DIALECTS[selector as usize % 3];
    let to = DIALECTS[(selector as usize / 3) % 3];
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
    assert!(text.ends_with("\n\n"));
    for frame in text.split("\n\n").filter(|f| !f.is_empty()) {
        let data = frame.lines().find_map(|l| l.strip_prefix("data: ")).expect("every frame has data");
        assert!(data == "[DONE]" || serde_json::from_str::<serde_json::Value>(data).is_ok(), "{data}");
    }
});

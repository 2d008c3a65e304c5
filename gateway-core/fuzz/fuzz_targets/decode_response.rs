//! Any provider response body decodes or fails cleanly, and a decoded one encodes for
//! every client dialect as JSON.
#![no_main]

use gateway_core::dialect::Dialect;
use gateway_core::translate;
use libfuzzer_sys::fuzz_target;

const DIALECTS: [Dialect; 4] = [
    Dialect::OpenAiChat,
    Dialect::OpenAiResponses,
    Dialect::AnthropicMessages,
    Dialect::Gemini,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let from = DIALECTS[selector as usize % DIALECTS.len()];
    let _ = translate::decode_error(from, body);
    if let Ok(resp) = translate::decode_response(from, body) {
        for to in DIALECTS {
            if let Ok(encoded) = translate::encode_response(to, &resp, 1, &[]) {
                assert!(serde_json::from_slice::<serde_json::Value>(&encoded).is_ok());
            }
        }
    }
});

//! Any request body, in any client dialect, decodes to the IR or fails with a client
//! error; whatever decodes encodes for every other dialect without panicking.
#![no_main]

use gateway_core::config::ProviderKind;
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
    let mut report = translate::Report::new(from);
    if let Ok(req) = translate::decode_request(from, body, translate::Policy::default(), &mut report) {
        for to in DIALECTS {
            if let Ok(encoded) = translate::encode_request(to, &req, ProviderKind::OpenAi, &mut report) {
                // What the gateway sends upstream is always JSON.
                assert!(serde_json::from_slice::<serde_json::Value>(&encoded).is_ok());
            }
        }
    }
});

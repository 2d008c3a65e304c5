//! The direct readers of request and response bodies (`sniff`, `usage::from_response`, both
//! built on `crate::scan`, with serde_json behind them): for any input they return without
//! panicking, and on a body serde_json can hold as a value they read what it holds.
#![no_main]

use gateway_core::dialect::Dialect;
use gateway_core::sniff::sniff;
use gateway_core::usage::from_response;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let sniffed = sniff(data);
    let (usage, model) = from_response(Dialect::OpenAiChat, data);
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(s) = sniffed {
        assert_eq!(v["model"].as_str(), Some(s.model.as_str()));
        assert_eq!(s.stream, v["stream"].as_bool().unwrap_or(false));
    }
    if let Some(m) = model {
        assert_eq!(v["model"].as_str(), Some(m.as_str()));
    }
    if let Some(u) = usage {
        let count = |k: &str| v["usage"][k].as_u64().unwrap_or(0);
        assert_eq!(u.input, count("prompt_tokens"));
        assert_eq!(u.output, count("completion_tokens"));
        let cached = v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64();
        assert_eq!(u.cache_read, cached.or(v["usage"]["prompt_cache_hit_tokens"].as_u64()).unwrap_or(0));
    }
});

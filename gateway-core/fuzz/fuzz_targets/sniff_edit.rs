//! Passthrough's byte edits: for any JSON body the sniffer accepts, renaming the model and
//! asking for stream usage leave JSON whose `model` is the new name. Bodies serde_json
//! cannot hold as a value (a number beyond f64, say) are forwarded as they are and left
//! for the provider to judge, so the property is checked on the ones it can.
#![no_main]

use bytes::Bytes;
use gateway_core::sniff::{sniff, Edits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if serde_json::from_slice::<serde_json::Value>(data).is_err() {
        return;
    }
    let Ok(sniffed) = sniff(data) else { return };
    let body = Bytes::copy_from_slice(data);
    let mut edits = Edits::default();
    edits.rewrite_model(&sniffed, "renamed-model");
    edits.request_stream_usage(&body, &sniffed);
    let out = edits.apply(body);
    let v: serde_json::Value = serde_json::from_slice(&out).expect("edited body is JSON");
    assert_eq!(v["model"], "renamed-model");
});

//! Passthrough's byte edits: for any body the sniffer accepts, renaming the model and
//! asking for stream usage leave valid JSON whose `model` is the new name.
#![no_main]

use bytes::Bytes;
use gateway_core::sniff::{sniff, Edits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(sniffed) = sniff(data) else { return };
    let body = Bytes::copy_from_slice(data);
    let mut edits = Edits::default();
    edits.rewrite_model(&sniffed, "renamed-model");
    edits.request_stream_usage(&body, &sniffed);
    let out = edits.apply(body);
    let v: serde_json::Value = serde_json::from_slice(&out).expect("edited body is JSON");
    assert_eq!(v["model"], "renamed-model");
});

//! The relay's SSE framing: frame ends always advance within the buffer, and reading a
//! frame's data never panics.
#![no_main]

use gateway_core::relay::{frame_data, frame_end};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    while let Some(end) = frame_end(data, at) {
        assert!(end > at && end <= data.len());
        let _ = frame_data(&data[at..end]);
        at = end;
    }
    let _ = frame_data(&data[at..]);
});

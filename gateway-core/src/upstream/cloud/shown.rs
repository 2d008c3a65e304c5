//! The model an Azure answer names, rewritten to the one the client asked for: a route's
//! model there is a deployment (`my-gpt-deployment`), which the client never named and
//! should not have to know. Whole answers and each event of a stream (Chat chunks,
//! Responses events) have their first `"model"` member's value replaced; nothing else of
//! the bytes changes.

use bytes::Bytes;
use memchr::memmem;

use crate::upstream::Convert;

pub struct ShownModel {
    /// The client's model as a JSON string, quotes included.
    shown: Vec<u8>,
    stream: bool,
    kept: Vec<u8>,
}

impl ShownModel {
    pub fn new(shown: &str, stream: bool) -> ShownModel {
        ShownModel {
            shown: serde_json::to_vec(shown).unwrap_or_else(|_| b"\"\"".to_vec()),
            stream,
            kept: Vec::new(),
        }
    }

    /// `event` with the value of its first `"model"` member replaced.
    fn rename(&self, event: &[u8], out: &mut Vec<u8>) {
        let Some(span) = model_value(event) else {
            out.extend_from_slice(event);
            return;
        };
        out.extend_from_slice(&event[..span.start]);
        out.extend_from_slice(&self.shown);
        out.extend_from_slice(&event[span.end..]);
    }
}

impl Convert for ShownModel {
    fn push(&mut self, chunk: &[u8]) -> Result<Bytes, String> {
        self.kept.extend_from_slice(chunk);
        if !self.stream {
            return Ok(Bytes::new());
        }
        // Whole events only: a `"model"` member may be split across chunks.
        let Some(end) = memmem::rfind(&self.kept, b"\n\n").map(|i| i + 2) else {
            return Ok(Bytes::new());
        };
        let mut out = Vec::with_capacity(end + 16);
        let mut start = 0;
        for at in memmem::find_iter(&self.kept[..end], b"\n\n") {
            self.rename(&self.kept[start..at + 2], &mut out);
            start = at + 2;
        }
        self.kept.drain(..end);
        Ok(Bytes::from(out))
    }

    fn finish(&mut self) -> Result<Bytes, String> {
        let mut out = Vec::with_capacity(self.kept.len() + 16);
        let rest = std::mem::take(&mut self.kept);
        self.rename(&rest, &mut out);
        Ok(Bytes::from(out))
    }
}

/// Where the string value of the first `"model"` member is, quotes included. Inside a JSON
/// string a quote is escaped, so the key's own quotes are found only where a key is.
fn model_value(json: &[u8]) -> Option<std::ops::Range<usize>> {
    let key = memmem::find(json, b"\"model\"")?;
    let mut i = key + 7;
    let skip = |i: &mut usize| {
        while json.get(*i).is_some_and(|b| b.is_ascii_whitespace()) {
            *i += 1;
        }
    };
    skip(&mut i);
    if json.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    skip(&mut i);
    if json.get(i) != Some(&b'"') {
        return None;
    }
    let start = i;
    i += 1;
    while let Some(&b) = json.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(start..i + 1),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_answer_names_the_clients_model() {
        let mut c = ShownModel::new("gpt-5.5", false);
        assert!(c.push(br#"{"id":"x","model" : "my-dep","choices":[{"message":{"content":"say \"model\":\"no\""}}]}"#).unwrap().is_empty());
        assert_eq!(
            &c.finish().unwrap()[..],
            br#"{"id":"x","model" : "gpt-5.5","choices":[{"message":{"content":"say \"model\":\"no\""}}]}"#
        );
    }

    #[test]
    fn each_event_of_a_stream_is_renamed_however_it_is_split() {
        let stream = b"data: {\"id\":\"1\",\"model\":\"my-dep\",\"choices\":[]}\n\ndata: {\"id\":\"2\",\"model\":\"my-dep\"}\n\ndata: [DONE]\n\n";
        let want = b"data: {\"id\":\"1\",\"model\":\"gpt-5.5\",\"choices\":[]}\n\ndata: {\"id\":\"2\",\"model\":\"gpt-5.5\"}\n\ndata: [DONE]\n\n";
        for split in 0..stream.len() {
            let mut c = ShownModel::new("gpt-5.5", true);
            let mut out = c.push(&stream[..split]).unwrap().to_vec();
            out.extend_from_slice(&c.push(&stream[split..]).unwrap());
            out.extend_from_slice(&c.finish().unwrap());
            assert_eq!(out, want.to_vec(), "split at {split}");
        }
    }

    #[test]
    fn an_answer_without_a_model_passes_as_it_is() {
        let mut c = ShownModel::new("m", false);
        c.push(br#"{"error":{"message":"no"}}"#).unwrap();
        assert_eq!(&c.finish().unwrap()[..], br#"{"error":{"message":"no"}}"#);
        assert_eq!(model_value(br#"{"model":1}"#), None);
        assert_eq!(model_value(br#"{"model":"a\"b"}"#), Some(9..15));
    }
}

//! Tool-output compaction as a pass: each tool result large enough to matter goes through
//! [`compact`](super::compact), and the rewrite is kept only if it clears the savings
//! floor. (A result the request already holds is [`super::repeats`]' before it is ours.)

use super::compact::{compact_retrievable, Level};
use std::sync::Arc;

use super::tokens::{estimate, hash};
use super::{pays, Doc, Pass, PassReport, Shared, MIN_BLOCK_BYTES};

pub struct ToolOutputCompaction {
    pub level: Level,
}

pub const NAME: &str = "tool_output";

/// Byte patterns that only occur in a body holding a tool result, per dialect.
const TOOL_MARKERS: [&[u8]; 5] = [
    b"\"tool\"",
    b"tool_result",
    b"_call_output",
    b"\"functionResponse\"",
    b"\"function_response\"",
];

pub fn has_tool_marker(body: &[u8]) -> bool {
    TOOL_MARKERS
        .iter()
        .any(|m| memchr::memmem::find(body, m).is_some())
}

/// Whether `body` holds a JSON string literal of at least `min` bytes, by a scan over
/// its quotes: a tool result below the size gate cannot be one.
pub fn has_long_string(body: &[u8], min: usize) -> bool {
    let mut open: Option<usize> = None;
    for at in memchr::memchr_iter(b'"', body) {
        // A quote after an odd run of backslashes is escaped, inside a string.
        let backslashes = body[..at].iter().rev().take_while(|b| **b == b'\\').count();
        if backslashes % 2 == 1 {
            continue;
        }
        match open {
            None => open = Some(at),
            Some(start) => {
                if at - start > min {
                    return true;
                }
                open = None;
            }
        }
    }
    false
}

impl Pass for ToolOutputCompaction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mode(&self) -> String {
        self.level.to_string()
    }

    fn may_fire(&self, body: &[u8]) -> bool {
        body.len() >= MIN_BLOCK_BYTES
            && has_long_string(body, MIN_BLOCK_BYTES)
            && has_tool_marker(body)
    }

    fn run(&self, doc: &mut Doc, shared: &Shared) -> PassReport {
        let mut report = PassReport::new(NAME, self.mode());
        let mut decided = Vec::new();
        for (i, block) in doc.located.tool_blocks.iter().enumerate() {
            // An original the agent fetched back is what it asked for: whole.
            if doc.replaced[i].is_some()
                || block.text.len() < MIN_BLOCK_BYTES
                || super::originals::is_fetched(&block.text)
            {
                continue;
            }
            let decision = decide(&block.text, self.level, shared);
            if let Some(text) = decision.replacement {
                report.changed(decision.before, decision.after);
                decided.push((i, text.to_string()));
            }
        }
        for (i, replacement) in decided {
            doc.replaced[i] = Some((replacement, NAME));
        }
        report
    }
}

/// What compaction makes of one block at one level, floor applied; remembered by hash.
#[derive(Clone)]
pub struct Decision {
    /// The rewrite, when it pays.
    pub replacement: Option<Arc<str>>,
    /// Estimated tokens of the block, and of the rewrite.
    pub before: u64,
    pub after: u64,
}

fn decide(text: &str, level: Level, shared: &Shared) -> Decision {
    let key = (hash(text), level);
    if let Some(known) = shared.compacted.get(&key) {
        return known;
    }
    let before = estimate(text);
    let line = super::originals::retrieval_line(shared.origin(), &super::originals::id(&key.0));
    let (replacement, after) = match compact_retrievable(text, level, &line) {
        Some(new) => {
            let after = estimate(&new);
            if pays(before, after) {
                (Some(Arc::<str>::from(new)), after)
            } else {
                (None, before)
            }
        }
        None => (None, before),
    };
    let weight = replacement.as_ref().map_or(0, |r| r.len());
    let decision = Decision {
        replacement,
        before,
        after,
    };
    shared.compacted.put(key, decision.clone(), weight);
    decision
}

pub use super::compact::thousands;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Optimizer, Plan};
    use trimgate_wire::dialect::Dialect;

    #[test]
    fn long_strings_are_found_past_escaped_quotes() {
        let long = format!(r#"{{"a":"x\"{}","b":"y"}}"#, "z".repeat(50));
        assert!(has_long_string(long.as_bytes(), 40));
        assert!(!has_long_string(long.as_bytes(), 60));
        assert!(!has_long_string(br#"{"a":"\\","b":"short"}"#, 6));
    }

    /// A Responses request whose `function_call_output` is Codex's JSON string around a
    /// test run: the run is compacted inside the wrapper (a JSON string inside a JSON
    /// string in the body), and the wrapper's other bytes reach the provider as sent.
    #[test]
    fn a_json_wrapped_result_is_compacted_inside_its_wrapper() {
        let run: String = (0..300)
            .map(|i| format!("test tests::case_{i:03} ... ok\n"))
            .chain(["test tests::parses_header ... FAILED\n".to_owned()])
            .chain(["test result: FAILED. 300 passed; 1 failed\n".to_owned()])
            .collect();
        let wrapped = format!(
            "{{\"output\":{},\"metadata\":{{\"exit_code\":101,\"duration_seconds\":2.5}}}}",
            serde_json::to_string(&run).unwrap()
        );
        let body = serde_json::json!({
            "model": "gpt-5",
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": wrapped},
            ]
        });
        let bytes = serde_json::to_vec(&body).unwrap();
        let plan = Plan {
            tool_output: Some(Level::Auto),
            ..Plan::OFF
        };
        let out = Optimizer::new(Default::default()).run(
            Dialect::OpenAiResponses,
            &bytes,
            "gpt-5",
            &plan,
        );
        let new: serde_json::Value =
            serde_json::from_slice(&crate::splice(&bytes, &out.edits)).unwrap();
        let sent = new["input"][1]["output"].as_str().unwrap();
        assert!(
            sent.starts_with("{\"output\":\"[… 300 passing tests elided …]"),
            "{sent}"
        );
        assert!(sent.ends_with(",\"metadata\":{\"exit_code\":101,\"duration_seconds\":2.5}}"));
        let inner: serde_json::Value = serde_json::from_str(sent).unwrap();
        assert!(inner["output"]
            .as_str()
            .unwrap()
            .contains("test tests::parses_header ... FAILED"));
    }
}

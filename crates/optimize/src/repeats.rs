//! Turn-level repeats: an output the conversation already holds (the same file read
//! again, the same command run again with the same result) becomes a short reference to
//! the earlier copy, which stays where it is. The comparison is on the output inside the
//! agent's wrapper, so a rerun whose wrapper differs (Codex's wall time, Claude Code's
//! reminders) is still a repeat, and the wrapper of the repeat stays as it was.
//!
//! The decision looks only at the history before the block, which never changes on later
//! turns: from the turn where an output first repeats, every later request carries the
//! same reference bytes, so the provider's cached prefix holds. It runs before compaction,
//! which then leaves the referenced block alone; the earlier copy is compacted as any.
//! The savings are counted under this pass's own name in the ledger.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::compact::{self, thousands};
use super::tokens::{estimate, hash, Hash};
use super::{pays, Doc, Pass, PassReport, Shared, MIN_BLOCK_BYTES};

/// Replaces outputs seen earlier in the same request by a reference to the first copy.
pub struct Repeats;

pub const NAME: &str = "repeats";

impl Pass for Repeats {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mode(&self) -> String {
        "on".to_owned()
    }

    fn may_fire(&self, body: &[u8]) -> bool {
        // Two results of the gate's size at least, one of them in a tool message.
        body.len() >= 2 * MIN_BLOCK_BYTES
            && super::tool_output::has_long_string(body, MIN_BLOCK_BYTES)
            && super::tool_output::has_tool_marker(body)
    }

    fn run(&self, doc: &mut Doc, _shared: &Shared) -> PassReport {
        let mut report = PassReport::new(NAME, self.mode());
        // The first block holding each output, by the output's hash.
        let mut first: HashMap<Hash, usize> = HashMap::new();
        let mut references = Vec::new();
        for (i, block) in doc.located.tool_blocks.iter().enumerate() {
            // An original the agent fetched back is what it asked for: whole.
            if doc.replaced[i].is_some()
                || block.text.len() < MIN_BLOCK_BYTES
                || super::originals::is_fetched(&block.text)
            {
                continue;
            }
            let output = compact::output_of(&block.text);
            let earlier = match first.entry(hash(&output)) {
                Entry::Occupied(seen) => *seen.get(),
                Entry::Vacant(new) => {
                    new.insert(i);
                    continue;
                }
            };
            let reference = reference_to(doc, earlier, &output);
            let Some(text) = compact::rewrap(&block.text, &reference) else {
                continue;
            };
            let (before, after) = (estimate(&block.text), estimate(&text));
            if pays(before, after) {
                report.changed(before, after);
                references.push((i, text));
            }
        }
        for (i, text) in references {
            doc.replaced[i] = Some((text, NAME));
        }
        report
    }
}

/// The line that stands for a repeated output. It names the earlier copy as the agent
/// knows it (its call id), and says nothing that could change on a later turn.
fn reference_to(doc: &Doc, earlier: usize, output: &str) -> String {
    let size = format!(
        "{} lines, {} bytes",
        thousands(output.lines().count()),
        thousands(output.len())
    );
    match &doc.located.tool_blocks[earlier].call_id {
        Some(id) => format!(
            "[… the same output as the earlier tool result of call {id} ({size}), which is above …]"
        ),
        None => format!(
            "[… the same output as earlier tool result #{} ({size}), which is above …]",
            earlier + 1
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::Level;
    use crate::{splice, Optimizer, Plan};
    use serde_json::{json, Value};
    use trimgate_wire::dialect::Dialect;

    fn chat(results: &[&str]) -> Vec<u8> {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for (i, r) in results.iter().enumerate() {
            let id = format!("c{}", i + 1);
            messages.push(json!({"role": "assistant", "tool_calls": [{"id": id, "type": "function", "function": {"name": "run", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": r}));
        }
        serde_json::to_vec(&json!({"model": "gpt-4.1", "messages": messages})).unwrap()
    }

    fn run(body: &[u8]) -> (crate::Outcome, Value) {
        let plan = Plan {
            tool_output: Some(Level::Auto),
            ..Plan::OFF
        };
        let out =
            Optimizer::new(Default::default()).run(Dialect::OpenAiChat, body, "gpt-4.1", &plan);
        let sent = serde_json::from_slice(&splice(body, &out.edits)).unwrap();
        (out, sent)
    }

    fn source() -> String {
        "fn main() {\n    println!(\"hello\");\n}\n".repeat(80)
    }

    #[test]
    fn a_file_read_twice_is_a_reference_to_the_first_which_stays() {
        let file = source();
        let (out, sent) = run(&chat(&[&file, "short", &file]));
        assert_eq!(sent["messages"][2]["content"], file.as_str());
        let reference = sent["messages"][6]["content"].as_str().unwrap();
        assert!(
            reference.starts_with(
                "[… the same output as the earlier tool result of call c1 (240 lines,"
            ),
            "{reference}"
        );
        assert_eq!(out.applied, ["repeats=on"]);
        assert_eq!(out.changes.len(), 1);
        assert_eq!(out.changes[0].pass, NAME);
    }

    /// The same command run again: Codex's header differs (its chunk id and wall time),
    /// the output is the same. The header stays; the output becomes the reference.
    #[test]
    fn a_rerun_in_another_wrapper_is_a_repeat_and_keeps_its_wrapper() {
        let output = source();
        let first = format!("Chunk ID: 1a2b3c\nWall time: 0.0021 seconds\nProcess exited with code 0\nOutput:\n{output}");
        let again = format!("Chunk ID: 9f8e7d\nWall time: 0.0035 seconds\nProcess exited with code 0\nOutput:\n{output}");
        let (_, sent) = run(&chat(&[&first, &again]));
        assert_eq!(sent["messages"][2]["content"], first.as_str());
        let second = sent["messages"][4]["content"].as_str().unwrap();
        assert!(
            second.starts_with("Chunk ID: 9f8e7d\nWall time: 0.0035 seconds\nProcess exited with code 0\nOutput:\n[… the same output as the earlier tool result of call c1"),
            "{second}"
        );
    }

    /// Every later turn sends the same reference: the history before a block decides.
    #[test]
    fn the_reference_is_the_same_bytes_on_every_later_turn() {
        let file = source();
        let log: String = (0..200)
            .map(|i| format!("line {i} of a log nobody can fold\n"))
            .collect();
        let (_, turn3) = run(&chat(&[&file, &log, &file]));
        let (_, turn4) = run(&chat(&[&file, &log, &file, "done"]));
        let (_, turn5) = run(&chat(&[&file, &log, &file, "done", &file]));
        for later in [&turn4, &turn5] {
            let messages = |v: &Value| v["messages"].as_array().unwrap()[..7].to_vec();
            assert_eq!(messages(later), messages(&turn3));
        }
        assert!(turn5["messages"][10]["content"]
            .as_str()
            .unwrap()
            .contains("of call c1"));
    }

    #[test]
    fn different_outputs_and_small_ones_stay_as_sent() {
        let file = source();
        let other = file.replace("hello", "world");
        let (out, _) = run(&chat(&[&file, &other, "tiny", "tiny"]));
        assert!(out.changes.iter().all(|c| c.pass != NAME));
    }

    #[test]
    fn a_fetched_original_is_never_a_repeat() {
        let file = source();
        let fetched = format!(
            "{}{file}",
            crate::originals::fetched_header("0123456789abcdef0123")
        );
        let (out, _) = run(&chat(&[&fetched, &fetched]));
        assert!(out.changes.is_empty());
    }
}

//! Turn-level repeats: an output the conversation already holds (the same file read
//! again, the same command run again with the same result) becomes a short reference to
//! the earlier copy, which stays where it is. The comparison is on the output inside the
//! agent's wrapper, so a rerun whose wrapper differs (Codex's wall time, Claude Code's
//! reminders) is still a repeat, and the wrapper of the repeat stays as it was.
//!
//! A flat package listing that names what an earlier one named, in another command's
//! words (`pip list` after `pip freeze`, its `--format=json` after that), is a repeat of
//! facts: it becomes a reference to the earlier listing and says only what differs
//! (packages it adds, drops or names at another version), and npm's root line whole.
//!
//! The decision looks only at the history before the block, which never changes on later
//! turns: from the turn where an output first repeats, every later request carries the
//! same reference bytes, so the provider's cached prefix holds. It runs before compaction,
//! which then leaves the referenced block alone; the earlier copy is compacted as any.
//! The savings are counted under this pass's own name in the ledger.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::compact::{self, thousands};
use super::packages::{self, Listing, Reference};
use super::tokens::{estimate, hash, Hash};
use super::{pays, Doc, Pass, PassReport, Shared, MIN_BLOCK_BYTES};
use trimgate_wire::dialect::Dialect;

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
        // A result of the gate's size in a tool message, and something before it (an
        // earlier copy, or a package listing, which may be shorter).
        body.len() > MIN_BLOCK_BYTES
            && super::tool_output::has_long_string(body, MIN_BLOCK_BYTES)
            && super::tool_output::has_tool_marker(body)
    }

    fn run(&self, doc: &mut Doc, _shared: &Shared) -> PassReport {
        let mut report = PassReport::new(NAME, self.mode());
        // The first block holding each output, by the output's hash.
        let mut first: HashMap<Hash, usize> = HashMap::new();
        // The package listings seen so far, in order.
        let mut listings: Vec<(usize, Listing)> = Vec::new();
        let mut references = Vec::new();
        for (i, block) in doc.located.tool_blocks.iter().enumerate() {
            // An original the agent fetched back is what it asked for: whole.
            if doc.replaced[i].is_some() || super::originals::is_fetched(&block.text) {
                continue;
            }
            let output = compact::output_of(&block.text);
            // a listing below the gate's size is not said again, but may be referred to
            let listing = packages::read(&output);
            if block.text.len() < MIN_BLOCK_BYTES {
                listings.extend(listing.map(|l| (i, l)));
                continue;
            }
            let reference = match first.entry(hash(&output)) {
                Entry::Occupied(seen) => Some(reference_to(doc, *seen.get(), &output)),
                Entry::Vacant(new) => {
                    new.insert(i);
                    listing
                        .as_ref()
                        .and_then(|l| said_before(doc, &listings, l, &output))
                }
            };
            let text = reference.and_then(|r| compact::rewrap(&block.text, &r));
            let sizes = text.as_ref().map(|t| (estimate(&block.text), estimate(t)));
            match (text, sizes) {
                (Some(text), Some((before, after))) if pays(before, after) => {
                    report.changed(before, after);
                    references.push((i, text));
                }
                // what stays whole may be referred to by a later listing
                _ => listings.extend(listing.map(|l| (i, l))),
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
    format!(
        "[… the same output as {} ({size}), which is above …]",
        packages::earlier_result(&call_of(doc, earlier))
    )
}

/// How a reference names the tool result at `at`: its call's id, or its place (from 1).
fn call_of(doc: &Doc, at: usize) -> Result<String, usize> {
    doc.located.tool_blocks[at].call_id.clone().ok_or(at + 1)
}

/// Most of what a listing may differ from an earlier one by, as a share of what it names,
/// for it to be said as that difference: past it, the reference would say little less.
const MAX_DELTA_SHARE: usize = 4;

/// `output`, the listing `listing`, said as what it adds to the earlier listing it differs
/// least from, where that is a small part of it and the reference prints back as `output`
/// byte for byte: `None` otherwise.
fn said_before(
    doc: &Doc,
    earlier: &[(usize, Listing)],
    listing: &Listing,
    output: &str,
) -> Option<String> {
    let (at, seen, delta) = earlier
        .iter()
        .map(|(at, seen)| (*at, seen, listing.since(seen)))
        .min_by_key(|(at, _, delta)| (delta.len(), *at))?;
    if delta.len() * MAX_DELTA_SHARE > listing.packages.len() {
        return None;
    }
    let reference = Reference {
        format: listing.format,
        count: listing.packages.len(),
        call: call_of(doc, at),
        delta,
        head: listing.head.clone(),
    };
    (packages::render(&reference.listing(seen)) == output.trim_end()).then(|| reference.text())
}

/// What the package references among a request's tool results stand for, each listing
/// printed as its command printed it (from the earlier listing it names, read from that
/// result with its grouped listings expanded): the view in which a fact of a listing said
/// as a reference is still found (the savings evaluator looks there too).
pub fn expand_references(dialect: Dialect, body: &[u8]) -> Vec<String> {
    let Some(located) = crate::locate::locate(dialect, body) else {
        return Vec::new();
    };
    let blocks = &located.tool_blocks;
    let mut out = Vec::new();
    for block in blocks {
        let Some(reference) = Reference::parse(&compact::output_of(&block.text)) else {
            continue;
        };
        let earlier = match &reference.call {
            Ok(id) => blocks
                .iter()
                .find(|b| b.call_id.as_deref() == Some(id.as_str())),
            Err(n) => n.checked_sub(1).and_then(|i| blocks.get(i)),
        };
        if let Some(listing) =
            earlier.and_then(|b| packages::read(&compact::expand_listings(&b.text)))
        {
            out.push(packages::render(&reference.listing(&listing)));
        }
    }
    out
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

    /// Packages as pip prints them: sorted by name, the table padded to the longest name.
    fn pip(packages: &[(&str, &str)], format: &str) -> String {
        let mut sorted = packages.to_vec();
        sorted.sort();
        match format {
            "freeze" => sorted.iter().map(|(n, v)| format!("{n}=={v}\n")).collect(),
            "list" => {
                let w = sorted.iter().map(|(n, _)| n.len()).max().unwrap().max(7);
                let v = sorted.iter().map(|(_, v)| v.len()).max().unwrap().max(7);
                let mut out = format!(
                    "{:<w$} Version\n{} {}\n",
                    "Package",
                    "-".repeat(w),
                    "-".repeat(v)
                );
                for (n, ver) in &sorted {
                    out.push_str(&format!("{n:<w$} {ver}\n"));
                }
                out
            }
            _ => serde_json::to_string(
                &sorted
                    .iter()
                    .map(|(n, v)| json!({"name": n, "version": v}))
                    .collect::<Vec<_>>(),
            )
            .unwrap()
            .replace("\",\"", "\", \"")
            .replace("\":\"", "\": \"")
            .replace("},{", "}, {"),
        }
    }

    fn environment(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("package-number-{i:03}"), format!("1.{i}.0")))
            .collect()
    }

    fn borrowed(list: &[(String, String)]) -> Vec<(&str, &str)> {
        list.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect()
    }

    /// `pip list` after `pip freeze` of the same environment: the packages both name are
    /// said as the earlier listing's, what it adds by name and version; its JSON after
    /// that the same, against the freeze (the listing that stayed whole). The references
    /// print back as the outputs were.
    #[test]
    fn a_listing_of_the_same_packages_refers_to_the_earlier_one() {
        let env = environment(100);
        let mut more = borrowed(&env);
        let frozen = pip(&more, "freeze");
        more.extend([("pip", "24.0"), ("setuptools", "65.5.0")]);
        let table = pip(&more, "list");
        more.retain(|(n, _)| *n != "setuptools");
        let json = pip(&more, "json");
        let body = chat(&[&frozen, &table, &json]);
        let (out, sent) = run(&body);
        assert_eq!(
            sent["messages"][4]["content"],
            "[… 102 packages as pip list prints them: those the earlier tool result of call c1 lists, which is above, at the versions it gives; and besides: pip 24.0, setuptools 65.5.0 …]"
        );
        assert_eq!(
            sent["messages"][6]["content"],
            "[… 101 packages as pip list --format=json prints them: those the earlier tool result of call c1 lists, which is above, at the versions it gives; and besides: pip 24.0 …]"
        );
        assert_eq!(out.changes.iter().filter(|c| c.pass == NAME).count(), 2);
        let sent_body = serde_json::to_vec(&sent).unwrap();
        assert_eq!(
            expand_references(Dialect::OpenAiChat, &sent_body),
            [table.trim_end(), json.trim_end()]
        );
    }

    /// A listing printed otherwise than its command prints it (not in pip's order) cannot
    /// be printed back from a reference: it stays whole.
    #[test]
    fn a_listing_that_would_not_print_back_stays() {
        let env = environment(100);
        let frozen = pip(&borrowed(&env), "freeze");
        let mut lines: Vec<&str> = frozen.lines().collect();
        lines.swap(3, 4);
        let shuffled = lines.join("\n");
        let (out, _) = run(&chat(&[&frozen, &shuffled]));
        assert!(out.changes.iter().all(|c| c.pass != NAME));
    }

    /// Another version, a package gone: said by name; a listing that shares little with
    /// any earlier one stays whole.
    #[test]
    fn what_differs_is_said_and_a_different_listing_stays() {
        let env = environment(100);
        let frozen = pip(&borrowed(&env), "freeze");
        let later = frozen
            .replace("package-number-007==1.7.0\n", "")
            .replace("==1.9.0", "==2.0.0");
        let (_, sent) = run(&chat(&[&frozen, &later]));
        assert_eq!(
            sent["messages"][4]["content"],
            "[… 99 packages as pip freeze prints them: those the earlier tool result of call c1 lists, which is above, at the versions it gives; at another version here: package-number-009 2.0.0; less: package-number-007 …]"
        );
        let other: String = (0..100).map(|i| format!("other-{i:03}==1.0\n")).collect();
        let (out, _) = run(&chat(&[&frozen, &other]));
        assert!(out.changes.iter().all(|c| c.pass != NAME));
    }

    /// npm's root line (the project and its directory) stays above the reference.
    #[test]
    fn an_npm_listing_keeps_its_root_line() {
        let entries: Vec<String> = (0..80)
            .map(|i| format!("dependency-{i:02}@1.0.{i}"))
            .collect();
        let tree = |last: &str| {
            format!(
                "shop@1.0.0 /srv/shop\n{}\n└── {last}",
                entries
                    .iter()
                    .map(|e| format!("├── {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        };
        let (_, sent) = run(&chat(&[&tree("zod@3.22.4"), &tree("zod@3.23.0")]));
        assert_eq!(
            sent["messages"][4]["content"],
            "shop@1.0.0 /srv/shop\n[… 81 packages as npm ls --depth=0 prints them: those the earlier tool result of call c1 lists, which is above, at the versions it gives; at another version here: zod 3.23.0 …]"
        );
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

//! The optimizer pipeline: passes that rewrite parts of a request to spend fewer tokens,
//! under rules that keep the provider's prompt cache intact.
//!
//! - A pass decides about a block from that block's bytes and the configured mode only
//!   (never the request size, the turn, the time or chance), so the same history is
//!   rewritten the same way on every turn and in every process, and the provider's cached
//!   prefix stays byte-identical. Context pruning is the one exception, and it moves in
//!   large, rare steps.
//! - Passes see the blocks the [`locate`] module found, with their spans in the original
//!   bytes; the pipeline splices their replacements in and leaves every other byte alone.
//! - Fail open: a body the locator cannot read is forwarded unchanged.
//!
//! The passes: [`repeats`] (an output the conversation already holds becomes a reference
//! to it), [`tool_output`] (compacts tool results), [`terse`] (a short directive at
//! the end of the system prompt), [`prune`] (placeholders for the oldest tool results near
//! the context window), [`squeeze`] (the strict, lossless-only pass that runs alone).
//! Apart from them, [`breakpoints`] marks prompt-cache breakpoints on Anthropic-bound
//! requests that carry none, on the bytes as they go to the provider.

pub mod breakpoints;
pub mod compact;
pub mod locate;
pub mod memo;
pub mod modes;
pub mod originals;
mod packages;
pub mod prune;
pub mod repeats;
pub mod squeeze;
pub mod terse;
pub mod tokens;
pub mod tool_output;

use std::ops::Range;
use std::sync::Arc;

use locate::Located;
use memo::Memo;
pub use modes::{Modes, Plan, PlanPatch};
use originals::Originals;
use tokens::{CountMemo, Hash};
use trimgate_wire::dialect::Dialect;

/// Where markers send an agent for an elided block before the listener is bound.
const DEFAULT_ORIGIN: &str = "http://127.0.0.1:8788";

/// Tool results shorter than this are never rewritten: too little to gain.
pub const MIN_BLOCK_BYTES: usize = 2048;
/// A rewrite is kept only when it saves at least this share of the block's tokens…
pub const MIN_SAVED_SHARE: f64 = 0.10;
/// …and at least this many tokens.
pub const MIN_SAVED_TOKENS: u64 = 32;

/// A located request as the passes see and change it.
pub struct Doc {
    pub located: Located,
    /// Per tool block: its replacement text and the pass that made it.
    pub replaced: Vec<Option<(String, &'static str)>>,
    /// Text appended to the end of the system prompt.
    pub system_append: Option<String>,
    /// The model the request names, for per-model tables.
    pub model: String,
}

impl Doc {
    fn new(located: Located, model: &str) -> Doc {
        let n = located.tool_blocks.len();
        Doc {
            located,
            replaced: vec![None; n],
            system_append: None,
            model: model.to_owned(),
        }
    }

    /// A tool block's text as it stands now.
    pub fn current(&self, i: usize) -> &str {
        match &self.replaced[i] {
            Some((text, _)) => text,
            None => &self.located.tool_blocks[i].text,
        }
    }
}

/// Shared, bounded memory the passes may use. Never changes a decision, only its cost.
pub struct Shared {
    pub counts: CountMemo,
    pub originals: Originals,
    /// The gateway's own address as an agent on this machine reaches it, for the markers
    /// that say where an elided block is kept (set once the listener is bound).
    pub origin: std::sync::OnceLock<String>,
    /// Compaction decisions by (block hash, level).
    pub compacted: Memo<(Hash, compact::Level), tool_output::Decision>,
}

impl Shared {
    /// The gateway's address for the markers of elided blocks.
    pub fn origin(&self) -> &str {
        self.origin.get().map_or(DEFAULT_ORIGIN, String::as_str)
    }
}

/// What one pass did.
#[derive(Debug, Clone, PartialEq)]
pub struct PassReport {
    pub pass: &'static str,
    pub mode: String,
    pub blocks_changed: usize,
    /// Tokens of the blocks it changed, before and after (estimates; exact counts come
    /// from [`Outcome::exact_saved_tokens`]).
    pub tokens_before: u64,
    pub tokens_after: u64,
}

impl PassReport {
    /// A report of nothing done yet.
    pub fn new(pass: &'static str, mode: String) -> PassReport {
        PassReport {
            pass,
            mode,
            blocks_changed: 0,
            tokens_before: 0,
            tokens_after: 0,
        }
    }

    /// Counts one changed block.
    pub fn changed(&mut self, before: u64, after: u64) {
        self.blocks_changed += 1;
        self.tokens_before += before;
        self.tokens_after += after;
    }
}

/// One optimization pass. Deterministic and synchronous: the same `Doc` and mode give the
/// same changes, in any process.
pub trait Pass {
    /// The name used in config, headers and the ledger (`tool_output`).
    fn name(&self) -> &'static str;
    /// The mode as shown in `x-trimgate-applied`.
    fn mode(&self) -> String;
    /// Whether the pass could change `body`, judged from its raw bytes without parsing
    /// them (the fast path: when no pass may fire, nothing is parsed).
    fn may_fire(&self, body: &[u8]) -> bool;
    fn run(&self, doc: &mut Doc, shared: &Shared) -> PassReport;
}

/// A block a pass rewrote, kept for exact counting and the originals store.
#[derive(Debug, Clone)]
pub struct Change {
    pub pass: &'static str,
    pub hash: Hash,
    pub original: Arc<str>,
    pub replacement: Arc<str>,
}

/// What one pass did to a request, in exact tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassTokens {
    pub pass: &'static str,
    pub before: u64,
    pub after: u64,
}

impl PassTokens {
    /// Tokens saved across passes (negative when they added more than they removed).
    pub fn saved(passes: &[PassTokens]) -> i64 {
        passes
            .iter()
            .map(|p| p.before as i64 - p.after as i64)
            .sum()
    }
}

/// The pipeline's result for one request.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Replacements for spans of the original body.
    pub edits: Vec<(Range<usize>, Vec<u8>)>,
    /// `pass=mode` for each pass that changed something.
    pub applied: Vec<String>,
    pub reports: Vec<PassReport>,
    pub changes: Vec<Change>,
    /// Text added (the terse directive), counted against the savings.
    pub added: Option<String>,
    /// Bytes saved on the wire (negative if the request grew).
    pub saved_bytes: i64,
}

impl Outcome {
    pub fn is_unchanged(&self) -> bool {
        self.edits.is_empty()
    }

    /// Exact o200k tokens of what each pass changed, before and after: original blocks
    /// (remembered by hash) and their replacements; text a pass added counts as after.
    pub fn exact_tokens(&self, counts: &CountMemo) -> Vec<PassTokens> {
        fn entry(out: &mut Vec<PassTokens>, pass: &'static str) -> usize {
            out.iter().position(|p| p.pass == pass).unwrap_or_else(|| {
                out.push(PassTokens {
                    pass,
                    before: 0,
                    after: 0,
                });
                out.len() - 1
            })
        }
        let mut out: Vec<PassTokens> = Vec::new();
        for c in &self.changes {
            let i = entry(&mut out, c.pass);
            out[i].before += counts.count(&c.hash, &c.original);
            // The same block is rewritten the same way next turn: remember its count too.
            out[i].after += counts.count(&tokens::hash(&c.replacement), &c.replacement);
        }
        if let Some(added) = &self.added {
            let i = entry(&mut out, terse::NAME);
            out[i].after += tokens::count(added);
        }
        out
    }

    /// Exact o200k tokens saved in all: what the passes removed minus what they added.
    pub fn exact_saved_tokens(&self, counts: &CountMemo) -> i64 {
        PassTokens::saved(&self.exact_tokens(counts))
    }

    /// What the exact count needs, to move onto another thread.
    pub fn for_counting(&self) -> Outcome {
        Outcome {
            changes: self.changes.clone(),
            added: self.added.clone(),
            ..Outcome::default()
        }
    }

    pub fn applied_header(&self) -> String {
        self.applied.join(" ")
    }
}

/// The optimizer: configured modes and the memory shared by every request.
pub struct Optimizer {
    pub modes: Modes,
    /// Memory shared by every request, kept when the modes are reloaded.
    pub shared: Arc<Shared>,
}

impl Optimizer {
    pub fn new(modes: Modes) -> Optimizer {
        let originals = Originals::new(modes.originals_bytes);
        Optimizer {
            modes,
            shared: Arc::new(Shared {
                counts: CountMemo::new(16 * 1024),
                originals,
                origin: std::sync::OnceLock::new(),
                compacted: Memo::new(16 * 1024, 64 * 1024 * 1024),
            }),
        }
    }

    /// The same memory with other modes (a config reload).
    pub fn with_modes(&self, modes: Modes) -> Optimizer {
        Optimizer {
            modes,
            shared: self.shared.clone(),
        }
    }

    /// Runs the passes `plan` turns on over `body`.
    pub fn run(&self, dialect: Dialect, body: &[u8], model: &str, plan: &Plan) -> Outcome {
        let passes = passes(plan);
        // Fast path: nothing can fire, so nothing is parsed and the bytes go on as sent.
        if !passes.iter().any(|p| p.may_fire(body)) {
            return Outcome::default();
        }
        let Some(located) = locate::locate(dialect, body) else {
            return Outcome::default();
        };
        let mut doc = Doc::new(located, model);
        let mut reports = Vec::new();
        for pass in &passes {
            let report = pass.run(&mut doc, &self.shared);
            reports.push(report);
        }
        finish(doc, reports, &self.shared)
    }
}

/// The passes of a plan, in the order they run: compaction first, so pruning weighs the
/// compacted sizes; the directive last. The strict squeeze runs alone.
fn passes(plan: &Plan) -> Vec<Box<dyn Pass>> {
    let mut out: Vec<Box<dyn Pass>> = Vec::new();
    if plan.squeeze {
        out.push(Box::new(squeeze::StrictSqueeze));
        return out;
    }
    if let Some(level) = plan.tool_output {
        // Repeats first: a repeated output becomes a reference, not a second compaction.
        out.push(Box::new(repeats::Repeats));
        out.push(Box::new(tool_output::ToolOutputCompaction { level }));
    }
    if let Some(mode) = plan.prune {
        out.push(Box::new(prune::ContextPruning { mode }));
    }
    if let Some(mode) = plan.terse {
        out.push(Box::new(terse::TerseDirective { mode }));
    }
    out
}

fn json_string(text: &str) -> Vec<u8> {
    serde_json::to_vec(text).unwrap_or_default()
}

fn finish(doc: Doc, reports: Vec<PassReport>, shared: &Shared) -> Outcome {
    let mut out = Outcome {
        applied: reports
            .iter()
            .filter(|r| r.blocks_changed > 0)
            .map(|r| format!("{}={}", r.pass, r.mode))
            .collect(),
        reports,
        ..Outcome::default()
    };
    let Doc {
        located,
        replaced,
        system_append,
        ..
    } = doc;
    for (block, replaced) in located.tool_blocks.into_iter().zip(replaced) {
        let Some((text, pass)) = replaced else {
            continue;
        };
        let hash = tokens::hash(&block.text);
        let literal = json_string(&text);
        out.saved_bytes += block.span.len() as i64 - literal.len() as i64;
        out.edits.push((block.span, literal));
        shared.originals.keep(&hash, pass, &block.text, &text);
        out.changes.push(Change {
            pass,
            hash,
            original: block.text.into(),
            replacement: text.into(),
        });
    }
    if let (Some(added), Some(end)) = (system_append, located.system_end) {
        let literal = json_string(&format!("{}{}", end.text, added));
        out.saved_bytes += end.span.len() as i64 - literal.len() as i64;
        out.edits.push((end.span, literal));
        out.added = Some(added);
    }
    out.edits.sort_by_key(|(span, _)| span.start);
    out
}

/// Splices `edits` (sorted, non-overlapping spans of `body`) into a new body.
pub fn splice(body: &[u8], edits: &[(Range<usize>, Vec<u8>)]) -> Vec<u8> {
    let extra: usize = edits.iter().map(|(_, b)| b.len()).sum();
    let mut out = Vec::with_capacity(body.len() + extra);
    let mut at = 0;
    for (span, bytes) in edits {
        out.extend_from_slice(&body[at..span.start]);
        out.extend_from_slice(bytes);
        at = span.end;
    }
    out.extend_from_slice(&body[at..]);
    out
}

/// Whether a rewrite from `before` to `after` (estimated tokens) clears the savings floor.
pub fn pays(before: u64, after: u64) -> bool {
    after < before
        && before - after >= MIN_SAVED_TOKENS
        && (before - after) as f64 >= MIN_SAVED_SHARE * before as f64
}

#[cfg(test)]
mod tests {
    use super::compact::Level;
    use super::modes::{PruneMode, TerseMode};
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn body(dialect: Dialect, text: &str) -> Vec<u8> {
        let v = match dialect {
            Dialect::OpenAiChat => json!({"model": "gpt-4o", "messages": [
                {"role": "system", "content": "sys"},
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": text}], "tools": [{"type": "function"}]}),
            Dialect::OpenAiResponses => json!({"model": "gpt-5", "instructions": "sys", "input": [
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": text}], "tools": [{"type": "function"}]}),
            Dialect::AnthropicMessages => {
                json!({"model": "claude-x", "max_tokens": 10, "system": "sys", "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": text}]}]}],
                "tools": [{"name": "f"}]})
            }
            Dialect::Gemini => {
                json!({"systemInstruction": {"parts": [{"text": "sys"}]}, "contents": [
                {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "f", "response": {"output": text}}}]}],
                "tools": [{"functionDeclarations": [{"name": "f"}]}]})
            }
        };
        serde_json::to_vec(&v).unwrap()
    }

    /// The body with every tool result's text set to `text`: what must be left once the
    /// passes' own work is put back.
    fn with_tool_text(dialect: Dialect, v: &Value, text: &str) -> Value {
        let mut v = v.clone();
        match dialect {
            Dialect::OpenAiChat => v["messages"][2]["content"] = json!(text),
            Dialect::OpenAiResponses => v["input"][1]["output"] = json!(text),
            Dialect::AnthropicMessages => {
                v["messages"][1]["content"][0]["content"][0]["text"] = json!(text)
            }
            Dialect::Gemini => {
                v["contents"][1]["parts"][0]["functionResponse"]["response"]["output"] = json!(text)
            }
        }
        v
    }

    fn log_line() -> impl Strategy<Value = String> {
        prop_oneof![
            "test [a-z_]{3,12} \\.\\.\\. (ok|FAILED)",
            "   Compiling [a-z]{3,8} v[0-9]\\.[0-9]{1,2}\\.[0-9]",
            "error\\[E0[0-9]{3}\\]: [a-z ]{5,30}",
            "  --> src/[a-z]{2,6}\\.rs:[0-9]{1,3}:[0-9]{1,2}",
            "\u{1b}\\[3[0-9]m[a-z ]{0,20}\u{1b}\\[0m",
            "[a-z/]{3,20}:[0-9]{1,4}:[ a-z(){};]{0,40}",
            "[ -~]{0,60}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn passes_keep_json_valid_blocks_smaller_and_everything_else_as_sent(
            lines in proptest::collection::vec(log_line(), 1..120),
            repeat in 1usize..30,
            which in 0usize..4,
        ) {
            let dialect = [Dialect::OpenAiChat, Dialect::OpenAiResponses, Dialect::AnthropicMessages, Dialect::Gemini][which];
            let text = lines.join("\n").repeat(repeat);
            let original = body(dialect, &text);
            let plans = [
                Plan::DEFAULT,
                Plan { tool_output: Some(Level::Aggressive), prune: Some(PruneMode::Aggressive), terse: Some(TerseMode::Full), squeeze: false },
                Plan { squeeze: true, ..Plan::OFF },
            ];
            for plan in plans {
                let out = Optimizer::new(Modes::default()).run(dialect, &original, "gpt-4o", &plan);
                let again = Optimizer::new(Modes::default()).run(dialect, &original, "gpt-4o", &plan);
                prop_assert_eq!(&out.edits, &again.edits);
                for c in &out.changes {
                    prop_assert!(c.replacement.len() < c.original.len());
                }
                let sent: Value = serde_json::from_slice(&splice(&original, &out.edits)).unwrap();
                let mut expected: Value = serde_json::from_slice(&original).unwrap();
                if let Some(added) = &out.added {
                    match dialect {
                        Dialect::OpenAiChat => expected["messages"][0]["content"] = json!(format!("sys{added}")),
                        Dialect::OpenAiResponses => expected["instructions"] = json!(format!("sys{added}")),
                        Dialect::AnthropicMessages => expected["system"] = json!(format!("sys{added}")),
                        Dialect::Gemini => expected["systemInstruction"]["parts"][0]["text"] = json!(format!("sys{added}")),
                    }
                }
                let restored = with_tool_text(dialect, &sent, &text);
                prop_assert_eq!(restored, expected);
            }
        }
    }
}

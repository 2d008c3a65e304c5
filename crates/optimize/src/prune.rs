//! Context pruning: when a request nears the model's context window, the bodies of the
//! oldest tool results are replaced by short placeholders, in large batches. Messages and
//! tool calls all stay, in order, each call still paired with its result.
//!
//! This is the one pass that changes earlier turns, so it is built to do so rarely: the
//! tokens to free are rounded up to a batch (a fifth of the budget), and the oldest
//! results are taken until the batch is met. Older results never change, so the same set
//! is pruned on every turn until the history grows by another batch.

use super::modes::PruneMode;
use super::tokens::{self, hash, Hash};
use super::tool_output::thousands;
use super::{Doc, Pass, PassReport, Shared};

pub struct ContextPruning {
    pub mode: PruneMode,
}

pub const NAME: &str = "prune";

/// The most recent tool results are never pruned: the agent is working on them.
const KEEP_RECENT: usize = 2;
/// Output reserve when the request names none.
const DEFAULT_RESERVE: u64 = 16_384;

/// Context windows in tokens, first matching prefix wins.
const CONTEXT: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 272_000),
    ("gpt-4o", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("deepseek", 128_000),
    ("gemini", 1_048_576),
    ("llama", 128_000),
    ("qwen", 128_000),
];
/// For a model the table does not know: a common, modest window.
const DEFAULT_CONTEXT: u64 = 128_000;

pub fn context_window(model: &str) -> u64 {
    // `provider/model` names route by prefix; the window belongs to the model.
    let model = model.rsplit('/').next().unwrap_or(model);
    CONTEXT
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(DEFAULT_CONTEXT, |(_, n)| *n)
}

impl ContextPruning {
    /// (start pruning above, prune down to), as shares of the input budget.
    fn marks(&self) -> (f64, f64) {
        match self.mode {
            PruneMode::Conservative => (0.90, 0.70),
            PruneMode::Balanced => (0.80, 0.55),
            // Only a request that would not fit at all: pruning it costs nothing the
            // provider would not have refused anyway.
            PruneMode::Auto => (1.0, 0.70),
            PruneMode::Aggressive => (0.65, 0.40),
        }
    }
}

fn placeholder(tokens: u64, text: &str, origin: &str) -> String {
    let id = super::originals::id(&hash(text));
    format!(
        "[… tool result elided to fit the context window: {} tokens, {} lines …]{}",
        thousands(tokens as usize),
        thousands(text.lines().count()),
        super::originals::retrieval_line(origin, &id)
    )
}

impl Pass for ContextPruning {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mode(&self) -> String {
        self.mode.to_string()
    }

    fn may_fire(&self, body: &[u8]) -> bool {
        // Every o200k token is at least one byte, so a body smaller than this mode's
        // trigger on the smallest window (with the largest output reserve) is under it
        // in tokens, whatever the model.
        let smallest = CONTEXT
            .iter()
            .map(|(_, n)| *n)
            .fold(DEFAULT_CONTEXT, u64::min);
        let lowest = ((smallest - smallest / 4) as f64 * self.marks().0) as usize;
        body.len() >= lowest
    }

    fn run(&self, doc: &mut Doc, shared: &Shared) -> PassReport {
        let mut report = PassReport::new(NAME, self.mode());
        let window = context_window(&doc.model);
        let reserve = doc
            .located
            .max_output_tokens
            .unwrap_or(DEFAULT_RESERVE)
            .min(window / 4);
        let budget = window.saturating_sub(reserve);
        let (high, low) = self.marks();
        let trigger = (budget as f64 * high) as u64;

        let n = doc.located.tool_blocks.len();
        let rest_bytes = doc.located.body_len.saturating_sub(
            doc.located
                .tool_blocks
                .iter()
                .map(|b| b.span.len())
                .sum::<usize>(),
        );
        // Exact counts already known (earlier turns) are used as they are; the others are
        // estimated first, and counted only if the request may be near the trigger (the
        // estimate is never off by half).
        let hashes: Vec<Hash> = (0..n).map(|i| hash(doc.current(i))).collect();
        let mut known = 0u64;
        let mut estimated = 0u64;
        for (i, h) in hashes.iter().enumerate() {
            match shared.counts.get(h) {
                Some(t) => known += t,
                None => estimated += tokens::estimate(doc.current(i)),
            }
        }
        let rest = rest_bytes as u64 / 4;
        if known + estimated.saturating_mul(3) / 2 + rest < trigger {
            return report;
        }
        let block_tokens: Vec<u64> = hashes
            .iter()
            .enumerate()
            .map(|(i, h)| shared.counts.count(h, doc.current(i)))
            .collect();
        // The rest (system prompt, tools, user and assistant turns) is not tokenized: a
        // quarter of its bytes is a close, stable estimate for English and code.
        let total: u64 = block_tokens.iter().sum::<u64>() + rest_bytes as u64 / 4;
        if total <= trigger {
            return report;
        }
        let target = (budget as f64 * low) as u64;
        let batch = (budget / 5).max(1);
        let need = total - target;
        let quantized = need.div_ceil(batch) * batch;

        let mut freed = 0u64;
        let oldest = n.saturating_sub(KEEP_RECENT);
        for (i, &before) in block_tokens.iter().enumerate().take(oldest) {
            if freed >= quantized {
                break;
            }
            if before < 64 {
                continue;
            }
            let original = &doc.located.tool_blocks[i].text;
            let text = placeholder(before, original, shared.origin());
            if text.len() >= original.len() {
                continue;
            }
            let after = tokens::estimate(&text);
            freed += before.saturating_sub(after);
            report.changed(before, after);
            doc.replaced[i] = Some((text, NAME));
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{splice, Optimizer, Plan};
    use trimgate_wire::dialect::Dialect;

    fn session(results: usize, each: &str) -> serde_json::Value {
        let mut messages = vec![serde_json::json!({"role": "user", "content": "go"})];
        for i in 0..results {
            messages.push(serde_json::json!({"role": "assistant", "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
            messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("{i}: {each}")}));
        }
        serde_json::json!({"model": "gpt-4o", "messages": messages})
    }

    fn prune(body: &serde_json::Value) -> (serde_json::Value, usize) {
        let bytes = serde_json::to_vec(body).unwrap();
        let plan = Plan {
            prune: Some(PruneMode::Balanced),
            ..Plan::OFF
        };
        let out =
            Optimizer::new(Default::default()).run(Dialect::OpenAiChat, &bytes, "gpt-4o", &plan);
        (
            serde_json::from_slice(&splice(&bytes, &out.edits)).unwrap(),
            out.changes.len(),
        )
    }

    #[test]
    fn windows_by_model() {
        assert_eq!(context_window("claude-sonnet-4-5"), 200_000);
        assert_eq!(context_window("openai/gpt-4o-mini"), 128_000);
        assert_eq!(context_window("mystery"), DEFAULT_CONTEXT);
    }

    #[test]
    fn small_requests_are_left_alone() {
        let body = session(10, &"word ".repeat(200));
        assert_eq!(prune(&body).1, 0);
    }

    #[test]
    fn near_the_window_the_oldest_results_go_and_pairing_holds() {
        // ~6,000 tokens a result × 40 ≈ 240k tokens, far over gpt-4o's 128k.
        let each = "alpha beta gamma delta ".repeat(1500);
        let body = session(40, &each);
        let (pruned, changed) = prune(&body);
        assert!(changed > 0);
        let messages = pruned["messages"].as_array().unwrap();
        assert_eq!(messages.len(), body["messages"].as_array().unwrap().len());
        for (i, m) in messages.iter().enumerate().skip(1) {
            if m["role"] == "tool" {
                let call = &messages[i - 1]["tool_calls"][0]["id"];
                assert_eq!(&m["tool_call_id"], call, "pairing kept");
            }
        }
        assert!(messages[2]["content"]
            .as_str()
            .unwrap()
            .contains("elided to fit the context window"));
        assert_eq!(
            messages.last().unwrap()["content"],
            body["messages"][80]["content"]
        );
    }

    #[test]
    fn the_pruned_set_only_moves_in_batches() {
        let each = "alpha beta gamma delta ".repeat(1500);
        let mut previous = None;
        let mut moves = 0;
        for turns in 30..45 {
            let (_, changed) = prune(&session(turns, &each));
            if previous.is_some_and(|p| p != changed) {
                moves += 1;
            }
            previous = Some(changed);
        }
        assert!(moves <= 5, "the pruned set moved on {moves} of 15 turns");
    }
}

//! The optimizer on any input: every pass at its hardest, and the strict squeeze. For a
//! body that is JSON, the optimized body is JSON too; no rewritten block grows; the same
//! input gives the same bytes twice. The first byte picks the dialect and whether the
//! rest is a whole body or the text of a tool result placed in a valid one.
#![no_main]

use trimgate_wire::dialect::Dialect;
use trimgate_optimize::compact::Level;
use trimgate_optimize::modes::{PruneMode, TerseMode};
use trimgate_optimize::{splice, Modes, Optimizer, Plan};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fn body_with(dialect: Dialect, text: &str) -> Vec<u8> {
    let v = match dialect {
        Dialect::OpenAiChat => json!({"model": "gpt-4o", "messages": [
            {"role": "system", "content": "sys"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": text},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": text}]}], "tools": [{"type": "function"}]}),
        Dialect::OpenAiResponses => json!({"model": "gpt-5", "instructions": "sys", "input": [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": text}], "tools": [{"type": "function"}]}),
        Dialect::AnthropicMessages => json!({"model": "claude-x", "max_tokens": 10, "system": "sys", "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text},
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": text}]}]}], "tools": [{"name": "f"}]}),
        Dialect::Gemini => json!({"systemInstruction": {"parts": [{"text": "sys"}]}, "contents": [
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "f", "response": {"output": text}}}]}],
            "tools": [{"functionDeclarations": [{"name": "f"}]}]}),
    };
    serde_json::to_vec(&v).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let dialect = match first % 4 {
        0 => Dialect::OpenAiChat,
        1 => Dialect::OpenAiResponses,
        2 => Dialect::AnthropicMessages,
        _ => Dialect::Gemini,
    };
    let body = if first & 0x80 == 0 {
        if serde_json::from_slice::<serde_json::Value>(rest).is_err() {
            return;
        }
        rest.to_vec()
    } else {
        // Tool output is often long and repetitive: repeat short inputs past the size gates.
        let text = String::from_utf8_lossy(rest);
        let times = if text.is_empty() { 1 } else { 1 + 4096 / text.len() };
        body_with(dialect, &text.repeat(times.min(64)))
    };
    let hardest = Plan {
        tool_output: Some(Level::Aggressive),
        terse: Some(TerseMode::Full),
        prune: Some(PruneMode::Aggressive),
        squeeze: false,
    };
    let squeeze = Plan { squeeze: true, ..Plan::OFF };
    for plan in [hardest, squeeze, Plan::DEFAULT] {
        let optimizer = Optimizer::new(Modes::default());
        let out = optimizer.run(dialect, &body, "gpt-4o", &plan);
        let again = Optimizer::new(Modes::default()).run(dialect, &body, "gpt-4o", &plan);
        assert_eq!(out.edits, again.edits, "deterministic");
        for change in &out.changes {
            assert!(change.replacement.len() < change.original.len(), "{} grew a block", change.pass);
        }
        let new = splice(&body, &out.edits);
        serde_json::from_slice::<serde_json::Value>(&new).expect("optimized body is JSON");
    }
});

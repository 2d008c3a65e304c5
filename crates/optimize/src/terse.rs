//! The terse directive: a short, fixed instruction appended to the end of the system
//! prompt, asking for answers without padding. It costs a few input tokens every turn and
//! saves output tokens, which cost several times more. The system prompt's own words are
//! never changed, and the text added is the same on every turn, so the cached prefix holds.
//!
//! `auto` adds it only when the request offers tools (an agent at work) and the session's
//! first user message does not ask for detail; both facts are fixed for a whole session.

use super::modes::TerseMode;
use super::tokens::estimate;
use super::{Doc, Pass, PassReport, Shared};

pub struct TerseDirective {
    pub mode: TerseMode,
}

pub const NAME: &str = "terse";

const LITE: &str = "\n\nAnswer tersely: no preamble, no restating the task, no closing summary. Keep code, commands, paths and error messages exact.";
const FULL: &str = "\n\nBe terse. Drop pleasantries, hedging and repetition; short sentences or fragments are fine. Keep code, commands, paths, numbers and error messages exact.";

/// Words that show the user wants a long answer.
const DETAIL_ASKS: [&str; 8] = [
    "in detail",
    "detailed",
    "explain",
    "step by step",
    "step-by-step",
    "thorough",
    "elaborate",
    "walk me through",
];

fn asks_for_detail(text: &str) -> bool {
    let lower = text.to_lowercase();
    DETAIL_ASKS.iter().any(|w| lower.contains(w))
}

impl Pass for TerseDirective {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mode(&self) -> String {
        self.mode.to_string()
    }

    fn may_fire(&self, _body: &[u8]) -> bool {
        true
    }

    fn run(&self, doc: &mut Doc, _shared: &Shared) -> PassReport {
        let mut report = PassReport::new(NAME, self.mode());
        let Some(end) = &doc.located.system_end else {
            return report;
        };
        let directive = match self.mode {
            TerseMode::Lite => LITE,
            TerseMode::Full => FULL,
            TerseMode::Auto => {
                let detail = doc
                    .located
                    .first_user_text
                    .as_deref()
                    .is_some_and(asks_for_detail);
                if !doc.located.has_tools || detail {
                    return report;
                }
                LITE
            }
        };
        // Already there (a client that sends our directive itself, or a re-run).
        if end.text.ends_with(directive.trim_start()) {
            return report;
        }
        report.changed(0, estimate(directive));
        doc.system_append = Some(directive.to_owned());
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{splice, Optimizer, Plan};
    use trimgate_wire::dialect::Dialect;

    fn run(body: serde_json::Value, dialect: Dialect, mode: TerseMode) -> serde_json::Value {
        let bytes = serde_json::to_vec(&body).unwrap();
        let plan = Plan {
            terse: Some(mode),
            ..Plan::OFF
        };
        let out = Optimizer::new(Default::default()).run(dialect, &bytes, "m", &plan);
        serde_json::from_slice(&splice(&bytes, &out.edits)).unwrap()
    }

    #[test]
    fn appends_to_the_end_of_each_dialects_system_prompt() {
        let chat = run(
            serde_json::json!({"model":"m","messages":[{"role":"system","content":"Agent."},{"role":"user","content":"go"}],"tools":[{"type":"function"}]}),
            Dialect::OpenAiChat,
            TerseMode::Lite,
        );
        assert_eq!(chat["messages"][0]["content"], format!("Agent.{LITE}"));
        let responses = run(
            serde_json::json!({"model":"m","instructions":"Agent.","input":"go"}),
            Dialect::OpenAiResponses,
            TerseMode::Full,
        );
        assert_eq!(responses["instructions"], format!("Agent.{FULL}"));
        let anthropic = run(
            serde_json::json!({"model":"m","system":[{"type":"text","text":"A."},{"type":"text","text":"B.","cache_control":{"type":"ephemeral"}}],"messages":[]}),
            Dialect::AnthropicMessages,
            TerseMode::Lite,
        );
        assert_eq!(anthropic["system"][0]["text"], "A.");
        assert_eq!(anthropic["system"][1]["text"], format!("B.{LITE}"));
        assert_eq!(anthropic["system"][1]["cache_control"]["type"], "ephemeral");
    }

    #[test]
    fn auto_needs_tools_and_stays_off_when_the_user_wants_detail() {
        let no_tools = serde_json::json!({"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"go"}]});
        assert_eq!(
            run(no_tools.clone(), Dialect::OpenAiChat, TerseMode::Auto),
            no_tools
        );
        let detail = serde_json::json!({"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"Explain the design in detail"}],"tools":[{"type":"function"}]});
        assert_eq!(
            run(detail.clone(), Dialect::OpenAiChat, TerseMode::Auto),
            detail
        );
        let agent = serde_json::json!({"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"fix the build"}],"tools":[{"type":"function"}]});
        assert_ne!(
            run(agent.clone(), Dialect::OpenAiChat, TerseMode::Auto),
            agent
        );
    }

    #[test]
    fn no_system_prompt_no_change() {
        let body = serde_json::json!({"model":"m","messages":[{"role":"user","content":"go"}],"tools":[{"type":"function"}]});
        assert_eq!(
            run(body.clone(), Dialect::OpenAiChat, TerseMode::Full),
            body
        );
    }
}

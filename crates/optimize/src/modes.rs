//! Which passes run, and how hard: a [`Plan`] per request, from the configured defaults,
//! the rules for the model (globs, in order), the gateway key's override and the
//! `x-trimgate-optimize` header, each a [`PlanPatch`] laid over the last.

use std::fmt;

use globset::{Glob, GlobMatcher};

use super::compact::Level;
use trimgate_wire::dialect::Dialect;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerseMode {
    Lite,
    Full,
    /// Lite when the request offers tools and the session's first message does not ask
    /// for detail; off otherwise.
    Auto,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PruneMode {
    Conservative,
    Balanced,
    Aggressive,
    Auto,
}

/// The passes a request runs. `None` is off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub tool_output: Option<Level>,
    pub terse: Option<TerseMode>,
    pub prune: Option<PruneMode>,
    /// The strict squeeze runs alone: when on, the other passes do not.
    pub squeeze: bool,
}

impl Plan {
    pub const OFF: Plan = Plan {
        tool_output: None,
        terse: None,
        prune: None,
        squeeze: false,
    };

    /// The shipped defaults, chosen from the savings corpus (see BENCHMARKS.md): compaction
    /// and pruning on, since both pay for themselves; the terse directive off, since it
    /// costs input tokens every turn and what it saves cannot be measured without a model.
    pub const DEFAULT: Plan = Plan {
        tool_output: Some(Level::Auto),
        terse: None,
        prune: Some(PruneMode::Auto),
        squeeze: false,
    };

    pub fn is_off(&self) -> bool {
        *self == Plan::OFF
            || (!self.squeeze
                && self.tool_output.is_none()
                && self.terse.is_none()
                && self.prune.is_none())
    }

    pub fn apply(&mut self, patch: &PlanPatch) {
        if let Some(v) = patch.tool_output {
            self.tool_output = v;
        }
        if let Some(v) = patch.terse {
            self.terse = v;
        }
        if let Some(v) = patch.prune {
            self.prune = v;
        }
        if let Some(v) = patch.squeeze {
            self.squeeze = v;
        }
    }
}

/// Settings that override some of a plan's; `None` leaves a setting as it was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanPatch {
    pub tool_output: Option<Option<Level>>,
    pub terse: Option<Option<TerseMode>>,
    pub prune: Option<Option<PruneMode>>,
    pub squeeze: Option<bool>,
}

impl PlanPatch {
    pub const ALL_OFF: PlanPatch = PlanPatch {
        tool_output: Some(None),
        terse: Some(None),
        prune: Some(None),
        squeeze: Some(false),
    };

    /// Sets one pass from its name and mode as written in config or the header.
    pub fn set(&mut self, pass: &str, mode: &str) -> Result<(), String> {
        let mode = mode.trim().to_ascii_lowercase();
        let off = matches!(mode.as_str(), "off" | "false" | "none");
        match pass.trim() {
            "tool_output" => {
                self.tool_output = Some(if off {
                    None
                } else {
                    Some(match mode.as_str() {
                        "light" => Level::Light,
                        "standard" => Level::Standard,
                        "aggressive" => Level::Aggressive,
                        "auto" | "on" => Level::Auto,
                        _ => {
                            return Err(bad(pass, &mode, "off, light, standard, aggressive, auto"))
                        }
                    })
                })
            }
            "terse" => {
                self.terse = Some(if off {
                    None
                } else {
                    Some(match mode.as_str() {
                        "lite" => TerseMode::Lite,
                        "full" => TerseMode::Full,
                        "auto" | "on" => TerseMode::Auto,
                        _ => return Err(bad(pass, &mode, "off, lite, full, auto")),
                    })
                })
            }
            "prune" => {
                self.prune = Some(if off {
                    None
                } else {
                    Some(match mode.as_str() {
                        "conservative" => PruneMode::Conservative,
                        "balanced" => PruneMode::Balanced,
                        "aggressive" => PruneMode::Aggressive,
                        "auto" | "on" => PruneMode::Auto,
                        _ => {
                            return Err(bad(
                                pass,
                                &mode,
                                "off, conservative, balanced, aggressive, auto",
                            ))
                        }
                    })
                })
            }
            "squeeze" => {
                self.squeeze = Some(match mode.as_str() {
                    "on" | "true" => true,
                    _ if off => false,
                    _ => return Err(bad(pass, &mode, "on, off")),
                })
            }
            other => {
                return Err(format!(
                    "unknown pass {other:?}; the passes are tool_output, terse, prune, squeeze"
                ))
            }
        }
        Ok(())
    }

    /// Parses the `x-trimgate-optimize` header: `off` (every pass), or `pass=mode` pairs
    /// separated by commas or spaces (`tool_output=aggressive, terse=off`).
    pub fn from_header(value: &str) -> Result<PlanPatch, String> {
        let value = value.trim();
        if value.eq_ignore_ascii_case("off") || value.eq_ignore_ascii_case("none") {
            return Ok(PlanPatch::ALL_OFF);
        }
        let mut patch = PlanPatch::default();
        let mut any = false;
        for pair in value.split([',', ' ', ';']).filter(|p| !p.is_empty()) {
            let Some((pass, mode)) = pair.split_once('=') else {
                return Err(format!(
                    "expected `off` or pass=mode pairs (tool_output=aggressive, terse=off), got {pair:?}"
                ));
            };
            patch.set(pass, mode)?;
            any = true;
        }
        if !any {
            return Err("empty value; use `off` or pass=mode pairs".into());
        }
        Ok(patch)
    }
}

fn bad(pass: &str, mode: &str, allowed: &str) -> String {
    format!("{pass} mode {mode:?} is not one of {allowed}")
}

/// The validated optimizer settings: defaults, then model rules in order.
#[derive(Clone, Debug)]
pub struct Modes {
    pub defaults: Plan,
    pub rules: Vec<ModelRule>,
    /// Share of sessions, in thousandths, sent unoptimized as a control group.
    pub holdout_permille: u16,
    /// Bytes of rewritten blocks kept for inspection.
    pub originals_bytes: usize,
    /// Prompt-cache breakpoints for Anthropic-bound requests that carry none
    /// ([`super::breakpoints`]).
    pub cache_breakpoints: bool,
    /// How long elided outputs are kept in the ledger's database.
    pub originals_for: std::time::Duration,
    /// Bytes of elided outputs the ledger's database keeps at most; the oldest go first.
    pub originals_db_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct ModelRule {
    pub pattern: String,
    matcher: GlobMatcher,
    pub patch: PlanPatch,
    /// The holdout share for these models, in thousandths, when set.
    pub holdout_permille: Option<u16>,
}

impl ModelRule {
    pub fn new(pattern: &str, patch: PlanPatch) -> Result<ModelRule, String> {
        let glob =
            Glob::new(pattern).map_err(|e| format!("{pattern:?} is not a valid glob: {e}"))?;
        Ok(ModelRule {
            pattern: pattern.to_owned(),
            matcher: glob.compile_matcher(),
            patch,
            holdout_permille: None,
        })
    }
}

impl Default for Modes {
    fn default() -> Self {
        Modes {
            defaults: Plan::DEFAULT,
            rules: Vec::new(),
            holdout_permille: 0,
            originals_bytes: 64 * 1024 * 1024,
            cache_breakpoints: true,
            originals_for: std::time::Duration::from_secs(7 * 86_400),
            originals_db_bytes: 512 * 1024 * 1024,
        }
    }
}

impl Modes {
    /// Whether this request belongs to the control group sent unoptimized. Decided per
    /// session — by the session's first user message, which every turn repeats — so a
    /// held-out session stays held out on every turn and the provider's cache sees one
    /// consistent history.
    pub fn held_out(&self, model: &str, dialect: Dialect, body: &[u8]) -> bool {
        let permille = self
            .rules
            .iter()
            .rev()
            .find(|r| r.holdout_permille.is_some() && r.matcher.is_match(model))
            .and_then(|r| r.holdout_permille)
            .unwrap_or(self.holdout_permille);
        if permille == 0 {
            return false;
        }
        let first = super::locate::locate(dialect, body).and_then(|l| l.first_user_text);
        let mut hasher = blake3::Hasher::new();
        hasher.update(model.as_bytes());
        hasher.update(first.as_deref().unwrap_or("").as_bytes());
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&hasher.finalize().as_bytes()[..8]);
        u64::from_le_bytes(bytes) % 1000 < u64::from(permille)
    }

    /// The plan for `model`, before key and header overrides.
    pub fn for_model(&self, model: &str) -> Plan {
        let mut plan = self.defaults;
        for rule in &self.rules {
            if rule.matcher.is_match(model) {
                plan.apply(&rule.patch);
            }
        }
        plan
    }
}

impl fmt::Display for Plan {
    /// `tool_output=auto prune=auto`, or `all passes off`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.squeeze {
            parts.push("squeeze=on".to_owned());
        } else {
            if let Some(l) = self.tool_output {
                parts.push(format!("tool_output={l}"));
            }
            if let Some(t) = self.terse {
                parts.push(format!("terse={t}"));
            }
            if let Some(p) = self.prune {
                parts.push(format!("prune={p}"));
            }
        }
        if parts.is_empty() {
            f.write_str("all passes off")
        } else {
            f.write_str(&parts.join(" "))
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Light => "light",
            Level::Standard => "standard",
            Level::Aggressive => "aggressive",
            Level::Auto => "auto",
        })
    }
}

impl fmt::Display for TerseMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TerseMode::Lite => "lite",
            TerseMode::Full => "full",
            TerseMode::Auto => "auto",
        })
    }
}

impl fmt::Display for PruneMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PruneMode::Conservative => "conservative",
            PruneMode::Balanced => "balanced",
            PruneMode::Aggressive => "aggressive",
            PruneMode::Auto => "auto",
        })
    }
}

/// Pass modes as the config, the window and a virtual key write them (`off`, `light`,
/// `lite`…), each optional: `None` leaves the choice to what lies under it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrittenModes {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terse: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub squeeze: Option<bool>,
}

impl WrittenModes {
    pub fn is_empty(&self) -> bool {
        *self == WrittenModes::default()
    }

    /// The overrides as the patch laid over a request's plan, or what is wrong with one.
    /// Each mode is read by [`PlanPatch::set`], as the config's are, so a key takes the
    /// same values as `[[gateway_keys]].optimize`.
    pub fn patch(&self) -> Result<PlanPatch, String> {
        let WrittenModes {
            tool_output,
            terse,
            prune,
            squeeze,
        } = self;
        let mut patch = PlanPatch::default();
        for (pass, mode) in [
            ("tool_output", tool_output),
            ("terse", terse),
            ("prune", prune),
        ] {
            if let Some(mode) = mode {
                patch
                    .set(pass, mode)
                    .map_err(|e| format!("optimize.{pass}: {e}"))?;
            }
        }
        patch.squeeze = *squeeze;
        Ok(patch)
    }

    /// Sets one pass from its name and mode as written on a command line (`squeeze=on`).
    pub fn set(&mut self, pass: &str, mode: &str) -> Result<(), String> {
        let mut checked = PlanPatch::default();
        checked.set(pass, mode)?;
        let mode = Some(mode.trim().to_ascii_lowercase());
        match pass.trim() {
            "tool_output" => self.tool_output = mode,
            "terse" => self.terse = mode,
            "prune" => self.prune = mode,
            "squeeze" => self.squeeze = checked.squeeze,
            other => return Err(format!("unknown pass {other:?}")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_turns_everything_off_or_sets_passes() {
        let mut plan = Plan::DEFAULT;
        plan.apply(&PlanPatch::from_header("off").unwrap());
        assert!(plan.is_off());
        let mut plan = Plan::DEFAULT;
        plan.apply(
            &PlanPatch::from_header("tool_output=aggressive, terse=lite prune=off").unwrap(),
        );
        assert_eq!(plan.tool_output, Some(Level::Aggressive));
        assert_eq!(plan.terse, Some(TerseMode::Lite));
        assert_eq!(plan.prune, None);
        for bad in ["tool_output=max", "zip=on", "aggressive", ""] {
            assert!(PlanPatch::from_header(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plans_print_as_the_header_reads() {
        assert_eq!(Plan::DEFAULT.to_string(), "tool_output=auto prune=auto");
        assert_eq!(Plan::OFF.to_string(), "all passes off");
    }

    #[test]
    fn holdout_takes_its_share_by_session_and_keeps_a_session_together() {
        let modes = Modes {
            holdout_permille: 200,
            ..Modes::default()
        };
        let mut held = 0;
        for i in 0..2000 {
            let first_turn = serde_json::json!({"model": "m", "messages": [
                {"role": "system", "content": "the same agent prompt for every session"},
                {"role": "user", "content": format!("task {i}")}]});
            let mut later_turn = first_turn.clone();
            for _ in 0..50 {
                later_turn["messages"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({"role": "assistant", "content": "working"}));
            }
            let a = modes.held_out("m", Dialect::OpenAiChat, first_turn.to_string().as_bytes());
            let b = modes.held_out("m", Dialect::OpenAiChat, later_turn.to_string().as_bytes());
            assert_eq!(a, b, "one session, one group");
            held += usize::from(a);
        }
        assert!(
            (300..500).contains(&held),
            "{held} of 2000 held out at 20 %"
        );
        assert!(!Modes::default().held_out("m", Dialect::OpenAiChat, b"{}"));
    }

    #[test]
    fn model_rules_apply_in_order() {
        let mut light = PlanPatch::default();
        light.set("tool_output", "light").unwrap();
        let mut squeeze = PlanPatch::default();
        squeeze.set("squeeze", "on").unwrap();
        let modes = Modes {
            rules: vec![
                ModelRule::new("claude-*", light).unwrap(),
                ModelRule::new("claude-opus-*", squeeze).unwrap(),
            ],
            ..Modes::default()
        };
        assert_eq!(modes.for_model("gpt-5"), Plan::DEFAULT);
        let sonnet = modes.for_model("claude-sonnet-4-5");
        assert_eq!(
            (sonnet.tool_output, sonnet.squeeze),
            (Some(Level::Light), false)
        );
        let opus = modes.for_model("claude-opus-4-1");
        assert_eq!((opus.tool_output, opus.squeeze), (Some(Level::Light), true));
    }
}

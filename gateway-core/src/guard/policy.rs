//! What the guard does with a request: its mode (from the client's key, the first rule
//! that matches the model and provider, else `[guard] mode`), and the hooks that see it.

use std::sync::Arc;
use std::time::Duration;

use globset::GlobMatcher;

use super::rules::Rules;

/// What happens to a secret in a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Replaced by its placeholder; put back in the answer.
    #[default]
    Redact,
    /// The request is refused, naming the kind and where it was.
    Block,
    /// Sent as it is.
    Off,
}

impl Mode {
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "redact" => Ok(Mode::Redact),
            "block" => Ok(Mode::Block),
            "off" => Ok(Mode::Off),
            other => Err(format!(
                "{other:?} is not a guard mode: redact, block or off"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Redact => "redact",
            Mode::Block => "block",
            Mode::Off => "off",
        }
    }
}

/// When a hook that does not answer in time, or answers something unreadable, lets the
/// request go on (`Open`) or refuses it (`Closed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    Open,
    Closed,
}

/// An HTTP guardrail hook (`[[guard.hooks]]`).
#[derive(Debug)]
pub struct Hook {
    pub name: String,
    pub url: String,
    /// Called with the request before it goes upstream.
    pub pre: bool,
    /// Called with a whole answer before the client gets it (streamed answers: with the
    /// text once the stream has ended, to report; it can no longer be held back).
    pub post: bool,
    pub timeout: Duration,
    pub fail: FailMode,
    /// Header name and the environment variable its value is read from at each call
    /// (a hook's token stays out of the config).
    pub headers: Vec<(String, String)>,
}

/// `[[guard.rules]]`: a mode and hooks for the models (and providers) they match.
#[derive(Debug)]
pub struct Rule {
    pub pattern: Option<String>,
    pub matcher: Option<GlobMatcher>,
    pub provider: Option<String>,
    pub mode: Option<Mode>,
    pub hooks: Vec<Arc<Hook>>,
}

impl Rule {
    fn matches(&self, model: &str, provider: &str) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.is_match(model))
            && self.provider.as_deref().is_none_or(|p| p == provider)
    }
}

/// The guard's settings, checked (`[guard]`).
#[derive(Debug)]
pub struct Settings {
    pub mode: Mode,
    pub rules: Vec<Rule>,
    /// Hooks every request meets, before a rule's own.
    pub hooks: Vec<Arc<Hook>>,
    /// The detection rules: the built-in set, the user's patterns and the allow-list.
    pub detect: Arc<Rules>,
    /// Where the installation's placeholder key is kept; default beside the config.
    pub key_file: Option<std::path::PathBuf>,
    /// Values the vault keeps at most.
    pub vault_capacity: usize,
    /// Custom pattern ids and allow-list sizes, for the window (never the values).
    pub patterns: Vec<String>,
    pub allowed: usize,
}

/// What the guard does for one request.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub mode: Mode,
    pub hooks: Vec<Arc<Hook>>,
}

impl Settings {
    /// The mode and hooks for a request for `model`, sent to `provider`, by a client
    /// whose key says `key_mode`. The key's mode wins, then the first rule that sets one.
    pub fn decide(&self, model: &str, provider: &str, key_mode: Option<Mode>) -> Decision {
        let mut hooks = self.hooks.clone();
        let mut mode = None;
        for rule in self.rules.iter().filter(|r| r.matches(model, provider)) {
            if mode.is_none() {
                mode = rule.mode;
            }
            for hook in &rule.hooks {
                if !hooks.iter().any(|h| Arc::ptr_eq(h, hook)) {
                    hooks.push(hook.clone());
                }
            }
        }
        Decision {
            mode: key_mode.or(mode).unwrap_or(self.mode),
            hooks,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::Redact,
            rules: Vec::new(),
            hooks: Vec::new(),
            detect: default_rules(),
            key_file: None,
            vault_capacity: super::vault::DEFAULT_CAPACITY,
            patterns: Vec::new(),
            allowed: 0,
        }
    }
}

/// The built-in rules, compiled once per process.
pub fn default_rules() -> Arc<Rules> {
    static BUILTIN: std::sync::OnceLock<Option<Arc<Rules>>> = std::sync::OnceLock::new();
    BUILTIN
        .get_or_init(|| Rules::builtin().ok().map(Arc::new))
        .clone()
        .unwrap_or_else(|| Arc::new(Rules::empty()))
}

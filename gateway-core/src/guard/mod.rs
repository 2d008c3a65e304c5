//! The secrets guard: secrets in what goes to the provider are replaced by stand-ins, and
//! put back into the answer before the agent reads it. Pure and in memory (the policy
//! layer): it reads no file and opens no socket; the request path calls it (not yet
//! wired).
//!
//! - [`rules`]: the rule set, TOML data in gitleaks' format (a vendored subset of
//!   gitleaks' rules, MIT, and the guard's own), compiled once into [`Rules`].
//! - [`detect`]: [`Rules::detect`] finds the secrets in a text, as [`Finding`]s.
//! - `context`: the tests in code that rules delegate to (does a name say secret, could a
//!   value be one, is a JWT one), and what keeps the daily traps out.
//! - [`placeholder`]: the stand-in's form (`TRIMGATE_SECRET_<KIND>_<id>`) and the keyed
//!   hash that names a secret ([`Placeholders`]).
//! - [`vault`]: placeholder → value per scope, bounded ([`Vault`]).
//! - [`redact`]: [`redact()`] and [`redact_json_escaped`] replace a text's secrets.
//! - [`restore`]: [`Vault::values_of`] takes a scope's values, which [`Values::restore`]
//!   and the streaming [`StreamRestorer`] put back.
//! - [`answer`]: [`answer::restore_whole`] and [`answer::SseRestorer`] put them back in the
//!   answer's own bytes, whole or streamed, in each client dialect.
//! - `escape`: JSON string escaping both ways, with offsets mapped back.
//!
//! ```
//! use gateway_core::guard::{redact, vault::DEFAULT_CAPACITY, Escape, Placeholders, Rules, Vault};
//!
//! let rules = Rules::builtin().unwrap();
//! let mut vault = Vault::new(Placeholders::new([0; 32]), DEFAULT_CAPACITY);
//! let (out, found) = redact("DB_PASSWORD=Zx9-pQ2_mL7vB4\n", &rules, &mut vault, "session-1");
//! assert_eq!(found.len(), 1);
//! assert!(out.starts_with("DB_PASSWORD=TRIMGATE_SECRET_ENV_SECRET_"));
//! let values = vault.values_of("session-1");
//! assert_eq!(values.restore(&out, Escape::Plain), "DB_PASSWORD=Zx9-pQ2_mL7vB4\n");
//! ```

pub mod answer;
pub mod body;
pub mod clean;
mod context;
pub mod detect;
mod escape;
pub mod kind;
pub mod placeholder;
pub mod policy;
pub mod redact;
pub mod restore;
pub mod rules;
pub mod vault;

#[cfg(test)]
mod tests;

pub use clean::Clean;
pub use detect::Finding;
pub use kind::SecretKind;
pub use placeholder::Placeholders;
pub use policy::{Decision, FailMode, Hook, Mode, Settings};
pub use redact::{redact, redact_json_escaped, Redaction};
pub use restore::{Escape, StreamRestorer, Values};
pub use rules::{CustomPattern, Rules, RulesError};
pub use vault::Vault;

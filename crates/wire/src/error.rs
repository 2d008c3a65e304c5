//! What reading or writing a dialect's bytes can refuse. Every one is the client's doing:
//! a body that is not JSON, a field of the wrong shape, a feature the target cannot carry.
//! The gateway turns these into its own errors, and renders them; this crate knows no HTTP.

/// A refusal of the wire layer, worded as the client will read it.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("request body is not valid JSON: {0}")]
    InvalidJson(String),
    #[error("{message}")]
    InvalidField {
        param: &'static str,
        message: String,
    },
    #[error("{feature} cannot be sent to {target}: {hint}")]
    Untranslatable {
        feature: String,
        /// The provider and its dialect, as [`WireError::aimed_at`] sets them.
        target: String,
        hint: &'static str,
    },
}

impl WireError {
    /// Names the real target in a refusal made while translating for it: the codecs know
    /// what they cannot carry, only the caller knows where it was going.
    pub fn aimed_at(mut self, target: String) -> Self {
        if let WireError::Untranslatable { target: t, .. } = &mut self {
            *t = target;
        }
        self
    }
}

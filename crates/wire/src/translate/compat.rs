//! The compatibility policy: what happens to each field of a request that goes to a
//! provider of another dialect.
//!
//! - **carried** or **mapped**: the field has a meaning on the other side; its codec reads
//!   it into the IR and the target's codec writes it out (`output_config.effort` ⇄
//!   `reasoning.effort` ⇄ a thinking budget).
//! - **dropped and reported**: the field only concerns the client's own bookkeeping or a
//!   server-side feature of the original provider (`context_management`,
//!   `client_metadata`); the request goes on without it, and the field is named in
//!   `x-trimgate-dropped`, the ledger row and the log.
//! - **refused**: the field changes what the model is asked to do and the target cannot do
//!   it (`previous_response_id`, `n` > 1): a 400 naming the field and the target.
//! - **unknown**: a field the codec has never heard of is dropped and reported, so a new
//!   release of an agent keeps working; a provider with `strict = true` refuses it.
//!
//! Each codec lists its dialect's fields in a [`Field`] table; what its decoder reads is
//! `Carried`. The tables are the policy tables of docs/dialects.md, and a test keeps them in step.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::dialect::Dialect;
use crate::error::WireError;
use crate::provider::ProviderKind;

/// Where a translated request goes.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub dialect: Dialect,
    pub provider: &'a str,
    pub kind: ProviderKind,
    /// Refuse unknown fields instead of dropping them.
    pub strict: bool,
    /// The most output tokens the provider accepts; a request asking for more is lowered.
    pub max_output_tokens: Option<u64>,
}

impl Target<'_> {
    /// How a refusal names the target: the provider and the dialect it was spoken to in.
    pub fn describe(&self) -> String {
        format!("provider {:?} ({})", self.provider, self.dialect)
    }
}

/// What the policy says of one field of a dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Read into the IR by the decoder (and written out, or reported, by the encoder).
    Carried,
    /// Only the client's bookkeeping or the original provider's server-side feature.
    Dropped,
    /// Changes the task and cannot be carried; the hint says what to do instead.
    Refused(&'static str),
}

/// What the IR carries but a target may have no place for; reported by the client's own
/// name for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carried {
    Effort,
    Verbosity,
    PromptCacheKey,
    EncryptedReasoning,
    /// An end-user id, for a target with no field for one (Gemini).
    User,
    /// A request for one tool call at a time, for a target with no such knob (Gemini).
    SequentialToolCalls,
    /// The schema of a JSON answer, for a target with JSON mode only (DeepSeek).
    ResponseSchema,
}

impl Carried {
    /// The field's name in the client's dialect.
    pub fn field(self, client: Dialect) -> &'static str {
        match (self, client) {
            (Carried::Effort, Dialect::OpenAiChat) => "reasoning_effort",
            (Carried::Effort, Dialect::OpenAiResponses) => "reasoning.effort",
            (Carried::Effort, Dialect::AnthropicMessages) => "output_config.effort",
            (Carried::Effort, Dialect::Gemini) => "generationConfig.thinkingConfig",
            (Carried::Verbosity, Dialect::OpenAiResponses) => "text.verbosity",
            (Carried::Verbosity, _) => "verbosity",
            (Carried::PromptCacheKey, _) => "prompt_cache_key",
            (Carried::EncryptedReasoning, _) => "include",
            (Carried::User, Dialect::AnthropicMessages) => "metadata.user_id",
            (Carried::User, _) => "user",
            (Carried::SequentialToolCalls, Dialect::AnthropicMessages) => {
                "tool_choice.disable_parallel_tool_use"
            }
            (Carried::SequentialToolCalls, _) => "parallel_tool_calls",
            (Carried::ResponseSchema, Dialect::Gemini) => "generationConfig.responseJsonSchema",
            (Carried::ResponseSchema, Dialect::OpenAiChat) => "response_format",
            (Carried::ResponseSchema, Dialect::OpenAiResponses) => "text.format",
            (Carried::ResponseSchema, Dialect::AnthropicMessages) => "output_config.format",
        }
    }
}

/// The fields a translation left out, in the order met, each once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    client: Dialect,
    dropped: Vec<String>,
}

impl Report {
    pub fn new(client: Dialect) -> Self {
        Report {
            client,
            dropped: Vec::new(),
        }
    }

    /// Something the IR carried that the target has no place for.
    pub fn drop_ir(&mut self, what: Carried) {
        self.drop_field(what.field(self.client));
    }

    pub fn drop_field(&mut self, field: impl Into<String>) {
        let field = field.into();
        if !self.dropped.contains(&field) {
            self.dropped.push(field);
        }
    }

    pub fn dropped(&self) -> &[String] {
        &self.dropped
    }

    pub fn is_empty(&self) -> bool {
        self.dropped.is_empty()
    }

    /// The `x-trimgate-dropped` value: the fields, comma-separated.
    pub fn header_value(&self) -> String {
        self.dropped.join(",")
    }
}

/// The policy a decoder applies to the top-level fields of a request.
#[derive(Clone, Copy, Debug, Default)]
pub struct Policy {
    pub strict: bool,
}

impl Policy {
    /// Sorts every top-level field of `obj` by `table`: dropped ones go to the report,
    /// refused ones end the translation, unknown ones follow `strict`.
    pub fn check(
        &self,
        obj: &Map<String, Value>,
        table: &[(&str, Field)],
        dialect: &str,
        report: &mut Report,
    ) -> Result<(), WireError> {
        self.check_fields(
            obj.iter().map(|(k, v)| (Cow::Borrowed(k.as_str()), v)),
            table,
            dialect,
            "",
            report,
        )
    }

    /// [`Policy::check`] for any fields: a nested object's (reported as `prefix` and the
    /// key, `generationConfig.topK`), or keys a dialect spells two ways and the caller has
    /// made one (Gemini's `system_instruction` is its `systemInstruction`).
    pub fn check_fields<'a>(
        &self,
        fields: impl IntoIterator<Item = (Cow<'a, str>, &'a Value)>,
        table: &[(&str, Field)],
        dialect: &str,
        prefix: &str,
        report: &mut Report,
    ) -> Result<(), WireError> {
        for (key, value) in fields {
            let key = key.as_ref();
            match table.iter().find(|(name, _)| *name == key).map(|(_, f)| *f) {
                Some(Field::Carried) => {}
                // A field that asks for nothing (`"store": false`) loses nothing when left out.
                Some(Field::Dropped) if is_empty_ask(value) => {}
                Some(Field::Dropped) => report.drop_field(format!("{prefix}{key}")),
                Some(Field::Refused(_)) if is_empty_ask(value) => {}
                Some(Field::Refused(hint)) => {
                    return Err(super::cannot(
                        format!("the {dialect} field `{prefix}{key}`"),
                        hint,
                    ));
                }
                None if self.strict => return Err(super::cannot(
                    format!("the {dialect} field `{prefix}{key}`, unknown to the gateway,"),
                    "remove it, or set `strict = false` on this provider to drop unknown fields",
                )),
                None if value.is_null() => {}
                None => report.drop_field(format!("{prefix}{key}")),
            }
        }
        Ok(())
    }
}

/// A value that asks for nothing: null, false, an empty string, array or object. A field
/// sent this way (`"logit_bias": {}`, `"store": false`) is neither refused nor reported.
fn is_empty_ask(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) | Value::Bool(true) => false,
    }
}

/// Reasoning efforts each side accepts, for checking a mapped field's value.
pub const ANTHROPIC_EFFORTS: &[&str] = &["low", "medium", "high", "xhigh", "max"];
pub const OPENAI_EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];

/// Reads an effort string, or the 400 that names the field when it is not one of `allowed`.
pub fn effort(
    v: Option<&Value>,
    param: &'static str,
    allowed: &[&str],
) -> Result<Option<String>, WireError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(Some(s.clone())),
        Some(other) => Err(super::bad(
            param,
            format!(
                "`{param}` must be one of {}, not {other}",
                allowed.join(", ")
            ),
        )),
    }
}

/// Reads a verbosity (low, medium, high), or the 400 that names the field.
pub fn verbosity(v: Option<&Value>, param: &'static str) -> Result<Option<String>, WireError> {
    effort(v, param, &["low", "medium", "high"])
}

/// OpenAI caps `user` and `safety_identifier` at 64 characters; a longer id (Claude Code's
/// `metadata.user_id` is a JSON document) goes as its SHA-256, which stays stable per user.
pub const OPENAI_USER_MAX: usize = 64;

pub fn openai_user(id: &str) -> String {
    if id.chars().count() <= OPENAI_USER_MAX {
        return id.to_owned();
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The session a request belongs to, from the ids agents put in the body: Claude Code's
/// `metadata.user_id` (a JSON document with `session_id`, or the older
/// `user_…_session_<uuid>` form).
pub fn session_from_user_id(user_id: &str) -> Option<String> {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(user_id) {
        return o
            .get("session_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
    }
    user_id
        .rsplit_once("_session_")
        .map(|(_, s)| s.to_owned())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TABLE: &[(&str, Field)] = &[
        ("model", Field::Carried),
        ("store", Field::Dropped),
        ("n_best", Field::Refused("ask for one")),
    ];

    fn check(policy: Policy, body: Value) -> Result<Report, WireError> {
        let mut report = Report::new(Dialect::OpenAiChat);
        let Value::Object(obj) = body else {
            unreachable!()
        };
        policy.check(&obj, TABLE, "Test", &mut report)?;
        Ok(report)
    }

    #[test]
    fn dropped_and_unknown_fields_are_reported_once_each_in_order() {
        let r = check(
            Policy::default(),
            json!({"model": "m", "store": true, "brand_new_hint": {"a": 1}}),
        )
        .unwrap();
        let mut dropped = r.dropped().to_vec();
        dropped.sort();
        assert_eq!(dropped, ["brand_new_hint", "store"]);
        assert_eq!(r.header_value().split(',').count(), 2);
    }

    #[test]
    fn a_strict_provider_refuses_unknown_fields_and_names_them() {
        let err = check(
            Policy { strict: true },
            json!({"model": "m", "brand_new_hint": 1}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("`brand_new_hint`"), "{err}");
        assert!(matches!(err, WireError::Untranslatable { .. }), "{err:?}");
    }

    #[test]
    fn refused_fields_are_refused_only_when_they_ask_for_something() {
        assert!(check(Policy::default(), json!({"n_best": 3})).is_err());
        assert!(check(Policy::default(), json!({"n_best": {}}))
            .unwrap()
            .is_empty());
        assert!(
            check(Policy::default(), json!({"store": null, "n_best": false}))
                .unwrap()
                .is_empty()
        );
        assert!(check(Policy::default(), json!({"store": false}))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn long_user_ids_become_a_stable_hash_short_ones_pass() {
        assert_eq!(openai_user("user-42"), "user-42");
        let long = "x".repeat(100);
        let hashed = openai_user(&long);
        assert_eq!(hashed.len(), 64);
        assert_eq!(hashed, openai_user(&long));
    }

    #[test]
    fn sessions_are_read_from_both_user_id_forms() {
        assert_eq!(
            session_from_user_id(r#"{"device_id":"d","account_uuid":"","session_id":"s-1"}"#)
                .as_deref(),
            Some("s-1")
        );
        assert_eq!(
            session_from_user_id("user_abc_account__session_1234-5678").as_deref(),
            Some("1234-5678")
        );
        assert_eq!(session_from_user_id("plain"), None);
    }

    #[test]
    fn efforts_outside_the_list_are_a_400_naming_the_field() {
        let err = effort(Some(&json!(7)), "output_config.effort", ANTHROPIC_EFFORTS).unwrap_err();
        assert!(err.to_string().contains("output_config.effort"), "{err}");
        assert_eq!(
            effort(
                Some(&json!("max")),
                "output_config.effort",
                ANTHROPIC_EFFORTS
            )
            .unwrap(),
            Some("max".into())
        );
    }
}

//! The rule set: TOML data (gitleaks' format) read and compiled once into [`Rules`].
//!
//! Two files are built in: `gitleaks.toml`, the subset of gitleaks' rules for the kinds
//! the guard replaces (vendored, MIT, its licence beside it), and `trimgate.toml`, ours:
//! the secrets gitleaks has no rule for or finds only with its catch-all generic rule
//! (an AWS secret key by its name, database URLs' passwords, header credentials,
//! `.env`-style assignments). A rule reads as in gitleaks: a regex whose first capture
//! group that took part (or `secretGroup`) is the secret, keywords that must appear for
//! it to run, a minimum Shannon entropy, allowlists; ours add `type` (the kind of what it
//! finds) and `check` (a test in code the regex cannot express).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::{Regex, RegexSet};
use serde::Deserialize;

use super::kind::SecretKind;

/// The built-in rule files, in the order their rules are tried.
const BUILTIN: [(&str, &str); 2] = [
    ("gitleaks.toml", include_str!("gitleaks.toml")),
    ("trimgate.toml", include_str!("trimgate.toml")),
];

/// A rule file, as gitleaks writes it (the fields the guard reads). The descriptive
/// fields are read only so that `deny_unknown_fields` accepts them: a misspelt field
/// (`entrophy`) is an error, not a rule silently weaker than it reads.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    #[allow(dead_code)]
    title: Option<String>,
    #[serde(default)]
    allowlist: Option<AllowlistConfig>,
    #[serde(default)]
    rules: Vec<RuleConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleConfig {
    id: String,
    #[serde(rename = "type")]
    kind: SecretKind,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    regex: String,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    check: Check,
    #[serde(default)]
    allowlists: Vec<AllowlistConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AllowlistConfig {
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    regex_target: Target,
    #[serde(default)]
    stopwords: Vec<String>,
}

/// What an allowlist's regexes are tested against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Target {
    /// The secret (gitleaks' default).
    #[default]
    Secret,
    /// The whole match, the context around the secret included.
    Match,
}

/// A test a rule's candidate must also pass, written in code because a regex cannot say
/// it (see `context.rs` for each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Check {
    #[default]
    None,
    /// A JWT: its header decodes to a JSON object naming an `alg`.
    Jwt,
    /// A PEM private key block: its body is base64 key material, not code or prose that
    /// names the markers.
    Pem,
    /// `NAME=value` and kin: the name says secret (group `name`), and the value is no
    /// placeholder, reference, number, path or code.
    Assignment,
    /// A URL's password: anything but a placeholder or reference.
    Password,
    /// A credential found by where it stands (a header, a named key): no placeholder,
    /// and more than a word.
    Credential,
}

/// Why the rules could not be built: a fault in the rule data, so whoever edited it.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("secret rules {file}: {message}")]
    Parse { file: String, message: String },
    #[error("secret rule {id}: {message}")]
    Rule { id: String, message: String },
    #[error("secret rules: {message}")]
    Index { message: String },
}

/// One compiled rule.
pub(super) struct Rule {
    pub id: String,
    pub kind: SecretKind,
    pub regex: Regex,
    pub entropy: Option<f64>,
    pub secret_group: Option<usize>,
    /// The group holding an assignment's name, which is never the secret.
    pub name_group: Option<usize>,
    pub check: Check,
    pub allowlists: Vec<Allowlist>,
}

pub(super) struct Allowlist {
    pub regexes: Vec<Regex>,
    pub target: Target,
    /// Lower case; a secret containing one is allowed.
    pub stopwords: Vec<String>,
}

impl Allowlist {
    /// Whether this allowlist lets the candidate go (`matched` is the whole match).
    pub fn allows(&self, secret: &str, matched: &str) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => matched,
        };
        if self.regexes.iter().any(|regex| regex.is_match(target)) {
            return true;
        }
        if self.stopwords.is_empty() {
            return false;
        }
        let lower = secret.to_ascii_lowercase();
        self.stopwords
            .iter()
            .any(|word| lower.contains(word.as_str()))
    }
}

/// The compiled rule set: build it once ([`Rules::builtin`]) and share it.
pub struct Rules {
    pub(super) rules: Vec<Rule>,
    /// Allowlists that apply to every rule.
    pub(super) global: Vec<Allowlist>,
    /// Every rule's regex, to learn in one pass which can match at all.
    pub(super) set: RegexSet,
    /// Every rule's keywords, case-insensitive, as gitleaks prefilters: a rule whose
    /// keywords are all absent is not run.
    pub(super) keywords: AhoCorasick,
    /// For each keyword pattern, the rules that listed it.
    pub(super) keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords, tried on every text.
    pub(super) unkeyed: Vec<usize>,
    /// Different for every rule set built: what one set found clean, another searches
    /// again ([`super::clean::Clean::hash`]).
    pub(super) seed: u64,
}

/// A seed no other rule set of this process has.
fn next_seed() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A pattern of the user's own (`[[guard.patterns]]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomPattern {
    pub id: String,
    pub regex: String,
    /// Lower-case words one of which must appear for the regex to run (none: always).
    pub keywords: Vec<String>,
}

impl Rules {
    /// The built-in rules: gitleaks' subset and the guard's own.
    pub fn builtin() -> Result<Rules, RulesError> {
        Rules::from_toml(&BUILTIN)
    }

    /// The built-in rules, with the user's own patterns after them (each a regex whose
    /// first group that takes part is the secret, else the whole match; found as
    /// [`SecretKind::Custom`]) and an allow-list: values never replaced, given exactly
    /// or as regexes a whole value must match.
    pub fn with(
        patterns: &[CustomPattern],
        allow_values: &[String],
        allow_patterns: &[String],
    ) -> Result<Rules, RulesError> {
        let (mut all, global) = compile_files(&BUILTIN)?;
        for p in patterns {
            all.push(compile_rule(RuleConfig {
                id: p.id.clone(),
                kind: SecretKind::Custom,
                description: None,
                regex: p.regex.clone(),
                entropy: None,
                keywords: p.keywords.clone(),
                secret_group: None,
                check: Check::None,
                allowlists: Vec::new(),
            })?);
        }
        let mut rules = Rules::index(all, global)?;
        let mut regexes: Vec<Regex> = allow_values
            .iter()
            .map(|v| compile_regex(&format!("^{}$", regex::escape(v)), "guard.allow"))
            .collect::<Result<_, _>>()?;
        for pattern in allow_patterns {
            regexes.push(compile_regex(
                &format!("^(?:{pattern})$"),
                "guard.allow_patterns",
            )?);
        }
        if !regexes.is_empty() {
            rules.global.push(Allowlist {
                regexes,
                target: Target::Secret,
                stopwords: Vec::new(),
            });
        }
        Ok(rules)
    }

    /// Rules from rule files in gitleaks' format (with `type` on each rule), given as
    /// `(name, text)`; the name is only for errors.
    pub fn from_toml(files: &[(&str, &str)]) -> Result<Rules, RulesError> {
        let (all, global) = compile_files(files)?;
        Rules::index(all, global)
    }

    /// The rule set over compiled rules and their keywords: the regex set and the
    /// keyword automaton built once.
    fn index(all: Vec<(Rule, Vec<String>)>, global: Vec<Allowlist>) -> Result<Rules, RulesError> {
        let (rules, keyword_lists): (Vec<Rule>, Vec<Vec<String>>) = all.into_iter().unzip();
        let set = RegexSet::new(rules.iter().map(|rule| rule.regex.as_str())).map_err(|e| {
            RulesError::Index {
                message: e.to_string(),
            }
        })?;
        let mut patterns: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut unkeyed = Vec::new();
        for (index, listed) in keyword_lists.into_iter().enumerate() {
            if listed.is_empty() {
                unkeyed.push(index);
            }
            for keyword in listed {
                match patterns.iter().position(|p| *p == keyword) {
                    Some(at) => keyword_rules[at].push(index),
                    None => {
                        patterns.push(keyword);
                        keyword_rules.push(vec![index]);
                    }
                }
            }
        }
        let keywords = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&patterns)
            .map_err(|e| RulesError::Index {
                message: e.to_string(),
            })?;
        Ok(Rules {
            rules,
            global,
            set,
            keywords,
            keyword_rules,
            unkeyed,
            seed: next_seed(),
        })
    }

    /// No rules at all: finds nothing.
    pub fn empty() -> Rules {
        Rules::index(Vec::new(), Vec::new())
            .unwrap_or_else(|_| unreachable!("an empty regex set and automaton always build"))
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

/// Each file's rules compiled, with their keywords, and the files' global allowlists.
#[allow(clippy::type_complexity)]
fn compile_files(
    files: &[(&str, &str)],
) -> Result<(Vec<(Rule, Vec<String>)>, Vec<Allowlist>), RulesError> {
    let mut all = Vec::new();
    let mut global = Vec::new();
    for (name, text) in files {
        let file: RuleFile = toml::from_str(text).map_err(|e| RulesError::Parse {
            file: (*name).to_string(),
            message: e.to_string(),
        })?;
        if let Some(allowlist) = file.allowlist {
            global.push(compile_allowlist(allowlist, "[allowlist]")?);
        }
        for config in file.rules {
            all.push(compile_rule(config)?);
        }
    }
    Ok((all, global))
}

fn compile_regex(pattern: &str, id: &str) -> Result<Regex, RulesError> {
    Regex::new(&from_go(pattern)).map_err(|e| RulesError::Rule {
        id: id.to_string(),
        message: e.to_string(),
    })
}

/// The compiled rule, and its keywords in lower case.
fn compile_rule(config: RuleConfig) -> Result<(Rule, Vec<String>), RulesError> {
    let RuleConfig {
        id,
        kind,
        description: _,
        regex,
        entropy,
        keywords,
        secret_group,
        check,
        allowlists,
    } = config;
    let regex = compile_regex(&regex, &id)?;
    if let Some(group) = secret_group {
        if group >= regex.captures_len() {
            return Err(RulesError::Rule {
                id,
                message: format!("secretGroup {group} names no group of the regex"),
            });
        }
    }
    let name_group = regex.capture_names().position(|name| name == Some("name"));
    if check == Check::Assignment && name_group.is_none() {
        return Err(RulesError::Rule {
            id,
            message: "an assignment rule needs a group named `name`".to_string(),
        });
    }
    let allowlists = allowlists
        .into_iter()
        .map(|a| compile_allowlist(a, &id))
        .collect::<Result<_, _>>()?;
    let rule = Rule {
        id,
        kind,
        regex,
        entropy,
        secret_group,
        name_group,
        check,
        allowlists,
    };
    let keywords = keywords.iter().map(|k| k.to_ascii_lowercase()).collect();
    Ok((rule, keywords))
}

fn compile_allowlist(config: AllowlistConfig, id: &str) -> Result<Allowlist, RulesError> {
    let AllowlistConfig {
        description: _,
        regexes,
        regex_target,
        stopwords,
    } = config;
    Ok(Allowlist {
        regexes: regexes
            .iter()
            .map(|r| compile_regex(r, id))
            .collect::<Result<_, _>>()?,
        target: regex_target,
        stopwords: stopwords
            .into_iter()
            .map(|w| w.to_ascii_lowercase())
            .collect(),
    })
}

/// A gitleaks regex (Go's RE2 syntax and meaning) in the regex crate's: a `{` that opens
/// no counted repetition is a literal in Go and an error here, so it is escaped; and
/// `\b`, `\w`, `\s`, `\d` (and their negations) are ASCII in Go, as they are made here.
/// ASCII classes also keep the regexes on the fast DFA for text that is not ASCII, where
/// a Unicode word boundary would send them to a slower engine.
fn from_go(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                let next = chars[i + 1];
                let ascii = match (in_class, next) {
                    (false, 'b' | 'B') => Some(format!("(?-u:\\{next})")),
                    (false, 'w') => Some("[0-9A-Za-z_]".to_string()),
                    (false, 'd') => Some("[0-9]".to_string()),
                    (false, 's') => Some("[\\t\\n\\x0C\\r ]".to_string()),
                    (_, 'W') => Some("[^0-9A-Za-z_]".to_string()),
                    (_, 'D') => Some("[^0-9]".to_string()),
                    (_, 'S') => Some("[^\\t\\n\\x0C\\r ]".to_string()),
                    (true, 'w') => Some("0-9A-Za-z_".to_string()),
                    (true, 'd') => Some("0-9".to_string()),
                    (true, 's') => Some("\\t\\n\\x0C\\r ".to_string()),
                    _ => None,
                };
                match ascii {
                    Some(text) => out.push_str(&text),
                    None => {
                        out.push(c);
                        out.push(next);
                    }
                }
                i += 2;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` (after an optional `^`) first in a class is a literal.
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    out.push(']');
                    i += 1;
                }
            }
            '[' if in_class && chars.get(i + 1) == Some(&':') => {
                // A POSIX class (`[[:alnum:]]`) inside a class: copied whole.
                let end = chars[i..]
                    .windows(2)
                    .position(|w| w == [':', ']'])
                    .map_or(chars.len(), |p| i + p + 2);
                out.extend(&chars[i..end]);
                i = end;
                continue;
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            '{' if !in_class && !opens_repetition(&chars[i + 1..]) => out.push_str("\\{"),
            '}' if !in_class && !closes_repetition(&out) => out.push_str("\\}"),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// Whether what follows a `{` is a counted repetition's `n}`, `n,}` or `n,m}`.
fn opens_repetition(rest: &[char]) -> bool {
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return false;
    }
    match rest.get(digits) {
        Some('}') => true,
        Some(',') => {
            let more = rest[digits + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            rest.get(digits + 1 + more) == Some(&'}')
        }
        _ => false,
    }
}

/// Whether the `}` about to be written closes a repetition `out` has opened.
fn closes_repetition(out: &str) -> bool {
    let tail = out.trim_end_matches(|c: char| c.is_ascii_digit() || c == ',');
    tail.ends_with('{') && !tail.ends_with("\\{")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_syntax_translated() {
        assert_eq!(from_go(r"^\$(?:\d+|{\d+})$"), r"^\$(?:[0-9]+|\{[0-9]+\})$");
        assert_eq!(from_go(r"a{2,3}b{4}c{5,}"), r"a{2,3}b{4}c{5,}");
        assert_eq!(from_go(r"^\{\d{0,2}}$"), r"^\{[0-9]{0,2}\}$");
        assert_eq!(from_go(r"[\w.-]{0,50}"), r"[0-9A-Za-z_.-]{0,50}");
        assert_eq!(from_go(r"[\s\S-]"), r"[\t\n\x0C\r [^\t\n\x0C\r ]-]");
        assert_eq!(from_go(r"[[:alnum:]]{14}"), r"[[:alnum:]]{14}");
        assert_eq!(
            from_go(r"\b(x)\s\W"),
            r"(?-u:\b)(x)[\t\n\x0C\r ][^0-9A-Za-z_]"
        );
        assert_eq!(from_go(r"[^]a]\\[nr]"), r"[^]a]\\[nr]");
    }

    /// Every built-in rule compiles, and a wrong rule file says which rule is wrong.
    #[test]
    fn builtin_rules_compile_and_errors_name_the_rule() {
        assert!(Rules::builtin().is_ok());
        let bad = "[[rules]]\nid = \"broken\"\ntype = \"jwt\"\nregex = '(unclosed'\n";
        let error = Rules::from_toml(&[("bad.toml", bad)]).unwrap_err();
        assert!(error.to_string().contains("broken"), "{error}");
        let unknown = "[[rules]]\nid = \"x\"\ntype = \"no_such_kind\"\nregex = 'x'\n";
        assert!(Rules::from_toml(&[("u.toml", unknown)]).is_err());
    }
}

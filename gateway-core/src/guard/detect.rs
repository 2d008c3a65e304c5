//! Finding secrets in a text: the rules run behind two prefilters, each candidate passes
//! the rule's entropy, allowlists and check, and overlapping findings become one.
//!
//! Per text, the keyword automaton (one pass, case-insensitive) names the rules whose
//! keywords appear; the regex set (one more pass) says which of those can match; only
//! those run their own regex. A text without any keyword costs one pass.

use std::ops::Range;

use regex::Captures;

use super::context::{self, ValuePolicy};
use super::kind::SecretKind;
use super::placeholder::find_placeholders;
use super::rules::{Check, Rule, Rules};

/// A secret found in a text.
#[derive(Clone, PartialEq, Eq)]
pub struct Finding<'t> {
    pub kind: SecretKind,
    /// The id of the rule that named the kind (`openai-api-key`, `env-assignment`).
    pub rule: &'t str,
    /// Byte range of the secret in the text.
    pub start: usize,
    pub end: usize,
    /// The secret itself: `&text[start..end]`.
    pub value: &'t str,
}

impl std::fmt::Debug for Finding<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A finding's value is the secret: printing it would put it in a log.
        f.debug_struct("Finding")
            .field("kind", &self.kind)
            .field("rule", &self.rule)
            .field("start", &self.start)
            .field("end", &self.end)
            .field("value", &format_args!("<{} bytes>", self.value.len()))
            .finish()
    }
}

impl Rules {
    /// The secrets in `text`, left to right, none overlapping another. Text already
    /// replaced by a placeholder (this engine's, from an earlier turn, or typed by the
    /// user) is no secret: a finding that touches one is dropped.
    pub fn detect<'t>(&'t self, text: &'t str) -> Vec<Finding<'t>> {
        let mut found = self.detect_plain(text);
        let encoded = self.in_base64(text, &found);
        if !encoded.is_empty() {
            found.extend(encoded);
            found = merge(found, text);
        }
        found
    }

    /// Secrets written in base64 (`base64 .env`, a Kubernetes Secret's `data`, an
    /// `Authorization: Basic` pair): a run of base64, possibly over several lines, that
    /// decodes to text in which a rule finds a secret is replaced whole, of that kind.
    /// Runs a rule has found already, short ones, and what decodes to no text (images,
    /// hashes, lockfiles' integrity digests) are left alone.
    fn in_base64<'t>(&'t self, text: &'t str, found: &[Finding<'t>]) -> Vec<Finding<'t>> {
        let mut out = Vec::new();
        for run in base64_runs(text) {
            if found.iter().any(|f| f.start < run.end && run.start < f.end) {
                continue;
            }
            let Some(decoded) = decode_text(&text[run.clone()]) else {
                continue;
            };
            let inner = self.detect_plain(&decoded);
            let Some(best) = inner.iter().max_by_key(|f| f.kind.priority()) else {
                continue;
            };
            out.push(Finding {
                kind: best.kind,
                rule: "base64",
                start: run.start,
                end: run.end,
                value: &text[run],
            });
        }
        out
    }

    /// The secrets the rules find in `text` as it stands.
    fn detect_plain<'t>(&'t self, text: &'t str) -> Vec<Finding<'t>> {
        let candidates = self.candidates(text);
        if candidates.is_empty() {
            return Vec::new();
        }
        let placeholders = find_placeholders(text);
        let mut found = Vec::new();
        for index in candidates {
            let rule = &self.rules[index];
            for captures in rule.regex.captures_iter(text) {
                let Some(span) = self.accept(rule, &captures, text) else {
                    continue;
                };
                if placeholders
                    .iter()
                    .any(|p| p.start < span.end && span.start < p.end)
                {
                    continue;
                }
                found.push(Finding {
                    kind: rule.kind,
                    rule: rule.id.as_str(),
                    start: span.start,
                    end: span.end,
                    value: &text[span],
                });
            }
        }
        merge(found, text)
    }

    /// The rules worth running on `text`: a keyword of theirs appears (or they have
    /// none), and their regex matches somewhere.
    fn candidates(&self, text: &str) -> Vec<usize> {
        let mut wanted = vec![false; self.rules.len()];
        for &index in &self.unkeyed {
            wanted[index] = true;
        }
        let mut any = !self.unkeyed.is_empty();
        for hit in self.keywords.find_overlapping_iter(text) {
            for &index in &self.keyword_rules[hit.pattern().as_usize()] {
                wanted[index] = true;
                any = true;
            }
        }
        if !any {
            return Vec::new();
        }
        let matching = self.set.matches(text);
        (0..self.rules.len())
            .filter(|&index| wanted[index] && matching.matched(index))
            .collect()
    }

    /// The secret's span in a match, if the candidate passes the rule's tests.
    fn accept(&self, rule: &Rule, captures: &Captures<'_>, text: &str) -> Option<Range<usize>> {
        let whole = captures.get(0)?;
        let secret = match rule.secret_group {
            Some(group) => captures.get(group)?,
            None => {
                // As gitleaks: the first group that took part and is not empty, else the
                // whole match when the regex has no group (an assignment's name is never
                // the secret). Groups that took part and are all empty hold an empty value
                // (`password = ""`), which is no secret.
                let mut groups = (1..captures.len())
                    .filter(|&group| Some(group) != rule.name_group)
                    .filter_map(|group| captures.get(group))
                    .peekable();
                if groups.peek().is_none() {
                    whole
                } else {
                    groups.find(|m| !m.is_empty())?
                }
            }
        };
        let value = secret.as_str();
        if value.is_empty() {
            return None;
        }
        if let Some(minimum) = rule.entropy {
            // gitleaks keeps a candidate only above its threshold.
            if context::entropy(value) <= minimum {
                return None;
            }
        }
        let matched = whole.as_str();
        if self
            .global
            .iter()
            .chain(&rule.allowlists)
            .any(|allowlist| allowlist.allows(value, matched))
        {
            return None;
        }
        let passes = match rule.check {
            Check::None => true,
            Check::Jwt => context::jwt_header_names_alg(value),
            Check::Password => context::plausible_value(value, ValuePolicy::PASSWORD),
            Check::Credential => context::plausible_value(value, ValuePolicy::CREDENTIAL),
            Check::Pem => context::pem_body_is_key(value),
            Check::Assignment => {
                let name = rule
                    .name_group
                    .and_then(|group| captures.get(group))
                    .map_or("", |m| m.as_str());
                context::assignment_holds_secret(name, value, &text[secret.end()..])
            }
        };
        passes.then(|| secret.range())
    }
}

/// Base64 runs shorter than this (newlines not counted) are not decoded: 18 bytes of text.
const MIN_BASE64: usize = 24;
/// Nor longer than this: a secret's file is small, an inline image is not.
const MAX_BASE64: usize = 64 * 1024;

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// The runs of base64 in `text`: base64 characters, `=` padding at a run's end, and line
/// breaks between lines of them (`base64` wraps its output at 76 columns).
fn base64_runs(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_base64(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        let mut chars = 0usize;
        // Characters on the run's current line: a wrapped line is long and whole quads.
        let mut line = 0usize;
        while i < bytes.len() {
            let b = bytes[i];
            if is_base64(b) {
                chars += 1;
                line += 1;
                i += 1;
                end = i;
            } else if b == b'=' && !bytes.get(i + 1).copied().is_some_and(is_base64) {
                // Padding: one or two, then the run ends.
                while i < bytes.len() && bytes[i] == b'=' {
                    i += 1;
                }
                end = i;
                break;
            } else if (b == b'\n' || b == b'\r')
                && line >= MIN_BASE64
                && line.is_multiple_of(4)
                && bytes
                    .get(i + 1)
                    .copied()
                    .is_some_and(|n| is_base64(n) || n == b'\n')
            {
                if b == b'\n' {
                    line = 0;
                }
                i += 1;
            } else {
                break;
            }
        }
        if (MIN_BASE64..=MAX_BASE64).contains(&chars) {
            runs.push(start..end);
        }
        i = i.max(end).max(start + 1);
    }
    runs
}

/// A run of base64 decoded, when it is text (UTF-8 without control characters other
/// than line breaks and tabs).
fn decode_text(run: &str) -> Option<String> {
    use base64::Engine as _;
    let compact: String = run.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.trim_end_matches('=').len() % 4 == 1 {
        return None;
    }
    let alphabet = if compact.contains(['-', '_']) {
        &base64::alphabet::URL_SAFE
    } else {
        &base64::alphabet::STANDARD
    };
    let engine = base64::engine::GeneralPurpose::new(
        alphabet,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine.decode(compact.as_bytes()).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.chars()
        .all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
        .then_some(text)
}

/// Overlapping findings become one, spanning them all, of the kind that knows the shape
/// best (then the longest): `x-api-key: sk-ant-…` is one Anthropic key, not a header
/// credential around a key.
fn merge<'t>(mut found: Vec<Finding<'t>>, text: &'t str) -> Vec<Finding<'t>> {
    found.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut merged: Vec<Finding<'t>> = Vec::with_capacity(found.len());
    for finding in found {
        match merged.last_mut() {
            Some(last) if finding.start < last.end => {
                let better = (finding.kind.priority(), finding.end - finding.start)
                    > (last.kind.priority(), last.end - last.start);
                if better {
                    last.kind = finding.kind;
                    last.rule = finding.rule;
                }
                last.end = last.end.max(finding.end);
                last.value = &text[last.start..last.end];
            }
            _ => merged.push(finding),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::guard::tests::rules;

    /// `(kind, value)` of each finding.
    fn found(text: &str) -> Vec<(SecretKind, String)> {
        rules()
            .detect(text)
            .into_iter()
            .map(|f| {
                assert_eq!(&text[f.start..f.end], f.value);
                (f.kind, f.value.to_string())
            })
            .collect()
    }

    fn one(text: &str, kind: SecretKind, value: &str) {
        assert_eq!(found(text), vec![(kind, value.to_string())], "in {text:?}");
    }

    #[test]
    fn builtin_rules_compile() {
        let rules = rules();
        assert!(rules.len() > 30);
    }

    #[test]
    fn provider_keys() {
        let openai = "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";
        one(
            &format!("OPENAI_API_KEY={openai}\n"),
            SecretKind::OpenaiKey,
            openai,
        );
        let anthropic = "sk-ant-api03-jdGu0cIFHQJTNsE-NxIMNKFjC1z4DH7GjG-5zekbg4ASrGLboMfzzx9Om_I9hEo4XJlXqvHM7SQfXo4P7BN2T6J_yWSBmAA";
        one(
            &format!("x-api-key: {anthropic}"),
            SecretKind::AnthropicKey,
            anthropic,
        );
        one(
            "GET /v1beta/models/gemini-2.5-pro:streamGenerateContent?key=AIzaSyD4kP9qR2sT7uV1wX5yZ8aB3cD6eF0gH4j&alt=sse",
            SecretKind::GoogleApiKey,
            "AIzaSyD4kP9qR2sT7uV1wX5yZ8aB3cD6eF0gH4j",
        );
        one(
            "id AKIAZ7XQ3MDK5N2PVW4R in use",
            SecretKind::AwsAccessKey,
            "AKIAZ7XQ3MDK5N2PVW4R",
        );
        one(
            "git clone https://ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5q@github.com/o/r",
            SecretKind::GithubToken,
            "ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5q",
        );
        one(
            "CI_TOKEN: glpat-X9kD2mF7pQ4rT1vW8yZ3",
            SecretKind::GitlabToken,
            "glpat-X9kD2mF7pQ4rT1vW8yZ3",
        );
        one(
            "token xoxb-2817364509-7364509281736-Kd8Fj2Lm9Qp4Rt7Vx1Zb3Nc6",
            SecretKind::SlackToken,
            "xoxb-2817364509-7364509281736-Kd8Fj2Lm9Qp4Rt7Vx1Zb3Nc6",
        );
        one(
            "curl -X POST https://hooks.slack.com/services/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 -d '{}'",
            SecretKind::SlackWebhook,
            "https://hooks.slack.com/services/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",
        );
        one(
            "stripe.api_key = 'sk_live_51Hx8Kq2Lm9Np4Rs8Tv1Wx6Yz3Ab5Cd0Ef7Gh2'",
            SecretKind::StripeKey,
            "sk_live_51Hx8Kq2Lm9Np4Rs8Tv1Wx6Yz3Ab5Cd0Ef7Gh2",
        );
        one(
            "//registry.npmjs.org/:_authToken=npm_k8Xq2Lm9Np4Rs8Tv1Wx6Yz3Ab5Cd0Ef7Gh2J\n",
            SecretKind::NpmToken,
            "npm_k8Xq2Lm9Np4Rs8Tv1Wx6Yz3Ab5Cd0Ef7Gh2J",
        );
        let pypi = "pypi-AgEIcHlwaS5vcmcCJDk3ZjQ2YTBlLTg1YjItNDc3Yi1hMWQ5LTJmOGM0ZTZiM2E3MQACKlszLCJhYjEyY2Q";
        one(&format!("password = {pypi}\n"), SecretKind::PypiToken, pypi);
        one(
            "HF_TOKEN=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",
            SecretKind::HuggingfaceToken,
            "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",
        );
        one(
            "DEEPSEEK_API_KEY=sk-3f9a1c7e5b2d4f8a6c0e9b1d3f5a7c2e",
            SecretKind::SkKey,
            "sk-3f9a1c7e5b2d4f8a6c0e9b1d3f5a7c2e",
        );
    }

    #[test]
    fn context_secrets() {
        one(
            "aws_secret_access_key = Xk8vQ2mL9pR4sT7wZ1yB3cF6hJ0nD5gA2eU8iO4k\n",
            SecretKind::AwsSecretKey,
            "Xk8vQ2mL9pR4sT7wZ1yB3cF6hJ0nD5gA2eU8iO4k",
        );
        one(
            "DATABASE_URL=postgres://app:Tz8q-Lm2vRx9@db.internal:5432/app",
            SecretKind::DbPassword,
            "Tz8q-Lm2vRx9",
        );
        one(
            "mongodb+srv://svc:Pq7wXz2Kd9@cluster0.abc.mongodb.net/db",
            SecretKind::DbPassword,
            "Pq7wXz2Kd9",
        );
        one(
            "redis://:R3d1sPw-x8@cache:6379/0",
            SecretKind::DbPassword,
            "R3d1sPw-x8",
        );
        one(
            "curl -H \"Authorization: Bearer q8Zt3Kf9Lm2Rx7Vb4Nc1Wd6Y\" https://api.internal",
            SecretKind::AuthHeader,
            "q8Zt3Kf9Lm2Rx7Vb4Nc1Wd6Y",
        );
        one(
            "SESSION_SECRET=Zx9-pQ2_mL7vB4\n",
            SecretKind::EnvSecret,
            "Zx9-pQ2_mL7vB4",
        );
        one(
            r#"{"client_secret": "Gh7-Kq2Lm9Np4Rs8", "client_id": "web-42"}"#,
            SecretKind::EnvSecret,
            "Gh7-Kq2Lm9Np4Rs8",
        );
        one(
            "  password: 'Wq8#zL2!mR5'\n",
            SecretKind::EnvSecret,
            "Wq8#zL2!mR5",
        );
    }

    #[test]
    fn private_key_block() {
        let body = "MIIEowIBAAKCAQEAq8Zt3Kf9Lm2Rx7Vb4Nc1Wd6YQm3vT8xK2pL9nR4wZ7yB1cF6hJ0s\nD5gA3eU8iO2kM7qW4tY9rX1vN6bC0zL5aS8dF3gH7jK2pQ9wE4rT6yU1iO0pT3Bl\n";
        let block = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----");
        one(
            &format!("cat id_rsa\n{block}\n$ "),
            SecretKind::PrivateKey,
            &block,
        );
    }

    #[test]
    fn jwt_needs_a_header_with_alg() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1LTQyIiwiaWF0IjoxNzAwMDAwMDAwfQ.Xk8vQ2mL9pR4sT7wZ1yB3cF6hJ0nD5gA2eU8iO4kMq";
        one(&format!("id_token: {jwt}\n"), SecretKind::Jwt, jwt);
        // {"typ":"JWT","kid":"k1"}: shaped like a JWT, no alg.
        let no_alg = "eyJ0eXAiOiJKV1QiLCJraWQiOiJrMSJ9.eyJzdWIiOiJ1LTQyIiwiaWF0IjoxNzAwMDAwMDAwfQ.Xk8vQ2mL9pR4sT7wZ1yB3cF6hJ0nD5gA2eU8iO4kMq";
        assert!(found(&format!("echo {no_alg}")).is_empty());
    }

    /// What agents read daily that looks like a secret and is not.
    #[test]
    fn traps_are_not_flagged() {
        for text in [
            "commit 3f2a9c1e7b5d4f8a6c0e9b1d3f5a7c2e4b6d8f0a\nAuthor: Jo <jo@example.com>",
            "request_id=7c9e6679-7425-40de-944b-e07fc1f90ae7",
            r#""integrity": "sha512-Zx9pQ2mL7vB4Kq2Lm9Np4Rs8Tv1Wx6Yz3Ab5Cd0Ef7Gh2Ij9Kl4Mn8Op1Qr6St3Uv5Wx0Yz7Ab2Cd9Ef4Gh1Ij6Kl3==""#,
            "image: ghcr.io/org/app@sha256:4b6d8f0a3f2a9c1e7b5d4f8a6c0e9b1d3f5a7c2e4b6d8f0a3f2a9c1e7b5d4f8a",
            "checksum = \"9c1e7b5d4f8a6c0e9b1d3f5a7c2e4b6d8f0a3f2a9c1e7b5d4f8a6c0e9b1d3f5a\"",
            "<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\">",
            "api_key = \"fake_key_for_tests\"",
            "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "OPENAI_API_KEY=${OPENAI_API_KEY}",
            "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
            "password: string;",
            "const token = await getToken(req);",
            "max_tokens=4096",
            "\"js-tokens\": \"^4.0.0\",",
            "PWD=/home/dev/project",
            "DB_PASSWORD=",
            "AUTH_ENABLED=true",
            "SECRET_KEY=changeme",
            "postgres://user:password@localhost:5432/db",
            "mysql://root:${MYSQL_ROOT_PASSWORD}@db/app",
            "API_KEY=TRIMGATE_SECRET_OPENAI_KEY_0123456789ab",
            "{\"key\": \"ctrl+shift+p\", \"command\": \"workbench.action.showCommands\"}",
        ] {
            assert_eq!(found(text), vec![], "in {text:?}");
        }
    }

    /// Overlapping findings merge into one of the most specific kind.
    #[test]
    fn overlaps_merge_to_the_specific_kind() {
        let key = "ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5q";
        one(&format!("GITHUB_TOKEN={key}"), SecretKind::GithubToken, key);
        one(
            &format!("Authorization: token {key}"),
            SecretKind::GithubToken,
            key,
        );
    }

    /// A text without any rule's keyword runs no regex at all.
    #[test]
    fn prefilter_skips_plain_text() {
        let rules = rules();
        assert!(rules.candidates("hello world, nothing to see").is_empty());
    }
}

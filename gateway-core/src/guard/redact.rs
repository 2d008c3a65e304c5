//! Replacing each secret in an outgoing text by its placeholder, keeping the value in the
//! vault for the answer.

use super::escape::Unescaped;
use super::kind::SecretKind;
use super::rules::Rules;
use super::vault::Vault;

/// One secret replaced: its kind and where it was in the input (byte offsets). The value
/// is not here: it went to the vault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redaction {
    pub kind: SecretKind,
    pub start: usize,
    pub end: usize,
}

/// `text` with each secret replaced by its placeholder, and what was replaced. Overlapping
/// findings are one replacement; a placeholder already in the text (typed by the user, or
/// from an earlier turn) is left as it is. The values go to `vault` under `scope`.
pub fn redact(
    text: &str,
    rules: &Rules,
    vault: &mut Vault,
    scope: &str,
) -> (String, Vec<Redaction>) {
    let findings = rules.detect(text);
    if findings.is_empty() {
        return (text.to_string(), Vec::new());
    }
    let mut out = String::with_capacity(text.len());
    let mut redactions = Vec::with_capacity(findings.len());
    let mut copied = 0;
    for finding in findings {
        out.push_str(&text[copied..finding.start]);
        out.push_str(&vault.keep(scope, finding.kind, finding.value));
        copied = finding.end;
        redactions.push(Redaction {
            kind: finding.kind,
            start: finding.start,
            end: finding.end,
        });
    }
    out.push_str(&text[copied..]);
    (out, redactions)
}

/// As [`redact`], for text that is a JSON string's escaped content (a tool's output as it
/// stands in a request body, without the quotes). The rules run on the decoded text, so a
/// `.env` file's `\n`-joined lines are lines again; each secret is kept decoded (the
/// value the model's answer needs, and the same placeholder as the secret seen unescaped)
/// and its escaped bytes are replaced. The offsets are in the escaped input.
pub fn redact_json_escaped(
    text: &str,
    rules: &Rules,
    vault: &mut Vault,
    scope: &str,
) -> (String, Vec<Redaction>) {
    // Nothing to decode: the text reads the same either way.
    if !text.contains('\\') {
        return redact(text, rules, vault, scope);
    }
    let decoded = Unescaped::new(text);
    let findings = rules.detect(&decoded.text);
    if findings.is_empty() {
        return (text.to_string(), Vec::new());
    }
    let mut out = String::with_capacity(text.len());
    let mut redactions = Vec::with_capacity(findings.len());
    let mut copied = 0;
    for finding in findings {
        let start = decoded.escaped_offset(finding.start);
        let end = decoded.escaped_offset(finding.end);
        out.push_str(&text[copied..start]);
        out.push_str(&vault.keep(scope, finding.kind, finding.value));
        copied = end;
        redactions.push(Redaction {
            kind: finding.kind,
            start,
            end,
        });
    }
    out.push_str(&text[copied..]);
    (out, redactions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::placeholder::{find_placeholders, Placeholders};

    const GITHUB: &str = "ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5q";

    fn setup() -> (&'static Rules, Vault) {
        (
            crate::guard::tests::rules(),
            Vault::new(Placeholders::new([3; 32]), 64),
        )
    }

    /// The same secret in several places becomes one placeholder, kept once.
    #[test]
    fn same_secret_one_placeholder() {
        let (rules, mut vault) = setup();
        let text = format!("GITHUB_TOKEN={GITHUB}\ngit push https://{GITHUB}@github.com/o/r\n");
        let (out, redactions) = redact(&text, rules, &mut vault, "s");
        assert_eq!(redactions.len(), 2);
        assert!(!out.contains(GITHUB));
        let spans = find_placeholders(&out);
        assert_eq!(spans.len(), 2);
        assert_eq!(out[spans[0].clone()], out[spans[1].clone()]);
        assert_eq!(vault.len(), 1);
        for r in &redactions {
            assert_eq!(&text[r.start..r.end], GITHUB);
            assert_eq!(r.kind, SecretKind::GithubToken);
        }
    }

    /// Two secrets that share a long prefix get two placeholders.
    #[test]
    fn shared_prefix_two_placeholders() {
        let (rules, mut vault) = setup();
        let a = "ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5q";
        let b = "ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5r";
        let (out, _) = redact(&format!("{a} {b}"), rules, &mut vault, "s");
        let spans = find_placeholders(&out);
        assert_eq!(spans.len(), 2);
        assert_ne!(out[spans[0].clone()], out[spans[1].clone()]);
        assert_eq!(vault.len(), 2);
    }

    /// A placeholder in the input, from an earlier turn or typed, is left as it is, and
    /// redacting the output again changes nothing.
    #[test]
    fn placeholders_left_alone() {
        let (rules, mut vault) = setup();
        let (once, _) = redact(&format!("token={GITHUB}"), rules, &mut vault, "s");
        let (twice, redactions) = redact(&once, rules, &mut vault, "s");
        assert_eq!(once, twice);
        assert!(redactions.is_empty());
        let typed = "API_KEY=TRIMGATE_SECRET_OPENAI_KEY_0123456789ab";
        assert_eq!(redact(typed, rules, &mut vault, "s").0, typed);
    }

    /// Redacting is byte-stable across calls and vaults with the same key: the prompt
    /// cache sees the same prefix every turn.
    #[test]
    fn stable_across_calls_and_vaults() {
        let (rules, mut vault) = setup();
        let text = format!("GITHUB_TOKEN={GITHUB}\nDB_PASSWORD=Zx9-pQ2_mL7vB4\n");
        let first = redact(&text, rules, &mut vault, "s").0;
        let again = redact(&text, rules, &mut vault, "s").0;
        let mut other = Vault::new(Placeholders::new([3; 32]), 64);
        let elsewhere = redact(&text, rules, &mut other, "t").0;
        assert_eq!(first, again);
        assert_eq!(first, elsewhere);
        let mut keyed = Vault::new(Placeholders::new([4; 32]), 64);
        assert_ne!(first, redact(&text, rules, &mut keyed, "s").0);
    }

    /// A `.env` file read by a tool arrives as a JSON string's content: its lines joined
    /// by `\n` escapes, its quotes escaped. Each secret is found, replaced in the escaped
    /// text, and kept decoded.
    #[test]
    fn secret_inside_json_string() {
        let (rules, mut vault) = setup();
        let file = "# app\nDB_PASSWORD=\"Zx9-pQ2_mL7vB4\"\nGITHUB_TOKEN=ghp_R8tY2uI5oP1aS4dF7gH0jK3lZ6xC9vB2nM5q\nDEBUG=true\n";
        let body = serde_json::to_string(file).unwrap();
        let content = &body[1..body.len() - 1];
        let (out, redactions) = redact_json_escaped(content, rules, &mut vault, "s");
        assert_eq!(redactions.len(), 2);
        assert_eq!(
            &content[redactions[0].start..redactions[0].end],
            "Zx9-pQ2_mL7vB4"
        );
        assert_eq!(redactions[1].kind, SecretKind::GithubToken);
        // Still a valid JSON string, now without the secrets.
        let decoded: String = serde_json::from_str(&format!("\"{out}\"")).unwrap();
        assert!(decoded.starts_with("# app\nDB_PASSWORD=\"TRIMGATE_SECRET_ENV_SECRET_"));
        assert!(!decoded.contains("Zx9-pQ2") && !decoded.contains("ghp_R8"));
        assert!(decoded.ends_with("\nDEBUG=true\n"));
        // The same secrets unescaped get the same placeholders.
        let plain = redact(file, rules, &mut vault, "s").0;
        assert_eq!(plain, decoded);
    }

    /// A private key inside a JSON string is kept with its real newlines.
    #[test]
    fn private_key_in_json_kept_decoded() {
        let (rules, mut vault) = setup();
        let block = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBx8Zt3Kf9Lm2Rx7Vb4Nc1Wd6YQm3vT8xK2pL9nR4wZ7yAAAAJg\n-----END OPENSSH PRIVATE KEY-----";
        let body = serde_json::to_string(&format!("$ cat ~/.ssh/id_ed25519\n{block}\n")).unwrap();
        let content = &body[1..body.len() - 1];
        let (out, redactions) = redact_json_escaped(content, rules, &mut vault, "s");
        assert_eq!(redactions.len(), 1);
        assert_eq!(redactions[0].kind, SecretKind::PrivateKey);
        let placeholder = &out[find_placeholders(&out)[0].clone()];
        assert_eq!(vault.lookup("s", placeholder).as_deref(), Some(block));
    }
}

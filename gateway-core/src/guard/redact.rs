//! Replacing each secret in an outgoing text by its placeholder, keeping the value in the
//! vault for the answer.

use std::ops::Range;
use std::sync::Arc;

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
    let secrets = findings.iter().map(|f| (f.start..f.end, f.kind, f.value));
    replaced(text, secrets, vault, scope)
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
    let spotted = spot(text, Some(rules), &[]);
    let secrets = spotted
        .iter()
        .map(|s| (s.span.clone(), s.kind, s.value.as_str()));
    replaced(text, secrets, vault, scope)
}

/// [`splice`] on a text, with what was replaced.
fn replaced<'s>(
    text: &str,
    secrets: impl Iterator<Item = (Range<usize>, SecretKind, &'s str)> + Clone,
    vault: &mut Vault,
    scope: &str,
) -> (String, Vec<Redaction>) {
    let redactions: Vec<Redaction> = secrets
        .clone()
        .map(|(span, kind, _)| Redaction {
            kind,
            start: span.start,
            end: span.end,
        })
        .collect();
    if redactions.is_empty() {
        return (text.to_string(), redactions);
    }
    let out = splice(text.as_bytes(), secrets, vault, scope);
    // Text cut at the secrets' character boundaries, placeholders of ASCII put in.
    let out = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    (out, redactions)
}

/// One secret of a JSON string's escaped content: its span there, its kind, its value
/// decoded, and the line (from 1) of the decoded text it starts on.
pub(super) struct Spotted {
    pub span: Range<usize>,
    pub kind: SecretKind,
    pub value: String,
    pub line: usize,
}

/// The secrets in `text`, a JSON string's escaped content: what `rules` find in its decoded
/// text (none when `rules` is `None`: the text was found clean before), and each of
/// `known` wherever it stands outside those. Left to right, none overlapping, spans in
/// the escaped text.
pub(super) fn spot(
    text: &str,
    rules: Option<&Rules>,
    known: &[&(SecretKind, Arc<str>)],
) -> Vec<Spotted> {
    // Nothing to decode: the text reads the same either way.
    let decoded = text.contains('\\').then(|| Unescaped::new(text));
    let searched = decoded.as_ref().map_or(text, |d| d.text.as_str());
    let mut found: Vec<(Range<usize>, SecretKind)> = rules
        .map(|rules| rules.detect(searched))
        .unwrap_or_default()
        .into_iter()
        .map(|f| (f.start..f.end, f.kind))
        .collect();
    for (kind, value) in known {
        let mut from = 0;
        while let Some(at) = memchr::memmem::find(&searched.as_bytes()[from..], value.as_bytes()) {
            let span = from + at..from + at + value.len();
            from = span.end;
            if !found
                .iter()
                .any(|(f, _)| f.start < span.end && span.start < f.end)
            {
                found.push((span, *kind));
            }
        }
    }
    found.sort_by_key(|(span, _)| span.start);
    found
        .into_iter()
        .map(|(span, kind)| Spotted {
            span: match &decoded {
                None => span.clone(),
                Some(d) => d.escaped_offset(span.start)..d.escaped_offset(span.end),
            },
            kind,
            value: searched[span.clone()].to_owned(),
            line: searched[..span.start].matches('\n').count() + 1,
        })
        .collect()
}

/// `text` with each of `secrets` (left to right, apart) replaced by its placeholder, the
/// values kept in `vault` under `scope`.
pub(super) fn splice<'s>(
    text: &[u8],
    secrets: impl IntoIterator<Item = (Range<usize>, SecretKind, &'s str)>,
    vault: &mut Vault,
    scope: &str,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut copied = 0;
    for (span, kind, value) in secrets {
        out.extend_from_slice(&text[copied..span.start]);
        out.extend_from_slice(vault.keep(scope, kind, value).as_bytes());
        copied = span.end;
    }
    out.extend_from_slice(&text[copied..]);
    out
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

//! The labelled set (`tests/fixtures/secrets/`): files agents really read, each listed in
//! `labels.toml` with every secret it holds. The detector must find every listed secret
//! with its kind, and nothing else; the table of precision and recall per kind is printed
//! (`cargo test -p gateway-core --lib guard::tests -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::Deserialize;

use super::placeholder::{find_placeholders, Placeholders};
use super::{redact, redact_json_escaped, Escape, Rules, SecretKind, Vault};

/// The built-in rules, built once for every test that wants them.
pub(super) fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| Rules::builtin().unwrap())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Labels {
    fixture: Vec<Fixture>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    file: String,
    #[serde(default)]
    secret: Vec<Label>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Label {
    #[serde(rename = "type")]
    kind: SecretKind,
    value: String,
}

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/secrets")
}

/// A fixture's name, its text, and its labels as a `(kind, value)` set.
type Labelled = (String, String, BTreeSet<(SecretKind, String)>);

/// Every fixture of the set, read with its labels.
fn labelled() -> Vec<Labelled> {
    let dir = fixtures_dir();
    let labels: Labels =
        toml::from_str(&std::fs::read_to_string(dir.join("labels.toml")).unwrap()).unwrap();
    labels
        .fixture
        .into_iter()
        .map(|fixture| {
            let text = std::fs::read_to_string(dir.join(&fixture.file)).unwrap();
            let secrets = fixture
                .secret
                .into_iter()
                .map(|label| (label.kind, label.value))
                .collect();
            (fixture.file, text, secrets)
        })
        .collect()
}

#[derive(Default)]
struct Score {
    true_positives: usize,
    false_positives: usize,
    false_negatives: usize,
}

impl Score {
    fn precision(&self) -> f64 {
        ratio(
            self.true_positives,
            self.true_positives + self.false_positives,
        )
    }

    fn recall(&self) -> f64 {
        ratio(
            self.true_positives,
            self.true_positives + self.false_negatives,
        )
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

/// Every file in the set is labelled, and every label's value is in its file.
#[test]
fn every_fixture_is_labelled() {
    let set = labelled();
    let listed: BTreeSet<&str> = set.iter().map(|(file, _, _)| file.as_str()).collect();
    for entry in std::fs::read_dir(fixtures_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name != "labels.toml" {
            assert!(listed.contains(name.as_str()), "{name} has no labels");
        }
    }
    for (file, text, secrets) in &set {
        for (kind, value) in secrets {
            assert!(
                text.contains(value.as_str()),
                "{file}: {kind} not in the file"
            );
        }
    }
}

/// Recall 100 % on the listed secrets, no false positive; prints the table per kind.
#[test]
fn labelled_set_precision_and_recall() {
    let rules = rules();
    let mut scores: BTreeMap<SecretKind, Score> = BTreeMap::new();
    let mut misses = Vec::new();
    for (file, text, expected) in labelled() {
        let found: BTreeSet<(SecretKind, String)> = rules
            .detect(&text)
            .into_iter()
            .map(|f| (f.kind, f.value.to_string()))
            .collect();
        for (kind, value) in &found {
            let score = scores.entry(*kind).or_default();
            if expected.contains(&(*kind, value.clone())) {
                score.true_positives += 1;
            } else {
                score.false_positives += 1;
                misses.push(format!(
                    "{file}: false positive {kind} ({} bytes)",
                    value.len()
                ));
            }
        }
        for (kind, value) in &expected {
            if !found.contains(&(*kind, value.clone())) {
                scores.entry(*kind).or_default().false_negatives += 1;
                misses.push(format!("{file}: missed {kind} ({} bytes)", value.len()));
            }
        }
    }
    println!("\nkind                tp  fp  fn  precision  recall");
    let mut total = Score::default();
    for (kind, score) in &scores {
        println!(
            "{:<18} {:>3} {:>3} {:>3}  {:>9.3}  {:>6.3}",
            kind.as_str(),
            score.true_positives,
            score.false_positives,
            score.false_negatives,
            score.precision(),
            score.recall()
        );
        total.true_positives += score.true_positives;
        total.false_positives += score.false_positives;
        total.false_negatives += score.false_negatives;
    }
    println!(
        "{:<18} {:>3} {:>3} {:>3}  {:>9.3}  {:>6.3}",
        "all",
        total.true_positives,
        total.false_positives,
        total.false_negatives,
        total.precision(),
        total.recall()
    );
    assert!(misses.is_empty(), "{misses:#?}");
}

/// Redacting each fixture removes every listed secret, and restoring gives the file back
/// byte for byte: whole, streamed in small deltas, and through a JSON string (the file
/// as a tool's output in a request body).
#[test]
fn labelled_set_round_trips() {
    let rules = rules();
    for (file, text, expected) in labelled() {
        let mut vault = Vault::new(Placeholders::new([9; 32]), 4096);
        let (out, redactions) = redact(&text, rules, &mut vault, "s");
        assert!(redactions.len() >= expected.len(), "{file}");
        for (kind, value) in &expected {
            assert!(!out.contains(value.as_str()), "{file}: {kind} left in");
        }
        assert_eq!(
            vault.values_of("s").restore(&out, Escape::Plain),
            text,
            "{file}"
        );
        let mut stream = vault.values_of("s").restorer(Escape::Plain);
        let mut streamed = String::new();
        let mut rest = out.as_str();
        while !rest.is_empty() {
            let mut cut = rest.len().min(7);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            streamed += &stream.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        streamed += &stream.finish();
        assert_eq!(streamed, text, "{file}: streamed");

        let body = serde_json::to_string(&text).unwrap();
        let content = &body[1..body.len() - 1];
        let (escaped_out, _) = redact_json_escaped(content, rules, &mut vault, "s");
        for (kind, value) in &expected {
            let escaped_value = serde_json::to_string(value).unwrap();
            assert!(
                !escaped_out.contains(&escaped_value[1..escaped_value.len() - 1]),
                "{file}: {kind} left in the JSON string"
            );
        }
        assert_eq!(
            vault.values_of("s").restore(&escaped_out, Escape::Json),
            content,
            "{file}: JSON"
        );
        // The placeholders are the same whether the file came plain or JSON-escaped.
        let decoded: String = serde_json::from_str(&format!("\"{escaped_out}\"")).unwrap();
        assert_eq!(decoded, out, "{file}: same placeholders");
        // A placeholder of this scope is not restored for another.
        if let Some(span) = find_placeholders(&out).first() {
            assert_eq!(
                vault
                    .values_of("other")
                    .restore(&out[span.clone()], Escape::Plain),
                &out[span.clone()]
            );
        }
    }
}

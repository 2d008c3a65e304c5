//! Paths, addresses, runs of `key=value` fields and runs of JSON members an output
//! repeats, said once. `cargo metadata` writes the registry's
//! source directory (`/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/`, 30
//! tokens) into every manifest and target path, and `registry+https://github.com/rust-lang/
//! crates.io-index` into every package and dependency; a verbose build log, an install log
//! or a changelog does the same with its own, and a log the same few `key=value` fields of
//! each kind of request it serves. Where a path or address (or its directory, or what
//! comes before its `#`, `@` or `:`) or such a run of fields comes back often enough to
//! pay, it is said once in a legend above the output and written as one superscript digit
//! wherever it stood:
//!
//! ```text
//! ¹ = /home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/
//! ² = registry+https://github.com/rust-lang/crates.io-index
//! {"packages":[… "¹serde-1.0.219/Cargo.toml" … "²#serde@1.0.219" …
//! ```
//!
//! Used only on an output that holds no superscript digit of its own, so every one in the
//! result is the legend's; [`expand`] puts the strings back byte for byte.

use crate::tokens::{count, estimate};
use std::collections::HashMap;

/// The legend's marks, in the order they are given out.
const MARKS: [char; 9] = ['¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];

/// Between a mark and its string on the legend's line.
const SAYS: &str = " = ";

/// Shortest string worth a mark, in bytes.
const MIN_LEN: usize = 24;

/// Fewest uses worth a mark.
const MIN_USES: usize = 3;

/// Fewest tokens a mark must save, its legend line paid: a smaller gain is noise against
/// the tokenizer's merges around the mark.
const MIN_GAIN: i64 = 12;

/// What a mark costs where it stands, in o200k tokens (one, or two where it does not merge).
const MARK_COST: i64 = 2;

/// Candidates measured exactly, best estimates first: the estimate ranks, the tokenizer
/// and a scan of the text decide.
const EXAMINED: usize = 24;

/// Outputs shorter than this are left as they are: too little to repeat.
const MIN_TEXT: usize = 1024;

/// The chars that end a path or address where it stands in a line (JSON quotes, brackets,
/// `key=value`, lists).
fn ends_run(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\''
                | '`'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '<'
                | '>'
                | ','
                | ';'
                | '|'
                | '='
        )
}

/// `text` with its repeated paths and addresses said once, or `None` where none pays or
/// the text holds a mark of its own.
pub(crate) fn apply(text: &str) -> Option<String> {
    if text.len() < MIN_TEXT || text.contains(MARKS) {
        return None;
    }
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for run in text
        .split(ends_run)
        .filter(|r| r.len() >= MIN_LEN && r.contains('/'))
    {
        for end in cuts(run) {
            *uses.entry(&run[..end]).or_default() += 1;
        }
    }
    for line in text.lines() {
        field_runs(line, &mut uses);
        member_runs(line, &mut uses);
    }
    let mut ranked: Vec<(i64, &str)> = uses
        .into_iter()
        .filter(|&(_, n)| n >= MIN_USES)
        .map(|(s, n)| (gain(n, estimate(s) as i64), s))
        .filter(|&(g, _)| g >= MIN_GAIN)
        .collect();
    // Deterministic whatever the map's order: by gain, then by the string.
    ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut work = text.to_owned();
    let mut legend: Vec<&str> = Vec::new();
    for &(_, s) in ranked.iter().take(EXAMINED) {
        if legend.len() == MARKS.len() {
            break;
        }
        // A string that holds one already marked now reads `¹rest`: it is not there.
        if legend.iter().any(|l| s.contains(l)) {
            continue;
        }
        let n = memchr::memmem::find_iter(work.as_bytes(), s.as_bytes()).count();
        if gain(n, count(s) as i64) < MIN_GAIN {
            continue;
        }
        let mark = MARKS[legend.len()];
        work = work.replace(s, mark.encode_utf8(&mut [0; 4]));
        legend.push(s);
    }
    if legend.is_empty() {
        return None;
    }
    let mut out =
        String::with_capacity(work.len() + legend.iter().map(|s| s.len() + 8).sum::<usize>());
    for (mark, s) in MARKS.iter().zip(&legend) {
        out.push(*mark);
        out.push_str(SAYS);
        out.push_str(s);
        out.push('\n');
    }
    out.push_str(&work);
    Some(out)
}

/// Where a run may be cut for a candidate: after each `/`, before a `#`, `@` or a `:` that
/// does not open `://`, and at its end if it is an address. A file's own name stays in
/// sight: what a mark stands for is a directory, or where something comes from.
fn cuts(run: &str) -> impl Iterator<Item = usize> + '_ {
    let b = run.as_bytes();
    let whole = run.contains("://").then_some(b.len());
    (MIN_LEN..b.len())
        .filter(move |&i| {
            b[i - 1] == b'/'
                || matches!(b[i], b'#' | b'@')
                || (b[i] == b':' && !run[i..].starts_with("://"))
        })
        .chain(whole)
}

/// Counts every run of two to [`MAX_FIELDS`] `key=value` fields in a line (a log's
/// `dialect=openai_chat model="gpt-4.1" served="gpt-4.1" streamed=false`, which a few
/// kinds of request repeat line after line), if long enough to pay.
fn field_runs<'a>(line: &'a str, uses: &mut HashMap<&'a str, usize>) {
    if line.len() < MIN_LEN || !line.contains('=') {
        return;
    }
    // Each word's span, and whether it is a field.
    let mut words: Vec<(usize, usize, bool)> = Vec::new();
    let mut at = 0;
    for word in line.split(' ') {
        words.push((at, at + word.len(), is_field(word)));
        at += word.len() + 1;
    }
    for i in 0..words.len() {
        for n in 2..=MAX_FIELDS {
            let Some(last) = words.get(i + n - 1) else {
                break;
            };
            if !words[i..i + n].iter().all(|w| w.2) {
                break;
            }
            let phrase = &line[words[i].0..last.1];
            if phrase.len() >= MIN_LEN {
                *uses.entry(phrase).or_default() += 1;
            }
        }
    }
}

/// Counts every run of two to [`MAX_FIELDS`] JSON members in a line whose values are
/// strings without escapes, numbers, `true`, `false` or `null` (each commit's
/// `"name":"Ana","email":"ana@example.com"` in `git log` as JSON), if long enough to pay.
fn member_runs<'a>(line: &'a str, uses: &mut HashMap<&'a str, usize>) {
    if line.len() < MIN_LEN || !line.contains("\":") {
        return;
    }
    let b = line.as_bytes();
    // Each member's span, and whether the next member follows it after one comma.
    let mut members: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let opens = b[i] == b'"' && (i == 0 || matches!(b[i - 1], b'{' | b','));
        match opens.then(|| member_end(b, i)).flatten() {
            Some(end) => {
                members.push((i, end));
                i = end;
            }
            None => i += 1,
        }
    }
    for (k, &(start, _)) in members.iter().enumerate() {
        for n in 2..=MAX_FIELDS {
            let Some(&(_, end)) = members.get(k + n - 1) else {
                break;
            };
            // consecutive: each member's end is a comma before the next one's start
            let joined = members[k..k + n]
                .windows(2)
                .all(|w| w[0].1 + 1 == w[1].0 && b[w[0].1] == b',');
            if !joined {
                break;
            }
            let phrase = &line[start..end];
            if phrase.len() >= MIN_LEN {
                *uses.entry(phrase).or_default() += 1;
            }
        }
    }
}

/// Where a JSON member opening at `i` (`"key":value`) ends, for a key and a string value
/// without escapes or a scalar value; `None` for any other.
fn member_end(b: &[u8], i: usize) -> Option<usize> {
    let string_end = |from: usize| -> Option<usize> {
        let len = b
            .get(from + 1..)?
            .iter()
            .position(|&c| c == b'"' || c == b'\\')?;
        (b[from + 1 + len] == b'"').then_some(from + len + 2)
    };
    let colon = string_end(i)?;
    if b.get(colon) != Some(&b':') {
        return None;
    }
    let value = colon + 1;
    match b.get(value)? {
        b'"' => string_end(value),
        b'{' | b'[' => None,
        _ => {
            let len = b[value..]
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b']'))?;
            let scalar = &b[value..value + len];
            (!scalar.is_empty() && !scalar.contains(&b'"')).then_some(value + len)
        }
    }
}

/// Fields in a run that may share a mark, at most.
const MAX_FIELDS: usize = 8;

/// `key=value`, the key a name (letters, digits, `_`, `.`, `-`) and the value not empty.
fn is_field(word: &str) -> bool {
    word.split_once('=').is_some_and(|(k, v)| {
        !k.is_empty()
            && !v.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    })
}

/// Tokens saved by marking a string of `tokens` used `n` times, its legend line paid.
fn gain(n: usize, tokens: i64) -> i64 {
    n as i64 * (tokens - MARK_COST) - (tokens + 3)
}

/// Undoes [`apply`]: the legend's lines name each mark's string, and every mark below is
/// that string again. The legend is looked for at the start of any line, not only the
/// text's first: an agent's notice above an output may be read with it. A text without a
/// legend comes back as it is.
pub fn expand(text: &str) -> String {
    let first = format!("{}{SAYS}", MARKS[0]);
    let Some(at) = text
        .match_indices(&first)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
    else {
        return text.to_owned();
    };
    let (above, legend_and_body) = text.split_at(at);
    let mut legend: Vec<(char, &str)> = Vec::new();
    let mut rest = legend_and_body;
    while let Some(&mark) = MARKS.get(legend.len()) {
        let Some(after) = rest.strip_prefix(mark).and_then(|r| r.strip_prefix(SAYS)) else {
            break;
        };
        let Some((s, body)) = after.split_once('\n') else {
            break;
        };
        if s.len() < MIN_LEN || s.contains(MARKS) {
            break;
        }
        legend.push((mark, s));
        rest = body;
    }
    if legend.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() * 2);
    out.push_str(above);
    for c in rest.chars() {
        match legend.iter().find(|(m, _)| *m == c) {
            Some((_, s)) => out.push_str(s),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(n: usize) -> String {
        let mut s = String::from("{\"packages\":[");
        for i in 0..n {
            s.push_str(&format!(
                "{{\"name\":\"crate{i}\",\"id\":\"registry+https://github.com/rust-lang/crates.io-index#crate{i}@1.0.{i}\",\"source\":\"registry+https://github.com/rust-lang/crates.io-index\",\"manifest_path\":\"/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crate{i}-1.0.{i}/Cargo.toml\"}},"
            ));
        }
        s.push_str("{}]}");
        s
    }

    #[test]
    fn repeated_paths_are_said_once_and_come_back() {
        let text = metadata(40);
        let out = apply(&text).unwrap();
        assert!(out.starts_with("¹ = "), "{out}");
        assert!(
            out.contains("/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/\n")
                || out.contains("registry+https://github.com/rust-lang/crates.io-index\n"),
            "{out}"
        );
        assert!(
            count(&out) * 2 < count(&text),
            "{} → {}",
            count(&text),
            count(&out)
        );
        assert_eq!(expand(&out), text);
        // The same text, the same bytes.
        assert_eq!(apply(&text).unwrap(), out);
    }

    /// A text that holds a mark of its own, a short one, or one whose paths do not repeat
    /// stays; expanding a text without a legend changes nothing.
    #[test]
    fn what_cannot_be_marked_stays() {
        let own = format!("{}¹", metadata(40));
        assert_eq!(apply(&own), None);
        assert_eq!(apply(&metadata(2)), None);
        let distinct: String = (0..200)
            .map(|i| format!("/srv/data/{i:040x}/file{i}.bin\n"))
            .collect();
        assert_eq!(apply(&distinct), None);
        for t in [
            "¹ = short\nx¹",
            "¹ = /a/long/enough/path/here/and/more\n",
            "plain ¹ text",
            "",
        ] {
            let back = expand(t);
            if t == "¹ = /a/long/enough/path/here/and/more\n" {
                assert_eq!(back, "");
            } else {
                assert_eq!(back, t);
            }
        }
    }

    /// Every cut of a real `cargo metadata` document round-trips, CRLF and odd runs too.
    #[test]
    fn round_trips_on_varied_text() {
        let base = metadata(30);
        let texts = [
            base.replace(',', ",\r\n"),
            base.replace("/Cargo.toml", ":12:5 error"),
            format!("{base}\n{}", base.replace("crates.io", "crates:io")),
            base.replace("/home/u", "C:\\Users\\u"),
        ];
        for t in texts {
            if let Some(out) = apply(&t) {
                assert_eq!(expand(&out), t);
            }
        }
    }

    /// A log's lines that repeat the same few fields per kind of request: each kind's
    /// fields said once; a line's own values (ids, timings) stay on it.
    #[test]
    fn repeated_fields_are_said_once() {
        let kinds = [
            "dialect=openai_chat model=\"gpt-4.1\" served=\"gpt-4.1\" streamed=false",
            "dialect=anthropic_messages model=\"claude-sonnet-4-5\" served=\"claude-sonnet-4-5\" streamed=true",
        ];
        let text: String = (0..60)
            .map(|i| format!("19.{i:06} request request_id={i:08x}-aaaa {} latency_ms=1.{i} input_tokens=26\n", kinds[i % 2]))
            .collect();
        let out = apply(&text).unwrap();
        assert!(
            out.lines()
                .take(2)
                .all(|l| kinds.iter().any(|k| l.ends_with(k))),
            "{out}"
        );
        assert!(
            out.contains("request_id=0000003b-aaaa ² latency_ms=1.59")
                || out.contains("request_id=0000003b-aaaa ¹ latency_ms=1.59"),
            "{out}"
        );
        assert_eq!(expand(&out), text);
        assert!(count(&out) * 3 < count(&text) * 2);
    }

    /// `git log` as JSON: the author's name and email, the same in every commit, are said
    /// once; a member with an escape or an object for a value is not part of a run.
    #[test]
    fn repeated_json_members_are_said_once() {
        let text: String = (0..40)
            .map(|i| format!("{{\"sha\":\"{i:040x}\",\"author\":{{\"name\":\"Seed maintainers\",\"email\":\"maintainers@users.noreply.example\",\"date\":\"2026-12-01T10:{i:02}:25Z\"}},\"note\":\"say \\\"hi\\\"\",\"stats\":{{\"files\":{{\"a\":1}},\"total\":{i}}}}}\n"))
            .collect();
        let out = apply(&text).unwrap();
        assert!(
            out.starts_with("¹ = \"name\":\"Seed maintainers\",\"email\":\"maintainers@users.noreply.example\"\n"),
            "{out}"
        );
        assert!(!out.contains("= \"note\""), "{out}");
        assert!(!out.contains("= \"files\""), "{out}");
        assert_eq!(expand(&out), text);
        assert_eq!(apply(&text), Some(out));
    }

    /// A string chosen first and a longer one it starts: the longer one is not given a mark
    /// (it would read `¹rest`), a shorter prefix still may.
    #[test]
    fn nested_paths_round_trip() {
        let mut t = String::new();
        for i in 0..30 {
            t.push_str(&format!("/work/main/gateway-core/src/translate/file{i}.rs:{i}:1 warning\n/work/main/tests/case{i}.rs:1:1 note\n"));
        }
        let out = apply(&t).unwrap();
        assert_eq!(expand(&out), t);
        assert!(count(&out) < count(&t));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Text made of a few long paths, addresses and fields, repeated and cut anywhere
        /// by quotes, colons, `=`, blanks and line breaks: whatever the legend takes, the
        /// text comes back, and the same text gives the same bytes.
        #[test]
        fn whatever_is_marked_comes_back(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::Just("/srv/build/target/debug/deps/".to_owned()),
                    proptest::prelude::Just("registry+https://github.com/rust-lang/crates.io-index".to_owned()),
                    proptest::prelude::Just(" dialect=openai_chat model=\"gpt-4.1\" streamed=false".to_owned()),
                    proptest::prelude::Just("C:\\Users\\dev\\project\\src\\".to_owned()),
                    "[a-z0-9_.@#:/=\" \n\r-]{0,12}",
                ],
                0..120,
            )
        ) {
            let text: String = parts.concat();
            let out = apply(&text);
            proptest::prop_assert_eq!(&out, &apply(&text));
            if let Some(out) = out {
                proptest::prop_assert_eq!(expand(&out), text);
            }
        }
    }
}

//! JSON documents (API responses, `cargo metadata`, `npm ls --json`). Light minifies:
//! whitespace outside strings goes, every key, value and key order stays byte for byte.
//! Standard also writes arrays of records as tables where that costs fewer tokens
//! ([`super::json_table`], undone exactly by its `expand`). Aggressive first samples long
//! arrays, keeping the first and last items, items that mention errors or warnings, and the
//! smallest and largest of a list of numbers.

use super::json_table;
use super::lines::thousands;
use super::Level;

/// Arrays longer than this are sampled at Aggressive.
const SAMPLE_ABOVE: usize = 20;
const KEEP_HEAD: usize = 5;
const KEEP_TAIL: usize = 3;

/// Words that make an array item worth keeping when sampling.
const ALERT_WORDS: &[&str] = &[
    "error",
    "fail",
    "warn",
    "exception",
    "fatal",
    "critical",
    "panic",
];

/// Whether `text` is one JSON object or array (after surrounding whitespace).
pub(crate) fn is_json(text: &str) -> bool {
    let t = text.trim_start();
    (t.starts_with('{') || t.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// Where a JSON document starts that runs to the end of `text` after lines of something
/// else (cargo's `Downloaded …` on stderr before `cargo metadata`'s JSON): a line that opens
/// with `{` or `[`, among the first few such lines, after one that is not a document.
pub(crate) fn trailing_document(text: &str) -> Option<usize> {
    // Lines of NDJSON or bracketed log prefixes open the same way: a few tries, each
    // failing at its first line, keep the search linear.
    const TRIES: usize = 3;
    let last = text.trim_end().bytes().last()?;
    memchr::memchr_iter(b'\n', text.as_bytes())
        .map(|i| i + 1)
        .filter(|&at| {
            matches!(
                (text.as_bytes().get(at), last),
                (Some(b'{'), b'}') | (Some(b'['), b']')
            )
        })
        .take(TRIES)
        .find(|&at| {
            // the last line of NDJSON is a document too, but its lines are all alike
            let previous = text
                .get(..at - 1)
                .map(|h| h.rsplit('\n').next().unwrap_or(h));
            !previous.is_some_and(is_json) && text.get(at..).is_some_and(is_json)
        })
}

/// Compacts a JSON document that [`is_json`] accepted.
pub(crate) fn compact(text: &str, level: Level) -> String {
    let min = minify(text);
    let min = match level {
        Level::Light => return min,
        Level::Aggressive => sample(&min).unwrap_or(min),
        Level::Standard | Level::Auto => min,
    };
    json_table::tabulate(&min).unwrap_or(min)
}

/// Removes whitespace outside strings. Input must be valid JSON.
pub(crate) fn minify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut copied = 0usize;
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push_str(text.get(copied..i).unwrap_or(""));
                copied = i + 1;
            }
            _ => {}
        }
    }
    out.push_str(text.get(copied..).unwrap_or(""));
    out
}

/// Re-emits minified JSON with long arrays sampled; `None` if the text is not what the
/// walker expects (it then stays minified only).
fn sample(min: &str) -> Option<String> {
    let mut out = String::with_capacity(min.len() / 2);
    let end = emit(min, 0, &mut out)?;
    (end == min.len()).then_some(out)
}

fn byte(s: &str, i: usize) -> Option<u8> {
    s.as_bytes().get(i).copied()
}

/// End of the string starting at `i` (a `"`), just past its closing quote.
pub(super) fn skip_string(s: &str, i: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut j = i + 1;
    loop {
        match bytes.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// End of the value starting at `i`.
pub(super) fn skip_value(s: &str, i: usize) -> Option<usize> {
    match byte(s, i)? {
        b'"' => skip_string(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match byte(s, j)? {
                    b'"' => {
                        j = skip_string(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let rest = s.get(i..)?;
            let len = rest.find([',', '}', ']']).unwrap_or(rest.len());
            Some(i + len)
        }
    }
}

/// Emits the value at `i` into `out`, sampling arrays; returns its end.
fn emit(s: &str, i: usize, out: &mut String) -> Option<usize> {
    match byte(s, i)? {
        b'{' => {
            out.push('{');
            let mut j = i + 1;
            if byte(s, j)? == b'}' {
                out.push('}');
                return Some(j + 1);
            }
            loop {
                let key_end = skip_string(s, j)?;
                out.push_str(s.get(j..key_end)?);
                if byte(s, key_end)? != b':' {
                    return None;
                }
                out.push(':');
                j = emit(s, key_end + 1, out)?;
                match byte(s, j)? {
                    b',' => {
                        out.push(',');
                        j += 1;
                    }
                    b'}' => {
                        out.push('}');
                        return Some(j + 1);
                    }
                    _ => return None,
                }
            }
        }
        b'[' => {
            let mut items: Vec<(usize, usize)> = Vec::new();
            let mut j = i + 1;
            if byte(s, j)? != b']' {
                loop {
                    let end = skip_value(s, j)?;
                    items.push((j, end));
                    match byte(s, end)? {
                        b',' => j = end + 1,
                        b']' => {
                            j = end;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            let keep = keep_items(s, &items);
            out.push('[');
            let total = items.len();
            let mut first = true;
            let mut skipped = 0usize;
            for (&(start, _), &k) in items.iter().zip(&keep) {
                if !k {
                    skipped += 1;
                    continue;
                }
                push_elided(out, &mut first, &mut skipped, total);
                if !first {
                    out.push(',');
                }
                first = false;
                emit(s, start, out)?;
            }
            push_elided(out, &mut first, &mut skipped, total);
            out.push(']');
            Some(j + 1)
        }
        _ => {
            let end = skip_value(s, i)?;
            out.push_str(s.get(i..end)?);
            Some(end)
        }
    }
}

/// Writes the `"[… N of M items elided …]"` element for a skipped stretch.
fn push_elided(out: &mut String, first: &mut bool, skipped: &mut usize, total: usize) {
    if *skipped == 0 {
        return;
    }
    if !*first {
        out.push(',');
    }
    *first = false;
    out.push_str(&format!(
        "\"[… {} of {} items elided …]\"",
        thousands(*skipped),
        thousands(total)
    ));
    *skipped = 0;
}

/// Which items of an array survive sampling.
fn keep_items(s: &str, items: &[(usize, usize)]) -> Vec<bool> {
    let n = items.len();
    if n <= SAMPLE_ABOVE {
        return vec![true; n];
    }
    let mut keep: Vec<bool> = (0..n)
        .map(|i| i < KEEP_HEAD || i + KEEP_TAIL >= n)
        .collect();

    // Items that mention errors — unless most items do, in which case the word is part of
    // the schema (`"error": null`) and says nothing about the item.
    let alerts: Vec<bool> = items
        .iter()
        .map(|&(a, b)| s.get(a..b).is_some_and(mentions_alert))
        .collect();
    if alerts.iter().filter(|a| **a).count() * 2 <= n {
        for (k, a) in keep.iter_mut().zip(&alerts) {
            *k |= *a;
        }
    }

    // The smallest and largest of a list of numbers.
    let numbers: Option<Vec<f64>> = items
        .iter()
        .map(|&(a, b)| s.get(a..b).and_then(|t| t.parse::<f64>().ok()))
        .collect();
    if let Some(numbers) = numbers {
        let mut min = 0;
        let mut max = 0;
        for (i, v) in numbers.iter().enumerate() {
            if numbers.get(min).is_some_and(|m| v < m) {
                min = i;
            }
            if numbers.get(max).is_some_and(|m| v > m) {
                max = i;
            }
        }
        for i in [min, max] {
            if let Some(k) = keep.get_mut(i) {
                *k = true;
            }
        }
    }
    keep
}

fn mentions_alert(item: &str) -> bool {
    let lower = item.to_ascii_lowercase();
    ALERT_WORDS.iter().any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minify_keeps_strings_and_key_order() {
        let text = "{\n  \"z\": 1,\n  \"a\": \"two  words \\\" and\\n\",\n  \"m\": [ 1.50, -0, 1e10 ]\n}\n";
        assert_eq!(
            minify(text),
            "{\"z\":1,\"a\":\"two  words \\\" and\\n\",\"m\":[1.50,-0,1e10]}"
        );
    }

    #[test]
    fn long_arrays_are_sampled_with_errors_and_extremes_kept() {
        let items: Vec<String> = (0..50)
            .map(|i| {
                if i == 30 {
                    format!("{{\"id\":{i},\"status\":\"error: disk full\"}}")
                } else {
                    format!("{{\"id\":{i},\"status\":\"ok\"}}")
                }
            })
            .collect();
        let text = format!("{{\"items\":[{}]}}", items.join(","));
        let out = compact(&text, Level::Aggressive);
        let v: serde_json::Value = serde_json::from_str(&json_table::expand(&out)).unwrap();
        let arr = v["items"].as_array().unwrap();
        assert_eq!(arr.len(), 5 + 1 + 1 + 1 + 3);
        assert_eq!(arr[5], "[… 25 of 50 items elided …]");
        assert_eq!(arr[6]["status"], "error: disk full");
        assert_eq!(arr[7], "[… 16 of 50 items elided …]");
        assert_eq!(arr[10]["id"], 49);
    }

    /// A document after a tool's status lines is found where it starts; lines of NDJSON
    /// or a log of bracketed prefixes are not one document.
    #[test]
    fn a_document_after_status_lines_is_found() {
        let text = "   Downloading crates ...\n  Downloaded log v0.4.35\n{\"packages\": []}\n";
        assert_eq!(trailing_document(text), text.find('{'));
        assert_eq!(trailing_document("[INFO] start\n[1, 2]"), Some(13));
        assert_eq!(trailing_document("{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"), None);
        assert_eq!(trailing_document("[INFO] a\n[WARN] b\n[INFO] c]"), None);
        assert_eq!(trailing_document("no json here\n"), None);
    }

    #[test]
    fn number_lists_keep_their_extremes() {
        let mut nums: Vec<String> = (0..40).map(|i| (i % 7).to_string()).collect();
        nums[17] = "9000".into();
        nums[22] = "-3.5".into();
        let out = compact(&format!("[{}]", nums.join(", ")), Level::Aggressive);
        assert!(out.contains(",9000,"), "{out}");
        assert!(out.contains(",-3.5,"), "{out}");
    }
}

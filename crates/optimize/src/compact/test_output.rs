//! Test runs: cargo test, pytest, unittest, jest, mocha, go test. Passing tests are counted
//! instead of listed; failures, their output, assertion messages and summaries stay whole.

use super::lines::{count, Elided, Row, Tag};
use super::Level;

/// A line only a test run prints.
pub(crate) fn is_test_marker(line: &str) -> bool {
    let t = line.trim();
    (t.starts_with("test ")
        && (t.ends_with(" ... ok") || t.ends_with(" ... FAILED") || t.ends_with(" ... ignored")))
        || t.starts_with("test result: ")
        || t.starts_with("running ") && t.ends_with(" tests")
        || t.contains("test session starts")
        || t.contains("short test summary info")
        || pytest_status(t).is_some()
        || t.starts_with("--- FAIL: ")
        || t.starts_with("--- PASS: ")
        || t.starts_with("=== RUN ")
        || t.starts_with("Tests:") && (t.contains(" passed") || t.contains(" failed"))
        || t.ends_with(" ... ok")
        || passing_glyph(t)
        || is_rspec_summary(t)
        || t.contains("(FAILED - ")
        || junit_tree_passed(t)
        || t.starts_with('[')
            && (t.ends_with(" tests successful ]") || t.ends_with(" tests failed ]"))
}

/// rspec's `442 examples, 5 failures` (and `, 2 pending`).
fn is_rspec_summary(t: &str) -> bool {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0
        && t.get(digits..).is_some_and(|r| r.starts_with(" example"))
        && t.contains(" failure")
}

/// A passed node of the JUnit console launcher's tree: `│  ├─ accepts "1" ✔`.
fn junit_tree_passed(t: &str) -> bool {
    t.starts_with(['├', '└', '│']) && t.ends_with(" ✔")
}

/// rspec's documentation formatter prints a passing example as its bare description, under
/// its groups: the leaves (a line the next line is not indented under) that carry no
/// `(FAILED - n)` or `(PENDING: …)` mark, in a run that ends with rspec's summary.
fn rspec_passing(rows: &[Row]) -> Vec<bool> {
    let mut passing = vec![false; rows.len()];
    let Some(end) = rows.iter().position(|r| {
        matches!(r.text.trim(), "Failures:" | "Pending:") || r.text.starts_with("Finished in ")
    }) else {
        return passing;
    };
    if !rows.iter().any(|r| is_rspec_summary(r.text.trim())) {
        return passing;
    }
    let indent = |t: &str| t.len() - t.trim_start().len();
    for i in 0..end {
        let text = rows[i].text.as_str();
        let t = text.trim();
        if t.is_empty()
            || indent(text) < 2
            || t.ends_with(')') && (t.contains("(FAILED - ") || t.contains("(PENDING"))
        {
            continue;
        }
        let next = rows[i + 1..end].iter().find(|r| !r.text.trim().is_empty());
        if next.is_none_or(|n| indent(&n.text) <= indent(text)) {
            passing[i] = true;
        }
    }
    passing
}

/// `path::test PASSED [ 12%]` → `PASSED` (pytest -v).
fn pytest_status(line: &str) -> Option<&'static str> {
    if !line.contains("::") {
        return None;
    }
    let body = strip_percent(line);
    ["PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"]
        .into_iter()
        .find(|s| {
            body.match_indices(s).any(|(at, _)| {
                let before = body.get(..at).is_some_and(|b| b.ends_with(' '));
                let after = body.get(at + s.len()..).unwrap_or("");
                before && (after.is_empty() || after.starts_with(' '))
            })
        })
}

/// Drops pytest's trailing `[ 42%]` progress column.
fn strip_percent(line: &str) -> &str {
    let t = line.trim_end();
    if let Some(open) = t.rfind('[') {
        let tail = t.get(open..).unwrap_or("");
        if tail.ends_with("%]")
            && tail
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'[' | b']' | b'%' | b' '))
        {
            return t.get(..open).unwrap_or(t).trim_end();
        }
    }
    t
}

/// jest / mocha checkmarks.
fn passing_glyph(trimmed: &str) -> bool {
    ["✓ ", "✔ ", "√ "].iter().any(|g| trimmed.starts_with(g))
}

/// What a dropped line was.
enum Dropped {
    Passing,
    Progress,
}

/// Whether a line in the run part of the output reports a passing test or runner chatter.
fn droppable(line: &str) -> Option<Dropped> {
    let t = line.trim();
    if t.ends_with(" ... ok")
        || t.starts_with("--- PASS: ")
        || passing_glyph(t)
        || junit_tree_passed(t)
    {
        return Some(Dropped::Passing);
    }
    if pytest_status(t) == Some("PASSED") && strip_percent(t).ends_with(" PASSED") {
        return Some(Dropped::Passing);
    }
    if ["=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "]
        .iter()
        .any(|p| t.starts_with(p))
    {
        return Some(Dropped::Progress);
    }
    None
}

/// Where in a test run a line sits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    /// Test lines, headers, summaries.
    Run,
    /// pytest `FAILURES` / `ERRORS`.
    PyFailures,
    /// cargo `---- name stdout ----` up to the `failures:` list.
    CargoFailure,
}

/// A pytest section rule (`==== FAILURES ====`) → its title.
fn rule_title(line: &str) -> Option<&str> {
    let t = line.trim();
    if t.len() < 6 || !(t.starts_with("==") && t.ends_with("==")) {
        return None;
    }
    Some(t.trim_matches('=').trim())
}

/// Shortens the padding of pytest rules and banners: `===== FAILURES =====` →
/// `== FAILURES ==`, `_____ test_x _____` → `__ test_x __`, `_ _ _ _ …` → `_ _ _`.
fn shorten_rule(line: &str) -> Option<String> {
    let t = line.trim();
    for pad in ['=', '_', '-'] {
        let lead = t.chars().take_while(|c| *c == pad).count();
        let trail = t.chars().rev().take_while(|c| *c == pad).count();
        if lead == t.chars().count() && lead > 10 {
            return Some(pad.to_string().repeat(10));
        }
        if lead >= 5 && trail >= 5 && lead + trail < t.len() {
            let inner = t.get(lead..t.len() - trail).unwrap_or("").trim();
            let two: String = [pad, pad].iter().collect();
            return Some(format!("{two} {inner} {two}"));
        }
    }
    if t.len() > 10 && t.starts_with("_ _ _") && t.bytes().all(|b| b == b'_' || b == b' ') {
        return Some("_ _ _".into());
    }
    None
}

/// In an aggressive pytest failure section: the lines that carry the failure (the
/// failing line `>`, `E` introspection, `file:line:` locations, section banners).
fn pytest_fact_line(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty()
        || t.starts_with('>')
        || t.starts_with("E ")
        || t == "E"
        || t.starts_with("__")
        || t.starts_with("_ _")
        || t.starts_with("==")
        || is_file_line_location(t)
        || t.starts_with("---")
}

/// `tests/test_x.py:14: AssertionError` or `src/app.py:21: in load`.
fn is_file_line_location(t: &str) -> bool {
    let Some((path, rest)) = t.split_once(':') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    !path.contains(' ')
        && path.contains('.')
        && digits > 0
        && rest.get(digits..).is_some_and(|r| r.starts_with(':'))
}

/// Compacts a test run. Light returns the rows unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let aggressive = level == Level::Aggressive;
    let mut out: Vec<Row> = Vec::with_capacity(rows.len() / 2);
    let mut passing = 0usize;
    let mut progress = 0usize;
    let mut dropped = Elided::default();
    let mut source = Elided::default();
    let mut section = Section::Run;

    let flush_dropped = |out: &mut Vec<Row>, dropped: &mut Elided, p: &mut usize, q: &mut usize| {
        let (passing, progress) = (*p, *q);
        dropped.flush(out, |_| match (passing, progress) {
            (_, 0) => format!("{} elided", count(passing, "passing test", "passing tests")),
            (0, _) => format!(
                "{} elided",
                count(progress, "test progress line", "test progress lines")
            ),
            _ => format!(
                "{} and {} elided",
                count(passing, "passing test", "passing tests"),
                count(progress, "test progress line", "test progress lines")
            ),
        });
        *p = 0;
        *q = 0;
    };

    let rspec = rspec_passing(&rows);
    for (row, rspec_passed) in rows.into_iter().zip(rspec) {
        if rspec_passed && section == Section::Run {
            passing += 1;
            dropped.push(row);
            continue;
        }
        let text = row.text.as_str();
        let trimmed = text.trim();

        // Section changes.
        if let Some(title) = rule_title(text) {
            section = match title {
                "FAILURES" | "ERRORS" => Section::PyFailures,
                _ => Section::Run,
            };
        } else if trimmed.starts_with("---- ") && trimmed.ends_with(" ----") {
            section = Section::CargoFailure;
        } else if trimmed == "failures:" && section == Section::CargoFailure {
            section = Section::Run;
        }

        if section == Section::Run {
            match droppable(text) {
                Some(Dropped::Passing) => {
                    passing += 1;
                    dropped.push(row);
                    continue;
                }
                Some(Dropped::Progress) => {
                    progress += 1;
                    dropped.push(row);
                    continue;
                }
                None => {}
            }
        }
        flush_dropped(&mut out, &mut dropped, &mut passing, &mut progress);

        let has_percent = strip_percent(trimmed) != trimmed;
        let text = match shorten_rule(text) {
            Some(short) => short,
            None if section == Section::Run && pytest_status(trimmed).is_some() => {
                strip_percent(text).to_string()
            }
            None => row.text,
        };

        match section {
            Section::Run => {
                source.flush(&mut out, lines_elided);
                // pytest's `file.py ..F.. [ 40%]` lines are results, not progress
                let tag = if row.tag == Tag::Plain && has_percent {
                    Tag::Pinned
                } else {
                    row.tag
                };
                out.push(Row { text, tag });
            }
            Section::PyFailures if aggressive && !pytest_fact_line(&text) => {
                source.push(Row::pinned(text));
            }
            Section::PyFailures | Section::CargoFailure => {
                source.flush(&mut out, lines_elided);
                let tag = if row.tag == Tag::Plain {
                    Tag::Pinned
                } else {
                    row.tag
                };
                out.push(Row { text, tag });
            }
        }
    }
    flush_dropped(&mut out, &mut dropped, &mut passing, &mut progress);
    source.flush(&mut out, lines_elided);
    out
}

fn lines_elided(n: usize) -> String {
    super::lines::lines_elided(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};

    #[test]
    fn pytest_statuses_are_read_from_verbose_lines() {
        assert_eq!(
            pytest_status("test_a.py::test_x PASSED                     [ 12%]"),
            Some("PASSED")
        );
        assert_eq!(
            pytest_status("test_a.py::test_s SKIPPED (not here)          [100%]"),
            Some("SKIPPED")
        );
        assert_eq!(pytest_status("nothing here"), None);
    }

    #[test]
    fn rules_are_shortened() {
        assert_eq!(
            shorten_rule("============ FAILURES ============").as_deref(),
            Some("== FAILURES ==")
        );
        assert_eq!(
            shorten_rule("_________ test_header _________").as_deref(),
            Some("__ test_header __")
        );
        assert_eq!(
            shorten_rule("_ _ _ _ _ _ _ _ _ _").as_deref(),
            Some("_ _ _")
        );
        assert_eq!(shorten_rule("a = b"), None);
    }

    #[test]
    fn go_test_keeps_failures_and_counts_passes() {
        let mut text = String::new();
        for i in 0..20 {
            text.push_str(&format!(
                "=== RUN   TestAdd{i}\n--- PASS: TestAdd{i} (0.00s)\n"
            ));
        }
        text.push_str("=== RUN   TestParse\n    parse_test.go:14: got 4, want 5\n--- FAIL: TestParse (0.00s)\nFAIL\nFAIL\texample.com/calc\t0.004s\n");
        let out = join(&compact(rows(&text), Level::Standard));
        assert!(out.contains("[… 20 passing tests and 21 test progress lines elided …]"));
        assert!(out.contains("parse_test.go:14: got 4, want 5"));
        assert!(out.contains("--- FAIL: TestParse (0.00s)"));
        assert!(out.contains("FAIL\texample.com/calc\t0.004s"));
    }
    /// rspec's documentation formatter: passing examples are bare descriptions; the failing
    /// one, its groups, the failure details and the summary stay.
    #[test]
    fn rspec_documentation_keeps_failures_and_counts_passes() {
        let mut text = String::from("\nCart\n  .tax_for\n    in FI\n");
        for i in 0..30 {
            text.push_str(&format!("      taxes {i}00 cents at 0.24\n"));
        }
        text.push_str("      taxes 99999 cents at 0.24 (FAILED - 1)\n\nFailures:\n\n  1) Cart.tax_for in FI taxes 99999 cents at 0.24\n       expected: 24000\n            got: 23999\n     # ./spec/cart_spec.rb:11:in `block (6 levels)'\n\nFinished in 0.18 seconds\n31 examples, 1 failure\n");
        let out = join(&compact(rows(&text), Level::Standard));
        assert!(out.contains("[… 30 passing tests elided …]"), "{out}");
        assert!(out.contains("    in FI\n"), "{out}");
        assert!(out.contains("taxes 99999 cents at 0.24 (FAILED - 1)"));
        assert!(out.contains("got: 23999"));
        assert!(out.contains("31 examples, 1 failure"));
    }

    /// The JUnit console launcher's tree: passed nodes fold, failed ones keep their message.
    #[test]
    fn junit_tree_keeps_failed_nodes() {
        let mut text = String::from("╷\n├─ JUnit Jupiter ✔\n│  └─ CartTest ✔\n");
        for i in 0..20 {
            text.push_str(&format!("│     ├─ accepts \"{i}\" ✔\n"));
        }
        text.push_str("│     └─ rejects \"12abc\" ✘ Expected java.lang.IllegalArgumentException to be thrown, but nothing was thrown.\n\n[       465 tests successful      ]\n[         1 tests failed          ]\n");
        let out = join(&compact(rows(&text), Level::Standard));
        assert!(out.contains("[… 22 passing tests elided …]"), "{out}");
        assert!(out.contains("rejects \"12abc\" ✘ Expected java.lang.IllegalArgumentException"));
        assert!(out.contains("1 tests failed"));
    }
}

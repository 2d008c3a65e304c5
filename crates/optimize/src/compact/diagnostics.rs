//! Compiler diagnostics: rustc/cargo (`error[E0308]: …` + ` --> src/x.rs:12:5`), tsc
//! (`src/a.ts(12,5): error TS2345: …`), gcc/clang (`a.c:12:5: error: …`). Every error block
//! stays whole; build progress is counted; at Aggressive a warning keeps its headline and
//! location only.

use super::lines::{count, status_verb, Elided, Row, Tag};
use super::Level;

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Severity {
    Error,
    Warning,
    Note,
}

/// The severity of a diagnostic headline, or `None` for any other line.
pub(crate) fn headline(line: &str) -> Option<Severity> {
    // rustc / cargo: `error[E0425]: …`, `error: …`, `warning: …`, `warning[…]: …`.
    for (word, sev) in [("error", Severity::Error), ("warning", Severity::Warning)] {
        if let Some(rest) = line.strip_prefix(word) {
            if rest.starts_with(": ") || rest.starts_with('[') && rest.contains("]: ") {
                return Some(sev);
            }
        }
    }
    // tsc: `src/a.ts(12,5): error TS2345: …` or `src/a.ts:12:5 - error TS2345: …`.
    if line.contains(": error TS") || line.contains(" - error TS") {
        return Some(Severity::Error);
    }
    if line.contains(": warning TS") || line.contains(" - warning TS") {
        return Some(Severity::Warning);
    }
    // gcc / clang: `path:12:5: error: …`.
    let (loc, rest) = split_location(line)?;
    if loc.contains(' ') {
        return None;
    }
    let rest = rest.trim_start();
    if rest.starts_with("error:") || rest.starts_with("fatal error:") {
        Some(Severity::Error)
    } else if rest.starts_with("warning:") {
        Some(Severity::Warning)
    } else if rest.starts_with("note:") {
        Some(Severity::Note)
    } else {
        None
    }
}

/// `path:12:5: rest` → (`path:12:5`, ` rest`).
fn split_location(line: &str) -> Option<(&str, &str)> {
    let mut numbers = 0;
    let mut last = 0;
    for (i, _) in line.match_indices(':') {
        let after = line.get(i + 1..)?;
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after.get(digits..)?.starts_with(':') {
            numbers += 1;
            last = i + 1 + digits;
            if numbers == 2 {
                break;
            }
        } else if numbers > 0 {
            break;
        }
    }
    if numbers == 2 {
        Some((line.get(..last)?, line.get(last + 1..)?))
    } else {
        None
    }
}

/// Lines that start a new context and so end a gcc warning's body.
fn is_context_line(line: &str) -> bool {
    line.starts_with("In file included from")
        || line.contains(": In function")
        || line.contains(": At top level:")
        || line.contains(": In member function")
}

/// Compacts a diagnostics log. Light returns the rows unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let aggressive = level == Level::Aggressive;
    let mut out = Vec::with_capacity(rows.len());
    let mut status = Elided::default();
    let mut status_verb_seen: Option<&'static str> = None;
    let mut warning_body = Elided::default();
    // Inside a block: its severity, and whether its location line was kept already.
    let mut block: Option<(Severity, bool)> = None;

    for row in rows {
        let text = row.text.as_str();
        if row.tag == Tag::Plain {
            if let Some(verb) = status_verb(text) {
                if status_verb_seen.is_some_and(|v| v != verb) {
                    flush_status(&mut out, &mut status, status_verb_seen);
                }
                status_verb_seen = Some(verb);
                status.push(row);
                continue;
            }
        }
        flush_status(&mut out, &mut status, status_verb_seen);
        status_verb_seen = None;

        let in_warning = matches!(block, Some((Severity::Warning, _)));
        if let Some(sev) = headline(text) {
            if !(aggressive && sev == Severity::Note && in_warning) {
                // consecutive warnings share one marker for their details
                if !(aggressive && sev == Severity::Warning) {
                    flush_warning(&mut out, &mut warning_body);
                }
                block = Some((sev, false));
                out.push(Row::pinned(row.text));
                continue;
            }
        }
        if text.trim().is_empty() {
            block = None;
            if aggressive && (in_warning || !warning_body.is_empty()) {
                warning_body.push(row);
            } else {
                out.push(row);
            }
            continue;
        }
        if is_context_line(text) {
            block = None;
        }
        match block {
            Some((Severity::Warning, located)) if aggressive => {
                if !located && text.trim_start().starts_with("--> ") {
                    block = Some((Severity::Warning, true));
                    out.push(Row::pinned(row.text));
                } else {
                    warning_body.push(row);
                }
            }
            Some(_) => out.push(Row::pinned(row.text)),
            None => {
                flush_warning(&mut out, &mut warning_body);
                out.push(row);
            }
        }
    }
    flush_status(&mut out, &mut status, status_verb_seen);
    flush_warning(&mut out, &mut warning_body);
    out
}

fn flush_status(out: &mut Vec<Row>, status: &mut Elided, verb: Option<&'static str>) {
    let verb = verb.unwrap_or("build progress");
    status.flush(out, |n| {
        format!(
            "{} {verb} {} elided",
            super::lines::thousands(n),
            if n == 1 { "line" } else { "lines" }
        )
    });
}

fn flush_warning(out: &mut Vec<Row>, body: &mut Elided) {
    body.flush(out, |n| {
        format!(
            "{} elided",
            count(n, "warning detail line", "warning detail lines")
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headlines_of_each_compiler_are_recognised() {
        assert_eq!(
            headline("error[E0308]: mismatched types"),
            Some(Severity::Error)
        );
        assert_eq!(
            headline("error: could not compile `x`"),
            Some(Severity::Error)
        );
        assert_eq!(
            headline("warning: unused variable: `m`"),
            Some(Severity::Warning)
        );
        assert_eq!(
            headline("src/app.ts(12,5): error TS2345: Argument of type 'string' is not assignable"),
            Some(Severity::Error)
        );
        assert_eq!(
            headline("main.c:12:5: error: expected ';' before '}' token"),
            Some(Severity::Error)
        );
        assert_eq!(
            headline("main.c:3:9: warning: unused variable 'x' [-Wunused-variable]"),
            Some(Severity::Warning)
        );
        assert_eq!(headline("errors were found"), None);
        assert_eq!(headline("12:30:01 error: nope"), None);
    }
}

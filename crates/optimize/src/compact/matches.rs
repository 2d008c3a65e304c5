//! Match listings: `grep -rn`, `rg -n` and `rg` piped (which prints no line numbers), with
//! or without context (`-C 2`). Consecutive lines of one file share one line naming the
//! file and counting the lines below that are its own; every line number and text stays,
//! and [`expand`] gives the lines back byte for byte:
//!
//! - numbered: `src/a.rs:12:text` → `src/a.rs (2 lines):` then `12:text`; a context line
//!   `src/a.rs-13-text` → `13-text`, or `-text` where it is the line after the one above
//!   (a match keeps its number); the `--` between two blocks of the same file stays `--`.
//! - unnumbered: `src/a.rs:text` → `src/a.rs (2 lines):` then `text`.
//!
//! The lines under a header are not indented: the header's count says where they end, and
//! a line that opens with its number costs a token less than one that opens with blanks.
//! A group whose rewrite would not expand back exactly (its text looks like another room's
//! grouping) is left as sent. At Aggressive, long files keep their first matches and very
//! long matched lines their first characters, with a marker for the rest.

use std::collections::HashMap;

use super::lines::{count, join, Elided, Row};
use super::Level;

/// At Aggressive: lines kept per file, characters kept per matched line.
const MAX_MATCHES_PER_FILE: usize = 20;
const MAX_MATCH_CHARS: usize = 300;

/// What `grep -C` / `rg -C` prints between blocks of context.
const SEPARATOR: &str = "--";

/// How a line whose text an earlier line of the same file has is written: `(same as 155)`.
const SAME_AS: &str = "(same as ";

/// Shortest text said as the earlier line's number instead (shorter costs about as much).
const MIN_DITTO: usize = 32;

/// `src/a.rs:12:text` → (`src/a.rs`, `12`, `text`). The path is what comes before the
/// first `:digits:`; a line with `": "` before that (`key: value`) is not a match line.
pub(crate) fn split_numbered(line: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in line.match_indices(':') {
        let after = line.get(i + 1..)?;
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after.get(digits..)?.starts_with(':') {
            let path = line.get(..i)?;
            return is_path(path).then_some((path, after.get(..digits)?, after.get(digits + 1..)?));
        }
        if after.starts_with(' ') {
            return None;
        }
    }
    None
}

/// `src/a.rs:text` → (`src/a.rs`, `text`): the path is what comes before the first colon
/// (the second on a Windows drive, `C:\src\a.rs:text`). The path must read as a file's
/// (a directory or an extension) and the text must not be empty, so `key: value`, URLs
/// (`https://…`), timestamps, `dir:` headers and tsc's `file(line,col):` are not taken for
/// matches.
pub(crate) fn split_plain(line: &str) -> Option<(&str, &str)> {
    let drive = line.get(1..3) == Some(":\\")
        && line.as_bytes().first().is_some_and(u8::is_ascii_alphabetic);
    let from = if drive { 2 } else { 0 };
    let at = from + line.get(from..)?.find(':')?;
    let (path, text) = (line.get(..at)?, line.get(at + 1..)?);
    // `src/a.ts(12,5): error …` is tsc's, not a match
    let file_like = path.contains(['/', '\\', '.']) && !path.ends_with(')');
    (file_like && !text.is_empty() && is_path(path)).then_some((path, text))
}

/// Whether what precedes a match's text can be a path: not empty, not opening with a digit
/// (timestamps do) or a blank, and with blanks only in its directories (`vendor
/// libs/x.rs`), which a sentence's words before a colon seldom have.
fn is_path(path: &str) -> bool {
    let Some(first) = path.chars().next() else {
        return false;
    };
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let spaced = path.contains(char::is_whitespace);
    !first.is_ascii_digit()
        && !first.is_whitespace()
        && !name.is_empty()
        && !name.contains(char::is_whitespace)
        && (!spaced || name.len() < path.len())
}

/// A context line of a known path: `src/a.rs-13-text` → (`13`, `text`).
fn split_context<'a>(line: &'a str, path: &str) -> Option<(&'a str, &'a str)> {
    let rest = line.strip_prefix(path)?.strip_prefix('-')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    Some((rest.get(..digits)?, rest.get(digits..)?.strip_prefix('-')?))
}

/// Whether a line reads as a context line of some file (for the classifier, which sees
/// lines one at a time): a path, then `-digits-`.
pub(crate) fn looks_like_context(line: &str) -> bool {
    line.match_indices('-').any(|(i, _)| {
        let path = line.get(..i).unwrap_or_default();
        path.contains(['/', '.']) && is_path(path) && split_context(line, path).is_some()
    })
}

/// What one line of a listing is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Line<'a> {
    /// `path:12:text` (`sep` `:`) or a context line `path-12-text` (`sep` `-`).
    Numbered {
        path: &'a str,
        sep: char,
        num: &'a str,
        text: &'a str,
    },
    /// `path:text`.
    Plain {
        path: &'a str,
        text: &'a str,
    },
    Separator,
    Other,
}

impl<'a> Line<'a> {
    fn path(self) -> Option<&'a str> {
        match self {
            Line::Numbered { path, .. } | Line::Plain { path, .. } => Some(path),
            Line::Separator | Line::Other => None,
        }
    }

    fn is_match(self) -> bool {
        matches!(self, Line::Numbered { sep: ':', .. })
    }
}

/// Reads every row; a context line is read with the path of the nearest match line of its
/// block (the lines between two `--`), as `path-12-text` alone does not say where the
/// path ends.
fn parse(rows: &[Row]) -> Vec<Line<'_>> {
    let mut lines: Vec<Line> = rows
        .iter()
        .map(|row| {
            let text = row.text.as_str();
            if row.is_marker() {
                Line::Other
            } else if text == SEPARATOR {
                Line::Separator
            } else if let Some((path, num, text)) = split_numbered(text) {
                Line::Numbered {
                    path,
                    sep: ':',
                    num,
                    text,
                }
            } else if let Some((path, text)) = split_plain(text) {
                Line::Plain { path, text }
            } else {
                Line::Other
            }
        })
        .collect();
    let mut before: Vec<Option<&str>> = Vec::with_capacity(lines.len());
    let mut last = None;
    for line in &lines {
        match line {
            Line::Separator => last = None,
            l if l.is_match() => last = l.path(),
            _ => {}
        }
        before.push(last);
    }
    let mut next = None;
    for i in (0..lines.len()).rev() {
        let line = lines.get(i).copied().unwrap_or(Line::Other);
        match line {
            Line::Separator => next = None,
            l if l.is_match() => next = l.path(),
            Line::Plain { .. } | Line::Other if !rows.get(i).is_some_and(Row::is_marker) => {
                let text = rows.get(i).map_or("", |r| r.text.as_str());
                let known = [before.get(i).copied().flatten(), next];
                let context = known.into_iter().flatten().find_map(|path| {
                    let (num, text) = split_context(text, path)?;
                    Some(Line::Numbered {
                        path,
                        sep: '-',
                        num,
                        text,
                    })
                });
                if let (Some(context), Some(slot)) = (context, lines.get_mut(i)) {
                    *slot = context;
                }
            }
            _ => {}
        }
    }
    lines
}

/// Groups consecutive lines of one file. Light returns the rows unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    // a line that reads as a header as it was sent would take the lines below for its own
    if rows.iter().any(|r| counted_header(&r.text).is_some()) {
        return rows;
    }
    let aggressive = level == Level::Aggressive;
    let lines = parse(&rows);
    let mut out = Vec::with_capacity(rows.len());
    let mut i = 0;
    while i < rows.len() {
        let Some(path) = lines.get(i).and_then(|l| l.path()) else {
            out.extend(rows.get(i).cloned());
            i += 1;
            continue;
        };
        let same = |k: usize| lines.get(k).and_then(|l| l.path()) == Some(path);
        let mut end = i + 1;
        loop {
            if same(end) {
                end += 1;
            } else if lines.get(end) == Some(&Line::Separator)
                && matches!(lines.get(end + 1), Some(Line::Numbered { .. }))
                && same(end + 1)
            {
                end += 2;
            } else {
                break;
            }
        }
        let group = Group {
            path,
            rows: rows.get(i..end).unwrap_or_default(),
            lines: lines.get(i..end).unwrap_or_default(),
        };
        group.emit(&mut out, aggressive);
        i = end;
    }
    out
}

/// Consecutive lines of one file, `--` between its blocks included.
struct Group<'a> {
    path: &'a str,
    rows: &'a [Row],
    lines: &'a [Line<'a>],
}

impl Group<'_> {
    fn emit(&self, out: &mut Vec<Row>, aggressive: bool) {
        let numbered = self
            .lines
            .iter()
            .all(|l| matches!(l, Line::Numbered { .. } | Line::Separator));
        let plain = self
            .lines
            .iter()
            .all(|l| matches!(l, Line::Plain { .. } | Line::Numbered { sep: ':', .. }));
        if numbered {
            self.emit_numbered(out, aggressive);
        } else if plain {
            self.emit_plain(out);
        } else {
            out.extend_from_slice(self.rows);
        }
    }

    /// `path (4 lines):`, then `12:text`, `13-text`, `-text`, `--`.
    fn emit_numbered(&self, out: &mut Vec<Row>, aggressive: bool) {
        if let ([row], [line]) = (self.rows, self.lines) {
            // one line says its path as it was; at Aggressive its text may be cut
            match *line {
                Line::Numbered { sep, num, text, .. } if aggressive => out.push(Row::plain(
                    format!("{}{sep}{num}{sep}{}", self.path, clip(text, true)),
                )),
                _ => out.push(row.clone()),
            }
            return;
        }
        let mut grouped = vec![Row::plain(String::new())];
        let mut elided = Elided::default();
        let mut above: Option<u64> = None;
        // the first line of the file with each text, for a line that says it again
        let mut said: HashMap<&str, &str> = HashMap::new();
        for (k, line) in self.lines.iter().enumerate() {
            let short = match *line {
                Line::Numbered { sep, num, text, .. } => {
                    let n = counts_from(num);
                    let next = above.zip(n).is_some_and(|(a, n)| n == a + 1);
                    above = n;
                    let first = *said.entry(text).or_insert(num);
                    let ditto;
                    let text = if !aggressive && first != num && text.len() >= MIN_DITTO {
                        ditto = format!("{SAME_AS}{first})");
                        ditto.as_str()
                    } else {
                        text
                    };
                    // `--` is the separator: a context line of `-` keeps its number
                    if sep == '-' && next && text != "-" {
                        format!("-{}", clip(text, aggressive))
                    } else {
                        format!("{num}{sep}{}", clip(text, aggressive))
                    }
                }
                _ => {
                    above = None;
                    SEPARATOR.to_owned()
                }
            };
            if aggressive && k >= MAX_MATCHES_PER_FILE {
                elided.push(Row::plain(short));
            } else {
                grouped.push(Row::plain(short));
            }
        }
        let counted = grouped.len() - 1;
        if let Some(head) = grouped.first_mut() {
            *head = Row::plain(header(self.path, counted));
        }
        // the marker comes after the lines the header counts
        elided.flush(&mut grouped, |n| {
            format!("{} in this file elided", count(n, "match", "matches"))
        });
        if aggressive {
            out.append(&mut grouped);
        } else {
            keep_if_exact(out, grouped, self.rows);
        }
    }

    /// `path (3 lines):`, then each line's text.
    fn emit_plain(&self, out: &mut Vec<Row>) {
        if self.rows.len() < 2 {
            out.extend_from_slice(self.rows);
            return;
        }
        let prefix = self.path.len() + 1;
        let mut grouped = vec![Row::plain(header(self.path, self.rows.len()))];
        grouped.extend(
            self.rows
                .iter()
                .map(|r| Row::plain(r.text.get(prefix..).unwrap_or_default())),
        );
        keep_if_exact(out, grouped, self.rows);
    }
}

/// Pushes the grouped rows if every expander gives the original rows back from them, else
/// the original rows: a match's text may itself look like another room's grouping.
fn keep_if_exact(out: &mut Vec<Row>, grouped: Vec<Row>, original: &[Row]) {
    // the find listing's expansion ends every line with a newline
    let expanded = super::expand_bare(&join(&grouped));
    if expanded.strip_suffix('\n').unwrap_or(&expanded) == join(original) {
        out.extend(grouped);
    } else {
        out.extend_from_slice(original);
    }
}

/// At Aggressive, cuts a very long matched line (minified code) to its first characters.
fn clip(text: &str, aggressive: bool) -> String {
    if !aggressive || text.chars().count() <= MAX_MATCH_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX_MATCH_CHARS).collect();
    let rest = text.chars().count() - MAX_MATCH_CHARS;
    format!("{cut}[… {} elided …]", count(rest, "char", "chars"))
}

/// The line naming a group's file and counting its lines below: `path (12 lines):`.
fn header(path: &str, lines: usize) -> String {
    format!("{path} ({lines} lines):")
}

/// `path (12 lines):` → (`path`, 12).
fn counted_header(line: &str) -> Option<(&str, usize)> {
    let (path, n) = line.strip_suffix(" lines):")?.rsplit_once(" (")?;
    let n: usize = n.parse().ok()?;
    (n >= 2 && !path.is_empty() && !path.starts_with(' ')).then_some((path, n))
}

/// A line number a context line below may count on from: written plainly (`7`, not
/// `007`, which a count would not give back).
fn counts_from(num: &str) -> Option<u64> {
    num.parse()
        .ok()
        .filter(|_| num.len() == 1 || !num.starts_with('0'))
}

/// A line of a numbered group: `12:text`, `13-text`, `-text` (the line after the one above)
/// or `--`, with its number where it says one and its separator.
fn body(rest: &str) -> Option<Body<'_>> {
    if rest == SEPARATOR {
        return Some(Body::Separator);
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match (rest.as_bytes().get(digits), digits) {
        (Some(&sep @ (b':' | b'-')), 1..) => Some(Body::Numbered {
            num: rest.get(..digits)?,
            sep: char::from(sep),
            text: rest.get(digits + 1..)?,
        }),
        (Some(b'-'), 0) => Some(Body::Next(rest.get(1..)?)),
        _ => None,
    }
}

/// A line under a `path` header, read.
enum Body<'a> {
    Separator,
    Numbered {
        num: &'a str,
        sep: char,
        text: &'a str,
    },
    /// A context line that says no number: the line after the one above.
    Next(&'a str),
}

/// The texts of a file's lines by number, as [`expand`] gives them back: a line written
/// `(same as 155)` gets line 155's text again (one it does not hold is left as written).
#[derive(Default)]
struct Said(HashMap<String, String>);

impl Said {
    fn again(&mut self, num: String, text: &str) -> String {
        let earlier = text
            .strip_prefix(SAME_AS)
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(|first| self.0.get(first));
        let text = earlier.map_or_else(|| text.to_owned(), Clone::clone);
        self.0.entry(num).or_insert_with(|| text.clone());
        text
    }
}

/// Undoes the grouping: the lines a `path (N lines):` header counts become `path:12:text`
/// / `path-12-text` / `--` again where every one reads as a numbered group's (the first
/// saying its number), else `path:text`. A `dir/` header is `find`'s ([`super::listing`]).
pub fn expand(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while let Some(&line) = lines.get(i) {
        i += 1;
        let counted = counted_header(line).and_then(|(path, n)| {
            let below = lines.get(i..i + n).filter(|b| b.len() == n)?;
            Some((path, below))
        });
        let Some((path, below)) = counted else {
            out.push(line.to_owned());
            continue;
        };
        i += below.len();
        match numbered(path, below) {
            Some(lines) => out.extend(lines),
            None => out.extend(below.iter().map(|l| format!("{path}:{l}"))),
        }
    }
    out.join("\n")
}

/// A numbered group's lines back, or `None` when `below` is not one: a line that reads as
/// no numbered line's short form, or a first line without its number.
fn numbered(path: &str, below: &[&str]) -> Option<Vec<String>> {
    if !matches!(
        below.first().and_then(|l| body(l)),
        Some(Body::Numbered { .. })
    ) {
        return None;
    }
    // the number of the line above, for a context line that says none
    let mut above: Option<u64> = None;
    let mut said = Said::default();
    below
        .iter()
        .map(|line| match body(line)? {
            Body::Separator => {
                above = None;
                Some(SEPARATOR.to_owned())
            }
            Body::Numbered { num, sep, text } => {
                above = counts_from(num);
                let text = said.again(num.to_owned(), text);
                Some(format!("{path}{sep}{num}{sep}{text}"))
            }
            Body::Next(text) => {
                let n = above? + 1;
                above = Some(n);
                let text = said.again(n.to_string(), text);
                Some(format!("{path}-{n}-{text}"))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::rows;

    #[test]
    fn numbered_lines_split_into_path_number_and_text() {
        assert_eq!(
            split_numbered("src/a.rs:12:    let x = a::b;"),
            Some(("src/a.rs", "12", "    let x = a::b;"))
        );
        assert_eq!(
            split_numbered("vendor libs/a.rs:3:x"),
            Some(("vendor libs/a.rs", "3", "x"))
        );
        assert_eq!(
            split_numbered(r"C:\src\a.rs:7:x"),
            Some((r"C:\src\a.rs", "7", "x"))
        );
        assert_eq!(split_numbered("no match here"), None);
        assert_eq!(split_numbered("12:30:01 started"), None);
        assert_eq!(split_numbered("started at 12:30:01"), None);
        assert_eq!(split_numbered("key: value 12:30:01"), None);
    }

    #[test]
    fn plain_lines_need_a_file_like_path() {
        assert_eq!(
            split_plain("src/a.rs:fn a() {}"),
            Some(("src/a.rs", "fn a() {}"))
        );
        assert_eq!(split_plain(r"C:\src\a.rs:x"), Some((r"C:\src\a.rs", "x")));
        assert_eq!(split_plain("key: value"), None);
        assert_eq!(split_plain("https://example.com/x"), None);
        assert_eq!(split_plain("12:30:01 started"), None);
        assert_eq!(split_plain("./src:"), None);
        assert_eq!(split_plain("Caused by: java.io.IOException"), None);
        assert_eq!(split_plain("job 00/01 INFO worker: processed"), None);
        assert_eq!(split_plain("src/a.ts(8,62): error TS2322: Type"), None);
    }

    fn roundtrip(text: &str) -> String {
        let out = join(&compact(rows(text), Level::Standard));
        assert_eq!(expand(&out), text, "from:\n{out}");
        out
    }

    #[test]
    fn numbered_matches_group_under_their_file() {
        let out = roundtrip("src/a.rs:1:fn a() {}\nsrc/a.rs:9:fn b() {}\nsrc/b.rs:3:fn c() {}");
        assert_eq!(
            out,
            "src/a.rs (2 lines):\n1:fn a() {}\n9:fn b() {}\nsrc/b.rs:3:fn c() {}"
        );
    }

    /// `rg -n -C 1`: context lines before a file's first match are read with its path, and
    /// the `--` between two blocks of one file goes inside the group.
    #[test]
    fn context_blocks_group_with_their_separators() {
        let text = "src/a-b.rs-1-use x;\nsrc/a-b.rs:2:fn a() {}\nsrc/a-b.rs-3-}\n--\nsrc/a-b.rs-9-\nsrc/a-b.rs:10:fn b() {}\n--\nsrc/c.rs-4-x\nsrc/c.rs:5:fn c() {}";
        let out = roundtrip(text);
        assert_eq!(
            out,
            "src/a-b.rs (6 lines):\n1-use x;\n2:fn a() {}\n-}\n--\n9-\n10:fn b() {}\n--\nsrc/c.rs (2 lines):\n4-x\n5:fn c() {}"
        );
    }

    /// `rg` piped prints no line numbers: the header counts the file's lines.
    #[test]
    fn unnumbered_matches_group_under_a_counted_header() {
        let text = "src/a.rs:fn a() {}\nsrc/a.rs:    fn b() {}\nsrc/b.rs:fn c() {}";
        let out = roundtrip(text);
        assert_eq!(
            out,
            "src/a.rs (2 lines):\nfn a() {}\n    fn b() {}\nsrc/b.rs:fn c() {}"
        );
    }

    /// A text repeated on the next line is folded by the shared passes with its count,
    /// which the expansion gives back before the group's.
    #[test]
    fn repeated_texts_in_a_group_come_back() {
        let text = "a.rs:x\na.rs:    let value = compute_the_thing();\na.rs:    let value = compute_the_thing();\na.rs:z";
        let out = crate::compact::compact(text, Level::Standard).unwrap();
        assert_eq!(
            out,
            "a.rs (4 lines):\nx\n    let value = compute_the_thing();\n[… line repeated 2 times …]\nz"
        );
        assert_eq!(crate::compact::expand_listings(&out).trim_end(), text);
    }

    /// Lines that only look like listings, and texts that look like another room's
    /// grouping, pass as sent or come back exactly.
    #[test]
    fn look_alikes_pass_or_come_back_exactly() {
        for text in [
            "name: web\nimage: nginx:1.25\nports: 80:8080",
            "https://example.com/a\nhttps://example.com/b\nhttps://example.com/c",
            "12:30:01 start\n12:30:02 stop\n12:30:03 done",
            "a.rs:v{1,2,3}\na.rs:v{4,5}\na.rs:├── x",
            "a.rs:{a,b}\na.rs:x{a,b}",
            "x.py:12:first\nx.py:foo\nx.py:13:second",
            "a.rs:1:x\n--\nb.rs-2-y\nb.rs:3:z",
            "src/a.rs:1:a single match",
            "rg: ./secret: Permission denied (os error 13)\nsrc/a.rs:1:x\nsrc/a.rs:2:y",
        ] {
            roundtrip(text);
        }
    }

    /// Real `grep`/`rg` outputs: `rg` piped (no line numbers), `rg -n` with colours forced,
    /// `rg -n -C 2` over code and over a changelog whose lines open with `-`, `grep -rn`
    /// under a directory with a blank in its name.
    const FIXTURES: &[(&str, &str)] = &[
        ("rg_plain", include_str!("fixtures/rg_plain.txt")),
        ("rg_n_color", include_str!("fixtures/rg_n_color.txt")),
        ("rg_context", include_str!("fixtures/rg_context.txt")),
        (
            "rg_context_changelog",
            include_str!("fixtures/rg_context_changelog.txt"),
        ),
        (
            "grep_spaced_path",
            include_str!("fixtures/grep_spaced_path.txt"),
        ),
        ("grep_rn", include_str!("fixtures/grep_rn.txt")),
    ];

    /// The lines an agent saw: escapes gone, `\r` and trailing blanks dropped (as the
    /// compactor's cleaning does before anything else).
    fn seen(text: &str) -> Vec<String> {
        let clean = crate::compact::strip_escapes(text);
        clean
            .trim_end()
            .lines()
            .map(|l| l.trim_end().to_owned())
            .collect()
    }

    fn expanded(out: &str) -> Vec<String> {
        let text = crate::compact::expand_listings(out);
        text.trim_end().lines().map(str::to_owned).collect()
    }

    /// By default every real listing is classified as one, comes out shorter, the same
    /// each time, and expands back to every line it had, in order.
    #[test]
    fn real_listings_round_trip_by_default() {
        for (name, text) in FIXTURES {
            let cleaned = crate::compact::ansi::tidy(&crate::compact::strip_escapes(text));
            assert_eq!(
                crate::compact::classify::classify(&cleaned),
                crate::compact::classify::Kind::Grep,
                "{name}"
            );
            let out = crate::compact::compact(text, Level::Auto).unwrap();
            assert!(out.len() * 10 < text.len() * 9, "{name} saved little");
            assert_eq!(
                crate::compact::compact(text, Level::Auto),
                Some(out.clone())
            );
            assert_eq!(expanded(&out), seen(text), "{name}:\n{out}");
        }
    }

    /// A line whose text an earlier line of the same file has says that line's number
    /// instead; a short one, and the same text in another file, are said again.
    #[test]
    fn a_line_said_again_in_a_file_names_the_first() {
        let call = "    let afd_a = unsafe { AsyncFd::register(a) }.unwrap();";
        let text = format!("tests/a.rs:155:{call}\ntests/a.rs:156:    x();\ntests/a.rs:173:{call}\ntests/a.rs:174:    x();\ntests/a.rs-175-{call}\ntests/b.rs:9:{call}\ntests/b.rs:12:{call}\n");
        let out = crate::compact::compact(&text, Level::Auto).unwrap();
        assert_eq!(
            out,
            format!("tests/a.rs (5 lines):\n155:{call}\n156:    x();\n173:(same as 155)\n174:    x();\n-(same as 155)\ntests/b.rs (2 lines):\n9:{call}\n12:(same as 9)")
        );
        assert_eq!(expanded(&out), seen(&text));
    }

    /// `rg --heading` already says each path once: it passes, or comes back exactly.
    #[test]
    fn heading_listings_come_back_exactly() {
        let text = include_str!("fixtures/rg_heading.txt");
        let out = crate::compact::compact(text, Level::Auto).unwrap_or_else(|| text.into());
        assert_eq!(expanded(&out), seen(text));
    }

    /// Lines from Windows (`\r\n`, drive letters) group like any other.
    #[test]
    fn crlf_and_drive_letters_round_trip() {
        let text = "C:\\src\\a.rs:1:fn a() {}\r\nC:\\src\\a.rs:2:fn b() {}\r\nC:\\src\\b.rs:fn c() {}\r\nC:\\src\\b.rs:fn d() {}\r\n";
        let out = crate::compact::compact(text, Level::Auto).unwrap();
        assert_eq!(
            out,
            "C:\\src\\a.rs (2 lines):\n1:fn a() {}\n2:fn b() {}\nC:\\src\\b.rs (2 lines):\nfn c() {}\nfn d() {}"
        );
        assert_eq!(expanded(&out), seen(text));
    }

    /// Output that is mostly something else keeps its few match-like lines as they were.
    #[test]
    fn a_log_with_a_few_match_like_lines_is_not_a_listing() {
        let text =
            "Compiling app\nsrc/a.rs:1:x\nsrc/a.rs:2:y\nFinished in 2s\nRunning tests\nok\ndone\n";
        let cleaned = crate::compact::ansi::tidy(text);
        assert_ne!(
            crate::compact::classify::classify(&cleaned),
            crate::compact::classify::Kind::Grep
        );
    }

    fn generated_line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let path = prop::sample::select(vec![
            "src/a.rs",
            "src/a-b.rs",
            "vendor libs/x.rs",
            "C:\\x\\y.rs",
            "a.rs",
        ]);
        let text = prop_oneof![
            "[ -~]{0,16}",
            prop::sample::select(vec![
                "{a,b}",
                "v1.{0,1}",
                "├── x",
                "  12:foo",
                "--",
                "[… line repeated 2 times …]",
                "x (2 lines):",
                "-",
                "- item",
                "",
                "    let afd_a = unsafe { AsyncFd::register(a) }.unwrap();",
                "(same as 12)",
                "(same as 1)",
            ])
            .prop_map(str::to_owned),
        ];
        let number = 1u32..400;
        prop_oneof![
            4 => (path.clone(), number.clone(), text.clone())
                .prop_map(|(p, n, t)| format!("{p}:{n}:{t}")),
            2 => (path.clone(), number.clone(), text.clone()).prop_map(|(p, n, t)| format!("{p}-{n}-{t}")),
            // a block of context lines that count up, a match among them
            2 => (path.clone(), number, 1u32..6, 0u32..6, text.clone()).prop_map(|(p, n, k, m, t)| {
                (0..k)
                    .map(|j| format!("{p}{sep}{}{sep}{t}", n + j, sep = if j == m { ':' } else { '-' }))
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
            3 => (path, text).prop_map(|(p, t)| format!("{p}:{t}")),
            1 => Just("--".to_owned()),
            1 => "[!-~][ -~]{0,16}",
        ]
    }

    proptest::proptest! {
        /// Any mix of match, context, unnumbered and other lines, their texts looking like
        /// another room's grouping or not: the listing comes back exactly. (Lines that an
        /// expander reads as a grouping as they were sent cannot: they are left out.)
        #[test]
        fn generated_listings_round_trip(lines in proptest::collection::vec(generated_line(), 1..30)) {
            let fixed = |l: &String| crate::compact::expand_listings(l).trim_end() == l.trim_end();
            proptest::prop_assume!(lines.iter().all(fixed));
            let text = lines.join("\n");
            proptest::prop_assume!(fixed(&text));
            let cleaned = crate::compact::ansi::tidy(&text);
            let grep = crate::compact::classify::classify(&cleaned) == crate::compact::classify::Kind::Grep;
            if let Some(out) = crate::compact::compact(&text, Level::Standard).filter(|_| grep) {
                proptest::prop_assert_eq!(expanded(&out), seen(cleaned.trim_start_matches('\n')));
            }
        }
    }
}

//! JSON tables. Machine JSON repeats its keys: `cargo metadata` names `"name"`,
//! `"version"`, `"source"`… again in every package and every dependency, `git log` as JSON
//! in every commit. Where an array holds objects whose keys come in one order, the keys are
//! written once and each object becomes one line of its values; an object whose values are
//! all such objects (`package-lock.json`'s `packages`, `npm ls --json`'s `dependencies`)
//! likewise, each line led by its own key:
//!
//! ```text
//! {"packages":[3 × {"name","version","license"}
//!  "serde","1.0.219","MIT OR Apache-2.0"
//!  "memchr","2.7.4",
//!  "libc","0.2.172","MIT OR Apache-2.0"
//! ],"deps":{2 × {"version","dev"}
//!  "node_modules/a":"1.0.0",true
//!  "node_modules/b":"2.1.0",
//! }}
//! ```
//!
//! Every cell is the value's JSON text as written (numbers digit for digit, strings with
//! their escapes), so a delimiter inside a string is inside quotes and cannot be misread;
//! an empty cell is a key that object does not have; a cell may hold a table of its own,
//! indented under its row. An item that cannot be a row (not an object; an object with a
//! key said twice, out of the header's order, or rare) keeps its own JSON on its line: one
//! value where rows have two cells or more. Minified JSON holds no line break, so every
//! line break in the text is the table's. [`expand`] gives the minified document back byte
//! for byte.
//!
//! An array of many names (strings that are all versions, tags, paths: `npm view <pkg>
//! --json`'s `versions`) is written in the brace form of [`super::versions`] instead, under
//! a header that counts them (`[3478 names:`), one run of names a line.
//!
//! An object of many strings that all end alike (`npm view <pkg> --json`'s `time`: each
//! version's date, every one ending `000+00:00`) is written one member a line under a
//! header that says the ending once (`{3478 values ending "000+00:00":`), each value
//! without it.
//!
//! A table or names form is written only where it costs fewer o200k tokens than the
//! minified array, so a document where none pays stays exactly as [`super::json::minify`]
//! left it.

use std::borrow::Cow;

use super::json::{is_json, skip_string, skip_value};
use super::versions;

/// Deeper than this, a value is copied as written: the walk's recursion stays bounded
/// whatever the input (serde_json, which checked the document, stops at 128).
const MAX_DEPTH: usize = 64;

/// A table's columns at most: a wider "table" is a map of names, not records.
const MAX_COLUMNS: usize = 64;

/// A key in fewer than one object in this many is rare: objects that have it keep their
/// own JSON.
const RARE_KEY: usize = 8;

/// Rows measured to decide whether a table pays: every row costs about the same, and a
/// long array's first rows tell without tokenizing it whole.
const MEASURED_ROWS: usize = 48;

/// Between a table's row count and its keys.
const TIMES: &str = " × {";

/// The fewest strings an array of names holds: fewer leave too little to group.
const MIN_NAMES: usize = 16;

/// Between an array of names' count and its lines.
const NAMES: &str = " names:";

/// Between a map's count and the suffix its string values share.
const ENDING: &str = " values ending \"";

/// The shortest suffix worth saying once.
const MIN_SUFFIX: usize = 4;

/// Around each line of an array of names (a name, or a run as `stem{a,b,c}`).
const NAME_QUOTE: &str = "\"";

/// How far a table's rows are indented under the line that opens it: one space, which
/// o200k merges with a row's opening quote (a second space would cost a token a line).
const INDENT: &str = " ";

/// A value of the minified document, as spans of its text.
enum Node<'a> {
    /// A string, number or literal, or a value nested too deep to look into: as written.
    Text(&'a str),
    Array(Vec<Node<'a>>),
    /// Members in document order, each key with its quotes; repeated keys stay repeated.
    Object(Vec<(&'a str, Node<'a>)>),
}

/// Rewrites minified JSON with tables where they pay; `None` where none does (or the
/// text is not the minified JSON the walk expects).
pub(crate) fn tabulate(min: &str) -> Option<String> {
    let (node, end) = parse(min, 0, 0)?;
    if end != min.len() {
        return None;
    }
    let written = write(&node);
    written.tables.then_some(written.text)
}

fn parse(s: &str, i: usize, depth: usize) -> Option<(Node<'_>, usize)> {
    let open = *s.as_bytes().get(i)?;
    if depth >= MAX_DEPTH || !matches!(open, b'[' | b'{') {
        let end = skip_value(s, i)?;
        return Some((Node::Text(s.get(i..end)?), end));
    }
    let close = if open == b'[' { b']' } else { b'}' };
    let mut j = i + 1;
    let mut items = Vec::new();
    let mut members = Vec::new();
    if s.as_bytes().get(j) == Some(&close) {
        j += 1;
    } else {
        loop {
            if open == b'{' {
                let key_end = skip_string(s, j)?;
                let key = s.get(j..key_end)?;
                if s.as_bytes().get(key_end) != Some(&b':') {
                    return None;
                }
                let (value, end) = parse(s, key_end + 1, depth + 1)?;
                members.push((key, value));
                j = end;
            } else {
                let (value, end) = parse(s, j, depth + 1)?;
                items.push(value);
                j = end;
            }
            match *s.as_bytes().get(j)? {
                b',' => j += 1,
                b if b == close => {
                    j += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    let node = if open == b'[' {
        Node::Array(items)
    } else {
        Node::Object(members)
    };
    Some((node, j))
}

/// A value written out, and what a table made of its parent needs of it.
struct Written<'a> {
    text: String,
    /// An object's members, each value written: the cells it gives as a table's row.
    members: Option<Vec<(&'a str, String)>>,
    /// Whether a table was written anywhere inside.
    tables: bool,
}

/// Writes a value, each array and object in whichever form costs fewer tokens. Children
/// are written first, so a table's cells hold their own tables already.
fn write<'a>(node: &Node<'a>) -> Written<'a> {
    match node {
        Node::Text(t) => Written {
            text: (*t).to_string(),
            members: None,
            tables: false,
        },
        Node::Array(items) => {
            if let Some(text) = names(items) {
                return Written {
                    text,
                    members: None,
                    tables: true,
                };
            }
            let items: Vec<Written<'a>> = items.iter().map(write).collect();
            let rows: Vec<Item<'_, 'a>> = items
                .iter()
                .map(|w| Item {
                    key: None,
                    text: &w.text,
                    members: w.members.as_deref(),
                })
                .collect();
            let (text, table) = best(&rows, Brackets::ARRAY);
            Written {
                text,
                members: None,
                tables: table || items.iter().any(|w| w.tables),
            }
        }
        Node::Object(fields) => {
            if let Some(text) = suffixed(fields) {
                return Written {
                    text,
                    members: None,
                    tables: true,
                };
            }
            let values: Vec<(&'a str, Written<'a>)> =
                fields.iter().map(|(k, v)| (*k, write(v))).collect();
            let rows: Vec<Item<'_, 'a>> = values
                .iter()
                .map(|(k, w)| Item {
                    key: Some(k),
                    text: &w.text,
                    members: w.members.as_deref(),
                })
                .collect();
            let (text, table) = best(&rows, Brackets::OBJECT);
            let tables = table || values.iter().any(|(_, w)| w.tables);
            Written {
                text,
                members: Some(values.into_iter().map(|(k, w)| (k, w.text)).collect()),
                tables,
            }
        }
    }
}

/// An array of many strings in the brace form of [`versions`](super::versions), if it
/// costs fewer tokens than the minified array:
///
/// ```text
/// [5 names:
///  "1.0.{0,1,2}"
///  "2.0.0-rc.1"
///  "2.0.0"
/// ]
/// ```
///
/// Each name is its JSON text between the quotes (escapes as written), so it comes back
/// exactly; an array holding a string the brace form cannot carry (empty, or with a brace,
/// comma, quote or space in it) or anything but strings stays minified.
fn names(items: &[Node<'_>]) -> Option<String> {
    if items.len() < MIN_NAMES {
        return None;
    }
    let names = items
        .iter()
        .map(|item| match item {
            Node::Text(t) => t
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .filter(|name| !name.is_empty() && name.chars().all(versions::plain_char)),
            _ => None,
        })
        .collect::<Option<Vec<&str>>>()?;
    let between = format!("\n{INDENT}");
    let lines = versions::group(&names, NAME_QUOTE, NAME_QUOTE, &between);
    let mut text = format!("[{}{NAMES}", names.len());
    for line in &lines {
        text.push_str(&between);
        text.push_str(line);
    }
    text.push_str("\n]");
    let minified = format!("[\"{}\"]", names.join("\",\""));
    (count(&text) < count(&minified)).then_some(text)
}

/// An object of many strings sharing an ending of [`MIN_SUFFIX`] bytes or more, one member
/// a line with the ending said once, if that costs fewer tokens than the minified object:
///
/// ```text
/// {3 values ending "000+00:00":
///  "1.0.0":"2024-12-04T23:43:07.011"
///  "1.0.1":"2025-10-02T01:25:48.254"
///  "1.1.0":"2026-01-17T00:08:29.158"
/// }
/// ```
///
/// A value with an escape in it, or one that is all ending, leaves the object as it was.
fn suffixed(fields: &[(&str, Node<'_>)]) -> Option<String> {
    if fields.len() < MIN_NAMES {
        return None;
    }
    let values = fields
        .iter()
        .map(|(_, v)| match v {
            Node::Text(t) => t
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .filter(|t| !t.contains('\\')),
            _ => None,
        })
        .collect::<Option<Vec<&str>>>()?;
    let first = *values.first()?;
    let mut len = first.len();
    for v in &values[1..] {
        len = first
            .bytes()
            .rev()
            .zip(v.bytes().rev())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
    }
    // Whole chars, and a value keeps something of its own.
    while len > 0 && !first.is_char_boundary(first.len() - len) {
        len -= 1;
    }
    let ending = first.get(first.len() - len..)?;
    if len < MIN_SUFFIX || values.iter().any(|v| v.len() == len) {
        return None;
    }
    let mut text = format!("{{{}{ENDING}{ending}\":", fields.len());
    let mut minified = String::from("{");
    for (n, ((key, _), value)) in fields.iter().zip(&values).enumerate() {
        text.push('\n');
        text.push_str(INDENT);
        text.push_str(key);
        text.push_str(":\"");
        text.push_str(value.get(..value.len() - len)?);
        text.push('"');
        if n > 0 {
            minified.push(',');
        }
        minified.push_str(key);
        minified.push_str(":\"");
        minified.push_str(value);
        minified.push('"');
    }
    text.push_str("\n}");
    minified.push('}');
    (count(&text) < count(&minified)).then_some(text)
}

#[derive(Clone, Copy)]
struct Brackets {
    open: char,
    close: char,
}

impl Brackets {
    const ARRAY: Brackets = Brackets {
        open: '[',
        close: ']',
    };
    const OBJECT: Brackets = Brackets {
        open: '{',
        close: '}',
    };
}

/// An array's item or an object's member, written.
struct Item<'r, 'a> {
    /// The member's key, with its quotes (none for an array's item).
    key: Option<&'r str>,
    text: &'r str,
    /// Its members, if it is an object: the cells of its row.
    members: Option<&'r [(&'a str, String)]>,
}

/// How one item is written in a table.
enum Line {
    /// One cell per column.
    Cells,
    /// The item's own JSON: not an object, or an object whose keys the header cannot give
    /// (out of its order, said twice, none).
    Own,
}

/// The container of `items` in whichever form costs fewer tokens, and whether that is a
/// table.
fn best(items: &[Item<'_, '_>], b: Brackets) -> (String, bool) {
    let plain = || {
        let mut out = String::with_capacity(items.iter().map(|i| i.text.len() + 8).sum());
        out.push(b.open);
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            push_item(&mut out, item, false);
        }
        out.push(b.close);
        out
    };
    match table(items, b) {
        Some(table) => (table, true),
        None => (plain(), false),
    }
}

fn push_item(out: &mut String, item: &Item<'_, '_>, cut: bool) {
    if let Some(key) = item.key {
        out.push_str(key);
        out.push(':');
    }
    match (cut, item.members) {
        (true, Some(members)) => {
            out.push('{');
            for (n, (k, v)) in members.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(k);
                out.push(':');
                out.push_str(&ends(v));
            }
            out.push('}');
        }
        (true, None) => out.push_str(&ends(item.text)),
        (false, _) => out.push_str(item.text),
    }
}

/// The table form of a container of `items`, if it costs fewer tokens than the minified.
fn table(items: &[Item<'_, '_>], b: Brackets) -> Option<String> {
    let (keys, lines) = header(items)?;
    let head = format!("{}{}{TIMES}{}}}", b.open, items.len(), keys.join(","));
    let whole = assemble(&head, items, &keys, &lines, b, false);
    let minified: usize = items
        .iter()
        .map(|i| i.key.map_or(0, |k| k.len() + 1) + i.text.len() + 1)
        .sum::<usize>()
        + 1;
    if whole.len() >= minified {
        return None;
    }
    // Measured on the first rows, long values cut to their ends: the values are the same
    // in both forms, and where they meet what is around them is what can differ.
    let n = items.len().min(MEASURED_ROWS);
    let some = items.get(..n)?;
    let table = assemble(&head, some, &keys, lines.get(..n)?, b, true);
    let mut plain = String::new();
    plain.push(b.open);
    for (i, item) in some.iter().enumerate() {
        if i > 0 {
            plain.push(',');
        }
        push_item(&mut plain, item, true);
    }
    plain.push(b.close);
    (count(&table) < count(&plain)).then_some(whole)
}

fn count(text: &str) -> u64 {
    trimgate_wire::tokenizer::count(text)
}

/// Longer values are measured by their ends only.
const CUT_ABOVE: usize = 96;
const CUT_KEEP: usize = 40;

/// `text`, or its first and last bytes if it is long (at character boundaries).
fn ends(text: &str) -> Cow<'_, str> {
    if text.len() <= CUT_ABOVE {
        return Cow::Borrowed(text);
    }
    let mut head = CUT_KEEP;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - CUT_KEEP;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Cow::Owned(format!(
        "{}{}",
        text.get(..head).unwrap_or(""),
        text.get(tail..).unwrap_or("")
    ))
}

/// The table's text: its head, a line per item, the closing bracket.
fn assemble(
    head: &str,
    items: &[Item<'_, '_>],
    keys: &[&str],
    lines: &[Line],
    b: Brackets,
    cut: bool,
) -> String {
    let mut out =
        String::with_capacity(head.len() + items.iter().map(|i| i.text.len()).sum::<usize>());
    out.push_str(head);
    let mut line = String::new();
    for (item, kind) in items.iter().zip(lines) {
        line.clear();
        match (kind, item.members) {
            (Line::Cells, Some(members)) => {
                if let Some(key) = item.key {
                    line.push_str(key);
                    line.push(':');
                }
                let mut members = members.iter().peekable();
                for (i, key) in keys.iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    if let Some((_, value)) = members.next_if(|(k, _)| k == key) {
                        if cut {
                            line.push_str(&ends(value));
                        } else {
                            line.push_str(value);
                        }
                    }
                }
            }
            _ => push_item(&mut line, item, cut),
        }
        out.push('\n');
        out.push_str(INDENT);
        // a nested table's lines go one step further in
        for (i, part) in line.split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
                out.push_str(INDENT);
            }
            out.push_str(part);
        }
    }
    out.push('\n');
    out.push(b.close);
    out
}

/// The columns: the keys common enough among the objects in `items`, in an order each
/// row's keys follow, and how each item is written. An object with a rare key is written
/// as its own JSON rather than giving every row an empty cell for it. `None` unless at
/// least two items are rows of cells, and, where some are not, there are two columns or
/// more (a line of one value would read as either).
fn header<'a>(items: &[Item<'_, 'a>]) -> Option<(Vec<&'a str>, Vec<Line>)> {
    let objects = items.iter().filter(|i| i.members.is_some()).count();
    if objects < 2 {
        return None;
    }
    // Key counts, in order of first sight (columns are few; a list is quicker than a map).
    let mut seen: Vec<(&'a str, usize)> = Vec::new();
    for members in items.iter().filter_map(|i| i.members) {
        for (key, _) in members {
            match seen.iter().position(|(k, _)| k == key) {
                Some(p) => seen[p].1 += 1,
                None if seen.len() < 4 * MAX_COLUMNS => seen.push((key, 1)),
                None => return None,
            }
        }
    }
    let common = |key: &str| {
        seen.iter()
            .any(|(k, n)| *k == key && *n >= 2 && *n * RARE_KEY >= objects)
    };
    let mut keys: Vec<&'a str> = Vec::new();
    let mut lines = Vec::with_capacity(items.len());
    let mut cells = 0usize;
    for item in items {
        let fits = item
            .members
            .is_some_and(|m| m.iter().all(|(k, _)| common(k)) && merge(&mut keys, m));
        cells += usize::from(fits);
        lines.push(if fits { Line::Cells } else { Line::Own });
    }
    let ok = cells >= 2 && (cells == items.len() || keys.len() >= 2);
    ok.then_some((keys, lines))
}

/// Adds an object's keys to the columns; `false` (columns unchanged) if its keys cannot
/// follow them: out of their order, said twice, none, or too many columns.
fn merge<'a>(keys: &mut Vec<&'a str>, members: &[(&'a str, String)]) -> bool {
    if members.is_empty() {
        return false;
    }
    let mut merged = keys.clone();
    let mut at = 0;
    for (key, _) in members {
        match merged.iter().position(|k| k == key) {
            Some(p) if p >= at => at = p + 1,
            Some(_) => return false,
            None => {
                merged.insert(at, key);
                at += 1;
            }
        }
    }
    if merged.len() > MAX_COLUMNS {
        return false;
    }
    *keys = merged;
    true
}

/// The minified JSON back in place of every table document in `text` (one that opens at
/// the start of a line and ends at the end of one); everything else as it was.
pub(crate) fn expand(text: &str) -> Cow<'_, str> {
    if !text.contains(TIMES) && !text.contains(NAMES) && !text.contains(ENDING) {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < text.len() {
        let line_end = text
            .get(at..)
            .and_then(|r| r.find('\n'))
            .map_or(text.len(), |e| at + e);
        if let Some((json, end)) = expand_at(text, at) {
            out.push_str(text.get(copied..at).unwrap_or(""));
            out.push_str(&json);
            copied = end;
            at = end;
        } else {
            at = line_end;
        }
        at += 1;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(text.get(copied..).unwrap_or(""));
    Cow::Owned(out)
}

/// The document starting at `at`, expanded, and where it ends: only if it holds a table,
/// ends a line, and comes back as valid JSON.
fn expand_at(text: &str, at: usize) -> Option<(String, usize)> {
    if !matches!(text.as_bytes().get(at), Some(b'[' | b'{')) {
        return None;
    }
    let mut reader = Reader { s: text, tables: 0 };
    let mut out = String::new();
    let end = reader.value(at, 0, &mut out)?;
    let ends_line = matches!(text.as_bytes().get(end), None | Some(b'\n'));
    (ends_line && reader.tables > 0 && is_json(&out)).then_some((out, end))
}

/// Reads a document with tables, writing it back as minified JSON.
struct Reader<'a> {
    s: &'a str,
    tables: usize,
}

impl Reader<'_> {
    fn byte(&self, i: usize) -> Option<u8> {
        self.s.as_bytes().get(i).copied()
    }

    /// The value at `i` into `out`; returns its end.
    fn value(&mut self, i: usize, depth: usize, out: &mut String) -> Option<usize> {
        if depth > 2 * MAX_DEPTH {
            return None;
        }
        match self.byte(i)? {
            open @ (b'[' | b'{') => {
                if let Some(end) = self.table(i, depth, out) {
                    return Some(end);
                }
                if let Some(end) = self.names(i, out) {
                    return Some(end);
                }
                if let Some(end) = self.suffixed(i, out) {
                    return Some(end);
                }
                let close = if open == b'[' { b']' } else { b'}' };
                out.push(char::from(open));
                let mut j = i + 1;
                if self.byte(j)? == close {
                    out.push(char::from(close));
                    return Some(j + 1);
                }
                loop {
                    if open == b'{' {
                        j = self.string(j, out)?;
                        if self.byte(j)? != b':' {
                            return None;
                        }
                        out.push(':');
                        j += 1;
                    }
                    j = self.value(j, depth + 1, out)?;
                    match self.byte(j)? {
                        b',' => out.push(','),
                        b if b == close => {
                            out.push(char::from(close));
                            return Some(j + 1);
                        }
                        _ => return None,
                    }
                    j += 1;
                }
            }
            b'"' => self.string(i, out),
            _ => {
                let rest = self.s.get(i..)?;
                let len = rest.find([',', ']', '}', '\n', ' ']).unwrap_or(rest.len());
                if len == 0 {
                    return None;
                }
                out.push_str(rest.get(..len)?);
                Some(i + len)
            }
        }
    }

    fn string(&self, i: usize, out: &mut String) -> Option<usize> {
        if self.byte(i)? != b'"' {
            return None;
        }
        let end = skip_string(self.s, i)?;
        let s = self.s.get(i..end)?;
        if s.contains('\n') {
            return None;
        }
        out.push_str(s);
        Some(end)
    }

    /// `N` and `label` right after the bracket at `i`: the count, and where the label ends.
    fn counted(&self, i: usize, label: &str) -> Option<(usize, usize)> {
        let rest = self.s.get(i + 1..)?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: usize = rest.get(..digits)?.parse().ok()?;
        let labelled = rest.get(digits..)?.starts_with(label);
        labelled.then_some((n, i + 1 + digits + label.len()))
    }

    /// Past the line break at `j` and the indentation after it.
    fn next_line(&self, j: usize) -> Option<usize> {
        if self.byte(j)? != b'\n' {
            return None;
        }
        let mut j = j + 1;
        while self.byte(j)? == b' ' {
            j += 1;
        }
        Some(j)
    }

    /// Past `close` alone on the line after `j` (indented or not).
    fn closed(&self, j: usize, close: u8) -> Option<usize> {
        let j = self.next_line(j)?;
        (self.byte(j)? == close).then_some(j + 1)
    }

    /// An array of names at `i` (`[N names:`, its lines, its closing bracket) into `out`
    /// as minified JSON; `None` if there is none or its lines hold other than N names.
    fn names(&mut self, i: usize, out: &mut String) -> Option<usize> {
        let (expected, mut j) = self.counted(i, NAMES)?;
        if expected == 0 {
            return None;
        }
        let mut array = String::from("[");
        let mut seen = 0usize;
        // The count says where the names end: a name may be `]` itself.
        while seen < expected {
            j = self.next_line(j)?;
            let rest = self.s.get(j..)?;
            let line = rest.get(..rest.find('\n')?)?;
            let inner = line
                .strip_prefix(NAME_QUOTE)
                .and_then(|l| l.strip_suffix(NAME_QUOTE))?;
            let (stem, parts) = match inner.split_once('{') {
                Some((stem, parts)) if !stem.is_empty() => {
                    (stem, versions::parts(parts.strip_suffix('}')?))
                }
                None if !inner.contains(',') => ("", vec![inner.into()]),
                _ => return None,
            };
            for part in &parts {
                let plain = |s: &str| s.chars().all(versions::plain_char);
                if part.is_empty() || !plain(part) || !plain(stem) || seen >= expected {
                    return None;
                }
                if seen > 0 {
                    array.push(',');
                }
                seen += 1;
                array.push('"');
                array.push_str(stem);
                array.push_str(part);
                array.push('"');
            }
            j += line.len();
        }
        let end = self.closed(j, b']')?;
        array.push(']');
        out.push_str(&array);
        self.tables += 1;
        Some(end)
    }

    /// An object of values said without their shared ending at `i` (`{N values ending
    /// "…":`, N lines of `"key":"value"`, its closing brace) into `out` as minified JSON;
    /// `None` if there is none or its lines are not N such members.
    fn suffixed(&mut self, i: usize, out: &mut String) -> Option<usize> {
        if self.byte(i)? != b'{' {
            return None;
        }
        let (expected, mut j) = self.counted(i, ENDING)?;
        let after = self.s.get(j..)?;
        let ending = after.get(..after.find('"')?)?;
        if expected == 0 || ending.len() < MIN_SUFFIX || ending.contains(['\\', '\n']) {
            return None;
        }
        j += ending.len();
        if self.s.get(j..)?.get(..2)? != "\":" {
            return None;
        }
        j += 2;
        let mut object = String::from("{");
        for n in 0..expected {
            j = self.next_line(j)?;
            if n > 0 {
                object.push(',');
            }
            j = self.string(j, &mut object)?;
            if self.byte(j)? != b':' {
                return None;
            }
            object.push(':');
            let mut value = String::new();
            j = self.string(j + 1, &mut value)?;
            object.push_str(value.strip_suffix('"')?);
            object.push_str(ending);
            object.push('"');
        }
        let end = self.closed(j, b'}')?;
        object.push('}');
        out.push_str(&object);
        self.tables += 1;
        Some(end)
    }

    /// A table at `i` (`[N × {keys}` or `{N × {keys}`, its rows, its closing bracket) into
    /// `out` as minified JSON; `None` if there is none.
    fn table(&mut self, i: usize, depth: usize, out: &mut String) -> Option<usize> {
        let open = self.byte(i)?;
        let close = if open == b'[' { b']' } else { b'}' };
        let (rows, mut j) = self.counted(i, TIMES)?;
        let mut keys: Vec<&str> = Vec::new();
        loop {
            let end = self.string(j, &mut String::new())?;
            keys.push(self.s.get(j..end)?);
            j = end;
            match self.byte(j)? {
                b',' => j += 1,
                b'}' => break,
                _ => return None,
            }
        }
        if self.byte(j + 1)? != b'\n' {
            return None;
        }
        j += 2;
        let mut body = String::new();
        body.push(char::from(open));
        let mut seen = 0usize;
        loop {
            while self.byte(j)? == b' ' {
                j += 1;
            }
            if self.byte(j)? == close {
                j += 1;
                break;
            }
            if seen > 0 {
                body.push(',');
            }
            seen += 1;
            if open == b'{' {
                j = self.string(j, &mut body)?;
                if self.byte(j)? != b':' {
                    return None;
                }
                body.push(':');
                j += 1;
            }
            // A line of one value, where a row has two cells or more, is the item's own.
            if keys.len() >= 2 && !matches!(self.byte(j)?, b',' | b'\n') {
                let mut own = String::new();
                let end = self.value(j, depth + 1, &mut own)?;
                if self.byte(end)? == b'\n' {
                    body.push_str(&own);
                    j = end + 1;
                    continue;
                }
            }
            body.push('{');
            let mut present = 0usize;
            for (c, key) in keys.iter().enumerate() {
                if c > 0 {
                    if self.byte(j)? != b',' {
                        return None;
                    }
                    j += 1;
                }
                if matches!(self.byte(j)?, b',' | b'\n') {
                    continue;
                }
                if present > 0 {
                    body.push(',');
                }
                present += 1;
                body.push_str(key);
                body.push(':');
                j = self.value(j, depth + 1, &mut body)?;
            }
            if present == 0 || self.byte(j)? != b'\n' {
                return None;
            }
            body.push('}');
            j += 1;
        }
        if seen != rows {
            return None;
        }
        body.push(char::from(close));
        out.push_str(&body);
        self.tables += 1;
        Some(j)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::json::minify;
    use super::super::{compact, expand_listings, Level};
    use super::*;

    const CARGO_METADATA: &str = include_str!("fixtures/cargo_metadata.txt");
    const GIT_LOG: &str = include_str!("fixtures/git_log.json");
    const NPM_LS: &str = include_str!("fixtures/npm_ls.json");
    const PACKAGE_LOCK: &str = include_str!("fixtures/package_lock.json");
    const PIP_LIST: &str = include_str!("fixtures/pip_list.json");
    /// `npm view typescript --json`, its `versions` cut to the first 300 and its `time` to
    /// the first 10.
    const NPM_VIEW: &str = include_str!("fixtures/npm_view_typescript.json");

    /// Tables where they pay, and the minified document back from them exactly.
    fn round_trip(text: &str) -> Option<String> {
        let min = minify(text);
        let table = tabulate(&min)?;
        assert_eq!(expand(&table), min, "from:\n{table}");
        Some(table)
    }

    fn records(n: usize) -> String {
        let items: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{{\"name\": \"crate-{i}\", \"version\": \"0.{i}.0\", \"license\": \"MIT OR Apache-2.0\", \"optional\": false}}"
                )
            })
            .collect();
        format!(
            "{{\"packages\": [{}], \"version\": 1}}",
            items.join(",\n  ")
        )
    }

    #[test]
    fn an_array_of_records_becomes_a_table_and_comes_back() {
        let table = round_trip(&records(12)).unwrap();
        assert!(
            table.starts_with(
                "{\"packages\":[12 × {\"name\",\"version\",\"license\",\"optional\"}\n \"crate-0\",\"0.0.0\",\"MIT OR Apache-2.0\",false\n \"crate-1\","
            ),
            "{table}"
        );
        assert!(table.ends_with("\n],\"version\":1}"), "{table}");
    }

    /// An object whose values are records is a table too, each line led by its key; a key
    /// an object lacks is an empty cell.
    #[test]
    fn a_map_of_records_becomes_a_table_with_empty_cells_for_missing_keys() {
        let rows: Vec<String> = (0..10)
            .map(|i| {
                let dev = if i % 2 == 0 { ",\"dev\":true" } else { "" };
                format!(
                    "\"node_modules/p{i}\":{{\"version\":\"1.{i}.0\"{dev},\"license\":\"MIT\"}}"
                )
            })
            .collect();
        let table = round_trip(&format!("{{\"packages\":{{{}}}}}", rows.join(","))).unwrap();
        assert!(
            table.contains("{10 × {\"version\",\"dev\",\"license\"}\n \"node_modules/p0\":\"1.0.0\",true,\"MIT\"\n \"node_modules/p1\":\"1.1.0\",,\"MIT\"\n"),
            "{table}"
        );
    }

    /// Every value keeps its text: numbers as written, strings with their escapes and with
    /// what looks like the table's own delimiters and header inside them.
    #[test]
    fn values_keep_their_exact_text() {
        let values = [
            "12345678901234567890123456789",
            "1e400",
            "-0.0",
            "1.50",
            "\"a,b\\nc\\\"d\"",
            "\"[3 × {\\\"x\\\"}\"",
            "\"caf\\u00e9 ×\"",
            "\"\\\\\"",
            "null",
            "{\"nested\":[1,{\"deep\":\"x\"}]}",
            "[]",
            "{}",
        ];
        let items: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{{\"id\":{i},\"value\":{v},\"note\":\"same text each time\"}}"))
            .collect();
        let table = round_trip(&format!("[{}]", items.join(","))).unwrap();
        for v in values {
            assert!(table.contains(&format!(",{v},")), "{v} in:\n{table}");
        }
    }

    /// Objects that cannot be rows keep their own JSON on a line of their own: a repeated
    /// key (serde_json would keep one), keys out of the header's order, a rare key, no
    /// keys, and items that are not objects.
    #[test]
    fn items_that_cannot_be_rows_keep_their_own_json() {
        let mut items: Vec<String> = (0..10)
            .map(|i| format!("{{\"name\":\"n{i}\",\"size\":{i},\"kind\":\"file\"}}"))
            .collect();
        let odd = [
            "{\"name\":\"dup\",\"name\":\"again\",\"size\":1,\"kind\":\"file\"}",
            "{\"size\":2,\"name\":\"swapped\",\"kind\":\"file\"}",
            "{\"name\":\"rare\",\"size\":3,\"kind\":\"file\",\"once\":true}",
            "{}",
            "\"[… 25 of 50 items elided …]\"",
            "42",
            "[1,2]",
        ];
        for (i, o) in odd.iter().enumerate() {
            items.insert(1 + i, (*o).to_string());
        }
        let table = round_trip(&format!("[{}]", items.join(","))).unwrap();
        assert!(
            table.starts_with("[17 × {\"name\",\"size\",\"kind\"}\n"),
            "{table}"
        );
        for o in odd {
            assert!(table.contains(&format!("\n {o}\n")), "{o} in:\n{table}");
        }
    }

    /// Rows whose values hold arrays of records hold tables of their own, indented under
    /// them, and come back whole.
    #[test]
    fn nested_tables_are_indented_under_their_row() {
        let packages: Vec<String> = (0..8)
            .map(|p| {
                let deps: Vec<String> = (0..5)
                    .map(|d| format!("{{\"name\":\"dep-{d}\",\"req\":\"^{d}.0\",\"kind\":null,\"optional\":false}}"))
                    .collect();
                format!("{{\"name\":\"pkg-{p}\",\"dependencies\":[{}],\"edition\":\"2021\"}}", deps.join(","))
            })
            .collect();
        let table = round_trip(&format!("[{}]", packages.join(","))).unwrap();
        assert!(
            table.contains("\n \"pkg-0\",[5 × {\"name\",\"req\",\"kind\",\"optional\"}\n  \"dep-0\",\"^0.0\",null,false\n"),
            "{table}"
        );
        assert!(
            table.contains("\n  \"dep-4\",\"^4.0\",null,false\n ],\"2021\"\n"),
            "{table}"
        );
    }

    /// Where no table pays, the text is what minification made of it, byte for byte.
    #[test]
    fn where_no_table_pays_the_minified_text_stays() {
        let cases = [
            "[]",
            "{}",
            "[{\"a\":1},{\"b\":2}]",
            "[1,2,3,\"x\",null]",
            "[{\"only\":\"one record\"}]",
            "{\"a\":{\"x\":1},\"b\":{\"y\":2}}",
            "[[{\"a\":1}],[{\"a\":2}]]",
        ];
        for text in cases {
            assert_eq!(tabulate(text), None, "{text}");
            assert_eq!(
                compact(&format!("{text}{}", " ".repeat(64)), Level::Auto).as_deref(),
                Some(text)
            );
        }
    }

    /// A document nested deeper than the walk looks is copied as written below that depth,
    /// and what is above still becomes a table.
    #[test]
    fn deep_nesting_is_copied_as_written() {
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        let items: Vec<String> = (0..6)
            .map(|i| format!("{{\"id\":{i},\"deep\":{deep},\"tag\":\"t\"}}"))
            .collect();
        let table = round_trip(&format!("[{}]", items.join(","))).unwrap();
        assert!(table.contains(&deep));
        let deeper = format!("{}{}{}", "[".repeat(70), items.join(","), "]".repeat(70));
        let table = round_trip(&deeper);
        assert!(table.is_none(), "a table below the depth the walk looks at");
    }

    /// `expand` leaves alone text that only looks like a table, and text around a table.
    #[test]
    fn expand_touches_only_tables() {
        for text in [
            "src/a.rs:3: let x = [3 × {\"a\"}\n]",
            "[2 × {\"a\",\"b\"}\n  1,2\n]",
            "[2 × {\"a\",\"b\"}\n  1,2\n  ,\n]",
            "plain log line\n",
        ] {
            assert_eq!(expand(text), text);
        }
        let table = tabulate(&minify(&records(4))).unwrap();
        let around = format!("  Downloaded x v1\n{table}\n[… see the original …]");
        assert_eq!(
            expand(&around),
            format!(
                "  Downloaded x v1\n{}\n[… see the original …]",
                minify(&records(4))
            )
        );
    }

    /// Real outputs: fewer tokens than minified (by at least the share given), the same
    /// document back, the same bytes every time.
    #[test]
    fn real_documents_shrink_and_come_back() {
        for (name, text, saved) in [
            ("git log", GIT_LOG, 5),
            ("npm ls", NPM_LS, 5),
            ("package-lock", PACKAGE_LOCK, 5),
            ("pip list", PIP_LIST, 15),
        ] {
            let out = compact(text, Level::Auto).unwrap();
            assert_eq!(compact(text, Level::Auto).as_deref(), Some(out.as_str()));
            // read with the legend's strings put back, as the expanded view does
            let read = super::super::legend::expand(&out);
            assert_eq!(expand(&read), minify(text), "{name}");
            let (before, after) = (count(&minify(text)), count(&out));
            assert!(
                after * 100 < before * (100 - saved),
                "{name}: {before} → {after}"
            );
        }
    }

    /// `cargo metadata` after cargo's status lines: the lines compact as a build log, the
    /// document as a document, and the document comes back from the expanded view.
    #[test]
    fn a_document_after_status_lines_becomes_tables() {
        let out = compact(CARGO_METADATA, Level::Auto).unwrap();
        assert!(out.starts_with("¹ = "), "{out}");
        let out = super::super::legend::expand(&out);
        assert!(out.starts_with(" Downloading crates ...\n"), "{out}");
        assert!(
            out.contains("\n{\"packages\":[5 × {\"name\",\"version\",\"id\","),
            "{out}"
        );
        let doc = CARGO_METADATA
            .get(CARGO_METADATA.find("\n{").unwrap() + 1..)
            .unwrap();
        assert!(expand_listings(&out).contains(&minify(doc)));
    }

    /// Inside an agent's wrapper (Codex's JSON string), the document becomes tables as it
    /// would bare, and comes back from the expanded view.
    #[test]
    fn a_wrapped_document_becomes_tables() {
        let wrapped = format!(
            "{{\"output\":{},\"metadata\":{{\"exit_code\":0,\"duration_seconds\":0.3}}}}",
            serde_json::to_string(PIP_LIST).unwrap()
        );
        let out = compact(&wrapped, Level::Auto).unwrap();
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        let inner = value["output"].as_str().unwrap();
        assert!(
            inner.starts_with("[94 × {\"name\",\"version\"}\n"),
            "{inner}"
        );
        assert_eq!(expand_listings(&out).trim_end(), minify(PIP_LIST));
    }

    /// `{"versions":[…]}` with the given names, as JSON strings.
    fn versions_doc(names: &[String]) -> String {
        format!("{{\"name\":\"x\",\"versions\":[{}]}}", names.join(","))
    }

    fn quoted(names: impl IntoIterator<Item = String>) -> Vec<String> {
        names.into_iter().map(|n| format!("\"{n}\"")).collect()
    }

    /// `npm view typescript --json`: the versions inside the document are grouped in brace
    /// form under a header that counts them, the rest stays minified, and the expanded view
    /// gives the minified document back, the same each time.
    #[test]
    fn a_real_array_of_versions_is_grouped_and_comes_back() {
        let out = compact(NPM_VIEW, Level::Auto).unwrap();
        assert_eq!(
            compact(NPM_VIEW, Level::Auto).as_deref(),
            Some(out.as_str())
        );
        assert!(
            out.contains(
                "\"versions\":[300 names:\n \"0.8.{0,1-1,1..3}\"\n \"0.9.{0-1,0,1-1,1,5,7}\"\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("\"keywords\":[\"TypeScript\",\"Microsoft\","),
            "{out}"
        );
        let min = minify(NPM_VIEW);
        assert_eq!(expand(&out), min);
        assert_eq!(expand_listings(&out).trim_end(), min);
        let (before, after) = (count(&min), count(&out));
        assert!(after * 100 < before * 75, "{before} → {after}");
    }

    /// `npm view --json`'s `time`: each version's date, all ending alike. The ending is said
    /// once, each member keeps its line, and the document comes back minified.
    #[test]
    fn a_map_of_dates_says_their_ending_once() {
        let members: Vec<String> = (0..40)
            .map(|i| {
                format!(
                    "\"1.{i}.0\":\"2025-{:02}-{:02}T0{}:12:35.{i:03}000+00:00\"",
                    i % 12 + 1,
                    i % 28 + 1,
                    i % 10
                )
            })
            .collect();
        let doc = format!(
            "{{\"name\":\"x\",\"time\":{{{}}},\"license\":\"MIT\"}}",
            members.join(",")
        );
        let out = tabulate(&doc).unwrap();
        assert!(out.contains("\"time\":{40 values ending \"000+00:00\":\n \"1.0.0\":\"2025-01-01T00:12:35.000\"\n"), "{out}");
        assert_eq!(expand(&out), doc);
        assert_eq!(tabulate(&doc), Some(out.clone()));
        assert!(count(&out) < count(&doc));
    }

    /// A value with an escape, a value that is all ending, too few members, a short
    /// ending, or a value that is not a string: the object stays as it was.
    #[test]
    fn maps_that_cannot_say_an_ending_once_stay() {
        let map = |f: &dyn Fn(usize) -> String, n: usize| {
            let members: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{}", f(i))).collect();
            format!("{{\"m\":{{{}}}}}", members.join(","))
        };
        for doc in [
            map(
                &|i| {
                    if i == 3 {
                        "\"a\\\"b.tar.gz\"".into()
                    } else {
                        format!("\"pkg-{i}.tar.gz\"")
                    }
                },
                20,
            ),
            map(
                &|i| {
                    if i == 3 {
                        "\".tar.gz\"".into()
                    } else {
                        format!("\"pkg-{i}.tar.gz\"")
                    }
                },
                20,
            ),
            map(&|i| format!("\"pkg-{i}.tar.gz\""), 15),
            map(&|i| format!("\"pkg-{i}.gz\""), 20),
            map(
                &|i| {
                    if i == 3 {
                        "7".into()
                    } else {
                        format!("\"pkg-{i}.tar.gz\"")
                    }
                },
                20,
            ),
        ] {
            let out = tabulate(&doc);
            assert!(
                !out.as_deref().unwrap_or_default().contains(ENDING),
                "{out:?}"
            );
            assert_eq!(expand(&doc), doc);
        }
    }

    /// Sixteen strings are an array of names; fifteen are too few to group.
    #[test]
    fn sixteen_strings_are_names_and_fifteen_are_not() {
        let names = |n: usize| quoted((0..n).map(|i| format!("1.0.{i}")));
        let sixteen = round_trip(&versions_doc(&names(16))).unwrap();
        assert!(
            sixteen.contains("[16 names:\n \"1.0.{0..15}\"\n]"),
            "{sixteen}"
        );
        assert_eq!(round_trip(&versions_doc(&names(15))), None);
    }

    /// An array holding a string the brace form cannot carry (a quote, a brace, a comma,
    /// a space, or nothing), or anything but strings, stays minified.
    #[test]
    fn arrays_the_brace_form_cannot_carry_stay_minified() {
        for odd in [
            "\"say \\\"hi\\\"\"",
            "\"a{b\"",
            "\"c}\"",
            "\"1.0,1\"",
            "\"two words\"",
            "\"no-break\u{a0}space\"",
            "\"\"",
            "7",
            "null",
            "[\"1.0.0\"]",
            "{\"v\":\"1.0.0\"}",
        ] {
            let mut names = quoted((0..40).map(|i| format!("1.0.{i}")));
            names.insert(20, odd.to_string());
            let doc = versions_doc(&names);
            assert!(is_json(&doc), "{doc}");
            assert_eq!(round_trip(&doc), None, "{odd}");
        }
    }

    /// Names keep their JSON text: escapes as written, and names that read like the
    /// header or the closing bracket.
    #[test]
    fn names_with_escapes_and_lookalikes_come_back() {
        let mut names = quoted((0..30).map(|i| format!("v2.{i}.0")));
        for (at, odd) in [
            (3, "caf\\u00e9-1.0"),
            (8, "back\\\\slash"),
            (9, "line\\nbreak"),
            (12, "]"),
            (13, "[3"),
            (14, "names:"),
            (15, "×-1.0"),
            (20, "v2.1.0"),
        ] {
            names.insert(at, format!("\"{odd}\""));
        }
        let table = round_trip(&versions_doc(&names)).unwrap();
        assert!(table.contains("[38 names:\n"), "{table}");
        assert!(table.contains("\n \"]\"\n \"[3\"\n"), "{table}");
        assert!(table.contains("\"caf\\u00e9-1.0\""), "{table}");
    }

    /// Arrays of names inside a table's cells are indented under their row and come back.
    #[test]
    fn names_inside_a_table_row_are_indented_under_it() {
        let packages: Vec<String> = (0..6)
            .map(|p| {
                let tags = quoted((0..20).map(|t| format!("release/{p}.{t}")));
                format!(
                    "{{\"name\":\"pkg-{p}\",\"tags\":[{}],\"edition\":\"2021\"}}",
                    tags.join(",")
                )
            })
            .collect();
        let table = round_trip(&format!("[{}]", packages.join(","))).unwrap();
        assert!(
            table.contains("\n \"pkg-0\",[20 names:\n  \"release/0.{0..19}\"\n ],"),
            "{table}"
        );
        assert!(table.contains("}\"\n ],\"2021\"\n"), "{table}");
    }

    /// Documents without a long array of names come out as before: the real ones hold no
    /// names form, and arrays of strings that do not group stay minified.
    #[test]
    fn documents_without_names_arrays_are_unchanged() {
        for text in [CARGO_METADATA, GIT_LOG, NPM_LS, PACKAGE_LOCK, PIP_LIST] {
            let out = compact(text, Level::Auto).unwrap();
            assert!(!out.contains(NAMES), "{out}");
        }
        let words = quoted((0..30).map(|i| format!("w{i}")));
        let doc = versions_doc(&words);
        assert_eq!(tabulate(&doc), None);
        assert_eq!(
            compact(&format!("{doc}{}", " ".repeat(64)), Level::Auto).as_deref(),
            Some(doc.as_str())
        );
    }

    /// `expand` leaves alone what only looks like an array of names: a count the lines do
    /// not hold, a line without its quotes, a brace with nothing before it.
    #[test]
    fn expand_leaves_lookalike_names_alone() {
        for text in [
            "[3 names:\n \"1.0.{0,1}\"\n]",
            "[2 names:\n \"1.0.{0,1,2}\"\n]",
            "[2 names:\n 1.0.{0,1}\n]",
            "[2 names:\n \"{0,1}\"\n]",
            "[2 names:\n \"1.0.0,1.0.1\"\n]",
            "[0 names:\n]",
        ] {
            assert_eq!(expand(text), text);
        }
        assert_eq!(
            expand("[2 names:\n \"1.0.{0,1}\"\n]"),
            "[\"1.0.0\",\"1.0.1\"]"
        );
    }

    /// Records with keys drawn from a few, in varying order and subsets, with values of
    /// every kind.
    fn record() -> impl Strategy<Value = String> {
        let value = prop_oneof![
            Just("null".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            "[0-9]{1,30}(\\.[0-9]{1,5})?(e[+-]?[0-9]{1,3})?",
            "[ -~é×\\n\",]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            Just("[]".to_string()),
            Just("{\"k\":[1,\"x\"]}".to_string()),
        ];
        proptest::collection::vec((0usize..6, value), 0..6).prop_map(|members| {
            const KEYS: [&str; 6] = [
                "\"id\"",
                "\"name\"",
                "\"a,b\"",
                "\"x\\\"y\"",
                "\"\"",
                "\"×\"",
            ];
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}: {v}", KEYS[*k]))
                .collect();
            format!("{{{}}}", body.join(", "))
        })
    }

    fn document() -> impl Strategy<Value = String> {
        proptest::collection::vec(record(), 0..30).prop_flat_map(|records| {
            let array = format!("[{}]", records.join(",\n"));
            prop_oneof![
                Just(array.clone()),
                Just(format!(
                    "{{\"items\": {array}, \"nested\": [{array}, {array}]}}"
                )),
                Just(format!(
                    "{{{}}}",
                    records
                        .iter()
                        .enumerate()
                        .map(|(i, r)| format!("\"k{}\": {r}", i % 7))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Whatever the records, the tables give the minified document back, byte for byte,
        /// and the same input gives the same bytes.
        #[test]
        fn tables_give_the_minified_document_back(text in document()) {
            let min = minify(&text);
            prop_assume!(is_json(&min));
            let first = tabulate(&min);
            prop_assert_eq!(&first, &tabulate(&min));
            if let Some(table) = first {
                prop_assert_eq!(expand(&table), min);
            }
        }

        /// Whatever the strings of a map, its form with their ending said once gives them
        /// back exactly.
        #[test]
        fn endings_give_the_minified_document_back(
            values in proptest::collection::vec("[0-9a-c.\\-:+é\"\\\\ ]{0,6}(\\.tar\\.gz|000\\+00:00|é€x)", 14..24)
        ) {
            let members: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("\"k{i}\":{}", serde_json::to_string(v).unwrap()))
                .collect();
            let min = format!("{{\"time\":{{{}}}}}", members.join(","));
            let first = tabulate(&min);
            prop_assert_eq!(&first, &tabulate(&min));
            if let Some(table) = first {
                prop_assert_eq!(expand(&table), min);
            }
        }

        /// Whatever the strings in an array, its names form gives them back exactly.
        #[test]
        fn names_give_the_minified_document_back(
            names in proptest::collection::vec(
                prop_oneof![
                    6 => "[1-2]\\.[0-2]\\.[0-9]{1,2}(-rc\\.[0-9])?",
                    1 => "[0-9a-c.\\-/{},\\]\\[ ×é\"\\\\]{0,6}",
                ],
                0..40,
            )
        ) {
            let names: Vec<String> = names
                .iter()
                .map(|n| serde_json::to_string(n).unwrap())
                .collect();
            let min = versions_doc(&names);
            let first = tabulate(&min);
            prop_assert_eq!(&first, &tabulate(&min));
            if let Some(table) = first {
                prop_assert_eq!(expand(&table), min);
            }
        }
    }
}

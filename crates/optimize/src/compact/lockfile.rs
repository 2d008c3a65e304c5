//! Lock files read as text (`Cargo.lock`, `poetry.lock`): data, so every package, version
//! and checksum stays below Aggressive, and what repeats is rewritten so that [`expand`]
//! gives it back byte for byte.
//!
//! A Cargo.lock's `[[package]]` tables are written one package a row under a legend that
//! gives the row's form and says once the source most packages share; a row names its
//! source only where it is another one, or `(no source)` for a workspace member or path
//! dependency; each dependency string stays as Cargo wrote it:
//!
//! ```text
//! [[package]]
//! name = "anstyle-query"
//! version = "1.1.5"
//! source = "registry+https://github.com/rust-lang/crates.io-index"
//! checksum = "40c48f72fd53cd289104fc64099abca73db4166ad86ea0b4341abe65af83dadc"
//! dependencies = [
//!  "windows-sys 0.61.2",
//! ]
//!
//! [Cargo.lock packages, one a row: name version (source) checksum < dependency, …; source where none is given: "registry+https://github.com/rust-lang/crates.io-index"]
//! anstyle-query 1.1.5 40c48f72fd53cd289104fc64099abca73db4166ad86ea0b4341abe65af83dadc < windows-sys 0.61.2
//! ```
//!
//! A table in any other shape (another key, an escape, a dependency with a comma, a table
//! cut short) stays as it was, and so does everything outside the tables (the header,
//! `[[patch.unused]]`, an old file's `[metadata]`). Where no table fits a row, or the rows
//! would not cost fewer tokens, the shared `source = …` line is said once in a marker
//! naming the packages that lack it instead.
//!
//! A poetry `files = [ {file = "…", hash = "sha256:…"}, … ]` table is written one
//! `name hash` a line under a `files (file, sha256):` header, the start the names share
//! said once. At Aggressive the checksums and the wheel lists with their hashes go,
//! counted, and arrays one string a line are written on one line (the same TOML).
//!
//! `package-lock.json` is JSON and goes through [`super::json`].

use super::lines::{count, join, thousands, Elided, Row};
use super::Level;
use crate::tokens::estimate;

/// A `source = …` line shared by fewer packages than this is left where it is.
const MIN_SHARED_SOURCE: usize = 5;
/// Packages without the shared source are named in its marker; past this many the line
/// stays on every package.
const MAX_EXCEPTIONS: usize = 12;

/// The header of one package in a lock file.
pub(crate) const PACKAGE: &str = "[[package]]";

/// Compacts a lock file. Light returns the rows unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    if level == Level::Aggressive {
        return drop_hashes(inline_arrays(factor_source(rows)));
    }
    // A Cargo.lock's packages as rows say the shared source in their legend, so nothing
    // is elided and every line reads back; a table that will not fit a row stays whole.
    if let Some(tabulated) = tabulate_packages(&rows) {
        return tabulated;
    }
    // Arrays stay one string a line: written on one line they would not read back.
    tabulate_files(factor_source(rows))
}

/// The packages of a lock file: each one's name and its `source = …` line, if any.
fn packages(rows: &[Row]) -> Vec<(&str, Option<&str>)> {
    let mut out: Vec<(&str, Option<&str>)> = Vec::new();
    let mut in_package = false;
    for row in rows {
        let t = row.text.as_str();
        if t.starts_with('[') {
            in_package = t == PACKAGE;
            if in_package {
                out.push(("", None));
            }
            continue;
        }
        let Some(last) = out.last_mut().filter(|_| in_package) else {
            continue;
        };
        if let Some(name) = t.strip_prefix("name = ") {
            last.0 = name.trim_matches('"');
        } else if t.starts_with("source = ") {
            last.1 = Some(t);
        }
    }
    out
}

/// Says the `source = …` line most packages share once, at the first package.
fn factor_source(rows: Vec<Row>) -> Vec<Row> {
    let pkgs = packages(&rows);
    let mut tally: Vec<(&str, usize)> = Vec::new();
    for source in pkgs.iter().filter_map(|p| p.1) {
        match tally.iter_mut().find(|(s, _)| *s == source) {
            Some((_, n)) => *n += 1,
            None => tally.push((source, 1)),
        }
    }
    let Some(&(shared, n)) = tally.iter().max_by_key(|(_, n)| *n) else {
        return rows;
    };
    let without: Vec<&str> = pkgs.iter().filter(|p| p.1.is_none()).map(|p| p.0).collect();
    if n < MIN_SHARED_SOURCE || without.len() > MAX_EXCEPTIONS {
        return rows;
    }
    let others = if tally.len() > 1 {
        " or show their own"
    } else {
        ""
    };
    let exceptions = if without.is_empty() {
        String::new()
    } else {
        format!(" but {} (no source)", without.join(", "))
    };
    let body = format!(
        "{} `{shared}` elided: every package has it{exceptions}{others}",
        count(n, "line", "lines")
    );
    let shared = shared.to_string();
    let mut out = Vec::with_capacity(rows.len());
    let mut noted = false;
    for row in rows {
        if row.text == shared && !row.is_marker() {
            continue;
        }
        if !noted && row.text == PACKAGE {
            out.push(Row::marker(&body, n));
            noted = true;
        }
        out.push(row);
    }
    out
}

/// `dependencies = [` / ` "a",` / ` "b",` / `]` → `dependencies = ["a", "b"]`.
fn inline_arrays(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut iter = rows.into_iter().peekable();
    while let Some(row) = iter.next() {
        let Some(key) = row.text.strip_suffix(" = [").filter(|k| is_key(k)) else {
            out.push(row);
            continue;
        };
        let mut items: Vec<Row> = Vec::new();
        while let Some(next) = iter.peek() {
            let item = next.text.trim();
            let quoted = item.len() >= 3
                && item.starts_with('"')
                && item.ends_with("\",")
                && !item[1..item.len() - 2].contains(['"', '\\']);
            if !quoted || next.is_marker() {
                break;
            }
            items.extend(iter.next());
        }
        let closed = iter.peek().is_some_and(|r| r.text == "]");
        if items.is_empty() || !closed {
            out.push(row);
            out.extend(items);
            continue;
        }
        iter.next();
        let list: Vec<&str> = items
            .iter()
            .map(|r| r.text.trim().trim_end_matches(','))
            .collect();
        out.push(Row::plain(format!("{key} = [{}]", list.join(", "))));
    }
    out
}

/// A bare TOML key.
fn is_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Opens the legend of a run of package rows: the row's form. Where the legend goes on to
/// name a source, a row that gives none has that one; `(no source)` is said where there
/// is none.
const ROWS_OPEN: &str =
    "[Cargo.lock packages, one a row: name version (source) checksum < dependency, …";
/// Between the form and the source rows share, in the legend.
const SHARED_SOURCE: &str = "; source where none is given: \"";
/// What a row says for a package without a source (a workspace member, a path dependency)
/// when the legend names a shared one.
const NO_SOURCE: &str = "(no source)";
/// Between a row's package and its dependencies, and between two dependencies.
const DEPS_OPEN: &str = " < ";
const DEPS_SEP: &str = ", ";
/// A run of fewer packages than this stays as Cargo wrote it: the legend would not pay.
const MIN_ROWS: usize = 3;

/// One `[[package]]` table of a Cargo.lock, in the only shape a row can give back:
/// `name`, `version`, then optionally `source`, `checksum` and a `dependencies` array one
/// string a line, in that order, each value a plain string.
#[derive(Debug)]
struct Package<'a> {
    name: &'a str,
    version: &'a str,
    source: Option<&'a str>,
    checksum: Option<&'a str>,
    dependencies: Vec<&'a str>,
}

impl<'a> Package<'a> {
    /// Reads the table whose `[[package]]` line opens `rows`: the package and how many
    /// rows it takes. `None` when it holds anything a row could not give back (another
    /// key, an escape, a table left open) or is not followed by a blank line or the end.
    fn read(rows: &'a [Row]) -> Option<(Package<'a>, usize)> {
        let mut lines = rows
            .iter()
            .map_while(|r| (!r.is_marker()).then_some(r.text.as_str()));
        if lines.next()? != PACKAGE {
            return None;
        }
        let name = value(lines.next(), "name", is_name)?;
        let version = value(lines.next(), "version", is_version)?;
        let mut taken = 3;
        let mut next = lines.next();
        let source = value(next, "source", is_source);
        if source.is_some() {
            taken += 1;
            next = lines.next();
        }
        let checksum = value(next, "checksum", is_checksum);
        if checksum.is_some() {
            taken += 1;
            next = lines.next();
        }
        let mut dependencies = Vec::new();
        if next == Some("dependencies = [") {
            next = lines.next();
            while let Some(dep) = next
                .and_then(|l| l.strip_prefix(" \"")?.strip_suffix("\","))
                .filter(|d| is_dependency(d))
            {
                dependencies.push(dep);
                next = lines.next();
            }
            if dependencies.is_empty() || next != Some("]") {
                return None;
            }
            taken += dependencies.len() + 2;
            next = lines.next();
        }
        let ends = match next {
            None => rows.get(taken).is_none(),
            Some(line) => line.is_empty(),
        };
        ends.then_some((
            Package {
                name,
                version,
                source,
                checksum,
                dependencies,
            },
            taken,
        ))
    }

    /// The table's lines, as Cargo writes them.
    fn write_table(&self, out: &mut Vec<String>) {
        out.push(PACKAGE.to_string());
        out.push(format!("name = \"{}\"", self.name));
        out.push(format!("version = \"{}\"", self.version));
        if let Some(source) = self.source {
            out.push(format!("source = \"{source}\""));
        }
        if let Some(checksum) = self.checksum {
            out.push(format!("checksum = \"{checksum}\""));
        }
        if !self.dependencies.is_empty() {
            out.push("dependencies = [".to_string());
            out.extend(self.dependencies.iter().map(|d| format!(" \"{d}\",")));
            out.push("]".to_string());
        }
    }

    /// The package as one row, its source left out where it is the `shared` one.
    fn row(&self, shared: Option<&str>) -> String {
        let mut row = format!("{} {}", self.name, self.version);
        match (self.source, shared) {
            (Some(source), Some(shared)) if source == shared => {}
            (Some(source), _) => {
                row.push_str(" (");
                row.push_str(source);
                row.push(')');
            }
            (None, Some(_)) => {
                row.push(' ');
                row.push_str(NO_SOURCE);
            }
            (None, None) => {}
        }
        if let Some(checksum) = self.checksum {
            row.push(' ');
            row.push_str(checksum);
        }
        if !self.dependencies.is_empty() {
            row.push_str(DEPS_OPEN);
            row.push_str(&self.dependencies.join(DEPS_SEP));
        }
        row
    }

    /// Reads a row back, under a legend naming `shared` (or no source).
    fn parse_row(line: &'a str, shared: Option<&'a str>) -> Option<Package<'a>> {
        let (head, deps) = match line.split_once(DEPS_OPEN) {
            Some((head, deps)) => (head, deps.split(DEPS_SEP).collect::<Vec<_>>()),
            None => (line, Vec::new()),
        };
        if !deps.iter().all(|d| is_dependency(d)) {
            return None;
        }
        let (name, rest) = head.split_once(' ')?;
        let (version, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
        if !is_name(name) || !is_version(version) {
            return None;
        }
        let mut source = shared;
        if let Some(after) = rest.strip_prefix(NO_SOURCE).filter(|_| shared.is_some()) {
            source = None;
            rest = after.strip_prefix(' ').unwrap_or(after);
        } else if let Some(after) = rest.strip_prefix('(') {
            let (own, after) = after.split_once(')')?;
            if !is_source(own) || shared == Some(own) {
                return None;
            }
            source = Some(own);
            rest = after.strip_prefix(' ').unwrap_or(after);
        }
        let checksum = match rest {
            "" => None,
            hex if is_checksum(hex) => Some(hex),
            _ => return None,
        };
        // Only the line writing gives is a row (one blank between fields, the shared
        // source never said): a line has one reading, and reads back to one table.
        let written = Package {
            name,
            version,
            source,
            checksum,
            dependencies: deps,
        };
        (written.row(shared) == line).then_some(written)
    }
}

/// The value of a `key = "value"` line, where it is one a row can hold.
fn value<'a>(line: Option<&'a str>, key: &str, fits: fn(&str) -> bool) -> Option<&'a str> {
    let quoted = line?.strip_prefix(key)?.strip_prefix(" = \"")?;
    quoted.strip_suffix('"').filter(|v| fits(v))
}

/// A crate's name as Cargo allows it.
fn is_name(s: &str) -> bool {
    is_key(s)
}

/// A version: a digit first, then only what semver writes.
fn is_version(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
}

/// A checksum as Cargo writes it: sha256 in lowercase hex.
fn is_checksum(s: &str) -> bool {
    s.len() == 64 && is_hex(s)
}

/// A source a row can hold between parentheses: one word, no quote, escape or bracket.
fn is_source(s: &str) -> bool {
    !s.is_empty()
        && !s.contains(|c: char| {
            c.is_whitespace() || matches!(c, '"' | '\\' | '(' | ')' | '<' | ',')
        })
}

/// A dependency string a row can hold: `name`, `name version` or `name version (source)`,
/// as long as it has no comma (the row's separator), quote or escape.
fn is_dependency(s: &str) -> bool {
    !s.is_empty() && s.trim() == s && !s.contains(['"', '\\', ',', '<'])
}

/// The legend of a run of rows.
fn rows_legend(shared: Option<&str>) -> String {
    match shared {
        Some(source) => format!("{ROWS_OPEN}{SHARED_SOURCE}{source}\"]"),
        None => format!("{ROWS_OPEN}]"),
    }
}

/// Reads a legend back: `Some(shared source)`, which is `None` when it names none.
fn parse_rows_legend(line: &str) -> Option<Option<&str>> {
    let rest = line.strip_prefix(ROWS_OPEN)?.strip_suffix(']')?;
    if rest.is_empty() {
        return Some(None);
    }
    let source = rest.strip_prefix(SHARED_SOURCE)?.strip_suffix('"')?;
    is_source(source).then_some(Some(source))
}

/// Writes each run of Cargo.lock `[[package]]` tables one package a row under a legend
/// (see the module doc), where that reads back exactly and is shorter in tokens. `None`
/// when it does not, or the text holds no such run.
fn tabulate_packages(rows: &[Row]) -> Option<Vec<Row>> {
    // every table a row can give back: where it starts, the package, how many rows
    let mut tables: Vec<(usize, Package, usize)> = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        match rows.get(i..).and_then(Package::read) {
            Some((package, taken)) => {
                tables.push((i, package, taken));
                i += taken;
            }
            None => i += 1,
        }
    }
    // The source most packages share, said once in the legend; the first seen wins a tie.
    let mut tally: Vec<(&str, usize)> = Vec::new();
    for source in tables.iter().filter_map(|(_, p, _)| p.source) {
        match tally.iter_mut().find(|(s, _)| *s == source) {
            Some((_, n)) => *n += 1,
            None => tally.push((source, 1)),
        }
    }
    let mut shared: Option<(&str, usize)> = None;
    for &(source, n) in &tally {
        if shared.is_none_or(|(_, most)| n > most) {
            shared = Some((source, n));
        }
    }
    let shared = shared.map(|(source, _)| source);
    // runs: tables one blank line apart
    let mut runs: Vec<Vec<usize>> = Vec::new();
    for (k, (start, _, _)) in tables.iter().enumerate() {
        let follows = k
            .checked_sub(1)
            .and_then(|prev| tables.get(prev))
            .is_some_and(|(s, _, taken)| s + taken + 1 == *start);
        match runs.last_mut() {
            Some(run) if follows => run.push(k),
            _ => runs.push(vec![k]),
        }
    }
    runs.retain(|run| run.len() >= MIN_ROWS);
    if runs.is_empty() {
        return None;
    }
    let mut out: Vec<Row> = Vec::with_capacity(rows.len() / 4);
    let mut at = 0;
    for run in &runs {
        let (Some(&(first, _, _)), Some(&(last, _, taken))) = (
            run.first().and_then(|&k| tables.get(k)),
            run.last().and_then(|&k| tables.get(k)),
        ) else {
            continue;
        };
        out.extend(rows.get(at..first).unwrap_or_default().iter().cloned());
        out.push(Row::plain(rows_legend(shared)));
        for (_, package, _) in run.iter().filter_map(|&k| tables.get(k)) {
            out.push(Row::plain(package.row(shared)));
        }
        at = last + taken;
    }
    out.extend(rows.get(at..).unwrap_or_default().iter().cloned());
    let (before, after) = (join(rows), join(&out));
    (estimate(&after) < estimate(&before) && expand(&after) == before).then_some(out)
}

/// How a files table item is written in a lock file: `    {file = "…", hash = "…:…"},`.
const FILE_OPEN: &str = "    {file = \"";
const FILE_HASH: &str = "\", hash = \"";
const FILE_CLOSE: &str = "\"},";
/// Fewer files than this are written without their shared start.
const MIN_SHARED_START: usize = 3;

/// One files table item: (file name, hash algorithm, hash).
fn file_item(line: &str) -> Option<(&str, &str, &str)> {
    let body = line.strip_prefix(FILE_OPEN)?.strip_suffix(FILE_CLOSE)?;
    let (file, hash) = body.split_once(FILE_HASH)?;
    let (algorithm, hex) = hash.split_once(':')?;
    let plain = |s: &str| !s.is_empty() && !s.contains(['"', '\\', ' ', ':']);
    (plain(file) && is_key(algorithm) && is_hex(hex)).then_some((file, algorithm, hex))
}

fn is_hex(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The header of a files table in short: `files (file, sha256):`, or with the start every
/// name shares `files (file after "pydantic_core-2.33.2", sha256):`.
fn files_header(key: &str, start: &str, algorithm: &str) -> String {
    if start.is_empty() {
        format!("{key} (file, {algorithm}):")
    } else {
        format!("{key} (file after \"{start}\", {algorithm}):")
    }
}

/// Reads a files table header back: (key, shared start, algorithm).
fn parse_files_header(line: &str) -> Option<(&str, &str, &str)> {
    let (key, rest) = line.split_once(" (file")?;
    let rest = rest.strip_suffix("):")?;
    let (start, algorithm) = match rest.strip_prefix(" after \"") {
        Some(after) => after.split_once("\", ")?,
        None => ("", rest.strip_prefix(", ")?),
    };
    (is_key(key) && is_key(algorithm) && !start.contains('"')).then_some((key, start, algorithm))
}

/// Writes each files table one `name hash` a line (see the module doc), where that reads
/// back exactly and is shorter.
fn tabulate_files(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut i = 0;
    while let Some(row) = rows.get(i) {
        i += 1;
        let key = row.text.strip_suffix(" = [").filter(|k| is_key(k));
        let items: Vec<(&str, &str, &str)> = rows
            .get(i..)
            .unwrap_or_default()
            .iter()
            .map_while(|r| file_item(&r.text).filter(|_| !r.is_marker()))
            .collect();
        let closed = rows.get(i + items.len()).is_some_and(|r| r.text == "]");
        let algorithm = items.first().map(|(_, a, _)| *a);
        let one_algorithm = items.iter().all(|(_, a, _)| Some(*a) == algorithm);
        let (Some(key), Some(algorithm), true, true) = (key, algorithm, closed, one_algorithm)
        else {
            out.push(row.clone());
            continue;
        };
        let names: Vec<&str> = items.iter().map(|(f, _, _)| *f).collect();
        let start = shared_start(&names);
        out.push(Row::plain(files_header(key, start, algorithm)));
        for (file, _, hex) in &items {
            let rest = file.get(start.len()..).unwrap_or(file);
            out.push(Row::plain(format!("{rest} {hex}")));
        }
        i += items.len() + 1;
    }
    let (before, after) = (join(&rows), join(&out));
    if estimate(&after) < estimate(&before) && expand(&after) == before {
        out
    } else {
        rows
    }
}

/// The start all names share, when there are enough of them; every name goes on past it.
fn shared_start<'a>(names: &[&'a str]) -> &'a str {
    let (Some(first), Some(shortest)) = (names.first(), names.iter().map(|n| n.len()).min()) else {
        return "";
    };
    if names.len() < MIN_SHARED_START {
        return "";
    }
    let mut len = shortest.saturating_sub(1);
    for name in names {
        let same = first
            .bytes()
            .zip(name.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        len = len.min(same);
    }
    while !first.is_char_boundary(len) {
        len -= 1;
    }
    first.get(..len).unwrap_or("")
}

/// Gives back what [`tabulate_packages`] and [`tabulate_files`] wrote: each row under a
/// package legend becomes its `[[package]]` table again (a blank line between two), and
/// each `name hash` line under a `files (file, sha256):` header its `{file = …, hash = …},`
/// item, the table closed. Other lines stay.
pub fn expand(text: &str) -> String {
    if !text.contains(" (file") && !text.contains(ROWS_OPEN) {
        return text.to_string();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len() * 2);
    let mut i = 0;
    while let Some(&line) = lines.get(i) {
        i += 1;
        if let Some(shared) = parse_rows_legend(line) {
            let packages: Vec<Package> = lines
                .get(i..)
                .unwrap_or_default()
                .iter()
                .map_while(|l| Package::parse_row(l, shared))
                .collect();
            if packages.is_empty() {
                out.push(line.to_string());
            }
            i += packages.len();
            for (k, package) in packages.iter().enumerate() {
                if k > 0 {
                    out.push(String::new());
                }
                package.write_table(&mut out);
            }
            continue;
        }
        let Some((key, start, algorithm)) = parse_files_header(line) else {
            out.push(line.to_string());
            continue;
        };
        let items: Vec<(&str, &str)> = lines
            .get(i..)
            .unwrap_or_default()
            .iter()
            .map_while(|l| {
                let (rest, hex) = l.split_once(' ')?;
                let plain = !rest.is_empty() && !rest.contains(['"', '\\', ':']);
                (plain && is_hex(hex)).then_some((rest, hex))
            })
            .collect();
        if items.is_empty() {
            out.push(line.to_string());
            continue;
        }
        i += items.len();
        out.push(format!("{key} = ["));
        for (rest, hex) in items {
            out.push(format!(
                "{FILE_OPEN}{start}{rest}{FILE_HASH}{algorithm}:{hex}{FILE_CLOSE}"
            ));
        }
        out.push("]".to_string());
    }
    out.join("\n")
}

/// At Aggressive: `checksum = …` lines and the `files = [ {file = …, hash = …}, … ]`
/// lists go, each counted.
fn drop_hashes(rows: Vec<Row>) -> Vec<Row> {
    let mut out = Vec::with_capacity(rows.len());
    let mut checksums = 0usize;
    let mut first_package = None;
    let mut files = Elided::default();
    let mut in_files = false;
    for row in rows {
        let t = row.text.as_str();
        if in_files {
            if t == "]" {
                in_files = false;
                files.push(row);
                let n = files.lines().saturating_sub(2);
                files.flush(&mut out, |_| {
                    format!(
                        "files list: {} with their hashes elided",
                        count(n, "file", "files")
                    )
                });
            } else {
                files.push(row);
            }
            continue;
        }
        if t == "files = [" {
            in_files = true;
            files.push(row);
            continue;
        }
        if t.starts_with("checksum = \"") && !row.is_marker() {
            checksums += 1;
            continue;
        }
        if first_package.is_none() && t == PACKAGE {
            first_package = Some(out.len());
        }
        out.push(row);
    }
    // an unclosed list stays as it was
    files.flush(&mut out, |n| {
        format!("{} elided", count(n, "line", "lines"))
    });
    if checksums > 0 {
        let at = first_package.unwrap_or(0).min(out.len());
        let marker = Row::marker(
            &format!("{} checksum lines elided", thousands(checksums)),
            checksums,
        );
        out.insert(at, marker);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};
    use crate::tokens::count as tokens;

    const CARGO_LOCK: &str = r#"# This file is automatically @generated by Cargo.
# It is not intended for manual editing.
version = 4

[[package]]
name = "aho-corasick"
version = "1.1.3"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "8e60d3430d3a69478ad0993f19238d2df97c507009a52b3c10addcd7cdebb916"
dependencies = [
 "memchr",
]

[[package]]
name = "gateway-core"
version = "0.1.0"
dependencies = [
 "aho-corasick",
 "memchr",
 "serde 1.0.228",
]

[[package]]
name = "memchr"
version = "2.7.4"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "78ca9ab1a0babb1e7d5695e3530886289c18cf2f87ec19a3f2f5c2a7b0e6d8a7"

[[package]]
name = "serde"
version = "1.0.228"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "9a8e94ea7f378bd32cbbd37198a4a91436180c5bb472411e48b5ec2e2124ae9e"

[[package]]
name = "serde_json"
version = "1.0.140"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "20068b6e96dc6c9bd23e01df8827e6c7e1f2fddd43c21810382803c136b99373"

[[package]]
name = "tokio"
version = "1.44.2"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "e6b88822cbe49de4185e3a4cbf8321dd487cf5fe0c5c65695fef6346371e3c48"
"#;

    const REGISTRY: &str = "registry+https://github.com/rust-lang/crates.io-index";

    /// Through the whole compactor at the default level: nothing elided, and
    /// `expand_listings` gives back `text` (its trailing blank lines aside, which the
    /// compactor's clean-up drops; CRLF read as LF, as every output is) or the text passed
    /// as sent. The compacted text, if any.
    fn reads_back(text: &str) -> Option<String> {
        let out = crate::compact::compact(text, Level::Auto)?;
        assert!(!out.contains(" elided"), "{out}");
        let plain = text.replace("\r\n", "\n");
        let back = crate::compact::expand_listings(&out);
        if back.trim_end() != plain.trim_end() {
            let differ = back.lines().zip(plain.lines()).find(|(b, p)| b != p);
            panic!("reads back {differ:?}, from:\n{out}");
        }
        // As the room wrote it: the legend's marks put back.
        Some(super::super::legend::expand(&out))
    }

    /// One `[[package]]` table as Cargo writes it.
    fn table(name: &str, version: &str, source: Option<&str>, deps: &[&str]) -> String {
        let mut t = format!("[[package]]\nname = \"{name}\"\nversion = \"{version}\"\n");
        if let Some(source) = source {
            let sum = blake3::hash(name.as_bytes()).to_hex();
            t.push_str(&format!("source = \"{source}\"\n"));
            if source.starts_with("registry+") {
                t.push_str(&format!("checksum = \"{sum}\"\n"));
            }
        }
        if !deps.is_empty() {
            t.push_str("dependencies = [\n");
            for d in deps {
                t.push_str(&format!(" \"{d}\",\n"));
            }
            t.push_str("]\n");
        }
        t
    }

    /// A lock file's head and its tables, a blank line between two.
    fn lock(version: u8, tables: &[String]) -> String {
        format!(
            "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = {version}\n\n{}",
            tables.join("\n")
        )
    }

    /// Registry packages enough for rows to pay, six of them.
    fn registry_tables() -> Vec<String> {
        [
            "libc 0.2.177",
            "memchr 2.7.6",
            "proc-macro2 1.0.103",
            "quote 1.0.41",
            "serde 1.0.228",
            "syn 2.0.108",
        ]
        .iter()
        .filter_map(|p| p.split_once(' '))
        .map(|(name, version)| table(name, version, Some(REGISTRY), &["proc-macro2", "quote"]))
        .collect()
    }

    /// Each package is one row under a legend giving the row's form and the shared source;
    /// a workspace member says it has none; every name, version, checksum and dependency
    /// string stays, nothing is elided, and the tables read back.
    #[test]
    fn cargo_lock_packages_are_one_row_each_and_read_back() {
        let out = join(&compact(rows(CARGO_LOCK), Level::Standard));
        let expected = "# This file is automatically @generated by Cargo.
# It is not intended for manual editing.
version = 4

[Cargo.lock packages, one a row: name version (source) checksum < dependency, …; source where none is given: \"registry+https://github.com/rust-lang/crates.io-index\"]
aho-corasick 1.1.3 8e60d3430d3a69478ad0993f19238d2df97c507009a52b3c10addcd7cdebb916 < memchr
gateway-core 0.1.0 (no source) < aho-corasick, memchr, serde 1.0.228
memchr 2.7.4 78ca9ab1a0babb1e7d5695e3530886289c18cf2f87ec19a3f2f5c2a7b0e6d8a7
serde 1.0.228 9a8e94ea7f378bd32cbbd37198a4a91436180c5bb472411e48b5ec2e2124ae9e
serde_json 1.0.140 20068b6e96dc6c9bd23e01df8827e6c7e1f2fddd43c21810382803c136b99373
tokio 1.44.2 e6b88822cbe49de4185e3a4cbf8321dd487cf5fe0c5c65695fef6346371e3c48";
        assert_eq!(out, expected);
        assert_eq!(expand(&out), CARGO_LOCK.trim_end());
        assert!(reads_back(CARGO_LOCK).is_some_and(|auto| auto == expected));
    }

    const CARGO_LOCK_SLICE: &str = include_str!("fixtures/cargo_lock.txt");

    /// A real slice (the head and some fifty packages, a workspace member's forty-odd
    /// dependencies among them) reads back byte for byte through the compactor.
    #[test]
    fn a_real_slice_reads_back_exactly() {
        let out = reads_back(CARGO_LOCK_SLICE).unwrap_or_default();
        assert_eq!(
            crate::compact::expand_listings(&out).trim_end(),
            CARGO_LOCK_SLICE.trim_end()
        );
        assert!(out.contains("\ngateway-core 0.1.0 (no source) < arc-swap, axum, blake3, bytes, criterion, directories, fastrand, fnv, futures-util, getrandom 0.4.3, globset,"), "{out}");
        assert!(!out.contains("[[package]]"), "{out}");
    }

    /// The whole real lock file (712 packages): byte for byte back, nothing elided, and
    /// at least a quarter fewer tokens.
    #[test]
    fn the_whole_real_lock_file_reads_back_and_pays() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../bench/corpus/outputs/cat-cargo-lock.txt"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let out = reads_back(&text).unwrap();
        assert_eq!(
            crate::compact::expand_listings(&out).trim_end(),
            text.trim_end()
        );
        let (before, after) = (tokens(&text), tokens(&out));
        assert!(after * 4 <= before * 3, "{before} → {after} tokens");
        assert_eq!(out.matches(ROWS_OPEN).count(), 1, "one run, one legend");
    }

    /// The same lock file gives the same bytes, however often and in whatever order.
    #[test]
    fn the_same_lock_file_gives_the_same_bytes() {
        let slice = crate::compact::compact(CARGO_LOCK_SLICE, Level::Auto);
        let small = crate::compact::compact(CARGO_LOCK, Level::Auto);
        assert!(slice.is_some() && small.is_some());
        for _ in 0..3 {
            assert_eq!(crate::compact::compact(CARGO_LOCK, Level::Auto), small);
            assert_eq!(
                crate::compact::compact(CARGO_LOCK_SLICE, Level::Auto),
                slice
            );
        }
    }

    /// A version 3 file with a git source, path dependencies (no source, no checksum) and
    /// `[[patch.unused]]`: the git source is given on its row, the others say they have
    /// none, and the patch table stays as Cargo wrote it.
    #[test]
    fn git_sources_path_packages_and_unused_patches_read_back() {
        let git = "git+https://github.com/example/gitdep?branch=main#0123456789abcdef0123456789abcdef01234567";
        let mut tables = vec![
            table("app", "0.1.0", None, &["gitdep", "local", "syn 2.0.108"]),
            table("gitdep", "0.2.0", Some(git), &["quote"]),
            table("local", "0.0.1", None, &[]),
        ];
        tables.extend(registry_tables());
        tables.push("[[patch.unused]]\nname = \"unused\"\nversion = \"0.3.0\"\nsource = \"git+https://github.com/example/unused#abc\"\n".to_string());
        let text = lock(3, &tables);
        let out = reads_back(&text).unwrap_or_default();
        assert!(
            out.contains("\nversion = 3\n\n[Cargo.lock packages, one a row:"),
            "{out}"
        );
        assert!(
            out.contains("\napp 0.1.0 (no source) < gitdep, local, syn 2.0.108\n"),
            "{out}"
        );
        assert!(
            out.contains(&format!("\ngitdep 0.2.0 ({git}) < quote\n")),
            "{out}"
        );
        assert!(out.contains("\nlocal 0.0.1 (no source)\n"), "{out}");
        assert!(out.ends_with("\n\n[[patch.unused]]\nname = \"unused\"\nversion = \"0.3.0\"\nsource = \"git+https://github.com/example/unused#abc\""), "{out}");
    }

    /// The old format: dependencies with their version and source, checksums in
    /// `[metadata]`, which stays as it was.
    #[test]
    fn old_format_with_metadata_reads_back() {
        let dep = |name: &str, version: &str| format!("{name} {version} ({REGISTRY})");
        let names = [
            ("aho-corasick", "0.7.18"),
            ("libc", "0.2.98"),
            ("memchr", "2.4.1"),
            ("regex", "1.5.4"),
            ("regex-syntax", "0.6.25"),
        ];
        let mut tables = vec![table("app", "0.1.0", None, &[&dep("regex", "1.5.4")])];
        let mut metadata = "[metadata]\n".to_string();
        for (name, version) in names {
            let deps = [dep("memchr", "2.4.1"), dep("libc", "0.2.98")];
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            let t = table(name, version, Some(REGISTRY), &deps);
            // the old format has no checksum in the table
            tables.push(
                t.lines()
                    .filter(|l| !l.starts_with("checksum"))
                    .map(|l| format!("{l}\n"))
                    .collect(),
            );
            metadata.push_str(&format!(
                "\"checksum {}\" = \"{}\"\n",
                dep(name, version),
                blake3::hash(name.as_bytes()).to_hex()
            ));
        }
        tables.push(metadata);
        let text = tables.join("\n");
        let out = reads_back(&text).unwrap_or_default();
        assert!(
            out.contains(&format!(
                "\nregex 1.5.4 < {}, {}\n",
                dep("memchr", "2.4.1"),
                dep("libc", "0.2.98")
            )),
            "{out}"
        );
        assert!(
            out.contains("\n\n[metadata]\n\"checksum aho-corasick 0.7.18 (registry+"),
            "{out}"
        );
    }

    /// CRLF lines are read as LF, as every output is, and the rows read back to them.
    #[test]
    fn crlf_reads_back() {
        let crlf = CARGO_LOCK.replace('\n', "\r\n");
        let out = reads_back(&crlf).unwrap_or_default();
        assert!(out.contains("\nmemchr 2.7.4 78ca9ab1"), "{out}");
        assert!(!out.contains('\r'));
    }

    /// A lock file cut short anywhere (`| head`, or mid-line): the tables before the cut
    /// are rows, the one cut stays as far as it goes, and everything reads back, or the
    /// text passes as sent.
    #[test]
    fn a_lock_file_cut_short_reads_back() {
        let lines: Vec<&str> = CARGO_LOCK_SLICE.split_inclusive('\n').collect();
        let mut shortened = 0;
        for n in 1..=120 {
            let cut: String = lines.iter().take(n).copied().collect();
            shortened += usize::from(reads_back(&cut).is_some());
        }
        assert!(shortened > 80, "{shortened}");
        for end in (2_000..6_000).step_by(97) {
            let cut = CARGO_LOCK_SLICE.get(..end).unwrap_or_default();
            assert!(reads_back(cut).is_some(), "{cut}");
        }
    }

    /// A table a row could not give back stays whole where it is, and the rows around it
    /// read back: another key, a checksum not in hex, an escape, a comma or a blank line
    /// in a dependency, an empty or inline array, a source with a bracket, a name with a
    /// dot, two tables with no blank line between.
    #[test]
    fn tables_a_row_cannot_hold_stay_whole() {
        let odd = [
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\nreplace = \"odd 1.0.1\"\n",
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"<none>\"\n",
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\ndependencies = [\n \"a\\u0062\",\n]\n",
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\ndependencies = [\n \"a, b\",\n]\n",
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\ndependencies = [\n \"a\",\n\n \"b\",\n]\n",
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\ndependencies = [\n]\n",
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\ndependencies = [\"a\"]\n",
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\nsource = \"git+https://example.com/(x)#1\"\n",
            "[[package]]\nname = \"odd.rs\"\nversion = \"1.0.0\"\n",
            "[[package]]\nname = \"odd\"\nversion = \"v1\"\n",
            "[[package]]\nname = \"odd\"\nversion = \"1.0.0\"\n[[package]]\nname = \"odder\"\nversion = \"1.0.0\"\n",
        ];
        for table in odd {
            let mut tables = registry_tables();
            // three rows on either side
            tables.insert(3, table.to_string());
            let text = lock(4, &tables);
            let out = reads_back(&text).unwrap_or_default();
            // of two tables with no blank line between, the second may start a run
            let first = table
                .rfind("\n[[package]]")
                .map_or(table, |end| &table[..end]);
            assert!(out.contains(first.trim_end()), "{out}");
            assert_eq!(out.matches(ROWS_OPEN).count(), 2, "{out}");
        }
    }

    /// A lock file that already holds a legend and a line reading as a row could not be
    /// told from the rows when read back: its packages keep their tables.
    #[test]
    fn a_lock_file_quoting_a_legend_keeps_its_tables() {
        let text = format!("{}\n{}\nfoo 1.0.0\n", CARGO_LOCK, rows_legend(None));
        let out = join(&compact(rows(&text), Level::Standard));
        assert!(out.contains("[[package]]\nname = \"memchr\""), "{out}");
        assert!(!out.contains("\nmemchr 2.7.4 "), "{out}");
    }

    /// `expand` leaves alone a legend with no row under it, and lines that are almost rows.
    #[test]
    fn expand_leaves_what_is_not_a_row() {
        let legend = rows_legend(Some(REGISTRY));
        for text in [
            legend.clone(),
            format!("{legend}\nfoo  1.0.0"),
            format!("{legend}\nfoo 1.0.0 (no source) (git+x)"),
            format!("{legend}\nfoo 1.0.0 (registry+https://github.com/rust-lang/crates.io-index)"),
            format!("{legend}\nfoo 1.0.0 ABCDEF"),
            format!("{legend}\nfoo 1.0.0 < "),
            format!("{legend}\nfoo 1.0.0 < a,  b"),
            format!("{}\nfoo 1.0.0 (no source)", rows_legend(None)),
        ] {
            assert_eq!(expand(&text), text);
        }
        assert_eq!(
            expand(&format!("{legend}\nfoo 1.0.0 < a, b 0.3.1\nbar 2.0.0 (no source)\n\nrest")),
            "[[package]]\nname = \"foo\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\ndependencies = [\n \"a\",\n \"b 0.3.1\",\n]\n\n[[package]]\nname = \"bar\"\nversion = \"2.0.0\"\n\nrest"
        );
    }

    /// Aggressive counts the checksums and wheel lists instead of listing them.
    #[test]
    fn aggressive_counts_checksums_and_files() {
        let out = join(&compact(rows(CARGO_LOCK), Level::Aggressive));
        assert!(out.contains("[… 5 checksum lines elided …]"), "{out}");
        assert!(!out.contains("checksum = "));
        let poetry = "[[package]]\nname = \"vine\"\nversion = \"5.1.0\"\nfiles = [\n    {file = \"vine-5.1.0-py3-none-any.whl\", hash = \"sha256:40fdf3c48b2cfe1c38a49e9ae2da6fda88e4794c810050a728bd7413811fb1dc\"},\n    {file = \"vine-5.1.0.tar.gz\", hash = \"sha256:8b62e981d35c41049211cf62a0a1242d8c1ee9bd15bb196ce38aefd6799e61e0\"},\n]\n";
        let out = join(&compact(rows(poetry), Level::Aggressive));
        assert!(
            out.contains("[… files list: 2 files with their hashes elided …]"),
            "{out}"
        );
        assert!(out.contains("version = \"5.1.0\""));
        let standard = join(&compact(rows(poetry), Level::Standard));
        assert!(expand(&standard)
            .contains("sha256:8b62e981d35c41049211cf62a0a1242d8c1ee9bd15bb196ce38aefd6799e61e0"));
    }

    const POETRY_LOCK: &str = include_str!("fixtures/poetry_lock.txt");

    /// poetry.lock: each files table is one name and hash a line, the start a package's
    /// many wheels share said once, and reads back byte for byte.
    #[test]
    fn files_tables_are_one_name_and_hash_a_line_and_read_back() {
        let out = join(&compact(rows(POETRY_LOCK), Level::Standard));
        assert!(out.contains("\nfiles (file, sha256):\namqp-5.4.2-py3-none-any.whl e6e756b15c89c86818b48a4947a424706238afbf67d457428d3269bc4590db9e\namqp-5.4.2.tar.gz 9362660c4a31150cf18e78cae2ce8aa1e929fc6c6739e69f6dd5dbea9c3edc82\n\n"), "{out}");
        assert!(out.contains("\nfiles (file after \"greenlet-3.5.6\", sha256):\n-cp310-cp310-macosx_11_0_universal2.whl 95e7c44d"), "{out}");
        assert!(!out.contains("{file = "), "{out}");
        assert_eq!(expand(&out), join(&rows(POETRY_LOCK)));
        assert_eq!(join(&compact(rows(POETRY_LOCK), Level::Standard)), out);
        // by default too, through every listing's expansion
        let auto = crate::compact::compact(POETRY_LOCK, Level::Auto).unwrap();
        assert_eq!(
            crate::compact::expand_listings(&auto).trim_end(),
            POETRY_LOCK.trim_end()
        );
    }

    /// Poetry 1's `[metadata.files]` tables (one per package) take the same form.
    #[test]
    fn metadata_files_tables_read_back() {
        let text = "[metadata.files]\namqp = [\n    {file = \"amqp-5.1.1-py3-none-any.whl\", hash = \"sha256:6f0956d2c23d8fa6e7691934d8c3930eadb44972cbbd1a7ae3a520f735d43359\"},\n    {file = \"amqp-5.1.1.tar.gz\", hash = \"sha256:2c1b13fecc0893e946c65cbd5f36427861cffa4ea2201d8f6fca22e2a373b5e2\"},\n]\nvine = [\n    {file = \"vine-5.0.0-py2.py3-none-any.whl\", hash = \"sha256:4c9dceab6f76ed92105027c49c823800dd33cacce13bdedc5b914e3514b7fb30\"},\n    {file = \"vine-5.0.0.tar.gz\", hash = \"sha256:7d3b1624a953da82ef63462013bbd271d3eb75751489f9807598e8f340bd637e\"},\n]";
        let out = join(&compact(rows(text), Level::Standard));
        assert!(
            out.starts_with(
                "[metadata.files]\namqp (file, sha256):\namqp-5.1.1-py3-none-any.whl 6f09"
            ),
            "{out}"
        );
        assert!(out.contains("\nvine (file, sha256):\n"), "{out}");
        assert_eq!(expand(&out), text);
    }

    /// A table the short form could not give back exactly stays as it was: a name with a
    /// blank or a quote, hashes of two algorithms, a table left open.
    #[test]
    fn tables_that_would_not_read_back_stay() {
        let item =
            |file: &str, hash: &str| format!("    {{file = \"{file}\", hash = \"{hash}\"}},\n");
        let sha = "sha256:7d3b1624a953da82ef63462013bbd271d3eb75751489f9807598e8f340bd637e";
        let md5 = "md5:2c1b13fecc0893e946c65cbd5f364278";
        for table in [
            format!(
                "files = [\n{}{}]",
                item("a b-1.0.tar.gz", sha),
                item("a_b-1.0-py3-none-any.whl", sha)
            ),
            format!(
                "files = [\n{}{}]",
                item("x-1.0.tar.gz", sha),
                item("x-1.0-py3-none-any.whl", md5)
            ),
            format!(
                "files = [\n{}{}",
                item("x-1.0.tar.gz", sha),
                item("x-1.0-py3-none-any.whl", sha)
            ),
        ] {
            let text = format!("[[package]]\nname = \"x\"\n{table}");
            let out = join(&compact(rows(&text), Level::Standard));
            assert_eq!(out, text.trim_end());
            assert_eq!(expand(&out), out);
        }
    }
}

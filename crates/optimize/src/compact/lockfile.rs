//! Lock files read as text (`Cargo.lock`, `poetry.lock`): data, so every package, version
//! and checksum stays below Aggressive. What truly repeats is rewritten without loss: the
//! `source = "…"` line most packages share is said once, in a marker naming the packages
//! that lack it, and a `dependencies = [` array one name a line is written on one line
//! (the same TOML). A `files = [ {file = "…", hash = "sha256:…"}, … ]` table is written
//! one `name hash` a line under a `files (file, sha256):` header, the start the names share
//! said once; [`expand`] gives the table back byte for byte. At Aggressive the checksums
//! and the wheel lists with their hashes go, counted.
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
    let rows = factor_source(rows);
    let rows = inline_arrays(rows);
    if level == Level::Aggressive {
        drop_hashes(rows)
    } else {
        tabulate_files(rows)
    }
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

/// Gives back the files tables [`tabulate_files`] wrote: each `name hash` line under a
/// `files (file, sha256):` header becomes its `{file = …, hash = …},` item again, and the
/// table is closed. Other lines stay.
pub fn expand(text: &str) -> String {
    if !text.contains(" (file") {
        return text.to_string();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while let Some(&line) = lines.get(i) {
        i += 1;
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

    /// The shared source is said once with the packages that lack it; every name,
    /// version, checksum and dependency stays.
    #[test]
    fn the_shared_source_is_said_once_and_nothing_else_goes() {
        let out = join(&compact(rows(CARGO_LOCK), Level::Standard));
        assert!(out.contains("[… 5 lines `source = \"registry+https://github.com/rust-lang/crates.io-index\"` elided: every package has it but gateway-core (no source) …]"), "{out}");
        assert!(!out.contains("\nsource = "), "{out}");
        assert!(out.contains("dependencies = [\"aho-corasick\", \"memchr\", \"serde 1.0.228\"]"));
        for line in CARGO_LOCK.lines() {
            let kept = line.starts_with("source = ")
                || line.starts_with(' ')
                || line == "dependencies = ["
                || line == "]";
            assert!(kept || out.contains(line), "{line:?} lost");
        }
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

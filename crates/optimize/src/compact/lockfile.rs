//! Lock files read as text (`Cargo.lock`, `poetry.lock`): data, so every package, version
//! and checksum stays below Aggressive. What truly repeats is rewritten without loss: the
//! `source = "…"` line most packages share is said once, in a marker naming the packages
//! that lack it, and a `dependencies = [` array one name a line is written on one line
//! (the same TOML). At Aggressive the checksums and the wheel lists with their hashes go,
//! counted.
//!
//! `package-lock.json` is JSON and goes through [`super::json`].

use super::lines::{count, thousands, Elided, Row};
use super::Level;

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
        rows
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
        assert!(standard
            .contains("sha256:8b62e981d35c41049211cf62a0a1242d8c1ee9bd15bb196ce38aefd6799e61e0"));
    }
}

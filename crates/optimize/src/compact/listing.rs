//! Listings: `find` paths grouped per directory (lossless), and `ls -l` entries cut down
//! to type, size and name. Match listings (`grep`, `rg`) are [`super::matches`]'.

use super::lines::{count, Elided, Row};
use super::Level;

/// At Aggressive: entries kept per directory.
const MAX_ENTRIES_PER_DIR: usize = 50;

/// A line that looks like one path and nothing else (as `find` prints).
pub(crate) fn is_path_line(line: &str) -> bool {
    !line.is_empty()
        && !line.starts_with(' ')
        && !line.starts_with('\t')
        && (line.contains('/') || line == ".")
        && !line.contains(": ")
        && !line.contains('\t')
        && line.split(' ').count() <= 3
        && super::matches::split_numbered(line).is_none()
}

/// Groups consecutive paths of one directory under a `dir/ (3 entries):` line, each entry
/// as its name alone: the count says where the names end, and a line that opens with a
/// blank costs a token more than one that does not. Lossless. Light returns the rows
/// unchanged, and so does a listing with a line that already reads as such a header.
pub(crate) fn compact_find(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light || rows.iter().any(|r| dir_header(&r.text).is_some()) {
        return rows;
    }
    let aggressive = level == Level::Aggressive;
    let mut out = Vec::with_capacity(rows.len());
    let mut dir: Option<String> = None;
    let mut group: Vec<Row> = Vec::new();
    for row in rows {
        let split = if is_path_line(&row.text) {
            row.text
                .rsplit_once('/')
                .map(|(d, n)| (d.to_string(), n.to_string()))
        } else {
            None
        };
        match split {
            Some((d, _)) if dir.as_deref() == Some(d.as_str()) => group.push(row),
            Some((d, _)) => {
                emit_dir_group(&mut out, dir.take(), std::mem::take(&mut group), aggressive);
                dir = Some(d);
                group.push(row);
            }
            None => {
                emit_dir_group(&mut out, dir.take(), std::mem::take(&mut group), aggressive);
                out.push(row);
            }
        }
    }
    emit_dir_group(&mut out, dir, group, aggressive);
    out
}

fn emit_dir_group(out: &mut Vec<Row>, dir: Option<String>, group: Vec<Row>, aggressive: bool) {
    let Some(dir) = dir else {
        out.extend(group);
        return;
    };
    if group.len() < 2 {
        out.extend(group);
        return;
    }
    let shown = if aggressive {
        group.len().min(MAX_ENTRIES_PER_DIR)
    } else {
        group.len()
    };
    out.push(Row::plain(format!("{dir}/ ({shown} entries):")));
    let mut elided = Elided::default();
    for (i, row) in group.into_iter().enumerate() {
        let name = row
            .text
            .rsplit_once('/')
            .map_or(row.text.as_str(), |(_, n)| n);
        let entry = Row::plain(name);
        if aggressive && i >= MAX_ENTRIES_PER_DIR {
            elided.push(entry);
        } else {
            out.push(entry);
        }
    }
    elided.flush(out, |n| format!("{} elided", count(n, "entry", "entries")));
}

/// One parsed `ls -l` line: type character, size, name (with ` -> target` for links).
pub(crate) struct LsEntry<'a> {
    pub kind: char,
    pub size: String,
    pub name: &'a str,
}

/// Whether the first token is an `ls -l` mode string (`-rw-r--r--`, `drwxr-xr-x.`, `lrwxrwxrwx@`).
pub(crate) fn is_mode(token: &str) -> bool {
    let b = token.as_bytes();
    if !(10..=11).contains(&b.len()) {
        return false;
    }
    let kind_ok = b.first().is_some_and(|c| b"-dlcbpsD".contains(c));
    let perms_ok = b
        .get(1..10)
        .is_some_and(|p| p.iter().all(|c| b"rwxsStTl-".contains(c)));
    let suffix_ok = b.get(10).is_none_or(|c| b"+.@".contains(c));
    kind_ok && perms_ok && suffix_ok
}

/// Splits a line into whitespace-separated tokens with their byte offsets.
fn tokens(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, line.get(s..i).unwrap_or("")));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, line.get(s..).unwrap_or("")));
    }
    out
}

/// Parses an `ls -l` entry line.
pub(crate) fn parse_ls(line: &str) -> Option<LsEntry<'_>> {
    let toks = tokens(line);
    let (_, mode) = *toks.first()?;
    if !is_mode(mode) {
        return None;
    }
    // mode links owner group size date… name
    let mut i = 4;
    let (_, size_tok) = *toks.get(i)?;
    let size = if size_tok.ends_with(',') {
        // device: `major, minor`
        i += 1;
        format!("{size_tok}{}", toks.get(i)?.1)
    } else {
        size_tok.to_string()
    };
    let (_, first_date) = *toks.get(i + 1)?;
    let iso = first_date.len() == 10 && first_date.as_bytes().get(4) == Some(&b'-');
    let name_at = i + 1 + if iso { 2 } else { 3 };
    let (offset, _) = *toks.get(name_at)?;
    Some(LsEntry {
        kind: mode.chars().next().unwrap_or('-'),
        size,
        name: line.get(offset..)?,
    })
}

/// `ls` lines that are not entries: `total 288`, `dir:` headers.
pub(crate) fn is_ls_chrome(line: &str) -> bool {
    line.strip_prefix("total ")
        .is_some_and(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '.'))
        || line.ends_with(':') && !line.contains(' ')
}

/// Standard: `- 6979 __init__.py` (type, size, name), `total` lines dropped. Aggressive:
/// names only, directories with a trailing `/`, `.` and `..` dropped. Light returns the
/// rows unchanged.
pub(crate) fn compact_ls(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let aggressive = level == Level::Aggressive;
    let mut out = Vec::with_capacity(rows.len() + 1);
    let mut shortened = 0;
    for row in rows {
        if row.text.starts_with("total ") && is_ls_chrome(&row.text) {
            continue;
        }
        let Some(entry) = parse_ls(&row.text) else {
            out.push(row);
            continue;
        };
        shortened += 1;
        let text = if aggressive {
            if entry.name == "." || entry.name == ".." {
                continue;
            }
            match entry.kind {
                'd' => format!("{}/", entry.name),
                _ => entry.name.to_string(),
            }
        } else {
            format!("{} {} {}", entry.kind, entry.size, entry.name)
        };
        out.push(Row::plain(text));
    }
    if shortened > 0 {
        // The columns are gone from every entry: one marker says which, so the rewrite
        // names what it elided (and where the whole listing is kept).
        let columns = if aggressive {
            "modes, links, owners, groups, sizes and dates"
        } else {
            "modes, links, owners, groups and dates"
        };
        let body = format!(
            "{columns} of {} elided",
            count(shortened, "entry", "entries")
        );
        out.insert(0, Row::marker(&body, 0));
    }
    out
}

/// `dir/ (3 entries):` → (`dir/`, 3).
fn dir_header(line: &str) -> Option<(&str, usize)> {
    let (dir, n) = line.strip_suffix(" entries):")?.rsplit_once(" (")?;
    let n: usize = n.parse().ok()?;
    (n >= 2 && dir.ends_with('/') && !dir.starts_with(' ')).then_some((dir, n))
}

/// Undoes [`compact_find`]'s grouping: the names a `dir/ (N entries):` header counts
/// become `dir/name` again.
pub fn expand(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<std::borrow::Cow<'_, str>> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while let Some(&line) = lines.get(i) {
        i += 1;
        let counted = dir_header(line)
            .and_then(|(dir, n)| Some((dir, lines.get(i..i + n).filter(|b| b.len() == n)?)));
        match counted {
            Some((dir, names)) => {
                out.extend(names.iter().map(|name| format!("{dir}{name}").into()));
                i += names.len();
            }
            None => out.push(line.into()),
        }
    }
    // joined as the input was: its last line ends as it did
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expanding adds no line end of its own: text without groups comes back as it was.
    #[test]
    fn expand_keeps_line_ends_as_they_were() {
        for text in ["", "a", "a\n", "a\n\nb\n", "dir/ (2 entries):\na\nb\n"] {
            let back = expand(text);
            assert_eq!(
                back.ends_with('\n'),
                text.ends_with('\n'),
                "{text:?} → {back:?}"
            );
        }
        for text in ["", "a", "a\n", "a\n\nb\n"] {
            assert_eq!(expand(text), text);
        }
    }
    use crate::compact::lines::{join, rows};

    #[test]
    fn grouped_find_listings_expand_back_to_every_original_line() {
        let fixture = include_str!("fixtures/find.txt");
        let grouped = crate::compact::compact(fixture, Level::Standard).unwrap();
        assert!(grouped.len() < fixture.len());
        assert_eq!(expand(&grouped).trim_end(), fixture.trim_end());
    }

    #[test]
    fn ls_long_lines_parse_with_default_and_iso_dates() {
        let e = parse_ls("-rw-r--r--  1 root root  6979 Dec  1 10:33 my file.py").unwrap();
        assert_eq!(
            (e.kind, e.size.as_str(), e.name),
            ('-', "6979", "my file.py")
        );
        let e = parse_ls("lrwxrwxrwx 1 u g 7 2024-01-02 10:33 link -> target").unwrap();
        assert_eq!(
            (e.kind, e.size.as_str(), e.name),
            ('l', "7", "link -> target")
        );
        let e = parse_ls("crw-rw-rw- 1 root root 1, 3 Dec  1 10:33 null").unwrap();
        assert_eq!((e.kind, e.size.as_str(), e.name), ('c', "1,3", "null"));
        assert!(parse_ls("total 288").is_none());
    }

    #[test]
    fn find_groups_by_directory() {
        let text = "./a/x.rs\n./a/y.rs\n./b/z.rs\n";
        let out = join(&compact_find(rows(text), Level::Standard));
        assert_eq!(out, "./a/ (2 entries):\nx.rs\ny.rs\n./b/z.rs");
        assert_eq!(expand(&out), text.trim_end());
        // a listing that already holds a line read as a header passes as sent
        let text = "./a/x.rs\n./a/ (2 entries):\n./a/y.rs\n";
        let out = join(&compact_find(rows(text), Level::Standard));
        assert_eq!(out, text.trim_end());
    }

    fn generated_path() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let dir = prop::sample::select(vec![
            "./src",
            "./src/a b",
            "/work/main/fuzz/corpus",
            ".",
            "./x/ (2 entries):",
        ]);
        let name = prop_oneof![
            "[a-z0-9._-]{1,12}",
            prop::sample::select(vec![
                "a (2 entries):",
                "b/ (3 entries):",
                "[… 2 entries elided …]",
                "c d",
                "-",
                "12:x",
            ])
            .prop_map(str::to_owned),
        ];
        prop_oneof![
            8 => (dir, name).prop_map(|(d, n)| format!("{d}/{n}")),
            1 => prop::sample::select(vec![".", "done", "find: './p': Permission denied"])
                .prop_map(str::to_owned),
        ]
    }

    proptest::proptest! {
        // failures are reported, not saved outside this folder
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any `find` listing, names that look like headers or markers among them: where it
        /// is grouped it comes back exactly, the same bytes each time.
        #[test]
        fn generated_find_listings_round_trip(paths in proptest::collection::vec(generated_path(), 1..40)) {
            let text = paths.join("\n");
            let out = join(&compact_find(rows(&text), Level::Standard));
            proptest::prop_assert_eq!(&out, &join(&compact_find(rows(&text), Level::Standard)));
            if out != text {
                proptest::prop_assert_eq!(expand(&out), text);
            }
        }
    }
}

//! Dependency trees (`npm ls --all`, `cargo tree`, `pipdeptree`, `tree`): every entry
//! stays, and only the drawing goes. A line's guide bars (`│   │   ├── serde v1.0.200`)
//! say nothing its own branch glyph and the lines above do not already say, so from
//! Standard up they become blanks of the same width (`        ├── serde v1.0.200`), and
//! sibling leaves drawn one under the other share one line (`├── {axios@1.2.1, cors@2.8.6,
//! qs@6.17.1}`, the flat lists `npm ls --depth=0` and `cargo tree --depth 1` print);
//! where the tree holds one version of a package, that version is said at the package's
//! first line only (`├── bytes (*)` below `├── bytes v1.12.2`), under a line that says so
//! ([`FIRST_SIGHT`]). [`redraw`] puts all three back byte for byte, and a tree it would not
//! give back exactly keeps its versions. At Aggressive the leaves the tool itself marks as
//! listed above (`deduped`, `(*)`) fold into a counted marker.

use std::borrow::Cow;
use std::collections::HashMap;

use super::lines::{count, join, Elided, Row, Tag};
use super::Level;

const BAR: char = '│';

/// How a tree is drawn: in box glyphs, or in the ASCII npm prints where the terminal is not
/// UTF-8 (`+-- x`, `` `-- x``, `| `).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Glyphs {
    /// A branch with more siblings below it.
    tee: char,
    /// The last branch.
    ell: char,
    /// What follows the branch glyph.
    dash: &'static str,
    /// A guide bar.
    bar: char,
    /// How a leaf with siblings below it is drawn.
    leaf: &'static str,
}

const BOX: Glyphs = Glyphs {
    tee: '├',
    ell: '└',
    dash: "─",
    bar: BAR,
    leaf: "├── ",
};

const ASCII: Glyphs = Glyphs {
    tee: '+',
    ell: '`',
    dash: "-- ",
    bar: '|',
    leaf: "+-- ",
};

/// How grouped sibling leaves are listed.
const BETWEEN: &str = ", ";

/// Fewest sibling leaves that share a line.
const MIN_LEAVES: usize = 3;

/// The line above a tree whose packages' versions are said at their first line only.
pub(crate) const FIRST_SIGHT: &str = "[each package's version is said at its first line only]";

/// A tree line: the column of its branch glyph, whether the glyph is `├` (more siblings
/// follow), and the byte offset where the glyph starts. The prefix before the glyph is
/// guide bars and blanks only.
pub(crate) fn branch(line: &str) -> Option<(usize, bool, usize)> {
    drawn(line).map(|(col, tee, at, _)| (col, tee, at))
}

/// [`branch`], and the glyphs the line is drawn with.
fn drawn(line: &str) -> Option<(usize, bool, usize, Glyphs)> {
    for (col, (at, c)) in line.char_indices().enumerate() {
        if c == ' ' || c == BOX.bar || c == ASCII.bar {
            continue;
        }
        let after = line.get(at + c.len_utf8()..)?;
        let glyphs = [BOX, ASCII]
            .into_iter()
            .find(|g| (c == g.tee || c == g.ell) && after.starts_with(g.dash))?;
        return Some((col, c == glyphs.tee, at, glyphs));
    }
    None
}

/// The branches still open above the current line: (glyph column, drawn with `├`).
#[derive(Default)]
struct Open(Vec<(usize, bool)>);

impl Open {
    /// The guide bars a line whose glyph sits at `col` is drawn with, and the line entered
    /// as the newest open branch.
    fn enter(&mut self, col: usize, tee: bool, bar: char) -> String {
        self.0.retain(|(c, _)| *c < col);
        let mut prefix = vec![' '; col];
        for &(c, t) in &self.0 {
            if t {
                if let Some(slot) = prefix.get_mut(c) {
                    *slot = bar;
                }
            }
        }
        self.0.push((col, tee));
        prefix.into_iter().collect()
    }
}

/// Whether a tree entry is one the tool marks as listed in full elsewhere.
fn is_repeat(line: &str) -> bool {
    let t = line.trim_end();
    t.ends_with(" deduped") || t.ends_with(" (*)")
}

/// Compacts a tree. Light returns the rows unchanged. At Aggressive the repeats fold only
/// where that comes out shorter than the tree with each version said once, which keeps
/// every entry: a marker per short run of `(*)` leaves costs more than the leaves.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Aggressive {
        let folded = compact_at(rows.clone(), Level::Aggressive);
        let whole = compact_at(rows, Level::Standard);
        let tokens = |rows: &[Row]| crate::tokens::count(&join(rows));
        return if tokens(&whole) <= tokens(&folded) {
            whole
        } else {
            folded
        };
    }
    compact_at(rows, level)
}

fn compact_at(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    // what the versions said once must read back to; not needed at Aggressive
    let original = (level != Level::Aggressive).then(|| join(&rows));
    let branches: Vec<Option<(usize, bool, usize, Glyphs)>> =
        rows.iter().map(|r| drawn(&r.text)).collect();
    let mut open = Open::default();
    let mut out = Vec::with_capacity(rows.len());
    let mut repeats = Elided::default();
    let mut repeats_col = 0;
    for (i, row) in rows.into_iter().enumerate() {
        let Some(Some((col, tee, at, glyphs))) = branches.get(i).copied() else {
            flush_repeats(&mut out, &mut repeats, repeats_col);
            out.push(row);
            continue;
        };
        let drawn = open.enter(col, tee, glyphs.bar);
        let prefix = row.text.get(..at).unwrap_or_default();
        let rest = row.text.get(at..).unwrap_or_default();
        // A leaf: the next tree line (if any) is not below it.
        let leaf = branches
            .get(i + 1..)
            .unwrap_or_default()
            .iter()
            .flatten()
            .next()
            .is_none_or(|&(next, _, _, _)| next <= col);
        if level == Level::Aggressive && leaf && row.tag == Tag::Plain && is_repeat(rest) {
            if repeats.is_empty() || repeats_col != col {
                flush_repeats(&mut out, &mut repeats, repeats_col);
                repeats_col = col;
            }
            repeats.push(row);
            continue;
        }
        flush_repeats(&mut out, &mut repeats, repeats_col);
        if prefix == drawn && prefix.contains(glyphs.bar) {
            out.push(Row {
                text: format!("{}{rest}", " ".repeat(col)),
                tag: row.tag,
            });
        } else {
            out.push(row);
        }
    }
    flush_repeats(&mut out, &mut repeats, repeats_col);
    if let Some(original) = original {
        if let Some(said_once) = versions_said_once(&out).map(group_leaves) {
            if redraw(&join(&said_once)) == original {
                return said_once;
            }
        }
    }
    group_leaves(out)
}

/// A package's name and version as a tree prints them at the start of an entry:
/// `serde v1.0.229 (*)` (cargo, the version after ` v`) or `qs@6.13.0 deduped` (npm, after
/// the last `@` of the first word): the name, the version with what joins it to the name
/// (` v1.0.229`, `@6.13.0`), and the rest. `None` for an entry that names no version.
fn versioned(entry: &str) -> Option<(&str, &str, &str)> {
    let word = entry.split(' ').next()?;
    if let Some(at) = word.rfind('@').filter(|&at| at > 0) {
        if !word.as_bytes().get(at + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        return Some((
            entry.get(..at)?,
            entry.get(at..word.len())?,
            entry.get(word.len()..)?,
        ));
    }
    let after = entry.get(word.len()..)?;
    let version = after.strip_prefix(" v")?;
    let len = version.find(' ').unwrap_or(version.len());
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    (plain && version.as_bytes().first().is_some_and(u8::is_ascii_digit))
        .then(|| Some((word, after.get(..len + 2)?, after.get(len + 2..)?)))?
}

/// Where the entry of a tree line starts: after its branch glyph and the blank that
/// follows it (`├── `, `├─┬ `, `` `-- ``).
fn entry_start(line: &str) -> Option<usize> {
    let (_, _, at, _) = drawn(line)?;
    Some(at + line.get(at..)?.find(' ')? + 1)
}

/// The tree's rows with each package's version said at its first line only, for the
/// packages the tree holds in one version and always names with it; the root lines (not
/// drawn) say theirs too. `None` when no version would go.
fn versions_said_once(rows: &[Row]) -> Option<Vec<Row>> {
    // each name's version, or None once a second version or a line without one is seen
    let mut one: HashMap<&str, Option<&str>> = HashMap::new();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for row in rows {
        let entry = match entry_start(&row.text) {
            Some(start) => row.text.get(start..).unwrap_or_default(),
            None => row.text.as_str(),
        };
        let drawn = entry.len() < row.text.len();
        match versioned(entry) {
            // a root line keeps its version: one below the first sight would say it twice
            Some((name, _, _)) if !drawn && uses.contains_key(name) => {
                one.insert(name, None);
            }
            Some((name, version, _)) => {
                let slot = one.entry(name).or_insert(Some(version));
                if *slot != Some(version) {
                    *slot = None;
                }
                *uses.entry(name).or_default() += 1;
            }
            None if drawn => {
                let name = entry.split(' ').next().unwrap_or_default();
                one.insert(name, None);
            }
            None => {}
        }
    }
    let repeated =
        |name: &str| one.get(name).copied().flatten().is_some() && uses.get(name) > Some(&1);
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(rows.len() + 1);
    let mut said = 0usize;
    for row in rows {
        let start = entry_start(&row.text);
        let entry = row.text.get(start.unwrap_or(0)..).unwrap_or_default();
        let Some((name, version, rest)) = versioned(entry) else {
            out.push(row.clone());
            continue;
        };
        if start.is_some() && repeated(name) && !seen.insert(name.to_owned()) {
            let head = row.text.get(..start.unwrap_or(0)).unwrap_or_default();
            said += version.len();
            out.push(Row {
                text: format!("{head}{name}{rest}"),
                tag: row.tag,
            });
        } else {
            seen.insert(name.to_owned());
            out.push(row.clone());
        }
    }
    // the line above costs about what five versions do
    (said > FIRST_SIGHT.len()).then(|| {
        let mut with_note = vec![Row::plain(FIRST_SIGHT)];
        with_note.append(&mut out);
        with_note
    })
}

/// Puts back the versions [`versions_said_once`] took, in the lines below
/// [`FIRST_SIGHT`] (one entry a line): a drawn entry that names no version gets the one its
/// package is named with once, and only once, in those lines. A package named with a
/// version on two lines or more was not said once, and is left as it is.
struct FirstSight(HashMap<String, Option<String>>);

impl FirstSight {
    fn read<'a>(lines: impl Iterator<Item = &'a str>) -> FirstSight {
        let mut once: HashMap<String, Option<String>> = HashMap::new();
        for line in lines {
            let entry = line
                .get(entry_start(line).unwrap_or(0)..)
                .unwrap_or_default();
            if let Some((name, version, _)) = versioned(entry) {
                once.entry(name.to_owned())
                    .and_modify(|v| *v = None)
                    .or_insert_with(|| Some(version.to_owned()));
            }
        }
        FirstSight(once)
    }

    fn line<'a>(&self, line: &'a str) -> Cow<'a, str> {
        let Some(start) = entry_start(line) else {
            return Cow::Borrowed(line);
        };
        let entry = line.get(start..).unwrap_or_default();
        let name = entry.split(' ').next().unwrap_or_default();
        match self.0.get(name) {
            Some(Some(version)) if versioned(entry).is_none() => {
                let (head, rest) = line.split_at(start + name.len());
                Cow::Owned(format!("{head}{version}{rest}"))
            }
            _ => Cow::Borrowed(line),
        }
    }
}

/// A line's entry if it is a leaf drawn with `├── ` whose next line is a sibling (not a
/// child, not a `[dev-dependencies]` heading that belongs to it): (prefix with the leaf's
/// glyphs, entry).
fn sibling_leaf<'a>(row: &'a Row, next: Option<&Row>) -> Option<(&'a str, &'a str)> {
    let (col, _, at, glyphs) = drawn(&row.text)?;
    let (next_col, _, _) = branch(&next?.text)?;
    let lead = row.text.get(..at + glyphs.leaf.len())?;
    let name = row.text.get(at..)?.strip_prefix(glyphs.leaf)?;
    let plain = !name.is_empty()
        && !name.contains(['{', '}', ','])
        && !name.starts_with(char::is_whitespace);
    (row.tag == Tag::Plain && next_col == col && plain).then_some((lead, name))
}

/// Joins runs of sibling leaves under one prefix into one `├── {a, b, c}` line
/// (`+-- {a, b, c}` in ASCII).
fn group_leaves(rows: Vec<Row>) -> Vec<Row> {
    let mut out = Vec::with_capacity(rows.len());
    let mut i = 0;
    while let Some(row) = rows.get(i) {
        let Some((prefix, first)) = sibling_leaf(row, rows.get(i + 1)) else {
            out.push(row.clone());
            i += 1;
            continue;
        };
        let mut names = vec![first];
        while let Some((p, name)) = rows
            .get(i + names.len())
            .and_then(|r| sibling_leaf(r, rows.get(i + names.len() + 1)))
        {
            if p != prefix {
                break;
            }
            names.push(name);
        }
        if names.len() >= MIN_LEAVES {
            out.push(Row::plain(format!("{prefix}{{{}}}", names.join(BETWEEN))));
        } else {
            out.extend(
                rows.get(i..i + names.len())
                    .unwrap_or_default()
                    .iter()
                    .cloned(),
            );
        }
        i += names.len();
    }
    out
}

/// A line of grouped leaves back as one line each.
fn split_leaves(line: &str) -> Option<Vec<String>> {
    let (_, tee, at, glyphs) = drawn(line)?;
    let lead = line.get(..at + glyphs.leaf.len())?;
    let inner = line
        .get(at..)?
        .strip_prefix(glyphs.leaf)?
        .strip_prefix('{')?
        .strip_suffix('}')?;
    (tee && inner.contains(BETWEEN)).then(|| {
        inner
            .split(BETWEEN)
            .map(|name| format!("{lead}{name}"))
            .collect()
    })
}

fn flush_repeats(out: &mut Vec<Row>, repeats: &mut Elided, col: usize) {
    let start = out.len();
    repeats.flush(out, |n| {
        format!(
            "{} listed in full above elided",
            count(n, "entry", "entries")
        )
    });
    // the marker sits where the entries did
    if let Some(marker) = out.get_mut(start).filter(|r| r.is_marker()) {
        marker.text.insert_str(0, &" ".repeat(col));
    }
}

/// Puts back what [`compact`] took from a tree: grouped leaves one a line again, then each
/// tree line's guide bars redrawn from the branches open above it. Lines drawn in full are
/// left as they are.
pub fn redraw(text: &str) -> String {
    let mut open = Open::default();
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let lines: Vec<Cow<str>> = text
        .split('\n')
        .flat_map(|line| match split_leaves(line) {
            Some(leaves) => leaves.into_iter().map(Cow::Owned).collect(),
            None => vec![Cow::Borrowed(line)],
        })
        .collect();
    let note = lines.iter().position(|l| l == FIRST_SIGHT);
    let first_sight = note.map(|at| {
        FirstSight::read(
            lines
                .get(at + 1..)
                .unwrap_or_default()
                .iter()
                .map(AsRef::as_ref),
        )
    });
    let mut first = true;
    for (i, line) in lines.iter().enumerate() {
        if Some(i) == note {
            continue;
        }
        if !first {
            out.push('\n');
        }
        first = false;
        let line = match (&first_sight, note) {
            (Some(sight), Some(at)) if i > at => sight.line(line),
            _ => Cow::Borrowed(line.as_ref()),
        };
        match drawn(&line) {
            Some((col, tee, at, glyphs)) => {
                let drawn = open.enter(col, tee, glyphs.bar);
                let prefix = line.get(..at).unwrap_or_default();
                if prefix.contains([BOX.bar, ASCII.bar]) {
                    out.push_str(&line);
                } else {
                    out.push_str(&drawn);
                    out.push_str(line.get(at..).unwrap_or_default());
                }
            }
            None => out.push_str(&line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};

    const CARGO_TREE: &str = "\
logscan v0.3.0 (/tmp/logscan)
├── anyhow v1.0.105
├── chrono v0.4.45
│   ├── iana-time-zone v0.1.65
│   ├── num-traits v0.2.19
│   │   [build-dependencies]
│   │   └── autocfg v1.5.1
│   └── serde v1.0.229
│       ├── serde_core v1.0.229
│       └── serde_derive v1.0.229 (proc-macro)
│           ├── proc-macro2 v1.0.107
│           │   └── unicode-ident v1.0.27
│           └── quote v1.0.47
│               └── proc-macro2 v1.0.107 (*)
└── regex v1.12.2
    └── memchr v2.7.6";

    const NPM_LS: &str = "\
webapp@1.4.0 /tmp/webapp
├─┬ express@4.21.2
│ ├─┬ body-parser@1.20.3
│ │ ├── bytes@3.1.2
│ │ ├── debug@2.6.9 deduped
│ │ └── qs@6.13.0 deduped
│ ├── debug@2.6.9
│ └── qs@6.13.0
└── typescript@5.9.3";

    /// Every entry keeps its text and column; only the guide bars become blanks.
    #[test]
    fn guide_bars_become_blanks_and_entries_stay() {
        let out = join(&compact(rows(CARGO_TREE), Level::Standard));
        assert!(
            out.contains("\n                └── proc-macro2 v1.0.107 (*)\n"),
            "{out}"
        );
        assert!(out.contains("\n    ├── iana-time-zone v0.1.65\n"));
        assert!(!out.contains("│   ├"), "{out}");
        // a section header of cargo tree is not an entry: it stays drawn
        assert!(out.contains("│   │   [build-dependencies]"));
        for line in CARGO_TREE.lines() {
            let entry = line.trim_start_matches([BAR, ' ']);
            assert!(out.contains(entry), "{entry:?} lost");
        }
        assert!(out.len() < CARGO_TREE.len());
    }

    /// What Standard does to a tree, `redraw` undoes, byte for byte.
    #[test]
    fn redraw_restores_the_tree_exactly() {
        for tree in [CARGO_TREE, NPM_LS] {
            let out = join(&compact(rows(tree), Level::Standard));
            assert_ne!(out, tree);
            assert_eq!(redraw(&out), tree);
        }
        let fixture = include_str!("fixtures/npm_ls.txt");
        let out = join(&compact(rows(fixture), Level::Standard));
        assert_eq!(redraw(&out), fixture.trim_end());
    }

    /// At Aggressive, leaves the tool marks as listed above fold into one counted marker
    /// per run; other entries stay.
    #[test]
    fn aggressive_folds_marked_repeats() {
        let out = join(&compact(rows(NPM_LS), Level::Aggressive));
        assert!(!out.contains("deduped"), "{out}");
        assert!(
            out.contains("    [… 2 entries listed in full above elided …]"),
            "{out}"
        );
        assert!(out.contains("bytes@3.1.2") && out.contains("qs@6.13.0"));
        // below Aggressive nothing is dropped
        let standard = join(&compact(rows(NPM_LS), Level::Standard));
        assert!(
            standard.contains("    ├── debug@2.6.9 deduped"),
            "{standard}"
        );
    }

    /// Where the repeats come one at a time (a marker each would cost more than the
    /// leaves), Aggressive keeps the whole tree with each version said once, as the
    /// default does: never longer than the default.
    #[test]
    fn aggressive_keeps_lone_repeats_where_folding_costs_more() {
        let tree = format!(
            "app v0.1.0 (/tmp/app)\n{}",
            (0..12)
                .map(|i| format!(
                    "├── crate{i} v1.{i}.0\n│   ├── serde v1.0.229\n│   └── bytes v1.12.2\n"
                ))
                .collect::<String>()
                .trim_end()
        );
        let tree = tree.replace("serde v1.0.229\n", "serde v1.0.229 (*)\n");
        let aggressive = join(&compact(rows(&tree), Level::Aggressive));
        let standard = join(&compact(rows(&tree), Level::Standard));
        assert!(standard.contains(FIRST_SIGHT), "{standard}");
        assert_eq!(aggressive, standard);
        assert!(!aggressive.contains("elided"));
        assert_eq!(redraw(&aggressive), tree);
    }

    #[test]
    fn tree_lines_are_recognised_by_their_glyphs() {
        assert_eq!(branch("│   └── quote v1.0.47"), Some((4, false, 6)));
        assert_eq!(branch("├─┬ express@4.21.2"), Some((0, true, 0)));
        assert_eq!(branch("│def summarize(run):"), None);
        assert_eq!(branch("├ not a branch"), None);
        // npm where the terminal is not UTF-8; not a table's border
        assert_eq!(branch("| `-- get-func-name@2.0.2"), Some((2, false, 2)));
        assert_eq!(branch("+-- chai@4.5.0"), Some((0, true, 0)));
        assert_eq!(branch("+----+-------+"), None);
        assert_eq!(branch("+--x"), None);
    }

    /// `npm ls --depth=0`, `cargo tree --depth 1` and `npm ls --all` in box glyphs and in
    /// ASCII (real outputs): sibling leaves share a
    /// line, a leaf with a `[build-dependencies]` heading under it keeps its own, and the
    /// whole listing comes back line for line, the same each time.
    #[test]
    fn flat_listings_share_lines_and_come_back() {
        use crate::compact::{classify, compact, expand_listings};
        for text in [
            include_str!("fixtures/npm_ls_depth0.txt"),
            include_str!("fixtures/cargo_tree_depth1.txt"),
            include_str!("fixtures/npm_ls.txt"),
            include_str!("fixtures/npm_ls_ascii.txt"),
        ] {
            assert_eq!(classify::classify(text), classify::Kind::Tree);
            let out = compact(text, Level::Auto).unwrap();
            // an ASCII bar is as many bytes as the blank it becomes: count tokens
            let tokens = crate::tokens::count;
            assert!(tokens(&out) * 20 < tokens(text) * 19, "{out}");
            assert_eq!(compact(text, Level::Auto), Some(out.clone()));
            assert_eq!(expand_listings(&out).trim_end(), text.trim_end());
        }
        let out = compact(include_str!("fixtures/cargo_tree_depth1.txt"), Level::Auto).unwrap();
        assert!(
            out.contains("\n├── blake3 v1.8.7\n│   [build-dependencies]\n"),
            "{out}"
        );
        assert!(
            out.contains("\n├── {aho-corasick v1.1.5, arc-swap v1.9.5, "),
            "{out}"
        );
    }

    /// Draws a tree of `(depth, entry)` nodes as cargo and npm do (`├── `, `└── `, `│   `),
    /// under a root line; a node's depth is at most one more than the node above it.
    fn draw(root: &str, nodes: &[(usize, String)]) -> String {
        let mut out = vec![root.to_owned()];
        for (i, (depth, entry)) in nodes.iter().enumerate() {
            let later = |d: usize| {
                nodes[i + 1..]
                    .iter()
                    .take_while(|(k, _)| *k >= d)
                    .any(|(k, _)| *k == d)
            };
            let mut line = String::new();
            for d in 0..*depth {
                line.push_str(if later(d) { "│   " } else { "    " });
            }
            line.push_str(if later(*depth) {
                "├── "
            } else {
                "└── "
            });
            line.push_str(entry);
            out.push(line);
        }
        out.join("\n")
    }

    /// A package the tree holds in one version is named with it at its first line only,
    /// under the line that says so; a package in two versions, or named once without one,
    /// keeps every version; the tree comes back byte for byte, the same each time.
    #[test]
    fn versions_are_said_at_a_package_first_line_only() {
        let mut nodes = Vec::new();
        for k in 0..12 {
            nodes.push((0, format!("crate-{k} v1.{k}.0")));
            nodes.push((1, "bytes v1.12.2".to_owned()));
            nodes.push((1, format!("http v1.5.0{}", if k > 0 { " (*)" } else { "" })));
            nodes.push((1, format!("syn v{}.0.1", 1 + k % 2)));
            nodes.push((
                2,
                format!(
                    "untagged-{}",
                    if k == 3 {
                        "x".to_owned()
                    } else {
                        format!("x v0.1.{k}")
                    }
                ),
            ));
            nodes.push((2, "serde_derive v1.0.229 (proc-macro)".to_owned()));
        }
        // a workspace member's own tree below, its root named above too
        let tree = draw("app v0.1.0 (/work/app)", &nodes) + "\n\ncrate-3 v1.3.0 (*)";
        let out = join(&compact(rows(&tree), Level::Standard));
        assert!(out.starts_with(FIRST_SIGHT), "{out}");
        assert!(out.ends_with("\n└── crate-11 v1.11.0\n    ├── bytes\n    ├── http (*)\n    └── syn v2.0.1\n        ├── untagged-x v0.1.11\n        └── serde_derive (proc-macro)\n\ncrate-3 v1.3.0 (*)"), "{out}");
        assert!(
            out.contains(
                "\n├── crate-1 v1.1.0\n    ├── bytes\n    ├── http (*)\n    └── syn v2.0.1\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("        └── serde_derive (proc-macro)"),
            "{out}"
        );
        assert_eq!(out.matches("bytes v1.12.2").count(), 1, "{out}");
        assert_eq!(
            out.matches("syn v1.0.1").count(),
            6,
            "two versions: each said"
        );
        assert!(
            out.contains("untagged-x v0.1.4"),
            "one line without a version: each said"
        );
        assert_eq!(redraw(&out), tree);
        assert_eq!(join(&compact(rows(&tree), Level::Standard)), out);

        let npm: Vec<(usize, String)> = (0..10)
            .flat_map(|k| {
                [
                    (0, format!("pkg-{k}@2.{k}.0")),
                    (1, "@types/node@20.11.5 deduped".to_owned()),
                    (1, "debug@4.3.4".to_owned()),
                ]
            })
            .collect();
        let tree = draw("web@1.0.0 /srv/web", &npm);
        let out = join(&compact(rows(&tree), Level::Standard));
        assert!(
            out.contains("\n    ├── @types/node deduped\n    └── debug\n"),
            "{out}"
        );
        assert_eq!(redraw(&out), tree);
    }

    /// A tree that already holds the line [`FIRST_SIGHT`] writes comes back with it; one
    /// with too few repeats to pay for that line keeps its versions.
    #[test]
    fn versions_said_once_come_back_around_a_lookalike_note() {
        let nodes: Vec<(usize, String)> = (0..20)
            .map(|k| {
                (
                    k % 2,
                    format!("dep v1.0.0{}", if k % 2 == 1 { "" } else { " (*)" }),
                )
            })
            .collect();
        let tree = format!("{FIRST_SIGHT}\n{}", draw("app v0.1.0", &nodes));
        let out = join(&compact(rows(&tree), Level::Standard));
        assert_eq!(out.matches("dep v1.0.0").count(), 1, "{out}");
        assert_eq!(redraw(&out), tree);
        let few = draw(
            "app v0.1.0",
            &[
                (0, "a v1.0.0".into()),
                (0, "b v1.0.0".into()),
                (1, "a v1.0.0".into()),
            ],
        );
        assert!(!join(&compact(rows(&few), Level::Standard)).contains(FIRST_SIGHT));
    }

    proptest::proptest! {
        /// Any tree of packages drawn as cargo or npm draw it, versions repeated or not,
        /// comes back from the compacted text byte for byte.
        #[test]
        fn generated_trees_come_back(
            steps in proptest::collection::vec((0usize..3, 0usize..6, 0usize..3, 0usize..4), 1..80),
            npm in proptest::bool::ANY,
        ) {
            let mut depth = 0usize;
            let nodes: Vec<(usize, String)> = steps
                .iter()
                .enumerate()
                .map(|(i, &(step, name, version, rest))| {
                    depth = if i == 0 { 0 } else { match step { 0 => depth + 1, 1 => depth, _ => depth.saturating_sub(1) } };
                    let rest = ["", " (*)", " deduped", " (proc-macro)"][rest];
                    let entry = match (npm, version) {
                        (_, 2) => format!("p{name}{rest}"),
                        (true, v) => format!("p{name}@1.{v}.0{rest}"),
                        (false, v) => format!("p{name} v1.{v}.0{rest}"),
                    };
                    (depth, entry)
                })
                .collect();
            let tree = draw(if npm { "root@1.0.0 /r" } else { "root v1.0.0 (/r)" }, &nodes);
            let out = join(&compact(rows(&tree), Level::Standard));
            proptest::prop_assert_eq!(redraw(&out), tree);
        }
    }

    /// npm's ASCII drawing groups as its box drawing does.
    #[test]
    fn ascii_leaves_share_a_line() {
        let text = "app@1.0.0 /tmp/app\n+-- chai@4.5.0\n+-- express@4.22.3\n+-- lodash@4.18.1\n+-- mocha@10.8.2\n`-- supertest@7.3.2";
        let out = join(&compact(rows(text), Level::Standard));
        assert_eq!(
            out,
            "app@1.0.0 /tmp/app\n+-- {chai@4.5.0, express@4.22.3, lodash@4.18.1, mocha@10.8.2}\n`-- supertest@7.3.2"
        );
        assert_eq!(redraw(&out), text);
    }

    /// Two leaves, a leaf with a child, the last leaf and names with commas stay one a line.
    #[test]
    fn what_cannot_share_a_line_keeps_its_own() {
        let text =
            "root\n├── a@1\n├── b@1\n├─┬ c@1\n│ └── d@1\n├── e, f@1\n├── g@1\n├── h@1\n└── i@1";
        let out = join(&compact(rows(text), Level::Standard));
        assert_eq!(out, text.replace("│ └── d@1", "  └── d@1"));
        assert_eq!(redraw(&out), text);
    }
}

//! aider's repository map (`aider --show-repo-map`, and the map aider sends as context):
//! each file's path on a line of its own ending in `:`, then the lines aider shows of the
//! file, each drawn with a guide bar (`│def summarize(run):`), and a `⋮` line wherever
//! lines of the file were left out. Every line of code stays; only the drawing changes.
//!
//! The bar on every line says what the block already says (these lines are the file's
//! above), so from Standard up it goes; the `⋮` line (three tokens) becomes `…` (one):
//!
//! ```text
//! bench/compare.py:           bench/compare.py:
//! ⋮                           …
//! │def summarize(run):        def summarize(run):
//! │    m = {}                     m = {}
//! │                           │
//! │    def put(key, value):       def put(key, value):
//! ⋮                           …
//! ```
//!
//! Two kinds of lines keep a bar, so that [`expand`] can give every line back byte for
//! byte: a blank line of the file (a blank line is what ends a file's block), and the
//! second half of a line the terminal wrapped (`--show-repo-map` prints through an
//! 80-column console; aider drew that half without a bar, so in the compacted block it is
//! the one that has one). A block is compacted only when it opens with `⋮`: its `…` is how
//! [`expand`] knows it.
//!
//! At Aggressive the map is also outlined: every file stays, with the first line of each
//! run aider shows and every line that defines something; the lines between become gaps
//! and one marker at the end counts them.

use std::borrow::Cow;

use super::lines::count;
use super::Level;

const BAR: char = '│';
/// A blank line of a file, as aider draws it.
const BAR_LINE: &str = "│";
/// aider's mark for lines of a file left out of the map.
const DOTS: &str = "⋮";
/// The same mark in a compacted block.
const GAP: &str = "…";

/// A file's line in a map: a path (no blanks, with a `.` or a `/`), not indented, ending
/// in `:`.
fn is_file_line(line: &str) -> bool {
    line.strip_suffix(':').is_some_and(|path| {
        path.contains(['.', '/'])
            && !path.contains(char::is_whitespace)
            && !path.starts_with([BAR, '⋮', '…'])
    })
}

/// A line of a file's block as aider draws it: a shown line or a gap.
fn is_drawn(line: &str) -> bool {
    line.starts_with(BAR) || line == DOTS
}

/// The classifier's counts for maps, over the non-blank lines of a text in order.
#[derive(Default)]
pub(crate) struct Tally {
    /// Non-blank lines seen.
    seen: usize,
    /// Where the first file's line was, counted in non-blank lines.
    first_file: Option<usize>,
    files: usize,
    drawn: usize,
    gaps: usize,
    previous_is_file: bool,
}

impl Tally {
    /// Counts one non-blank line.
    pub fn add(&mut self, line: &str) {
        if is_drawn(line) {
            self.drawn += 1;
            self.gaps += usize::from(line == DOTS);
            if self.previous_is_file {
                self.files += 1;
                self.first_file.get_or_insert(self.seen - 1);
            }
        }
        self.previous_is_file = is_file_line(line);
        self.seen += 1;
    }

    /// A map: a file's line with its block under it, a gap somewhere, and from the first
    /// file on, mostly drawn lines (aider's own lines above the map — its version, the
    /// model, "Here are summaries of some files…" — do not count against it).
    pub fn is_map(&self) -> bool {
        let Some(first) = self.first_file else {
            return false;
        };
        let from_first = self.seen - first;
        self.gaps >= 1 && (self.drawn + self.files) * 100 >= from_first * 60
    }
}

/// Whether `lines[at]` opens a file's block whose first line is `gap`: a file's line at
/// the start of the text or after a blank line.
fn opens_block(lines: &[&str], at: usize, gap: &str) -> bool {
    let after_blank = at == 0 || lines.get(at - 1).is_some_and(|l| l.is_empty());
    after_blank && lines.get(at).is_some_and(|l| is_file_line(l)) && lines.get(at + 1) == Some(&gap)
}

/// Rewrites the block opened by each file's line (`gap` its first line), up to the next
/// blank line, with `block`; `None` from it leaves the block as it was.
fn rewrite_blocks<'a>(
    text: &'a str,
    gap: &str,
    mut block: impl FnMut(&[&'a str]) -> Option<Vec<Cow<'a, str>>>,
) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<Cow<'a, str>> = Vec::with_capacity(lines.len());
    let mut at = 0;
    while let Some(&line) = lines.get(at) {
        out.push(Cow::Borrowed(line));
        at += 1;
        if !opens_block(&lines, at - 1, gap) {
            continue;
        }
        let end = lines
            .iter()
            .skip(at)
            .position(|l| l.is_empty())
            .map_or(lines.len(), |n| at + n);
        let body = lines.get(at..end).unwrap_or_default();
        match block(body) {
            Some(rewritten) => out.extend(rewritten),
            None => out.extend(body.iter().map(|&l| Cow::Borrowed(l))),
        }
        at = end;
    }
    out.join("\n")
}

/// A line of a block without its drawing, or `None` when it would read back wrong (a line
/// of code that itself starts with a bar or is `…`).
fn undraw(line: &str) -> Option<Cow<'_, str>> {
    if line == DOTS {
        return Some(Cow::Borrowed(GAP));
    }
    if line == BAR_LINE {
        return Some(Cow::Borrowed(line));
    }
    match line.strip_prefix(BAR) {
        Some(code) if code.starts_with(BAR) || code == GAP => None,
        Some(code) => Some(Cow::Borrowed(code)),
        // the second half of a wrapped line
        None => Some(Cow::Owned(format!("{BAR}{line}"))),
    }
}

/// A line of a compacted block drawn again.
fn redraw(line: &str) -> Cow<'_, str> {
    if line == GAP {
        return Cow::Borrowed(DOTS);
    }
    if line == BAR_LINE {
        return Cow::Borrowed(line);
    }
    match line.strip_prefix(BAR) {
        Some(half) => Cow::Borrowed(half),
        None => Cow::Owned(format!("{BAR}{line}")),
    }
}

/// Compacts a map. Light returns it unchanged, as does every level when the result would
/// not read back exactly (text around the map that looks like a compacted block).
/// Aggressive then outlines it (see [`outline`]).
pub(crate) fn compact(text: &str, level: Level) -> String {
    if level == Level::Light {
        return text.to_owned();
    }
    let out = rewrite_blocks(text, DOTS, |block| {
        block.iter().map(|l| undraw(l)).collect()
    });
    if expand(&out) != text {
        return text.to_owned();
    }
    if level == Level::Aggressive {
        outline(&out)
    } else {
        out
    }
}

/// First words of a line that defines something, in the languages aider maps most.
const DEFINING: &[&str] = &[
    "fn",
    "pub",
    "impl",
    "struct",
    "enum",
    "trait",
    "mod",
    "type",
    "const",
    "static",
    "unsafe",
    "async",
    "macro_rules!",
    "def",
    "class",
    "function",
    "export",
    "interface",
    "func",
    "package",
    "public",
    "private",
    "protected",
    "abstract",
    "module",
    "namespace",
    "typedef",
    "union",
    "extern",
    "#define",
];

/// Whether a line of code defines something: opens with a defining word, a decorator or
/// an attribute.
fn defines(line: &str) -> bool {
    let code = line.trim_start();
    let first = code
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | '<' | ':'))
        .next()
        .unwrap_or_default();
    DEFINING.contains(&first) || code.starts_with('@') || code.starts_with("#[")
}

/// Aggressive's map: every file's line stays, and of each run of lines aider shows, the
/// first (the line it showed the run for, or the scope above it) and every line that
/// defines something; the other lines (bodies, arguments, fields' comments, docstrings)
/// become gaps like aider's own, and one marker at the end counts them.
fn outline(text: &str) -> String {
    let mut cut = 0;
    let out = rewrite_blocks(text, GAP, |block| Some(outline_block(block, &mut cut)));
    if cut == 0 {
        return out;
    }
    // a blank line first, so the marker is not read as a line of the last block
    let blank = if out.ends_with("\n\n") {
        ""
    } else if out.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!(
        "{out}{blank}[… {} of the map's code elided …]",
        count(cut, "line", "lines")
    )
}

fn outline_block<'a>(block: &[&'a str], cut: &mut usize) -> Vec<Cow<'a, str>> {
    let mut out: Vec<Cow<'a, str>> = Vec::with_capacity(block.len());
    let mut opens_run = true;
    let mut kept_previous = false;
    for &line in block {
        if line == GAP {
            if out.last().is_none_or(|l| l != GAP) {
                out.push(Cow::Borrowed(GAP));
            }
            opens_run = true;
            continue;
        }
        let second_half = line.starts_with(BAR) && line != BAR_LINE;
        let keep = if second_half {
            kept_previous
        } else {
            opens_run || defines(line)
        };
        opens_run = false;
        kept_previous = keep;
        if keep {
            out.push(Cow::Borrowed(line));
        } else {
            *cut += 1;
            if out.last().is_none_or(|l| l != GAP) {
                out.push(Cow::Borrowed(GAP));
            }
        }
    }
    out
}

/// Draws back what [`compact`] took from a map, byte for byte. Text without a compacted
/// block comes back as it is.
pub fn expand(text: &str) -> String {
    // every compacted block has a line of its own that is `…`
    if !text.contains("\n…") {
        return text.to_owned();
    }
    rewrite_blocks(text, GAP, |block| {
        Some(block.iter().map(|l| redraw(l)).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::classify::{classify, Kind};

    /// A text as the shared passes leave it before the map is compacted.
    fn tidy(text: &str) -> String {
        crate::compact::ansi::tidy(&crate::compact::ansi::strip(text))
    }

    const MAP: &str = "\
Here are summaries of some files present in my git repository.
Do not propose changes to these files, treat them as *read-only*.

bench/compare.py:
⋮
│def summarize(run):
│    \"\"\"The run's baseline (absolute, direct) and each gateway's measures
relative to it:
⋮
│    for t in sorted(names - {\"direct\"}):
│        m = {}
│
│        def put(key, value, kind):
⋮
│def shown_ratio(x, goal):
⋮

src/doc/mod.rs:
⋮
│pub mod os;
";

    #[test]
    fn bars_go_and_gaps_shrink() {
        let out = compact(MAP, Level::Standard);
        assert_eq!(
            out,
            "\
Here are summaries of some files present in my git repository.
Do not propose changes to these files, treat them as *read-only*.

bench/compare.py:
…
def summarize(run):
    \"\"\"The run's baseline (absolute, direct) and each gateway's measures
│relative to it:
…
    for t in sorted(names - {\"direct\"}):
        m = {}
│
        def put(key, value, kind):
…
def shown_ratio(x, goal):
…

src/doc/mod.rs:
…
pub mod os;
"
        );
        assert_eq!(expand(&out), MAP);
        assert_eq!(compact(MAP, Level::Light), MAP);
    }

    /// At Aggressive every file stays with the first line of each run and the lines that
    /// define something; what went is a gap where it was and counted at the end.
    #[test]
    fn aggressive_outlines_each_file() {
        let out = compact(MAP, Level::Aggressive);
        assert_eq!(
            out,
            "\
Here are summaries of some files present in my git repository.
Do not propose changes to these files, treat them as *read-only*.

bench/compare.py:
…
def summarize(run):
…
    for t in sorted(names - {\"direct\"}):
…
        def put(key, value, kind):
…
def shown_ratio(x, goal):
…

src/doc/mod.rs:
…
pub mod os;

[… 4 lines of the map's code elided …]"
        );
        // the marker is outside every block: the lines left read back as they were
        let expanded = expand(&out);
        assert!(expanded.contains("│        def put(key, value, kind):\n⋮\n"));
        assert!(expanded.ends_with("│pub mod os;\n\n[… 4 lines of the map's code elided …]"));
    }

    /// A block that does not open with `⋮`, or whose code would read back as drawing,
    /// stays drawn; the rest of the map is compacted all the same.
    #[test]
    fn blocks_that_would_read_back_wrong_stay_drawn() {
        let map = "\
a.py:
│def first():
⋮

b.py:
⋮
││ a table row drawn in a docstring
⋮

c.py:
⋮
│…
⋮

d.py:
⋮
│def kept():
⋮";
        let out = compact(map, Level::Standard);
        assert!(out.contains("a.py:\n│def first():\n⋮\n"), "{out}");
        assert!(out.contains("b.py:\n⋮\n││ a table"), "{out}");
        assert!(out.contains("c.py:\n⋮\n│…\n⋮"), "{out}");
        assert!(out.ends_with("d.py:\n…\ndef kept():\n…"), "{out}");
        assert_eq!(expand(&out), map);
    }

    /// Text that only looks like a compacted block around a map keeps the map drawn
    /// rather than read back wrong.
    #[test]
    fn a_look_alike_around_the_map_leaves_it_drawn() {
        let text = format!("notes.txt:\n…\nsome line\n\n{MAP}");
        assert_eq!(compact(&text, Level::Standard), text);
    }

    #[test]
    fn text_without_a_compacted_block_expands_to_itself() {
        for text in [
            "",
            "plain\n",
            MAP,
            "src/main.rs:\n  12: fn main() {\n…\n",
            "x.py:\n\n…\n",
        ] {
            assert_eq!(expand(text), text);
        }
    }

    /// Real `aider --show-repo-map` captures (the gateway's own repository, tokio, and a
    /// repository of one file), as the shared passes leave them (its `\r` progress line
    /// resolved, blanks at line ends gone), compact shorter and read back byte for byte.
    #[test]
    fn real_maps_read_back_exactly_and_the_same_every_time() {
        for (name, capture) in [
            (
                "trimgate",
                include_str!("../../../../bench/corpus/outputs/aider-repo-map.txt"),
            ),
            (
                "tokio",
                include_str!("../../../../bench/corpus/outputs/aider-repo-map-tokio.txt"),
            ),
            ("one file", include_str!("fixtures/aider_map_one_file.txt")),
        ] {
            let text = tidy(capture);
            assert_eq!(classify(&text), Kind::RepoMap, "{name}");
            let out = crate::compact::compact(&text, Level::Auto).unwrap();
            assert_eq!(crate::compact::expand_listings(&out), text, "{name}");
            assert_eq!(crate::compact::compact(&text, Level::Auto).unwrap(), out);
            // Aggressive: every file and every line it keeps as they were, the rest
            // counted in one marker
            let outline = crate::compact::compact(&text, Level::Aggressive).unwrap();
            assert!(outline.len() * 3 < out.len() * 2, "{name}");
            assert_eq!(
                crate::compact::compact(&text, Level::Aggressive).unwrap(),
                outline
            );
            let (body, marker) = outline.rsplit_once('\n').unwrap();
            assert!(marker.starts_with("[… ") && marker.ends_with(" of the map's code elided …]"));
            let original: std::collections::HashSet<&str> = text.lines().collect();
            let read_back = crate::compact::expand_listings(body);
            assert!(
                read_back.lines().all(|l| l == DOTS || original.contains(l)),
                "{name}"
            );
            for file in text.lines().filter(|l| is_file_line(l)) {
                assert!(read_back.lines().any(|l| l == file), "{name}: {file}");
            }
            // every block that opens with a gap lost its drawing (one that opens with a
            // line of code keeps it: nothing would tell it from a drawn one)
            let lines: Vec<&str> = out.lines().collect();
            assert!(
                lines
                    .windows(2)
                    .all(|w| !(is_file_line(w[0]) && w[1] == DOTS)),
                "{name}"
            );
            assert!(out.contains("\n…\n"), "{name}");
            assert_eq!(out.lines().count(), text.lines().count(), "{name}");
        }
    }

    /// A map of one file, inside an agent's wrapper, or with CRLF line ends is a map, and
    /// the wrapped one reads back as the bare one.
    #[test]
    fn maps_are_recognised_bare_wrapped_and_with_crlf() {
        let capture = include_str!("fixtures/aider_map_one_file.txt");
        let text = tidy(capture);
        let one_file = "src/lib.rs:\n⋮\n│pub fn parse(input: &str) -> Result<Config, Error> {\n⋮\n";
        assert_eq!(classify(one_file), Kind::RepoMap);
        assert_eq!(classify(&tidy(&text.replace('\n', "\r\n"))), Kind::RepoMap);
        let wrapped = format!(
            "Command: aider --show-repo-map\nChunk ID: 5c1a2e\nWall time: 9.2 seconds\nProcess exited with code 0\nOutput:\n{text}"
        );
        let inside = crate::compact::wrapper::split(&wrapped).unwrap();
        assert_eq!(classify(inside.output()), Kind::RepoMap);
        let out = crate::compact::compact(&wrapped, Level::Auto).unwrap();
        assert!(out.starts_with("Command: aider --show-repo-map\n"), "{out}");
        assert_eq!(crate::compact::expand_listings(&out), text);
    }

    /// Text with box glyphs that is not a map: source drawing a box in its comments, a
    /// table drawn with `│`, a dependency tree, an `ls -R` listing.
    #[test]
    fn look_alikes_are_not_maps() {
        let rust = "\
/// The pipeline:
/// ┌────────┐    ┌──────────┐
/// │ inbound │ → │ optimize │
/// └────────┘    └──────────┘
pub fn run(config: &Config) -> Result<(), Error> {
    let plan = plan(config)?;
    for stage in plan.stages() {
        stage.run()?;
    }
    Ok(())
}
";
        assert_eq!(classify(rust), Kind::Code);
        let python = "\
def render(rows):
    \"\"\"Draws the rows:

│ name │ size │
│ a.py │ 12   │
⋮
    \"\"\"
    return \"\\n\".join(rows)
";
        assert_ne!(classify(python), Kind::RepoMap);
        let table = "Results:\n│ name │ size │\n│ a.py │ 12 │\n│ b.py │ 40 │\n⋮\n│ z.py │ 3 │\n";
        assert_ne!(classify(table), Kind::RepoMap);
        let tree = "logscan v0.3.0\n├── anyhow v1.0.105\n├── chrono v0.4.45\n│   ├── num-traits v0.2.19\n│   │   └── autocfg v1.5.1\n│   └── serde v1.0.229\n└── regex v1.12.2\n";
        assert_eq!(classify(tree), Kind::Tree);
        let ls = "./src:\nlib.rs\nmain.rs\n\n./src/compact:\nmod.rs\nrepomap.rs\n";
        assert_ne!(classify(ls), Kind::RepoMap);
    }

    #[test]
    fn file_lines_are_paths() {
        assert!(is_file_line("bench/compare.py:"));
        assert!(is_file_line("Cargo.toml:"));
        assert!(!is_file_line("Results:"));
        assert!(!is_file_line("    def put(key):"));
        assert!(!is_file_line("error: could not compile foo.rs:"));
        assert!(!is_file_line(":"));
    }
}

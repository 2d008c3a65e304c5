//! Decides what kind of tool output a text is, from its cleaned lines. Specific kinds are
//! tried before general ones: a test run that prints source snippets is a test run, not
//! source code.

use super::opaque::{self, Opaque};
use super::{
    columns, deptree, diagnostics, gitlog, listing, lockfile, matches, repomap, test_output,
    timestamps, trace, versions,
};

/// What a tool result is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// One JSON document (decided before cleaning; see [`super::json`]).
    Json,
    /// A unified diff.
    Diff,
    /// `git log`, with or without `--stat`.
    GitLog,
    /// A test run: cargo test, pytest, jest, mocha, go test, unittest.
    Test,
    /// A package install: npm, pip.
    Install,
    /// A build tool's status lines, one per unit of work: cargo's `Downloaded` and
    /// `Compiling`, pip's `Collecting`.
    Build,
    /// Compiler diagnostics: rustc/cargo, tsc, gcc/clang.
    Diagnostics,
    /// Stack traces: Python, Rust, JS, Java.
    Trace,
    /// `grep -rn` / `rg` matches, with or without line numbers and context lines.
    Grep,
    /// `find` output, one path per line.
    Find,
    /// `ls -l` / `ls -la` / `ls -laR`.
    Ls,
    /// Download bars, percentages, spinners.
    Progress,
    /// Source code or a numbered file read: never rewritten.
    Code,
    /// Human-written text: never rewritten.
    Prose,
    /// A table padded into columns under a rule of dashes: `pip list`.
    Columns,
    /// A dependency tree drawn with box glyphs: `npm ls`, `cargo tree`, `pipdeptree`.
    Tree,
    /// A lock file read as text: `Cargo.lock`, `poetry.lock`.
    Lockfile,
    /// Names one a line: `git tag`, `git branch -a`, `npm view <pkg> versions`.
    Versions,
    /// A server's or daemon's log, most lines opening with a timestamp.
    Timestamped,
    /// aider's repository map: file names, each with signature lines drawn with `│`.
    RepoMap,
    /// A block no rewrite can shrink without losing facts: a minified bundle, base64, a
    /// hex dump.
    Opaque(Opaque),
    /// Anything else that reads like a log.
    Log,
}

impl Kind {
    /// Passed as sent by the default level whatever it holds: source code, prose and a diff
    /// under review are never rewritten, and an opaque block cannot be without losing facts.
    pub(crate) fn kept_whole(self) -> bool {
        matches!(
            self,
            Kind::Code | Kind::Prose | Kind::Diff | Kind::Opaque(_)
        )
    }
}

/// Counts taken in one pass over the lines.
#[derive(Default)]
struct Tally {
    non_blank: usize,
    numbered: usize,
    diff_headers: usize,
    hunks: usize,
    commits: usize,
    test_lines: usize,
    tree: usize,
    lock_packages: usize,
    names: usize,
    version_lists: usize,
    stamped: usize,
    npm_lines: usize,
    status: usize,
    diagnostics: usize,
    trace_marks: usize,
    grep: usize,
    grep_separators: usize,
    ls: usize,
    ls_other: usize,
    paths: usize,
    progress: usize,
    code: usize,
    code_keywords: usize,
    prose: usize,
    sentences: usize,
    map: repomap::Tally,
    opaque: opaque::Tally,
}

/// Classifies cleaned (ANSI-free, `\r`-resolved) text that is not JSON.
pub(crate) fn classify(text: &str) -> Kind {
    if columns::is_table(text) {
        return Kind::Columns;
    }
    let mut t = Tally::default();
    let mut first_line: Option<&str> = None;
    for line in sample(text) {
        if line.trim().is_empty() {
            continue;
        }
        t.non_blank += 1;
        first_line.get_or_insert(line);
        t.map.add(line);
        t.opaque.add(line);
        if is_numbered_source_line(line) {
            t.numbered += 1;
        }
        if line.starts_with("diff --git ") || line.starts_with("--- ") || line.starts_with("+++ ") {
            t.diff_headers += 1;
        }
        if line.starts_with("@@ -") {
            t.hunks += 1;
        }
        if gitlog::is_commit_line(line) {
            t.commits += 1;
        }
        if test_output::is_test_marker(line) {
            t.test_lines += 1;
        }
        if deptree::branch(line).is_some() {
            t.tree += 1;
        }
        if line == lockfile::PACKAGE {
            t.lock_packages += 1;
        }
        if versions::is_listed_name(line) {
            t.names += 1;
        }
        if versions::is_version_list(line) {
            t.version_lists += 1;
        }
        if timestamps::timestamp_span(line).is_some() {
            t.stamped += 1;
        }
        if line.starts_with("npm ") || line.starts_with("added ") && line.contains(" package") {
            t.npm_lines += 1;
        }
        if super::lines::status_verb(line).is_some() {
            t.status += 1;
        }
        if diagnostics::headline(line).is_some() {
            t.diagnostics += 1;
        }
        if trace::is_trace_marker(line) {
            t.trace_marks += 1;
        }
        if line == "--" {
            t.grep_separators += 1;
        } else if matches::split_numbered(line).is_some()
            || matches::split_plain(line).is_some()
            || matches::looks_like_context(line)
        {
            t.grep += 1;
        }
        if listing::parse_ls(line).is_some() {
            t.ls += 1;
        } else if listing::is_ls_chrome(line) {
            t.ls_other += 1;
        }
        if listing::is_path_line(line) {
            t.paths += 1;
        }
        if super::lines::is_progress(line) {
            t.progress += 1;
        }
        let (code, keyword) = code_signals(line);
        t.code += usize::from(code);
        t.code_keywords += usize::from(keyword);
        if is_prose_line(line) {
            t.prose += 1;
            let end = line.trim_end();
            if end.ends_with(['.', '?', '!']) || end.contains(". ") || end.starts_with('#') {
                t.sentences += 1;
            }
        }
    }
    decide(&t, first_line.unwrap_or(""))
}

/// Lines looked at: all of a text up to `SAMPLE_LINES`, else its first and last halves of
/// that many — what a tool prints first (headers) and last (summaries) tells its kind.
const SAMPLE_LINES: usize = 2000;

fn sample(text: &str) -> impl Iterator<Item = &str> {
    let total = memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1;
    let half = SAMPLE_LINES / 2;
    text.lines()
        .enumerate()
        .filter(move |(i, _)| total <= SAMPLE_LINES || *i < half || *i + half >= total)
        .map(|(_, l)| l)
}

fn decide(t: &Tally, first_line: &str) -> Kind {
    let n = t.non_blank.max(1);
    let share = |k: usize| k * 100 / n;
    if share(t.numbered) >= 60 {
        return Kind::Code;
    }
    if gitlog::is_commit_line(first_line) {
        return Kind::GitLog;
    }
    if t.hunks > 0 && t.diff_headers >= 2 {
        return Kind::Diff;
    }
    // before the kinds its lines of code could pass for
    if t.map.is_map() {
        return Kind::RepoMap;
    }
    if let Some(what) = t.opaque.kind() {
        return Kind::Opaque(what);
    }
    // A test runner's tree (JUnit's console launcher) is a test run.
    if t.test_lines >= 5 && share(t.test_lines) >= 30 {
        return Kind::Test;
    }
    // A lock file is data whatever its entries are called.
    let generated = first_line.contains("@generated");
    if t.lock_packages >= 3 && (generated || share(t.lock_packages) >= 5) {
        return Kind::Lockfile;
    }
    // A listing is a listing whatever the lines it lists say (a grep for `error` is
    // full of error words).
    if t.grep >= 3 && share(t.grep + t.grep_separators) >= 80 {
        return Kind::Grep;
    }
    if t.ls >= 3 && share(t.ls + t.ls_other) >= 80 {
        return Kind::Ls;
    }
    if t.paths >= 5 && share(t.paths) >= 90 {
        return Kind::Find;
    }
    if t.names >= 20 && share(t.names) >= 90 {
        return Kind::Versions;
    }
    // `pip index versions`: a name, its one long list, what is installed
    if t.version_lists == 1 && t.non_blank <= 8 {
        return Kind::Versions;
    }
    if t.test_lines >= 2 {
        return Kind::Test;
    }
    // a dependency tree (`npm ls`, `cargo tree`), once no test run has claimed the glyphs
    if t.tree >= 5 && share(t.tree) >= 60 {
        return Kind::Tree;
    }
    if t.npm_lines >= 3 && share(t.npm_lines) >= 30 {
        return Kind::Install;
    }
    // A log's error lines and stack traces are part of the log.
    if t.stamped >= 8 && share(t.stamped) >= 60 {
        return Kind::Timestamped;
    }
    if t.diagnostics >= 1 && !looks_like_source(t) {
        return Kind::Diagnostics;
    }
    if t.trace_marks >= 1 && !looks_like_source(t) {
        return Kind::Trace;
    }
    if t.status >= 3 && share(t.status) >= 50 {
        return Kind::Build;
    }
    if looks_like_source(t) {
        return Kind::Code;
    }
    if share(t.progress) >= 30 {
        return Kind::Progress;
    }
    // sentences, not just wordy log lines: prose ends its lines with full stops
    if share(t.prose) >= 40 && t.sentences * 100 / t.prose.max(1) >= 30 {
        return Kind::Prose;
    }
    Kind::Log
}

fn looks_like_source(t: &Tally) -> bool {
    let n = t.non_blank.max(1);
    t.code_keywords >= 3 && t.code * 100 / n >= 40
}

/// `cat -n` (`   12\t…`) or an agent's file-read format (`    12→…`).
fn is_numbered_source_line(line: &str) -> bool {
    let trimmed = line.trim_start();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let rest = trimmed.get(digits..).unwrap_or("");
    rest.starts_with('\t') || rest.starts_with('→') || rest.is_empty() && digits < 7
}

/// Keywords that open a line of source in the languages agents read most.
const CODE_KEYWORDS: &[&str] = &[
    "fn",
    "pub",
    "use",
    "impl",
    "struct",
    "enum",
    "let",
    "mod",
    "trait",
    "match",
    "def",
    "class",
    "import",
    "from",
    "return",
    "elif",
    "except",
    "const",
    "var",
    "function",
    "package",
    "func",
    "#include",
    "#define",
    "public",
    "private",
    "protected",
    "static",
    "async",
    "export",
    "interface",
    "type",
    "namespace",
    "using",
    "if",
    "for",
    "while",
    "else",
    "try",
    "catch",
];

/// (looks like a line of code, opens with a code keyword).
fn code_signals(line: &str) -> (bool, bool) {
    let trimmed = line.trim();
    let first = trimmed
        .split(|c: char| c.is_whitespace() || c == '(' || c == '<' || c == ':')
        .next()
        .unwrap_or("");
    let keyword = CODE_KEYWORDS.contains(&first) && trimmed.len() > first.len();
    let punct = trimmed.ends_with(['{', '}', ';', '(', ',', ')'])
        || trimmed == "}"
        || trimmed.starts_with("//")
        || trimmed.starts_with("/*")
        || trimmed.starts_with("* ")
        || trimmed.starts_with("#[")
        || trimmed.starts_with('@')
        || trimmed.ends_with(':') && keyword
        || trimmed.starts_with('<') && trimmed.ends_with('>');
    (keyword || punct, keyword)
}

/// A sentence-like line: five or more words, almost all letters, hardly any digits — or a
/// Markdown heading or bullet.
fn is_prose_line(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.starts_with("# ") || trimmed.starts_with("## ") || trimmed.starts_with("### ") {
        return true;
    }
    let words = trimmed.split_whitespace().count();
    if words < 5 {
        return false;
    }
    let total = trimmed.chars().count().max(1);
    let letters = trimmed
        .chars()
        .filter(|c| c.is_alphabetic() || c.is_whitespace() || matches!(c, ',' | '.' | '\'' | '’'))
        .count();
    let digits = trimmed.chars().filter(char::is_ascii_digit).count();
    letters * 100 / total >= 85 && digits * 100 / total < 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_file_reads_are_code() {
        let text: String = (1..40)
            .map(|i| format!("{i:>6}→let x{i} = compute({i});\n"))
            .collect();
        assert_eq!(classify(&text), Kind::Code);
    }

    #[test]
    fn rust_source_is_code() {
        let text = "use std::io;\n\npub fn main() {\n    let x = 1;\n    if x > 0 {\n        println!(\"{x}\");\n    }\n}\n\nfn other() -> u8 {\n    7\n}\n";
        assert_eq!(classify(text), Kind::Code);
    }

    #[test]
    fn python_source_is_code() {
        let text = "import os\nfrom sys import argv\n\nclass Loader:\n    def __init__(self, path):\n        self.path = path\n\n    def load(self):\n        return open(self.path).read()\n\ndef main():\n    print(Loader(argv[1]).load())\n";
        assert_eq!(classify(text), Kind::Code);
    }

    #[test]
    fn markdown_prose_is_prose() {
        let text = "# Trimgate\n\nTrimgate is a local gateway that sits between a coding agent and the provider.\nIt keeps the conversation intact while making every request cheaper and faster.\n\n## Why\n\nAgents read long tool outputs again on every turn of the conversation, which costs money.\n";
        assert_eq!(classify(text), Kind::Prose);
    }

    #[test]
    fn cargo_status_lines_are_a_build() {
        let text: String = (0..30)
            .map(|i| format!("   Compiling crate-{i} v0.{i}.0\n"))
            .chain(["    Finished `dev` profile in 4.1s\n".to_owned()])
            .collect();
        assert_eq!(classify(&text), Kind::Build);
    }

    #[test]
    fn a_server_log_with_timestamps_is_timestamped() {
        let text: String = (0..50)
            .map(|i| {
                format!(
                    "2024-05-01T10:00:{:02}Z INFO http: GET /api/items/{i} 200 {i}ms\n",
                    i % 60
                )
            })
            .collect();
        assert_eq!(classify(&text), Kind::Timestamped);
    }

    #[test]
    fn an_untimed_log_is_a_log() {
        let text: String = (0..50)
            .map(|i| format!("worker {i}: GET /api/items/{i} 200\n"))
            .collect();
        assert_eq!(classify(&text), Kind::Log);
    }
}

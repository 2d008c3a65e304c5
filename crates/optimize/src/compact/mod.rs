//! Tool-output compaction: rewrites the text of one tool result (a build log, test
//! output, a grep listing, a JSON document…) into fewer tokens without losing the facts
//! an agent acts on. Pure text in, text out; the pipeline decides whether the result pays.
//!
//! A text goes through: the agent's wrapper set aside → escape stripping → classification →
//! the compactor for its kind → the shared line passes → the wrapper put back. The rooms:
//!
//! - [`wrapper`]     — agents' wrappers around an output (Codex's header and JSON string,
//!   Claude Code's exit-code line and reminders), kept byte for byte.
//! - [`ansi`]        — ANSI/OSC escapes, `\r` redraws, trailing blanks.
//! - [`classify`]    — which kind of output a text is ([`classify::Kind`]).
//! - [`lines`]       — the row type, markers, and the passes every log shares: repeats,
//!   `Compiling …` runs, runs differing only in numbers, progress runs, head/tail.
//! - [`test_output`] — cargo test, pytest, unittest, jest, mocha, go test.
//! - [`timestamps`]  — server and daemon logs: lines that differ only in timestamps and
//!   ids fold, first and last of each message kept.
//! - [`install`]     — npm / pip install logs.
//! - [`diagnostics`] — rustc/cargo, tsc and gcc/clang diagnostics.
//! - [`trace`]       — Python tracebacks, Rust backtraces, JS and Java frames.
//! - [`listing`]     — `grep -rn`/`rg`, `find`, `ls -l`.
//! - [`gitlog`]      — `git log`, `--stat`, `-p`.
//! - [`deptree`]     — `npm ls`, `cargo tree`, `pipdeptree`: guide bars blanked.
//! - [`lockfile`]    — `Cargo.lock`, `poetry.lock`: the shared source said once.
//! - [`versions`]    — `git tag`, `git branch -a`, version lists: runs in brace form.
//! - [`json`]        — minification; sampling of long arrays at Aggressive.
//! - [`json_table`]  — arrays of records as tables: keys once, a line of values each.
//! - [`diff`]        — unified diffs, touched as little as possible.
//!
//! Rules every room keeps: the same input and level give the same bytes; every removal
//! leaves a factual marker (`[… 1,204 lines elided …]`); source code and prose are never
//! rewritten; output the classifier cannot place ([`classify::Kind::Log`]) loses no line
//! of content below Aggressive — exact repeats fold with a count and noise goes, nothing
//! else; the result is `None` unless it is strictly shorter than the input.

mod ansi;
mod classify;
mod deptree;
mod diagnostics;
mod diff;
mod gitlog;
mod install;
mod json;
mod json_table;
mod lines;
mod listing;
mod lockfile;
mod test_output;
mod timestamps;
mod trace;
mod versions;
mod wrapper;

#[cfg(test)]
mod tests;

use classify::Kind;
use lines::Row;

/// How hard to compact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    Light,
    Standard,
    Aggressive,
    /// Picks a level per content kind.
    Auto,
}

/// Head and tail rows kept of a long stack trace or progress log (and, at Aggressive, of
/// a long log of no known kind), per level.
const STANDARD_HEAD_TAIL: (usize, usize) = (40, 60);
const AGGRESSIVE_HEAD_TAIL: (usize, usize) = (20, 30);

/// Compacts `text`, or `None` when it should pass unchanged (source code, prose, too small,
/// nothing to gain). An output inside an agent's wrapper is compacted as it would be bare,
/// and the wrapper around it stays as it was, byte for byte.
pub fn compact(text: &str, level: Level) -> Option<String> {
    compact_retrievable(text, level, "")
}

/// As [`compact`], with `line` after the output (inside an agent's wrapper, which stays as
/// it was) when something was elided: where the whole block can be had back.
pub fn compact_retrievable(text: &str, level: Level, line: &str) -> Option<String> {
    let with_line = |mut out: String| {
        // Every marker that stands for removed text says "elided" (`lines elided …`,
        // `… elided, each as …`): the line goes wherever one does.
        if out.contains(" elided") {
            out.push_str(line);
        }
        out
    };
    let out = match wrapper::split(text) {
        Some(wrapped) => wrapped.rewrap(&with_line(compact_output(wrapped.output(), level)?))?,
        None => with_line(compact_output(text, level)?),
    };
    (out.len() < text.len()).then_some(out)
}

/// Compacts one command's output, as the command printed it.
fn compact_output(text: &str, level: Level) -> Option<String> {
    let stripped = ansi::strip(text);
    let out = if json::is_json(&stripped) {
        json::compact(&stripped, resolve(level, Kind::Json))
    } else if let Some(at) = json::trailing_document(&stripped) {
        // A tool's status lines, then its JSON: each part as it would be alone.
        let (head, doc) = stripped.split_at(at);
        let head = compact_text(head, level).unwrap_or_else(|| head.trim_end().to_string());
        format!("{head}\n{}", json::compact(doc, resolve(level, Kind::Json)))
    } else {
        compact_text(&stripped, level)?
    };
    (out.len() < text.len()).then_some(out)
}

/// Compacts text that is not JSON, by its kind; `None` for code and prose.
fn compact_text(stripped: &str, level: Level) -> Option<String> {
    let tidy = ansi::tidy(stripped);
    let kind = classify::classify(&tidy);
    let level = resolve(level, kind);
    Some(match kind {
        Kind::Code | Kind::Prose => return None,
        Kind::Diff => diff::compact(stripped, level),
        _ => lines::join(&compact_rows(lines::rows(&tidy), kind, level)),
    })
}

pub use lines::thousands;

/// Undoes the lossless regroupings of listings: grep matches and find paths grouped under
/// their file or directory, names grouped in brace form, tree guide bars blanked, JSON
/// tables (back to the minified document: the evaluator compares with whitespace
/// squashed, so the original's own whitespace need not come back). Shows
/// the rewrites lose nothing (the savings evaluator checks facts in this view too). An
/// output inside an agent's wrapper is expanded as it would be bare.
pub fn expand_listings(text: &str) -> String {
    let wrapped = wrapper::split(text);
    let text = wrapped.as_ref().map_or(text, |w| w.output());
    let text = json_table::expand(text);
    listing::expand(&deptree::redraw(&versions::expand(&text)))
}

/// Text without ANSI/OSC escapes (for the strict squeeze, which shares them).
pub fn strip_escapes(text: &str) -> String {
    ansi::strip(text).into_owned()
}

/// Whether `text` is one JSON object or array.
pub fn is_json(text: &str) -> bool {
    json::is_json(text)
}

/// A JSON document without whitespace between tokens; key order and values byte for byte.
pub fn minify_json(text: &str) -> String {
    json::minify(text)
}

/// The level `Auto` means for a kind; explicit levels stay.
fn resolve(level: Level, kind: Kind) -> Level {
    match (level, kind) {
        (Level::Auto, Kind::Diff) => Level::Light,
        // `ls -l` columns (mode, owner, date) are dropped from Standard up: facts an agent
        // may need, so by default a listing keeps them.
        (Level::Auto, Kind::Ls) => Level::Light,
        (Level::Auto, Kind::Progress) => Level::Aggressive,
        (Level::Auto, _) => Level::Standard,
        (explicit, _) => explicit,
    }
}

/// The kind's own compactor, then the shared passes that suit the kind.
///
/// Output of no known kind ([`Kind::Log`]) is content the compactor cannot read, so below
/// Aggressive none of its lines is cut: only noise goes (escapes, `\r` redraws, runs of
/// blank lines, the updates of one progress bar but its last) and exact repeats fold with
/// a count. Runs that differ only in numbers, status runs, command echoes, library frames
/// and the head/tail cut are for kinds whose facts are known, and for Aggressive.
fn compact_rows(rows: Vec<Row>, kind: Kind, level: Level) -> Vec<Row> {
    let standard = level != Level::Light;
    let aggressive = level == Level::Aggressive;
    let mut rows = match kind {
        Kind::GitLog => gitlog::compact(rows, level),
        Kind::Test => test_output::compact(rows, level),
        Kind::Timestamped => timestamps::compact(rows, level),
        Kind::Install => install::compact(rows, level),
        Kind::Diagnostics => diagnostics::compact(rows, level),
        Kind::Grep => listing::compact_grep(rows, level),
        Kind::Find => listing::compact_find(rows, level),
        Kind::Ls => listing::compact_ls(rows, level),
        Kind::Tree => deptree::compact(rows, level),
        Kind::Lockfile => lockfile::compact(rows, level),
        Kind::Versions => versions::compact(rows, level),
        _ => rows,
    };
    // Content of no known kind, below Aggressive: no line of it is cut.
    let unread = kind == Kind::Log && !aggressive;
    let log_like = matches!(
        kind,
        Kind::Test | Kind::Trace | Kind::Log | Kind::Install | Kind::Build | Kind::Progress
    );
    if standard {
        // a server's log carries the stack traces of the errors it logged
        if (log_like || kind == Kind::Timestamped) && !unread {
            rows = trace::compact(rows, level);
        }
        if log_like || kind == Kind::Diagnostics {
            if !unread {
                rows = lines::shorten_command_echoes(rows);
            }
            rows = lines::fold_progress(rows);
            if !unread {
                rows = lines::fold_status_runs(rows, !aggressive);
            }
        }
        if log_like && kind != Kind::Trace && !unread {
            rows = lines::fold_number_runs(rows);
        }
    }
    rows = lines::fold_repeats(rows);
    let cut = matches!(kind, Kind::Log | Kind::Trace | Kind::Progress)
        || (aggressive && kind == Kind::Timestamped);
    if standard && !unread && cut {
        let (head, tail) = if aggressive {
            AGGRESSIVE_HEAD_TAIL
        } else {
            STANDARD_HEAD_TAIL
        };
        rows = lines::head_tail(rows, head, tail);
    }
    rows
}

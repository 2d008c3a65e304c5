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
//! - [`logruns`]     — timestamped lines that open alike: what a run repeats said once.
//! - [`logfields`]   — `key=value` fields a run's lines share, said once under its head.
//! - [`install`]     — npm / pip install logs.
//! - [`diagnostics`] — rustc/cargo, tsc and gcc/clang diagnostics.
//! - [`trace`]       — Python tracebacks, Rust backtraces, JS and Java frames.
//! - [`matches`]     — `grep -rn`, `rg`, with or without line numbers and context.
//! - [`listing`]     — `find`; `ls -l` cut to names at Aggressive.
//! - [`ls`]          — `ls -l`: the columns entries share said once, every line given back.
//! - [`gitlog`]      — `git log`, `--stat`, `-p`: an author the commit above had said once.
//! - [`columns`]     — `pip list`: tables padded under a rule of dashes.
//! - [`deptree`]     — `npm ls`, `cargo tree`, `pipdeptree`: guide bars blanked, a
//!   package's one version said at its first line.
//! - [`lockfile`]    — `Cargo.lock` one package a row, `poetry.lock` one file a line.
//! - [`versions`]    — `git tag`, `git branch -a`, version lists: runs in brace form,
//!   counted runs as `first..last`.
//! - [`repomap`]     — aider's repository map: guide bars dropped, `⋮` said in one token;
//!   outlined to its definitions at Aggressive.
//! - [`opaque`]      — minified bundles, base64, hex dumps: whole by default, a head and
//!   a marker at Aggressive.
//! - [`links`]       — Markdown link definitions that differ only in a number (changelogs).
//! - [`json`]        — minification; sampling of long arrays at Aggressive.
//! - [`json_table`]  — arrays of records as tables: keys once, a line of values each;
//!   long arrays of names in brace form.
//! - [`diff`]        — unified diffs, touched as little as possible.
//! - [`legend`]      — paths and addresses an output repeats, said once above it (last,
//!   over what the room for its kind wrote; not on code, prose, diffs or opaque blocks).
//!
//! Rules every room keeps: the same input and level give the same bytes; every removal
//! leaves a factual marker (`[… 1,204 lines elided …]`); source code and prose are never
//! rewritten; output the classifier cannot place ([`classify::Kind::Log`]) loses no line
//! of content below Aggressive — exact repeats fold with a count and noise goes, nothing
//! else; the result is `None` unless it is strictly shorter than the input.

mod ansi;
mod classify;
mod columns;
mod deptree;
mod diagnostics;
mod diff;
mod gitlog;
mod install;
mod json;
mod json_table;
mod legend;
mod lines;
mod links;
mod listing;
mod lockfile;
mod logfields;
mod logruns;
mod ls;
mod matches;
mod opaque;
mod repomap;
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
    // An array of names one a line (`npm view <pkg> versions --json`) groups as a listing:
    // shorter than minified, and the same text when expanded.
    let names = level != Level::Light && versions::is_name_array(&stripped);
    let out = if json::is_json(&stripped) && !names {
        said_once(json::compact(&stripped, resolve(level, Kind::Json)), level)
    } else if let Some(at) = json::trailing_document(&stripped) {
        // A tool's status lines, then its JSON: each part as it would be alone.
        let (head, doc) = stripped.split_at(at);
        let head =
            compact_text(head, level).map_or_else(|| head.trim_end().to_string(), |(o, _)| o);
        said_once(
            format!("{head}\n{}", json::compact(doc, resolve(level, Kind::Json))),
            level,
        )
    } else {
        let (out, kind) = compact_text(&stripped, level)?;
        // A map holds code, and what the default keeps whole takes no legend either.
        if kind.kept_whole() || kind == Kind::RepoMap {
            out
        } else {
            said_once(out, level)
        }
    };
    (out.len() < text.len()).then_some(out)
}

/// `out` under a legend of the paths and addresses it repeats, where one pays; below
/// Light, which changes nothing but noise.
fn said_once(out: String, level: Level) -> String {
    if level == Level::Light {
        return out;
    }
    legend::apply(&out).unwrap_or(out)
}

/// Compacts text that is not JSON, by its kind (returned with it); `None` for code and
/// prose, and for an opaque block below Aggressive.
fn compact_text(stripped: &str, level: Level) -> Option<(String, Kind)> {
    let tidy = ansi::tidy(stripped);
    let kind = classify::classify(&tidy);
    let level = resolve(level, kind);
    let out = match kind {
        Kind::Code | Kind::Prose => return None,
        Kind::Diff => diff::compact(stripped, level),
        Kind::RepoMap => repomap::compact(&tidy, level),
        Kind::Opaque(what) if level == Level::Aggressive => opaque::cut(&tidy, what)?,
        Kind::Opaque(_) => return None,
        _ => lines::join(&compact_rows(lines::rows(&tidy), kind, level)),
    };
    Some((out, kind))
}

pub use lines::thousands;

/// Undoes the lossless regroupings of listings: grep matches and find paths grouped under
/// their file or directory, names grouped in brace form, tree guide bars blanked and
/// sibling leaves joined, table padding taken out, link definitions joined, `ls -l` columns
/// said once, Cargo.lock packages one a row, lock files' files tables one name and hash a
/// line, log runs' shared openings said once, a repo map's drawing taken off, exact repeats
/// counted, JSON tables (back to the minified document: the evaluator compares with
/// whitespace squashed, so the original's own whitespace need not come back). Shows the
/// rewrites lose nothing (the savings evaluator checks facts in this view too). An output
/// inside an agent's wrapper is expanded as it would be bare.
pub fn expand_listings(text: &str) -> String {
    let wrapped = wrapper::split(text);
    expand_bare(wrapped.as_ref().map_or(text, |w| w.output()))
}

/// [`expand_listings`] of an output without a wrapper. The legend's strings come back
/// first (said once last), then exact repeats folded by the shared passes; then the repo map (its guide bars keep
/// its lines of code from reading as listings) and the match listing (it gives back lines
/// another expander could mistake for its own grouping).
fn expand_bare(text: &str) -> String {
    let text = lines::expand_repeats(&legend::expand(text));
    let text = repomap::expand(&json_table::expand(&text));
    let text = links::expand(&matches::expand(&text));
    let text = lockfile::expand(&ls::expand(&logruns::expand(&text)));
    let text = listing::expand(&deptree::redraw(&versions::expand(&text)));
    columns::expand(&text)
}

/// Whether the default level passes `text` as sent whatever it holds, by rule: source
/// code, prose and a diff under review are never rewritten, and an opaque block (a
/// minified bundle, base64, a hex dump) cannot be without losing facts. Decided by the
/// classifier [`compact`] uses, on the output inside an agent's wrapper. The savings
/// report counts these tokens apart, so a share saved is read against what could be saved.
pub fn untouchable(text: &str) -> bool {
    let output = output_of(text);
    let stripped = ansi::strip(&output);
    if json::is_json(&stripped) {
        return false;
    }
    classify::classify(&ansi::tidy(&stripped)).kept_whole()
}

/// The command's output inside an agent's wrapper, or the whole text when it has none.
pub fn output_of(text: &str) -> std::borrow::Cow<'_, str> {
    wrapper::split(text).map_or(
        std::borrow::Cow::Borrowed(text),
        wrapper::Wrapped::into_output,
    )
}

/// `text`'s agent wrapper around `output` instead of the one it holds; `output` alone
/// when `text` has no wrapper.
pub fn rewrap(text: &str, output: &str) -> Option<String> {
    match wrapper::split(text) {
        Some(wrapped) => wrapped.rewrap(output),
        None => Some(output.to_owned()),
    }
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
        (Level::Auto, Kind::Progress) => Level::Aggressive,
        (Level::Auto, _) => Level::Standard,
        (explicit, _) => explicit,
    }
}

/// The kind's own compactor, then the shared passes that suit the kind.
///
/// Output of no known kind ([`Kind::Log`]) is content the compactor cannot read, so below
/// Aggressive none of its lines is cut: only noise goes (escapes, `\r` redraws, runs of
/// blank lines, the updates of one progress bar but its last), exact repeats fold with a
/// count, and Markdown link definitions that differ only in a number share a line (both
/// expand back). Runs that differ only in numbers, status runs, command echoes, library frames
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
        Kind::Grep => matches::compact(rows, level),
        Kind::Find => listing::compact_find(rows, level),
        // Standard keeps every column (said once); Aggressive keeps the names.
        Kind::Ls if level == Level::Standard => ls::compact(rows),
        Kind::Ls => listing::compact_ls(rows, level),
        Kind::Tree => deptree::compact(rows, level),
        Kind::Columns => columns::compact(rows, level),
        Kind::Log if standard => links::compact(rows),
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
    // Last, so every other pass has read the lines whole.
    if standard && kind == Kind::Timestamped {
        rows = logruns::compact(rows);
    }
    rows
}

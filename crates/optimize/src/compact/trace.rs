//! Stack traces: Python tracebacks, Rust backtraces, JS and Java `at …` frames. Frames in
//! the user's code stay; runs of frames inside the runtime, the standard library or
//! installed packages become one marker that names them (packages by their own names,
//! runtimes by their modules): `[… 15 library frames elided (express, node:internal) …]`.
//! Exception and panic messages, `Caused by:` and chaining lines always stay.

use super::lines::{count, Elided, Row, Tag};
use super::Level;

/// A line that only appears in a stack trace.
pub(crate) fn is_trace_marker(line: &str) -> bool {
    let t = line.trim();
    t == "Traceback (most recent call last):"
        || t == "stack backtrace:"
        || t.starts_with("thread '") && t.contains("' panicked at ")
        || t.starts_with("Exception in thread ")
        || js_java_frame(line)
}

/// `    at fn (file:1:2)` or `\tat pkg.Class.method(File.java:12)`.
fn js_java_frame(line: &str) -> bool {
    let lead = line.len() - line.trim_start().len();
    lead > 0 && line.trim_start().starts_with("at ") && (line.contains(':') || line.contains('('))
}

/// The library a JS or Java frame is in (the runtime, the JDK, a test runner, a package
/// under `node_modules`), or `None` for the user's code.
fn js_java_library(frame: &str) -> Option<String> {
    // node prints the error's own properties after the last frame: `at … {`
    if frame.trim_end().ends_with('{') {
        return None;
    }
    let f = frame.trim_start().trim_start_matches("at ");
    let f = f.strip_prefix("async ").unwrap_or(f);
    let f = f.strip_prefix("new ").unwrap_or(f);
    // a package under `node_modules` by its name alone: the marker says it is a library
    if let Some(package) = node_package(f) {
        return Some(package.to_string());
    }
    if let Some(module) = f
        .strip_prefix("node:")
        .or_else(|| f.split_once("(node:").map(|(_, m)| m))
    {
        let end = module.find(['/', ':', ')']).unwrap_or(module.len());
        return Some(format!("node:{}", module.get(..end).unwrap_or("")));
    }
    if f.starts_with("internal/") || f.contains("(internal/") {
        return Some("node:internal".into());
    }
    if f.ends_with("(<anonymous>)")
        || f.starts_with("<anonymous>")
        || f.starts_with("Promise.all (index ")
    {
        return Some("js builtins".into());
    }
    if f.starts_with("process.processTicksAndRejections") {
        return Some("node:internal".into());
    }
    // Java: `java.base/java.lang.Integer.parseInt(…)` names its module
    let class = f.split('(').next().unwrap_or(f);
    if let Some((module, _)) = class.split_once('/') {
        if module.starts_with("java.") || module.starts_with("jdk.") {
            return Some(module.to_string());
        }
    }
    if JAVA_LIBRARIES.iter().any(|p| class.starts_with(p)) {
        let mut parts = class.split('.');
        let (a, b) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        return Some(format!("{a}.{b}"));
    }
    None
}

/// Java packages of the JDK, other JVM languages' runtimes, test runners, build tools and
/// the frameworks a stack passes through on its way to the user's code.
const JAVA_LIBRARIES: &[&str] = &[
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "com.sun.",
    "kotlin.",
    "kotlinx.coroutines.",
    "scala.",
    "org.junit.",
    "junit.",
    "org.testng.",
    "org.mockito.",
    "org.assertj.",
    "org.gradle.",
    "org.apache.maven.",
    "org.springframework.",
    "io.netty.",
    "reactor.core.",
];

/// The package a frame under `node_modules` is in (the innermost, for nested ones):
/// `express`, `@babel/core`.
fn node_package(frame: &str) -> Option<&str> {
    let at = frame
        .rfind("node_modules/")
        .map(|i| i + "node_modules/".len())
        .or_else(|| {
            frame
                .rfind("node_modules\\")
                .map(|i| i + "node_modules\\".len())
        })?;
    let rest = frame.get(at..)?;
    let mut cut = rest.match_indices(['/', '\\']).map(|(i, _)| i);
    let end = if rest.starts_with('@') {
        cut.nth(1)
    } else {
        cut.next()
    };
    end.and_then(|e| rest.get(..e))
}

/// The library a Python frame is in (an installed package by its name, `requests`; the
/// standard library's module, `python3.11/json`; `<frozen runpy>`), or `None` for the
/// user's code.
fn python_library(frame: &str) -> Option<String> {
    let path = frame.split('"').nth(1).unwrap_or("");
    if path.starts_with("<frozen ") {
        return Some(path.to_string());
    }
    for dir in ["/site-packages/", "/dist-packages/"] {
        if let Some(at) = path.rfind(dir) {
            let rest = path.get(at + dir.len()..).unwrap_or("");
            let package = rest.split('/').next().unwrap_or(rest);
            let package = package.strip_suffix(".py").unwrap_or(package);
            return Some(package.to_string());
        }
    }
    if let Some(at) = path.find("/lib/python") {
        let rest = path.get(at + "/lib/".len()..).unwrap_or("");
        let mut parts = rest.split('/');
        let version = parts.next().unwrap_or("python");
        let module = parts.next().unwrap_or("");
        let module = module.strip_suffix(".py").unwrap_or(module);
        return Some(format!("{version}/{module}"));
    }
    path.contains("\\Lib\\").then(|| "python Lib".to_string())
}

/// The crate a Rust frame is in, if it is std/core/alloc, the test harness, an async
/// runtime or a crate from the registry; `None` for the user's code.
fn rust_library(symbol: &str, location: Option<&str>) -> Option<String> {
    let s = symbol.trim_start_matches('<');
    let named = || {
        let path = s.split("::").next().unwrap_or(s);
        // `<usize as core::slice::index::SliceIndex<…>>::index`: the trait's crate
        let path = match s.split_once(" as ") {
            Some((_, to)) if !path.contains(['(', '<']) => to.split("::").next().unwrap_or(to),
            _ => path,
        };
        if path == "__rustc" {
            "std".to_string()
        } else if s.contains("::") && !path.contains(['(', ' ', '<']) {
            path.to_string()
        } else if s.starts_with("fn(") || s.starts_with("F as ") || s.starts_with("usize as ") {
            "core".to_string()
        } else if ["_start", "__libc_start", "start_thread", "clone"]
            .iter()
            .any(|c| s.starts_with(c))
        {
            "libc".to_string()
        } else {
            "std".to_string()
        }
    };
    if let Some(loc) = location {
        if loc.contains("/rustc/")
            || loc.contains("/.cargo/registry/")
            || loc.contains("/library/std/")
        {
            return Some(named());
        }
    }
    const CRATES: &[&str] = &[
        "std::",
        "core::",
        "alloc::",
        "test::",
        "tokio::",
        "futures",
        "hyper::",
        "__rustc::",
        "rust_begin_unwind",
        "__rust_",
        "_start",
        "__libc_start",
        "start_thread",
        "clone",
        "fn(",
        "F as core::",
        "F as alloc::",
    ];
    (CRATES.iter().any(|c| s.starts_with(c)) || s.starts_with("usize as core::")).then(named)
}

/// `   12: symbol` → `symbol` (a Rust backtrace frame line).
fn rust_frame_symbol(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    t.get(digits..)?.strip_prefix(": ")
}

/// One frame: its rows, and the library it is in (`None` for the user's code).
struct Frame {
    rows: Vec<Row>,
    library: Option<String>,
}

/// Emits frames: user frames and the first and last frame stay; runs of library frames
/// become one marker that names the libraries.
fn emit_frames(out: &mut Vec<Row>, frames: Vec<Frame>, keep_first: bool, keep_last: bool) {
    let n = frames.len();
    let mut run = Run::default();
    for (i, frame) in frames.into_iter().enumerate() {
        let keep = frame.library.is_none() || (keep_first && i == 0) || (keep_last && i + 1 == n);
        if keep {
            run.flush(out);
            out.extend(frame.rows.into_iter().map(pin));
        } else {
            run.push(frame);
        }
    }
    run.flush(out);
}

/// A run of library frames waiting for its marker.
#[derive(Default)]
struct Run {
    elided: Elided,
    frames: usize,
    libraries: Vec<String>,
}

/// Libraries a marker names; past them it says `…`.
const NAMED_LIBRARIES: usize = 2;

impl Run {
    fn push(&mut self, frame: Frame) {
        self.frames += 1;
        if let Some(library) = frame.library {
            if !self.libraries.contains(&library) {
                self.libraries.push(library);
            }
        }
        frame.rows.into_iter().for_each(|r| self.elided.push(r));
    }

    fn flush(&mut self, out: &mut Vec<Row>) {
        let n = self.frames;
        let mut names: Vec<&str> = self
            .libraries
            .iter()
            .take(NAMED_LIBRARIES)
            .map(String::as_str)
            .collect();
        if self.libraries.len() > NAMED_LIBRARIES {
            names.push("…");
        }
        self.elided.flush(out, |_| {
            format!(
                "{} elided ({})",
                count(n, "library frame", "library frames"),
                names.join(", ")
            )
        });
        self.frames = 0;
        self.libraries.clear();
    }
}

fn pin(row: Row) -> Row {
    if row.tag == Tag::Plain {
        Row::pinned(row.text)
    } else {
        row
    }
}

/// Whether a line of a Python frame is only a caret underline (`   ^^^^^`).
fn is_caret_line(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && t.bytes().all(|b| matches!(b, b'^' | b'~' | b' '))
}

/// Compacts every stack trace in the rows. Light returns them unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let aggressive = level == Level::Aggressive;
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut iter = rows.into_iter().peekable();
    while let Some(row) = iter.next() {
        let trimmed = row.text.trim();
        if trimmed == "Traceback (most recent call last):" {
            out.push(pin(row));
            let mut frames: Vec<Frame> = Vec::new();
            while let Some(next) = iter.peek() {
                let t = next.text.as_str();
                if t.trim_start().starts_with("File \"") && t.starts_with(' ') {
                    let library = python_library(t);
                    frames.push(Frame {
                        rows: iter.next().into_iter().collect(),
                        library,
                    });
                } else if t.starts_with("    ")
                    || t.trim_start().starts_with("[Previous line repeated")
                {
                    let Some(body) = iter.next() else { break };
                    if aggressive && is_caret_line(&body.text) {
                        continue;
                    }
                    match frames.last_mut() {
                        Some(frame) => frame.rows.push(body),
                        None => out.push(body),
                    }
                } else {
                    break;
                }
            }
            emit_frames(&mut out, frames, true, true);
            continue;
        }
        if trimmed == "stack backtrace:" {
            out.push(pin(row));
            let mut frames: Vec<Frame> = Vec::new();
            while let Some(next) = iter.peek() {
                if let Some(symbol) = rust_frame_symbol(&next.text) {
                    let symbol = symbol.to_string();
                    let Some(frame_row) = iter.next() else { break };
                    let mut rows = vec![frame_row];
                    let mut location = None;
                    while let Some(at) = iter.peek() {
                        if at.text.trim_start().starts_with("at ") {
                            location = Some(at.text.clone());
                            rows.extend(iter.next());
                        } else {
                            break;
                        }
                    }
                    let library = rust_library(&symbol, location.as_deref());
                    frames.push(Frame { rows, library });
                } else {
                    break;
                }
            }
            emit_frames(&mut out, frames, false, false);
            continue;
        }
        if js_java_frame(&row.text) {
            let mut frames = vec![Frame {
                library: js_java_library(&row.text),
                rows: vec![row],
            }];
            while let Some(next) = iter.peek() {
                if js_java_frame(&next.text) {
                    let library = js_java_library(&next.text);
                    frames.push(Frame {
                        rows: iter.next().into_iter().collect(),
                        library,
                    });
                } else {
                    break;
                }
            }
            emit_frames(&mut out, frames, true, false);
            continue;
        }
        out.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};
    use crate::compact::{compact, Level};

    const MOCHA_STACKS: &str = include_str!("fixtures/mocha_stacks.txt");
    const PYTHON_SITE_PACKAGES: &str = include_str!("fixtures/python_site_packages.txt");
    const JAVA_CAUSED_BY: &str = include_str!("fixtures/java_caused_by.txt");
    const RUST_BACKTRACE: &str = include_str!("fixtures/cargo_test_fail.txt");
    const SERVER_LOG: &str = include_str!("fixtures/server_log_traces.txt");

    #[test]
    fn java_frames_in_the_jdk_are_elided_and_user_frames_stay() {
        let text = "Exception in thread \"main\" java.lang.NumberFormatException: For input string: \"x2\"\n\tat java.base/java.lang.NumberFormatException.forInputString(NumberFormatException.java:67)\n\tat java.base/java.lang.Integer.parseInt(Integer.java:668)\n\tat java.base/java.lang.Integer.parseInt(Integer.java:786)\n\tat Main.parse(Main.java:3)\n\tat java.base/java.util.stream.ReferencePipeline$3$1.accept(ReferencePipeline.java:197)\n\tat java.base/java.util.AbstractList$RandomAccessSpliterator.forEachRemaining(AbstractList.java:720)\n\tat java.base/java.util.stream.AbstractPipeline.copyInto(AbstractPipeline.java:509)\n\tat Main.main(Main.java:6)";
        let out = join(&compact_rows(text));
        assert!(out.contains("For input string: \"x2\""));
        assert!(out.contains("forInputString(NumberFormatException.java:67)"));
        assert!(out.contains("Main.parse(Main.java:3)"));
        assert!(out.contains("Main.main(Main.java:6)"));
        assert!(
            out.contains("[… 2 library frames elided (java.base) …]"),
            "{out}"
        );
        assert!(
            out.contains("[… 3 library frames elided (java.base) …]"),
            "{out}"
        );
    }

    fn compact_rows(text: &str) -> Vec<Row> {
        super::compact(rows(text), Level::Standard)
    }

    #[test]
    fn rust_library_frames_are_recognised_by_path_or_symbol() {
        assert_eq!(
            rust_library(
                "core::panicking::panic_fmt",
                Some("at /rustc/abc/library/core/src/panicking.rs:80:14")
            )
            .as_deref(),
            Some("core")
        );
        assert_eq!(rust_library("<fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once", None).as_deref(), Some("core"));
        assert_eq!(
            rust_library("tokio::runtime::park::CachedParkThread::block_on", None).as_deref(),
            Some("tokio")
        );
        assert_eq!(
            rust_library("__rust_begin_short_backtrace", None).as_deref(),
            Some("std")
        );
        assert_eq!(
            rust_library(
                "tproj::tests::rejects_empty_input",
                Some("at ./src/lib.rs:94:18")
            ),
            None
        );
    }

    /// Libraries are named as an agent would look for them: the package under
    /// `node_modules` or `site-packages`, node's module, the JDK's module, the Java package.
    #[test]
    fn library_frames_are_named() {
        for (frame, name) in [
            ("    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)", Some("express")),
            ("    at run (/app/node_modules/@babel/core/lib/index.js:1:1)", Some("@babel/core")),
            ("    at x (/app/node_modules/a/node_modules/b/index.js:1:1)", Some("b")),
            ("    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)", Some("node:internal")),
            ("    at Server.emit (node:events:524:28)", Some("node:events")),
            ("    at node:internal/main/run_main_module:28:49", Some("node:internal")),
            ("    at new Promise (<anonymous>)", Some("js builtins")),
            ("    at async Promise.all (index 0)", Some("js builtins")),
            ("\tat java.base/java.lang.Integer.parseInt(Integer.java:668)", Some("java.base")),
            ("\tat org.junit.platform.launcher.core.EngineExecutionOrchestrator.execute(EngineExecutionOrchestrator.java:147)", Some("org.junit")),
            ("\tat jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)", Some("jdk.internal")),
            ("    at Context.<anonymous> (test/cart.spec.js:8:27)", None),
            ("    at /app/src/app.js:7:21", None),
            ("\tat com.example.billing.RateTable.load(RateTable.java:15)", None),
        ] {
            assert_eq!(js_java_library(frame).as_deref(), name, "{frame}");
        }
        for (frame, name) in [
            ("  File \"/venv/lib/python3.11/site-packages/urllib3/connectionpool.py\", line 1, in urlopen", Some("urllib3")),
            ("  File \"/usr/lib/python3/dist-packages/six.py\", line 1, in f", Some("six")),
            ("  File \"/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py\", line 337, in decode", Some("python3.11/json")),
            ("  File \"<frozen runpy>\", line 198, in _run_module_as_main", Some("<frozen runpy>")),
            ("  File \"/srv/app/settings.py\", line 9, in _decode", None),
        ] {
            assert_eq!(python_library(frame).as_deref(), name, "{frame}");
        }
    }

    /// A mocha report whose stacks run through express, body-parser and node: every run of
    /// library frames is one marker naming them; the error lines, the user's frames and
    /// the report's own lines all stay.
    #[test]
    fn mocha_stacks_fold_library_runs_and_keep_the_users_frames() {
        let out = compact(MOCHA_STACKS, Level::Auto).unwrap();
        assert_eq!(
            compact(MOCHA_STACKS, Level::Auto).as_deref(),
            Some(out.as_str())
        );
        assert_kept(MOCHA_STACKS, &out, |l| {
            let t = l.trim_start();
            (t.starts_with("at ") && js_java_library(l).is_none() && !t.ends_with('{'))
                || t.contains("Error")
                || t.starts_with("AssertionError")
        });
        assert!(
            out.contains("\n[… 15 library frames elided (express, body-parser, …) …]\n"),
            "{out}"
        );
        assert!(out.len() * 3 < MOCHA_STACKS.len() * 2, "{out}");
    }

    /// Python through site-packages: user frames with their source lines, every exception
    /// line and every chaining line stay.
    #[test]
    fn python_through_site_packages_keeps_the_users_frames() {
        let out = compact(PYTHON_SITE_PACKAGES, Level::Auto).unwrap();
        assert_kept(PYTHON_SITE_PACKAGES, &out, |l| {
            l.contains("/tmp/pyrun/")
                || l.contains("Error")
                || l.starts_with("The above exception")
                || l.starts_with("During handling")
        });
        assert!(
            out.contains("[… 6 library frames elided (urllib3, python3.11/http) …]"),
            "{out}"
        );
    }

    /// Java with `Caused by:`: every cause, every user frame, every `... N more` stays.
    #[test]
    fn java_causes_and_user_frames_stay() {
        let out = compact(JAVA_CAUSED_BY, Level::Auto).unwrap();
        assert_kept(JAVA_CAUSED_BY, &out, |l| {
            l.contains("at Main.")
                || l.starts_with("Caused by:")
                || l.contains("more")
                || l.starts_with("Exception")
        });
        assert!(
            out.contains("[… 9 library frames elided (java.base) …]"),
            "{out}"
        );
    }

    /// A Rust backtrace: std and core frames fold, the test's own frames stay.
    #[test]
    fn rust_backtrace_folds_std_frames() {
        let out = compact(RUST_BACKTRACE, Level::Auto).unwrap();
        assert!(out.contains("tproj::tests::rejects_empty_input"), "{out}");
        assert!(
            out.contains("[… 6 library frames elided (std, core) …]"),
            "{out}"
        );
    }

    /// A server's log, most lines timestamped, folds the library frames of the errors it
    /// logged; its own lines and the user's frames stay.
    #[test]
    fn a_timestamped_logs_traces_fold() {
        assert_eq!(
            crate::compact::classify::classify(SERVER_LOG),
            crate::compact::classify::Kind::Timestamped
        );
        let out = compact(SERVER_LOG, Level::Auto).unwrap();
        assert_kept(SERVER_LOG, &out, |l| {
            l.starts_with("2026-") || l.contains("/tmp/mocharun/server_log.js")
        });
        assert!(
            out.contains("\n[… 6 library frames elided (express) …]\n"),
            "{out}"
        );
    }

    /// A trace of the user's frames only passes unchanged.
    #[test]
    fn a_trace_of_user_frames_only_is_unchanged() {
        let text = "TypeError: x is undefined\n    at total (/app/src/cart.js:3:9)\n    at main (/app/src/index.js:8:3)\n";
        assert_eq!(join(&compact_rows(text)), text.trim_end());
    }

    /// Every line of `text` that `must` picks is in `out`, as written or as a reversible
    /// rewrite gives it back (a log run's shared opening said once).
    fn assert_kept(text: &str, out: &str, must: impl Fn(&str) -> bool) {
        let expanded = crate::compact::expand_listings(out);
        let kept: std::collections::HashSet<&str> = out
            .lines()
            .chain(expanded.lines())
            .map(str::trim_end)
            .collect();
        for line in text.lines().filter(|l| must(l)) {
            let line = crate::compact::ansi::strip(line);
            assert!(kept.contains(line.trim_end()), "{line:?} lost from:\n{out}");
        }
    }
}

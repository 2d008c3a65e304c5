//! Stack traces: Python tracebacks, Rust backtraces, JS and Java `at …` frames. Frames in
//! the user's code stay; runs of frames inside the runtime, the standard library or
//! installed packages become one marker. Exception and panic messages always stay.

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

/// A JS or Java frame in the runtime, the JDK, a test runner or `node_modules`.
fn is_library_js_java(frame: &str) -> bool {
    // node prints the error's own properties after the last frame: `at … {`
    if frame.trim_end().ends_with('{') {
        return false;
    }
    let f = frame.trim_start().trim_start_matches("at ");
    const PREFIXES: &[&str] = &[
        "java.",
        "javax.",
        "jdk.",
        "sun.",
        "com.sun.",
        "kotlin.",
        "scala.",
        "org.junit.",
        "junit.",
        "org.gradle.",
        "org.apache.maven.",
        "node:",
        "internal/",
        "<anonymous>",
        "process.processTicksAndRejections",
        "new Promise",
    ];
    PREFIXES.iter().any(|p| f.starts_with(p))
        || f.contains("java.base/")
        || f.contains("(node:")
        || f.contains("node_modules/")
        || f.contains("(internal/")
}

/// A Python frame in the standard library or an installed package.
fn is_library_python(frame: &str) -> bool {
    frame.contains("/site-packages/")
        || frame.contains("/dist-packages/")
        || frame.contains("/lib/python2")
        || frame.contains("/lib/python3")
        || frame.contains("\\Lib\\")
        || frame.contains("\"<frozen ")
}

/// A Rust frame in std/core/alloc, the test harness or an async runtime.
fn is_library_rust(symbol: &str, location: Option<&str>) -> bool {
    if let Some(loc) = location {
        if loc.contains("/rustc/")
            || loc.contains("/.cargo/registry/")
            || loc.contains("/library/std/")
        {
            return true;
        }
    }
    let s = symbol.trim_start_matches('<');
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
    CRATES.iter().any(|c| s.starts_with(c)) || s.starts_with("usize as core::")
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

/// One frame: its rows and whether it is library code.
struct Frame {
    rows: Vec<Row>,
    library: bool,
}

/// Emits frames: user frames and the first and last frame stay; runs of library frames
/// become one marker.
fn emit_frames(out: &mut Vec<Row>, frames: Vec<Frame>, keep_first: bool, keep_last: bool) {
    let n = frames.len();
    let mut elided = Elided::default();
    let mut elided_frames = 0usize;
    for (i, frame) in frames.into_iter().enumerate() {
        let keep = !frame.library || (keep_first && i == 0) || (keep_last && i + 1 == n);
        if keep {
            flush_frames(out, &mut elided, &mut elided_frames);
            out.extend(frame.rows.into_iter().map(pin));
        } else {
            elided_frames += 1;
            frame.rows.into_iter().for_each(|r| elided.push(r));
        }
    }
    flush_frames(out, &mut elided, &mut elided_frames);
}

fn flush_frames(out: &mut Vec<Row>, elided: &mut Elided, frames: &mut usize) {
    let n = *frames;
    elided.flush(out, |_| {
        format!("{} elided", count(n, "library frame", "library frames"))
    });
    *frames = 0;
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
                    let library = is_library_python(t);
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
                    let library = is_library_rust(&symbol, location.as_deref());
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
                library: is_library_js_java(&row.text),
                rows: vec![row],
            }];
            while let Some(next) = iter.peek() {
                if js_java_frame(&next.text) {
                    let library = is_library_js_java(&next.text);
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

    #[test]
    fn java_frames_in_the_jdk_are_elided_and_user_frames_stay() {
        let text = "Exception in thread \"main\" java.lang.NumberFormatException: For input string: \"x2\"\n\tat java.base/java.lang.NumberFormatException.forInputString(NumberFormatException.java:67)\n\tat java.base/java.lang.Integer.parseInt(Integer.java:668)\n\tat java.base/java.lang.Integer.parseInt(Integer.java:786)\n\tat Main.parse(Main.java:3)\n\tat java.base/java.util.stream.ReferencePipeline$3$1.accept(ReferencePipeline.java:197)\n\tat java.base/java.util.AbstractList$RandomAccessSpliterator.forEachRemaining(AbstractList.java:720)\n\tat java.base/java.util.stream.AbstractPipeline.copyInto(AbstractPipeline.java:509)\n\tat Main.main(Main.java:6)";
        let out = join(&compact(rows(text), Level::Standard));
        assert!(out.contains("For input string: \"x2\""));
        assert!(out.contains("forInputString(NumberFormatException.java:67)"));
        assert!(out.contains("Main.parse(Main.java:3)"));
        assert!(out.contains("Main.main(Main.java:6)"));
        assert!(out.contains("[… 2 library frames elided …]"));
        assert!(out.contains("[… 3 library frames elided …]"));
    }

    #[test]
    fn rust_library_frames_are_recognised_by_path_or_symbol() {
        assert!(is_library_rust(
            "core::panicking::panic_fmt",
            Some("at /rustc/abc/library/core/src/panicking.rs:80:14")
        ));
        assert!(is_library_rust("<fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once", None));
        assert!(!is_library_rust(
            "tproj::tests::rejects_empty_input",
            Some("at ./src/lib.rs:94:18")
        ));
    }
}

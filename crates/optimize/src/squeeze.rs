//! The strict squeeze: the conservative pass that runs alone. It only removes what carries
//! no fact — terminal escape codes, progress redraws, trailing blanks, runs of empty
//! lines, exact repeats of a line (counted), whitespace between JSON tokens — and only
//! on tool results above a size gate, keeping a rewrite only when it saves a tenth. Its
//! output is a fixed point of itself, so it never squeezes its own work again.

use super::compact;
use super::tokens::estimate;
use super::tool_output::{has_tool_marker, thousands};
use super::{pays, Doc, Pass, PassReport, Shared};

pub struct StrictSqueeze;

pub const NAME: &str = "squeeze";
/// Tool results below this are left as they are.
pub const GATE_BYTES: usize = 4096;

impl Pass for StrictSqueeze {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mode(&self) -> String {
        "on".into()
    }

    fn may_fire(&self, body: &[u8]) -> bool {
        body.len() >= GATE_BYTES && has_tool_marker(body)
    }

    fn run(&self, doc: &mut Doc, _shared: &Shared) -> PassReport {
        let mut report = PassReport::new(NAME, self.mode());
        for i in 0..doc.located.tool_blocks.len() {
            let text = &doc.located.tool_blocks[i].text;
            if text.len() < GATE_BYTES || super::originals::is_fetched(text) {
                continue;
            }
            let squeezed = squeeze(text);
            let (before, after) = (estimate(text), estimate(&squeezed));
            if squeezed.len() >= text.len() || !pays(before, after) {
                continue;
            }
            report.changed(before, after);
            doc.replaced[i] = Some((squeezed, NAME));
        }
        report
    }
}

/// The squeezed text: minified when the whole text is JSON, else cleaned line by line.
pub fn squeeze(text: &str) -> String {
    let clean = compact::strip_escapes(text);
    if compact::is_json(&clean) {
        return compact::minify_json(&clean);
    }
    let mut out = String::with_capacity(clean.len());
    let mut previous: Option<&str> = None;
    let mut repeats = 0usize;
    let mut blank_run = 0usize;
    // A run is counted only when the marker is shorter than the lines it stands for.
    let flush = |out: &mut String, line: Option<&str>, repeats: usize| {
        if repeats == 0 {
            return;
        }
        let line = line.unwrap_or("");
        let marker = format!("[… line repeated {} more times …]\n", thousands(repeats));
        if marker.len() < repeats * (line.len() + 1) {
            out.push_str(&marker);
        } else {
            for _ in 0..repeats {
                out.push_str(line);
                out.push('\n');
            }
        }
    };
    let body = clean.strip_suffix('\n').unwrap_or(&clean);
    for raw in body.split('\n') {
        // A progress redraw: what the terminal finally showed is the last segment.
        let line = raw
            .rsplit('\r')
            .find(|s| !s.trim().is_empty())
            .unwrap_or("")
            .trim_end();
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        if previous == Some(line) && !line.is_empty() {
            repeats += 1;
            continue;
        }
        flush(&mut out, previous, repeats);
        repeats = 0;
        out.push_str(line);
        out.push('\n');
        previous = Some(line);
    }
    flush(&mut out, previous, repeats);
    // Keep the original's ending.
    if !clean.ends_with('\n') && out.ends_with('\n') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn removes_only_what_carries_no_fact() {
        let l = "warning: unused variable `x` in src/lib.rs";
        let text = &format!( "\u{1b}[1m\u{1b}[32m   Compiling\u{1b}[0m foo v0.1.0   \n\n\n\nDownloading 10%\rDownloading 55%\rDownloading 100%\n{l}\n{l}\n{l}\n{l}\nend");
        assert_eq!(
            squeeze(text),
            format!("   Compiling foo v0.1.0\n\nDownloading 100%\n{l}\n[… line repeated 3 more times …]\nend")
        );
    }

    #[test]
    fn json_is_minified_without_reordering() {
        let text =
            "{\n  \"z\": 1,\n  \"a\": [ 1.50, \"x  y\" ],\n  \"m\": {\"k\": \"\\\" }\"}\n}\n";
        assert_eq!(
            squeeze(text),
            r#"{"z":1,"a":[1.50,"x  y"],"m":{"k":"\" }"}}"#
        );
        assert_eq!(squeeze("{not json"), "{not json");
    }

    #[test]
    fn osc_hyperlinks_are_stripped() {
        let text = "see \u{1b}]8;;https://x.dev\u{7}docs\u{1b}]8;;\u{1b}\\ now";
        assert_eq!(squeeze(text), "see docs now");
    }

    proptest! {
        #[test]
        fn squeeze_is_a_fixed_point_and_never_grows(lines in proptest::collection::vec("[ a-c\\r\\u{1b}\\[0-9m]{0,12}", 0..40)) {
            let text = lines.join("\n");
            let once = squeeze(&text);
            prop_assert!(once.len() <= text.len(), "grew: {:?} → {:?}", text, once);
            prop_assert_eq!(squeeze(&once), once.clone());
        }
    }
}

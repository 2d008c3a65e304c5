//! Unified diffs are the agent's own edits or the code under review: every `+`, `-` and
//! context line stays byte for byte, trailing whitespace and `\r` included. Standard and
//! above drop only the `index abc123..def456 100644` header lines, which no tool needs.

use super::Level;

/// `index 1a2b3c4..5d6e7f8` or `index 1a2b3c4..5d6e7f8 100644`.
fn is_index_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("index ") else {
        return false;
    };
    let range = rest.split(' ').next().unwrap_or("");
    let Some((a, b)) = range.split_once("..") else {
        return false;
    };
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit());
    hex(a) && hex(b.trim_end_matches('\r'))
}

/// Compacts a diff whose ANSI escapes were already stripped.
pub(crate) fn compact(text: &str, level: Level) -> String {
    if level == Level::Light {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !is_index_line(line.trim_end_matches('\n')) {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_index_lines_go() {
        let text = "diff --git a/x b/x\nindex 83db48f..bf269f4 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-index 1..2\n+trailing  \n context\n";
        assert_eq!(
            compact(text, Level::Standard),
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-index 1..2\n+trailing  \n context\n"
        );
        assert_eq!(compact(text, Level::Light), text);
    }
}

//! `git log` (plain, `--stat`, `-p`): commit lines, subjects and bodies stay whole; the
//! `+++---` histogram of `--stat` lines goes (the count stays); at Standard the Author and
//! Date lines share one line, and an author the commit above had is said `as above`.
//! Patches inside the log are left alone.

use super::lines::Row;
use super::Level;

/// `commit <hex>` (with optional decorations).
pub(crate) fn is_commit_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("commit ") else {
        return false;
    };
    let hash = rest.split(' ').next().unwrap_or("");
    (7..=64).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// ` path/to/file.rs   | 34 ++++----` → ` path/to/file.rs | 34`. `None` for other lines.
fn stat_line(line: &str) -> Option<String> {
    // git indents stat lines by exactly one space; bodies by four
    if !line.starts_with(' ') || line.starts_with("  ") {
        return None;
    }
    let (path, graph) = line.rsplit_once(" | ")?;
    let graph = graph.trim();
    let digits = graph.bytes().take_while(u8::is_ascii_digit).count();
    let (changes, bars) = if digits > 0 {
        (graph.get(..digits)?, graph.get(digits..)?.trim())
    } else if graph.starts_with("Bin ") {
        (graph, "")
    } else {
        return None;
    };
    if !bars.bytes().all(|b| b == b'+' || b == b'-') {
        return None;
    }
    Some(format!(" {} | {changes}", path.trim()))
}

/// How an author the commit above had is said.
const AS_ABOVE: &str = "Author: as above";

/// Compacts a git log.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut in_patch = false;
    let mut author: Option<String> = None;
    let mut last_author = String::new();
    for row in rows {
        let text = row.text.as_str();
        if is_commit_line(text) {
            in_patch = false;
            out.extend(author.take().map(Row::plain));
            out.push(row);
            continue;
        }
        if text.starts_with("diff --git ") {
            in_patch = true;
        }
        if in_patch {
            out.extend(author.take().map(Row::plain));
            out.push(row);
            continue;
        }
        if level != Level::Light {
            if let Some(who) = text.strip_prefix("Author: ") {
                out.extend(author.take().map(Row::plain));
                let who = if level == Level::Aggressive {
                    who.split(" <").next().unwrap_or(who)
                } else {
                    who
                };
                let who = format!("Author: {}", who.trim());
                author = Some(if who == last_author {
                    AS_ABOVE.to_owned()
                } else {
                    last_author.clone_from(&who);
                    who
                });
                continue;
            }
            if let Some(date) = text.strip_prefix("Date:") {
                match author.take() {
                    Some(a) => out.push(Row::plain(format!("{a}, Date: {}", date.trim()))),
                    None => out.push(row),
                }
                continue;
            }
        }
        out.extend(author.take().map(Row::plain));
        match stat_line(text) {
            Some(short) => out.push(Row::plain(short)),
            None => out.push(row),
        }
    }
    out.extend(author.take().map(Row::plain));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_histograms_are_dropped_and_counts_kept() {
        assert_eq!(
            stat_line(" gateway-core/src/proxy.rs          | 34 ++++++++++++++++---------------")
                .as_deref(),
            Some(" gateway-core/src/proxy.rs | 34")
        );
        assert_eq!(
            stat_line(" assets/logo.png | Bin 0 -> 1234 bytes").as_deref(),
            Some(" assets/logo.png | Bin 0 -> 1234 bytes")
        );
        assert_eq!(stat_line("    a body line | with a pipe"), None);
    }

    /// An author is said in full at the first of a run of their commits, and `as above`
    /// after; another author in between is said in full, and so is the one after them.
    #[test]
    fn an_author_is_said_once_per_run_of_commits() {
        let log: String = ["Ana <a@x.org>", "Ana <a@x.org>", "Bo <b@x.org>", "Ana <a@x.org>"]
            .iter()
            .enumerate()
            .map(|(i, who)| format!("commit {i:07x}\nAuthor: {who}\nDate:   Mon Jan {} 10:00:00 2024 +0000\n\n    Change {i}\n", i + 1))
            .collect();
        let out = crate::compact::lines::join(&compact(
            crate::compact::lines::rows(&log),
            Level::Standard,
        ));
        let authors: Vec<&str> = out.lines().filter(|l| l.starts_with("Author:")).collect();
        assert_eq!(
            authors,
            [
                "Author: Ana <a@x.org>, Date: Mon Jan 1 10:00:00 2024 +0000",
                "Author: as above, Date: Mon Jan 2 10:00:00 2024 +0000",
                "Author: Bo <b@x.org>, Date: Mon Jan 3 10:00:00 2024 +0000",
                "Author: Ana <a@x.org>, Date: Mon Jan 4 10:00:00 2024 +0000",
            ]
        );
    }

    #[test]
    fn commit_lines_need_a_hex_hash() {
        assert!(is_commit_line(
            "commit ce63c2ffe6c18b4bb0689b5384c7aa294b284afa (HEAD -> main)"
        ));
        assert!(!is_commit_line("commit the changes"));
    }
}

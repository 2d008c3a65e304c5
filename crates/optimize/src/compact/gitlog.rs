//! `git log` (plain, `--stat`, `-p`): commit lines, subjects and bodies stay whole; the
//! `+++---` histogram of `--stat` lines goes (the count stays); at Standard the Author and
//! Date lines share one line, and an author the commit above had is said `as above`
//! (with the day too, when that is the commit above's: `Author and day as above, at
//! 10:25:32`).
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

/// git's own date (`Tue Dec 1 10:29:25 2026 +0000`) as its day (all but the time) and its
/// time; `None` for the day of any other form.
fn day_and_time(date: &str) -> (Option<String>, &str) {
    let parts: Vec<&str> = date.split(' ').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [weekday, month, day, time, year, zone]
            if time.len() == 8 && time.bytes().filter(|&b| b == b':').count() == 2 =>
        {
            (Some(format!("{weekday} {month} {day} {year} {zone}")), time)
        }
        _ => (None, date),
    }
}

/// How an author the commit above had is said.
const AS_ABOVE: &str = "Author: as above";

/// Compacts a git log.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut in_patch = false;
    let mut author: Option<String> = None;
    let mut last_author = String::new();
    let mut last_day: Option<String> = None;
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
                let date = date.trim();
                let (day, time) = day_and_time(date);
                let same_day = day.is_some() && day == last_day;
                last_day = day;
                match author.take() {
                    Some(a) if a == AS_ABOVE && same_day => {
                        out.push(Row::plain(format!("Author and day as above, at {time}")));
                    }
                    Some(a) => out.push(Row::plain(format!("{a}, Date: {date}"))),
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

    /// The Author lines a log of these commits (author, date) compacts to at Standard.
    fn authors(commits: &[(&str, &str)]) -> Vec<String> {
        let log: String = commits
            .iter()
            .enumerate()
            .map(|(i, (who, date))| {
                format!("commit {i:07x}\nAuthor: {who}\nDate:   {date}\n\n    Change {i}\n")
            })
            .collect();
        let rows = compact(crate::compact::lines::rows(&log), Level::Standard);
        let out = crate::compact::lines::join(&rows);
        out.lines()
            .filter(|l| l.starts_with("Author"))
            .map(str::to_owned)
            .collect()
    }

    /// An author is said in full at the first of a run of their commits, and `as above`
    /// after; another author in between is said in full, and so is the one after them.
    #[test]
    fn an_author_is_said_once_per_run_of_commits() {
        let (ana, bo) = ("Ana <a@x.org>", "Bo <b@x.org>");
        assert_eq!(
            authors(&[
                (ana, "Mon Jan 1 10:00:00 2024 +0000"),
                (ana, "Mon Jan 2 10:00:00 2024 +0000"),
                (bo, "Mon Jan 3 10:00:00 2024 +0000"),
                (ana, "Mon Jan 4 10:00:00 2024 +0000"),
            ]),
            [
                "Author: Ana <a@x.org>, Date: Mon Jan 1 10:00:00 2024 +0000",
                "Author: as above, Date: Mon Jan 2 10:00:00 2024 +0000",
                "Author: Bo <b@x.org>, Date: Mon Jan 3 10:00:00 2024 +0000",
                "Author: Ana <a@x.org>, Date: Mon Jan 4 10:00:00 2024 +0000",
            ]
        );
    }

    /// The same author on the same day: the commit says its time alone; another day, or a
    /// date in another form, is said whole.
    #[test]
    fn a_day_as_above_is_said_by_its_time() {
        let ana = "Ana <a@x.org>";
        assert_eq!(
            authors(&[
                (ana, "Tue Dec 1 10:29:25 2026 +0000"),
                (ana, "Tue Dec 1 10:25:32 2026 +0000"),
                (ana, "Mon Nov 30 23:59:59 2026 +0000"),
                (ana, "2026-11-30 22:00:00 +0000"),
            ]),
            [
                "Author: Ana <a@x.org>, Date: Tue Dec 1 10:29:25 2026 +0000",
                "Author and day as above, at 10:25:32",
                "Author: as above, Date: Mon Nov 30 23:59:59 2026 +0000",
                "Author: as above, Date: 2026-11-30 22:00:00 +0000",
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

//! Listings of names, one a line: `git tag`, `git branch -a`, `npm view <pkg> versions`,
//! `pip freeze`. Every name stays, in its order. From Standard up, a run of three or more
//! consecutive names that differ only after their last separator shares one line in
//! shell brace form (`v1.4.{0,1,2,3}`, `  remotes/origin/release/{2.1,2.2,2.3}`); [`expand`]
//! gives the lines back byte for byte. Nothing else is touched.

use super::lines::Row;
use super::Level;

/// Shortest run that shares a line.
const MIN_RUN: usize = 3;

/// A listed name split for grouping: what comes before the name's last part (indentation,
/// an opening quote, the name up to its last separator), the last part, and what follows
/// it (a closing quote and comma).
struct Entry<'a> {
    stem: &'a str,
    part: &'a str,
    tail: &'a str,
}

/// Characters that may not appear in a grouped part: they would make the brace form
/// ambiguous.
fn plain_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '{' | '}' | ',' | '\'' | '"')
}

/// Splits one listing line, or `None` for a line that is not one name.
fn entry(line: &str) -> Option<Entry<'_>> {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    let (open, body) = match body.strip_prefix('\'') {
        Some(rest) => (1, rest),
        None => (0, body),
    };
    let body = body.strip_suffix(',').unwrap_or(body);
    let body = if open == 1 {
        body.strip_suffix('\'')?
    } else {
        body
    };
    if body.is_empty() || !body.chars().all(plain_char) {
        return None;
    }
    // a path-like name groups by its directory, a version by its last dotted part
    let cut = match body.rfind('/') {
        Some(at) => at + 1,
        None => body.rfind(['.', '-', '_', '+']).map(|at| at + 1)?,
    };
    if cut >= body.len() {
        return None;
    }
    let start = indent + open;
    Some(Entry {
        stem: line.get(..start + cut)?,
        part: line.get(start + cut..start + body.len())?,
        tail: line.get(start + body.len()..)?,
    })
}

/// Whether a line is one listed name (for the classifier): a version, a tag, a branch
/// (`* main`, `  remotes/origin/x`), a quoted array item, a `name==version` pin.
pub(crate) fn is_listed_name(line: &str) -> bool {
    let t = line.trim();
    let t = t.strip_prefix("* ").unwrap_or(t);
    let t = t.trim_end_matches(',').trim_matches('\'');
    !t.is_empty()
        && t.len() <= 100
        && t.chars().all(plain_char)
        && t.chars()
            .any(|c| c.is_ascii_digit() || c == '/' || c == '.')
}

/// Groups runs of names. Light returns the rows unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let mut out = Vec::with_capacity(rows.len());
    let mut run: Vec<Row> = Vec::new();
    for row in rows {
        let joins = run
            .first()
            .is_some_and(|first| match (entry(&first.text), entry(&row.text)) {
                (Some(a), Some(b)) => a.stem == b.stem && a.tail == b.tail,
                _ => false,
            });
        if !joins {
            emit(&mut out, std::mem::take(&mut run));
        }
        if row.is_marker() || entry(&row.text).is_none() {
            out.push(row);
        } else {
            run.push(row);
        }
    }
    emit(&mut out, run);
    out
}

fn emit(out: &mut Vec<Row>, run: Vec<Row>) {
    let parts: Option<Vec<Entry>> = run.iter().map(|r| entry(&r.text)).collect();
    let Some(parts) = parts.filter(|p| p.len() >= MIN_RUN) else {
        out.extend(run);
        return;
    };
    let first = &parts[0];
    let list: Vec<&str> = parts.iter().map(|e| e.part).collect();
    let line = format!("{}{{{}}}{}", first.stem, list.join(","), first.tail);
    out.push(Row::plain(line));
}

/// Undoes the grouping: each `stem{a,b,c}tail` line becomes `stem a tail`, `stem b tail`…
/// one a line. Other lines stay.
pub fn expand(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match split_braces(line) {
            Some((stem, parts, tail)) => {
                for (k, part) in parts.split(',').enumerate() {
                    if k > 0 {
                        out.push('\n');
                    }
                    out.push_str(stem);
                    out.push_str(part);
                    out.push_str(tail);
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

/// `stem{a,b}tail` with one brace pair, a comma inside and no blanks after the stem.
fn split_braces(line: &str) -> Option<(&str, &str, &str)> {
    let open = line.find('{')?;
    let close = line.rfind('}')?;
    let (stem, inner, tail) = (
        line.get(..open)?,
        line.get(open + 1..close)?,
        line.get(close + 1..)?,
    );
    let stem_name = stem.trim_start().trim_start_matches('\'');
    let ok = inner.contains(',')
        && inner
            .split(',')
            .all(|p| !p.is_empty() && p.chars().all(plain_char))
        && stem_name.chars().all(plain_char)
        && matches!(tail, "" | "," | "'" | "',");
    ok.then_some((stem, inner, tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};

    /// `git tag`: runs of patch releases share a line; the order and every tag stay.
    #[test]
    fn tag_runs_share_a_line_in_brace_form() {
        let text = "v0.9.0\nv0.9.0-rc.1\nv0.9.0-rc.2\nv0.9.1\nv0.9.10\nv0.9.2\nv0.9.3\nv1.0.0";
        let out = join(&compact(rows(text), Level::Standard));
        assert_eq!(
            out,
            "v0.9.0\nv0.9.0-rc.1\nv0.9.0-rc.2\nv0.9.{1,10,2,3}\nv1.0.0"
        );
        assert_eq!(expand(&out), text);
    }

    /// `npm view <pkg> versions` prints a quoted array: quotes and commas stay outside the
    /// braces, and the last item (no comma) ends the run.
    #[test]
    fn quoted_array_items_group_and_expand_back() {
        let text = "[\n  '4.9.3',\n  '4.9.4',\n  '4.9.5',\n  '5.0.0-dev.20221103',\n  '5.0.0-dev.20221104',\n  '5.0.0-dev.20221105',\n  '5.0.0-dev.20221106'\n]";
        let out = join(&compact(rows(text), Level::Standard));
        assert_eq!(
            out,
            "[\n  '4.9.{3,4,5}',\n  '5.0.0-dev.{20221103,20221104,20221105}',\n  '5.0.0-dev.20221106'\n]"
        );
        assert_eq!(expand(&out), text);
    }

    /// `git branch -a`: branches group by their directory; a symbolic ref is not a name.
    #[test]
    fn branches_group_by_directory() {
        let text = "* main\n  remotes/origin/HEAD -> origin/main\n  remotes/origin/release/0.1\n  remotes/origin/release/0.2\n  remotes/origin/release/1.0";
        let out = join(&compact(rows(text), Level::Standard));
        assert!(
            out.ends_with("\n  remotes/origin/release/{0.1,0.2,1.0}"),
            "{out}"
        );
        assert!(out.contains("  remotes/origin/HEAD -> origin/main"));
        assert_eq!(expand(&out), text);
    }

    #[test]
    fn short_runs_and_light_are_left_alone() {
        let text = "v1.0.0\nv1.0.1\nv2.0.0";
        assert_eq!(join(&compact(rows(text), Level::Standard)), text);
        let long = "v1.0.0\nv1.0.1\nv1.0.2\nv1.0.3";
        assert_eq!(join(&compact(rows(long), Level::Light)), long);
    }
}

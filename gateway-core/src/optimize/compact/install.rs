//! Package installs (npm, yarn, pip): the per-request chatter goes, warnings, errors,
//! vulnerabilities and the `added N packages` summary stay.

use super::lines::{count, Elided, Row};
use super::Level;

/// npm log lines that only trace what the client did: one per HTTP request, cache hit or
/// timing step.
fn is_chatter(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("npm ") else {
        return false;
    };
    [
        "http ", "timing ", "sill ", "silly ", "verb ", "verbose ", "info ",
    ]
    .iter()
    .any(|p| rest.starts_with(p))
}

/// Compacts an install log. Light returns the rows unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let mut out = Vec::with_capacity(rows.len() / 4);
    let mut chatter = Elided::default();
    for row in rows {
        if row.tag == super::lines::Tag::Plain && is_chatter(&row.text) {
            chatter.push(row);
            continue;
        }
        chatter.flush(&mut out, |n| {
            format!("{} elided", count(n, "npm log line", "npm log lines"))
        });
        out.push(row);
    }
    chatter.flush(&mut out, |n| {
        format!("{} elided", count(n, "npm log line", "npm log lines"))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::compact::lines::{join, rows};

    #[test]
    fn npm_fetch_lines_are_counted_and_warnings_stay() {
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!(
                "npm http fetch GET 200 https://registry.npmjs.org/pkg{i} 12ms (cache miss)\n"
            ));
        }
        text.push_str("npm warn deprecated request@2.88.2: request has been deprecated\n");
        text.push_str("npm timing reify Completed in 812ms\n\nadded 114 packages in 4s\n\n3 high severity vulnerabilities\n");
        let out = join(&compact(rows(&text), Level::Standard));
        assert!(out.contains("[… 30 npm log lines elided …]"), "{out}");
        assert!(out.contains("npm warn deprecated request@2.88.2"));
        assert!(out.contains("added 114 packages in 4s"));
        assert!(out.contains("3 high severity vulnerabilities"));
    }
}

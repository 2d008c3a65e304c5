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

/// The tarball a fetch line downloaded: its URL names the package and the version that
/// was installed, which is a fact; the metadata fetches and timings around it are not.
fn tarball(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("npm http fetch ")?;
    rest.split_whitespace().find(|w| w.ends_with(".tgz"))
}

/// Compacts an install log. Light returns the rows unchanged; Standard keeps the URL of
/// each tarball fetched, Aggressive only counts them.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let mut out = Vec::with_capacity(rows.len() / 4);
    let mut chatter = Elided::default();
    for row in rows {
        if row.tag == super::lines::Tag::Plain && is_chatter(&row.text) {
            if level != Level::Aggressive {
                if let Some(url) = tarball(&row.text) {
                    chatter.flush(&mut out, |n| {
                        format!("{} elided", count(n, "npm log line", "npm log lines"))
                    });
                    out.push(Row::plain(format!("fetched {url}")));
                    continue;
                }
            }
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
    use crate::compact::lines::{join, rows};

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

    #[test]
    fn tarball_urls_stay_at_standard_and_go_at_aggressive() {
        let text = "npm http fetch GET 200 https://registry.npmjs.org/qs 9ms (cache miss)\nnpm http fetch GET 200 https://registry.npmjs.org/side-channel 7ms (cache miss)\nnpm http fetch GET 200 https://registry.npmjs.org/object-inspect 8ms (cache miss)\nnpm http fetch GET 200 https://registry.npmjs.org/qs/-/qs-6.13.0.tgz 4ms (cache miss)\nadded 1 package in 1s\n";
        let standard = join(&compact(rows(text), Level::Standard));
        assert!(
            standard.contains("fetched https://registry.npmjs.org/qs/-/qs-6.13.0.tgz"),
            "{standard}"
        );
        assert!(!standard.contains("registry.npmjs.org/qs 9ms"));
        let aggressive = join(&compact(rows(text), Level::Aggressive));
        assert!(!aggressive.contains("qs-6.13.0.tgz"), "{aggressive}");
    }
}

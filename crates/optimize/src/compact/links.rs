//! Markdown link definitions that differ only in a number, as changelogs end each release
//! with: `[#8504]: https://github.com/tokio-rs/tokio/pull/8504`, one a line. A run of three
//! or more with one label prefix and one address up to the number shares one line,
//! `[#N]: https://github.com/tokio-rs/tokio/pull/N for N in {8504,8378,8410}`, numbers in
//! their order; [`expand`] gives the lines back byte for byte. The prose around them is
//! not touched.

use super::lines::Row;

/// Shortest run that shares a line.
const MIN_RUN: usize = 3;

/// What joins the shared line's form and its numbers.
const FOR_N_IN: &str = " for N in {";

/// `[#8504]: https://…/pull/8504` → (`#`, `https://…/pull/`, `8504`): a label that ends in
/// the number the address ends with.
fn definition(line: &str) -> Option<(&str, &str, &str)> {
    let (label, url) = line.strip_prefix('[')?.split_once("]: ")?;
    let digits = url.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (base, number) = url.split_at_checked(url.len() - digits)?;
    let prefix = label.strip_suffix(number)?;
    let plain = |s: &str| !s.contains(['[', ']', '{', '}', ' ']);
    let ok = digits > 0
        && base.contains("://")
        && !base.ends_with(|c: char| c.is_ascii_digit())
        && !prefix.ends_with(|c: char| c.is_ascii_digit())
        && plain(prefix)
        && plain(base);
    ok.then_some((prefix, base, number))
}

/// Joins runs of definitions that differ only in their number.
pub(crate) fn compact(rows: Vec<Row>) -> Vec<Row> {
    let mut out = Vec::with_capacity(rows.len());
    let mut run: Vec<Row> = Vec::new();
    for row in rows {
        let this = (!row.is_marker()).then(|| definition(&row.text)).flatten();
        let key = this.map(|(prefix, base, _)| (prefix, base));
        let joins = run
            .first()
            .and_then(|r| definition(&r.text))
            .is_some_and(|(prefix, base, _)| Some((prefix, base)) == key);
        if !joins {
            emit(&mut out, std::mem::take(&mut run));
        }
        if key.is_some() {
            run.push(row);
        } else {
            out.push(row);
        }
    }
    emit(&mut out, run);
    out
}

fn emit(out: &mut Vec<Row>, run: Vec<Row>) {
    let parsed: Vec<(&str, &str, &str)> = run.iter().filter_map(|r| definition(&r.text)).collect();
    match parsed.first() {
        Some(&(prefix, base, _)) if run.len() >= MIN_RUN && parsed.len() == run.len() => {
            let numbers: Vec<&str> = parsed.iter().map(|&(_, _, n)| n).collect();
            out.push(Row::plain(format!(
                "[{prefix}N]: {base}N{FOR_N_IN}{}}}",
                numbers.join(",")
            )));
        }
        _ => out.extend(run),
    }
}

/// Undoes the joining: each `[pN]: baseN for N in {1,2}` line becomes `[p1]: base1`,
/// `[p2]: base2`. Other lines stay.
pub fn expand(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let shared = line.split_once(FOR_N_IN).and_then(|(form, numbers)| {
            let numbers = numbers.strip_suffix('}')?;
            let (label, url) = form.strip_prefix('[')?.split_once("]: ")?;
            let prefix = label.strip_suffix('N')?;
            let base = url.strip_suffix('N')?;
            let ok =
                numbers.contains(',') && numbers.bytes().all(|b| b.is_ascii_digit() || b == b',');
            ok.then_some((prefix, base, numbers))
        });
        match shared {
            Some((prefix, base, numbers)) => {
                for (k, n) in numbers.split(',').enumerate() {
                    if k > 0 {
                        out.push('\n');
                    }
                    out.push_str(&format!("[{prefix}{n}]: {base}{n}"));
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};

    #[test]
    fn numbered_definitions_share_a_line() {
        let text = "- fix a hang ([#8408])\n\n[#8504]: https://github.com/tokio-rs/tokio/pull/8504\n[#8378]: https://github.com/tokio-rs/tokio/pull/8378\n[#8410]: https://github.com/tokio-rs/tokio/pull/8410\n[#3518]: https://github.com/tokio-rs/tokio/issues/3518\n[semver]: https://example.com/semver";
        let out = join(&compact(rows(text)));
        assert_eq!(
            out,
            "- fix a hang ([#8408])\n\n[#N]: https://github.com/tokio-rs/tokio/pull/N for N in {8504,8378,8410}\n[#3518]: https://github.com/tokio-rs/tokio/issues/3518\n[semver]: https://example.com/semver"
        );
        assert_eq!(expand(&out), text);
    }

    /// A label that is not the address's number, or two definitions only, stay.
    #[test]
    fn other_definitions_stay() {
        for text in [
            "[#1]: https://x.org/pull/2\n[#3]: https://x.org/pull/3\n[#4]: https://x.org/pull/4",
            "[#1]: https://x.org/pull/1\n[#2]: https://x.org/pull/2",
            "[a1]: https://x.org/1\n[b2]: https://x.org/2\n[c3]: https://x.org/3",
        ] {
            assert_eq!(join(&compact(rows(text))), text);
            assert_eq!(expand(text), text);
        }
    }

    /// The tokio changelog (real, cut to its first releases) is a log to the classifier;
    /// by default its link definitions share lines and the whole file comes back.
    #[test]
    fn a_real_changelog_round_trips_by_default() {
        use crate::compact::{compact, expand_listings};
        let text = include_str!("fixtures/changelog_tokio.md");
        let out = compact(text, crate::compact::Level::Auto).unwrap();
        assert!(out.len() * 4 < text.len() * 3, "{out}");
        assert_eq!(
            compact(text, crate::compact::Level::Auto),
            Some(out.clone())
        );
        assert_eq!(expand_listings(&out).trim_end(), text.trim_end());
    }
}

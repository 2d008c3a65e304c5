//! Listings of names, one a line: `git tag`, `git branch -a`, `npm view <pkg> versions`
//! (quoted, and as the JSON array `--json` prints), `pip freeze`; and the one-line list of
//! `pip index versions`. Every name stays, in its order. From Standard up, consecutive names
//! that share a stem up to a separator (`.`, `-`, `_`, `+`, `/`) share one line in shell
//! brace form (`v1.4.{0,1,2,3}`, `  '0.0.0-experimental-{1e3e30dae-20221108,1e5245df8-20220817}',`,
//! `  remotes/origin/release/{2.1,2.2}`): where each run starts and ends is chosen to make
//! the listing shortest. Inside the braces, three or more parts that count up by one in
//! digits of one width, or that are days of the calendar one after another, are said as
//! their first and last (`1.6.0-dev.{20150722..20150802}`, nightly builds). [`expand`] gives the lines back byte for byte, and a
//! listing it would not give back exactly is left as sent. Nothing else is touched.

use super::lines::{join, Row};
use super::Level;
use std::borrow::Cow;

/// Shortest run that shares a line.
const MIN_RUN: usize = 3;

/// Longest run weighed as one line: keeps choosing the runs linear in the listing's length
/// (a longer run is two lines that both say the stem).
const MAX_RUN: usize = 400;

/// The fewest items of a JSON array of names taken as a listing (as many as the classifier
/// asks of one a line).
const MIN_ARRAY_ITEMS: usize = 20;

/// What opens `pip index versions`' list, and what opens the same list inside pip's
/// errors.
const AVAILABLE: &str = "Available versions: ";

/// What stands between the first and last part of a counted run inside braces.
const RANGE: &str = "..";

/// Fewest parts said as a range.
const MIN_RANGE: usize = 3;

/// Characters that may not appear in a grouped part: they would make the brace form
/// ambiguous.
pub(crate) fn plain_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '{' | '}' | ',' | '\'' | '"')
}

/// Characters a stem may end with.
fn is_separator(b: u8) -> bool {
    matches!(b, b'.' | b'-' | b'_' | b'+' | b'/')
}

/// A listed name split for grouping: what comes before it (indentation, an opening quote),
/// the name, and what follows it (a closing quote and comma).
#[derive(Clone, Copy)]
struct Entry<'a> {
    lead: &'a str,
    name: &'a str,
    tail: &'a str,
}

/// Splits one listing line, or `None` for a line that is not one name.
fn entry(line: &str) -> Option<Entry<'_>> {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    let quote = body.chars().next().filter(|c| matches!(c, '\'' | '"'));
    let open = quote.map_or(0, char::len_utf8);
    let inner = body.get(open..)?;
    let inner = inner.strip_suffix(',').unwrap_or(inner);
    let name = match quote {
        Some(q) => inner.strip_suffix(q)?,
        None => inner,
    };
    if name.is_empty() || !name.chars().all(plain_char) {
        return None;
    }
    let start = indent + open;
    Some(Entry {
        lead: line.get(..start)?,
        name,
        tail: line.get(start + name.len()..)?,
    })
}

/// Whether a line is one listed name (for the classifier): a version, a tag, a branch
/// (`* main`, `  remotes/origin/x`), a quoted array item, a `name==version` pin.
pub(crate) fn is_listed_name(line: &str) -> bool {
    let t = line.trim();
    let t = t.strip_prefix("* ").unwrap_or(t);
    let t = t.trim_end_matches(',').trim_matches(['\'', '"']);
    !t.is_empty()
        && t.len() <= 100
        && t.chars().all(plain_char)
        && t.chars()
            .any(|c| c.is_ascii_digit() || c == '/' || c == '.')
}

/// Whether a line is `pip index versions`' list of versions (for the classifier).
pub(crate) fn is_version_list(line: &str) -> bool {
    line.strip_prefix(AVAILABLE)
        .is_some_and(|list| list.contains(", "))
}

/// Whether a JSON document is an array of names printed one a line (`npm view <pkg>
/// versions --json`): grouped as a listing it stays the same text, where minified it is
/// the same data.
pub(crate) fn is_name_array(text: &str) -> bool {
    let mut lines = text.trim().lines();
    if lines.next() != Some("[") || lines.next_back() != Some("]") {
        return false;
    }
    let mut items = 0;
    for line in lines {
        match entry(line) {
            Some(e) if e.lead.trim_start() == "\"" => items += 1,
            _ => return false,
        }
    }
    items >= MIN_ARRAY_ITEMS
}

/// Groups runs of names. Light returns the rows unchanged, and so does a listing whose
/// grouping would not expand back to it (a name that is itself in brace form).
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let original = join(&rows);
    let out = grouped(rows.clone());
    if expand(&join(&out)) == original {
        out
    } else {
        rows
    }
}

/// [`compact`]'s grouping, unchecked.
fn grouped(rows: Vec<Row>) -> Vec<Row> {
    let mut out = Vec::with_capacity(rows.len());
    let mut run: Vec<Row> = Vec::new();
    for row in rows {
        let joins = run
            .first()
            .is_some_and(|first| match (entry(&first.text), entry(&row.text)) {
                (Some(a), Some(b)) => a.lead == b.lead && a.tail == b.tail,
                _ => false,
            });
        if !joins {
            emit(&mut out, std::mem::take(&mut run));
        }
        if row.is_marker() {
            out.push(row);
        } else if let Some(list) = row.text.strip_prefix(AVAILABLE) {
            let items: Vec<&str> = list.split(", ").collect();
            let grouped = group(&items, "", "", ", ");
            out.push(Row::plain(format!("{AVAILABLE}{}", grouped.join(", "))));
        } else if entry(&row.text).is_none() {
            out.push(row);
        } else {
            run.push(row);
        }
    }
    emit(&mut out, run);
    out
}

/// Emits a run of names with one lead and tail.
fn emit(out: &mut Vec<Row>, run: Vec<Row>) {
    let Some(first) = run.first().and_then(|r| entry(&r.text)) else {
        out.extend(run);
        return;
    };
    let names: Vec<&str> = run
        .iter()
        .filter_map(|r| entry(&r.text).map(|e| e.name))
        .collect();
    if names.len() != run.len() {
        out.extend(run);
        return;
    }
    out.extend(
        group(&names, first.lead, first.tail, "\n")
            .into_iter()
            .map(Row::plain),
    );
}

/// Where a name may be cut for a stem: after each separator, leaving something after it.
fn cuts(name: &str) -> Vec<usize> {
    let bytes = name.as_bytes();
    (1..bytes.len())
        .filter(|&i| bytes.get(i - 1).copied().is_some_and(is_separator))
        .collect()
}

/// Bytes two names share at their start.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// The names, each as `lead name tail` or, for a run sharing a stem, as one
/// `lead stem{a,b,c} tail`, with the runs chosen so the listing is shortest (`between` is
/// what separates two items). Items that cannot be grouped stay as they are. The JSON
/// table room writes long arrays of names inside a document with it too.
pub(crate) fn group(names: &[&str], lead: &str, tail: &str, between: &str) -> Vec<String> {
    let n = names.len();
    let item = |name: &str| lead.len() + name.len() + tail.len() + between.len();
    // a name with `..` in it would read as a range inside braces
    let plain: Vec<bool> = names
        .iter()
        .map(|name| name.chars().all(plain_char) && !name.contains(RANGE))
        .collect();
    // what a run of names shares at its start is the least two neighbours in it share
    let adjacent: Vec<usize> = names
        .windows(2)
        .map(|pair| match pair {
            [a, b] => common_prefix(a, b),
            _ => 0,
        })
        .collect();
    // best[i]: (length of names[i..] written best, the run that starts it and its stem)
    let mut best: Vec<(usize, usize, usize)> = vec![(0, 0, 0); n + 1];
    for i in (0..n).rev() {
        let name = names.get(i).copied().unwrap_or_default();
        let next = best.get(i + 1).map_or(0, |b| b.0);
        let mut choice = (item(name) + next, 1, 0);
        if plain.get(i).copied().unwrap_or(false) {
            let stems = cuts(name);
            let mut shared = name.len();
            let mut shortest = name.len();
            let mut parts = name.len();
            for j in i + 1..n.min(i + MAX_RUN) {
                let other = names.get(j).copied().unwrap_or_default();
                if !plain.get(j).copied().unwrap_or(false) {
                    break;
                }
                shared = shared.min(adjacent.get(j - 1).copied().unwrap_or(0));
                shortest = shortest.min(other.len());
                parts += other.len();
                let Some(&stem) = stems.iter().rev().find(|&&c| c <= shared && c < shortest) else {
                    break;
                };
                let len = j + 1 - i;
                if len < MIN_RUN {
                    continue;
                }
                // `lead stem{a,b,c}tail`: the stem once, each part and a comma
                let written = lead.len() + stem + 2 + parts - stem * len
                    + (len - 1)
                    + tail.len()
                    + between.len();
                let total = written + best.get(j + 1).map_or(0, |b| b.0);
                if total < choice.0 {
                    choice = (total, len, stem);
                }
            }
        }
        if let Some(slot) = best.get_mut(i) {
            *slot = choice;
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let (_, len, stem) = best.get(i).copied().unwrap_or((0, 1, 0));
        let run = names.get(i..i + len.max(1)).unwrap_or_default();
        match run {
            [single] => out.push(format!("{lead}{single}{tail}")),
            _ => {
                let head = run.first().and_then(|r| r.get(..stem)).unwrap_or_default();
                let parts: Vec<&str> = run.iter().filter_map(|r| r.get(stem..)).collect();
                out.push(format!(
                    "{lead}{head}{{{}}}{tail}",
                    ranged(&parts).join(",")
                ));
            }
        }
        i += len.max(1);
    }
    out
}

/// The parts of one brace group, each run of [`MIN_RANGE`] or more that counts up by one
/// said as `first..last`: numbers written plainly (`8..11`), or all in one width with
/// leading zeros (`08..11`), or days of the calendar (`20150728..20150803`, nightly builds
/// across a month's end). A run is said so only where [`span`] reads it back exactly.
fn ranged(parts: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(parts.len());
    let mut i = 0;
    while let Some(&first) = parts.get(i) {
        let mut end = i;
        while let (Some(&a), Some(&b)) = (parts.get(end), parts.get(end + 1)) {
            if span(a, b).as_deref() != Some(&[a.to_owned(), b.to_owned()][..]) {
                break;
            }
            end += 1;
        }
        // a run that reads back otherwise (numbers that look like days) is said shorter
        while end + 1 - i >= MIN_RANGE {
            let run = parts.get(i..=end).unwrap_or_default();
            let last = parts.get(end).copied().unwrap_or_default();
            if span(first, last).is_some_and(|s| s.iter().eq(run.iter())) {
                break;
            }
            end -= 1;
        }
        if end + 1 - i >= MIN_RANGE {
            let last = parts.get(end).copied().unwrap_or_default();
            out.push(format!("{first}{RANGE}{last}"));
            i = end + 1;
        } else {
            out.push(first.to_owned());
            i += 1;
        }
    }
    out
}

/// Longest run a range may stand for: a longer one is not read as a range.
const MAX_SPAN: u64 = 100_000;

/// What `a..b` stands for, first to last: the days of the calendar from `a` to `b` where
/// both are dates (`YYYYMMDD`) in different months; else the numbers from `a` to `b`,
/// written plainly or all in one width with leading zeros. `None` where it is no range.
fn span(a: &str, b: &str) -> Option<Vec<String>> {
    let digits = |s: &str| !s.is_empty() && s.len() <= 18 && s.bytes().all(|c| c.is_ascii_digit());
    if !digits(a) || !digits(b) {
        return None;
    }
    let (x, y) = (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?);
    if x >= y || y - x > MAX_SPAN {
        return None;
    }
    if a.len() == 8
        && b.len() == 8
        && x / 100 != y / 100
        && day_after(x).is_some()
        && day_after(y).is_some()
    {
        let mut days = vec![a.to_owned()];
        let mut day = x;
        while day < y {
            day = day_after(day)?;
            days.push(day.to_string());
        }
        return (day == y).then_some(days);
    }
    let plain = |s: &str| s == "0" || !s.starts_with('0');
    let width = if plain(a) && plain(b) {
        0
    } else if a.len() == b.len() {
        a.len()
    } else {
        return None;
    };
    Some((x..=y).map(|n| format!("{n:0width$}")).collect())
}

/// The day after `YYYYMMDD`, or `None` if it is no date.
fn day_after(date: u64) -> Option<u64> {
    let (year, month, day) = (date / 10_000, date / 100 % 100, date % 100);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if !(1000..=9999).contains(&year) || day == 0 || day > days {
        return None;
    }
    Some(match (day == days, month == 12) {
        (false, _) => date + 1,
        (true, false) => year * 10_000 + (month + 1) * 100 + 1,
        (true, true) => (year + 1) * 10_000 + 101,
    })
}

/// The names inside one pair of braces, as [`group`] wrote them: split at commas, and each
/// `first..last` that [`span`] reads as a range counted out again (anything else is a part
/// as it stands).
pub(crate) fn parts(inner: &str) -> Vec<Cow<'_, str>> {
    let mut out = Vec::new();
    for part in inner.split(',') {
        match part.split_once(RANGE).and_then(|(a, b)| span(a, b)) {
            Some(run) => out.extend(run.into_iter().map(Cow::Owned)),
            None => out.push(Cow::Borrowed(part)),
        }
    }
    out
}

/// Undoes the grouping: each `stem{a,b,c}tail` line becomes `stem a tail`, `stem b tail`…
/// one a line, and each `stem{a,b}` item of an `Available versions:` list `stem a, stem b`.
/// Other lines stay.
pub fn expand(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if let Some(list) = line.strip_prefix(AVAILABLE) {
            out.push_str(AVAILABLE);
            for (k, item) in list.split(", ").enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                match split_braces(item).filter(|(_, _, tail)| tail.is_empty()) {
                    Some((stem, inner, _)) => {
                        for (p, part) in parts(inner).iter().enumerate() {
                            if p > 0 {
                                out.push_str(", ");
                            }
                            out.push_str(stem);
                            out.push_str(part);
                        }
                    }
                    None => out.push_str(item),
                }
            }
            continue;
        }
        match split_braces(line) {
            Some((stem, inner, tail)) => {
                for (k, part) in parts(inner).iter().enumerate() {
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

/// `stem{a,b}tail` with one brace pair, a comma or a range inside, a stem that is a name up to a
/// separator (after its indentation and quote) and a tail that closes a quote. A name has
/// no colon: a line with one before its braces is a grep match or a log's, left as it is.
fn split_braces(line: &str) -> Option<(&str, &str, &str)> {
    let open = line.find('{')?;
    let close = line.rfind('}')?;
    let (stem, inner, tail) = (
        line.get(..open)?,
        line.get(open + 1..close)?,
        line.get(close + 1..)?,
    );
    let stem_name = stem.trim_start().trim_start_matches(['\'', '"']);
    let ok = (inner.contains(',') || inner.contains(RANGE))
        && inner
            .split(',')
            .all(|p| !p.is_empty() && p.chars().all(plain_char))
        && stem_name.bytes().last().is_some_and(is_separator)
        && stem_name.chars().all(|c| plain_char(c) && c != ':')
        && matches!(tail, "" | "," | "'" | "'," | "\"" | "\",");
    ok.then_some((stem, inner, tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};

    /// `text` grouped at Standard, checked to expand back to it.
    fn round_trip(text: &str) -> String {
        let out = join(&compact(rows(text), Level::Standard));
        assert_eq!(expand(&out), text, "from:\n{out}");
        out
    }

    /// `git tag`: runs of patch releases share a line; the order and every tag stay.
    #[test]
    fn tag_runs_share_a_line_in_brace_form() {
        let text = "v0.9.0\nv0.9.0-rc.1\nv0.9.0-rc.2\nv0.9.1\nv0.9.10\nv0.9.2\nv0.9.3\nv1.0.0";
        assert_eq!(round_trip(text), "v0.9.{0,0-rc.1,0-rc.2,1,10,2,3}\nv1.0.0");
    }

    /// `npm view <pkg> versions` prints a quoted array: quotes and commas stay outside the
    /// braces, and the last item (no comma) ends the run.
    #[test]
    fn quoted_array_items_group_and_expand_back() {
        let text = "[\n  '4.9.3',\n  '4.9.4',\n  '4.9.5',\n  '5.0.0-dev.20221103',\n  '5.0.0-dev.20221104',\n  '5.0.0-dev.20221105',\n  '5.0.0-dev.20221106'\n]";
        assert_eq!(
            round_trip(text),
            "[\n  '4.9.{3..5}',\n  '5.0.0-dev.{20221103..20221105}',\n  '5.0.0-dev.20221106'\n]"
        );
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

    /// Nightly builds, one a day: the days of a run that count up by one are said as the
    /// first and last; a gap, a change of width or a short run is said part by part.
    #[test]
    fn counted_runs_inside_braces_are_said_as_ranges() {
        let days: Vec<String> = (20150722..=20150731)
            .chain([20150801, 20150802, 20150805])
            .map(|d| format!("  '1.6.0-dev.{d}',"))
            .collect();
        let text = format!("[\n{}\n  '1.6.0-dev.98'\n]", days.join("\n"));
        let out = join(&compact(rows(&text), Level::Standard));
        assert!(
            out.contains("  '1.6.0-dev.{20150722..20150802,20150805}',"),
            "{out}"
        );
        assert_eq!(expand(&out), text);
        assert_eq!(parts("8..11").join(","), "8,9,10,11");
        assert_eq!(parts("08..11").join(","), "08,09,10,11");
        assert_eq!(
            parts("20150730..20150802,20241231..20250101,20240228..20240301").join(","),
            "20150730,20150731,20150801,20150802,20241231,20250101,20240228,20240229,20240301"
        );
        for inner in ["11..08", "8..011", "a..b", "1..", "..2", "1...3", "3..3"] {
            assert_eq!(
                parts(inner).join(","),
                inner,
                "{inner} is a part as it stands"
            );
        }
        let listing = "v1.8\nv1.9\nv1.10\nv1.11\nv2.08\nv2.09\nv2.10\nv2.11\nv3.7\nv3.08\nv3.9";
        assert_eq!(round_trip(listing), "v1.{8..11}\nv2.{08..11}\nv3.{7,08,9}");
    }

    /// Nightly builds across a month's end are one range of days; numbers that only look
    /// like days (every number between, 20150732 too) are a range of numbers.
    #[test]
    fn days_across_a_month_are_one_range() {
        let nightly = [
            "20150729", "20150730", "20150731", "20150801", "20150802", "20150804",
        ];
        assert_eq!(ranged(&nightly), ["20150729..20150802", "20150804"]);
        let numbers: Vec<String> = (20150729..=20150801).map(|n| n.to_string()).collect();
        let numbers: Vec<&str> = numbers.iter().map(String::as_str).collect();
        assert_eq!(ranged(&numbers), ["20150729..20150800", "20150801"]);
        let listing: String = nightly.iter().map(|d| format!("1.6.0-dev.{d}\n")).collect();
        assert_eq!(
            round_trip(listing.trim_end()),
            "1.6.0-dev.{20150729..20150802,20150804}"
        );
    }

    /// A name that is itself in brace form or holds `..` would not come back from the
    /// grouping: such a listing, or such a name, is left as it was.
    #[test]
    fn names_that_look_grouped_are_left_as_sent() {
        let braced = "v1.0.0\nv1.0.1\nv1.0.2\nv1.{3,4}";
        assert_eq!(join(&compact(rows(braced), Level::Standard)), braced);
        let dotted = "1..2\n1..3\n1..4\n1.5\n1.6\n1.7";
        let out = join(&compact(rows(dotted), Level::Standard));
        assert_eq!(expand(&out), dotted);
        assert!(out.starts_with("1..2\n1..3\n1..4\n"), "{out}");
    }

    #[test]
    fn short_runs_and_light_are_left_alone() {
        let text = "v1.0.0\nv1.0.1\nv2.0.0";
        assert_eq!(join(&compact(rows(text), Level::Standard)), text);
        let long = "v1.0.0\nv1.0.1\nv1.0.2\nv1.0.3";
        assert_eq!(join(&compact(rows(long), Level::Light)), long);
    }

    /// Real listings: `git tag`, `pip index versions`, `npm view <pkg> versions` plain and
    /// with `--json` (both cut to their first items).
    const FIXTURES: &[(&str, &str)] = &[
        ("git_tag", include_str!("fixtures/git_tag.txt")),
        (
            "pip_index_versions",
            include_str!("fixtures/pip_index_versions.txt"),
        ),
        (
            "npm_view_versions",
            include_str!("fixtures/npm_view_versions.txt"),
        ),
        (
            "npm_view_versions_json",
            include_str!("fixtures/npm_view_versions_json.txt"),
        ),
    ];

    /// By default each real listing is read as one, comes out at most two thirds as long,
    /// the same each time, and expands back to every line it had.
    #[test]
    fn real_listings_round_trip_by_default() {
        use crate::compact::{classify, compact, expand_listings};
        for (name, text) in FIXTURES {
            assert_eq!(classify::classify(text), classify::Kind::Versions, "{name}");
            let out = compact(text, Level::Auto).unwrap();
            assert!(out.len() * 3 < text.len() * 2, "{name} saved little");
            assert_eq!(compact(text, Level::Auto), Some(out.clone()), "{name}");
            assert_eq!(expand_listings(&out).trim_end(), text.trim_end(), "{name}");
        }
    }

    /// `pip index versions`: the one list groups item by item, in its order.
    #[test]
    fn a_comma_separated_list_groups_in_place() {
        let text = "numpy (2.4.6)\nAvailable versions: 2.4.6, 2.4.5, 2.4.4, 2.3.0, 1.0rc1, 1.0, 0.9.8, 0.9.6";
        assert_eq!(
            round_trip(text),
            "numpy (2.4.6)\nAvailable versions: 2.4.{6,5,4}, 2.3.0, 1.0rc1, 1.0, 0.9.8, 0.9.6"
        );
    }

    /// Where runs start is chosen for the whole listing: a long stem shared by a few names
    /// does not cut a run that a shorter stem shares with many.
    #[test]
    fn runs_are_chosen_to_make_the_listing_shortest() {
        let text = "0.0.0-experimental-1e3e30dae-20221108\n0.0.0-experimental-1e5245df8-20220817\n0.0.0-experimental-1ea46df8-20251111\n0.0.0-experimental-1fafac002";
        assert_eq!(round_trip(text), "0.0.0-experimental-{1e3e30dae-20221108,1e5245df8-20220817,1ea46df8-20251111,1fafac002}");
    }

    /// A short JSON array, or one of other values, stays JSON (minified); braces that are
    /// not a grouping are left alone by the expansion.
    #[test]
    fn other_arrays_and_braces_are_left_to_their_rooms() {
        let short = "[\n  \"1.0.0\",\n  \"1.0.1\",\n  \"1.0.2\"\n]";
        assert!(!is_name_array(short));
        assert_eq!(
            crate::compact::compact(short, Level::Auto).as_deref(),
            Some("[\"1.0.0\",\"1.0.1\",\"1.0.2\"]")
        );
        let objects: String = format!(
            "[\n{}\n]",
            (0..30)
                .map(|i| format!("  {{\"v\": \"1.0.{i}\"}}"))
                .collect::<Vec<_>>()
                .join(",\n")
        );
        assert!(!is_name_array(&objects));
        for line in [
            "use std::{io,fmt};",
            "  {a,b}",
            "path:foo{a,b}",
            "x{a,b}y",
            "src/a.rs:1:v1.{0,1}",
        ] {
            assert_eq!(expand(line), line);
        }
    }

    proptest::proptest! {
        /// Any list of names, bare, quoted or in a comma list: grouped, it expands back to
        /// the list it was, in its order.
        #[test]
        fn generated_listings_round_trip(
            names in proptest::collection::vec("(v|release/)?[0-9]{1,2}([.+_/-][0-9a-c]{1,3}){0,3}(\\.\\.?[0-9])?", 1..60),
            counted in 0usize..40,
            style in 0usize..3,
        ) {
            // a run that counts up, to give the ranges something to say
            let mut names = names;
            names.extend((0..counted).map(|k| format!("2.0.0-dev.{}", 20240101 + k)));
            let text = match style {
                0 => names.join("\n"),
                1 => format!("[\n{}\n]", names.iter().map(|n| format!("  '{n}'")).collect::<Vec<_>>().join(",\n")),
                _ => format!("pkg (1.0)\n{AVAILABLE}{}", names.join(", ")),
            };
            let out = join(&compact(rows(&text), Level::Standard));
            proptest::prop_assert_eq!(expand(&out), text);
        }
    }
}

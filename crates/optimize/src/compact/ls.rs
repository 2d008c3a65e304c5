//! `ls -l` / `ls -la` / `ls -laR` in a short form that keeps every column: what most
//! entries share (mode, links, owner, group, date, time) is said once in a legend line, and
//! each entry gives its size, its name and only the columns where it differs. The padding
//! `ls` adds is not written: it is worked out again from the entries of each directory, as
//! `ls` does (or, where a listing was cut short, given in a widths line), so [`expand`]
//! gives back every line byte for byte.
//!
//! ```text
//! drwxr-xr-x  3 root root 4096 Dec  1 10:44 .
//! drwxr-xr-x 11 root root 4096 Dec  1 09:42 ..
//! -rw-r--r--  1 root root  968 Dec  1 10:32 Cargo.toml
//! -rw-r--r--  1 root root 1200 Dec  1 10:44 lib.rs
//! -rwxr-xr-x  1 root root  310 Nov 30  2024 run.sh
//!
//! [ls -l columns: [mode links owner group | type links] size [date] [time] name; unless given: -rw-r--r-- 1 root root Dec 1 10:44; d drwxr-xr-x]
//! d 3 4096 .
//! d 11 4096 09:42 ..
//! 968 10:32 Cargo.toml
//! 1200 lib.rs
//! -rwxr-xr-x 1 root root 310 Nov 30 2024 run.sh
//! ```
//!
//! The rewrite is only kept when it reads back to the listing exactly and is shorter; any
//! line `ls` did not print in a form this module knows (other time styles, `?` columns of
//! unreadable entries, error lines) stays as it was.

use super::lines::{join, Row};
use super::listing::is_mode;
use crate::tokens::estimate;

/// Opens the legend: the grammar of an entry line, then the columns left out.
const LEGEND_OPEN: &str =
    "[ls -l columns: [mode links owner group | type links] size [date] [time] name; unless given: ";
/// Opens the line that gives a directory's padding when it is not what its entries imply.
const WIDTHS_OPEN: &str = "[ls -l column widths: ";
/// Fewer entries than this are left as `ls` printed them: the legend would not pay.
const MIN_ENTRIES: usize = 3;
/// A type with fewer entries than this is not given its own mode in the legend.
const MIN_TYPE_ENTRIES: usize = 2;

/// The size column: bytes (or a human size, `4.0K`), or a device's major and minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Size<'a> {
    Bytes(&'a str),
    Device(&'a str, &'a str),
}

/// The date column: `Dec  1` (month and day) or `2024-01-02` (ISO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Date<'a> {
    Month(&'a str, &'a str),
    Iso(&'a str),
}

/// One `ls -l` line's columns, without their padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry<'a> {
    mode: &'a str,
    links: &'a str,
    owner: &'a str,
    group: &'a str,
    size: Size<'a>,
    date: Date<'a>,
    /// `10:44`, or a year for old files.
    time: &'a str,
    /// Everything after the time, ` -> target` of a link included.
    name: &'a str,
}

/// Where `ls` put a directory's columns, in characters: the end of the links column, the
/// owner's width, the group and size columns together (a left- and a right-aligned column
/// meet there, so only their sum shows), and the width of a device's minor number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Columns {
    links_end: usize,
    owner: usize,
    group_size: usize,
    minor: usize,
}

impl Columns {
    /// The padding `ls` gives a directory of these entries: every column as wide as its
    /// widest value, modes one wider when any carries an ACL or context mark.
    fn fit(entries: &[Entry]) -> Columns {
        let widest = |f: &dyn Fn(&Entry) -> usize| entries.iter().map(f).max().unwrap_or(0);
        let mode = widest(&|e| e.mode.len());
        let minor = widest(&|e| match e.size {
            Size::Device(_, minor) => minor.len(),
            Size::Bytes(_) => 0,
        });
        let major = widest(&|e| match e.size {
            Size::Device(major, _) => major.len(),
            Size::Bytes(_) => 0,
        });
        let bytes = widest(&|e| match e.size {
            Size::Bytes(b) => b.chars().count(),
            Size::Device(..) => 0,
        });
        let size = if minor > 0 {
            bytes.max(major + 2 + minor)
        } else {
            bytes
        };
        Columns {
            links_end: mode + 1 + widest(&|e| e.links.len()),
            owner: widest(&|e| e.owner.chars().count()),
            group_size: widest(&|e| e.group.chars().count()) + 1 + size,
            minor,
        }
    }

    fn line(&self) -> String {
        format!(
            "{WIDTHS_OPEN}{} {} {} {}]",
            self.links_end, self.owner, self.group_size, self.minor
        )
    }

    fn parse(line: &str) -> Option<Columns> {
        let body = line.strip_prefix(WIDTHS_OPEN)?.strip_suffix(']')?;
        let mut n = body.split(' ').map(|t| t.parse::<usize>().ok());
        let columns = Columns {
            links_end: n.next()??,
            owner: n.next()??,
            group_size: n.next()??,
            minor: n.next()??,
        };
        n.next().is_none().then_some(columns)
    }
}

/// Pushes `s` right-aligned in `width` characters, or `None` when it is wider.
fn push_right(out: &mut String, s: &str, width: usize) -> Option<()> {
    let pad = width.checked_sub(s.chars().count())?;
    out.extend(std::iter::repeat_n(' ', pad));
    out.push_str(s);
    Some(())
}

/// The line `ls` prints for `e` in a directory laid out as `c`, or `None` when `e` does not
/// fit it (every column keeps a blank before it).
fn render(e: &Entry, c: &Columns) -> Option<String> {
    let size = match e.size {
        Size::Bytes(b) => b.to_string(),
        Size::Device(major, minor) => {
            let mut s = format!("{major}, ");
            push_right(&mut s, minor, c.minor)?;
            s
        }
    };
    let group = e.group.chars().count();
    let mut out = String::with_capacity(c.links_end + c.owner + c.group_size + e.name.len() + 20);
    out.push_str(e.mode);
    out.push(' ');
    let links = c.links_end.checked_sub(e.mode.len() + 1)?;
    push_right(&mut out, e.links, links)?;
    out.push(' ');
    out.push_str(e.owner);
    push_right(&mut out, "", c.owner.checked_sub(e.owner.chars().count())?)?;
    out.push(' ');
    out.push_str(e.group);
    out.push(' ');
    push_right(&mut out, &size, c.group_size.checked_sub(group + 1)?)?;
    out.push(' ');
    match e.date {
        Date::Month(month, day) => {
            out.push_str(month);
            out.push(' ');
            push_right(&mut out, day, 2)?;
            out.push(' ');
            push_right(&mut out, e.time, 5)?;
        }
        Date::Iso(date) => {
            out.push_str(date);
            out.push(' ');
            out.push_str(e.time);
        }
    }
    out.push(' ');
    out.push_str(e.name);
    Some(out)
}

/// The words of a line split on runs of blanks, with where each ends.
#[derive(Clone)]
struct Words<'a> {
    line: &'a str,
    at: usize,
}

impl<'a> Words<'a> {
    fn new(line: &'a str) -> Words<'a> {
        Words { line, at: 0 }
    }

    /// The next word and the byte offset where it starts.
    fn next_word(&mut self) -> Option<(usize, &'a str)> {
        let rest = self.line.get(self.at..)?;
        let start = self.at + (rest.len() - rest.trim_start_matches(' ').len());
        let word = self.line.get(start..)?;
        let len = word.find(' ').unwrap_or(word.len());
        if len == 0 {
            return None;
        }
        self.at = start + len;
        Some((start, word.get(..len)?))
    }

    fn word(&mut self) -> Option<&'a str> {
        self.next_word().map(|(_, w)| w)
    }

    /// What follows the last word read and the one blank after it.
    fn rest(&self) -> Option<&'a str> {
        self.line.get(self.at..)?.strip_prefix(' ')
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `10:44`, `9:05` or a year.
fn is_time(s: &str) -> bool {
    match s.split_once(':') {
        Some((h, m)) => (1..=2).contains(&h.len()) && is_number(h) && m.len() == 2 && is_number(m),
        None => s.len() == 4 && is_number(s),
    }
}

/// `2024-01-02`.
fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

/// A size as `ls` prints it: bytes, or a human size (`4.0K`, `1,5M`).
fn is_size(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit()) && !s.ends_with(',')
}

/// A month as `ls` prints it in the default time style (`Dec`, `déc.`).
fn is_month(s: &str) -> bool {
    !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn is_day(s: &str) -> bool {
    (1..=2).contains(&s.len()) && is_number(s)
}

/// Reads the date and time columns, then the name after them.
fn date_time_name<'a>(w: &mut Words<'a>) -> Option<(Date<'a>, &'a str, &'a str)> {
    let first = w.word()?;
    let date = if is_iso_date(first) {
        Date::Iso(first)
    } else if is_month(first) {
        Date::Month(first, w.word().filter(|d| is_day(d))?)
    } else {
        return None;
    };
    let time = w.word().filter(|t| is_time(t))?;
    let name = w.rest().filter(|n| !n.is_empty())?;
    Some((date, time, name))
}

/// Parses a line as `ls -l` printed it, with the columns it was laid out in.
fn parse(line: &str) -> Option<(Entry<'_>, Columns)> {
    if line.starts_with(' ') {
        return None;
    }
    let mut w = Words::new(line);
    let mode = w.word().filter(|m| is_mode(m))?;
    let links = w.word().filter(|l| is_number(l))?;
    let links_end = w.at;
    let (owner_at, owner) = w.next_word()?;
    let (group_at, group) = w.next_word()?;
    let chars = |from: usize, to: usize| line.get(from..to).map(|s| s.chars().count());
    let owner_width = chars(owner_at, group_at)?.checked_sub(1)?;
    let first = w.word()?;
    let (size, minor_width) = match first.strip_suffix(',') {
        Some(major) if is_number(major) => {
            let comma_end = w.at;
            let minor = w.word().filter(|m| is_number(m))?;
            (Size::Device(major, minor), w.at.checked_sub(comma_end + 1)?)
        }
        _ if is_size(first) => (Size::Bytes(first), 0),
        _ => return None,
    };
    let group_size = chars(group_at, w.at)?;
    let (date, time, name) = date_time_name(&mut w)?;
    let entry = Entry {
        mode,
        links,
        owner,
        group,
        size,
        date,
        time,
        name,
    };
    let columns = Columns {
        links_end,
        owner: owner_width,
        group_size,
        minor: minor_width,
    };
    Some((entry, columns))
}

/// The columns most entries share, said once in the legend.
#[derive(Debug, PartialEq, Eq)]
struct Shared<'a> {
    mode: &'a str,
    links: &'a str,
    owner: &'a str,
    group: &'a str,
    date: Date<'a>,
    time: &'a str,
    /// Other types' most common modes (`d drwxr-xr-x`), for entries that give their type.
    types: Vec<&'a str>,
}

/// The most frequent of `items`, the first seen winning a tie (so the choice depends on
/// nothing but the listing).
fn most_common<T: PartialEq + Copy>(items: impl Iterator<Item = T>) -> Option<T> {
    let mut tally: Vec<(T, usize)> = Vec::new();
    for item in items {
        match tally.iter_mut().find(|(t, _)| *t == item) {
            Some((_, n)) => *n += 1,
            None => tally.push((item, 1)),
        }
    }
    let best = tally.iter().map(|(_, n)| *n).max()?;
    tally.into_iter().find(|(_, n)| *n == best).map(|(t, _)| t)
}

/// Characters the legend uses as separators, so a shared column may not hold them.
fn legend_safe(s: &str) -> bool {
    !s.contains([',', ';', '[', ']'])
}

impl<'a> Shared<'a> {
    fn choose(entries: &[Entry<'a>]) -> Option<Shared<'a>> {
        let (mode, links, owner, group) =
            most_common(entries.iter().map(|e| (e.mode, e.links, e.owner, e.group)))?;
        let date = most_common(entries.iter().map(|e| e.date))?;
        let time = most_common(entries.iter().filter(|e| e.date == date).map(|e| e.time))?;
        let mut kinds: Vec<char> = entries
            .iter()
            .filter_map(|e| e.mode.chars().next())
            .filter(|k| !mode.starts_with(*k))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        let types = kinds
            .into_iter()
            .filter_map(|k| {
                let modes = entries
                    .iter()
                    .filter(|e| e.owner == owner && e.group == group && e.mode.starts_with(k));
                (modes.clone().count() >= MIN_TYPE_ENTRIES)
                    .then(|| most_common(modes.map(|e| e.mode)))
                    .flatten()
            })
            .collect();
        let date_words = match date {
            Date::Month(month, _) => legend_safe(month),
            Date::Iso(_) => true,
        };
        (legend_safe(owner) && legend_safe(group) && date_words).then_some(Shared {
            mode,
            links,
            owner,
            group,
            date,
            time,
            types,
        })
    }

    fn legend(&self) -> String {
        let date = match self.date {
            Date::Month(month, day) => format!("{month} {day}"),
            Date::Iso(date) => date.to_string(),
        };
        let mut out = format!(
            "{LEGEND_OPEN}{} {} {} {} {date} {}",
            self.mode, self.links, self.owner, self.group, self.time
        );
        for (i, mode) in self.types.iter().enumerate() {
            out.push_str(if i == 0 { "; " } else { ", " });
            out.extend(mode.chars().next());
            out.push(' ');
            out.push_str(mode);
        }
        out.push(']');
        out
    }

    fn parse(line: &'a str) -> Option<Shared<'a>> {
        let body = line.strip_prefix(LEGEND_OPEN)?.strip_suffix(']')?;
        let (columns, types) = body.split_once("; ").unwrap_or((body, ""));
        let mut w = Words::new(columns);
        let mode = w.word().filter(|m| is_mode(m))?;
        let links = w.word()?;
        let owner = w.word()?;
        let group = w.word()?;
        let first = w.word()?;
        let date = if is_iso_date(first) {
            Date::Iso(first)
        } else {
            Date::Month(first, w.word()?)
        };
        let time = w.word()?;
        if w.word().is_some() {
            return None;
        }
        let types = if types.is_empty() {
            Vec::new()
        } else {
            types
                .split(", ")
                .map(|t| {
                    let (kind, mode) = t.split_once(' ')?;
                    (is_mode(mode) && mode.starts_with(kind)).then_some(mode)
                })
                .collect::<Option<Vec<_>>>()?
        };
        Some(Shared {
            mode,
            links,
            owner,
            group,
            date,
            time,
            types,
        })
    }

    /// The mode an entry that gives only its type letter has.
    fn type_mode(&self, kind: &str) -> Option<&'a str> {
        if kind.len() != 1 {
            return None;
        }
        if self.mode.starts_with(kind) {
            return Some(self.mode);
        }
        self.types.iter().copied().find(|m| m.starts_with(kind))
    }

    /// An entry in short: its size and name, and the columns where it differs (the time
    /// too when `timed`).
    fn short(&self, e: &Entry, timed: bool) -> String {
        let mut out = String::with_capacity(e.name.len() + 24);
        let shared_owner = e.owner == self.owner && e.group == self.group;
        let kind = e.mode.get(..1).unwrap_or("");
        let shared_prefix = shared_owner && e.mode == self.mode && e.links == self.links;
        if shared_prefix {
            // size first: the legend's mode, links, owner and group
        } else if shared_owner && self.type_mode(kind) == Some(e.mode) {
            out.push_str(kind);
            out.push(' ');
            out.push_str(e.links);
            out.push(' ');
        } else {
            return Shared::full(e);
        }
        push_size(&mut out, e.size);
        if e.date != self.date {
            push_date(&mut out, e.date);
            push_words(&mut out, &[e.time]);
        } else if timed || e.time != self.time {
            push_words(&mut out, &[e.time]);
        }
        out.push_str(e.name);
        out
    }

    /// An entry with every column given: for a mode or owner the legend does not have, and
    /// where a short line would read back as another entry. Its date and time are always
    /// given, so a line `ls` printed in a form [`parse`] does not read (`--full-time`) is
    /// not taken for one.
    fn full(e: &Entry) -> String {
        let mut out = String::with_capacity(e.name.len() + 48);
        push_words(&mut out, &[e.mode, e.links, e.owner, e.group]);
        push_size(&mut out, e.size);
        push_date(&mut out, e.date);
        push_words(&mut out, &[e.time]);
        out.push_str(e.name);
        out
    }

    /// The shortest line that reads back as `e`: a name that looks like a time or a date
    /// needs the time before it (`0 10:45 2024`), one that looks like a type more.
    fn line(&self, e: &Entry<'a>) -> String {
        [self.short(e, false), self.short(e, true)]
            .into_iter()
            .find(|line| self.decode(line) == Some(*e))
            .unwrap_or_else(|| Shared::full(e))
    }

    /// Reads a short entry line back.
    fn decode(&self, line: &'a str) -> Option<Entry<'a>> {
        let mut w = Words::new(line);
        if line.starts_with(' ') {
            return None;
        }
        let first = w.word()?;
        let full = is_mode(first);
        let (mode, links, owner, group, size) = if full {
            let links = w.word().filter(|l| is_number(l))?;
            (first, links, w.word()?, w.word()?, w.word()?)
        } else if let Some(mode) = self.type_mode(first) {
            let links = w.word().filter(|l| is_number(l))?;
            (mode, links, self.owner, self.group, w.word()?)
        } else {
            (self.mode, self.links, self.owner, self.group, first)
        };
        let size = match size.strip_suffix(',') {
            Some(major) if is_number(major) => {
                Size::Device(major, w.word().filter(|m| is_number(m))?)
            }
            _ if is_size(size) => Size::Bytes(size),
            _ => return None,
        };
        // The date and time, the time alone, or neither; then the name.
        let before_date = w.clone();
        let (date, time, name) = match date_time_name(&mut w) {
            Some(read) => read,
            None if full => return None,
            None => {
                w = before_date;
                let mut ahead = w.clone();
                let time = match ahead.word() {
                    Some(t) if is_time(t) => {
                        w = ahead;
                        t
                    }
                    _ => self.time,
                };
                (self.date, time, w.rest().filter(|n| !n.is_empty())?)
            }
        };
        Some(Entry {
            mode,
            links,
            owner,
            group,
            size,
            date,
            time,
            name,
        })
    }
}

fn push_words(out: &mut String, words: &[&str]) {
    for word in words {
        out.push_str(word);
        out.push(' ');
    }
}

fn push_size(out: &mut String, size: Size) {
    match size {
        Size::Bytes(b) => push_words(out, &[b]),
        Size::Device(major, minor) => {
            out.push_str(major);
            out.push_str(", ");
            push_words(out, &[minor]);
        }
    }
}

fn push_date(out: &mut String, date: Date) {
    match date {
        Date::Month(month, day) => push_words(out, &[month, day]),
        Date::Iso(date) => push_words(out, &[date]),
    }
}

/// Writes an `ls -l` listing in short. The rows come back unchanged when the listing has
/// too few entries, when the short form would not read back to every line exactly, or
/// when it would not be shorter.
pub(crate) fn compact(rows: Vec<Row>) -> Vec<Row> {
    short_form(&rows).unwrap_or(rows)
}

fn short_form(rows: &[Row]) -> Option<Vec<Row>> {
    let parsed: Vec<Option<(Entry, Columns)>> = rows
        .iter()
        .map(|r| (!r.is_marker()).then(|| parse(&r.text)).flatten())
        .collect();
    let entries: Vec<Entry> = parsed.iter().flatten().map(|(e, _)| *e).collect();
    if entries.len() < MIN_ENTRIES {
        return None;
    }
    let shared = Shared::choose(&entries)?;
    let mut out = Vec::with_capacity(rows.len() + 1);
    let mut legend = Some(shared.legend());
    let mut i = 0;
    while let Some(row) = rows.get(i) {
        if parsed.get(i).is_some_and(Option::is_none) {
            out.push(row.clone());
            i += 1;
            continue;
        }
        // One directory: the entries `ls` laid out together.
        let block: Vec<(Entry, Columns)> = parsed.get(i..)?.iter().map_while(|p| *p).collect();
        i += block.len();
        if let Some(legend) = legend.take() {
            out.push(Row::plain(legend));
        }
        let laid_out = layout(&block)?;
        let blocked: Vec<Entry> = block.iter().map(|(e, _)| *e).collect();
        if Columns::fit(&blocked) != laid_out {
            out.push(Row::plain(laid_out.line()));
        }
        out.extend(blocked.iter().map(|e| Row::plain(shared.line(e))));
    }
    let before = join(rows);
    let after = join(&out);
    (estimate(&after) < estimate(&before) && expand(&after) == before).then_some(out)
}

/// The columns a directory's lines were laid out in, if they all agree (a device's minor
/// width shows only on device lines).
fn layout(block: &[(Entry, Columns)]) -> Option<Columns> {
    let (_, first) = block.first()?;
    let devices = || {
        block
            .iter()
            .filter(|(e, _)| matches!(e.size, Size::Device(..)))
            .map(|(_, c)| c.minor)
    };
    let minor = devices().next().unwrap_or(0);
    let agree = block.iter().all(|(_, c)| {
        (c.links_end, c.owner, c.group_size) == (first.links_end, first.owner, first.group_size)
    }) && devices().all(|m| m == minor);
    agree.then_some(Columns { minor, ..*first })
}

/// Gives back the lines `ls -l` printed for a listing in short, from each legend line on;
/// other lines stay as they are.
pub fn expand(text: &str) -> String {
    if !text.contains(LEGEND_OPEN) {
        return text.to_string();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut shared: Option<Shared> = None;
    let mut widths: Option<Columns> = None;
    let mut i = 0;
    while let Some(&line) = lines.get(i) {
        i += 1;
        if let Some(legend) = Shared::parse(line) {
            shared = Some(legend);
            continue;
        }
        let Some(legend) = &shared else {
            out.push(line.to_string());
            continue;
        };
        if let Some(columns) = Columns::parse(line) {
            widths = Some(columns);
            continue;
        }
        let Some(first) = legend.decode(line) else {
            out.push(line.to_string());
            widths = None;
            continue;
        };
        let mut block = vec![(first, line)];
        while let Some(e) = lines.get(i).and_then(|l| Some((legend.decode(l)?, *l))) {
            block.push(e);
            i += 1;
        }
        let entries: Vec<Entry> = block.iter().map(|(e, _)| *e).collect();
        let columns = widths.take().unwrap_or_else(|| Columns::fit(&entries));
        for (e, short) in &block {
            out.push(render(e, &columns).unwrap_or_else(|| (*short).to_string()));
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::rows;
    use crate::compact::{compact as compact_text, expand_listings, strip_escapes, Level};

    /// Real listings: `ls -la . src`, `ls -laR` of node modules, the tail of a directory of
    /// thousands of files, `/dev` (devices), odd names (spaces, links, a fifo, a name that
    /// reads as a time, a leading blank, another owner, old files, an error line), colours
    /// and `--time-style=long-iso`.
    const REAL: &[(&str, &str)] = &[
        ("ls_laR", include_str!("fixtures/ls_laR.txt")),
        ("ls_la_ledger", include_str!("fixtures/ls_la_ledger.txt")),
        (
            "ls_laR_express",
            include_str!("fixtures/ls_laR_express.txt"),
        ),
        ("ls_la_tail", include_str!("fixtures/ls_la_tail.txt")),
        ("ls_la_dev", include_str!("fixtures/ls_la_dev.txt")),
        (
            "ls_la_odd_names",
            include_str!("fixtures/ls_la_odd_names.txt"),
        ),
        ("ls_la_color", include_str!("fixtures/ls_la_color.txt")),
        (
            "ls_la_long_iso",
            include_str!("fixtures/ls_la_long_iso.txt"),
        ),
    ];

    /// The savings corpus's listings, whole: `ls -laR | head -n 3000` of a repository (a
    /// directory of thousands of files), `ls -laR` of sources and of node modules, `ls -la`.
    #[test]
    fn every_corpus_listing_reads_back_byte_for_byte() {
        for text in [
            include_str!("../../../../bench/corpus/outputs/ls-laR-core-head.txt"),
            include_str!("../../../../bench/corpus/outputs/ls-laR-core-src.txt"),
            include_str!("../../../../bench/corpus/outputs/ls-laR-node-modules-express.txt"),
            include_str!("../../../../bench/corpus/outputs/ls-la-ledger.txt"),
            include_str!("../../../../bench/corpus/outputs/ls-la-scripts.txt"),
        ] {
            let out = compact_text(text, Level::Auto).unwrap_or_else(|| text.to_string());
            assert_eq!(expand_listings(&out).trim_end(), text.trim_end());
        }
    }

    /// Compacts rows into the short form and expands back, insisting on every byte.
    fn round_trip(text: &str) -> String {
        let out = join(&compact(rows(text)));
        assert!(out.contains(LEGEND_OPEN), "not shortened:\n{out}");
        assert_eq!(expand(&out), join(&rows(text)), "short form:\n{out}");
        out
    }

    /// By default every real listing is shorter and reads back byte for byte (colours
    /// aside), the same bytes every time.
    #[test]
    fn every_real_listing_reads_back_byte_for_byte_by_default() {
        for (name, text) in REAL {
            let out = compact_text(text, Level::Auto).unwrap_or_else(|| panic!("{name} kept"));
            assert!(out.contains(LEGEND_OPEN), "{name}:\n{out}");
            assert!(!out.contains(" elided"), "{name}:\n{out}");
            let original = strip_escapes(text);
            // (the listings' expansion ends every line with a newline)
            let expanded = expand_listings(&out);
            assert_eq!(expanded.trim_end(), original.trim_end(), "{name}:\n{out}");
            assert_eq!(compact_text(text, Level::Auto), Some(out), "{name}");
        }
    }

    /// The module's example.
    #[test]
    fn entries_give_only_what_differs_from_the_legend() {
        let text = "total 20\ndrwxr-xr-x  3 root root 4096 Dec  1 10:44 .\ndrwxr-xr-x 11 root root 4096 Dec  1 09:42 ..\n-rw-r--r--  1 root root  968 Dec  1 10:32 Cargo.toml\n-rw-r--r--  1 root root 1200 Dec  1 10:44 lib.rs\n-rwxr-xr-x  1 root root  310 Nov 30  2024 run.sh";
        assert_eq!(
            round_trip(text),
            "total 20\n[ls -l columns: [mode links owner group | type links] size [date] [time] name; unless given: -rw-r--r-- 1 root root Dec 1 10:44; d drwxr-xr-x]\nd 3 4096 .\nd 11 4096 09:42 ..\n968 10:32 Cargo.toml\n1200 lib.rs\n-rwxr-xr-x 1 root root 310 Nov 30 2024 run.sh"
        );
    }

    /// A name that would read back as a time or a date keeps the time before it; other
    /// owners, links, types and dates are given where they differ.
    #[test]
    fn names_that_read_as_columns_keep_the_time_before_them() {
        let out = round_trip(include_str!("fixtures/ls_la_odd_names.txt"));
        // the legend's time is the year 2025
        assert!(out.contains("\n0 2025 10:45 notes\n"), "{out}");
        assert!(out.contains("\n0 2025 2024\n"), "{out}");
        assert!(out.contains("\n0 Dec 1 x\n"), "{out}");
        assert!(out.contains("\n0  leading\n"), "{out}");
        assert!(
            out.contains("\n-rw-r--r-- 2 nobody nogroup 123456 "),
            "{out}"
        );
        assert!(out.starts_with("ls: cannot access 'missing': No such file or directory\n"));
    }

    /// A listing cut short (`| tail`) is padded for entries not shown: a widths line says so.
    #[test]
    fn a_cut_listing_keeps_its_padding_in_a_widths_line() {
        let out = round_trip(include_str!("fixtures/ls_la_tail.txt"));
        assert!(out.contains("\n[ls -l column widths: "), "{out}");
    }

    /// Devices' `major, minor` sizes, ACL and context marks after the mode.
    #[test]
    fn devices_and_marked_modes_read_back() {
        round_trip(include_str!("fixtures/ls_la_dev.txt"));
        let marked: String = (1..=8)
            .map(|i| {
                let mark = [" ", "+", "."][i % 3];
                format!(
                    "-rw-r--r--{mark} 1 root root {:>4} Dec  1 10:44 file{i}.txt\n",
                    i * 150
                )
            })
            .collect();
        round_trip(&marked);
    }

    /// What is not an `ls -l` line in a form this module reads stays as sent: `?` columns
    /// of an entry that cannot be read, full-iso times, lines of other tools.
    #[test]
    fn lines_it_cannot_read_stay_as_sent() {
        let entries: String = (1..=8)
            .map(|i| format!("-rw-r--r-- 1 root root {i}0 Dec  1 10:44 file{i}.txt\n"))
            .collect();
        let text = format!("total 8\n{entries}d????????? ? ?    ?       ?            ? broken\n{entries}-rw-r--r-- 1 root root 40 2024-01-02 10:33:12.000000000 +0000 full");
        let out = round_trip(&text);
        assert!(
            out.contains("\nd????????? ? ?    ?       ?            ? broken\n"),
            "{out}"
        );
        assert!(
            out.ends_with("\n-rw-r--r-- 1 root root 40 2024-01-02 10:33:12.000000000 +0000 full")
        );
        // Too few entries for the legend to pay: as sent.
        let two =
            "-rw-r--r-- 1 root root 10 Dec  1 10:44 a\n-rw-r--r-- 1 root root 20 Dec  1 10:44 b";
        assert_eq!(join(&compact(rows(two))), two);
    }

    /// Padding `ls` would not print (hand-edited, another tool's columns) keeps the lines
    /// as sent rather than read back otherwise.
    #[test]
    fn uneven_padding_keeps_the_listing_as_sent() {
        let text = "-rw-r--r-- 1 root root 10 Dec  1 10:44 a\n-rw-r--r-- 1 root root  20 Dec  1 10:44 b\n-rw-r--r-- 1 root root 30 Dec  1 10:44 c\n-rw-r--r-- 1 root root 40 Dec  1 10:44 d";
        assert_eq!(join(&compact(rows(text))), text);
    }

    /// Text without a legend, or after none, is left alone by the expansion.
    #[test]
    fn expand_leaves_other_text_alone() {
        let text = "150 Cargo.lock\nd 4 4096 .\n[ls -l column widths: 1 2 3 4]";
        assert_eq!(expand(text), text);
    }
}

//! Runs of timestamped lines that open alike. What every line of a run repeats — the
//! date, hour and minute of its timestamp, what stands before it (redis's `7959:M`, a
//! `git log` line's author), the zone and a `tracing` level and target after it — is
//! said once in a head line; each line keeps what is its own: the rest of its time to
//! the last digit, and its message.
//!
//! ```text
//! [next 2 lines: 2026-12-03T15:51:…Z DEBUG hyper_util::client::legacy::connect::http:…]
//! 19.256895 connecting to 127.0.0.1:47811
//! 19.267588 connected to 127.0.0.1:47811
//! ```
//!
//! A `git log --format='%h %an %ad %s'` line keeps its hash before the shared part
//! (`[next 9 lines: … Ana Souza 2021-03-…:00 +0000…]`, then `b698877 08 08:50 router: …`).
//!
//! The head counts the lines it covers, so a reader knows where it ends; markers between
//! them are not counted and stay as they are. [`expand`] gives the lines back byte for
//! byte, and a run is rewritten only once that has been checked: a line the check fails
//! for stays as it was sent.

use std::borrow::Cow;

use super::lines::{thousands, Row};
use super::timestamps::timestamp_span;

/// Stands for a line's own part in a head line. Lines whose shared parts contain it are
/// left alone, so a head line reads back one way only.
const HOLE: &str = "…";

/// What opens a head line, before its line count.
const HEAD_OPEN: &str = "[next ";

/// Bytes a head line costs beyond the shared text it carries (its words and count).
const HEAD_COST: usize = 24;

/// Levels `tracing`, `log` and most loggers print after the timestamp.
const LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR"];

/// What the lines of a run share. A line is `head + prefix + own + shared + rest`, where
/// `head` is the line's first word and its space when `own_head` (a commit hash before
/// an author), and empty otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Shape<'a> {
    own_head: bool,
    prefix: &'a str,
    shared: &'a str,
}

/// One way to cut a line into the parts a run shares and the parts that stay its own.
struct Cut<'a> {
    shape: Shape<'a>,
    head: &'a str,
    own: &'a str,
    rest: &'a str,
}

impl Cut<'_> {
    /// The line as it reads under its run's head.
    fn short(&self) -> String {
        [self.head, self.own, self.rest].concat()
    }
}

impl Shape<'_> {
    /// The head line for `n` lines of this shape.
    fn head_line(&self, n: usize) -> String {
        let head = if self.own_head { "… " } else { "" };
        let tail = if self.shared.is_empty() {
            String::new()
        } else {
            format!("{}{HOLE}", self.shared)
        };
        format!(
            "{HEAD_OPEN}{} lines: {head}{}{HOLE}{tail}]",
            thousands(n),
            self.prefix
        )
    }

    /// A line back from its short form, or `None` when `short` cannot be one.
    fn rebuild(&self, short: &str) -> Option<String> {
        let (head, body) = if self.own_head {
            let space = short.find(' ')?;
            (short.get(..=space)?, short.get(space + 1..)?)
        } else {
            ("", short)
        };
        if self.shared.is_empty() {
            return Some([head, self.prefix, body].concat());
        }
        let own_len = body.bytes().take_while(|b| is_own_byte(*b)).count();
        let (own, rest) = (body.get(..own_len)?, body.get(own_len..)?);
        Some([head, self.prefix, own, self.shared, rest].concat())
    }
}

/// Bytes of the part of a time a line keeps: its digits and their separators.
fn is_own_byte(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b':' | b'.' | b',')
}

/// Reads a head line back: its count and the shape it names.
fn parse_head(line: &str) -> Option<(usize, Shape<'_>)> {
    let body = line.strip_prefix(HEAD_OPEN)?.strip_suffix(']')?;
    let (count, template) = body.split_once(" lines: ")?;
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit() || b == b',') {
        return None;
    }
    let n: usize = count.replace(',', "").parse().ok()?;
    let (own_head, template) = match template.strip_prefix("… ") {
        Some(rest) => (true, rest),
        None => (false, template),
    };
    let (prefix, after) = template.split_once(HOLE)?;
    let shared = match after {
        "" => "",
        _ => after.strip_suffix(HOLE)?,
    };
    if shared.contains(HOLE) {
        return None;
    }
    Some((
        n,
        Shape {
            own_head,
            prefix,
            shared,
        },
    ))
}

/// A marker of another pass (`[… 4 lines elided …]`): inside a run, passed over.
fn is_marker(line: &str) -> bool {
    line.starts_with("[… ") && line.ends_with(" …]")
}

/// The byte range, within a timestamp, of its time of day (`15:51:16`): the last place
/// that reads `99:99:99` and is not followed by more of a time.
fn time_of_day(stamp: &str) -> Option<usize> {
    let bytes = stamp.as_bytes();
    (0..bytes.len().saturating_sub(7)).rev().find(|&i| {
        let digit = |k: usize| bytes.get(i + k).is_some_and(u8::is_ascii_digit);
        let colon = |k: usize| bytes.get(i + k) == Some(&b':');
        let before_ok = i == 0 || !bytes.get(i - 1).is_some_and(u8::is_ascii_digit);
        before_ok
            && digit(0)
            && digit(1)
            && colon(2)
            && digit(3)
            && digit(4)
            && colon(5)
            && digit(6)
            && digit(7)
            && !bytes
                .get(i + 8)
                .is_some_and(|b| b.is_ascii_digit() || *b == b':')
    })
}

/// The length of a level and a `tracing` target after a timestamp (`  INFO
/// gateway_core::record:`, ` [WARN]`), or 0.
fn level_and_target(after: &str) -> usize {
    let spaces = after.bytes().take_while(|b| *b == b' ').count();
    if spaces == 0 {
        return 0;
    }
    let word_len = after
        .get(spaces..)
        .unwrap_or_default()
        .bytes()
        .take_while(|b| *b != b' ')
        .count();
    let word = after.get(spaces..spaces + word_len).unwrap_or_default();
    let bare = word.strip_prefix('[').and_then(|w| w.strip_suffix(']'));
    if !LEVELS.contains(&bare.unwrap_or(word)) {
        return 0;
    }
    let level_end = spaces + word_len;
    // a target: a path of identifiers ending in `:`, then a space or the line's end
    let rest = after.get(level_end..).unwrap_or_default();
    let gap = rest.bytes().take_while(|b| *b == b' ').count();
    let target_len = rest
        .get(gap..)
        .unwrap_or_default()
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b':'))
        .count();
    let target = rest.get(gap..gap + target_len).unwrap_or_default();
    let after_target = rest.as_bytes().get(gap + target_len);
    if gap > 0
        && target.len() > 1
        && target.ends_with(':')
        && after_target.is_none_or(|b| *b == b' ')
    {
        level_end + gap + target_len
    } else {
        level_end
    }
}

/// The ways a line may be cut: at the date, the hour or the minute of its timestamp,
/// with and without its first word kept as its own. None for a line without a timestamp.
fn cuts(line: &str) -> Vec<Cut<'_>> {
    let mut out = Vec::new();
    let Some((start, end)) = timestamp_span(line) else {
        return out;
    };
    let Some(clock) = line.get(start..end).and_then(time_of_day) else {
        return out;
    };
    let clock = start + clock;
    let fraction = line
        .get(clock + 8..)
        .filter(|r| r.starts_with(['.', ',']))
        .map_or(0, |r| {
            let digits = r.bytes().skip(1).take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                digits + 1
            } else {
                0
            }
        });
    let own_end = clock + 8 + fraction;
    let mut shared_end = end.max(own_end);
    shared_end += level_and_target(line.get(shared_end..).unwrap_or_default());
    // the rest must not read as more of the time, or the two could not be told apart
    let rest_start = line.as_bytes().get(shared_end).copied();
    if shared_end > own_end && rest_start.is_some_and(is_own_byte) {
        shared_end = own_end;
    }
    let (Some(shared), Some(rest)) = (line.get(own_end..shared_end), line.get(shared_end..)) else {
        return out;
    };
    if shared.contains(HOLE) {
        return out;
    }
    let mut heads = vec![0];
    if let Some(space) = line.get(..start).and_then(|before| before.find(' ')) {
        // a head that could read as a marker or a head line of its own stays shared
        if !line.starts_with('[') {
            heads.push(space + 1);
        }
    }
    for head_end in heads {
        for cut in [clock, clock + 3, clock + 6] {
            let (Some(head), Some(prefix), Some(own)) = (
                line.get(..head_end),
                line.get(head_end..cut),
                line.get(cut..own_end),
            ) else {
                continue;
            };
            if prefix.contains(HOLE) || prefix.len() + shared.len() == 0 {
                continue;
            }
            out.push(Cut {
                shape: Shape {
                    own_head: head_end > 0,
                    prefix,
                    shared,
                },
                head,
                own,
                rest,
            });
        }
    }
    out
}

/// A run: the index of its first line, the shape its lines share, how many lines it has,
/// and the index after its last line.
struct Run<'a> {
    start: usize,
    shape: Shape<'a>,
    lines: usize,
    end: usize,
}

/// For each row and each of its cuts, the longest run that starts there: (lines, end).
/// Built from the last row up, so each row looks only at the next line.
fn runs_from(rows: &[Row], cuts: &[Vec<Cut>]) -> Vec<Vec<(usize, usize)>> {
    let mut runs: Vec<Vec<(usize, usize)>> = vec![Vec::new(); rows.len()];
    let mut next_line: Option<usize> = None;
    for i in (0..rows.len()).rev() {
        if rows.get(i).is_some_and(Row::is_marker) {
            continue;
        }
        let Some(here) = cuts.get(i) else {
            continue;
        };
        let spans = here
            .iter()
            .map(|cut| {
                let after = next_line.and_then(|j| {
                    let k = cuts.get(j)?.iter().position(|c| c.shape == cut.shape)?;
                    runs.get(j)?.get(k).copied()
                });
                after.map_or((1, i + 1), |(lines, end)| (lines + 1, end))
            })
            .collect();
        if let Some(slot) = runs.get_mut(i) {
            *slot = spans;
        }
        next_line = Some(i);
    }
    runs
}

/// Bytes a run saves: what its lines share, said once instead of on each line.
fn saving(shape: &Shape, lines: usize) -> usize {
    let said = shape.prefix.len() + shape.shared.len();
    if lines < 2 {
        return 0;
    }
    (lines * said).saturating_sub(said + HEAD_COST)
}

/// The runs that together save the most (each as long as its lines allow), found from
/// the last row up: at each row, either the row stays as it is or a run starts there.
fn choose_runs<'a>(rows: &[Row], cuts: &[Vec<Cut<'a>>]) -> Vec<Run<'a>> {
    let spans = runs_from(rows, cuts);
    let n = rows.len();
    // best[i]: bytes saved from row i on, and the run (cut index) taken at i
    let mut best: Vec<(usize, Option<usize>)> = vec![(0, None); n + 1];
    for i in (0..n).rev() {
        let mut here = (best.get(i + 1).map_or(0, |b| b.0), None);
        for (k, cut) in cuts.get(i).into_iter().flatten().enumerate() {
            let Some(&(lines, end)) = spans.get(i).and_then(|s| s.get(k)) else {
                continue;
            };
            let saved = saving(&cut.shape, lines);
            let total = saved + best.get(end).map_or(0, |b| b.0);
            if saved > 0 && total > here.0 {
                here = (total, Some(k));
            }
        }
        if let Some(slot) = best.get_mut(i) {
            *slot = here;
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let taken = best.get(i).and_then(|b| b.1);
        let run = taken.and_then(|k| {
            let cut = cuts.get(i)?.get(k)?;
            let &(lines, end) = spans.get(i)?.get(k)?;
            Some(Run {
                start: i,
                shape: cut.shape.clone(),
                lines,
                end,
            })
        });
        match run {
            Some(run) => {
                i = run.end;
                out.push(run);
            }
            None => i += 1,
        }
    }
    out
}

/// Says once what the lines of each run of a timestamped log share.
pub(crate) fn compact(rows: Vec<Row>) -> Vec<Row> {
    let cuts: Vec<Vec<Cut>> = rows
        .iter()
        .map(|r| {
            if r.is_marker() {
                Vec::new()
            } else {
                cuts(&r.text)
            }
        })
        .collect();
    let mut out = Vec::with_capacity(rows.len() + rows.len() / 8);
    let mut i = 0;
    for run in choose_runs(&rows, &cuts) {
        out.extend(rows.get(i..run.start).unwrap_or_default().iter().cloned());
        match rewrite(&rows, &cuts, &run) {
            Some(rewritten) => out.extend(rewritten),
            None => out.extend(
                rows.get(run.start..run.end)
                    .unwrap_or_default()
                    .iter()
                    .cloned(),
            ),
        }
        i = run.end;
    }
    out.extend(rows.get(i..).unwrap_or_default().iter().cloned());
    out
}

/// The run's head line and its lines in short form, or `None` if they would not read
/// back as they were.
fn rewrite(rows: &[Row], cuts: &[Vec<Cut>], run: &Run) -> Option<Vec<Row>> {
    let start = run.start;
    let head = run.shape.head_line(run.lines);
    if parse_head(&head) != Some((run.lines, run.shape.clone())) {
        return None;
    }
    let mut out = vec![Row::pinned(head)];
    for (row, row_cuts) in rows
        .get(start..run.end)?
        .iter()
        .zip(cuts.get(start..run.end)?)
    {
        if row.is_marker() {
            out.push(row.clone());
            continue;
        }
        let cut = row_cuts.iter().find(|c| c.shape == run.shape)?;
        let short = cut.short();
        if is_marker(&short) || run.shape.rebuild(&short).as_deref() != Some(row.text.as_str()) {
            return None;
        }
        out.push(Row {
            text: short,
            tag: row.tag,
        });
    }
    Some(out)
}

/// Undoes [`compact`]: each head line goes, and the lines it counts get back what it
/// said once. Other lines stay.
pub fn expand(text: &str) -> String {
    let mut out: Vec<Cow<str>> = Vec::new();
    let mut run: Option<(usize, Shape)> = None;
    for line in text.split('\n') {
        if let Some((left, shape)) = run.as_mut() {
            if is_marker(line) {
                out.push(Cow::Borrowed(line));
                continue;
            }
            if let Some(full) = shape.rebuild(line) {
                out.push(Cow::Owned(full));
                *left -= 1;
                if *left == 0 {
                    run = None;
                }
                continue;
            }
            run = None;
        }
        match parse_head(line) {
            Some((n, shape)) if n > 0 => run = Some((n, shape)),
            _ => out.push(Cow::Borrowed(line)),
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};

    fn round_trip(text: &str) -> String {
        let out = join(&compact(rows(text)));
        assert_eq!(expand(&out), text.trim_end(), "{out}");
        out
    }

    #[test]
    fn tracing_lines_share_the_minute_level_and_target() {
        let text = "2026-12-03T15:51:19.256895Z DEBUG hyper_util::client::legacy::connect::http: connecting to 127.0.0.1:47811\n\
2026-12-03T15:51:19.267588Z DEBUG hyper_util::client::legacy::connect::http: connected to 127.0.0.1:47811\n\
2026-12-03T15:51:19.296818Z DEBUG hyper_util::client::legacy::connect::http: connecting to 127.0.0.1:47811";
        let out = round_trip(text);
        assert_eq!(
            out,
            "[next 3 lines: 2026-12-03T15:51:…Z DEBUG hyper_util::client::legacy::connect::http:…]\n\
19.256895 connecting to 127.0.0.1:47811\n\
19.267588 connected to 127.0.0.1:47811\n\
19.296818 connecting to 127.0.0.1:47811"
        );
    }
}

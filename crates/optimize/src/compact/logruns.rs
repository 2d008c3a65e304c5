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
//! (`[next 40 lines: … Seed 64af95fb maintainers 2026-12-03 … +0000…]`, then
//! `d587f39 15:25:11 corpus: …`). Where runs are cut is chosen for the whole log at once:
//! the runs that together save the most bytes.
//!
//! The head counts the lines it covers, so a reader knows where it ends; markers between
//! them are not counted and stay as they are. [`expand`] gives the lines back byte for
//! byte, and a run is rewritten only once that has been checked: a line the check fails
//! for stays as it was sent.

use std::borrow::Cow;

use super::lines::{thousands, Row};
use super::logfields::{Template, AS_ABOVE};
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

/// A run: the index of its first line, the shape its lines share, and the index after its
/// last line.
struct Run<'a> {
    start: usize,
    shape: Shape<'a>,
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
            let &(_, end) = spans.get(i)?.get(k)?;
            Some(Run {
                start: i,
                shape: cut.shape.clone(),
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
    // A log that already holds lines that read as heads would not read back: it passes
    // as it came.
    let reads_as_head = |r: &Row| {
        parse_head(&r.text).is_some()
            || r.text == AS_ABOVE
            || Template::parse_head(&r.text).is_some()
    };
    if rows.iter().any(reads_as_head) {
        return rows;
    }
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
    let mut out = Emitted::default();
    let mut i = 0;
    for run in choose_runs(&rows, &cuts) {
        let before = rows.get(i..run.start).unwrap_or_default();
        out.rows.extend(before.iter().cloned());
        rewrite(&rows, &cuts, &run, &mut out);
        i = run.end;
    }
    out.rows
        .extend(rows.get(i..).unwrap_or_default().iter().cloned());
    out.rows
}

/// Puts a run's lines under heads, in short form where they read back exactly and as they
/// were where not: such a line ends a head's lines, and the lines after it get a head of
/// their own.
fn rewrite(rows: &[Row], cuts: &[Vec<Cut>], run: &Run, out: &mut Emitted) {
    let (Some(rows), Some(cuts)) = (rows.get(run.start..run.end), cuts.get(run.start..run.end))
    else {
        return;
    };
    let shorts: Vec<Option<String>> = rows
        .iter()
        .zip(cuts)
        .map(|(row, row_cuts)| {
            let cut = row_cuts.iter().find(|c| c.shape == run.shape);
            cut.filter(|_| !row.is_marker()).map(Cut::short)
        })
        .collect();
    let lines: Vec<&str> = shorts.iter().flatten().map(String::as_str).collect();
    let template = Template::choose(&lines)
        .filter(|t| Template::parse_head(&t.head_line()).as_ref() == Some(t));
    let mut segment: Vec<(&Row, Option<String>)> = Vec::new();
    for (row, short) in rows.iter().zip(&shorts) {
        if row.is_marker() {
            segment.push((row, None));
            continue;
        }
        let fitted = short.as_ref().and_then(|short| {
            let short = template
                .as_ref()
                .and_then(|t| t.drop_shared(short))
                .unwrap_or_else(|| short.clone());
            reads_back(&run.shape, template.as_ref(), &short, &row.text).then_some(short)
        });
        match fitted {
            Some(short) => segment.push((row, Some(short))),
            None => {
                out.flush(&run.shape, template.as_ref(), &mut segment);
                out.rows.push(row.clone());
            }
        }
    }
    out.flush(&run.shape, template.as_ref(), &mut segment);
}

/// Whether a line in short form reads back as `original` under its heads.
fn reads_back(shape: &Shape, template: Option<&Template>, short: &str, original: &str) -> bool {
    if is_marker(short) || short.starts_with('[') {
        return false;
    }
    let full = template.map_or(Cow::Borrowed(short), |t| t.restore(short));
    shape.rebuild(&full).as_deref() == Some(original)
}

/// The rows written so far, and the last template line among them.
#[derive(Default)]
struct Emitted {
    rows: Vec<Row>,
    template: Option<String>,
}

impl Emitted {
    /// Emits a segment of a run: its heads and its lines in short form when it has two
    /// lines or more, else its rows as they were.
    fn flush(
        &mut self,
        shape: &Shape,
        template: Option<&Template>,
        segment: &mut Vec<(&Row, Option<String>)>,
    ) {
        let lines = segment.iter().filter(|(_, s)| s.is_some()).count();
        let head = shape.head_line(lines);
        if lines < 2 || parse_head(&head).as_ref() != Some(&(lines, shape.clone())) {
            self.rows
                .extend(segment.drain(..).map(|(row, _)| row.clone()));
            return;
        }
        self.rows.push(Row::pinned(head));
        if let Some(line) = template.map(Template::head_line) {
            if self.template.as_ref() == Some(&line) {
                self.rows.push(Row::pinned(AS_ABOVE));
            } else {
                self.rows.push(Row::pinned(line.clone()));
                self.template = Some(line);
            }
        }
        for (row, short) in segment.drain(..) {
            self.rows.push(match short {
                Some(text) => Row { text, tag: row.tag },
                None => row.clone(),
            });
        }
    }
}

/// Undoes [`compact`]: each head line (and the template line under it) goes, and the
/// lines it counts get back what it said once. Other lines stay.
pub fn expand(text: &str) -> String {
    let mut out: Vec<Cow<str>> = Vec::new();
    let mut run: Option<(usize, Shape, Option<Template>)> = None;
    let mut last: Option<Template> = None;
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        if let Some((left, shape, template)) = run.as_mut() {
            if is_marker(line) {
                out.push(Cow::Borrowed(line));
                continue;
            }
            let full = template
                .as_ref()
                .map_or(Cow::Borrowed(line), |t| t.restore(line));
            if let Some(full) = shape.rebuild(&full) {
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
            Some((n, shape)) if n > 0 => {
                let next = lines.peek().copied().unwrap_or_default();
                let template = if next == AS_ABOVE {
                    last.clone()
                } else {
                    Template::parse_head(next)
                };
                if template.is_some() {
                    lines.next();
                    last.clone_from(&template);
                }
                run = Some((n, shape, template));
            }
            _ => out.push(Cow::Borrowed(line)),
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};
    use crate::compact::{compact as compact_text, expand_listings, Level};

    /// Real slices: a `tracing` debug log (with the untimed lines a server prints at
    /// start), redis, PostgreSQL, nginx's error log, `git log --format='%h %an %ad %s'`.
    const FIXTURES: [(&str, &str); 5] = [
        (
            "gateway_debug_log",
            include_str!("fixtures/gateway_debug_log.txt"),
        ),
        ("redis_log", include_str!("fixtures/redis_log.txt")),
        ("postgres_log", include_str!("fixtures/postgres_log.txt")),
        (
            "nginx_error_log",
            include_str!("fixtures/nginx_error_log.txt"),
        ),
        (
            "git_log_author_date",
            include_str!("fixtures/git_log_author_date.txt"),
        ),
    ];

    /// The pass alone, and its lines read back exactly.
    fn round_trip(text: &str) -> String {
        let out = join(&compact(rows(text)));
        assert_eq!(expand(&out), join(&rows(text)), "{out}");
        out
    }

    /// Through the whole compactor at `level`: every line of the expanded result is a
    /// marker of another pass or the next line of the original, and none is missing but
    /// for markers' lines.
    fn reads_back_through_the_pipeline(name: &str, text: &str, level: Level) -> String {
        let out = compact_text(text, level).unwrap_or_else(|| text.to_owned());
        let expanded = expand_listings(&out);
        let mut original = text.lines();
        let mut markers = 0;
        for line in expanded.lines() {
            if is_marker(line) {
                markers += 1;
                continue;
            }
            assert!(
                original.any(|o| o == line),
                "{name} {level:?}: {line:?} is not an original line, in:\n{out}"
            );
        }
        if markers == 0 {
            assert_eq!(expanded.trim_end(), text.trim_end(), "{name} {level:?}");
        }
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

    /// Every real sample: shorter, heads in it, read back exactly by the pass alone and
    /// line for line through the whole compactor at every level.
    #[test]
    fn real_logs_read_back_exactly() {
        for (name, text) in FIXTURES {
            let out = round_trip(text);
            assert!(out.len() < text.len(), "{name}");
            assert!(out.contains(HEAD_OPEN), "{name}: {out}");
            for level in [Level::Standard, Level::Auto, Level::Aggressive] {
                let out = reads_back_through_the_pipeline(name, text, level);
                assert!(out.contains(HEAD_OPEN), "{name} {level:?}");
            }
            // Light rewrites nothing of a log's lines
            let light = compact_text(text, Level::Light).unwrap_or_default();
            assert!(!light.contains(HEAD_OPEN), "{name}");
        }
    }

    /// Redis: the process and its role said once with the minute; the fields every
    /// closed connection repeats said once under the head.
    #[test]
    fn redis_says_its_prefix_and_shared_fields_once() {
        let (_, text) = FIXTURES[1];
        let out = round_trip(text);
        assert!(
            out.contains("[next 3 lines: 7959:C 03 Dec 2026 15:51:…]"),
            "{out}"
        );
        assert!(
            out.contains("\n40.635 * Ready to accept connections\n"),
            "{out}"
        );
        assert!(out.contains("laddr=127.0.0.1:47814 fd=8 name="), "{out}");
        // a closed connection keeps its own fields; one of another age stays whole
        assert!(
            out.contains("\n41.048 - Client closed connection id=4 addr=127.0.0.1:47942\n"),
            "{out}"
        );
        assert!(
            out.contains("\n41.023 - Client closed connection id=3 addr=127.0.0.1:47936 laddr="),
            "{out}"
        );
    }

    /// `git log --format='%h %an %ad %s'`: each line keeps its hash, time and subject;
    /// the author, the day and the zone are said once per run.
    #[test]
    fn a_git_log_says_its_author_once() {
        let (_, text) = FIXTURES[4];
        let out = round_trip(text);
        assert!(
            out.starts_with("[next ") && out.contains(" lines: … Seed 64af95fb maintainers 2026-12-03 … +0000…]\nd587f39 15:25:11 corpus: "),
            "{out}"
        );
    }

    /// Same input, same bytes: runs, templates and ties are chosen the same every time.
    #[test]
    fn the_same_log_gives_the_same_bytes() {
        for (name, text) in FIXTURES {
            let first = compact_text(text, Level::Auto);
            for _ in 0..3 {
                assert_eq!(compact_text(text, Level::Auto), first, "{name}");
            }
        }
    }

    /// A stack trace inside a run ends it; the trace stays as it was and the lines after
    /// it get a head of their own.
    #[test]
    fn untimed_lines_end_a_run_and_stay() {
        let text = "2026-12-03T15:51:19.1Z ERROR app: request failed\n\
2026-12-03T15:51:19.2Z ERROR app: request failed again\n\
Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n\
2026-12-03T15:51:19.3Z ERROR app: third\n\
2026-12-03T15:51:19.4Z ERROR app: fourth";
        let out = round_trip(text);
        assert!(out.contains("Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n[next 2 lines:"), "{out}");
    }

    /// Lines of two formats, zones that differ, time going backwards, CRLF: each line
    /// keeps what tells it apart, and everything reads back.
    #[test]
    fn mixed_formats_zones_and_time_going_backwards_read_back() {
        let cases = [
            "2026-12-03T15:51:19.1Z INFO a: x\n7959:M 03 Dec 2026 15:51:40.627 * y\n2026-12-03T15:51:19.2Z INFO a: z\n7959:M 03 Dec 2026 15:51:40.628 * w",
            "2026-12-03T15:51:19+05:30 x one\n2026-12-03T15:51:20-08:00 x two\n2026-12-03T15:51:21+05:30 x three\n2026-12-03T15:51:22+05:30 x four",
            "2026-12-03T15:52:19.1Z INFO a: x\n2026-12-03T15:51:59.9Z INFO a: y\n2026-12-03T15:51:58.9Z INFO a: z\n2026-12-03T15:51:01.0Z INFO a: w",
            "2026-12-03T15:51:19.1Z INFO a: x\r\n2026-12-03T15:51:19.2Z INFO a: y\r\n2026-12-03T15:51:19.3Z INFO a: z\r",
            // a shared zone followed by digits could not be told from the time: kept whole
            "2026-12-03 15:52:02.428 UTC 12 rows\n2026-12-03 15:52:02.429 UTC 13 rows\n2026-12-03 15:52:02.430 UTC 14 rows",
            // a line holding the hole glyph where the shared part would be
            "2026-12-03 15:52:… odd\n2026-12-03 15:52:02 UTC… x\n2026-12-03 15:52:03 UTC… y",
        ];
        for text in cases {
            round_trip(text);
        }
        let backwards = round_trip(cases[2]);
        assert!(backwards.contains("\n51:58.9 z\n51:01.0 w"), "{backwards}");
    }

    /// Coloured `tracing` output (levels in colour) through the whole compactor: the
    /// escapes go as they always do, and the lines read back.
    #[test]
    fn coloured_tracing_reads_back() {
        let text: String = (0..30)
            .map(|i| format!("\x1b[2m2026-12-03T15:51:{:02}.{i:06}Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mgateway_core::record\x1b[0m\x1b[2m:\x1b[0m request id={i} status=200 model=gpt-5 cache=off\n", i / 3))
            .collect();
        let plain = crate::compact::strip_escapes(&text);
        let out = compact_text(&text, Level::Auto).unwrap_or_default();
        assert!(
            out.contains("[next 30 lines: 2026-12-03T15:51:…Z  INFO gateway_core::record:…]"),
            "{out}"
        );
        let expanded = expand_listings(&out);
        assert_eq!(expanded.trim_end(), plain.trim_end());
    }

    /// Too little to share: a log of one line, two lines of different minutes.
    #[test]
    fn a_line_alone_is_left_as_it_is() {
        for text in [
            "2026-12-03T15:51:19.256895Z DEBUG h: connecting",
            "2026-12-03T15:51:19.1Z DEBUG h: a\n2026-12-03T16:52:19.1Z DEBUG h: b",
        ] {
            assert_eq!(round_trip(text), text);
        }
    }

    /// A log that already holds a line reading as a head passes as it came (it could not
    /// be told from one of ours when read back).
    #[test]
    fn a_log_quoting_a_head_line_is_left_alone() {
        let text = "2026-12-03T15:51:19.1Z INFO a: x\n[next 2 lines: 2026-12-03T15:51:…]\n2026-12-03T15:51:19.2Z INFO a: y\n2026-12-03T15:51:19.3Z INFO a: z";
        assert_eq!(join(&compact(rows(text))), text);
    }

    /// Lines folded by the timestamp pass leave markers; the marker stays inside the run
    /// and is not counted, and the kept lines read back.
    #[test]
    fn fold_markers_sit_inside_runs() {
        let (_, text) = FIXTURES[2];
        let out = reads_back_through_the_pipeline("postgres_log", text, Level::Auto);
        assert!(out.contains("[next "), "{out}");
        assert!(
            out.contains(" lines elided, each as a line kept around it"),
            "{out}"
        );
    }
}

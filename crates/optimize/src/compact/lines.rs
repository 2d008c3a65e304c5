//! The row type every line-based compactor works on, the factual markers, and the passes
//! all logs share: exact-repeat folding, status-verb runs (`Compiling …`), runs that differ
//! only in numbers, progress runs, and head/tail with error rescue.

/// What a row is, for the passes that come after the one that produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    /// An ordinary line; later passes may fold it.
    Plain,
    /// A line a compactor decided carries facts (a failure section, a diagnostic): later
    /// passes fold it only if it repeats exactly.
    Pinned,
    /// A marker standing for this many removed lines.
    Marker(usize),
}

/// One output line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub text: String,
    pub tag: Tag,
}

impl Row {
    pub fn plain(text: impl Into<String>) -> Row {
        Row {
            text: text.into(),
            tag: Tag::Plain,
        }
    }

    pub fn pinned(text: impl Into<String>) -> Row {
        Row {
            text: text.into(),
            tag: Tag::Pinned,
        }
    }

    /// A marker `[… body …]` standing for `lines` removed lines.
    pub fn marker(body: &str, lines: usize) -> Row {
        Row {
            text: format!("[… {body} …]"),
            tag: Tag::Marker(lines),
        }
    }

    pub fn is_marker(&self) -> bool {
        matches!(self.tag, Tag::Marker(_))
    }

    pub fn is_pinned(&self) -> bool {
        self.tag == Tag::Pinned
    }

    /// How many original lines this row stands for.
    pub fn weight(&self) -> usize {
        match self.tag {
            Tag::Marker(n) => n,
            _ => 1,
        }
    }
}

/// Splits cleaned text into plain rows.
pub(crate) fn rows(text: &str) -> Vec<Row> {
    text.split('\n').map(Row::plain).collect()
}

/// Joins rows with `\n`, dropping blank rows at both ends.
pub(crate) fn join(rows: &[Row]) -> String {
    let first = rows.iter().position(|r| !r.text.trim().is_empty());
    let last = rows.iter().rposition(|r| !r.text.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return String::new();
    };
    let body = rows.get(first..=last).unwrap_or_default();
    let mut out = String::with_capacity(body.iter().map(|r| r.text.len() + 1).sum());
    for (i, row) in body.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&row.text);
    }
    out
}

/// `1204` → `1,204`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `count(1, "line", "lines")` → `1 line`; `count(1204, …)` → `1,204 lines`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// Rows a pass has decided to drop, waiting for the marker that will stand for them.
#[derive(Default)]
pub(crate) struct Elided {
    rows: Vec<Row>,
    bytes: usize,
}

impl Elided {
    pub fn push(&mut self, row: Row) {
        self.bytes += row.text.len() + 1;
        self.rows.push(row);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// How many original lines the held rows stand for.
    pub fn lines(&self) -> usize {
        self.rows.iter().map(Row::weight).sum()
    }

    /// Emits one marker for the held rows, built by `body` from their line count — or the
    /// rows themselves when the marker would not be shorter.
    pub fn flush(&mut self, out: &mut Vec<Row>, body: impl FnOnce(usize) -> String) {
        if self.rows.is_empty() {
            return;
        }
        let lines = self.lines();
        let marker = Row::marker(&body(lines), lines);
        // one short line is clearer kept than counted
        let worth_it = lines >= 2 || self.bytes > 200;
        if worth_it && marker.text.len() + 1 < self.bytes {
            out.push(marker);
            self.rows.clear();
        } else {
            out.append(&mut self.rows);
        }
        self.bytes = 0;
    }
}

/// `N lines elided`.
pub(crate) fn lines_elided(n: usize) -> String {
    format!("{} elided", count(n, "line", "lines"))
}

/// Folds runs of identical lines into one line and a `[… line repeated N times …]` marker
/// (N counts every occurrence), and runs of blank lines into one blank line.
pub(crate) fn fold_repeats(rows: Vec<Row>) -> Vec<Row> {
    let rows = fold_blocks(rows);
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut iter = rows.into_iter().peekable();
    while let Some(row) = iter.next() {
        if row.is_marker() {
            out.push(row);
            continue;
        }
        let mut n = 1usize;
        while iter
            .peek()
            .is_some_and(|next| !next.is_marker() && next.text == row.text)
        {
            iter.next();
            n += 1;
        }
        if n == 1 {
            out.push(row);
            continue;
        }
        if row.text.trim().is_empty() {
            out.push(row);
            continue;
        }
        let marker = Row::marker(&format!("line repeated {} times", thousands(n)), n - 1);
        if marker.text.len() < (n - 1) * (row.text.len() + 1) {
            out.push(row);
            out.push(marker);
        } else {
            for _ in 0..n {
                out.push(row.clone());
            }
        }
    }
    out
}

/// Undoes [`fold_repeats`]: a `[… line repeated N times …]` marker becomes the line above it
/// N−1 more times, a `[… previous K lines repeated N more times …]` marker the K lines above
/// it N more times. Both counts are exact, so the view comes back line for line.
pub(crate) fn expand_repeats(text: &str) -> String {
    let count = |n: &str| n.replace(',', "").parse::<usize>().ok();
    let mut out: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        let body = line.strip_prefix("[… ").and_then(|l| l.strip_suffix(" …]"));
        let line_repeats = body
            .and_then(|b| b.strip_prefix("line repeated ")?.strip_suffix(" times"))
            .and_then(count);
        let block_repeats = body
            .and_then(|b| b.strip_prefix("previous ")?.split_once(" lines repeated "))
            .and_then(|(k, n)| Some((count(k)?, count(n.strip_suffix(" more times")?)?)));
        match (line_repeats, block_repeats, out.last().copied()) {
            (Some(n), _, Some(above)) => {
                out.extend(std::iter::repeat_n(above, n.saturating_sub(1)))
            }
            (_, Some((k, n)), _) if (2..=MAX_BLOCK).contains(&k) && k <= out.len() => {
                let block = out.split_off(out.len() - k);
                for _ in 0..=n {
                    out.extend_from_slice(&block);
                }
            }
            _ => out.push(line),
        }
    }
    out.join("\n")
}

/// A command line a build tool echoes in verbose mode (`cargo -vv`: `Running \`CARGO=… rustc
/// --crate-name serde …\``) is kilobytes of flags and environment; past this length only the
/// crate it builds is kept.
const LONG_ECHO: usize = 400;

/// Shortens long echoed command lines to what they build.
pub(crate) fn shorten_command_echoes(rows: Vec<Row>) -> Vec<Row> {
    rows.into_iter()
        .map(|row| {
            let t = row.text.trim_start();
            if row.is_marker() || row.text.len() < LONG_ECHO || !t.starts_with("Running `") {
                return row;
            }
            let indent = &row.text[..row.text.len() - t.len()];
            let command = t.trim_start_matches("Running `");
            // Environment values may hold spaces, so the program is recognised, not parsed.
            let program = if command.contains("--crate-name ") {
                "rustc"
            } else {
                command
                    .split_whitespace()
                    .find(|w| w.contains("build-script-"))
                    .map_or("command", |p| {
                        p.trim_end_matches('`').rsplit('/').next().unwrap_or(p)
                    })
            };
            let crate_name = command
                .split_once("--crate-name ")
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .map_or_else(String::new, |name| format!(" --crate-name {name}"));
            Row {
                text: format!(
                    "{indent}[… Running {program}{crate_name}: {}-byte command line elided …]",
                    thousands(row.text.len())
                ),
                tag: Tag::Marker(1),
            }
        })
        .collect()
}

/// Longest block of lines whose repeats are folded (a recursion's frame is 2–6 lines).
const MAX_BLOCK: usize = 8;

/// Folds a block of 2–8 lines repeated back to back at least three times (the frames of a
/// deep recursion, a retry loop's output) into its first copy and a marker.
pub(crate) fn fold_blocks(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut i = 0;
    while i < rows.len() {
        let mut folded = false;
        for k in 2..=MAX_BLOCK {
            if i + 3 * k > rows.len() {
                break;
            }
            let block = &rows[i..i + k];
            // A block of one line repeated is the exact-repeat fold's, with its own count.
            if block.iter().any(Row::is_marker) || block.iter().all(|r| r.text == block[0].text) {
                continue;
            }
            let mut copies = 1;
            while i + (copies + 1) * k <= rows.len()
                && rows[i + copies * k..i + (copies + 1) * k]
                    .iter()
                    .zip(block)
                    .all(|(a, b)| a.text == b.text && !a.is_marker())
            {
                copies += 1;
            }
            if copies < 3 {
                continue;
            }
            let removed = (copies - 1) * k;
            let marker = Row::marker(
                &format!(
                    "previous {k} lines repeated {} more times",
                    thousands(copies - 1)
                ),
                removed,
            );
            let bytes: usize = block.iter().map(|r| r.text.len() + 1).sum::<usize>() * (copies - 1);
            if marker.text.len() >= bytes {
                continue;
            }
            out.extend(block.iter().cloned());
            out.push(marker);
            i += copies * k;
            folded = true;
            break;
        }
        if !folded {
            if let Some(row) = rows.get(i) {
                out.push(row.clone());
            }
            i += 1;
        }
    }
    out
}

/// Status verbs that tools print once per unit of work, right-aligned (cargo) or not (pip).
const STATUS_VERBS: &[&str] = &[
    "Adding",
    "Archiving",
    "Building",
    "Checking",
    "Collecting",
    "Compiling",
    "Documenting",
    "Downloaded",
    "Downloading",
    "Fetching",
    "Fresh",
    "Installing",
    "Linking",
    "Locking",
    "Packaging",
    "Preparing",
    "Processing",
    "Removing",
    "Requirement",
    "Resolving",
    "Unpacking",
    "Updating",
    "Using",
    "Verifying",
];

/// The status verb a line opens with (`   Compiling serde v1.0.200` → `Compiling`).
pub(crate) fn status_verb(line: &str) -> Option<&'static str> {
    // a finished download bar is a result, not a status line
    if is_progress(line) {
        return None;
    }
    let trimmed = line.trim_start();
    let (word, rest) = trimmed.split_once(' ')?;
    if rest.trim().is_empty() {
        return None;
    }
    STATUS_VERBS.iter().copied().find(|v| *v == word)
}

/// Folds runs of status lines with the same verb. With `keep_ends`, the first and last
/// line of a run of three or more stay around the marker; without it the whole run
/// becomes one marker.
pub(crate) fn fold_status_runs(rows: Vec<Row>, keep_ends: bool) -> Vec<Row> {
    fold_runs(rows, status_verb, |out, run, verb| {
        emit_status_run(out, run, verb, keep_ends)
    })
}

/// Groups consecutive plain rows that share a key (rows without one pass through) and
/// hands each run, with its key, to `emit`.
fn fold_runs<K: PartialEq>(
    rows: Vec<Row>,
    key_of: impl Fn(&str) -> Option<K>,
    mut emit: impl FnMut(&mut Vec<Row>, &mut Vec<Row>, Option<K>),
) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut run: Vec<Row> = Vec::new();
    let mut key: Option<K> = None;
    for row in rows {
        let this = if row.tag == Tag::Plain {
            key_of(&row.text)
        } else {
            None
        };
        if this.is_some() && this == key {
            run.push(row);
            continue;
        }
        emit(&mut out, &mut run, key.take());
        key = this;
        if key.is_some() {
            run.push(row);
        } else {
            out.push(row);
        }
    }
    emit(&mut out, &mut run, key);
    out
}

fn emit_status_run(
    out: &mut Vec<Row>,
    run: &mut Vec<Row>,
    verb: Option<&'static str>,
    keep_ends: bool,
) {
    let Some(verb) = verb else {
        out.append(run);
        return;
    };
    let body = |n: usize| {
        format!(
            "{} {verb} {} elided",
            thousands(n),
            plural(n, "line", "lines")
        )
    };
    if keep_ends {
        if run.len() < 4 {
            out.append(run);
            return;
        }
        let mut middle = std::mem::take(run);
        let last = middle.pop();
        let mut rest = middle.into_iter();
        if let Some(first) = rest.next() {
            out.push(first);
        }
        let mut elided = Elided::default();
        rest.for_each(|r| elided.push(r));
        elided.flush(out, body);
        out.extend(last);
    } else if run.len() < 3 {
        out.append(run);
    } else {
        let mut elided = Elided::default();
        run.drain(..).for_each(|r| elided.push(r));
        elided.flush(out, body);
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// Whether two lines are equal once every run of ASCII digits counts as one symbol.
fn same_number_shape(a: &[u8], b: &[u8]) -> bool {
    let (mut i, mut j) = (0usize, 0usize);
    loop {
        match (a.get(i), b.get(j)) {
            (None, None) => return true,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                while a.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                while b.get(j).is_some_and(u8::is_ascii_digit) {
                    j += 1;
                }
            }
            (Some(x), Some(y)) if x == y && !x.is_ascii_digit() => {
                i += 1;
                j += 1;
            }
            _ => return false,
        }
    }
}

/// Folds runs of four or more plain lines that differ only in their numbers (timestamps,
/// counters, versions) into the first line, a marker and the last line. Lines that mention
/// an error or a warning are never folded.
pub(crate) fn fold_number_runs(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    let mut run: Vec<Row> = Vec::new();
    for row in rows {
        let eligible = row.tag == Tag::Plain && row.text.bytes().any(|b| b.is_ascii_digit());
        if eligible {
            let extends = run
                .first()
                .is_some_and(|first| same_number_shape(first.text.as_bytes(), row.text.as_bytes()));
            if extends && !is_alert(&row.text) {
                run.push(row);
                continue;
            }
            emit_number_run(&mut out, &mut run);
            if is_alert(&row.text) {
                out.push(row);
            } else {
                run.push(row);
            }
            continue;
        }
        emit_number_run(&mut out, &mut run);
        out.push(row);
    }
    emit_number_run(&mut out, &mut run);
    out
}

fn emit_number_run(out: &mut Vec<Row>, run: &mut Vec<Row>) {
    if run.len() < 4 {
        out.append(run);
        return;
    }
    let mut middle = std::mem::take(run);
    let last = middle.pop();
    let mut rest = middle.into_iter();
    out.extend(rest.next());
    let mut elided = Elided::default();
    rest.for_each(|r| elided.push(r));
    elided.flush(out, |n| {
        format!(
            "{} differing only in numbers elided",
            count(n, "line", "lines")
        )
    });
    out.extend(last);
}

/// Characters progress bars are drawn with.
fn is_bar_char(c: char) -> bool {
    matches!(
        c,
        '=' | '>'
            | '#'
            | '-'
            | '.'
            | '|'
            | '['
            | ']'
            | '━'
            | '─'
            | '╸'
            | '╺'
            | '█'
            | '▉'
            | '▊'
            | '▋'
            | '▌'
            | '▍'
            | '▎'
            | '▏'
            | '░'
            | '▒'
            | '▓'
            | '⣿'
    )
}

/// Units that follow a number in progress lines (`12.3MB`, `1.2 MiB/s`, `3s`).
const UNITS: &[&str] = &[
    "", "b", "kb", "mb", "gb", "kib", "mib", "gib", "k", "m", "g", "s", "ms", "h", "its", "bs",
    "kbs", "mbs", "kibs", "mibs", "eta",
];

/// Whether a whitespace-separated token is a measurement a progress line updates.
fn is_metric_token(token: &str) -> bool {
    let t = token.trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | ',' | '|'));
    if t.is_empty() {
        return true;
    }
    if t.chars().all(is_bar_char) {
        return true;
    }
    if !t.bytes().any(|b| b.is_ascii_digit()) {
        return t.eq_ignore_ascii_case("eta");
    }
    let rest: String = t
        .chars()
        .filter(|c| !c.is_ascii_digit() && !matches!(c, '.' | ',' | ':' | '/' | '%'))
        .flat_map(char::to_lowercase)
        .collect();
    UNITS.contains(&rest.as_str()) || rest.chars().all(is_bar_char)
}

/// Whether a line shows progress: a percentage or a drawn bar.
pub(crate) fn is_progress(line: &str) -> bool {
    let bytes = line.as_bytes();
    let percent = memchr::memchr_iter(b'%', bytes)
        .any(|i| i > 0 && bytes.get(i - 1).is_some_and(|b| b.is_ascii_digit()));
    percent
        || line.contains("━━")
        || line.contains("██")
        || line.contains("==>")
        || line.contains("##") && line.contains('[') && line.contains(']')
}

/// The part of a progress line that stays the same while the bar moves: every token that
/// is not a measurement or a bar.
fn progress_key(line: &str) -> Option<String> {
    if !is_progress(line) {
        return None;
    }
    let key: Vec<&str> = line
        .split_whitespace()
        .filter(|t| !is_metric_token(t))
        .collect();
    Some(key.join(" "))
}

/// Keeps only the last line of each run of two or more progress lines that update the same
/// thing.
pub(crate) fn fold_progress(rows: Vec<Row>) -> Vec<Row> {
    fold_runs(rows, progress_key, |out, run, _| {
        emit_progress_run(out, run)
    })
}

fn emit_progress_run(out: &mut Vec<Row>, run: &mut Vec<Row>) {
    let Some(last) = run.pop() else {
        return;
    };
    let mut elided = Elided::default();
    run.drain(..).for_each(|r| elided.push(r));
    elided.flush(out, |n| {
        format!("{} elided", count(n, "progress update", "progress updates"))
    });
    out.push(last);
}

/// Words that mark a line an agent must see, matched case-insensitively at the start of a
/// word or of a CamelCase part (`RuntimeWarning`). `error` and `exception` match anywhere
/// (`AssertionError`, `NullPointerException`).
const ALERT_WORDS: &[&[u8]] = &[
    b"warn",
    b"fail",
    b"panic",
    b"fatal",
    b"traceback",
    b"critical",
    b"abort",
    b"denied",
    b"refused",
    b"timed out",
    b"timeout",
    b"segmentation fault",
    b"undefined reference",
    b"cannot",
    b"could not",
    b"unable to",
    b"not found",
    b"err!",
];

/// Whether `hay` contains `needle` (lowercase ASCII), ignoring ASCII case.
fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    let Some(&first) = needle.first() else {
        return true;
    };
    memchr::memchr2_iter(first, first.to_ascii_uppercase(), hay).any(|at| {
        hay.get(at..at + needle.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(needle))
    })
}

/// Whether a line reports an error, a warning, a failure, a panic or an exception.
pub(crate) fn is_alert(line: &str) -> bool {
    let bytes = line.as_bytes();
    if contains_ignore_case(bytes, b"error") || contains_ignore_case(bytes, b"exception") {
        return true;
    }
    let mut prev = b' ';
    for (i, &c) in bytes.iter().enumerate() {
        let word_start = (!prev.is_ascii_alphanumeric() && prev != b'_')
            || (prev.is_ascii_lowercase() && c.is_ascii_uppercase());
        if word_start && c.is_ascii_alphabetic() {
            let rest = bytes.get(i..).unwrap_or_default();
            let lead = c.to_ascii_lowercase();
            let hit = ALERT_WORDS.iter().any(|w| {
                w.first() == Some(&lead)
                    && rest
                        .get(..w.len())
                        .is_some_and(|head| head.eq_ignore_ascii_case(w))
            });
            if hit {
                return true;
            }
        }
        prev = c;
    }
    false
}

/// Keeps the first `head` and last `tail` rows, every alert or pinned row with two rows of
/// context either side, and every marker that stands alone; each stretch in between
/// becomes one `[… N lines elided …]` marker. Does nothing to short logs.
pub(crate) fn head_tail(rows: Vec<Row>, head: usize, tail: usize) -> Vec<Row> {
    const CONTEXT: usize = 2;
    let len = rows.len();
    if len <= head + tail + 20 {
        return rows;
    }
    let mut keep = vec![false; len];
    for (i, k) in keep.iter_mut().enumerate() {
        *k = i < head || i >= len - tail;
    }
    for (i, row) in rows.iter().enumerate() {
        if row.is_pinned() || (!row.is_marker() && is_alert(&row.text)) {
            let from = i.saturating_sub(CONTEXT);
            let to = (i + CONTEXT).min(len - 1);
            for k in keep.iter_mut().take(to + 1).skip(from) {
                *k = true;
            }
        }
    }
    let mut out = Vec::with_capacity(head + tail + 16);
    let mut elided = Elided::default();
    for (row, k) in rows.into_iter().zip(keep) {
        if k {
            elided.flush(&mut out, lines_elided);
            out.push(row);
        } else {
            elided.push(row);
        }
    }
    elided.flush(&mut out, lines_elided);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(rows: &[Row]) -> Vec<&str> {
        rows.iter().map(|r| r.text.as_str()).collect()
    }

    #[test]
    fn thousands_separators_group_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1204), "1,204");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn repeated_blocks_fold_into_one_copy_and_a_count() {
        let frame = [
            "  File \"tree.py\", line 18, in depth_of",
            "    return 1 + max(depth_of(c) for c in children)",
        ];
        let mut input = vec![Row::plain("Traceback (most recent call last):")];
        for _ in 0..40 {
            input.extend(frame.iter().map(|l| Row::plain(*l)));
        }
        input.push(Row::plain(
            "RecursionError: maximum recursion depth exceeded",
        ));
        let out = fold_repeats(input);
        assert_eq!(
            texts(&out),
            [
                "Traceback (most recent call last):",
                frame[0],
                frame[1],
                "[… previous 2 lines repeated 39 more times …]",
                "RecursionError: maximum recursion depth exceeded",
            ]
        );
    }

    #[test]
    fn identical_lines_fold_into_one_with_a_count() {
        let mut input = vec![Row::plain("start")];
        input.extend((0..12).map(|_| Row::plain("waiting for lock on build directory")));
        input.push(Row::plain("done"));
        let out = fold_repeats(input);
        assert_eq!(
            texts(&out),
            [
                "start",
                "waiting for lock on build directory",
                "[… line repeated 12 times …]",
                "done"
            ]
        );
    }

    /// What the repeat folds count, their expansion gives back line for line.
    #[test]
    fn folded_repeats_expand_back() {
        let mut text: Vec<String> = vec!["start".into()];
        text.extend((0..1500).map(|_| "waiting for lock on build directory".to_owned()));
        for _ in 0..4 {
            text.extend([
                "  File \"a.py\", line 3, in f".to_owned(),
                "    f()".to_owned(),
            ]);
        }
        text.push("done".into());
        let text = text.join("\n");
        let folded = join(&fold_repeats(rows(&text)));
        assert!(
            folded.contains("[… line repeated 1,500 times …]"),
            "{folded}"
        );
        assert!(folded.contains("[… previous 2 lines repeated 3 more times …]"));
        assert_eq!(expand_repeats(&folded), text);
        assert_eq!(
            expand_repeats("[… line repeated 3 times …]"),
            "[… line repeated 3 times …]"
        );
    }

    #[test]
    fn a_short_line_repeated_twice_is_left_alone() {
        let out = fold_repeats(vec![Row::plain("ok"), Row::plain("ok")]);
        assert_eq!(texts(&out), ["ok", "ok"]);
    }

    #[test]
    fn status_runs_keep_first_and_last_at_standard() {
        let input: Vec<Row> = (0..10)
            .map(|i| Row::plain(format!("   Compiling crate{i} v1.0.{i}")))
            .collect();
        let out = fold_status_runs(input, true);
        assert_eq!(
            texts(&out),
            [
                "   Compiling crate0 v1.0.0",
                "[… 8 Compiling lines elided …]",
                "   Compiling crate9 v1.0.9"
            ]
        );
    }

    #[test]
    fn number_runs_fold_but_alerts_stay() {
        let mut input: Vec<Row> = (0..8)
            .map(|i| Row::plain(format!("[10:00:0{i}] GET /health 200 {i}ms")))
            .collect();
        input.insert(4, Row::plain("[10:00:04] GET /health 500 error 3ms"));
        let out = fold_number_runs(input);
        let t = texts(&out);
        assert!(t.contains(&"[10:00:04] GET /health 500 error 3ms"));
        let markers = t
            .iter()
            .filter(|l| **l == "[… 2 lines differing only in numbers elided …]");
        assert_eq!(markers.count(), 2, "{t:#?}");
    }

    #[test]
    fn progress_runs_keep_the_last_state() {
        let input: Vec<Row> = (0..=10)
            .map(|i| {
                Row::plain(format!(
                    "Downloading model.bin [{:<10}] {}%",
                    "=".repeat(i),
                    i * 10
                ))
            })
            .collect();
        let out = fold_progress(input);
        assert_eq!(
            texts(&out),
            [
                "[… 10 progress updates elided …]",
                "Downloading model.bin [==========] 100%"
            ]
        );
    }

    #[test]
    fn alert_words_match_at_word_starts_and_camel_case() {
        assert!(is_alert("error: could not compile"));
        assert!(is_alert("AssertionError: boom"));
        assert!(is_alert("RuntimeWarning: deprecated"));
        assert!(is_alert("3 FAILED"));
        assert!(!is_alert("reading from stderr"));
        assert!(!is_alert("the sailfail_rate column")); // no word start
        assert!(!is_alert("all good"));
    }

    #[test]
    fn head_tail_rescues_errors_with_context() {
        let mut input: Vec<Row> = (0..300).map(|i| Row::plain(format!("step {i}"))).collect();
        if let Some(r) = input.get_mut(150) {
            *r = Row::plain("ERROR: disk full");
        }
        let out = head_tail(input, 10, 10);
        let t = texts(&out);
        assert!(t.contains(&"ERROR: disk full"));
        assert!(t.contains(&"step 148") && t.contains(&"step 152"));
        assert!(t.contains(&"[… 138 lines elided …]"));
        assert!(t.contains(&"[… 137 lines elided …]"));
    }
}

//! Timestamped logs: what servers, daemons and databases write (the gateway's own tracing
//! lines, nginx access and error logs, redis, PostgreSQL, syslog). Most of such a log is a
//! few messages said again and again with another timestamp, request id, PID, port or
//! duration; the facts are the distinct messages and where the run of each one starts and
//! ends. Lines that differ only in those fold, each stretch into one marker that says how
//! many lines went and the time they covered; the first and last line of every message in
//! a stretch stay, and so does every line that differs in anything else.
//!
//! Below Aggressive a line that reports an error or a warning never folds (only its exact
//! repeats do, in the shared pass), and neither does a line followed by lines without a
//! timestamp (a stack trace, a multi-line statement), which stay whole.

use super::lines::{count, is_alert, Elided, Row, Tag};
use super::Level;

/// How far into a line its timestamp may start (after a host, a PID, a client address).
const STAMP_WITHIN: usize = 80;

/// Month abbreviations, as logs print them.
const MONTHS: [&[u8]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Timestamp shapes: `9` a digit, `M` a month abbreviation, `_` a digit or a space, `T`
/// `T` or a space; anything else itself. Fractions and zones are read after the match.
const SHAPES: &[&[u8]] = &[
    b"9999-99-99T99:99:99", // ISO 8601, RFC 3339, PostgreSQL, Python logging
    b"9999/99/99 99:99:99", // nginx error log
    b"99/M/9999:99:99:99",  // common log format (nginx, Apache access logs)
    b"99 M 9999 99:99:99",  // redis
    b"M _9 99:99:99",       // syslog
    b"99:99:99",            // a bare time of day
];

/// The byte range of the first timestamp within a line's first bytes.
pub(crate) fn timestamp_span(line: &str) -> Option<(usize, usize)> {
    let bytes = line.as_bytes();
    let limit = bytes.len().min(STAMP_WITHIN);
    for start in 0..limit {
        let boundary = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        if !boundary {
            continue;
        }
        for shape in SHAPES {
            if let Some(end) = match_shape(bytes, start, shape) {
                // a bare time of day counts only at the start of a line or in brackets
                if shape.len() == 8 && start > 1 {
                    continue;
                }
                let end = extend_stamp(bytes, end);
                if bytes.get(end).is_none_or(|b| !b.is_ascii_alphanumeric()) {
                    return Some((start, end));
                }
            }
        }
    }
    None
}

fn match_shape(bytes: &[u8], start: usize, shape: &[u8]) -> Option<usize> {
    let mut at = start;
    for &s in shape {
        match s {
            b'9' => {
                bytes.get(at).filter(|b| b.is_ascii_digit())?;
                at += 1;
            }
            b'_' => {
                bytes
                    .get(at)
                    .filter(|b| b.is_ascii_digit() || **b == b' ')?;
                at += 1;
            }
            b'T' => {
                bytes.get(at).filter(|b| **b == b'T' || **b == b' ')?;
                at += 1;
            }
            b'M' => {
                let word = bytes.get(at..at + 3)?;
                MONTHS.iter().find(|m| **m == word)?;
                at += 3;
            }
            lit => {
                bytes.get(at).filter(|b| **b == lit)?;
                at += 1;
            }
        }
    }
    Some(at)
}

/// Extends a matched date-time over its fraction of a second and its zone.
fn extend_stamp(bytes: &[u8], mut end: usize) -> usize {
    let digits_from = |at: usize| {
        bytes
            .iter()
            .skip(at)
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    if matches!(bytes.get(end), Some(b'.' | b',')) && digits_from(end + 1) > 0 {
        end += 1 + digits_from(end + 1);
    }
    if bytes.get(end) == Some(&b'Z') {
        return end + 1;
    }
    // `+0000`, `-05:00`, ` +0000`, ` UTC`
    let at = if bytes.get(end) == Some(&b' ') {
        end + 1
    } else {
        end
    };
    if matches!(bytes.get(at), Some(b'+' | b'-')) {
        let n = digits_from(at + 1);
        if n == 4 {
            return at + 5;
        }
        if n == 2 && bytes.get(at + 3) == Some(&b':') && digits_from(at + 4) == 2 {
            return at + 6;
        }
    }
    if at > end {
        if let Some(zone) = bytes.get(at..at + 3) {
            let after = bytes.get(at + 3);
            if (zone == b"UTC" || zone == b"GMT")
                && after.is_none_or(|b| !b.is_ascii_alphanumeric())
            {
                return at + 3;
            }
        }
    }
    end
}

/// A line without its timestamp, and with its ids and measurements (UUIDs, hex ids, numbers
/// of four or more digits, decimals, durations) each replaced by `#`: lines with the same
/// key say the same thing at another time about another request.
fn message_key(line: &str, span: (usize, usize)) -> String {
    let bytes = line.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(bytes.get(..span.0).unwrap_or_default());
    out.push(b'@');
    let rest = bytes.get(span.1..).unwrap_or_default();
    let mut i = 0;
    while i < rest.len() {
        let prev_alnum = i > 0 && rest[i - 1].is_ascii_alphanumeric();
        if !prev_alnum && rest[i].is_ascii_hexdigit() {
            let len = rest[i..]
                .iter()
                .take_while(|b| b.is_ascii_hexdigit() || **b == b'-')
                .count();
            let token = &rest[i..i + len];
            let token = token.strip_suffix(b"-").unwrap_or(token);
            if is_id(token) {
                out.push(b'#');
                i += token.len();
                continue;
            }
        }
        if !prev_alnum && rest[i].is_ascii_digit() {
            let len = rest[i..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b'.')
                .count();
            let token = rest[i..i + len]
                .strip_suffix(b".")
                .unwrap_or(&rest[i..i + len]);
            let dots = token.iter().filter(|b| **b == b'.').count();
            let unit = rest
                .get(i + token.len()..)
                .unwrap_or_default()
                .iter()
                .take_while(|b| b.is_ascii_alphabetic())
                .count();
            let after = rest
                .get(i + token.len()..i + token.len() + unit)
                .unwrap_or_default();
            let duration = matches!(after, b"ms" | b"us" | b"ns" | b"s");
            if dots == 1 || (dots == 0 && (token.len() >= 4 || duration)) {
                out.push(b'#');
                i += token.len();
                continue;
            }
            out.extend_from_slice(token);
            i += token.len();
            continue;
        }
        out.push(rest[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A UUID, or a hex id of eight or more digits with at least one digit in it.
fn is_id(token: &[u8]) -> bool {
    let groups: Vec<usize> = token.split(|b| *b == b'-').map(<[u8]>::len).collect();
    if groups == [8, 4, 4, 4, 12] {
        return true;
    }
    groups.len() == 1 && token.len() >= 8 && token.iter().any(u8::is_ascii_digit)
}

/// Compacts a timestamped log. Light returns the rows unchanged.
pub(crate) fn compact(rows: Vec<Row>, level: Level) -> Vec<Row> {
    if level == Level::Light {
        return rows;
    }
    let aggressive = level == Level::Aggressive;
    // Each row's message key and timestamp, when it may fold.
    let keys: Vec<Option<(String, String)>> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            if row.tag != Tag::Plain || (!aggressive && is_alert(&row.text)) {
                return None;
            }
            let span = timestamp_span(&row.text)?;
            // a line that opens a block of lines without timestamps stays with them
            let next = rows.get(i + 1);
            if next.is_some_and(|n| !n.text.trim().is_empty() && timestamp_span(&n.text).is_none())
            {
                return None;
            }
            let stamp = row.text.get(span.0..span.1).unwrap_or("").to_owned();
            Some((message_key(&row.text, span), stamp))
        })
        .collect();

    let mut out = Vec::with_capacity(rows.len() / 2);
    let mut block: Vec<(Row, String, String)> = Vec::new();
    for (row, key) in rows.into_iter().zip(keys) {
        match key {
            Some((key, stamp)) => block.push((row, key, stamp)),
            None => {
                emit_block(&mut out, std::mem::take(&mut block));
                out.push(row);
            }
        }
    }
    emit_block(&mut out, block);
    out
}

/// Keeps the first and last line of each message in a stretch of foldable lines; the lines
/// between go into markers.
fn emit_block(out: &mut Vec<Row>, block: Vec<(Row, String, String)>) {
    use std::collections::HashMap;
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (i, (_, key, _)) in block.iter().enumerate() {
        first.entry(key.as_str()).or_insert(i);
        last.insert(key.as_str(), i);
    }
    let keep: Vec<bool> = block
        .iter()
        .enumerate()
        .map(|(i, (_, key, _))| {
            first.get(key.as_str()) == Some(&i) || last.get(key.as_str()) == Some(&i)
        })
        .collect();
    let mut elided = Elided::default();
    let mut range: Option<(String, String)> = None;
    for ((row, _, stamp), kept) in block.into_iter().zip(keep) {
        if kept {
            flush(out, &mut elided, &mut range);
            out.push(row);
        } else {
            range = Some(match range.take() {
                Some((from, _)) => (from, stamp),
                None => (stamp.clone(), stamp),
            });
            elided.push(row);
        }
    }
    flush(out, &mut elided, &mut range);
}

fn flush(out: &mut Vec<Row>, elided: &mut Elided, range: &mut Option<(String, String)>) {
    let Some((from, to)) = range.take() else {
        return;
    };
    elided.flush(out, |n| {
        format!(
            "{} elided, each as a line kept around it but for timestamps and ids, {from} to {to}",
            count(n, "line", "lines")
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::lines::{join, rows};

    fn stamp(line: &str) -> Option<&str> {
        timestamp_span(line).and_then(|(a, b)| line.get(a..b))
    }

    #[test]
    fn timestamps_are_found_in_the_formats_servers_write() {
        let cases = [
            (
                "2026-12-03T15:31:31.543637Z  INFO gateway",
                "2026-12-03T15:31:31.543637Z",
            ),
            (
                "2026-12-03 15:31:31.123 UTC [812] LOG:  duration",
                "2026-12-03 15:31:31.123 UTC",
            ),
            (
                "2026/12/03 15:31:31 [error] 77#77: *5 connect()",
                "2026/12/03 15:31:31",
            ),
            (
                "127.0.0.1 - - [03/Dec/2026:15:31:31 +0000] \"GET / HTTP/1.1\" 200",
                "03/Dec/2026:15:31:31 +0000",
            ),
            (
                "13156:M 03 Dec 2026 15:31:30.501 * Ready",
                "03 Dec 2026 15:31:30.501",
            ),
            ("Dec  3 15:31:31 host sshd[88]: Accepted", "Dec  3 15:31:31"),
            ("[15:31:31] compiled", "15:31:31"),
        ];
        for (line, want) in cases {
            assert_eq!(stamp(line), Some(want), "{line}");
        }
        assert_eq!(stamp("version 12:30:45:99 of the table"), None);
        assert_eq!(stamp("all good"), None);
    }

    #[test]
    fn keys_ignore_timestamps_ids_and_durations_but_not_status_codes() {
        let a = "2026-12-03T15:31:31.5Z INFO request request_id=fb04a236-3dbe-4092-99c9-5849e75847b0 status=200 latency_ms=6.76";
        let b = "2026-12-03T15:31:32.9Z INFO request request_id=f89daafb-88be-4d71-98f7-eb1948d48403 status=200 latency_ms=1.65";
        let c = "2026-12-03T15:31:33.0Z INFO request request_id=94953657-861b-4ea5-9bc3-3e34c116d3ab status=404 latency_ms=1.65";
        let key = |l: &str| message_key(l, timestamp_span(l).unwrap_or((0, 0)));
        assert_eq!(key(a), key(b));
        assert_ne!(key(a), key(c));
    }

    /// Interleaved requests fold to the first and last of each message; the one error among
    /// them stays, and the marker says how many lines went and when.
    #[test]
    fn repeated_messages_fold_and_distinct_ones_stay() {
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!(
                "2026-12-03T15:31:{:02}.{i:03}Z INFO GET /api/orders/{} 200 {}ms\n",
                i / 2,
                1000 + i,
                i % 7
            ));
            text.push_str(&format!(
                "2026-12-03T15:31:{:02}.{i:03}Z DEBUG pool: connection {} reused\n",
                i / 2,
                5000 + i
            ));
            if i == 20 {
                text.push_str(
                    "2026-12-03T15:31:10.999Z ERROR checkout: upstream refused connection\n",
                );
            }
        }
        let out = join(&compact(rows(&text), Level::Standard));
        assert!(
            out.contains("ERROR checkout: upstream refused connection"),
            "{out}"
        );
        assert!(out.contains("GET /api/orders/1000 200"), "{out}");
        assert!(out.contains("GET /api/orders/1039 200"), "{out}");
        assert!(out.contains(
            "lines elided, each as a line kept around it but for timestamps and ids, 2026-12-03T15:31:00."
        ));
        assert!(out.lines().count() < 20, "{out}");
    }

    #[test]
    fn a_line_heading_untimed_lines_stays_with_them() {
        let mut text = String::new();
        for i in 0..10 {
            text.push_str(&format!(
                "2026-12-03 15:31:{i:02}.100 UTC [81{i}] LOG:  statement: SELECT 1\n"
            ));
        }
        text.push_str(
            "2026-12-03 15:31:11.100 UTC [820] LOG:  statement: SELECT 1\n\tFROM orders\n",
        );
        let out = join(&compact(rows(&text), Level::Standard));
        assert!(
            out.contains("[820] LOG:  statement: SELECT 1\n\tFROM orders"),
            "{out}"
        );
    }
}

//! `key=value` fields that every line of a log run repeats with the same value
//! (`provider="mock"`, `error="-"`, redis's `laddr=127.0.0.1:47814 fd=8 …`): said once
//! in a line under the run's head that lists the fields in their order, each shared one
//! with its value and each of a line's own as `key=…`; the lines keep their own fields.
//!
//! ```text
//! [lines whose fields are the … ones read: id=… addr=… laddr=127.0.0.1:47814 fd=8 name=]
//! 41.023 - Client closed connection id=3 addr=127.0.0.1:47936
//! ```
//!
//! A line is read back with the shared fields only when the fields it lists are exactly
//! the template's own ones, in order; [`super::logruns`] checks every line it rewrites
//! reads back as it was.

use std::borrow::Cow;
use std::collections::HashMap;

/// Stands for a line's own value in a template.
const HOLE: &str = "…";

/// What opens a template line.
const OPEN: &str = "[lines whose fields are the … ones read:";

/// A template line that says the last one again: a log whose runs break on other lines
/// (another target between requests) says its template once.
pub(super) const AS_ABOVE: &str = "[fields as above]";

/// Tries at finding where a line's fields start: lines are short, and past a few tries a
/// line is not one of fields.
const MAX_TRIES: usize = 32;

/// Fields a template needs: fewer say nothing worth a line.
const MIN_FIELDS: usize = 3;

/// The share of a run's lines (in quarters) that must hold a value for it to be said once.
const SHARED_PER_4: usize = 3;

/// The fields a line ends with: the byte where they start (at the space before the first
/// key) and each field's key and value. `None` unless the line ends in two or more.
pub(super) fn fields(line: &str) -> Option<(usize, Vec<(&str, &str)>)> {
    fields_at_least(line, 2)
}

/// As [`fields`], with `min` fields or more.
fn fields_at_least(line: &str, min: usize) -> Option<(usize, Vec<(&str, &str)>)> {
    let bytes = line.as_bytes();
    let mut tries = 0;
    let mut from = 0;
    while tries < MAX_TRIES {
        let start = from + memchr::memchr(b' ', bytes.get(from..)?)?;
        if let Some(items) = items_from(line, start).filter(|items| items.len() >= min) {
            return Some((start, items));
        }
        from = start + 1;
        tries += 1;
    }
    None
}

/// ` key=value` items from `at` to the end of the line, each preceded by one space.
fn items_from(line: &str, mut at: usize) -> Option<Vec<(&str, &str)>> {
    let bytes = line.as_bytes();
    let mut items = Vec::new();
    while at < bytes.len() {
        if bytes.get(at) != Some(&b' ') {
            return None;
        }
        let key_start = at + 1;
        let key_len = bytes
            .get(key_start..)?
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            .count();
        if key_len == 0 || !bytes.get(key_start).is_some_and(u8::is_ascii_alphabetic) {
            return None;
        }
        let eq = key_start + key_len;
        if bytes.get(eq) != Some(&b'=') {
            return None;
        }
        let value_start = eq + 1;
        let value_end = if bytes.get(value_start) == Some(&b'"') {
            quoted_end(bytes, value_start)?
        } else {
            value_start
                + bytes
                    .get(value_start..)?
                    .iter()
                    .take_while(|b| **b != b' ' && **b != b'"')
                    .count()
        };
        items.push((line.get(key_start..eq)?, line.get(value_start..value_end)?));
        at = value_end;
    }
    Some(items)
}

/// The end of a quoted value (after its closing quote), `\"` not closing it.
fn quoted_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The fields of a run's lines in their order, with the value every such line shares, or
/// `None` for a line's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Template<'a> {
    entries: Vec<(&'a str, Option<&'a str>)>,
}

impl<'a> Template<'a> {
    /// The template of the lines' most common list of fields, if its shared values save
    /// more than its line costs. Same lines, same template.
    pub fn choose(lines: &[&'a str]) -> Option<Template<'a>> {
        let parsed: Vec<Option<Vec<(&str, &str)>>> =
            lines.iter().map(|l| fields(l).map(|(_, f)| f)).collect();
        let mut counts: HashMap<Vec<&str>, (usize, usize)> = HashMap::new();
        for (i, items) in parsed.iter().enumerate() {
            if let Some(items) = items {
                let keys = items.iter().map(|(k, _)| *k).collect();
                counts.entry(keys).or_insert((0, i)).0 += 1;
            }
        }
        // most lines, then first seen: the same whatever order the map iterates in
        let (keys, (n, first)) = counts
            .into_iter()
            .max_by_key(|(_, (n, first))| (*n, std::cmp::Reverse(*first)))?;
        if n < 2 || keys.len() < MIN_FIELDS {
            return None;
        }
        let model = parsed.get(first)?.as_ref()?;
        let mut members: Vec<&Vec<(&str, &str)>> = parsed
            .iter()
            .flatten()
            .filter(|items| {
                items.len() == model.len() && items.iter().zip(model).all(|(a, b)| a.0 == b.0)
            })
            .collect();
        // A field is shared when one value holds on most of the lines (those with another
        // value stay whole, and stand out for it); each shared field narrows the lines
        // the template is for, never below that share of them.
        let floor = (n * SHARED_PER_4).div_ceil(4).max(2);
        let mut shared: Vec<Option<&str>> = vec![None; model.len()];
        for (at, slot) in shared.iter_mut().enumerate() {
            let mut tally: HashMap<&str, (usize, usize)> = HashMap::new();
            for (i, items) in members.iter().enumerate() {
                if let Some((_, v)) = items.get(at) {
                    tally.entry(v).or_insert((0, i)).0 += 1;
                }
            }
            // the most lines, then the first seen: the same whatever order the map keeps
            let Some((value, (count, _))) = tally
                .into_iter()
                .max_by_key(|(_, (c, first))| (*c, std::cmp::Reverse(*first)))
            else {
                continue;
            };
            if count >= floor && !value.contains(HOLE) {
                *slot = Some(value);
                members.retain(|items| items.get(at).is_some_and(|(_, v)| *v == value));
            }
        }
        let n = members.len();
        let entries: Vec<(&str, Option<&str>)> = model
            .iter()
            .zip(shared)
            .map(|((k, _), s)| (*k, s))
            .collect();
        if entries.iter().all(|(_, v)| v.is_some()) {
            return None;
        }
        let template = Template { entries };
        let said: usize = template
            .entries
            .iter()
            .filter_map(|(k, v)| v.map(|v| k.len() + v.len() + 2))
            .sum();
        let worth = (n * said).saturating_sub(said + OPEN.len() + 8) > 0;
        (worth && said > 0).then_some(template)
    }

    /// Keys a line lists itself.
    fn own_keys(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
    }

    /// `line` without its shared fields, when its fields are the template's with the
    /// shared values.
    pub fn drop_shared(&self, line: &str) -> Option<String> {
        let (start, items) = fields(line)?;
        let same = items.len() == self.entries.len()
            && items
                .iter()
                .zip(&self.entries)
                .all(|((k, v), (tk, tv))| k == tk && tv.is_none_or(|tv| tv == *v));
        if !same {
            return None;
        }
        let mut out = line.get(..start)?.to_owned();
        for ((k, v), (_, tv)) in items.iter().zip(&self.entries) {
            if tv.is_none() {
                out.push(' ');
                out.push_str(k);
                out.push('=');
                out.push_str(v);
            }
        }
        Some(out)
    }

    /// `line` with the shared fields put back, when it lists exactly the own ones.
    pub fn restore<'l>(&self, line: &'l str) -> Cow<'l, str> {
        // a line left with one own field still names it
        let Some((start, items)) = fields_at_least(line, 1) else {
            return Cow::Borrowed(line);
        };
        if !items.iter().map(|(k, _)| *k).eq(self.own_keys()) {
            return Cow::Borrowed(line);
        }
        let mut own = items.iter().map(|(_, v)| *v);
        let mut out = line.get(..start).unwrap_or_default().to_owned();
        for (k, v) in &self.entries {
            out.push(' ');
            out.push_str(k);
            out.push('=');
            out.push_str(v.or_else(|| own.next()).unwrap_or_default());
        }
        Cow::Owned(out)
    }

    /// The line that says the template.
    pub fn head_line(&self) -> String {
        let mut out = OPEN.to_owned();
        for (k, v) in &self.entries {
            out.push(' ');
            out.push_str(k);
            out.push('=');
            out.push_str(v.unwrap_or(HOLE));
        }
        out.push(']');
        out
    }

    /// Reads a template line back.
    pub fn parse_head(line: &'a str) -> Option<Template<'a>> {
        let body = line.strip_prefix(OPEN)?.strip_suffix(']')?;
        let items = items_from(body, 0)?;
        let entries = items
            .into_iter()
            .map(|(k, v)| (k, (v != HOLE).then_some(v)))
            .collect();
        Some(Template { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLOSED: [&str; 3] = [
        "41.023 - Client closed connection id=3 addr=127.0.0.1:47936 laddr=127.0.0.1:47814 fd=8 name= age=1 user=default cmd=set",
        "41.048 - Client closed connection id=4 addr=127.0.0.1:47942 laddr=127.0.0.1:47814 fd=8 name= age=0 user=default cmd=set",
        "41.072 - Client closed connection id=5 addr=127.0.0.1:47958 laddr=127.0.0.1:47814 fd=8 name= age=0 user=default cmd=get",
    ];

    #[test]
    fn fields_are_read_from_the_end_of_a_line() {
        let line = r#"19.49 request request_id=aa dialect=openai_chat error="upstream \"x\" gone" applied="#;
        let (start, items) = fields(line).unwrap_or_default();
        assert_eq!(&line[..start], "19.49 request");
        assert_eq!(
            items,
            [
                ("request_id", "aa"),
                ("dialect", "openai_chat"),
                ("error", r#""upstream \"x\" gone""#),
                ("applied", ""),
            ]
        );
        assert_eq!(fields("no fields here"), None);
        assert_eq!(fields("a=1 but then words"), None);
    }

    /// The shared values go into the template; each line keeps its own and reads back.
    #[test]
    fn shared_values_are_said_once_and_read_back() {
        let template = Template::choose(&CLOSED).unwrap();
        assert_eq!(
            template.head_line(),
            "[lines whose fields are the … ones read: id=… addr=… laddr=127.0.0.1:47814 fd=8 name= age=… user=default cmd=…]"
        );
        for line in CLOSED {
            let short = template.drop_shared(line).unwrap();
            assert!(
                short.ends_with(&line[line.find(" age=").unwrap()..].replace(" user=default", ""))
            );
            assert!(!short.contains("fd=8") && short.contains(" id="));
            assert_eq!(template.restore(&short), line);
        }
        let head = template.head_line();
        assert_eq!(Template::parse_head(&head), Some(template));
    }

    /// A line with other fields, or another value of a shared one, is not one of them.
    #[test]
    fn other_lines_are_left_alone() {
        let template = Template::choose(&CLOSED).unwrap();
        let other = "41.090 - Client closed connection id=6 addr=127.0.0.1:47960 laddr=127.0.0.1:47814 fd=9 name= age=0 user=default cmd=get";
        assert_eq!(template.drop_shared(other), None);
        let accepted = "41.015 - Accepted 127.0.0.1:47936";
        assert_eq!(template.restore(accepted), accepted);
    }
}

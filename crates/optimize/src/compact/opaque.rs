//! Blocks no rewrite can shrink without losing facts: a minified bundle read whole (`cat
//! react-dom.production.min.js`), a base64 blob, a hex dump (`xxd`, `hexdump -C`, `od`).
//! Every byte of them is content and none of it is a line an agent reads on its own, so
//! below Aggressive they pass unchanged. At Aggressive a head is kept (whole lines when
//! the block has lines) and the rest becomes one marker that says how much went:
//!
//! ```text
//! 00000000: 7f45 4c46 0201 0100 0000 0000 0000 0000  .ELF............
//! 00000010: 0300 3e00 0100 0000 d061 0000 0000 0000  ..>......a......
//! [… 202,499 of 203,994 bytes elided (hex dump) …]
//! ```

use super::lines::thousands;

/// What an opaque block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Opaque {
    /// Minified JavaScript or CSS: long lines, almost no blanks, dense with `;{}`.
    Bundle,
    /// Base64, wrapped in lines or on one.
    Base64,
    /// `xxd`, `hexdump`, `hexdump -C`, `od`: an offset, then groups of hex or octal digits.
    HexDump,
}

impl Opaque {
    fn name(self) -> &'static str {
        match self {
            Opaque::Bundle => "minified bundle",
            Opaque::Base64 => "base64",
            Opaque::HexDump => "hex dump",
        }
    }
}

/// Smallest block called opaque: below it a block is a line or two of something else.
const MIN_BYTES: usize = 1024;
/// A line this long or longer may be a bundle's.
const LONG_LINE: usize = 200;
/// Shortest line that can be base64: shorter runs of letters and digits are words.
const MIN_BASE64_LINE: usize = 20;
/// Fewest lines of a hex dump.
const MIN_DUMP_LINES: usize = 8;
/// Bytes kept at the head of a block cut at Aggressive.
const HEAD_BYTES: usize = 1536;

/// The classifier's counts for opaque blocks, over the non-blank lines of a text.
#[derive(Default)]
pub(crate) struct Tally {
    lines: usize,
    bytes: usize,
    /// Lines of [`LONG_LINE`] bytes or more (not JSON-looking): their bytes, and the
    /// blanks, semicolons and braces in them.
    long_bytes: usize,
    long_blanks: usize,
    long_semicolons: usize,
    long_braces: usize,
    /// Lines of base64's alphabet: how many, their bytes, the length of the first and
    /// how many have it, and which of upper case, lower case and digits they hold.
    base64_lines: usize,
    base64_bytes: usize,
    base64_width: Option<usize>,
    base64_at_width: usize,
    base64_classes: u8,
    dump_lines: usize,
    /// `*` (lines repeated) and the offset alone on the last line.
    dump_marks: usize,
}

impl Tally {
    /// Counts one non-blank line.
    pub fn add(&mut self, line: &str) {
        self.lines += 1;
        self.bytes += line.len();
        if line.len() >= LONG_LINE && !looks_like_json(line) {
            self.long_bytes += line.len();
            for b in line.bytes() {
                match b {
                    b' ' | b'\t' => self.long_blanks += 1,
                    b';' => self.long_semicolons += 1,
                    b'{' | b'}' => self.long_braces += 1,
                    _ => {}
                }
            }
        }
        if let Some(classes) = base64_classes(line) {
            self.base64_lines += 1;
            self.base64_bytes += line.len();
            self.base64_classes |= classes;
            let width = *self.base64_width.get_or_insert(line.len());
            self.base64_at_width += usize::from(line.len() == width);
        }
        match dump_line(line) {
            Some(true) => self.dump_lines += 1,
            Some(false) => self.dump_marks += 1,
            None => {}
        }
    }

    /// The opaque kind the lines counted are, if any.
    pub fn kind(&self) -> Option<Opaque> {
        let share = |n: usize| n * 100 / self.bytes.max(1);
        // Minified code: blanks under 5 % of its long lines, a semicolon every 400 bytes
        // and a brace every 200. A log's long lines have blanks between their words; a
        // `cargo -vv` command line or a JSON line has no semicolons.
        let long = self.long_bytes.max(1);
        if self.long_bytes >= MIN_BYTES
            && share(self.long_bytes) >= 80
            && self.long_blanks * 20 < long
            && self.long_semicolons * 400 >= long
            && self.long_braces * 200 >= long
        {
            return Some(Opaque::Bundle);
        }
        // Base64: an encoder's lines all have one width but the last, and between them
        // they hold upper case, lower case and digits (a list of hex hashes has no upper
        // case, a list of words no digits).
        if self.base64_bytes >= MIN_BYTES
            && share(self.base64_bytes) >= 90
            && self.base64_at_width + 1 >= self.base64_lines
            && self.base64_classes == UPPER | LOWER | DIGIT
        {
            return Some(Opaque::Base64);
        }
        let lines = self.lines.max(1);
        if self.dump_lines >= MIN_DUMP_LINES
            && (self.dump_lines + self.dump_marks) * 100 >= lines * 90
        {
            return Some(Opaque::HexDump);
        }
        None
    }
}

/// A JSON object or array on one line (a JSON Lines record): data, not a bundle.
fn looks_like_json(line: &str) -> bool {
    let t = line.trim();
    t.starts_with(['{', '[']) && t.ends_with(['}', ']'])
}

const UPPER: u8 = 1;
const LOWER: u8 = 2;
const DIGIT: u8 = 4;

/// For a line of base64 (its alphabet only, at most two `=` of padding at the end), which
/// of upper case, lower case and digits it holds; `None` for any other line.
fn base64_classes(line: &str) -> Option<u8> {
    let body = line.trim_end_matches('=');
    if body.len() < MIN_BASE64_LINE || line.len() - body.len() > 2 {
        return None;
    }
    body.bytes().try_fold(0, |classes, b| match b {
        b'A'..=b'Z' => Some(classes | UPPER),
        b'a'..=b'z' => Some(classes | LOWER),
        b'0'..=b'9' => Some(classes | DIGIT),
        b'+' | b'/' => Some(classes),
        _ => None,
    })
}

/// A hex dump's line: `Some(true)` for an offset (6 to 16 hex digits, `:` after it in
/// `xxd`) followed by at least four groups of 2 to 8 hex or octal digits, all of one
/// width; `Some(false)` for `*` or an offset alone; `None` for anything else.
fn dump_line(line: &str) -> Option<bool> {
    let mut words = line.split_ascii_whitespace();
    let first = words.next()?;
    if first == "*" {
        return words.next().is_none().then_some(false);
    }
    let offset = first.strip_suffix(':').unwrap_or(first);
    let hex = |w: &str| w.bytes().all(|b| b.is_ascii_hexdigit());
    if !(6..=16).contains(&offset.len()) || !hex(offset) {
        return None;
    }
    // one width for all groups: words of a log line that happen to be hex (`add`, `face`)
    // rarely share one
    let mut width = None;
    let groups = words
        .take_while(|w| {
            (2..=8).contains(&w.len()) && hex(w) && *width.get_or_insert(w.len()) == w.len()
        })
        .count();
    match groups {
        0 if line.split_ascii_whitespace().nth(1).is_none() => Some(false),
        4.. => Some(true),
        _ => None,
    }
}

/// An opaque block cut to its head and a marker, or `None` when it is too short for the
/// cut to pay. The head ends at a line end when one falls in its second half, else on a
/// character boundary.
pub(crate) fn cut(text: &str, what: Opaque) -> Option<String> {
    let text = text.trim_end_matches('\n');
    if text.len() <= HEAD_BYTES * 2 {
        return None;
    }
    let mut end = HEAD_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = text.get(..end)?;
    // whole lines, unless that would keep less than half a head (a bundle's license
    // lines above one line of 200 kB)
    let head = match head.rfind('\n') {
        Some(at) if at >= HEAD_BYTES / 2 => head.get(..at)?,
        _ => head,
    };
    Some(format!(
        "{head}\n[… {} of {} bytes elided ({}) …]",
        thousands(text.len() - head.len()),
        thousands(text.len()),
        what.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_lines_are_its_alphabet_with_padding_at_the_end() {
        assert_eq!(
            base64_classes(
                "f0VMRgIBAQAAAAAAAAAAAAMAPgABAAAA0GEAAAAAAABAAAAAAAAAAHBHAgAAAAAAAAAAAEAAOAAN"
            ),
            Some(UPPER | LOWER | DIGIT)
        );
        assert_eq!(base64_classes("AAAAAAAAAAAAAAAAAAAAAAAA=="), Some(UPPER));
        assert_eq!(
            base64_classes("ce63c2ffe6c18b4bb0689b5384c7aa294b284afa"),
            Some(LOWER | DIGIT)
        );
        // short, a sentence, padding in the middle or too much of it
        assert_eq!(base64_classes("QUJD"), None);
        assert_eq!(base64_classes("the quick brown fox 12 jumps Over"), None);
        assert_eq!(base64_classes("AAAAAAAAAAAA=AAAAAAAAAAAAAAAAA"), None);
        assert_eq!(
            base64_classes("AAAAAAAAAAAAAAAAAAAAAAAAGVsbG8gd29ybGQ1==="),
            None
        );
    }

    fn kind_of(text: &str) -> Option<Opaque> {
        let mut t = Tally::default();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .for_each(|l| t.add(l));
        t.kind()
    }

    /// Lines of one width holding the whole alphabet are base64; hashes and words of one
    /// width are not.
    #[test]
    fn base64_blocks_have_one_width_and_the_whole_alphabet() {
        let blob: String = (0..40)
            .map(|i| format!("{}Qm9vdA{i:02}\n", "A".repeat(66)))
            .chain(["QUJDRA==\n".to_owned()])
            .collect();
        assert_eq!(kind_of(&blob), Some(Opaque::Base64));
        let hashes: String = (0..40).map(|i| format!("{:040x}\n", i * 7919)).collect();
        assert_eq!(kind_of(&hashes), None);
        let ragged: String = (0..40)
            .map(|i| format!("{}Qm9vdA{i}\n", "A".repeat(40 + i)))
            .collect();
        assert_eq!(kind_of(&ragged), None);
    }

    #[test]
    fn dump_lines_of_every_tool() {
        for line in [
            "00000000: 7f45 4c46 0201 0100 0000 0000 0000 0000  .ELF............",
            "00000000  7f 45 4c 46 02 01 01 00  00 00 00 00 00 00 00 00  |.ELF............|",
            "0000000 457f 464c 0102 0001 0000 0000 0000 0000",
            "0000000 042577 043114 000402 000001 000000 000000 000000 000000",
            "000010 03 00 3e 00 01 00 00 00 d0 61 00 00 00 00 00 00  >..>......a......<",
        ] {
            assert_eq!(dump_line(line), Some(true), "{line}");
        }
        assert_eq!(dump_line("*"), Some(false));
        assert_eq!(dump_line("0001d1a8"), Some(false));
        for line in [
            "a1b2c3d fix the parser",
            "20240501 12:00:01 started worker 4",
            "deadbeef add",
            "0001f1f add face bead cafe 12",
            "7f3a2c000000-7f3a2c021000 rw-p 00000000 00:00 0",
        ] {
            assert_eq!(dump_line(line), None, "{line}");
        }
    }

    use crate::compact::classify::{classify, Kind};
    use crate::compact::{compact, compact_retrievable, untouchable, Level};

    /// Real outputs: bundles read whole (the savings corpus), and slices of `base64`,
    /// `xxd`, `hexdump -C`, `hexdump` and `od` of `/bin/ls`.
    const SAMPLES: &[(&str, &str, Opaque)] = &[
        (
            "react-dom.production.min.js",
            include_str!("../../../../bench/corpus/outputs/cat-react-dom-min.txt"),
            Opaque::Bundle,
        ),
        (
            "lodash.min.js",
            include_str!("../../../../bench/corpus/outputs/cat-lodash-min.txt"),
            Opaque::Bundle,
        ),
        (
            "bootstrap.min.css",
            include_str!("../../../../bench/corpus/outputs/cat-bootstrap-min-css.txt"),
            Opaque::Bundle,
        ),
        (
            "react-dom head",
            include_str!("fixtures/react_dom_min_head.txt"),
            Opaque::Bundle,
        ),
        (
            "bootstrap.min.css, 3 kB of its line",
            include_str!("fixtures/bootstrap_min_css_slice.txt"),
            Opaque::Bundle,
        ),
        (
            "base64",
            include_str!("fixtures/base64_ls.txt"),
            Opaque::Base64,
        ),
        ("xxd", include_str!("fixtures/xxd_ls.txt"), Opaque::HexDump),
        (
            "hexdump -C",
            include_str!("fixtures/hexdump_c_ls.txt"),
            Opaque::HexDump,
        ),
        ("od", include_str!("fixtures/od_ls.txt"), Opaque::HexDump),
    ];

    /// A sample made long enough for a cut to pay: repeated whole until 64 KiB (a real
    /// dump's offsets would go on rising; the classifier does not read them).
    fn long(text: &str) -> String {
        text.repeat((64 * 1024) / text.len() + 1)
    }

    #[test]
    fn real_samples_are_opaque() {
        for &(name, text, what) in SAMPLES {
            assert_eq!(classify(text), Kind::Opaque(what), "{name}");
            assert_eq!(classify(&long(text)), Kind::Opaque(what), "{name}");
        }
        // the same with CRLF line ends, once the shared passes have read them
        let crlf = include_str!("fixtures/base64_ls.txt").replace('\n', "\r\n");
        assert_eq!(
            classify(&crate::compact::ansi::tidy(&crlf)),
            Kind::Opaque(Opaque::Base64)
        );
    }

    /// Below Aggressive an opaque block passes as it came; at Aggressive its head stays,
    /// whole, and one marker says how many bytes of what went, with where the whole
    /// block is kept after it. The same input gives the same bytes.
    #[test]
    fn unchanged_by_default_and_cut_with_a_marker_at_aggressive() {
        for &(name, text, what) in SAMPLES {
            let text = long(text);
            for level in [Level::Light, Level::Standard, Level::Auto] {
                assert_eq!(compact(&text, level), None, "{name} {level:?}");
            }
            let out = compact(&text, Level::Aggressive).unwrap();
            let (head, marker) = out.rsplit_once('\n').unwrap();
            assert!(text.starts_with(head), "{name}");
            assert!(
                head.len() <= HEAD_BYTES && head.len() >= HEAD_BYTES / 2,
                "{name}"
            );
            let total = text.trim_end_matches('\n').len();
            assert_eq!(
                marker,
                format!(
                    "[… {} of {} bytes elided ({}) …]",
                    thousands(total - head.len()),
                    thousands(total),
                    what.name()
                ),
                "{name}"
            );
            assert_eq!(compact(&text, Level::Aggressive).unwrap(), out, "{name}");
            let kept = compact_retrievable(&text, Level::Aggressive, "\n[original: 7f3a]").unwrap();
            assert_eq!(kept, format!("{out}\n[original: 7f3a]"), "{name}");
        }
    }

    /// What the default may not touch: opaque blocks, bare or in an agent's wrapper (and
    /// source code, prose and diffs, as before); not a log, a JSON document or a map.
    #[test]
    fn untouchable_is_opaque_blocks_and_what_is_never_rewritten() {
        for &(name, text, _) in SAMPLES {
            assert!(untouchable(text), "{name}");
            let wrapped = format!(
                "Command: cat bundle\nChunk ID: 5c1a2e\nWall time: 0.0100 seconds\nProcess exited with code 0\nOutput:\n{text}"
            );
            assert!(untouchable(&wrapped), "{name} wrapped");
        }
        assert!(untouchable(
            "use std::io;\n\npub fn main() {\n    let x = 1;\n    if x > 0 {\n        println!(\"{x}\");\n    }\n}\n"
        ));
        let log: String = (0..50)
            .map(|i| format!("worker {i}: GET /api/items/{i} 200\n"))
            .collect();
        assert!(!untouchable(&log));
        let json = format!(
            "[{}]",
            (0..500)
                .map(|i| format!("{{\"id\":{i},\"css\":\"a{{b:c;d:e}}\"}}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(!untouchable(&json));
        assert!(!untouchable(include_str!(
            "fixtures/aider_map_one_file.txt"
        )));
    }

    /// Long lines that are not a bundle, hashes that are not base64, numbers that are not
    /// a dump, and a diff or source that carry such content.
    #[test]
    fn look_alikes_are_not_opaque() {
        let react = include_str!("fixtures/react_dom_min_head.txt");
        let not_opaque = |name: &str, text: &str| {
            assert!(
                !matches!(classify(text), Kind::Opaque(_)),
                "{name}: {:?}",
                classify(text)
            );
        };
        // one log line of 100 kB: words between blanks
        let line: String = (0..4000)
            .map(|i| format!("item={i} status=ok took={}ms; ", i % 97))
            .collect();
        not_opaque("long log line", &line);
        // JSON Lines: no blanks, braces, but no semicolons
        let jsonl: String = (0..200)
            .map(|i| format!("{{\"reason\":\"compiler-artifact\",\"package_id\":\"serde 1.0.{i}\",\"target\":{{\"kind\":[\"lib\"],\"name\":\"serde\"}},\"profile\":{{\"opt_level\":\"0\",\"debuginfo\":2}},\"fresh\":true}}\n"))
            .collect();
        not_opaque("JSON Lines", &jsonl);
        not_opaque(
            "cargo -vv",
            include_str!("../../../../bench/corpus/outputs/cargo-build-vv-logscan.txt"),
        );
        // commit hashes, and short log lines that start with hex-looking words
        let hashes: String = (0..300)
            .map(|i| format!("{:040x}\n", i * 104_729))
            .collect();
        not_opaque("git rev-list", &hashes);
        let oneline: String = (0..300)
            .map(|i| format!("{:07x} add face bead cafe {i}\n", i * 7919))
            .collect();
        not_opaque("git log --oneline", &oneline);
        // a diff that adds a minified file is a diff
        let diff = format!(
            "diff --git a/dist/app.min.js b/dist/app.min.js\nindex 83db48f..bf269f4 100644\n--- a/dist/app.min.js\n+++ b/dist/app.min.js\n@@ -1 +1 @@\n-{}\n+{}\n",
            react.replace('\n', ""),
            react.replace('\n', "").replace("Q,zb", "R,zc")
        );
        assert_eq!(classify(&diff), Kind::Diff);
        // source holding a base64 constant is source
        let source = format!(
            "use std::io;\n\n/// The logo.\npub const LOGO: &str = \"{}\";\n\npub fn logo() -> &'static str {{\n    LOGO\n}}\n\npub fn size() -> usize {{\n    LOGO.len()\n}}\n",
            include_str!("fixtures/base64_ls.txt").replace('\n', "")
        );
        not_opaque("source with base64", &source);
    }

    /// The head keeps whole lines when it has any, and never splits a character.
    #[test]
    fn cut_keeps_a_head_on_a_boundary() {
        let lines: String = (0..200)
            .map(|i| format!("{i:08x}: {}\n", "ab".repeat(30)))
            .collect();
        let out = cut(&lines, Opaque::HexDump).unwrap();
        let (head, marker) = out.rsplit_once('\n').unwrap();
        assert!(lines.starts_with(&format!("{head}\n")));
        assert!(head.len() <= HEAD_BYTES);
        let total = lines.trim_end().len();
        assert_eq!(
            marker,
            format!(
                "[… {} of {} bytes elided (hex dump) …]",
                thousands(total - head.len()),
                thousands(total)
            )
        );
        // one line of two-byte characters: the cut falls between two of them
        let wide = "é".repeat(4000);
        let out = cut(&wide, Opaque::Bundle).unwrap();
        let head = out.split('\n').next().unwrap();
        assert!(wide.starts_with(head) && head.len() == HEAD_BYTES);
        let odd = format!("x{wide}");
        let head = cut(&odd, Opaque::Bundle).unwrap();
        let head = head.split('\n').next().unwrap();
        assert_eq!(head.len(), HEAD_BYTES - 1);
        assert!(cut(&"A".repeat(HEAD_BYTES * 2), Opaque::Base64).is_none());
    }
}

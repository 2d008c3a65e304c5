//! A JSON reader for the hot path's two questions about a body: where a request's `model`,
//! `stream`, `stream_options` and `temperature` are ([`crate::sniff`]), and what an
//! answer's top-level `model` and `usage` say ([`crate::usage`]). serde_json answers them in
//! about a microsecond each, most of it in the derive's per-key machinery (each key checked
//! as UTF-8, matched, each value visited); this reads the same bytes directly.
//!
//! It answers only when it is certain: whatever it does not expect (an escape in a key or in
//! the model's name, a number that is not a plain `u64`, a repeated field, nesting deeper
//! than [`DEPTH`], a `\u` surrogate) makes it return [`Unsure`], and the caller asks serde.
//! Where it does answer, it has checked every byte's syntax the way serde_json does (skipped
//! strings are not checked as UTF-8 by either), so the two agree; the tests (and the
//! `scan_reads` fuzz target) hold it to that.

/// Nesting deeper than this is left to serde (whose own limit is 128). A body the scanner
/// reads whole nests at most `DEPTH + 1` levels (the top object and its values).
pub const DEPTH: usize = 100;

/// Whether arrays and objects in `bytes` nest at most `max` levels deep (the top object
/// is one). Brackets inside strings do not count. One pass, nothing allocated; the
/// syntax is not checked (the caller's parser does that).
pub fn nests_within(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            b'"' => loop {
                // To the closing quote, past escaped characters.
                match memchr::memchr2(b'"', b'\\', bytes.get(i..).unwrap_or_default()) {
                    Some(n) if bytes[i + n] == b'\\' => i += n + 2,
                    Some(n) => {
                        i += n + 1;
                        break;
                    }
                    None => return true,
                }
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// "Not certain": the caller falls back to serde_json.
pub struct Unsure;

type Scan<T> = Result<T, Unsure>;

pub struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Scanner { bytes, at: 0 }
    }

    /// The byte at the cursor.
    pub fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    pub fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Consumes `b` if it is next.
    pub fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, b: u8) -> Scan<()> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(Unsure)
        }
    }

    /// Consumes a `null` if one is next.
    pub fn eat_null(&mut self) -> bool {
        self.literal(b"null").is_ok()
    }

    /// Checks that an array starts at the cursor, without consuming it.
    pub fn expect_array(&self) -> Scan<()> {
        if self.peek() == Some(b'[') {
            Ok(())
        } else {
            Err(Unsure)
        }
    }

    /// Where the cursor is, as an offset into the input.
    pub fn position(&self) -> usize {
        self.at
    }

    pub fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    fn literal(&mut self, word: &[u8]) -> Scan<()> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(Unsure)
        }
    }

    /// Moves to the first `"`, `\` or control byte at or after the cursor: memchr finds
    /// the first quote or backslash (SIMD), then one pass over the bytes before it takes
    /// their minimum (which the compiler vectorizes), to look for a control byte.
    fn skip_plain(&mut self) {
        let rest = &self.bytes[self.at..];
        let end = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
        let before = &rest[..end];
        let lowest = before.iter().fold(u8::MAX, |low, &b| low.min(b));
        self.at += if lowest < 0x20 {
            before.iter().position(|&b| b < 0x20).unwrap_or(end)
        } else {
            end
        };
    }

    /// Skips a string whose opening quote is next, checking its escapes.
    fn skip_string(&mut self) -> Scan<()> {
        self.expect(b'"')?;
        loop {
            self.skip_plain();
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.at += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.at += 1
                        }
                        Some(b'u') => {
                            let hex = self.bytes.get(self.at + 1..self.at + 5).ok_or(Unsure)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return Err(Unsure);
                            }
                            // Surrogates (D800–DFFF) have rules of their own; serde decides.
                            if hex[0].eq_ignore_ascii_case(&b'd') && hex[1] >= b'8' {
                                return Err(Unsure);
                            }
                            self.at += 5;
                        }
                        _ => return Err(Unsure),
                    }
                }
                // A control byte, or the end of the input.
                _ => return Err(Unsure),
            }
        }
    }

    /// A string with no escapes, as its raw bytes (not yet checked as UTF-8).
    fn plain_string(&mut self) -> Scan<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.at;
        self.skip_plain();
        if self.peek() != Some(b'"') {
            return Err(Unsure);
        }
        let raw = &self.bytes[start..self.at];
        self.at += 1;
        Ok(raw)
    }

    /// An object key with no escapes and only ASCII (every key this reader matches is).
    pub fn key(&mut self) -> Scan<&'a [u8]> {
        let key = self.plain_string()?;
        if key.is_ascii() {
            Ok(key)
        } else {
            Err(Unsure)
        }
    }

    /// A string without escapes, or `null`.
    pub fn str_or_null(&mut self) -> Scan<Option<&'a str>> {
        if self.eat_null() {
            return Ok(None);
        }
        let raw = self.plain_string()?;
        std::str::from_utf8(raw).map(Some).map_err(|_| Unsure)
    }

    /// A non-negative integer that fits a `u64`, or `null`.
    pub fn u64_or_null(&mut self) -> Scan<Option<u64>> {
        if self.eat_null() {
            return Ok(None);
        }
        let digits = self.digits();
        if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
            return Err(Unsure);
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return Err(Unsure);
        }
        let mut n: u64 = 0;
        for &d in digits {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                .ok_or(Unsure)?;
        }
        Ok(Some(n))
    }

    /// The run of ASCII digits at the cursor, consumed (possibly empty).
    fn digits(&mut self) -> &'a [u8] {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        &self.bytes[start..self.at]
    }

    fn skip_number(&mut self) -> Scan<()> {
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Unsure),
        }
        if self.eat(b'.') && self.digits().is_empty() {
            return Err(Unsure);
        }
        if self.eat(b'e') || self.eat(b'E') {
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits().is_empty() {
                return Err(Unsure);
            }
        }
        Ok(())
    }

    /// Skips the value that starts at the cursor, checking its syntax.
    pub fn skip_value(&mut self, depth: usize) -> Scan<()> {
        match self.peek().ok_or(Unsure)? {
            b'"' => self.skip_string(),
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            b'[' | b'{' if depth >= DEPTH => Err(Unsure),
            b'[' => {
                self.at += 1;
                self.ws();
                if self.eat(b']') {
                    return Ok(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    self.ws();
                    if self.eat(b']') {
                        return Ok(());
                    }
                    self.expect(b',')?;
                    self.ws();
                }
            }
            b'{' => {
                self.at += 1;
                // The keys of a skipped object may hold anything a string may.
                self.object(Self::any_key, |s, _| s.skip_value(depth + 1))
            }
            _ => Err(Unsure),
        }
    }

    /// Moves past one value by its structure alone: strings to their closing quote, brackets
    /// by depth, a scalar to the next `,`, `}`, `]` or space. Nothing in it is checked
    /// (brackets need not match, a number need not be one); `Unsure` only when the input
    /// ends inside it or there is no value. For what the caller passes over and nobody
    /// else reads as JSON: an answer's members other than `model` and `usage`, which the
    /// client gets as the provider sent them, well-formed or not.
    pub fn skip_over(&mut self) -> Scan<()> {
        let bytes = self.bytes;
        let start = self.at;
        let mut i = start;
        let mut depth = 0usize;
        loop {
            let Some(&b) = bytes.get(i) else {
                return Err(Unsure);
            };
            match b {
                b'"' => {
                    i = after_string(bytes, i + 1).ok_or(Unsure)?;
                    if depth == 0 {
                        break;
                    }
                }
                b'{' | b'[' => {
                    depth += 1;
                    i += 1;
                }
                b'}' | b']' if depth == 0 => break,
                b'}' | b']' => {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        break;
                    }
                }
                b',' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => break,
                _ => i += 1,
            }
        }
        if i == start {
            return Err(Unsure);
        }
        self.at = i;
        Ok(())
    }

    /// Reads the members of an object whose `{` was just consumed, handing each key to
    /// `member` with the cursor on its value; consumes the closing `}`. For objects read
    /// field by field: keys must be plain ASCII (serde would unescape and check them).
    pub fn members(&mut self, member: impl FnMut(&mut Self, &'a [u8]) -> Scan<()>) -> Scan<()> {
        self.object(Self::key, member)
    }

    /// `null`, or an object read into a fresh `T` member by member (`member` gets the
    /// fields seen so far, to refuse a repeated one).
    pub fn object_or_null<T: Default>(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a [u8], &mut T, &mut Seen) -> Scan<()>,
    ) -> Scan<Option<T>> {
        if self.eat_null() {
            return Ok(None);
        }
        self.expect(b'{')?;
        let (mut read, mut seen) = (T::default(), Seen::default());
        self.members(|s, key| member(s, key, &mut read, &mut seen))?;
        Ok(Some(read))
    }

    /// A skipped object's key: any string, escapes and all.
    fn any_key(&mut self) -> Scan<&'a [u8]> {
        let start = self.at;
        self.skip_string()?;
        Ok(&self.bytes[start + 1..self.at - 1])
    }

    fn object(
        &mut self,
        key: fn(&mut Self) -> Scan<&'a [u8]>,
        mut member: impl FnMut(&mut Self, &'a [u8]) -> Scan<()>,
    ) -> Scan<()> {
        self.ws();
        if self.eat(b'}') {
            return Ok(());
        }
        loop {
            let key = key(self)?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            member(self, key)?;
            self.ws();
            if self.eat(b'}') {
                return Ok(());
            }
            self.expect(b',')?;
            self.ws();
        }
    }
}

/// The offset just past the closing quote of the string whose contents start at `from`.
fn after_string(bytes: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let n = memchr::memchr2(b'"', b'\\', bytes.get(from..)?)?;
        if bytes[from + n] == b'"' {
            return Some(from + n + 1);
        }
        from += n + 2;
    }
}

/// Reads `bytes` as one object with nothing after it but whitespace, as
/// `serde_json::from_slice` of a struct does, handing each member to `member`.
pub fn whole_object<'a>(
    bytes: &'a [u8],
    member: impl FnMut(&mut Scanner<'a>, &'a [u8]) -> Scan<()>,
) -> Scan<()> {
    let mut s = Scanner::new(bytes);
    s.ws();
    s.expect(b'{')?;
    s.members(member)?;
    s.ws();
    if s.at_end() {
        Ok(())
    } else {
        Err(Unsure)
    }
}

/// The fields of one object read so far: serde refuses a field that comes twice.
#[derive(Default)]
pub struct Seen(u32);

impl Seen {
    /// Marks field `index` (under 32) as read; `Unsure` if it was already.
    pub fn first(&mut self, index: u32) -> Scan<()> {
        let bit = 1 << index;
        if self.0 & bit != 0 {
            return Err(Unsure);
        }
        self.0 |= bit;
        Ok(())
    }
}

/// Random JSON documents for tests that hold a direct reader to serde's answers.
#[cfg(test)]
pub(crate) mod random {
    /// A xorshift stream: `next(n)` is in `0..n`.
    pub fn numbers(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// An object with members named from `top` (some repeated, some escaped), whose values
    /// nest objects with members named from `inner`; one in three is then broken (a byte
    /// dropped, doubled or replaced).
    pub fn document(next: &mut impl FnMut(u64) -> u64, top: &[&str], inner: &[&str]) -> Vec<u8> {
        let mut out = String::from("{");
        for i in 0..next(6) {
            if i > 0 {
                out.push_str([",", " , ", ",\n"][next(3) as usize]);
            }
            out.push_str(&format!("\"{}\":", top[next(top.len() as u64) as usize]));
            let depth = if next(3) == 0 { 3 } else { 0 };
            value(next, inner, depth, &mut out);
        }
        out.push('}');
        let mut doc = out.into_bytes();
        if next(3) == 0 {
            let at = next(doc.len() as u64) as usize;
            match next(3) {
                0 => {
                    doc.remove(at);
                }
                1 => doc.insert(at, doc[at]),
                _ => doc[at] = b"{}[]\",:0-.e\\u\x01 nx\xc3"[next(17) as usize],
            }
        }
        doc
    }

    /// Runs `direct` and `by_serde` on `count` random documents (see [`document`]) and
    /// asserts they agree wherever `direct` answers; returns how many it answered.
    pub fn agreement<T: PartialEq + std::fmt::Debug>(
        seed: u64,
        count: usize,
        top: &[&str],
        inner: &[&str],
        direct: impl Fn(&[u8]) -> Option<T>,
        by_serde: impl Fn(&[u8]) -> Option<T>,
    ) -> usize {
        let mut next = numbers(seed);
        let mut answered = 0;
        for _ in 0..count {
            let doc = document(&mut next, top, inner);
            if let Some(found) = direct(&doc) {
                answered += 1;
                assert_eq!(
                    Some(found),
                    by_serde(&doc),
                    "{}",
                    String::from_utf8_lossy(&doc)
                );
            }
        }
        answered
    }

    fn value(next: &mut impl FnMut(u64) -> u64, inner: &[&str], depth: u32, out: &mut String) {
        match next(if depth > 3 { 6 } else { 9 }) {
            0 => out.push_str("null"),
            1 => out.push_str(["true", "false"][next(2) as usize]),
            2 => out.push_str(
                [
                    "0",
                    "7",
                    "-3",
                    "2.5",
                    "1e3",
                    "18446744073709551616",
                    "42",
                    "0.7",
                ][next(8) as usize],
            ),
            3 | 4 => out.push_str(
                [
                    "\"gpt-5\"",
                    "\"a\\\"b\"",
                    "\"\\u00e9t\u{e9}\"",
                    "\"\"",
                    "\"\\ud83d\\ude00\"",
                    "\"Refactor the parser so that errors carry the line and column.\"",
                ][next(6) as usize],
            ),
            5 => out.push_str(&next(1000).to_string()),
            6 | 7 => {
                out.push('[');
                for i in 0..next(3) {
                    if i > 0 {
                        out.push(',');
                    }
                    value(next, inner, depth + 1, out);
                }
                out.push(']');
            }
            _ => {
                out.push('{');
                for i in 0..next(5) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&format!(
                        "\"{}\":",
                        inner[next(inner.len() as u64) as usize]
                    ));
                    value(next, inner, depth + 1, out);
                }
                out.push('}');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skips(json: &str) -> bool {
        let mut s = Scanner::new(json.as_bytes());
        s.ws();
        let ok = s.skip_value(0).is_ok();
        s.ws();
        ok && s.at_end()
    }

    #[test]
    fn skipping_accepts_json_and_refuses_what_is_not() {
        for good in [
            r#"{"a":[1,-2.5e+3,0,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9"],"b":{}}"#,
            "[]",
            " [ 1 , { } ] ",
            r#""long string with no escapes at all, more than eight bytes""#,
            "-0.0E-0",
        ] {
            assert!(skips(good), "{good}");
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(good).is_ok());
        }
        for bad in [
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "1e",
            "-",
            "+1",
            "tru",
            "\"a\u{1}\"",
            "\"\\x\"",
            "\"\\u12\"",
            "{\"a\" 1}",
            "{1:2}",
            "[1 2]",
            "\"open",
            "nul",
        ] {
            assert!(!skips(bad), "{bad}");
        }
    }

    #[test]
    fn skipping_over_a_value_ends_where_checking_it_does() {
        let mut next = random::numbers(0x9e37_79b9_7f4a_7c15);
        let mut compared = 0;
        for _ in 0..5_000 {
            let doc = random::document(&mut next, &["a", "b\\\"c", "choices"], &["x", "y"]);
            // Each member's value of a document serde reads: both skips stop at the same byte.
            if serde_json::from_slice::<serde::de::IgnoredAny>(&doc).is_err() {
                // Broken: passing over it may or may not answer, but returns.
                let _ = Scanner::new(&doc).skip_over();
                continue;
            }
            let (mut checked, mut over) = (Scanner::new(&doc), Scanner::new(&doc));
            if checked.skip_value(0).is_err() {
                continue;
            }
            assert!(
                over.skip_over().is_ok(),
                "{}",
                String::from_utf8_lossy(&doc)
            );
            assert_eq!(checked.position(), over.position());
            compared += 1;
        }
        assert!(compared > 1_000, "{compared}");
        for (json, end) in [
            ("12,", 2),
            ("\"a\\\"b\" ", 6),
            ("[1,[2]]}", 7),
            ("{\"a\":{}} ,", 8),
            ("null}", 4),
        ] {
            let mut s = Scanner::new(json.as_bytes());
            assert!(s.skip_over().is_ok(), "{json}");
            assert_eq!(s.position(), end, "{json}");
        }
        for unfinished in ["", ",", "}", "\"open", "[1,2", "{\"a\":\"b"] {
            assert!(
                Scanner::new(unfinished.as_bytes()).skip_over().is_err(),
                "{unfinished}"
            );
        }
    }

    #[test]
    fn integers_are_plain_u64_or_unsure() {
        let read = |s: &str| Scanner::new(s.as_bytes()).u64_or_null().ok();
        assert_eq!(read("0"), Some(Some(0)));
        assert_eq!(read("18446744073709551615"), Some(Some(u64::MAX)));
        assert_eq!(read("null"), Some(None));
        for unsure in ["18446744073709551616", "01", "1.0", "1e3", "-1", "x"] {
            assert_eq!(read(unsure), None, "{unsure}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_serde() {
        let deep = "[".repeat(DEPTH + 1) + &"]".repeat(DEPTH + 1);
        assert!(!skips(&deep));
        let fine = "[".repeat(DEPTH) + &"]".repeat(DEPTH);
        assert!(skips(&fine));
    }
}

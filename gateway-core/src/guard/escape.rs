//! JSON string escaping both ways, for text that is a JSON string's escaped content
//! (a tool's output inside a request body, a tool call's arguments inside a response).
//!
//! Detection runs on the decoded text, where a `.env` file's lines are lines again and a
//! private key's body has its newlines; [`Unescaped::escaped_offset`] carries each
//! finding's span back to the escaped bytes it came from. Values are kept decoded, and
//! [`escape_into`] writes them back escaped as JSON would.

/// A JSON string's content, decoded, with what it takes to map offsets back.
pub struct Unescaped {
    pub text: String,
    /// `(decoded offset, escaped offset)` at the start of every escape sequence and just
    /// after it; between two checkpoints the bytes match one for one.
    checkpoints: Vec<(usize, usize)>,
    escaped_len: usize,
}

impl Unescaped {
    /// Decodes `escaped` (without its surrounding quotes). What is no valid escape (a
    /// stray backslash at a cut, `\x`) is kept as it is, and a lone surrogate becomes
    /// U+FFFD, so any input decodes and every offset still maps.
    pub fn new(escaped: &str) -> Unescaped {
        let bytes = escaped.as_bytes();
        let mut text = String::with_capacity(escaped.len());
        let mut checkpoints = Vec::new();
        let mut i = 0;
        let mut literal_from = 0;
        while let Some(offset) = memchr::memchr(b'\\', &bytes[i..]) {
            let at = i + offset;
            let Some((ch, len)) = decode_escape(bytes, at) else {
                // Not an escape: the backslash stays a literal byte.
                i = at + 1;
                continue;
            };
            text.push_str(&escaped[literal_from..at]);
            checkpoints.push((text.len(), at));
            text.push(ch);
            i = at + len;
            literal_from = i;
            checkpoints.push((text.len(), i));
        }
        text.push_str(&escaped[literal_from..]);
        Unescaped {
            text,
            checkpoints,
            escaped_len: escaped.len(),
        }
    }

    /// The escaped offset of a decoded offset that falls on a character boundary.
    pub fn escaped_offset(&self, decoded: usize) -> usize {
        let at = self.checkpoints.partition_point(|&(d, _)| d <= decoded);
        let offset = match at.checked_sub(1).and_then(|i| self.checkpoints.get(i)) {
            Some(&(d, e)) => e + (decoded - d),
            None => decoded,
        };
        offset.min(self.escaped_len)
    }
}

/// The character an escape sequence at `at` stands for, and its length in bytes.
fn decode_escape(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let simple = match bytes.get(at + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return decode_unicode(bytes, at),
        _ => return None,
    };
    Some((simple, 2))
}

fn decode_unicode(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let high = hex4(bytes, at + 2)?;
    if (0xD800..0xDC00).contains(&high) {
        // A surrogate pair is one character in two escapes.
        if bytes.get(at + 6) == Some(&b'\\') && bytes.get(at + 7) == Some(&b'u') {
            if let Some(low) = hex4(bytes, at + 8).filter(|l| (0xDC00..0xE000).contains(l)) {
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return Some((char::from_u32(code).unwrap_or('\u{FFFD}'), 12));
            }
        }
        return Some(('\u{FFFD}', 6));
    }
    Some((char::from_u32(high).unwrap_or('\u{FFFD}'), 6))
}

fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    let mut value = 0;
    for &b in digits {
        value = value * 16 + char::from(b).to_digit(16)?;
    }
    Some(value)
}

/// Appends `value` escaped as serde_json escapes a string's content: `"` and `\` with a
/// backslash, the usual control characters by letter, the others as `\u00XX`.
pub fn escape_into(value: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for ch in value.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let b = u32::from(c) as usize;
                out.push_str("\\u00");
                out.push(char::from(HEX[b >> 4]));
                out.push(char::from(HEX[b & 0xf]));
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(value: &str) -> String {
        let mut out = String::new();
        escape_into(value, &mut out);
        out
    }

    /// Escaping matches serde_json's for every control character, quotes and
    /// backslashes, and non-ASCII.
    #[test]
    fn escape_matches_serde_json() {
        let mut value: String = (0u8..0x20).map(char::from).collect();
        value.push_str("\"\\/ é ✓ 😀 \u{7f}");
        let json = serde_json::to_string(&value).unwrap();
        assert_eq!(escaped(&value), json[1..json.len() - 1]);
    }

    /// Decoding undoes escaping, and offsets map back to where each character starts.
    #[test]
    fn unescape_round_trips_with_offsets() {
        let value = "KEY=a\"b\\c\nNEXT=😀é\t\u{1}end";
        let json = serde_json::to_string(value).unwrap();
        let inner = &json[1..json.len() - 1];
        let decoded = Unescaped::new(inner);
        assert_eq!(decoded.text, value);
        for (offset, ch) in value.char_indices() {
            let e = decoded.escaped_offset(offset);
            let mut one = String::new();
            escape_into(&ch.to_string(), &mut one);
            assert!(inner[e..].starts_with(&one), "at {offset}");
        }
        assert_eq!(decoded.escaped_offset(value.len()), inner.len());
    }

    /// `\uXXXX` escapes, surrogate pairs among them, decode; what is not an escape
    /// stays as it is.
    #[test]
    fn unicode_escapes_and_strays() {
        let decoded = Unescaped::new(r"a\u00e9\ud83d\ude00\ud800x\q\");
        assert_eq!(decoded.text, "aé😀\u{FFFD}x\\q\\");
        assert_eq!(decoded.escaped_offset(1), 1);
        assert_eq!(decoded.escaped_offset(3), 7);
        assert_eq!(decoded.escaped_offset(7), 19);
    }
}

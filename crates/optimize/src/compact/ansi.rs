//! Terminal noise: ANSI escape sequences (colours forced with `--color=always`, OSC
//! hyperlinks, cursor moves), `\r` redraws of progress lines, trailing blanks.

use std::borrow::Cow;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// Removes CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC ] … ESC \`) and two-byte
/// escapes. Text between escapes is copied unchanged.
pub(crate) fn strip(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    if memchr::memchr(ESC, bytes).is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0usize;
    for start in memchr::memchr_iter(ESC, bytes) {
        if start < copied {
            continue; // inside a sequence already removed
        }
        out.push_str(text.get(copied..start).unwrap_or_default());
        copied = sequence_end(bytes, start);
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Cow::Owned(out)
}

/// Where the escape sequence starting at `start` (an ESC byte) ends. Always an ASCII
/// boundary or the end of the text, so slicing there never splits a character.
fn sequence_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    match bytes.get(i) {
        Some(b'[') => {
            i += 1;
            // parameter and intermediate bytes, then one final byte
            while let Some(&b) = bytes.get(i) {
                if (0x20..=0x3f).contains(&b) {
                    i += 1;
                } else {
                    break;
                }
            }
            match bytes.get(i) {
                Some(&b) if (0x40..=0x7e).contains(&b) => i + 1,
                _ => i,
            }
        }
        Some(b']') => {
            i += 1;
            while let Some(&b) = bytes.get(i) {
                match b {
                    BEL => return i + 1,
                    ESC if bytes.get(i + 1) == Some(&b'\\') => return i + 2,
                    ESC | b'\n' => return i,
                    _ => i += 1,
                }
            }
            i
        }
        Some(b'(' | b')' | b'*' | b'+') => match bytes.get(i + 1) {
            Some(b) if b.is_ascii() && *b != b'\n' => i + 2,
            _ => i + 1,
        },
        Some(b) if (0x40..=0x7e).contains(b) || *b == b'=' || *b == b'>' => i + 1,
        _ => i,
    }
}

/// Per line: drops the `\r` of CRLF, keeps only the last drawn state of a line redrawn with
/// `\r`, trims trailing spaces and tabs. Lines are joined with `\n`.
pub(crate) fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(last_drawn(line).trim_end_matches([' ', '\t', '\r']));
    }
    out
}

/// The final state of a line redrawn with carriage returns: the last segment that is not
/// blank.
fn last_drawn(line: &str) -> &str {
    if !line.contains('\r') {
        return line;
    }
    line.rsplit('\r')
        .find(|seg| !seg.trim().is_empty())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_sgr_colours_and_keeps_text() {
        let s = "\x1b[1m\x1b[92m   Compiling\x1b[0m foo v0.1.0";
        assert_eq!(strip(s), "   Compiling foo v0.1.0");
    }

    #[test]
    fn strips_osc_hyperlinks_and_titles() {
        let s =
            "see \x1b]8;;https://example.com/é\x1b\\docs\x1b]8;;\x1b\\ and \x1b]0;title\x07done";
        assert_eq!(strip(s), "see docs and done");
    }

    #[test]
    fn text_without_escapes_is_borrowed() {
        assert!(matches!(strip("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn malformed_escapes_never_split_characters() {
        for s in [
            "\x1b",
            "\x1b[",
            "\x1b[31",
            "\x1b[31é",
            "a\x1b]é",
            "\x1b(é",
            "\x1bé",
        ] {
            let out = strip(s);
            assert!(out.len() <= s.len(), "{s:?}");
        }
        assert_eq!(strip("\x1b[31é"), "é");
    }

    #[test]
    fn carriage_return_redraws_keep_the_final_state() {
        let s = "Downloading 10%\rDownloading 55%\rDownloading 100%\r\nnext line  \r\n";
        assert_eq!(tidy(s), "Downloading 100%\nnext line\n");
    }

    #[test]
    fn a_redraw_ending_in_blank_keeps_the_last_visible_state() {
        assert_eq!(tidy("working |\rworking /\r          \r"), "working /");
    }
}

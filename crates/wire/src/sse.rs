//! Server-sent events as the providers frame them: where a frame ends, whatever line
//! endings it uses, and the `data` it carries. Pure functions over bytes; the relay owns
//! the reading and writing.

use std::borrow::Cow;

/// Where a scan for the end of the next frame stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Scan {
    /// Just past the blank line that ends the frame.
    End(usize),
    /// No end yet: with more bytes, the scan resumes here.
    More(usize),
}

/// Scans for the end of the next frame from `from`, the start of a line or of a line
/// ending. Lines end in `\r\n`, `\n` or `\r`, as the SSE spec says; a frame ends with an
/// empty line. A scan that finds no end says where to resume, so bytes already looked
/// at are not looked at again.
pub fn scan(buf: &[u8], from: usize) -> Scan {
    let mut at = from;
    while let Some(i) = memchr::memchr2(b'\n', b'\r', &buf[at..]) {
        let eol = at + i;
        // Where the next line starts; a `\r` last in the buffer may be half of a `\r\n`.
        let next = match (buf[eol], buf.get(eol + 1)) {
            (b'\r', None) => return Scan::More(eol),
            (b'\r', Some(b'\n')) => eol + 2,
            _ => eol + 1,
        };
        match buf.get(next) {
            None => return Scan::More(eol),
            Some(b'\n') => return Scan::End(next + 1),
            // A `\r` that ends the buffer ends the frame: it is not held back for a `\n`
            // that may never come (one that does starts the next frame as an empty line).
            Some(b'\r') if buf.get(next + 1) == Some(&b'\n') => return Scan::End(next + 2),
            Some(b'\r') => return Scan::End(next + 1),
            Some(_) => at = next,
        }
    }
    Scan::More(buf.len())
}

/// Where the next frame ends (just past its blank line), searching from `from`.
pub fn frame_end(buf: &[u8], from: usize) -> Option<usize> {
    match scan(buf, from) {
        Scan::End(end) => Some(end),
        Scan::More(_) => None,
    }
}

/// The `data` payload of one frame (single-line data borrows; multi-line data is joined).
pub fn frame_data(frame: &[u8]) -> Option<Cow<'_, [u8]>> {
    let mut found: Option<Cow<'_, [u8]>> = None;
    // Splitting at `\r` and `\n` alike cuts each line out whatever its ending; the empty
    // pieces a `\r\n` leaves carry no field.
    for line in frame.split(|b| *b == b'\n' || *b == b'\r') {
        if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            found = Some(match found {
                None => Cow::Borrowed(rest),
                Some(prev) => {
                    let mut joined = prev.into_owned();
                    joined.push(b'\n');
                    joined.extend_from_slice(rest);
                    Cow::Owned(joined)
                }
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_ends_handle_lf_and_crlf() {
        assert_eq!(frame_end(b"data: a\n\ndata: b\n\n", 0), Some(9));
        assert_eq!(frame_end(b"data: a\r\n\r\nx", 0), Some(11));
        assert_eq!(frame_end(b"data: a\n", 0), None);
    }

    #[test]
    fn frame_ends_follow_every_line_ending_the_sse_spec_allows() {
        assert_eq!(frame_end(b"data: a\r\rdata: b\r\r", 0), Some(9));
        assert_eq!(frame_end(b"data: a\r\n\ndata: b", 0), Some(10));
        assert_eq!(frame_end(b"data: a\n\r\ndata: b", 0), Some(10));
        assert_eq!(frame_end(b"data: a\r\n\r\n", 0), Some(11));
        // A lone `\r` is a line ending, not yet an event's end.
        assert_eq!(frame_end(b"data: a\rdata: b\r", 0), None);
        assert_eq!(
            frame_data(b"event: x\rdata: 1\r\r").as_deref(),
            Some(&b"1"[..])
        );
        assert_eq!(
            frame_data(b"data: 1\r\ndata: 2\r\n\r\n").as_deref(),
            Some(&b"1\n2"[..])
        );
    }

    #[test]
    fn a_scan_without_an_end_resumes_where_it_stopped() {
        assert_eq!(scan(b"data: abc", 0), Scan::More(9));
        // The ending may go on in the next chunk: the scan resumes at its start.
        assert_eq!(scan(b"data: a\n", 0), Scan::More(7));
        assert_eq!(scan(b"data: a\r", 0), Scan::More(7));
        assert_eq!(scan(b"data: a\r\n", 0), Scan::More(7));
        assert_eq!(scan(b"data: a\r\ndata: b", 0), Scan::More(16));
        assert_eq!(scan(b"data: a\r\n\r\n", 7), Scan::End(11));
    }

    #[test]
    fn multi_line_data_is_joined() {
        let data = frame_data(b"event: x\ndata: {\"a\":\ndata: 1}\n\n");
        assert_eq!(data.as_deref(), Some(&b"{\"a\":\n1}"[..]));
    }
}

//! Token counts: exact ones from the real tokenizer (o200k_base), remembered per block
//! hash because agents resend the same history every turn, and a fast estimate for the
//! savings floor, where a decision must be cheap and the same in every process.

use super::memo::Memo;

/// A block's identity: the BLAKE3 hash of its text (fast enough to take on every block of
/// every request: about 0.2 ms for 600 KiB).
pub type Hash = [u8; 32];

pub fn hash(text: &str) -> Hash {
    blake3::hash(text.as_bytes()).into()
}

pub fn hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Exact o200k_base count.
pub fn count(text: &str) -> u64 {
    trimgate_wire::tokenizer::count(text)
}

/// A deterministic estimate of the o200k count, from the shape of the bytes: words of
/// letters cost about one token per six letters, digits split in threes, runs of punctuation
/// about one per two, indentation and newlines one a run, other scripts one a char.
/// Used only to compare a block with its rewrite, where errors largely cancel.
pub fn estimate(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut tokens = 0u64;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        if b.is_ascii_alphabetic() {
            while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                i += 1;
            }
            tokens += (i - start).div_ceil(6) as u64;
        } else if b.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            tokens += (i - start).div_ceil(3) as u64;
        } else if b == b' ' {
            // A single space joins the next word's token.
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
            if i - start > 1 {
                tokens += 1;
            }
        } else if b == b'\n' || b == b'\r' || b == b'\t' {
            while i < bytes.len() && matches!(bytes[i], b'\n' | b'\r' | b'\t' | b' ') {
                i += 1;
            }
            tokens += 1;
        } else if b < 0x80 {
            // Runs of punctuation (`::`, `();`, `->`, `"}`) mostly merge in pairs. The first
            // byte is taken whatever it is (a form feed is ASCII whitespace, and must not stall).
            i += 1;
            while i < bytes.len()
                && bytes[i] < 0x80
                && !bytes[i].is_ascii_alphanumeric()
                && !bytes[i].is_ascii_whitespace()
            {
                i += 1;
            }
            tokens += (i - start).div_ceil(2) as u64;
        } else {
            // Skip the rest of this UTF-8 character.
            i += 1;
            while i < bytes.len() && (bytes[i] & 0xC0) == 0x80 {
                i += 1;
            }
            tokens += 1;
        }
    }
    tokens
}

/// Exact counts of blocks seen recently, by hash.
pub struct CountMemo(Memo<Hash, u64>);

impl CountMemo {
    pub fn new(capacity: usize) -> CountMemo {
        CountMemo(Memo::new(capacity, usize::MAX))
    }

    /// The count of the text whose hash is `hash`, if it was counted before.
    pub fn get(&self, hash: &Hash) -> Option<u64> {
        self.0.get(hash)
    }

    /// The exact count of `text`, whose hash is `hash`, from memory or the tokenizer.
    pub fn count(&self, hash: &Hash, text: &str) -> u64 {
        if let Some(n) = self.0.get(hash) {
            return n;
        }
        // Counted outside the lock: two threads may count the same text once each.
        let n = count(text);
        self.0.put(*hash, n, 0);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_tracks_the_real_tokenizer_on_code_logs_and_prose() {
        let samples = [
            include_str!("locate.rs"),
            include_str!("../../../README.md"),
            "   Compiling serde v1.0.219\n   Compiling serde_json v1.0.140\n   Compiling tokio v1.45.0\n"
                .repeat(40)
                .leak(),
            r#"{"id": 12345, "name": "alpha", "values": [1.5, 2.25, 3.125], "ok": true}"#
                .repeat(40)
                .leak(),
        ];
        for s in samples {
            let (real, est) = (count(s) as f64, estimate(s) as f64);
            let ratio = est / real;
            assert!(
                (0.7..1.35).contains(&ratio),
                "estimate {est} vs real {real} (ratio {ratio:.2}) for {:?}",
                &s[..60]
            );
        }
    }

    #[test]
    fn every_byte_moves_the_estimate_on() {
        // Found by fuzzing: a form feed or vertical tab once stopped the scan.
        assert_eq!(estimate("a\u{c}b\u{b}c"), 5);
        for b in 0u8..128 {
            let s = String::from(char::from(b)).repeat(3);
            assert!(estimate(&s) <= 3, "{b:#x}");
        }
    }

    #[test]
    fn memo_returns_the_exact_count_and_stays_bounded() {
        let memo = CountMemo::new(2);
        for text in ["one two", "three four five", "six", "one two"] {
            assert_eq!(memo.count(&hash(text), text), count(text));
        }
        assert!(memo.0.len() <= 2);
    }
}

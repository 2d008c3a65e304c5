//! The text that stands in for a secret: its form, how it is named, how it is found.
//!
//! A placeholder reads `TRIMGATE_SECRET_<KIND>_<id>`, e.g.
//! `TRIMGATE_SECRET_OPENAI_KEY_3fa9c0d2e1b7`. Why this form:
//!
//! - **It survives every encoding on the way unchanged.** Upper-case letters, digits and
//!   underscores are never escaped by JSON (nor by encoders that escape `<`, `>`, `&` or
//!   everything non-ASCII, as Go's and Python's do), by URL encoding (all unreserved), by
//!   YAML, TOML or shell quoting; so a placeholder inside a tool call's arguments, which
//!   are JSON text inside JSON, is the same bytes at every level, and one scan finds it.
//!   Brackets such as `⟦…⟧` would be escaped to `\u27e6` by an ASCII-only encoder, `<…>`
//!   to `\u003c` by Go's, and `${…}` would be expanded by the shell the agent runs.
//! - **A model copies it faithfully.** It is one identifier, the shape of an environment
//!   variable's name, which models write into shell commands and config files as is,
//!   without quoting it or "fixing" it; and it says what it stands for, so the model can
//!   reason about it ("the OpenAI key") and use it where the secret would go.
//! - **It cannot be misread.** The kind is upper case and the id lower-case hex, so the
//!   grammar (`TRIMGATE_SECRET_`, words of `A`–`Z` joined by `_`, `_`, 12 of `0`–`9a`–`f`)
//!   has one parse and a fixed end; no text a tool prints looks like it by chance.
//!
//! The id is the first 48 bits of HMAC-SHA256 over the value, keyed per installation:
//! the same secret gets the same placeholder on every turn (the prompt-cache prefix stays
//! byte for byte), nobody without the key can test a guess of the secret against it, and
//! two different secrets share an id with odds of about n²/2⁴⁹ among n values: for the
//! vault's bound of a few thousand values per scope, under one in ten million.

use std::ops::Range;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::kind::SecretKind;

/// What every placeholder starts with.
pub const PREFIX: &str = "TRIMGATE_SECRET_";

/// Hex digits of the id: 48 bits (see the module's doc for the odds of a collision).
pub const ID_HEX: usize = 12;

type HmacSha256 = Hmac<Sha256>;

/// Names secrets: a pure function of the value and the installation's key.
#[derive(Clone)]
pub struct Placeholders {
    /// Keyed once; each name clones it (two hash states) instead of rekeying.
    mac: HmacSha256,
}

impl Placeholders {
    /// A namer keyed with the installation's 32-byte key. The key only has to stay the
    /// same for as long as placeholders must match across turns, and never leave the
    /// machine.
    pub fn new(key: [u8; 32]) -> Placeholders {
        // HMAC pads a key shorter than the hash's block with zeros (RFC 2104), so the
        // 32-byte key placed in a zeroed 64-byte block is that key, with no fallible
        // length check on the way.
        let mut block = hmac::digest::Key::<HmacSha256>::default();
        block[..key.len()].copy_from_slice(&key);
        Placeholders {
            mac: <HmacSha256 as Mac>::new(&block),
        }
    }

    /// The placeholder of `value` as a secret of `kind`.
    pub fn name(&self, kind: SecretKind, value: &str) -> String {
        let mut mac = self.mac.clone();
        mac.update(value.as_bytes());
        let digest = mac.finalize().into_bytes();
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut name = String::with_capacity(PREFIX.len() + kind.tag().len() + 1 + ID_HEX);
        name.push_str(PREFIX);
        name.push_str(kind.tag());
        name.push('_');
        for byte in digest.iter().take(ID_HEX / 2) {
            name.push(char::from(HEX[usize::from(byte >> 4)]));
            name.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
        name
    }
}

impl std::fmt::Debug for Placeholders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key never reaches a log.
        f.write_str("Placeholders { key: <hidden> }")
    }
}

/// The longest placeholder any kind gives, in bytes.
pub fn max_len() -> usize {
    let longest = SecretKind::ALL
        .iter()
        .map(|kind| kind.tag().len())
        .max()
        .unwrap_or(0);
    PREFIX.len() + longest + 1 + ID_HEX
}

/// Where the placeholder-shaped text starting at `at` ends, if one starts there. Any
/// text of the grammar counts, whatever kind it names: one the user typed, or one from
/// another installation, is still not a secret to replace.
pub fn placeholder_at(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let rest = bytes.get(at..)?;
    if !rest.starts_with(PREFIX.as_bytes()) {
        return None;
    }
    let mut i = PREFIX.len();
    // Words of the kind: one or more upper-case runs, each followed by `_`.
    loop {
        let word = rest[i..]
            .iter()
            .take_while(|b| b.is_ascii_uppercase())
            .count();
        if word == 0 || rest.get(i + word) != Some(&b'_') {
            return None;
        }
        i += word + 1;
        match rest.get(i) {
            Some(b) if b.is_ascii_uppercase() => continue,
            _ => break,
        }
    }
    let id = rest.get(i..i + ID_HEX)?;
    if id
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        Some(at + i + ID_HEX)
    } else {
        None
    }
}

/// Every placeholder-shaped span of `text`, left to right.
pub fn find_placeholders(text: &str) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = memchr::memmem::find(&text.as_bytes()[from..], PREFIX.as_bytes()) {
        let start = from + offset;
        match placeholder_at(text, start) {
            Some(end) => {
                found.push(start..end);
                from = end;
            }
            None => from = start + 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    /// The same value under the same key gives the same placeholder, call after call
    /// and namer after namer; so a secret repeated on every turn keeps one name.
    #[test]
    fn same_value_and_key_same_placeholder() {
        let a = Placeholders::new(KEY);
        let b = Placeholders::new(KEY);
        let value = "sk-proj-abc123";
        let first = a.name(SecretKind::OpenaiKey, value);
        assert_eq!(first, a.name(SecretKind::OpenaiKey, value));
        assert_eq!(first, b.name(SecretKind::OpenaiKey, value));
        assert!(first.starts_with("TRIMGATE_SECRET_OPENAI_KEY_"));
        assert_eq!(placeholder_at(&first, 0), Some(first.len()));
    }

    /// Another installation's key names the same secret differently: a placeholder
    /// says nothing about the value to anyone without the key.
    #[test]
    fn another_key_another_placeholder() {
        let value = "hunter2-but-longer";
        let a = Placeholders::new(KEY).name(SecretKind::EnvSecret, value);
        let b = Placeholders::new([8; 32]).name(SecretKind::EnvSecret, value);
        assert_ne!(a, b);
    }

    /// Secrets that share a long prefix still get different ids.
    #[test]
    fn shared_prefix_different_ids() {
        let names = Placeholders::new(KEY);
        let a = names.name(
            SecretKind::GithubToken,
            "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1",
        );
        let b = names.name(
            SecretKind::GithubToken,
            "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2",
        );
        assert_ne!(a, b);
    }

    /// The id is HMAC-SHA256 with the 32-byte key as HMAC defines it: the zero-padded
    /// block this module builds keys the same MAC as the key given as a slice.
    #[test]
    fn id_is_hmac_sha256_of_the_value() {
        let mut mac = HmacSha256::new_from_slice(&KEY).unwrap();
        mac.update(b"value");
        let digest = mac.finalize().into_bytes();
        let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            Placeholders::new(KEY).name(SecretKind::Jwt, "value"),
            format!("TRIMGATE_SECRET_JWT_{hex}")
        );
    }

    /// A placeholder is unchanged by JSON escaping, at any depth.
    #[test]
    fn survives_json_escaping() {
        let name = Placeholders::new(KEY).name(SecretKind::PrivateKey, "-----BEGIN…");
        let once = serde_json::to_string(&name).unwrap();
        let twice = serde_json::to_string(&once).unwrap();
        assert_eq!(once, format!("\"{name}\""));
        assert!(twice.contains(&name));
    }

    /// The grammar: the kind upper case, the id exactly 12 lower-case hex digits.
    #[test]
    fn grammar() {
        let ok = "TRIMGATE_SECRET_AWS_SECRET_KEY_0123456789ab";
        assert_eq!(placeholder_at(ok, 0), Some(ok.len()));
        // Longer text after the id does not change where it ends.
        assert_eq!(
            placeholder_at("TRIMGATE_SECRET_JWT_0123456789abcd", 0),
            Some(32)
        );
        for bad in [
            "TRIMGATE_SECRET_",
            "TRIMGATE_SECRET__0123456789ab",
            "TRIMGATE_SECRET_JWT_0123456789a",
            "TRIMGATE_SECRET_JWT_0123456789AB",
            "TRIMGATE_SECRET_jwt_0123456789ab",
            "TRIMGATE_SECRET_JWT0123456789ab",
            "TRIMGATE_SECRET_JWT__0123456789ab",
        ] {
            assert_eq!(placeholder_at(bad, 0), None, "{bad}");
        }
        let text = "a TRIMGATE_SECRET_JWT_0123456789ab b TRIMGATE_SECRET_X c \
                    TRIMGATE_SECRET_DB_PASSWORD_ffffffffffff";
        let spans = find_placeholders(text);
        assert_eq!(spans.len(), 2);
        assert_eq!(&text[spans[0].clone()], "TRIMGATE_SECRET_JWT_0123456789ab");
        assert_eq!(
            &text[spans[1].clone()],
            "TRIMGATE_SECRET_DB_PASSWORD_ffffffffffff"
        );
    }

    #[test]
    fn max_len_fits_every_kind() {
        let names = Placeholders::new(KEY);
        for kind in SecretKind::ALL {
            assert!(names.name(kind, "v").len() <= max_len());
        }
    }
}

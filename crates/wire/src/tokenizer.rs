//! The o200k_base tokenizer (the one OpenAI's current models use), built on first use from
//! a deflated copy of its table that the build script makes from tiktoken-rs's own
//! (`build.rs`): about 1 MB in the binary where tiktoken-rs's `o200k_base_singleton` embeds
//! 3.6 MB of base64 text. The tokenizer is tiktoken-rs's `CoreBPE`, given the same ranks,
//! special tokens and pattern, so it counts exactly as tiktoken-rs's does.

use std::sync::LazyLock;

use rustc_hash::FxHashMap;
use tiktoken_rs::{CoreBPE, Rank, O200K_BASE_PAT_STR};

static PACKED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.deflate"));

/// o200k_base's special tokens, as tiktoken-rs's `o200k_base` has them.
const SPECIAL: [(&str, Rank); 2] = [("<|endoftext|>", 199_999), ("<|endofprompt|>", 200_018)];

/// The tokenizer, built on the first call (inflating the table and compiling the pattern,
/// some tens of milliseconds) and shared after. `None` only if the embedded table or the
/// pattern were broken, which the tests below rule out for every build that passes them.
pub fn o200k() -> Option<&'static CoreBPE> {
    static BPE: LazyLock<Option<CoreBPE>> = LazyLock::new(build);
    BPE.as_ref()
}

/// The number of o200k_base tokens in `text`, special tokens' text counted as ordinary
/// text. Without a tokenizer (see [`o200k`]), a quarter of the bytes, rounded up.
pub fn count(text: &str) -> u64 {
    match o200k() {
        Some(bpe) => bpe.encode_ordinary(text).len() as u64,
        None => text.len().div_ceil(4) as u64,
    }
}

fn build() -> Option<CoreBPE> {
    let encoder = ranks(PACKED)?;
    let special = SPECIAL.iter().map(|&(s, r)| (s.to_owned(), r)).collect();
    CoreBPE::new(encoder, special, O200K_BASE_PAT_STR).ok()
}

/// The ranked tokens from the packed table (the layout is `build.rs`'s): `None` if it is
/// not what the build wrote.
fn ranks(packed: &[u8]) -> Option<FxHashMap<Vec<u8>, Rank>> {
    let raw = miniz_oxide::inflate::decompress_to_vec(packed).ok()?;
    let (n, rest) = raw.split_first_chunk::<4>()?;
    let n = u32::from_le_bytes(*n) as usize;
    let (lens, mut bytes) = rest.split_at_checked(n)?;
    let mut encoder = FxHashMap::with_capacity_and_hasher(n, Default::default());
    for (rank, &len) in lens.iter().enumerate() {
        let (token, tail) = bytes.split_at_checked(usize::from(len))?;
        encoder.insert(token.to_vec(), Rank::try_from(rank).ok()?);
        bytes = tail;
    }
    (bytes.is_empty() && encoder.len() == n).then_some(encoder)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ranked token and both special tokens decode to the same bytes as in
    /// tiktoken-rs's own o200k_base, and no rank past the table exists in either.
    #[test]
    fn the_table_is_tiktoken_rs_own() {
        let ours = o200k().expect("the embedded table builds a tokenizer");
        let theirs = tiktoken_rs::o200k_base_singleton();
        for rank in 0..=201_000 {
            assert_eq!(
                ours.decode_bytes(&[rank]).ok(),
                theirs.decode_bytes(&[rank]).ok(),
                "rank {rank}"
            );
        }
    }

    /// A varied text (prose, code, JSON, numbers, whitespace runs, other scripts, emoji,
    /// special tokens' text) counts and encodes the same as with tiktoken-rs's tokenizer.
    #[test]
    fn counts_as_tiktoken_rs_does() {
        let ours = o200k().expect("the embedded table builds a tokenizer");
        let theirs = tiktoken_rs::o200k_base_singleton();
        let samples = [
            "",
            "Hello, world! It's 2026-12-04 and we're counting tokens.",
            "fn main() {\n    let x: Vec<u8> = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}\n",
            r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream":true}"#,
            "3.14159265358979 1234567890 0x7fff_ffff 1e-9",
            "    \n\n\n   \t\t  trailing   ",
            "日本語のテキスト、中文文本, русский текст, العربية, हिन्दी",
            "emoji 👩‍💻🚀✨ and combining e\u{301} marks",
            "<|endoftext|> and <|endofprompt|> as text",
            "I'LL SHOUT, you'll whisper; they'd've ASKED'S",
        ];
        let long = samples.concat().repeat(40);
        for text in samples.iter().copied().chain([long.as_str()]) {
            assert_eq!(
                ours.encode_ordinary(text),
                theirs.encode_ordinary(text),
                "{text:?}"
            );
            assert_eq!(count(text), theirs.encode_ordinary(text).len() as u64);
            assert_eq!(
                ours.encode_with_special_tokens(text),
                theirs.encode_with_special_tokens(text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_damaged_table_is_refused() {
        assert!(ranks(b"not deflate").is_none());
        let short = miniz_oxide::deflate::compress_to_vec(&[3, 0, 0, 0, 1, 1], 1);
        assert!(ranks(&short).is_none());
    }
}

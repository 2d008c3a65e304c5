//! Writes o200k_base's ranked tokens, deflated, to `OUT_DIR/o200k_base.deflate` for
//! `src/tokenizer.rs` to embed: about 1 MB in the binary instead of the 3.6 MB of base64
//! text tiktoken-rs embeds. The tokens are read out of tiktoken-rs's own tokenizer, so the
//! two cannot drift apart.
//!
//! Layout before deflating: the number of tokens (u32, little endian), each token's length
//! (one byte each, in rank order), then the tokens' bytes one after another.

use std::{env, error::Error, fs, path::PathBuf};

/// o200k_base's ranked tokens are 0..=199997; its special tokens (199999 and up) are not
/// read from the table.
const RANKED: usize = 199_998;

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo::rerun-if-changed=build.rs");
    let bpe = tiktoken_rs::o200k_base()?;
    let mut tokens = Vec::with_capacity(RANKED);
    while let Ok(bytes) = bpe.decode_bytes(&[tokens.len() as u32]) {
        tokens.push(bytes);
    }
    if tokens.len() != RANKED {
        return Err(format!(
            "o200k_base has {} ranked tokens, not {RANKED}",
            tokens.len()
        )
        .into());
    }
    let mut raw = Vec::with_capacity(4 + tokens.len() * 8);
    raw.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
    for t in &tokens {
        raw.push(u8::try_from(t.len()).map_err(|_| "a token longer than 255 bytes")?);
    }
    for t in &tokens {
        raw.extend_from_slice(t);
    }
    let packed = miniz_oxide::deflate::compress_to_vec(&raw, 9);
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("no OUT_DIR")?);
    fs::write(out.join("o200k_base.deflate"), packed)?;
    Ok(())
}

//! The window's files (`ui/dist`, built by `npm run build` in `ui/`), embedded in the
//! binary. Kept apart from gateway-core so that rebuilding the window recompiles this small
//! crate and relinks, rather than recompiling the gateway.

use std::borrow::Cow;

use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "../../ui/dist/"]
#[allow_missing = true]
struct Assets;

/// The bytes of `path` under `ui/dist`, if the build has it.
pub fn file(path: &str) -> Option<Cow<'static, [u8]>> {
    Assets::get(path).map(|file| file.data)
}

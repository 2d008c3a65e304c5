//! The window's files (`ui/dist`, built by `npm run build` in `ui/`), embedded in the
//! binary deflated and inflated when asked for (the window loads them once a session). Kept
//! apart from gateway-core so that rebuilding the window recompiles this small crate and
//! relinks, rather than recompiling the gateway. Debug builds read the folder instead
//! (`build.rs`).

#[cfg(not(debug_assertions))]
pub use embedded::file;
#[cfg(debug_assertions)]
pub use folder::file;

#[cfg(not(debug_assertions))]
mod embedded {
    use std::borrow::Cow;

    /// Each file's path below `ui/dist` and its deflated bytes, sorted by path.
    static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/files.rs"));

    /// The bytes of `path` under `ui/dist`, if the build has it.
    pub fn file(path: &str) -> Option<Cow<'static, [u8]>> {
        let i = FILES.binary_search_by(|(p, _)| (*p).cmp(path)).ok()?;
        miniz_oxide::inflate::decompress_to_vec(FILES[i].1)
            .ok()
            .map(Cow::Owned)
    }
}

#[cfg(debug_assertions)]
mod folder {
    use std::borrow::Cow;
    use std::path::{Component, Path};

    /// The bytes of `path` as it is now in `ui/dist`: only a plain path below the folder,
    /// never `..` or a root.
    pub fn file(path: &str) -> Option<Cow<'static, [u8]>> {
        let relative = Path::new(path);
        if path.is_empty()
            || !relative
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
        {
            return None;
        }
        let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/dist");
        std::fs::read(dist.join(relative)).ok().map(Cow::Owned)
    }
}

#[cfg(test)]
mod tests {
    use super::file;

    /// Whatever the build holds, a path out of the folder is never read.
    #[test]
    fn paths_out_of_the_folder_are_refused() {
        for path in [
            "../Cargo.toml",
            "../../Cargo.toml",
            "/etc/passwd",
            "",
            "assets/../../x",
        ] {
            assert!(file(path).is_none(), "{path}");
        }
    }

    /// The built page is served when the folder has it (after `npm run build`).
    #[test]
    fn the_page_is_there_when_built() {
        let dist =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/dist/index.html");
        if let Ok(page) = std::fs::read(dist) {
            assert_eq!(file("index.html").as_deref(), Some(&page[..]));
        }
    }
}

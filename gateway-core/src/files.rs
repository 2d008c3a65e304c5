//! The gateway's own files on disk: written whole, owner-only when the gateway creates
//! them, and never widened when it rewrites one the user made. (Modes apply on Unix;
//! elsewhere files get the platform's defaults.)

use std::io::Write;
use std::path::{Path, PathBuf};

/// The mode of a file the gateway creates that holds the user's data or config.
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// The mode of a folder the gateway creates for such files.
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// Links followed before giving up (the system's own limit is about as many).
const MAX_LINKS: usize = 40;

/// The file `path` names once its symbolic links are followed (`path` itself when it is
/// not a link, or when a link points nowhere yet).
pub fn link_target(path: &Path) -> PathBuf {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let Ok(next) = std::fs::read_link(&at) else {
            break;
        };
        at = match at.parent() {
            Some(dir) if next.is_relative() => dir.join(next),
            _ => next,
        };
    }
    at
}

/// Creates `dir` and any missing parents, owner-only.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, PRIVATE_DIR_MODE);
    builder.create(dir)
}

/// Creates `file` empty and owner-only when it does not exist; an existing file is left
/// as it is.
pub fn create_private_file(file: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
    match options.open(file) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Replaces the file at `path` with `contents` in one step (a temporary file renamed over
/// it). Through a symbolic link the link's target is written and the link kept. The file
/// keeps the mode it had; a new one is owner-only.
pub fn replace(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let target = link_target(path);
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            create_private_dir(dir)?;
        }
    }
    let mut name = target.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    let tmp = target.with_file_name(name);
    // A temporary file left by a crash would keep its old mode: start afresh.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let mode = std::fs::metadata(&target)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(PRIVATE_FILE_MODE);
        options.mode(mode);
        let mut file = options.open(&tmp)?;
        // The umask may have taken bits the old file had: set them as they were.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(contents)?;
        file.sync_all()?;
    }
    #[cfg(not(unix))]
    {
        let mut file = options.open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, &target)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fresh folder under the system's temporary folder, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            let dir = std::env::temp_dir().join(format!("tg-files-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir(&dir).unwrap();
            Scratch(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_new_file_is_owner_only_and_a_rewritten_one_keeps_its_mode() {
        let dir = Scratch::new();
        let new = dir.path().join("new").join("config.toml");
        replace(&new, b"a = 1\n").unwrap();
        assert_eq!(mode(&new), 0o600);
        assert_eq!(mode(new.parent().unwrap()), 0o700);
        let shared = dir.path().join("shared.toml");
        std::fs::write(&shared, "a = 1\n").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace(&shared, b"a = 2\n").unwrap();
        assert_eq!(mode(&shared), 0o640);
        assert_eq!(std::fs::read_to_string(&shared).unwrap(), "a = 2\n");
    }

    #[test]
    fn through_a_link_the_target_is_written_and_the_link_kept() {
        let dir = Scratch::new();
        std::fs::create_dir(dir.path().join("dotfiles")).unwrap();
        let real = dir.path().join("dotfiles").join("trimgate.toml");
        std::fs::write(&real, "a = 1\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink("dotfiles/trimgate.toml", &link).unwrap();
        replace(&link, b"a = 2\n").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "a = 2\n");
        assert_eq!(mode(&real), 0o600);
    }

    #[test]
    fn a_private_file_is_created_once_and_left_alone_after() {
        let dir = Scratch::new();
        let file = dir.path().join("ledger.sqlite");
        create_private_file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        std::fs::write(&file, "kept").unwrap();
        create_private_file(&file).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
    }
}

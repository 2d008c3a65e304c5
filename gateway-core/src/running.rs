//! Where the desktop app's gateway listens, for the `trimgate` command on the same machine:
//! `<platform data dir>/trimgate/gateway.json`, written when the app's gateway starts and
//! removed when it stops. The app may listen on a port the config does not name (port 0,
//! `TRIMGATE_LISTEN`), so without this file `trimgate stats`, `wrap` and `status` would
//! look for it where the config says and miss it.
//!
//! It holds no secret: the address, the process id and the config file in force. The
//! admin token stays in the app's process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in the data dir.
pub const RUNNING_FILE: &str = "gateway.json";

/// A running gateway, as its file records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Running {
    /// The address it accepts connections on (`127.0.0.1:PORT`).
    pub listen: SocketAddr,
    /// The process serving it.
    pub pid: u32,
    /// The config file it runs on (or would write on its first edit); none when it has no
    /// place for one.
    pub config: Option<PathBuf>,
}

impl Running {
    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.listen)
    }
}

/// `<platform data dir>/trimgate/gateway.json`; none without a home directory.
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("dev", "trimgate", "trimgate")
        .map(|dirs| dirs.data_dir().join(RUNNING_FILE))
}

/// Writes `running` to `path` in one step (a reader never sees half of it), owner-only.
pub fn write(path: &Path, running: &Running) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(running).map_err(std::io::Error::other)?;
    crate::files::replace(path, &text)
}

/// The gateway the file at `path` records; none when there is no file or it is not one
/// this module wrote (another version's, a half-edited one): the caller then falls back
/// to the config, as it would without the file.
pub fn read(path: &Path) -> Option<Running> {
    let text = std::fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Removes the file at `path` when it still records process `pid`: a second app that
/// failed to start must not remove the running one's record.
pub fn remove(path: &Path, pid: u32) -> std::io::Result<()> {
    match read(path) {
        Some(running) if running.pid == pid => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the system's temporary folder, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            let dir = std::env::temp_dir().join(format!("tg-running-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn sample(pid: u32) -> Running {
        Running {
            listen: "127.0.0.1:40123".parse().unwrap(),
            pid,
            config: Some(PathBuf::from("/home/u/.config/trimgate/config.toml")),
        }
    }

    #[test]
    fn written_then_read_back_then_removed_by_its_own_process_only() {
        let dir = Scratch::new();
        let path = dir.0.join("nested").join(RUNNING_FILE);
        write(&path, &sample(41)).unwrap();
        assert_eq!(read(&path), Some(sample(41)));
        assert_eq!(read(&path).unwrap().base_url(), "http://127.0.0.1:40123");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        remove(&path, 42).unwrap();
        assert!(path.exists(), "another process's record was removed");
        remove(&path, 41).unwrap();
        assert!(!path.exists());
        remove(&path, 41).unwrap();
    }

    #[test]
    fn a_file_it_did_not_write_reads_as_none() {
        let dir = Scratch::new();
        let path = dir.0.join(RUNNING_FILE);
        assert_eq!(read(&path), None);
        std::fs::write(&path, b"{\"listen\": \"nowhere\"}").unwrap();
        assert_eq!(read(&path), None);
    }
}

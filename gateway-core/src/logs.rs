//! The log file and the last warnings and errors, for the diagnostics.
//!
//! Both shells write the same events to stderr and to [`FILE_NAME`] in [`default_dir`]
//! (or the dir `--log-dir` / `TRIMGATE_LOG_DIR` names; `off` for none, as containers do:
//! they log to stdout). The files are capped: [`MAX_FILE_BYTES`] each, the current one and
//! [`ROTATED_FILES`] older ones. A dir that cannot be written is no reason not to serve:
//! the shell starts anyway, says so once on stderr, and the diagnostics report it.
//!
//! The file gets exactly what stderr gets, through the same filter: the gateway logs
//! names, counts and statuses, never a key and never the text of a prompt or an answer.
//!
//! The last [`RECENT_ERRORS`] warnings and errors are kept in memory, as the log prints
//! them, for `GET /admin/api/diagnostics`. What the shell installed is one per process,
//! like the subscriber it feeds, so it is kept here for the admin API to read.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use rolling_file::{BasicRollingFileAppender, RollingConditionBasic};
use serde::Serialize;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::layer::Context;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Where the log file goes: a dir, or `off`.
pub const ENV_LOG_DIR: &str = "TRIMGATE_LOG_DIR";
/// The value of `--log-dir` or [`ENV_LOG_DIR`] that turns the file off.
pub const OFF: &str = "off";
/// The current file; the rotated ones are `trimgate.log.1` (newest) to `.2`.
pub const FILE_NAME: &str = "trimgate.log";
/// A file is rotated once it holds this much: a week of a busy user's lines, and small
/// enough to attach to an issue.
pub const MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;
/// Rotated files kept beside the current one: 15 MiB on disk at most.
pub const ROTATED_FILES: usize = 2;
/// Warnings and errors kept in memory for the diagnostics.
pub const RECENT_ERRORS: usize = 50;

/// The platform's log dir for Trimgate: `$XDG_STATE_HOME/trimgate/logs` (else
/// `~/.local/state/trimgate/logs`) on Linux and other Unixes, `~/Library/Logs/Trimgate`
/// on macOS, `<local app data>\Trimgate\logs` on Windows. `None` without a home dir.
pub fn default_dir() -> Option<PathBuf> {
    let base = directories::BaseDirs::new()?;
    #[cfg(target_os = "macos")]
    return Some(
        base.home_dir()
            .join("Library")
            .join("Logs")
            .join("Trimgate"),
    );
    #[cfg(windows)]
    return Some(base.data_local_dir().join("Trimgate").join("logs"));
    #[cfg(not(any(target_os = "macos", windows)))]
    return base
        .state_dir()
        .map(|dir| dir.join("trimgate").join("logs"));
}

/// Where the shell is told to write the log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// [`default_dir`].
    Default,
    Dir(PathBuf),
    /// No file: stderr only.
    Off,
}

impl Destination {
    /// What `--log-dir` or [`ENV_LOG_DIR`] says: nothing or empty for the default, `off`
    /// (any case) for none, else a dir.
    pub fn from_setting(value: Option<&OsStr>) -> Destination {
        match value {
            None => Destination::Default,
            Some(v) if v.is_empty() => Destination::Default,
            Some(v)
                if v.to_str()
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case(OFF)) =>
            {
                Destination::Off
            }
            Some(v) => Destination::Dir(PathBuf::from(v)),
        }
    }
}

/// What became of the log file, as the diagnostics report it.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct LogStatus {
    /// Turned off (`--log-dir off`): stderr only.
    pub off: bool,
    pub dir: Option<PathBuf>,
    pub file: Option<PathBuf>,
    /// Whether lines go to `file`.
    pub writable: bool,
    /// Why they do not, when the file was wanted.
    pub error: Option<String>,
}

impl LogStatus {
    /// The one line a shell prints when the file was wanted and cannot be written.
    pub fn problem(&self) -> Option<String> {
        let error = self.error.as_deref()?;
        let dir = self
            .dir
            .as_ref()
            .map_or_else(|| "no log dir".to_owned(), |d| d.display().to_string());
        Some(format!(
            "WARNING: cannot write the log file in {dir}: {error}; logging to stderr only (set {ENV_LOG_DIR} to another dir, or to `off`)"
        ))
    }
}

/// A warning or error as the log printed it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LoggedEvent {
    /// RFC 3339, UTC.
    pub time: String,
    pub level: String,
    pub target: String,
    /// The message and its fields, `message key=value …`.
    pub message: String,
}

/// What the shell installed: the log file's status and the last warnings and errors.
#[derive(Debug, Default)]
pub struct Logs {
    status: LogStatus,
    recent: Recent,
}

impl Logs {
    pub fn status(&self) -> &LogStatus {
        &self.status
    }

    /// The last [`RECENT_ERRORS`] warnings and errors, oldest first.
    pub fn recent_errors(&self) -> Vec<LoggedEvent> {
        self.recent.lock().iter().cloned().collect()
    }
}

/// The logging the process installed, once [`layers`] has run.
pub fn current() -> Option<Arc<Logs>> {
    CURRENT.get().cloned()
}

static CURRENT: OnceLock<Arc<Logs>> = OnceLock::new();

/// A layer for the shell's subscriber (over the registry).
pub type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Opens the log file at `destination` and returns the layers to put beside the shell's
/// stderr layer: the file's (through `filter`, the same as stderr's, in JSON when `json`)
/// and the keeper of the last warnings and errors. The first call in a process is the
/// one [`current`] reports.
pub fn layers(
    destination: &Destination,
    filter: EnvFilter,
    json: bool,
) -> (Vec<BoxedLayer>, Arc<Logs>) {
    let (file, status) = open(destination);
    let logs = Arc::new(Logs {
        status,
        recent: Recent::default(),
    });
    let _ = CURRENT.set(logs.clone());
    let mut layers = vec![RecentLayer(logs.clone())
        .with_filter(LevelFilter::WARN)
        .boxed()];
    if let Some(file) = file {
        let fmt = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(Mutex::new(file));
        layers.push(if json {
            fmt.json().with_filter(filter).boxed()
        } else {
            fmt.with_filter(filter).boxed()
        });
    }
    (layers, logs)
}

/// The appender for `destination`, or why there is none.
fn open(destination: &Destination) -> (Option<BasicRollingFileAppender>, LogStatus) {
    let dir = match destination {
        Destination::Off => {
            return (
                None,
                LogStatus {
                    off: true,
                    ..LogStatus::default()
                },
            )
        }
        Destination::Dir(dir) => dir.clone(),
        Destination::Default => match default_dir() {
            Some(dir) => dir,
            None => {
                return (
                    None,
                    LogStatus {
                        error: Some("no home directory to put it in".into()),
                        ..LogStatus::default()
                    },
                )
            }
        },
    };
    let file = dir.join(FILE_NAME);
    let opened = create_dir(&dir).and_then(|()| {
        // Unbuffered (capacity 0): each event reaches the file as it is logged, so the
        // lines before a crash are there to read.
        BasicRollingFileAppender::new_with_buffer_capacity(
            &file,
            RollingConditionBasic::new().max_size(MAX_FILE_BYTES),
            ROTATED_FILES,
            0,
        )
    });
    let (appender, error) = match opened {
        Ok(appender) => (Some(appender), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let status = LogStatus {
        off: false,
        dir: Some(dir),
        file: Some(file),
        writable: appender.is_some(),
        error,
    };
    (appender, status)
}

/// The log dir, owner-only when made here: the lines name the user's providers and models.
fn create_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The last warnings and errors, at most [`RECENT_ERRORS`].
#[derive(Debug, Default)]
struct Recent(Mutex<VecDeque<LoggedEvent>>);

impl Recent {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<LoggedEvent>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, event: LoggedEvent) {
        let mut events = self.lock();
        if events.len() == RECENT_ERRORS {
            events.pop_front();
        }
        events.push_back(event);
    }
}

/// Keeps each event it sees (filtered to warnings and errors) in [`Logs`].
struct RecentLayer(Arc<Logs>);

impl<S: Subscriber> Layer<S> for RecentLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() > Level::WARN {
            return;
        }
        // The fields as the text log writes them.
        let mut message = String::new();
        let _ = DefaultFields::new().format_fields(Writer::new(&mut message), event);
        self.0.recent.push(LoggedEvent {
            time: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            level: meta.level().to_string(),
            target: meta.target().to_owned(),
            message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn the_setting_names_a_dir_off_or_the_default() {
        assert_eq!(Destination::from_setting(None), Destination::Default);
        assert_eq!(
            Destination::from_setting(Some(OsStr::new(""))),
            Destination::Default
        );
        assert_eq!(
            Destination::from_setting(Some(OsStr::new("OFF"))),
            Destination::Off
        );
        assert_eq!(
            Destination::from_setting(Some(OsStr::new("/var/log/tg"))),
            Destination::Dir("/var/log/tg".into())
        );
    }

    #[cfg(not(any(target_os = "macos", windows)))]
    #[test]
    fn the_default_dir_is_under_the_state_dir() {
        let dir = default_dir().unwrap();
        assert!(dir.ends_with("trimgate/logs"), "{}", dir.display());
    }

    #[test]
    fn a_dir_that_cannot_be_made_is_reported_not_fatal() {
        let tmp = tempfile_dir();
        let blocker = tmp.join("a-file");
        std::fs::write(&blocker, "").unwrap();
        let (file, status) = open(&Destination::Dir(blocker.join("logs")));
        assert!(file.is_none());
        assert!(!status.writable);
        let problem = status.problem().unwrap();
        assert!(
            problem.contains(&blocker.join("logs").display().to_string()),
            "{problem}"
        );
        std::fs::remove_dir_all(tmp).unwrap();
    }

    #[test]
    fn files_rotate_at_the_cap_and_only_two_old_ones_are_kept() {
        let tmp = tempfile_dir();
        let (file, status) = open(&Destination::Dir(tmp.clone()));
        let mut file = file.unwrap();
        assert!(status.writable);
        let line = vec![b'x'; 1024 * 1024];
        for _ in 0..(MAX_FILE_BYTES as usize / line.len() + 1) * 4 {
            std::io::Write::write_all(&mut file, &line).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["trimgate.log", "trimgate.log.1", "trimgate.log.2"]);
        for name in names {
            let len = std::fs::metadata(tmp.join(name)).unwrap().len();
            assert!(len <= MAX_FILE_BYTES + line.len() as u64, "{len}");
        }
        std::fs::remove_dir_all(tmp).unwrap();
    }

    #[test]
    fn the_last_warnings_and_errors_are_kept_as_the_log_writes_them() {
        let logs = Arc::new(Logs::default());
        let subscriber = tracing_subscriber::registry()
            .with(RecentLayer(logs.clone()).with_filter(LevelFilter::WARN));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("not kept");
            for n in 0..RECENT_ERRORS + 5 {
                tracing::warn!(provider = "p", n, "provider cooling down");
            }
            tracing::error!(error = %"boom", "ledger write failed");
        });
        let recent = logs.recent_errors();
        assert_eq!(recent.len(), RECENT_ERRORS);
        let last = recent.last().unwrap();
        assert_eq!(last.level, "ERROR");
        assert_eq!(last.message, "ledger write failed error=boom");
        assert_eq!(
            recent[0].message,
            "provider cooling down provider=\"p\" n=6"
        );
    }

    /// A fresh dir under the system's temp dir.
    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trimgate-logs-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

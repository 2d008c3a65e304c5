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
//! Each line is formatted once and written to both ([`Sinks`]), unless stderr is a
//! terminal (it gets colours); lines logged together ([`coalesced`]: the ledger's writer
//! logging a batch of requests) are written together.
//!
//! The last [`RECENT_ERRORS`] warnings and errors are kept in memory, as the log prints
//! them, for `GET /admin/api/diagnostics`. What the shell installed is one per process,
//! like the subscriber it feeds, so it is kept here for the admin API to read.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::Write as _;
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

/// How the shell's stderr shows lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stderr {
    /// The same lines as the file, in the same format: each line is formatted once and
    /// written to both.
    Plain,
    /// A terminal: text with colours, formatted apart from the file's.
    Colours,
}

impl Stderr {
    /// Colours when stderr is a terminal and the lines are text.
    pub fn detect(json: bool) -> Stderr {
        if !json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            Stderr::Colours
        } else {
            Stderr::Plain
        }
    }
}

/// Opens the log file at `destination` and returns the shell's layers: stderr and the
/// file (each through a `filter()` of its own, in JSON when `json`), and the keeper of the
/// last warnings and errors. The first call in a process is the one [`current`] reports.
pub fn layers(
    destination: &Destination,
    filter: impl Fn() -> EnvFilter,
    json: bool,
    stderr: Stderr,
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
    let mut sinks: Vec<Sink> = Vec::new();
    match stderr {
        Stderr::Plain => sinks.push(Box::new(|line: &[u8]| {
            std::io::stderr().lock().write_all(line)
        })),
        Stderr::Colours => layers.push(
            tracing_subscriber::fmt::layer()
                .with_ansi(true)
                .with_writer(std::io::stderr)
                .with_filter(filter())
                .boxed(),
        ),
    }
    if let Some(file) = file {
        let file = Mutex::new(file);
        sinks.push(Box::new(move |line: &[u8]| {
            file.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .write_all(line)
        }));
    }
    if !sinks.is_empty() {
        layers.push(
            text_or_json(Sinks::new(sinks), json)
                .with_filter(filter())
                .boxed(),
        );
    }
    (layers, logs)
}

/// A layer writing lines without colours to `sinks`: JSON, or text as the default writes
/// it (with [`plain_fields`] and [`LineTime`]).
fn text_or_json(sinks: Sinks, json: bool) -> BoxedLayer {
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(sinks);
    if json {
        Box::new(fmt.json())
    } else {
        Box::new(fmt.fmt_fields(plain_fields()).with_timer(LineTime))
    }
}

/// One destination of the log's lines: stderr, or the file.
type Sink = Box<dyn Fn(&[u8]) -> std::io::Result<()> + Send + Sync>;

/// Where a layer's lines go: each line, formatted once, is written to every sink in turn.
/// Inside [`coalesced`], a thread's lines are held instead and written with one write per
/// sink when it ends.
#[derive(Clone)]
pub struct Sinks(Arc<Vec<Sink>>);

impl Sinks {
    fn new(sinks: Vec<Sink>) -> Sinks {
        Sinks(Arc::new(sinks))
    }

    fn write_now(&self, lines: &[u8]) -> std::io::Result<()> {
        // Every sink is written, whichever fails: the first failure is reported.
        let mut failed = Ok(());
        for sink in self.0.iter() {
            if let Err(e) = sink(lines) {
                failed = failed.and(Err(e));
            }
        }
        failed
    }
}

/// Lines held for one [`Sinks`].
type Held = (Sinks, Vec<u8>);

thread_local! {
    /// Inside [`coalesced`]: the lines held on this thread, by the sinks they go to.
    static HELD: std::cell::RefCell<Option<Vec<Held>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with the lines it logs on this thread held, and writes them when it ends
/// (returns or unwinds): one write per sink for all of them, in the order they were
/// logged. For a batch of lines logged at once (the ledger's writer logs the requests it
/// stored: a line each, two system calls each written one by one); nothing is held
/// longer than `f` runs.
pub fn coalesced<T>(f: impl FnOnce() -> T) -> T {
    struct Release(bool);
    impl Drop for Release {
        fn drop(&mut self) {
            if !self.0 {
                return;
            }
            let held = HELD
                .with(|held| held.borrow_mut().take())
                .unwrap_or_default();
            for (sinks, lines) in held {
                let _ = sinks.write_now(&lines);
            }
        }
    }
    // Nested: the outermost call writes.
    let outermost = HELD.with(|held| {
        let mut held = held.borrow_mut();
        if held.is_some() {
            return false;
        }
        *held = Some(Vec::new());
        true
    });
    let _release = Release(outermost);
    f()
}

/// A line's way to its [`Sinks`]: held when the thread is inside [`coalesced`].
pub struct SinksWriter<'a>(&'a Sinks);

impl std::io::Write for SinksWriter<'_> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let held = HELD.with(|held| {
            let mut held = held.borrow_mut();
            let Some(held) = held.as_mut() else {
                return false;
            };
            match held
                .iter_mut()
                .find(|(sinks, _)| Arc::ptr_eq(&sinks.0, &self.0 .0))
            {
                Some((_, lines)) => lines.extend_from_slice(line),
                None => held.push((self.0.clone(), line.to_vec())),
            }
            true
        });
        if !held {
            self.0.write_now(line)?;
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Sinks {
    type Writer = SinksWriter<'a>;

    fn make_writer(&'a self) -> SinksWriter<'a> {
        SinksWriter(self)
    }
}

/// A text line's fields as `tracing_subscriber`'s default writes them without colours
/// (`name=value`, values as `Debug` shows them, the message bare, `log.*` fields left
/// out), at a fraction of its cost: the default styles every field's name even with
/// colours off, and goes through the formatting machinery for every name, number and
/// string. At the default `info`, a request's line is the dearest part of a request
/// (BENCHMARKS.md). Where colours are on (a terminal), the default is kept.
pub fn plain_fields() -> PlainFields {
    PlainFields
}

/// See [`plain_fields`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainFields;

impl<'w> FormatFields<'w> for PlainFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        writer: Writer<'w>,
        fields: R,
    ) -> std::fmt::Result {
        let mut visitor = PlainVisitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct PlainVisitor<'w> {
    writer: Writer<'w>,
    first: bool,
    result: std::fmt::Result,
}

impl PlainVisitor<'_> {
    /// Writes the separator and `name=` (nothing for the message); false for a field the
    /// default leaves out.
    fn name(&mut self, field: &tracing::field::Field) -> bool {
        let name = field.name();
        if self.result.is_err() || name.starts_with("log.") {
            return false;
        }
        if !self.first {
            self.result = self.writer.write_char(' ');
        }
        self.first = false;
        if name != "message" {
            let name = name.strip_prefix("r#").unwrap_or(name);
            self.result = self
                .result
                .and_then(|()| self.writer.write_str(name))
                .and_then(|()| self.writer.write_char('='));
        }
        self.result.is_ok()
    }
}

impl tracing::field::Visit for PlainVisitor<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if !self.name(field) {
            return;
        }
        self.result = if field.name() == "message" {
            self.writer.write_str(value)
        } else if value
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
        {
            // What `Debug` writes for a string with nothing to escape.
            self.writer
                .write_char('"')
                .and_then(|()| self.writer.write_str(value))
                .and_then(|()| self.writer.write_char('"'))
        } else {
            write!(self.writer, "{value:?}")
        };
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if self.name(field) {
            self.result = self.writer.write_str(itoa::Buffer::new().format(value));
        }
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        if self.name(field) {
            self.result = self.writer.write_str(itoa::Buffer::new().format(value));
        }
    }

    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        if self.name(field) {
            self.result = self.writer.write_str(if value { "true" } else { "false" });
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if self.name(field) {
            self.result = write!(self.writer, "{value:?}");
        }
    }
}

/// A line's time as `tracing_subscriber`'s default writes it (RFC 3339 in UTC, with
/// microseconds: `2026-12-04T03:19:12.121597Z`), the date and time of day worked out once
/// a second per thread rather than for every line.
pub struct LineTime;

thread_local! {
    /// The second last written on this thread, and its text up to the fraction.
    static SECOND: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((0, String::new())) };
}

impl tracing_subscriber::fmt::time::FormatTime for LineTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        SECOND.with(|second| write_time(SystemTime::now(), &mut second.borrow_mut(), w))
    }
}

/// Writes `now`, taking the text up to the fraction from `second` when it is of the same
/// second, and keeping it there when not.
fn write_time(
    now: SystemTime,
    second: &mut (u64, String),
    w: &mut impl std::fmt::Write,
) -> std::fmt::Result {
    let since = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    if second.1.is_empty() || second.0 != since.as_secs() {
        let whole = humantime::format_rfc3339_seconds(now).to_string();
        second.0 = since.as_secs();
        second.1.clear();
        second.1.push_str(whole.trim_end_matches('Z'));
        second.1.push('.');
    }
    let mut fraction = *b"000000Z";
    let mut micros = since.subsec_micros();
    for digit in fraction[..6].iter_mut().rev() {
        *digit = b'0' + (micros % 10) as u8;
        micros /= 10;
    }
    w.write_str(&second.1)?;
    w.write_str(std::str::from_utf8(&fraction).unwrap_or("000000Z"))
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

    /// The plain fields write what the default writes without colours, field for field.
    #[test]
    fn plain_fields_read_as_the_default_does() {
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (default, plain) = (Buffer::default(), Buffer::default());
        let layer = |out: Buffer| {
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .without_time()
                .with_writer(move || out.clone())
        };
        let layers: Vec<BoxedLayer> = vec![
            layer(default.clone()).boxed(),
            layer(plain.clone()).fmt_fields(plain_fields()).boxed(),
        ];
        let subscriber = Registry::default().with(layers);
        tracing::subscriber::with_default(subscriber, || {
            let absent: Option<u64> = None;
            tracing::info!(
                request_id = %"2f7e0ad7",
                provider = "mock \"quoted\"",
                status = 200u16,
                streamed = false,
                saved = -3i64,
                absent,
                present = Some(7u64),
                outcome = ?Level::INFO,
                model = "café\tau",
                r#type = "kind",
                big = u64::MAX,
                small = i64::MIN,
                ratio = 0.25f64,
                empty = "",
                "request {}",
                1
            );
        });
        let read = |b: &Buffer| String::from_utf8(b.0.lock().unwrap().clone()).unwrap();
        assert_eq!(read(&plain), read(&default));
        assert!(
            read(&plain).contains("request 1 request_id=2f7e0ad7 provider="),
            "{}",
            read(&plain)
        );
    }

    #[test]
    fn line_time_reads_as_the_default_does() {
        // The default writes RFC 3339 with microseconds, as humantime does.
        let at = |micros: u64| SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(micros);
        let mut second = (0, String::new());
        for micros in [
            1_796_351_496_121_597,
            1_796_351_496_999_999, // the same second, from the kept text
            1_796_351_497_000_001, // the next one
            1_796_351_497_000_000,
            0,
            1_796_351_496_000_042, // back again
        ] {
            let mut ours = String::new();
            write_time(at(micros), &mut second, &mut ours).unwrap();
            assert_eq!(
                ours,
                humantime::format_rfc3339_micros(at(micros)).to_string()
            );
        }
        let mut text = String::new();
        tracing_subscriber::fmt::time::FormatTime::format_time(
            &LineTime,
            &mut Writer::new(&mut text),
        )
        .unwrap();
        assert_eq!(text.len(), "2026-12-04T03:19:12.121597Z".len(), "{text}");
    }

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

    /// A sink that keeps what it is given, write by write.
    fn kept() -> (Sink, Arc<Mutex<Vec<Vec<u8>>>>) {
        let writes = Arc::new(Mutex::new(Vec::new()));
        let keep = writes.clone();
        let sink: Sink = Box::new(move |bytes: &[u8]| {
            keep.lock().unwrap().push(bytes.to_vec());
            Ok(())
        });
        (sink, writes)
    }

    /// Each line is formatted once and reaches every sink as it is logged; inside
    /// `coalesced` (nested or not, returning or unwinding) a thread's lines reach them
    /// together when the outermost call ends, one write per sink, in the order logged.
    #[test]
    fn lines_reach_every_sink_and_coalesced_ones_in_one_write() {
        let (first, first_writes) = kept();
        let (second, second_writes) = kept();
        let subscriber = tracing_subscriber::registry()
            .with(text_or_json(Sinks::new(vec![first, second]), false));
        let writes = |w: &Arc<Mutex<Vec<Vec<u8>>>>| std::mem::take(&mut *w.lock().unwrap());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(n = 1, "one");
            tracing::info!(n = 2, "two");
            let apart = writes(&first_writes);
            assert_eq!(apart.len(), 2);
            assert!(String::from_utf8_lossy(&apart[0])
                .ends_with(" INFO gateway_core::logs::tests: one n=1\n"));
            assert_eq!(writes(&second_writes), apart, "the same bytes to both");

            coalesced(|| {
                tracing::info!(n = 3, "three");
                coalesced(|| tracing::info!(n = 4, "four"));
                tracing::info!(n = 5, "five");
                assert!(
                    first_writes.lock().unwrap().is_empty(),
                    "held until the end"
                );
                assert!(second_writes.lock().unwrap().is_empty());
            });
            let together = writes(&first_writes);
            assert_eq!(together.len(), 1, "one write");
            let text = String::from_utf8(together[0].clone()).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 3, "{text}");
            for (line, end) in lines.iter().zip(["three n=3", "four n=4", "five n=5"]) {
                assert!(line.ends_with(end), "{line}");
            }
            assert_eq!(writes(&second_writes), together);

            let unwound = std::panic::catch_unwind(|| {
                coalesced(|| {
                    tracing::info!(n = 6, "six");
                    panic!("in the batch");
                })
            });
            assert!(unwound.is_err());
            let after = writes(&first_writes);
            assert_eq!(after.len(), 1);
            assert!(String::from_utf8_lossy(&after[0]).ends_with("six n=6\n"));
            // Nothing is held once it has ended.
            tracing::info!(n = 7, "seven");
            assert_eq!(writes(&first_writes).len(), 1);
        });
    }

    /// A sink that fails does not keep the line from the others, and the failure is told.
    #[test]
    fn a_failing_sink_does_not_stop_the_others() {
        let (ok, writes) = kept();
        let failing: Sink = Box::new(|_: &[u8]| Err(std::io::Error::other("disk full")));
        let sinks = Sinks::new(vec![failing, ok]);
        let failed = sinks.write_now(b"line\n");
        assert_eq!(failed.unwrap_err().to_string(), "disk full");
        assert_eq!(*writes.lock().unwrap(), vec![b"line\n".to_vec()]);
    }

    /// A fresh dir under the system's temp dir.
    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trimgate-logs-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

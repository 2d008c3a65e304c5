//! Trimgate's desktop app: the gateway runs in this process on `127.0.0.1`, a window shows
//! the bundled UI, and a tray icon stays while the window is closed. The shell is thin; the
//! gateway's behaviour lives in gateway-core.
//!
//! - [`core`]: the gateway in-process — config, loopback listener, admin token, stop.
//! - [`window`]: the window, the token handoff before its scripts run, where it may go.
//! - [`tray`]: the tray icon and its menu (status, today's figures, open, glance, pause, quit).
//! - [`figures`]: today's tokens and dollars saved and spent, and the providers' health.
//! - [`commands`]: what the window may call — start at login, updates, the tray's figures,
//!   open the log dir.
//! - [`updates`]: the update the last check found, when it ran, and the daily check.
//! - [`lifecycle`]: quitting and restarting with the gateway stopped first.
//! - [`platform`]: what differs per OS (the macOS menu bar icon and Dock), behind `cfg`.

pub mod commands;
pub mod core;
pub mod figures;
pub mod lifecycle;
pub mod platform;
pub mod tray;
pub mod updates;
pub mod window;

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use gateway_core::logs;
use gateway_core::telemetry::{ENV_LOG, SPAN_TARGET};
use tauri::{AppHandle, Manager, RunEvent, Runtime, WindowEvent};
use tauri_plugin_dialog::{DialogExt as _, MessageDialogKind};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::EnvFilter;

use crate::core::Core;

/// Passed by the login entry: start with the window hidden (tray only).
pub const HIDDEN_ARG: &str = "--hidden";

/// Start with the glance window shown (otherwise the tray's "Show glance" opens it).
pub const GLANCE_ARG: &str = "--glance";

/// Runs the app until it quits; the exit code says how it ended.
// `tauri::generate_context!` expands to Tauri's own code, which calls
// `std::process::exit`; the app itself returns its ExitCode.
#[allow(clippy::disallowed_methods)]
pub fn run() -> ExitCode {
    #[cfg(target_os = "linux")]
    name_a_language_for_the_webview();
    init_logging();
    let app = tauri::Builder::default()
        // First, so a second launch hands over before anything else starts.
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            window::show(app);
        }))
        .plugin(tauri_plugin_dialog::init())
        .plugin(
            tauri_plugin_autostart::Builder::new()
                .arg(HIDDEN_ARG)
                .build(),
        )
        .plugin(tauri_plugin_updater::Builder::new().build())
        .plugin(tauri_plugin_opener::init())
        .manage(updates::Updates::default())
        .invoke_handler(tauri::generate_handler![
            commands::get_autostart,
            commands::set_autostart,
            commands::check_update,
            commands::install_update,
            commands::update_status,
            commands::open_logs,
            commands::tray_figures,
        ])
        .on_window_event(|window, event| {
            // Closing the window keeps the gateway running; Quit is in the tray.
            if let WindowEvent::CloseRequested { api, .. } = event {
                api.prevent_close();
                let _ = window.hide();
                if window.label() == window::GLANCE {
                    tray::show_glance_checked(window.app_handle(), false);
                } else {
                    platform::main_window_shown(window.app_handle(), false);
                }
            }
        })
        .setup(|app| {
            setup(app.handle());
            Ok(())
        })
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            say_err(&format!("error: cannot start the desktop app: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let code = app.run_return(|app, event| {
        if let RunEvent::ExitRequested { code, api, .. } = &event {
            lifecycle::on_exit_requested(app, *code, api);
        }
    });
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Starts the gateway, then the window and the tray; or says why it cannot, and exits.
fn setup<R: Runtime>(app: &AppHandle<R>) {
    let core = match tauri::async_runtime::block_on(Core::start()) {
        Ok(core) => Arc::new(core),
        Err(e) => return fail(app, &e.to_string()),
    };
    let listen = core.listen();
    say(&format!("Trimgate listening on http://{listen}"));
    app.manage(core.clone());
    lifecycle::quit_on_signals(app);
    let visible = !std::env::args().any(|a| a == HIDDEN_ARG);
    platform::main_window_shown(app, visible);
    if let Err(e) = window::create(app, &core, visible) {
        return fail(app, &format!("cannot open the window: {e}"));
    }
    // Before the tray, whose "Show glance" check mark starts from whether it is shown.
    if std::env::args().any(|a| a == GLANCE_ARG) {
        if let Err(e) = window::toggle_glance(app, &core) {
            tracing::warn!(error = %e, "cannot open the glance window");
        }
    }
    // A desktop without a tray still has the window; a second launch shows it again.
    if let Err(e) = tray::create(app, &core) {
        tracing::warn!(error = %e, "no tray icon");
    }
    updates::check_daily(app);
}

/// Says what went wrong on stderr and in a dialog, and exits with 1 once it is closed.
fn fail<R: Runtime>(app: &AppHandle<R>, message: &str) {
    say_err(&format!("error: {message}"));
    let handle = app.clone();
    app.dialog()
        .message(message)
        .title("Trimgate cannot start")
        .kind(MessageDialogKind::Error)
        .show(move |_| lifecycle::exit_with(&handle, 1));
}

/// Under the C or POSIX locale (`LANG=C.UTF-8` is common on Debian and in minimal installs)
/// WebKitGTK gives the page `navigator.language = "C"`, which is no language tag: `Intl`
/// throws, and a page that formats numbers while loading (the UI's chart library does)
/// shows nothing. There, messages are named English, which is what the C locale shows
/// anyway. Runs first, before any thread exists, since it sets the process environment.
#[cfg(target_os = "linux")]
fn name_a_language_for_the_webview() {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let messages = var("LC_ALL")
        .or_else(|| var("LC_MESSAGES"))
        .or_else(|| var("LANG"));
    if has_no_language(messages.as_deref()) {
        // First thing in `run`, before any thread starts.
        #[allow(clippy::disallowed_methods)]
        std::env::set_var("LC_MESSAGES", "en_US.UTF-8");
    }
}

/// Whether a locale name (`LC_ALL`, `LC_MESSAGES` or `LANG`) names no language.
#[cfg(target_os = "linux")]
fn has_no_language(locale: Option<&str>) -> bool {
    let Some(locale) = locale else {
        return true;
    };
    let language = locale.split(['.', '@']).next().unwrap_or(locale);
    matches!(language, "" | "C" | "POSIX")
}

/// A line on stdout; a closed stdout (a launcher's) is not an error.
fn say(line: &str) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

fn say_err(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Log lines on stderr and in the log file (the platform's log dir, or `TRIMGATE_LOG_DIR`;
/// `off` for none), filtered by `TRIMGATE_LOG` (default `info`), as `trimgate serve` writes
/// them; the request spans only an OTLP exporter reads stay off. A log dir that cannot be
/// written is said once on stderr; the window's Settings show it too.
fn init_logging() {
    let filter = || {
        let filter = EnvFilter::try_from_env(ENV_LOG).unwrap_or_else(|_| EnvFilter::new("info"));
        match format!("{SPAN_TARGET}=off").parse() {
            Ok(spans_off) => filter.add_directive(spans_off),
            Err(_) => filter,
        }
    };
    let destination =
        logs::Destination::from_setting(std::env::var_os(logs::ENV_LOG_DIR).as_deref());
    let (layers, logging) = logs::layers(&destination, filter, false, logs::Stderr::detect(false));
    let _ = tracing_subscriber::registry().with(layers).try_init();
    if let Some(problem) = logging.status().problem() {
        say_err(&problem);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::has_no_language;

    #[test]
    fn the_c_and_posix_locales_name_no_language() {
        for none in [
            None,
            Some("C"),
            Some("C.UTF-8"),
            Some("POSIX"),
            Some("C.utf8"),
        ] {
            assert!(has_no_language(none), "{none:?}");
        }
        for some in [
            Some("en_US.UTF-8"),
            Some("de_DE"),
            Some("sr_RS@latin"),
            Some("fr"),
        ] {
            assert!(!has_no_language(some), "{some:?}");
        }
    }
}

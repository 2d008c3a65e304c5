//! Starting and stopping: the gateway is stopped (open requests finished, the cache and the
//! ledger written out) before the app exits or restarts, however the exit comes — the tray's
//! Quit, SIGTERM or Ctrl-C, an exit request from the event loop, or an installed update.

use std::sync::Arc;
use std::time::Duration;

use tauri::{AppHandle, ExitRequestApi, Manager, Runtime};

use crate::core::Core;

/// How long the window has to receive `install_update`'s answer before the restart.
const RESTART_DELAY: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug)]
enum Then {
    Exit(i32),
    Restart,
}

/// Stops the gateway, then exits with 0.
pub fn quit<R: Runtime>(app: &AppHandle<R>) {
    stop_then(app, Then::Exit(0));
}

/// Stops the gateway, then exits with `code` (after a failed start, say).
pub fn exit_with<R: Runtime>(app: &AppHandle<R>, code: i32) {
    stop_then(app, Then::Exit(code));
}

/// Restarts into a freshly installed version, shortly, so the caller can answer first.
pub fn restart_soon<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(RESTART_DELAY).await;
        stop_then(&app, Then::Restart);
    });
}

/// The event loop wants to exit: hold it until the gateway has stopped.
pub fn on_exit_requested<R: Runtime>(app: &AppHandle<R>, code: Option<i32>, api: &ExitRequestApi) {
    let Some(core) = app.try_state::<Arc<Core>>() else {
        return;
    };
    if core.stopped() {
        return;
    }
    api.prevent_exit();
    stop_then(app, Then::Exit(code.unwrap_or(0)));
}

/// SIGTERM (a session ending, `kill`) and Ctrl-C quit the way the tray's Quit does.
pub fn quit_on_signals<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        signal().await;
        tracing::info!("signal received: quitting");
        quit(&app);
    });
}

async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn stop_then<R: Runtime>(app: &AppHandle<R>, then: Then) {
    let Some(core) = app.try_state::<Arc<Core>>().map(|c| c.inner().clone()) else {
        finish(app, then);
        return;
    };
    // A second Quit while stopping waits for the first.
    if !core.begin_stop() {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tracing::info!("stopping the gateway");
        match core.stop().await {
            Ok(()) => tracing::info!("gateway stopped"),
            Err(e) => tracing::warn!(error = %e, "gateway stop"),
        }
        finish(&app, then);
    });
}

fn finish<R: Runtime>(app: &AppHandle<R>, then: Then) {
    match then {
        Then::Exit(code) => app.exit(code),
        Then::Restart => {
            // The new process must not find this one holding the single-instance name.
            tauri_plugin_single_instance::destroy(app);
            app.request_restart();
        }
    }
}

//! The commands the window may call (each granted in `capabilities/main-window.json`):
//! start at login, updates, opening the log dir, and the tray's figures. Each is a few lines
//! over a plugin or the core; errors reach the window as `{kind, message}`.

use std::sync::Arc;

use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_opener::OpenerExt as _;

use crate::core::Core;
use crate::figures::{self, TrayFigures};
use crate::lifecycle;
use crate::updates::{LastCheck, Updates};

/// A failed command, as the window receives it.
#[derive(Debug, Serialize)]
pub struct CommandError {
    /// `autostart`, `update_check`, `update_install`, `no_update`, `open_logs` or `no_gateway`.
    pub kind: &'static str,
    pub message: String,
}

impl CommandError {
    fn new(kind: &'static str, error: impl std::fmt::Display) -> Self {
        CommandError {
            kind,
            message: error.to_string(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Autostart {
    pub enabled: bool,
}

/// What `check_update` found.
#[derive(Debug, Serialize)]
pub struct UpdateInfo {
    pub available: bool,
    pub current_version: String,
    /// The newer version, when there is one.
    pub version: Option<String>,
    pub notes: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Installed {
    pub version: String,
    /// The app restarts into the new version right after answering.
    pub restarting: bool,
}

/// Whether the app starts at login.
#[tauri::command]
pub fn get_autostart<R: Runtime>(app: AppHandle<R>) -> Result<Autostart, CommandError> {
    let enabled = app
        .autolaunch()
        .is_enabled()
        .map_err(|e| CommandError::new("autostart", e))?;
    Ok(Autostart { enabled })
}

/// Turns starting at login on or off; answers the state after.
#[tauri::command]
pub fn set_autostart<R: Runtime>(
    app: AppHandle<R>,
    enabled: bool,
) -> Result<Autostart, CommandError> {
    let autolaunch = app.autolaunch();
    let done = if enabled {
        autolaunch.enable()
    } else {
        autolaunch.disable()
    };
    done.map_err(|e| CommandError::new("autostart", e))?;
    tracing::info!(enabled, "autostart");
    get_autostart(app)
}

/// Asks the update endpoint in the config whether a newer, signed version exists.
#[tauri::command]
pub async fn check_update<R: Runtime>(
    app: AppHandle<R>,
    updates: State<'_, Updates>,
) -> Result<UpdateInfo, CommandError> {
    let current_version = app.package_info().version.to_string();
    let update = updates
        .check(&app)
        .await
        .map_err(|e| CommandError::new("update_check", e))?;
    let info = UpdateInfo {
        available: update.is_some(),
        current_version,
        version: update.as_ref().map(|u| u.version.clone()),
        notes: update.as_ref().and_then(|u| u.body.clone()),
    };
    tracing::info!(available = info.available, version = ?info.version, "update check");
    updates.keep(update);
    Ok(info)
}

/// The running version and the last update check (from the window or the daily one).
#[derive(Debug, Serialize)]
pub struct UpdateStatus {
    pub current_version: String,
    pub last_check: Option<LastCheck>,
}

#[tauri::command]
pub fn update_status<R: Runtime>(app: AppHandle<R>, updates: State<'_, Updates>) -> UpdateStatus {
    UpdateStatus {
        current_version: app.package_info().version.to_string(),
        last_check: updates.last(),
    }
}

/// Downloads the update `check_update` found, checks its signature against the public key
/// built into the app, installs it, then restarts the app (the gateway stopped first).
#[tauri::command]
pub async fn install_update<R: Runtime>(
    app: AppHandle<R>,
    updates: State<'_, Updates>,
) -> Result<Installed, CommandError> {
    let Some(update) = updates.take() else {
        return Err(CommandError::new(
            "no_update",
            "no update to install: check for one first",
        ));
    };
    let version = update.version.clone();
    tracing::info!(%version, "installing update");
    if let Err(e) = update.download_and_install(|_, _| {}, || {}).await {
        tracing::warn!(error = %e, "update not installed");
        return Err(CommandError::new("update_install", e));
    }
    tracing::info!(%version, "update installed; restarting");
    lifecycle::restart_soon(&app);
    Ok(Installed {
        version,
        restarting: true,
    })
}

/// Opens the log dir in the file manager. The dir is the one logging was set up with, never
/// a path from the window.
#[tauri::command]
pub fn open_logs<R: Runtime>(app: AppHandle<R>) -> Result<(), CommandError> {
    let status = gateway_core::logs::current()
        .map(|logs| logs.status().clone())
        .unwrap_or_default();
    let Some(dir) = status.dir.filter(|_| status.writable) else {
        let why = status
            .error
            .unwrap_or_else(|| "the log file is off".to_owned());
        return Err(CommandError::new(
            "open_logs",
            format!("no log dir to open: {why}"),
        ));
    };
    app.opener()
        .open_path(dir.display().to_string(), None::<&str>)
        .map_err(|e| CommandError::new("open_logs", format!("cannot open {}: {e}", dir.display())))
}

/// Today's figures and the tray menu's texts for them, from the same function the tray
/// calls: what the menu shows, for the window and for tests (a tray menu cannot be read
/// from outside the process).
#[tauri::command]
pub async fn tray_figures<R: Runtime>(app: AppHandle<R>) -> Result<TrayFigures, CommandError> {
    let core = app
        .try_state::<Arc<Core>>()
        .map(|c| c.inner().clone())
        .ok_or_else(|| CommandError::new("no_gateway", "the gateway has not started"))?;
    Ok(figures::tray(&core).await)
}

//! Updates: the one the last check found (what `install_update` installs, not whatever the
//! server announces by then), when the last check ran and what it said (the Settings page
//! shows it), and a check a minute after start and once a day after, which only records what
//! it found: installing stays the user's choice. `TRIMGATE_UPDATE_CHECK=off` turns the
//! automatic check off (a machine whose updates are managed elsewhere).

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_updater::{Update, UpdaterExt as _};

/// The first automatic check, after start: the gateway and the window come first.
const FIRST_CHECK: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_secs(24 * 3600);
/// An automatic check is skipped when the user checked this recently.
const RECENT: Duration = Duration::from_secs(3600);

/// When the last check ran and what it found.
#[derive(Clone, Debug, Serialize)]
pub struct LastCheck {
    pub at_ms: i64,
    /// The newer version it found, if any.
    pub version: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

#[derive(Default)]
pub struct Updates {
    found: Mutex<Option<Update>>,
    last: Mutex<Option<LastCheck>>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Updates {
    /// Asks the endpoint in the config for a newer, signed version, and records the answer.
    pub async fn check<R: Runtime>(
        &self,
        app: &AppHandle<R>,
    ) -> Result<Option<Update>, tauri_plugin_updater::Error> {
        let result = match app.updater() {
            Ok(updater) => updater.check().await,
            Err(e) => Err(e),
        };
        let last = LastCheck {
            at_ms: now_ms(),
            version: result
                .as_ref()
                .ok()
                .and_then(|u| u.as_ref().map(|u| u.version.clone())),
            error: result.as_ref().err().map(ToString::to_string),
        };
        *lock(&self.last) = Some(last);
        result
    }

    /// Keeps the update a check from the window found, for `install_update`.
    pub fn keep(&self, update: Option<Update>) {
        *lock(&self.found) = update;
    }

    pub fn take(&self) -> Option<Update> {
        lock(&self.found).take()
    }

    pub fn last(&self) -> Option<LastCheck> {
        lock(&self.last).clone()
    }

    fn checked_within(&self, within: Duration) -> bool {
        let Ok(within) = i64::try_from(within.as_millis()) else {
            return false;
        };
        self.last()
            .is_some_and(|last| now_ms().saturating_sub(last.at_ms) < within)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Checks a minute after start and once a day, until the app quits.
pub fn check_daily<R: Runtime>(app: &AppHandle<R>) {
    if std::env::var("TRIMGATE_UPDATE_CHECK").is_ok_and(|v| v == "off") {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let mut wait = FIRST_CHECK;
        loop {
            tokio::time::sleep(wait).await;
            wait = EVERY;
            let updates = app.state::<Updates>();
            if updates.checked_within(RECENT) {
                continue;
            }
            match updates.check(&app).await {
                Ok(Some(update)) => {
                    tracing::info!(version = %update.version, "an update is available")
                }
                Ok(None) => tracing::info!("no update available"),
                Err(e) => tracing::info!(error = %e, "the update check failed"),
            }
        }
    });
}

//! What differs per OS, kept here and small. Only Linux is compiled where the app is
//! developed: the macOS and Windows branches are compiled first by the CI's macOS and Windows
//! jobs (`.github/workflows/ci.yml`) and the release workflow; each is written against the
//! API Tauri documents for that OS (docs/desktop.md lists them and what a first run must
//! check).
//!
//! The keychain (`keyring`'s apple-native, windows-native and Secret Service backends), the
//! data, config and log dirs (`directories`), start at login and single instance (Tauri's
//! plugins) need nothing here: the crates pick each OS's own.

use tauri::image::Image;
use tauri::{AppHandle, Runtime};

/// The tray icon. On macOS, template images (black and alpha): the menu bar draws them in
/// its own colours, light or dark.
#[cfg(target_os = "macos")]
pub const TRAY_ICON: Image<'_> = tauri::include_image!("../icons/tray-template.png");
#[cfg(not(target_os = "macos"))]
pub const TRAY_ICON: Image<'_> = tauri::include_image!("../icons/tray.png");

/// The tray icon while the optimizers are paused.
#[cfg(target_os = "macos")]
pub const TRAY_ICON_PAUSED: Image<'_> = tauri::include_image!("../icons/tray-template-paused.png");
#[cfg(not(target_os = "macos"))]
pub const TRAY_ICON_PAUSED: Image<'_> = tauri::include_image!("../icons/tray-paused.png");

/// Whether the tray icons are template images (macOS; the builder ignores it elsewhere).
pub const TRAY_ICON_IS_TEMPLATE: bool = cfg!(target_os = "macos");

/// The main window was shown or hidden. On macOS the app has a Dock icon only while its
/// window is shown: with the tray alone it is a menu bar app (`ActivationPolicy::Accessory`).
/// Elsewhere the window's own taskbar entry comes and goes with it.
pub fn main_window_shown<R: Runtime>(app: &AppHandle<R>, shown: bool) {
    #[cfg(target_os = "macos")]
    {
        let policy = if shown {
            tauri::ActivationPolicy::Regular
        } else {
            tauri::ActivationPolicy::Accessory
        };
        if let Err(e) = app.set_activation_policy(policy) {
            tracing::warn!(error = %e, "cannot change the Dock icon");
        }
    }
    #[cfg(not(target_os = "macos"))]
    let _ = (app, shown);
}

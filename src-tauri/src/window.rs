//! The windows: the main one and the optional glance (a small always-on-top window with
//! today's figures, from the same UI build at `index.html?glance`). Both are the bundled
//! UI, told before any of their scripts run where the gateway listens and which token opens
//! its admin API, and both stay on the app's own pages.

use tauri::{AppHandle, Manager, Runtime, Url, WebviewUrl, WebviewWindow, WebviewWindowBuilder};

use crate::core::Core;

/// The window's label; the capability in `capabilities/main-window.json` names it.
pub const MAIN: &str = "main";

const TITLE: &str = "Trimgate";

/// The glance window's label; the capability in `capabilities/glance-window.json` names it.
pub const GLANCE: &str = "glance";

const GLANCE_TITLE: &str = "Trimgate today";

/// Where the bundled UI is served from: `tauri://localhost` on Linux and macOS,
/// `http://tauri.localhost` on Windows.
const APP_ORIGINS: [&str; 2] = ["tauri://localhost", "http://tauri.localhost"];

/// Builds the window, shown unless `visible` is false (started at login: tray only).
pub fn create<R: Runtime>(
    app: &AppHandle<R>,
    core: &Core,
    visible: bool,
) -> tauri::Result<WebviewWindow<R>> {
    WebviewWindowBuilder::new(app, MAIN, WebviewUrl::App("index.html".into()))
        .title(TITLE)
        .inner_size(1200.0, 800.0)
        .min_inner_size(720.0, 480.0)
        .visible(visible)
        .initialization_script(init_script(&core.api_base(), core.token()))
        .on_navigation(is_app_page)
        .build()
}

/// Shows, unminimizes and focuses the window (tray "Open window", a second launch).
pub fn show<R: Runtime>(app: &AppHandle<R>) {
    let Some(window) = app.get_webview_window(MAIN) else {
        return;
    };
    crate::platform::main_window_shown(app, true);
    let _ = window.unminimize();
    let _ = window.show();
    let _ = window.set_focus();
}

/// Whether the glance window is shown.
pub fn glance_shown<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.get_webview_window(GLANCE)
        .and_then(|w| w.is_visible().ok())
        .unwrap_or(false)
}

/// Shows the glance window (made on first use), or hides it when it is shown; answers
/// whether it is shown after.
pub fn toggle_glance<R: Runtime>(app: &AppHandle<R>, core: &Core) -> tauri::Result<bool> {
    if let Some(glance) = app.get_webview_window(GLANCE) {
        if glance.is_visible()? {
            glance.hide()?;
            return Ok(false);
        }
        glance.show()?;
        return Ok(true);
    }
    // Small, on top of other windows, without a title bar or a taskbar entry: it is read
    // in passing. The page is its drag handle.
    WebviewWindowBuilder::new(app, GLANCE, WebviewUrl::App("index.html?glance".into()))
        .title(GLANCE_TITLE)
        .inner_size(300.0, 190.0)
        .resizable(false)
        .decorations(false)
        .always_on_top(true)
        .skip_taskbar(true)
        .initialization_script(init_script(&core.api_base(), core.token()))
        .on_navigation(is_app_page)
        .build()?;
    Ok(true)
}

/// Sets `window.__TRIMGATE__ = { apiBase, token }`, read-only, on the app's own pages only:
/// were the window ever to show another origin, it would not get the token.
fn init_script(api_base: &str, token: &str) -> String {
    let value = serde_json::json!({ "apiBase": api_base, "token": token });
    let origins = serde_json::json!(APP_ORIGINS);
    format!(
        "if ({origins}.includes(window.location.origin)) {{\
         Object.defineProperty(window, '__TRIMGATE__', \
         {{ value: Object.freeze({value}), writable: false, configurable: false, enumerable: false }});\
         }}"
    )
}

/// Whether `url` is one of the bundled UI's pages. Anything else (a link to a provider's
/// site, a redirect) is not loaded in the window.
fn is_app_page(url: &Url) -> bool {
    let origin = url.origin().ascii_serialization();
    // `tauri://localhost` is an opaque origin to the URL standard: compare its parts.
    let custom = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    APP_ORIGINS.contains(&origin.as_str())
        || (url.port().is_none() && APP_ORIGINS.contains(&custom.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_stays_on_the_bundled_pages() {
        for ok in [
            "tauri://localhost/index.html",
            "tauri://localhost/providers?x=1#token=abc",
            "http://tauri.localhost/",
        ] {
            assert!(is_app_page(&Url::parse(ok).unwrap()), "{ok}");
        }
        for no in [
            "https://example.com/",
            "http://127.0.0.1:8788/ui/",
            "tauri://evil.example/",
            "http://tauri.localhost.evil.example/",
            "http://tauri.localhost:8080/",
            "file:///etc/passwd",
        ] {
            assert!(!is_app_page(&Url::parse(no).unwrap()), "{no}");
        }
    }

    #[test]
    fn init_script_sets_the_handoff_for_app_origins_only() {
        let script = init_script("http://127.0.0.1:8788", "ab\"c</script>");
        assert!(script.starts_with(r#"if (["tauri://localhost","http://tauri.localhost"].includes(window.location.origin))"#));
        // Values are JSON-encoded, so a quote in them cannot end the string.
        assert!(script.contains(r#"{"apiBase":"http://127.0.0.1:8788","token":"ab\"c</script>"}"#));
        assert!(script.contains("writable: false"));
    }
}

//! Builds the app's context from `tauri.conf.json` and declares the app's own commands, so
//! the window may call only the ones its capability grants.
//!
//! The window's UI is `ui/dist` (built from `ui/`). A release build without it is an error.
//! Any other build (`cargo clippy`, `cargo test`, a debug run) falls back to the short page
//! in `placeholder-ui/`, so the Rust side can be checked without building the UI first.

use std::path::Path;

/// The app's commands, one permission each (`allow-get-autostart`, …).
const COMMANDS: &[&str] = &[
    "get_autostart",
    "set_autostart",
    "check_update",
    "install_update",
    "update_status",
    "open_logs",
    "tray_figures",
];

const CONFIG_ENV: &str = "TAURI_CONFIG";

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let manifest_dir = Path::new(&manifest_dir);
    let ui_dist = manifest_dir.join("../ui/dist");
    if ui_dist.join("index.html").is_file() {
        println!("cargo:rerun-if-changed={}", ui_dist.display());
    } else {
        // A path that does not exist reruns this script on every build: cheap, and it
        // notices the UI once it is built.
        println!(
            "cargo:rerun-if-changed={}",
            ui_dist.join("index.html").display()
        );
        if std::env::var("PROFILE").as_deref() == Ok("release") {
            eprintln!(
                "error: {} has no index.html: build the UI first (npm --prefix ui ci && npm --prefix ui run build)",
                ui_dist.display()
            );
            // A build script: nothing to flush or shut down.
            #[allow(clippy::disallowed_methods)]
            std::process::exit(1);
        }
        let placeholder = manifest_dir.join("placeholder-ui");
        println!("cargo:rerun-if-changed={}", placeholder.display());
        println!(
            "cargo:warning=ui/dist is not built: this build shows the placeholder page in {}",
            placeholder.display()
        );
        let config = with_frontend_dist(std::env::var(CONFIG_ENV).ok(), &placeholder);
        // Read here by `try_build` and, through rustc's environment, by `generate_context!`.
        // A build script is one thread.
        #[allow(clippy::disallowed_methods)]
        std::env::set_var(CONFIG_ENV, &config);
        println!("cargo:rustc-env={CONFIG_ENV}={config}");
    }

    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(e) = tauri_build::try_build(attributes) {
        eprintln!("error: {e:#}");
        // A build script: nothing to flush or shut down.
        #[allow(clippy::disallowed_methods)]
        std::process::exit(1);
    }
}

/// The config overrides in `TAURI_CONFIG` (the CLI's `--config`), with `build.frontendDist`
/// set to `dist`.
fn with_frontend_dist(overrides: Option<String>, dist: &Path) -> String {
    let mut config = overrides
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::json!({}));
    let dist = serde_json::Value::String(dist.display().to_string());
    match config
        .get_mut("build")
        .and_then(serde_json::Value::as_object_mut)
    {
        Some(build) => {
            build.insert("frontendDist".into(), dist);
        }
        None => {
            config["build"] = serde_json::json!({ "frontendDist": dist });
        }
    }
    config.to_string()
}

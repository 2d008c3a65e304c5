//! The tray icon and its menu: where the gateway listens, open the window, pause the
//! optimizers, quit.

use std::sync::Arc;
use std::time::Duration;

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

use crate::core::Core;
use crate::{lifecycle, window};

const TRAY: &str = "trimgate";
const OPEN: &str = "open";
const PAUSE: &str = "pause";
const QUIT: &str = "quit";

const ICON: Image<'_> = tauri::include_image!("../icons/tray.png");
const ICON_PAUSED: Image<'_> = tauri::include_image!("../icons/tray-paused.png");

/// Menu items whose state changes after start.
pub struct TrayItems<R: Runtime> {
    pause: CheckMenuItem<R>,
}

pub fn create<R: Runtime>(app: &AppHandle<R>, core: &Core) -> tauri::Result<()> {
    let listen = core.listen();
    let status = MenuItem::with_id(
        app,
        "status",
        format!("Listening on http://{listen}"),
        false,
        None::<&str>,
    )?;
    let open = MenuItem::with_id(app, OPEN, "Open window", true, None::<&str>)?;
    let paused = core.paused();
    let pause = CheckMenuItem::with_id(app, PAUSE, "Pause optimizers", true, paused, None::<&str>)?;
    let quit = MenuItem::with_id(app, QUIT, "Quit Trimgate", true, None::<&str>)?;
    let menu = Menu::with_items(
        app,
        &[
            &status,
            &PredefinedMenuItem::separator(app)?,
            &open,
            &pause,
            &PredefinedMenuItem::separator(app)?,
            &quit,
        ],
    )?;
    TrayIconBuilder::with_id(TRAY)
        .icon(icon(paused))
        .tooltip(format!("Trimgate on {listen}"))
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(on_menu_event)
        .build(app)?;
    app.manage(TrayItems { pause });
    follow_pause(app, paused);
    Ok(())
}

/// How often the tray looks at the pause, which the window can change too.
const PAUSE_POLL: Duration = Duration::from_secs(1);

/// Keeps the check mark and the icon on the core's pause, whoever set it.
fn follow_pause<R: Runtime>(app: &AppHandle<R>, mut shown: bool) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let mut tick = tokio::time::interval(PAUSE_POLL);
        loop {
            tick.tick().await;
            let Some(core) = app.try_state::<Arc<Core>>() else {
                return;
            };
            let paused = core.paused();
            if paused != shown {
                show_pause(&app, paused);
                shown = paused;
            }
        }
    });
}

fn show_pause<R: Runtime>(app: &AppHandle<R>, paused: bool) {
    if let Some(items) = app.try_state::<TrayItems<R>>() {
        let _ = items.pause.set_checked(paused);
    }
    if let Some(tray) = app.tray_by_id(TRAY) {
        let _ = tray.set_icon(Some(icon(paused)));
    }
}

fn icon(paused: bool) -> Image<'static> {
    if paused {
        ICON_PAUSED
    } else {
        ICON
    }
}

fn on_menu_event<R: Runtime>(app: &AppHandle<R>, event: MenuEvent) {
    match event.id().as_ref() {
        OPEN => window::show(app),
        PAUSE => toggle_pause(app),
        QUIT => lifecycle::quit(app),
        _ => {}
    }
}

/// Flips the optimizers' pause.
fn toggle_pause<R: Runtime>(app: &AppHandle<R>) {
    let Some(core) = app.try_state::<Arc<Core>>() else {
        return;
    };
    let paused = !core.paused();
    core.set_paused(paused);
    tracing::info!(paused, "optimizers");
    show_pause(app, paused);
}

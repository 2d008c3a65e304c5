//! The tray icon and its menu: where the gateway listens, open the window, pause the
//! optimizers, quit.

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
    // Greyed out while the core cannot pause.
    let paused = core.paused();
    let pause = CheckMenuItem::with_id(
        app,
        PAUSE,
        "Pause optimizers",
        paused.is_some(),
        paused.unwrap_or(false),
        None::<&str>,
    )?;
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
        .icon(icon(paused.unwrap_or(false)))
        .tooltip(format!("Trimgate on {listen}"))
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(on_menu_event)
        .build(app)?;
    app.manage(TrayItems { pause });
    Ok(())
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

/// Flips the optimizers' pause and shows the state the core reports.
fn toggle_pause<R: Runtime>(app: &AppHandle<R>) {
    let (Some(core), Some(items)) = (
        app.try_state::<std::sync::Arc<Core>>(),
        app.try_state::<TrayItems<R>>(),
    ) else {
        return;
    };
    let wanted = !core.paused().unwrap_or(false);
    let now = core.set_paused(wanted).unwrap_or(false);
    tracing::info!(paused = now, "optimizers");
    let _ = items.pause.set_checked(now);
    if let Some(tray) = app.tray_by_id(TRAY) {
        let _ = tray.set_icon(Some(icon(now)));
    }
}

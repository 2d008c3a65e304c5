//! The tray icon and its menu: where the gateway listens, today's figures and the
//! providers' health (informational lines), open the window, show the glance, pause the
//! optimizers, quit.
//!
//! The figures are refreshed on a timer: on Linux the tray (an AppIndicator) reports no
//! click and no menu opening to the app, so there is no moment "when the menu opens".

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

use crate::core::Core;
use crate::figures::{self, Lines};
use crate::{lifecycle, platform, window};

const TRAY: &str = "trimgate";
const OPEN: &str = "open";
const GLANCE: &str = "glance";
const PAUSE: &str = "pause";
const QUIT: &str = "quit";

const ICON: Image<'_> = platform::TRAY_ICON;
const ICON_PAUSED: Image<'_> = platform::TRAY_ICON_PAUSED;

/// How often the tray looks at the pause, which the window can change too.
const PAUSE_POLL: Duration = Duration::from_secs(1);
/// How often today's figures and the providers' health are read again.
const FIGURES_REFRESH: Duration = Duration::from_secs(15);

/// Menu items whose state or text changes after start.
struct TrayItems<R: Runtime> {
    pause: CheckMenuItem<R>,
    glance: CheckMenuItem<R>,
    saved: MenuItem<R>,
    spent: MenuItem<R>,
    providers: Vec<MenuItem<R>>,
}

/// The items, replaced whole when the menu is rebuilt (a provider added or removed).
struct TrayMenu<R: Runtime>(Mutex<Option<TrayItems<R>>>);

pub fn create<R: Runtime>(app: &AppHandle<R>, core: &Core) -> tauri::Result<()> {
    let listen = core.listen();
    let paused = core.paused();
    let lines = tauri::async_runtime::block_on(figures::tray(core)).lines;
    let (menu, items) = build_menu(app, core, &lines)?;
    TrayIconBuilder::with_id(TRAY)
        .icon(icon(paused))
        .icon_as_template(platform::TRAY_ICON_IS_TEMPLATE)
        .tooltip(format!("Trimgate on {listen}"))
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(on_menu_event)
        .build(app)?;
    app.manage(TrayMenu(Mutex::new(Some(items))));
    follow_pause(app, paused);
    refresh_figures(app);
    Ok(())
}

fn build_menu<R: Runtime>(
    app: &AppHandle<R>,
    core: &Core,
    lines: &Lines,
) -> tauri::Result<(Menu<R>, TrayItems<R>)> {
    let info = |id: &str, text: &str| MenuItem::with_id(app, id, text, false, None::<&str>);
    let status = info("status", &format!("Listening on http://{}", core.listen()))?;
    let saved = info("saved", &lines.saved)?;
    let spent = info("spent", &lines.spent)?;
    let providers = lines
        .providers
        .iter()
        .enumerate()
        .map(|(i, line)| info(&format!("provider-{i}"), line))
        .collect::<tauri::Result<Vec<_>>>()?;
    let open = MenuItem::with_id(app, OPEN, "Open window", true, None::<&str>)?;
    let glance = CheckMenuItem::with_id(
        app,
        GLANCE,
        "Show glance",
        true,
        window::glance_shown(app),
        None::<&str>,
    )?;
    let pause = CheckMenuItem::with_id(
        app,
        PAUSE,
        "Pause optimizers",
        true,
        core.paused(),
        None::<&str>,
    )?;
    let quit = MenuItem::with_id(app, QUIT, "Quit Trimgate", true, None::<&str>)?;
    let separators = [
        PredefinedMenuItem::separator(app)?,
        PredefinedMenuItem::separator(app)?,
        PredefinedMenuItem::separator(app)?,
    ];
    let mut entries: Vec<&dyn IsMenuItem<R>> = vec![&status, &separators[0], &saved, &spent];
    entries.extend(providers.iter().map(|p| p as &dyn IsMenuItem<R>));
    entries.extend([
        &separators[1] as &dyn IsMenuItem<R>,
        &open,
        &glance,
        &pause,
        &separators[2],
        &quit,
    ]);
    let menu = Menu::with_items(app, &entries)?;
    let items = TrayItems {
        pause,
        glance,
        saved,
        spent,
        providers,
    };
    Ok((menu, items))
}

/// Reads today's figures again every `FIGURES_REFRESH` and puts them in the menu.
fn refresh_figures<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let mut tick = tokio::time::interval(FIGURES_REFRESH);
        // The first tick is now, and the menu was just built with today's figures.
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(core) = app.try_state::<Arc<Core>>().map(|c| c.inner().clone()) else {
                return;
            };
            // Once a stop begins the ledger closes under the query: nothing left to show.
            if core.stopping() {
                return;
            }
            let lines = figures::tray(&core).await.lines;
            if let Err(e) = show_lines(&app, &core, &lines) {
                tracing::warn!(error = %e, "cannot update the tray menu");
            }
        }
    });
}

/// Sets the informational lines' texts; rebuilds the menu when the number of providers
/// changed (a provider added or removed in the window).
fn show_lines<R: Runtime>(app: &AppHandle<R>, core: &Core, lines: &Lines) -> tauri::Result<()> {
    let Some(menu) = app.try_state::<TrayMenu<R>>() else {
        return Ok(());
    };
    let mut items = menu.0.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(items) = items
        .as_ref()
        .filter(|i| i.providers.len() == lines.providers.len())
    {
        items.saved.set_text(&lines.saved)?;
        items.spent.set_text(&lines.spent)?;
        for (item, line) in items.providers.iter().zip(&lines.providers) {
            item.set_text(line)?;
        }
        return Ok(());
    }
    let (new_menu, new_items) = build_menu(app, core, lines)?;
    if let Some(tray) = app.tray_by_id(TRAY) {
        tray.set_menu(Some(new_menu))?;
    }
    *items = Some(new_items);
    Ok(())
}

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

fn with_items<R: Runtime>(app: &AppHandle<R>, f: impl FnOnce(&TrayItems<R>)) {
    if let Some(menu) = app.try_state::<TrayMenu<R>>() {
        if let Some(items) = menu
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            f(items);
        }
    }
}

fn show_pause<R: Runtime>(app: &AppHandle<R>, paused: bool) {
    with_items(app, |items| {
        let _ = items.pause.set_checked(paused);
    });
    if let Some(tray) = app.tray_by_id(TRAY) {
        let _ = tray.set_icon(Some(icon(paused)));
    }
}

/// Puts the "Show glance" check mark on whether the glance window is shown.
pub fn show_glance_checked<R: Runtime>(app: &AppHandle<R>, shown: bool) {
    with_items(app, |items| {
        let _ = items.glance.set_checked(shown);
    });
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
        GLANCE => toggle_glance(app),
        PAUSE => toggle_pause(app),
        QUIT => lifecycle::quit(app),
        _ => {}
    }
}

/// Shows the glance window, or hides it when it is shown.
fn toggle_glance<R: Runtime>(app: &AppHandle<R>) {
    let Some(core) = app.try_state::<Arc<Core>>() else {
        return;
    };
    let shown = match window::toggle_glance(app, &core) {
        Ok(shown) => shown,
        Err(e) => {
            tracing::warn!(error = %e, "cannot open the glance window");
            false
        }
    };
    show_glance_checked(app, shown);
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

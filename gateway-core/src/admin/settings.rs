//! The settings the window edits outside providers, routes and modes.

use super::*;

/// The listen address in the file, and whether it differs from the one in use (it takes
/// effect at the next start).
pub(super) fn settings_json(state: &AdminState) -> Result<Value, AdminError> {
    let running = state.listening().to_string();
    let written = match &state.admin()?.config_path {
        Some(path) => edit::listen(&edit::read(path, &state.config())?),
        None => None,
    };
    let listen = written.unwrap_or_else(|| running.clone());
    Ok(json!({"listen": listen, "running": running, "restart_needed": listen != running}))
}

pub(super) async fn get_settings(State(state): State<AdminState>) -> Response {
    answer(settings_json(&state).map(|v| reply(StatusCode::OK, &v)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SettingsIn {
    listen: String,
}

pub(super) async fn put_settings(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let SettingsIn { listen } = parse(&body)?;
            edit_config(&state, |doc| {
                edit::set_listen(doc, &listen);
                Ok(())
            })
            .await?;
            ok(settings_json(&state)?)
        }
        .await,
    )
}

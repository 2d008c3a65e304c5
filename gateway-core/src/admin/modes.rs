//! Optimizer modes per model, the pause, and the preview of a sample.

use super::*;

pub(super) fn modes_json(state: &AdminState) -> Result<Value, AdminError> {
    let config = state.config();
    let d = config.optimize.defaults;
    let defaults = ModesEdit {
        tool_output: Some(d.tool_output.map_or("off".into(), |l| l.to_string())),
        terse: Some(d.terse.map_or("off".into(), |t| t.to_string())),
        prune: Some(d.prune.map_or("off".into(), |p| p.to_string())),
        squeeze: Some(d.squeeze),
    };
    let models = match &state.admin()?.config_path {
        Some(path) => edit::model_modes(&edit::read(path, &config)?),
        None => Vec::new(),
    };
    Ok(json!({
        "defaults": defaults,
        "models": models,
        "paused": state.paused.load(Ordering::Relaxed),
    }))
}

pub(super) async fn get_modes(State(state): State<AdminState>) -> Response {
    answer(modes_json(&state).map(|v| reply(StatusCode::OK, &v)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModesIn {
    defaults: ModesEdit,
    #[serde(default)]
    models: Vec<ModelModesEdit>,
}

pub(super) async fn put_modes(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let ModesIn { defaults, models } = parse(&body)?;
            edit_config(&state, |doc| {
                edit::set_modes(doc, &defaults, &models);
                Ok(())
            })
            .await?;
            ok(modes_json(&state)?)
        }
        .await,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PauseIn {
    paused: bool,
}

pub(super) async fn pause(State(state): State<AdminState>, body: Bytes) -> Response {
    answer((|| {
        let PauseIn { paused } = parse(&body)?;
        state.paused.store(paused, Ordering::Relaxed);
        ok(json!({ "paused": paused }))
    })())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PreviewIn {
    text: String,
    #[serde(default = "auto")]
    tool_output: String,
}

pub(super) fn auto() -> String {
    "auto".into()
}

pub(super) async fn preview(body: Bytes) -> Response {
    let result = async {
        let PreviewIn { text, tool_output } = parse(&body)?;
        let mut patch = PlanPatch::default();
        patch
            .set("tool_output", &tool_output)
            .map_err(AdminError::BadRequest)?;
        let level = patch.tool_output.flatten();
        // Counting a large text takes milliseconds: off the async workers.
        let (output, before, after) = tokio::task::spawn_blocking(move || {
            let before = tokens::count(&text);
            let compacted = level.and_then(|l| compact::compact(&text, l));
            match compacted {
                Some(out) => {
                    let after = tokens::count(&out);
                    // The pass keeps a rewrite only when it pays (as in the gateway).
                    if crate::optimize::pays(before, after) {
                        (out, before, after)
                    } else {
                        (text, before, before)
                    }
                }
                None => (text, before, before),
            }
        })
        .await
        .map_err(|e| AdminError::Internal(e.to_string()))?;
        ok(json!({"output": output, "tokens_before": before, "tokens_after": after}))
    }
    .await;
    answer(result)
}

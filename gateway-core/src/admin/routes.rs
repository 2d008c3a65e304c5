//! The ordered `[[routes]]`: read, replaced whole, or patched by match.

use super::*;

pub(super) async fn get_routes(State(state): State<AdminState>) -> Response {
    answer((|| {
        let admin = state.admin()?;
        let routes = match &admin.config_path {
            Some(path) => edit::routes(&edit::read(path, &state.config())?),
            None => Vec::new(),
        };
        ok(json!({ "routes": routes }))
    })())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RoutesIn {
    routes: Vec<RouteEdit>,
}

pub(super) async fn put_routes(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let RoutesIn { routes } = parse(&body)?;
            edit_config(&state, |doc| {
                edit::set_routes(doc, &routes);
                Ok(())
            })
            .await?;
            ok(json!({ "routes": routes }))
        }
        .await,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RoutesPatch {
    /// The `match` of each route to take out; the new routes' own are taken out too.
    #[serde(default)]
    replace: Vec<String>,
    routes: Vec<RouteEdit>,
}

/// Replaces some routes and keeps the rest as written, in one edit (the window's presets
/// use it, so applying one twice does not stack, and nothing another edit wrote in between
/// is lost).
pub(super) async fn patch_routes(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let RoutesPatch { replace, routes } = parse(&body)?;
            let mut after = Vec::new();
            edit_config(&state, |doc| {
                after = edit::replace_routes(doc, &replace, &routes);
                Ok(())
            })
            .await?;
            ok(json!({ "routes": after }))
        }
        .await,
    )
}

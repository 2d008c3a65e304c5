//! Providers' health: which are in rotation, cooling down or being probed, for the window.

use super::*;

/// Every configured provider in config order; one that has not failed since the start is `up`.
pub(super) async fn get_health(State(state): State<AdminState>) -> Response {
    let config = state.config();
    let all = state.health.report_for(
        config.providers.iter().map(|p| p.name.as_str()),
        Instant::now(),
    );
    answer(ok(json!({ "providers": all })))
}

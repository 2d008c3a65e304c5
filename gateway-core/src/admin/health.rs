//! Providers' health: which are in rotation, cooling down or being probed, for the window.

use super::*;
use crate::health::ProviderHealth;

/// Every configured provider in config order; one that has not failed since the start is `up`.
pub(super) async fn get_health(State(state): State<AdminState>) -> Response {
    let config = state.config();
    let mut known: std::collections::HashMap<String, ProviderHealth> = state
        .health
        .report(Instant::now())
        .into_iter()
        .map(|h| (h.provider.clone(), h))
        .collect();
    let all: Vec<ProviderHealth> = config
        .providers
        .iter()
        .map(|p| {
            known.remove(&p.name).unwrap_or_else(|| ProviderHealth {
                provider: p.name.clone(),
                state: "up",
                failures: 0,
                retry_in_secs: None,
            })
        })
        .collect();
    answer(ok(json!({ "providers": all })))
}

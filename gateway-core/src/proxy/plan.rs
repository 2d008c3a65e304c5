//! Stage 2's plan: the steps a request may take (the routed provider, then the route's
//! fallbacks) and, per step, the optimizer passes it runs.

use std::sync::Arc;

use http::HeaderMap;

use crate::config::{GatewayKey, Provider};
use crate::dialect::Dialect;
use crate::error::GatewayError;
use crate::headers::{X_OPTIMIZE, X_RETRY};
use crate::optimize::{Plan, PlanPatch};
use crate::state::{AppState, Runtime};

/// The passes a request runs, or that it is held out of them as a control.
pub(super) struct Planned {
    pub plan: Plan,
    pub held_out: bool,
    /// Mark prompt-cache breakpoints when the request goes to Anthropic without any: on
    /// unless turned off, paused, held out (the control group gets nothing of the
    /// gateway's) or the request says `x-trimgate-optimize: off`.
    pub breakpoints: bool,
}

/// The plan for this request: the model's modes, then the gateway key's, then the header's.
/// A request that names its own modes is never held out.
pub(super) fn plan_for(
    state: &AppState,
    rt: &Runtime,
    model: &str,
    key: Option<&GatewayKey>,
    headers: &HeaderMap,
    dialect: Dialect,
    body: &[u8],
) -> Result<Planned, GatewayError> {
    if state.paused.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(Planned {
            plan: Plan::OFF,
            held_out: false,
            breakpoints: false,
        });
    }
    let modes = &rt.optimizer.modes;
    let mut plan = modes.for_model(model);
    if let Some(key) = key {
        plan.apply(&key.optimize);
    }
    let Some(value) = headers.get(&X_OPTIMIZE) else {
        let held_out = !plan.is_off() && modes.held_out(model, dialect, body);
        return Ok(Planned {
            plan,
            held_out,
            breakpoints: modes.cache_breakpoints && !held_out,
        });
    };
    let text = value
        .to_str()
        .map_err(|_| GatewayError::InvalidOptimizeHeader("not ASCII".into()))?;
    let patch = PlanPatch::from_header(text).map_err(GatewayError::InvalidOptimizeHeader)?;
    plan.apply(&patch);
    Ok(Planned {
        plan,
        held_out: false,
        breakpoints: modes.cache_breakpoints && !text.trim().eq_ignore_ascii_case("off"),
    })
}

/// One step of a request's chain: the routed provider first, then the route's fallbacks.
pub(super) struct Step {
    pub provider: Arc<Provider>,
    /// The model name this step sends.
    pub model: Arc<str>,
}

/// The steps for this request, and how many attempts they may take together. A step on a
/// provider the client may not use is left out, before `x-trimgate-retry: off` keeps only
/// the first: that one attempt goes where the client may be served.
pub(super) fn chain(
    target: &crate::routing::Target<'_, Provider>,
    requested: &str,
    headers: &HeaderMap,
    settings: &crate::retry::Settings,
    may_use: impl Fn(&Provider) -> bool,
) -> (Vec<Step>, u32) {
    let mut steps: Vec<Step> = target
        .steps(requested)
        .filter(|(provider, _)| may_use(provider))
        .map(|(provider, model)| Step {
            provider: provider.clone(),
            model: Arc::from(model),
        })
        .collect();
    let retry_off = headers
        .get(&X_RETRY)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"off"));
    if retry_off {
        steps.truncate(1);
        return (steps, 1);
    }
    (steps, target.max_attempts.unwrap_or(settings.max_attempts))
}

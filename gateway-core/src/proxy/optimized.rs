//! Stage 3, optimize: the passes a step's plan turns on, run on the client's bytes. The
//! exact count of what they saved runs while the request is upstream, and is settled into
//! the record before the answer goes out.

use std::time::Instant;

use bytes::Bytes;

use super::plan::Planned;
use super::Ctx;
use crate::optimize::PassTokens;
use crate::pending::Pending;
use crate::state::AppState;

/// The optimizer's echo: `x-trimgate-applied`, `-saved-bytes`, `-saved-tokens`.
pub(super) struct Optimized {
    pub applied: String,
    pub saved_bytes: i64,
    pub saved_tokens: Option<i64>,
    /// Per pass, exact.
    passes: Vec<PassTokens>,
    /// The exact token count, running while the request is upstream.
    counting: Option<tokio::task::JoinHandle<Vec<PassTokens>>>,
    /// The ids of the blocks rewritten, for the record.
    rewrites: Vec<String>,
}

/// Runs the passes the plan turns on and starts the exact count of what they saved.
pub(super) async fn optimize(
    state: &AppState,
    ctx: &mut Ctx,
    body: &Bytes,
    model: &str,
    plan: &Planned,
) -> Vec<(std::ops::Range<usize>, Vec<u8>)> {
    if plan.held_out {
        ctx.optimized = Some(Optimized {
            applied: HOLDOUT.into(),
            saved_bytes: 0,
            saved_tokens: Some(0),
            passes: Vec::new(),
            counting: None,
            rewrites: Vec::new(),
        });
        return Vec::new();
    }
    let outcome = if body.len() < OFF_THREAD_BYTES {
        ctx.rt.optimizer.run(ctx.dialect(), body, model, &plan.plan)
    } else {
        // Milliseconds of work: a blocking thread, so other requests on this worker go on.
        let (optimizer, body, model, plan, dialect) = (
            ctx.rt.optimizer.clone(),
            body.clone(),
            model.to_owned(),
            plan.plan,
            ctx.dialect(),
        );
        tokio::task::spawn_blocking(move || optimizer.run(dialect, &body, &model, &plan))
            .await
            .unwrap_or_default()
    };
    // Each rewritten block's id, once: the record names them, and the ledger keeps those a
    // marker points at.
    let rewrites: Vec<String> = outcome
        .changes
        .iter()
        .map(|c| crate::optimize::originals::id(&c.hash))
        .collect();
    // What a marker says is kept must outlive this process's memory: into the ledger.
    if let Some(db) = state.originals_db() {
        for (change, id) in outcome
            .changes
            .iter()
            .zip(&rewrites)
            .filter(|(c, _)| c.replacement.contains("/originals/"))
        {
            db.keep(crate::ledger::originals::Kept {
                id: id.clone(),
                pass: change.pass,
                original: change.original.clone(),
            });
        }
    }
    let counting = (!outcome.changes.is_empty() || outcome.added.is_some()).then(|| {
        let optimizer = ctx.rt.optimizer.clone();
        let applied = outcome.for_counting();
        tokio::task::spawn_blocking(move || applied.exact_tokens(&optimizer.shared.counts))
    });
    ctx.optimized = Some(Optimized {
        applied: outcome.applied_header(),
        saved_bytes: outcome.saved_bytes,
        saved_tokens: if counting.is_some() { None } else { Some(0) },
        passes: Vec::new(),
        counting,
        rewrites,
    });
    outcome.edits
}

/// Bodies from this size are optimized on a blocking thread.
pub(super) const OFF_THREAD_BYTES: usize = 64 * 1024;

/// `x-trimgate-applied` for a request of the control group.
const HOLDOUT: &str = "holdout";

/// Waits for the exact count of saved tokens (it ran while the request was upstream).
pub(super) async fn settle_savings(ctx: &mut Ctx, pending: &mut Pending) {
    let Some(o) = &mut ctx.optimized else {
        return;
    };
    if let Some(task) = o.counting.take() {
        let waited = Instant::now();
        if let Ok(passes) = task.await {
            o.saved_tokens = Some(PassTokens::saved(&passes));
            o.passes = passes;
        }
        ctx.overhead += waited.elapsed();
    }
    let record = pending.record();
    record.applied.clone_from(&o.applied);
    record.saved_bytes = o.saved_bytes;
    record.saved_tokens = o.saved_tokens.unwrap_or(0);
    record.passes.clone_from(&o.passes);
    record.rewrites.clone_from(&o.rewrites);
}

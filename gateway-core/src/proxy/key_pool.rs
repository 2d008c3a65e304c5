//! Which key of a provider's pool an attempt goes out with: a session sticks to one key,
//! and moves only while that key cools down.

use std::time::Instant;

use crate::config::Provider;
use crate::state::AppState;

/// The session a request belongs to, for keeping it on one key: the agent's session header,
/// else Claude Code's `metadata.user_id` (which ends in its session id) or Codex's
/// `prompt_cache_key`, else the first user message, which a conversation keeps.
pub(super) fn session_of(header: Option<&str>, body: &[u8]) -> Option<u64> {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(borrow)]
        user_id: Option<std::borrow::Cow<'a, str>>,
    }
    #[derive(serde::Deserialize)]
    struct Ids<'a> {
        #[serde(borrow)]
        metadata: Option<Meta<'a>>,
        #[serde(borrow)]
        prompt_cache_key: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        messages: Option<Vec<&'a RawValue>>,
        #[serde(borrow)]
        input: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Role<'a> {
        #[serde(borrow)]
        role: Option<std::borrow::Cow<'a, str>>,
    }
    if let Some(id) = header {
        return Some(crate::keys::session_hash(id));
    }
    let ids: Ids<'_> = serde_json::from_slice(body).ok()?;
    if let Some(id) = ids
        .metadata
        .and_then(|m| m.user_id)
        .or(ids.prompt_cache_key)
        .filter(|id| !id.is_empty())
    {
        return Some(crate::keys::session_hash(&id));
    }
    let items = match (ids.messages, ids.input) {
        (Some(messages), _) => messages,
        (None, Some(input)) if input.get().starts_with('[') => {
            serde_json::from_str(input.get()).ok()?
        }
        (None, Some(text)) => return Some(crate::keys::session_hash(text.get())),
        (None, None) => return None,
    };
    items
        .iter()
        .find(|m| {
            serde_json::from_str::<Role<'_>>(m.get())
                .ok()
                .and_then(|r| r.role)
                .is_some_and(|r| r == "user")
        })
        .map(|m| crate::keys::session_hash(m.get()))
}

/// The pool key for this request at `provider`: `Ok(None)` without a pool, `Err` when
/// every key of it is cooling down.
pub(super) fn pool_key(
    state: &AppState,
    provider: &Provider,
    session: Option<u64>,
    settings: &crate::retry::Settings,
) -> Result<Option<usize>, ()> {
    if provider.pool.is_empty() {
        return Ok(None);
    }
    let now = Instant::now();
    let turn = state.health.next_turn(&provider.name);
    crate::keys::pick(provider.pool.len(), session, turn, |i| {
        let target = key_target(&provider.name, &provider.pool[i].name);
        !state.health.cooling(&target, settings, now)
    })
    .map(Some)
    .ok_or(())
}

/// The health entry of one key of a provider's pool.
pub(super) fn key_target(provider: &str, key: &str) -> String {
    format!("{provider}#{key}")
}

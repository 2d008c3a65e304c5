//! Which key of a provider's pool serves a request: a pure decision. A session keeps its
//! key, so its prompt cache stays warm and the encrypted reasoning a key produced is sent
//! back to the same key; it moves only when that key is out of rotation, and always to the
//! same next one. Requests without a session spread round-robin.

use std::hash::Hasher;

/// A session id as a number to pick a key by: the same on every run of the gateway.
pub fn session_hash(session: &str) -> u64 {
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(session.as_bytes());
    hasher.finish()
}

/// The key for a request: the session's own when it is `usable`, else the next usable
/// one after it; without a session, the next in turn. `None` when no key is usable.
pub fn pick(
    keys: usize,
    session: Option<u64>,
    turn: usize,
    usable: impl Fn(usize) -> bool,
) -> Option<usize> {
    if keys == 0 {
        return None;
    }
    let start = match session {
        Some(hash) => (hash % keys as u64) as usize,
        None => turn % keys,
    };
    (0..keys).map(|i| (start + i) % keys).find(|&i| usable(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_keeps_its_key_and_moves_only_while_it_is_out() {
        let session = Some(session_hash("session-a"));
        let own = pick(3, session, 0, |_| true).unwrap();
        for turn in 0..10 {
            assert_eq!(
                pick(3, session, turn, |_| true),
                Some(own),
                "turns do not move it"
            );
        }
        let moved = pick(3, session, 0, |i| i != own).unwrap();
        assert_ne!(moved, own);
        assert_eq!(moved, (own + 1) % 3, "always to the same next key");
        assert_eq!(
            pick(3, session, 5, |_| true),
            Some(own),
            "and back when it is in again"
        );
        assert_eq!(pick(3, session, 0, |_| false), None);
    }

    #[test]
    fn requests_without_a_session_take_turns() {
        let picked: Vec<_> = (0..6)
            .map(|t| pick(3, None, t, |_| true).unwrap())
            .collect();
        assert_eq!(picked, [0, 1, 2, 0, 1, 2]);
        assert_eq!(pick(3, None, 1, |i| i != 1), Some(2));
        assert_eq!(pick(0, None, 0, |_| true), None);
    }

    #[test]
    fn sessions_spread_over_the_keys() {
        let mut counts = [0usize; 4];
        for i in 0..400 {
            let s = Some(session_hash(&format!("session-{i}")));
            counts[pick(4, s, 0, |_| true).unwrap()] += 1;
        }
        assert!(counts.iter().all(|&c| c > 60), "{counts:?}");
    }
}

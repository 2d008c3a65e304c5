//! Request bodies kept for the window's request detail, only while the user has it on
//! (`[admin] keep_request_bodies`, or the switch in the window's Settings): what the
//! client sent and what each provider got, in this process's memory, bounded, gone at
//! exit. Off, nothing is kept and a request pays one atomic load.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use serde::Serialize;

use crate::dialect::Dialect;

/// Requests kept at most, whatever their size.
pub const MAX_REQUESTS: usize = 200;

/// What was kept of one request.
#[derive(Clone, Debug)]
pub struct Kept {
    pub id: String,
    pub client_dialect: Dialect,
    pub client: Bytes,
    /// What each provider got, one per step of the chain that was prepared.
    pub sent: Vec<Sent>,
}

#[derive(Clone, Debug)]
pub struct Sent {
    pub provider: String,
    pub dialect: Dialect,
    pub body: Bytes,
}

/// The store's size, for the window.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Usage {
    pub on: bool,
    pub requests: usize,
    pub bytes: usize,
    pub max_bytes: usize,
}

pub struct Bodies {
    on: AtomicBool,
    max_bytes: usize,
    kept: Mutex<Store>,
}

#[derive(Default)]
struct Store {
    entries: VecDeque<Kept>,
    bytes: usize,
}

impl Bodies {
    pub fn new(on: bool, max_bytes: usize) -> Bodies {
        Bodies {
            on: AtomicBool::new(on),
            max_bytes,
            kept: Mutex::new(Store::default()),
        }
    }

    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Turns keeping on or off; off forgets everything kept.
    pub fn set(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
        if !on {
            if let Ok(mut store) = self.kept.lock() {
                *store = Store::default();
            }
        }
    }

    pub fn usage(&self) -> Usage {
        let (requests, bytes) = self
            .kept
            .lock()
            .map(|s| (s.entries.len(), s.bytes))
            .unwrap_or_default();
        Usage {
            on: self.is_on(),
            requests,
            bytes,
            max_bytes: self.max_bytes,
        }
    }

    /// Keeps what `provider` is about to get for request `id`, with the client's body the
    /// first time the request is seen. The bytes are shared, not copied.
    pub fn keep(&self, id: &str, client_dialect: Dialect, client: &Bytes, sent: Sent) {
        if !self.is_on() {
            return;
        }
        let Ok(mut store) = self.kept.lock() else {
            return;
        };
        store.bytes += sent.body.len();
        if let Some(entry) = store.entries.iter_mut().rev().find(|e| e.id == id) {
            entry.sent.push(sent);
        } else {
            store.bytes += client.len();
            store.entries.push_back(Kept {
                id: id.to_owned(),
                client_dialect,
                client: client.clone(),
                sent: vec![sent],
            });
        }
        // The newest request stays even when it alone is over the bound.
        while store.entries.len() > 1
            && (store.bytes > self.max_bytes || store.entries.len() > MAX_REQUESTS)
        {
            if let Some(old) = store.entries.pop_front() {
                store.bytes -=
                    old.client.len() + old.sent.iter().map(|s| s.body.len()).sum::<usize>();
            }
        }
    }

    pub fn get(&self, id: &str) -> Option<Kept> {
        let store = self.kept.lock().ok()?;
        store.entries.iter().rev().find(|e| e.id == id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(body: &'static str) -> Sent {
        Sent {
            provider: "p".into(),
            dialect: Dialect::OpenAiChat,
            body: Bytes::from_static(body.as_bytes()),
        }
    }

    #[test]
    fn nothing_is_kept_while_off() {
        let bodies = Bodies::new(false, 1 << 20);
        bodies.keep(
            "a",
            Dialect::AnthropicMessages,
            &Bytes::from_static(b"{}"),
            sent("{}"),
        );
        assert!(bodies.get("a").is_none());
        assert_eq!(bodies.usage().requests, 0);
    }

    #[test]
    fn steps_of_one_request_are_kept_together() {
        let bodies = Bodies::new(true, 1 << 20);
        let client = Bytes::from_static(b"{\"model\":\"m\"}");
        bodies.keep("a", Dialect::AnthropicMessages, &client, sent("first"));
        bodies.keep("a", Dialect::AnthropicMessages, &client, sent("second"));
        let kept = bodies.get("a").unwrap();
        assert_eq!(kept.client, client);
        assert_eq!(kept.sent.len(), 2);
        assert_eq!(bodies.usage().bytes, client.len() + 11);
    }

    #[test]
    fn the_oldest_go_first_past_the_bound_and_off_forgets_all() {
        let bodies = Bodies::new(true, 40);
        let client = Bytes::from_static(b"0123456789");
        for id in ["a", "b", "c"] {
            bodies.keep(id, Dialect::OpenAiChat, &client, sent("0123456789"));
        }
        assert!(bodies.get("a").is_none());
        assert!(bodies.get("b").is_some() && bodies.get("c").is_some());
        assert_eq!(bodies.usage().bytes, 40);
        bodies.set(false);
        assert!(bodies.get("c").is_none());
        assert_eq!(bodies.usage().bytes, 0);
    }
}

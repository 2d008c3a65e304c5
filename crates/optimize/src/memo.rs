//! Bounded memory of work already done on a block, by the block's hash. Agents resend the
//! whole history every turn, so all but the newest blocks were seen on the turn before;
//! remembering costs a hash, recomputing costs milliseconds. A memo never changes a
//! result, only how fast it comes.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Mutex;

/// Remembers up to `max_entries` values and `max_bytes` of their weight; oldest out first.
pub struct Memo<K, V> {
    inner: Mutex<Inner<K, V>>,
    max_entries: usize,
    max_bytes: usize,
}

struct Inner<K, V> {
    values: HashMap<K, (V, usize)>,
    order: VecDeque<K>,
    bytes: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Memo<K, V> {
    pub fn new(max_entries: usize, max_bytes: usize) -> Memo<K, V> {
        Memo {
            inner: Mutex::new(Inner {
                values: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
            max_entries,
            max_bytes,
        }
    }

    pub fn get(&self, key: &K) -> Option<V> {
        let inner = self.inner.lock().ok()?;
        inner.values.get(key).map(|(v, _)| v.clone())
    }

    /// Keeps `value`, which weighs `bytes`, under `key`; returns how many older values
    /// went to make room.
    pub fn put(&self, key: K, value: V, bytes: usize) -> usize {
        if bytes > self.max_bytes {
            return 0;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return 0;
        };
        if inner.values.contains_key(&key) {
            return 0;
        }
        let mut evicted = 0;
        while inner.order.len() >= self.max_entries || inner.bytes + bytes > self.max_bytes {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            if let Some((_, weight)) = inner.values.remove(&old) {
                inner.bytes -= weight;
                evicted += 1;
            }
        }
        inner.bytes += bytes;
        inner.order.push_back(key.clone());
        inner.values.insert(key, (value, bytes));
        evicted
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map(|i| i.values.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_by_entries_and_by_bytes() {
        let memo: Memo<u32, &str> = Memo::new(2, 100);
        memo.put(1, "a", 10);
        memo.put(2, "b", 10);
        memo.put(3, "c", 10);
        assert_eq!((memo.get(&1), memo.get(&3)), (None, Some("c")));
        memo.put(4, "d", 95);
        assert_eq!(
            (memo.get(&2), memo.get(&3), memo.get(&4)),
            (None, None, Some("d"))
        );
        memo.put(5, "too big", 101);
        assert_eq!(memo.get(&5), None);
    }
}

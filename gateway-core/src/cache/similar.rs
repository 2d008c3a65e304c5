//! The similar-request index: a question asked again in other words finds the answer to
//! the first one. Requests are compared by the set of words in their text (Jaccard), only
//! against stored requests of the same shape (same provider, model, parameters, tools and
//! sequence of roles — see [`super::Shape`]), so a longer history or another tool list
//! never matches.
//!
//! A lookup scans every live entry, so its cost is the cache's size. Three exact bounds
//! keep the scan to integer tests for almost every entry: the shape hash; the set sizes
//! (the score is at most small/large); and a 64-bit signature with one bit per word, whose
//! common bits cap the intersection. A pruned entry could not have reached the threshold,
//! so the bounds change no answer; only the few that pass are intersected exactly, as
//! sorted lists of word hashes.

use std::hash::Hasher;

/// A request's words: distinct word hashes, sorted, and their signature.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Words {
    pub hashes: Vec<u64>,
    pub signature: u64,
}

fn bit(hash: u64) -> u64 {
    1 << (hash >> 58)
}

impl Words {
    /// The distinct words of `texts`, case-folded; a word is a run of letters and digits.
    pub fn of<'a>(texts: impl IntoIterator<Item = &'a str>) -> Words {
        let mut hashes = Vec::new();
        let mut word = fnv::FnvHasher::default();
        let mut in_word = false;
        for text in texts {
            for c in text.chars() {
                if c.is_alphanumeric() {
                    for lower in c.to_lowercase() {
                        let mut buf = [0u8; 4];
                        word.write(lower.encode_utf8(&mut buf).as_bytes());
                    }
                    in_word = true;
                } else if in_word {
                    hashes.push(word.finish());
                    word = fnv::FnvHasher::default();
                    in_word = false;
                }
            }
            if in_word {
                hashes.push(word.finish());
                word = fnv::FnvHasher::default();
                in_word = false;
            }
        }
        Words::from_hashes(hashes)
    }

    /// Normalizes word hashes (sorted, distinct) and derives the signature; also how a
    /// stored entry is read back, so an entry can never carry a stale signature.
    pub fn from_hashes(mut hashes: Vec<u64>) -> Words {
        hashes.sort_unstable();
        hashes.dedup();
        let signature = hashes.iter().fold(0, |sig, h| sig | bit(*h));
        Words { hashes, signature }
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// How many words two sorted sets share.
    fn shared(&self, other: &[u64]) -> usize {
        let (mut i, mut j, mut n) = (0, 0, 0);
        let a = &self.hashes;
        while i < a.len() && j < other.len() {
            match a[i].cmp(&other[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    n += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        n
    }
}

/// Entries of the index, stored column-wise so the scan reads only what it tests.
#[derive(Default)]
pub struct Index {
    shapes: Vec<u64>,
    sizes: Vec<u32>,
    signatures: Vec<u64>,
    expires: Vec<i64>,
    words: Vec<Box<[u64]>>,
    /// Each entry's key in the exact cache, which owns the answer.
    keys: Vec<super::Key>,
}

/// A similar entry that was found: its key and score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Found {
    pub key: super::Key,
    pub score: f64,
}

impl Index {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Adds an entry; returns its slot.
    pub fn push(&mut self, shape: u64, words: &Words, expires_ms: i64, key: super::Key) -> usize {
        self.shapes.push(shape);
        self.sizes.push(words.len() as u32);
        self.signatures.push(words.signature);
        self.expires.push(expires_ms);
        self.words.push(words.hashes.clone().into_boxed_slice());
        self.keys.push(key);
        self.keys.len() - 1
    }

    /// Removes the entry in `slot`; the last entry moves into it, and its key is returned
    /// so the owner can update where it points.
    pub fn swap_remove(&mut self, slot: usize) -> Option<super::Key> {
        if slot >= self.keys.len() {
            return None;
        }
        self.shapes.swap_remove(slot);
        self.sizes.swap_remove(slot);
        self.signatures.swap_remove(slot);
        self.expires.swap_remove(slot);
        self.words.swap_remove(slot);
        self.keys.swap_remove(slot);
        self.keys.get(slot).copied()
    }

    /// The best live entry of `shape` whose words score at least `threshold` against
    /// `query` (ties go to the newer entry).
    pub fn find(&self, shape: u64, query: &Words, threshold: f64, now_ms: i64) -> Option<Found> {
        if query.is_empty() {
            return None;
        }
        // Query words per signature bit: the bits a candidate shares bound the overlap.
        let mut per_bit = [0u32; 64];
        for h in &query.hashes {
            per_bit[(h >> 58) as usize] += 1;
        }
        let q = query.len() as f64;
        let mut best: Option<Found> = None;
        for i in 0..self.shapes.len() {
            if self.shapes[i] != shape {
                continue;
            }
            let c = f64::from(self.sizes[i]);
            // Jaccard ≤ min/max.
            if q.min(c) < threshold * q.max(c) {
                continue;
            }
            // Jaccard = I / (q + c − I) ≥ t  ⇔  I ≥ t (q + c) / (1 + t).
            let need = threshold * (q + c) / (1.0 + threshold);
            let mut common = query.signature & self.signatures[i];
            let mut bound = 0u32;
            while common != 0 {
                bound += per_bit[common.trailing_zeros() as usize];
                common &= common - 1;
            }
            if f64::from(bound) < need || self.expires[i] <= now_ms {
                continue;
            }
            let shared = query.shared(&self.words[i]) as f64;
            let score = shared / (q + c - shared);
            if score >= threshold && best.is_none_or(|b| score >= b.score) {
                best = Some(Found {
                    key: self.keys[i],
                    score,
                });
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> super::super::Key {
        [n; 32]
    }

    #[test]
    fn words_are_distinct_case_folded_and_split_on_punctuation() {
        let a = Words::of(["What is the capital of France?"]);
        let b = Words::of(["what IS the capital of  france", "capital"]);
        assert_eq!(a, b);
        assert_eq!(a.len(), 6);
        assert!(Words::of(["", "  ,. "]).is_empty());
        // Words do not run across texts.
        assert_eq!(Words::of(["ab", "cd"]).len(), 2);
    }

    #[test]
    fn finds_a_near_duplicate_and_rejects_the_rest() {
        let mut index = Index::default();
        let base = "please explain how the borrow checker decides when a mutable reference may be taken twice in one function";
        index.push(7, &Words::of([base]), i64::MAX, key(1));
        index.push(7, &Words::of(["an entirely different question about sourdough bread baking at home with rye flour"]), i64::MAX, key(2));
        index.push(8, &Words::of([base]), i64::MAX, key(3));
        // One word more: 18/19 ≈ 0.947.
        let query = Words::of([&format!("{base} carefully")[..]]);
        let found = index.find(7, &query, 0.9, 0).unwrap();
        assert_eq!(found.key, key(1));
        assert!((found.score - 18.0 / 19.0).abs() < 1e-9);
        // Another shape never matches, however close the words.
        assert_eq!(index.find(9, &query, 0.9, 0), None);
        // Below the threshold.
        let far = Words::of(["please explain how the borrow checker works"]);
        assert_eq!(index.find(7, &far, 0.9, 0), None);
        // Expired entries do not answer.
        assert_eq!(index.find(7, &query, 0.9, i64::MAX), None);
    }

    #[test]
    fn swap_remove_reports_the_moved_key() {
        let mut index = Index::default();
        for n in 0..3 {
            index.push(1, &Words::of(["x"]), i64::MAX, key(n));
        }
        assert_eq!(index.swap_remove(0), Some(key(2)));
        assert_eq!(index.swap_remove(1), None);
        assert_eq!(index.len(), 1);
    }

    /// The bounds are exact: the pruned scan answers as a plain scan would.
    #[test]
    fn pruning_changes_no_answer() {
        use proptest::prelude::*;
        let vocab: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let words = proptest::collection::vec(0usize..40, 1..20);
        proptest!(ProptestConfig::with_cases(300), |(entries in proptest::collection::vec(words.clone(), 1..30), query in words, t in 0.5f64..1.0)| {
            let mut index = Index::default();
            let sets: Vec<Words> = entries.iter().map(|e| Words::of(e.iter().map(|i| vocab[*i].as_str()))).collect();
            for (n, w) in sets.iter().enumerate() {
                index.push(1, w, i64::MAX, key(n as u8));
            }
            let q = Words::of(query.iter().map(|i| vocab[*i].as_str()));
            let plain = sets.iter().enumerate().filter_map(|(n, w)| {
                let shared = q.shared(&w.hashes) as f64;
                let score = shared / (q.len() as f64 + w.len() as f64 - shared);
                (score >= t).then_some((n, score))
            }).fold(None::<(usize, f64)>, |best, (n, s)| match best {
                Some((_, b)) if b > s => best,
                _ => Some((n, s)),
            });
            let found = index.find(1, &q, t, 0);
            prop_assert_eq!(found.map(|f| f.key), plain.map(|(n, _)| key(n as u8)));
        });
    }
}

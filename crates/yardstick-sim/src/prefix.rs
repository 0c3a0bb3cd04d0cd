//! Prefix caching, as vLLM's automatic prefix caching does it: a prompt is cut into blocks of
//! [`BLOCK_TOKENS`] tokens, each block is named by a hash of itself and every block before it,
//! and the leading blocks already in the cache need no prefill. The simulator charges its
//! per-prompt-token time to first token only for the uncached tokens.
//!
//! The cache holds up to a configured number of tokens (whole blocks), evicting the least
//! recently used block first. Only prompt tokens are cached (vLLM also caches the blocks of
//! generated tokens; a multi-turn client that sends the reply back as the next turn's history
//! finds it as prompt blocks written by the previous turn only if the reply text is the same).

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use serde_json::Value;

use crate::openai::Api;

/// Tokens per cache block (vLLM's default block size).
pub const BLOCK_TOKENS: u64 = 16;

/// The chained hashes of a prompt's full blocks, in order: hash `k` names blocks `0..=k`.
/// Tokens are the simulator's (whitespace-separated words, see [`crate::openai`]); a chat
/// request's messages are read in order with their roles, so the same words under another role
/// are another prefix.
pub fn block_hashes(api: Api, body: &[u8]) -> Vec<u64> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    // Each item: a word, and whether it is a token (a role marker shapes the hash only).
    let mut items: Vec<(&str, bool)> = Vec::new();
    fn texts<'a>(v: &'a Value, out: &mut Vec<(&'a str, bool)>) {
        match v {
            Value::String(s) => out.extend(s.split_whitespace().map(|w| (w, true))),
            Value::Array(a) => a.iter().for_each(|p| texts(p, out)),
            Value::Object(o) => {
                if let Some(t) = o.get("text") {
                    texts(t, out)
                }
            }
            _ => {}
        }
    }
    match api {
        Api::Chat => {
            for m in v["messages"].as_array().into_iter().flatten() {
                items.push(("\u{0}role", false));
                items.push((m["role"].as_str().unwrap_or(""), false));
                texts(&m["content"], &mut items);
            }
        }
        Api::Completions => texts(&v["prompt"], &mut items),
        Api::Embeddings => return Vec::new(),
    }
    let mut hashes = Vec::new();
    let mut h = DefaultHasher::new();
    let mut in_block = 0;
    for (w, token) in items {
        w.hash(&mut h);
        if !token {
            continue;
        }
        in_block += 1;
        if in_block == BLOCK_TOKENS {
            let k = h.finish();
            hashes.push(k);
            h = DefaultHasher::new();
            k.hash(&mut h);
            in_block = 0;
        }
    }
    hashes
}

/// A least-recently-used cache of prompt blocks.
#[derive(Debug)]
pub struct PrefixCache {
    capacity_blocks: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    tick: u64,
    /// Block hash → when it was last used.
    used: HashMap<u64, u64>,
    /// When last used → block hash (the oldest first).
    by_age: BTreeMap<u64, u64>,
}

impl PrefixCache {
    /// A cache of `capacity_tokens` tokens (rounded down to whole blocks).
    pub fn new(capacity_tokens: u64) -> Self {
        PrefixCache {
            capacity_blocks: (capacity_tokens / BLOCK_TOKENS) as usize,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Looks a prompt's blocks up and then caches them all: returns the number of prompt
    /// tokens found cached (the leading blocks present, times [`BLOCK_TOKENS`]).
    pub fn lookup_and_insert(&self, hashes: &[u64]) -> u64 {
        if self.capacity_blocks == 0 {
            return 0;
        }
        let mut g = self.inner.lock().expect("prefix cache lock");
        let hit = hashes.iter().take_while(|h| g.used.contains_key(h)).count();
        for &h in hashes {
            g.tick += 1;
            let t = g.tick;
            if let Some(old) = g.used.insert(h, t) {
                g.by_age.remove(&old);
            }
            g.by_age.insert(t, h);
        }
        while g.used.len() > self.capacity_blocks {
            let Some((_, h)) = g.by_age.pop_first() else {
                break;
            };
            g.used.remove(&h);
        }
        hit as u64 * BLOCK_TOKENS
    }

    /// Blocks held now.
    pub fn blocks(&self) -> usize {
        self.inner.lock().expect("prefix cache lock").used.len()
    }

    /// Capacity in blocks.
    pub fn capacity_blocks(&self) -> usize {
        self.capacity_blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(msgs: &[(&str, &str)]) -> Vec<u8> {
        let m: Vec<Value> = msgs
            .iter()
            .map(|(r, c)| serde_json::json!({"role": r, "content": c}))
            .collect();
        serde_json::to_vec(&serde_json::json!({"model": "m", "messages": m})).unwrap()
    }

    fn words(n: usize, tag: &str) -> String {
        (0..n)
            .map(|i| format!("{tag}{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn shared_prefixes_hash_alike_and_stop_at_the_first_difference() {
        let sys = words(40, "s");
        let a = block_hashes(
            Api::Chat,
            &chat(&[("system", &sys), ("user", &words(20, "a"))]),
        );
        let b = block_hashes(
            Api::Chat,
            &chat(&[("system", &sys), ("user", &words(20, "b"))]),
        );
        assert_eq!(a.len(), 3); // 60 tokens: three full blocks
        assert_eq!(a[..2], b[..2]); // the 32 system tokens of whole blocks
        assert_ne!(a[2], b[2]);
        // The same words as a user message are another prefix.
        let c = block_hashes(Api::Chat, &chat(&[("user", &sys)]));
        assert_ne!(a[0], c[0]);
    }

    #[test]
    fn the_cache_counts_leading_hits_and_evicts_the_least_recently_used() {
        let cache = PrefixCache::new(3 * BLOCK_TOKENS + 5);
        assert_eq!(cache.capacity_blocks(), 3);
        assert_eq!(cache.lookup_and_insert(&[1, 2, 3]), 0);
        assert_eq!(cache.lookup_and_insert(&[1, 2, 9]), 2 * BLOCK_TOKENS);
        // Four distinct blocks were seen; the least recently used (3) is gone.
        assert_eq!(cache.blocks(), 3);
        assert_eq!(cache.lookup_and_insert(&[1, 2, 3]), 2 * BLOCK_TOKENS);
        // A hole stops the count: later blocks depend on the earlier ones.
        assert_eq!(cache.lookup_and_insert(&[7, 2, 3]), 0);
        assert_eq!(PrefixCache::new(0).lookup_and_insert(&[1]), 0);
    }
}

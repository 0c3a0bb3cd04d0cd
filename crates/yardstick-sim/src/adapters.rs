//! LoRA adapters: a base model served with adapters loaded on demand into a few slots.
//!
//! With [`crate::SimConfig::adapters`] above 0, a request whose `model` is not the simulator's
//! own name ([`crate::SimConfig::model`], the base) asks for an adapter. Up to `adapters`
//! distinct adapter names are served (each name registers on first use, as a server started
//! with that many `--lora-modules` would serve them; a further name is answered 404). At most
//! `max_loaded` adapters are loaded at once, kept least-recently-used: a request whose adapter
//! is loaded starts at once (or when its load, still under way, ends); one whose adapter is not
//! loaded evicts the least recently used adapter and waits `load` while its own loads, time
//! charged to its time to first token. Requests for the base model never wait. Loads overlap
//! (each takes `load` from when it started), and an adapter in use by running requests may be
//! evicted (they finish with it): a simplification of servers that pin adapters in use.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a request for a model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The base model (or adapters are off): no wait.
    Base,
    /// An adapter, ready at this instant (now or earlier when it was loaded; later while it
    /// loads). `loaded` says whether this request started the load.
    Adapter {
        /// When the adapter is ready.
        ready: Instant,
        /// Whether this request's arrival started a load.
        loaded: bool,
    },
    /// More distinct adapter names than the simulator serves.
    Unknown,
}

#[derive(Debug)]
struct Slot {
    name: String,
    ready: Instant,
    used: u64,
}

/// The least-recently-used set of loaded adapters (see the module docs).
#[derive(Debug)]
pub struct AdapterLru {
    capacity: usize,
    served: usize,
    known: Vec<String>,
    loaded: Vec<Slot>,
    tick: u64,
}

impl AdapterLru {
    /// Serves `served` distinct adapters with `capacity` (at least 1) loaded at once.
    pub fn new(served: usize, capacity: usize) -> Self {
        AdapterLru {
            capacity: capacity.max(1),
            served,
            known: Vec::new(),
            loaded: Vec::new(),
            tick: 0,
        }
    }

    /// Whether the adapter `name` is served (registering it while there is room).
    pub fn admit(&mut self, name: &str) -> bool {
        if self.known.iter().any(|k| k == name) {
            return true;
        }
        if self.known.len() < self.served {
            self.known.push(name.to_string());
            return true;
        }
        false
    }

    /// Uses adapter `name` at `now`: when it is ready, loading it (taking `load`, evicting
    /// the least recently used) when it is not loaded.
    pub fn acquire(&mut self, name: &str, now: Instant, load: Duration) -> Access {
        if !self.admit(name) {
            return Access::Unknown;
        }
        self.tick += 1;
        if let Some(s) = self.loaded.iter_mut().find(|s| s.name == name) {
            s.used = self.tick;
            return Access::Adapter {
                ready: s.ready,
                loaded: false,
            };
        }
        if self.loaded.len() >= self.capacity
            && let Some(k) = self
                .loaded
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k)
        {
            self.loaded.swap_remove(k);
        }
        let ready = now + load;
        self.loaded.push(Slot {
            name: name.to_string(),
            ready,
            used: self.tick,
        });
        Access::Adapter {
            ready,
            loaded: true,
        }
    }

    /// The adapters loaded now, most recently used first.
    pub fn loaded(&self) -> Vec<&str> {
        let mut v: Vec<&Slot> = self.loaded.iter().collect();
        v.sort_by_key(|s| std::cmp::Reverse(s.used));
        v.into_iter().map(|s| s.name.as_str()).collect()
    }
}

/// The simulator's adapters: the base model's name and the shared LRU.
#[derive(Debug)]
pub struct Adapters {
    base: String,
    load: Duration,
    lru: Option<Mutex<AdapterLru>>,
}

impl Adapters {
    /// Adapters of base model `base`: `served` of them (0: adapters off, every model name is
    /// served alike), `max_loaded` at once (0: all of them), each taking `load` to load.
    pub fn new(base: &str, served: usize, max_loaded: usize, load: Duration) -> Self {
        let capacity = if max_loaded == 0 { served } else { max_loaded };
        Adapters {
            base: base.to_string(),
            load,
            lru: (served > 0).then(|| Mutex::new(AdapterLru::new(served, capacity))),
        }
    }

    /// Whether a request for `model` is served at all (registering a new adapter name).
    pub fn admit(&self, model: Option<&str>) -> bool {
        match (&self.lru, model) {
            (Some(lru), Some(m)) if m != self.base => lru.lock().expect("adapter lock").admit(m),
            _ => true,
        }
    }

    /// What a request for `model` (absent: the base) admitted at `now` gets.
    pub fn acquire(&self, model: Option<&str>, now: Instant) -> Access {
        match (&self.lru, model) {
            (Some(lru), Some(m)) if m != self.base => {
                lru.lock().expect("adapter lock").acquire(m, now, self.load)
            }
            _ => Access::Base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOAD: Duration = Duration::from_millis(40);

    fn ready(a: Access) -> (Instant, bool) {
        match a {
            Access::Adapter { ready, loaded } => (ready, loaded),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_adapter_loads_and_evicts_the_least_recently_used() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut lru = AdapterLru::new(3, 2);
        // a and b load (40 ms each from their arrival).
        assert_eq!(ready(lru.acquire("a", ms(0), LOAD)), (ms(40), true));
        assert_eq!(ready(lru.acquire("b", ms(10), LOAD)), (ms(50), true));
        // a again while still loading: waits for the same load, loads nothing.
        assert_eq!(ready(lru.acquire("a", ms(20), LOAD)), (ms(40), false));
        // Loaded: no wait (ready in the past).
        assert_eq!(ready(lru.acquire("b", ms(100), LOAD)), (ms(50), false));
        assert_eq!(lru.loaded(), ["b", "a"]);
        // c evicts a, the least recently used.
        assert_eq!(ready(lru.acquire("c", ms(200), LOAD)), (ms(240), true));
        assert_eq!(lru.loaded(), ["c", "b"]);
        // a must load again, evicting b.
        assert_eq!(ready(lru.acquire("a", ms(300), LOAD)), (ms(340), true));
        assert_eq!(lru.loaded(), ["a", "c"]);
        // A fourth name is more adapters than are served.
        assert_eq!(lru.acquire("d", ms(400), LOAD), Access::Unknown);
        assert_eq!(lru.loaded(), ["a", "c"]);
    }

    #[test]
    fn one_slot_loads_on_every_switch() {
        let t0 = Instant::now();
        let mut lru = AdapterLru::new(3, 1);
        let mut loads = 0;
        for (k, name) in ["a", "a", "b", "a", "c", "c", "b"].iter().enumerate() {
            let (_, loaded) = ready(lru.acquire(name, t0 + Duration::from_secs(k as u64), LOAD));
            loads += u32::from(loaded);
        }
        assert_eq!(loads, 5);
        assert_eq!(lru.loaded(), ["b"]);
    }

    #[test]
    fn the_base_model_and_adapters_off_never_wait() {
        let now = Instant::now();
        let on = Adapters::new("base", 2, 1, LOAD);
        assert_eq!(on.acquire(Some("base"), now), Access::Base);
        assert_eq!(on.acquire(None, now), Access::Base);
        assert_eq!(ready(on.acquire(Some("x"), now)), (now + LOAD, true));
        let off = Adapters::new("base", 0, 0, LOAD);
        for m in ["x", "y", "z", "w"] {
            assert!(off.admit(Some(m)));
            assert_eq!(off.acquire(Some(m), now), Access::Base);
        }
        // max_loaded 0: every served adapter fits.
        let all = Adapters::new("base", 2, 0, LOAD);
        ready(all.acquire(Some("x"), now));
        ready(all.acquire(Some("y"), now));
        assert_eq!(ready(all.acquire(Some("x"), now)), (now + LOAD, false));
        assert!(!all.admit(Some("z")));
    }
}

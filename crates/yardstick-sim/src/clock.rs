//! Wall-clock timestamps for the ground-truth log, taken from the monotonic clock.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Maps monotonic instants to unix-epoch nanoseconds through one anchor read at start-up, so
/// every logged timestamp is consistent with every other (no wall-clock steps mid-run).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    anchor: Instant,
    anchor_unix_ns: u64,
}

impl Clock {
    /// Reads the anchor now.
    pub fn new() -> Self {
        let anchor = Instant::now();
        let anchor_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Clock {
            anchor,
            anchor_unix_ns,
        }
    }

    /// Unix-epoch nanoseconds of `t`.
    pub fn unix_ns(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.anchor) {
            Some(d) => self.anchor_unix_ns + d.as_nanos() as u64,
            None => self
                .anchor_unix_ns
                .saturating_sub(self.anchor.duration_since(t).as_nanos() as u64),
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

//! One clock for every timestamp of a run: monotonic instants mapped to unix-epoch nanoseconds.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Maps monotonic instants to unix-epoch nanoseconds through one anchor read at start-up, so
/// all timestamps of a run are mutually consistent (no wall-clock steps mid-run) and
/// comparable with another process's log on the same machine.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    anchor: Instant,
    anchor_unix_ns: u64,
}

fn realtime_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Clock {
    /// Reads the anchor now.
    pub fn new() -> Self {
        Clock {
            anchor: Instant::now(),
            anchor_unix_ns: realtime_ns(),
        }
    }

    /// Unix-epoch nanoseconds of `t`.
    pub fn ns(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.anchor) {
            Some(d) => self.anchor_unix_ns + d.as_nanos() as u64,
            None => self
                .anchor_unix_ns
                .saturating_sub(self.anchor.duration_since(t).as_nanos() as u64),
        }
    }

    /// Unix-epoch nanoseconds now.
    pub fn now_ns(&self) -> u64 {
        self.ns(Instant::now())
    }

    /// The instant whose timestamp is `ns` (the inverse of [`Clock::ns`]).
    pub fn instant(&self, ns: u64) -> Instant {
        if ns >= self.anchor_unix_ns {
            self.anchor + Duration::from_nanos(ns - self.anchor_unix_ns)
        } else {
            let back = Duration::from_nanos(self.anchor_unix_ns - ns);
            self.anchor.checked_sub(back).unwrap_or(self.anchor)
        }
    }

    /// This clock's timestamp of an event the kernel stamped with `CLOCK_REALTIME` nanoseconds
    /// `realtime`: now minus the event's age, so a wall-clock step since the anchor does not
    /// move it. Never later than now.
    pub fn from_realtime(&self, realtime: u64) -> u64 {
        let now = Instant::now();
        let age = realtime_ns().saturating_sub(realtime);
        self.ns(now).saturating_sub(age)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_round_trip_through_nanoseconds() {
        let c = Clock::new();
        let t = Instant::now() + Duration::from_millis(1234);
        let ns = c.ns(t);
        let back = c.instant(ns);
        let diff = back.max(t) - back.min(t);
        assert!(diff < Duration::from_micros(1), "{diff:?}");
        let earlier = c.instant(c.ns(c.anchor) - 5_000_000);
        assert_eq!(c.anchor - earlier, Duration::from_millis(5));
    }

    #[test]
    fn realtime_stamps_map_to_their_age() {
        let c = Clock::new();
        let ten_ms_ago = realtime_ns() - 10_000_000;
        let mapped = c.from_realtime(ten_ms_ago);
        let age = c.now_ns() - mapped;
        assert!((10_000_000..1_000_000_000).contains(&age), "age {age} ns");
        // A stamp from the future (a clock step) is clamped to now, never later (and not to
        // some earlier time either).
        let before = c.now_ns();
        let clamped = c.from_realtime(realtime_ns() + 1_000_000_000);
        assert!(
            before <= clamped && clamped <= c.now_ns(),
            "{before} {clamped}"
        );
    }
}

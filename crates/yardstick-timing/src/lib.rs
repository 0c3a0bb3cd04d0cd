//! The timing both ends of a yardstick serving measurement share. The load generator
//! (`yardstick-load`) and the simulator (`yardstick-sim`) measure the same connection from its
//! two sides, so they must agree on when things happened and on what the seed decides:
//!
//! * [`clock`]: one [`Clock`] for every timestamp of a run, monotonic instants mapped to unix
//!   nanoseconds, so the client's records and the simulator's ground-truth log compare directly;
//! * [`tcp`]: [`StampedTcp`], TCP read with the kernel's receive timestamp ([`RxStamp`]), so each
//!   side times the bytes' arrival, not its own scheduling;
//! * [`rng`]: [`Rng`], the seeded generator of a run's random draws — the load generator's
//!   arrival gaps and request lengths, the simulator's latencies — hand-written so one seed gives
//!   the same schedule on every platform and version.
//!
//! It is not a network stack or an HTTP client (those are `yardstick-load` and `yardstick-sim`,
//! on hyper): only what both of them need to be timed alike.
#![cfg(unix)]

pub mod clock;
pub mod rng;
pub mod tcp;

pub use clock::Clock;
pub use rng::Rng;
pub use tcp::{RxStamp, StampedTcp};

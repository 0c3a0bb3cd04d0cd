//! What both ends of a yardstick connection share: the load generator (`yardstick-load`) and
//! the simulator (`yardstick-sim`) timestamp with one [`Clock`], draw from one seeded
//! generator ([`Rng`]), and read TCP through [`StampedTcp`], which records when the kernel
//! received the bytes (see [`tcp`]).
#![cfg(unix)]

pub mod clock;
pub mod rng;
pub mod tcp;

pub use clock::Clock;
pub use rng::Rng;
pub use tcp::{RxStamp, StampedTcp};

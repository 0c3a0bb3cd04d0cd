//! What yardstick's tests share across crates, as a dev-dependency: each crate's test binary
//! (and a library's unit tests) uses these modules instead of including their files by path.
//!
//! * [`external`]: one switch for tests that need a component from outside the repository
//!   (skipped visibly, or failed under `YARDSTICK_REQUIRE_EXTERNAL=1`);
//! * [`prop`]: the property-test runner (case count from `PROPTEST_CASES`, a hang detector);
//! * [`chromium`]: headless Chromium for the browser tests;
//! * [`pg`]: a throwaway PostgreSQL cluster.

pub mod chromium;
pub mod external;
pub mod pg;
pub mod prop;

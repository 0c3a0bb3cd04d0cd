//! yardstick-spec's integration tests, as one test binary (`it`, as in every crate): each
//! module below was a `tests/*.rs` file, and a test binary, of its own; each binary links
//! the crate and its dependencies again. Run one module with
//! `cargo test -p yardstick-spec --test it catalogue::`.

use yardstick_testsupport::prop as props;

mod catalogue;
mod docs;
mod fixtures;
mod prop_scenario;

//! yardstick-run's integration tests, as one test binary (`it`, as in every crate): each
//! module below was a `tests/*.rs` file, and a test binary, of its own; each binary links
//! the crate and its dependencies again. Run one module with
//! `cargo test -p yardstick-run --test it prop_import::`.

use yardstick_testsupport::prop as props;

mod execute;
mod prop_import;
mod trust;

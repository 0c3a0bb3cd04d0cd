//! yardstick-load's integration tests, as one test binary (`it`, as in every crate): each
//! module below was a `tests/*.rs` file, and a test binary, of its own; each binary links
//! the crate and its dependencies again. Run one module with
//! `cargo test -p yardstick-load --test it compat::`.

use yardstick_testsupport::prop as props;

mod compat;
mod energy;
mod keep_response;
mod prop_inputs;
mod retry;
mod tls;

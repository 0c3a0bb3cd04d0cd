//! yardstick-report's integration tests, as one test binary (`it`, as in every crate): each
//! module below was a `tests/*.rs` file, and a test binary, of its own; each binary links
//! the crate and its dependencies again. Run one module with
//! `cargo test -p yardstick-report --test it formats::`.

use yardstick_testsupport::{chromium, external};
mod fixture;

mod formats;
mod html_chromium;
mod plots;

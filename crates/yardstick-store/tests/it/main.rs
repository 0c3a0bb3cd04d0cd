//! yardstick-store's integration tests, as one test binary (`it`, as in every crate): each
//! module below was a `tests/*.rs` file, and a test binary, of its own; each binary links
//! the crate and its dependencies again. Run one module with
//! `cargo test -p yardstick-store --test it export_gc::`.

use yardstick_testsupport::prop as props;
mod support;

mod export_gc;
mod prop_evidence;
mod prop_query;
mod query_sandbox;
mod record;
mod summary;
mod warehouse;

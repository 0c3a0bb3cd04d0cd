//! Any bytes through the whole spec pipeline (size, UTF-8, YAML, decoding, rules): it must
//! return diagnostics, never panic, and every diagnostic must carry a position.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let checked = yardstick_spec::check_bytes(data);
    for d in &checked.diagnostics {
        assert!(d.line >= 1 && d.col >= 1);
    }
    if checked.is_valid() {
        assert!(checked.spec.is_some());
    }
});

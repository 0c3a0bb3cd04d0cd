//! One switch for tests that need a component from outside the repository (PostgreSQL,
//! Chromium, the llama.cpp server, a large tokenizer, Python's securesystemslib):
//!
//! * found: the test runs, and `used COMPONENT TEST` is appended to `$YARDSTICK_EXTERNAL_LOG`;
//! * missing, with `YARDSTICK_REQUIRE_EXTERNAL=1` (CI sets it): the test fails, naming what is
//!   missing and how to install it — a skip must never pass on nothing;
//! * missing otherwise: `SKIPPED: …` is written straight to the process's stderr (past the test
//!   harness's output capture, so it shows in plain `cargo test` output) and
//!   `skipped COMPONENT TEST` to the log; the test returns early.
//!
//! Every test crate uses it through the dev-dependency `yardstick-testsupport`.

use std::io::Write;

/// Whether `YARDSTICK_REQUIRE_EXTERNAL=1` is set.
pub fn required() -> bool {
    std::env::var("YARDSTICK_REQUIRE_EXTERNAL").as_deref() == Ok("1")
}

fn log(line: &str) {
    if let Some(path) = std::env::var_os("YARDSTICK_EXTERNAL_LOG")
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

/// Records that `test` ran against `component`.
pub fn used(component: &str, test: &str) {
    log(&format!("used {component} {test}"));
}

/// `test` cannot find `component`: panics under `YARDSTICK_REQUIRE_EXTERNAL=1`, otherwise says
/// `SKIPPED` where a person sees it. `how` tells how to install it.
pub fn missing(component: &str, test: &str, how: &str) {
    if required() {
        panic!(
            "{test} needs {component}, which is missing, and YARDSTICK_REQUIRE_EXTERNAL=1 makes \
             that a failure: {how}"
        );
    }
    log(&format!("skipped {component} {test}"));
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {test}: {component} not found ({how})"
    );
}

/// `Some(x)` when `found` is, recording the use; otherwise [`missing`] and `None`.
pub fn require<T>(component: &str, test: &str, how: &str, found: Option<T>) -> Option<T> {
    match found {
        Some(x) => {
            used(component, test);
            Some(x)
        }
        None => {
            missing(component, test, how);
            None
        }
    }
}

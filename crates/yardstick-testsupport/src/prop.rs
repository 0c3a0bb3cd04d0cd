//! Shared by the property tests of several crates: a runner whose
//! case count follows proptest's `PROPTEST_CASES` (default 256; CI sets 4096), a hang detector,
//! and a line saying how many cases ran.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use proptest::test_runner::{Config, TestRunner};

/// A runner with proptest's default configuration and no failure files in the tree.
pub fn runner() -> TestRunner {
    TestRunner::new(Config {
        failure_persistence: None,
        ..Config::default()
    })
}

/// Says how many cases a target ran (past the harness's capture); fails on zero.
pub fn report(target: &str, cases: usize) {
    assert!(cases > 0, "{target}: no case ran");
    let _ = writeln!(std::io::stderr(), "proptest {target}: {cases} cases");
}

/// Runs `f` on a thread and fails if it has not finished after `secs`: a hang detector (an
/// endless loop on hostile input), not a timing assertion.
pub fn within<T: Send + 'static>(
    what: &str,
    secs: u64,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("{what} did not finish within {secs} s: it hangs"))
}

/// Hostile edits of a valid input: truncation, a byte changed, a slice repeated, bytes inserted.
pub fn mutations(valid: String) -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let n = valid.len().max(1);
    let v = valid.clone();
    prop_oneof![
        (0..=n).prop_map({
            let v = v.clone();
            move |i| v.get(..i).unwrap_or(&v).to_string()
        }),
        (0..n, any::<char>()).prop_map({
            let v = v.clone();
            move |(i, c)| {
                let mut s: String = v.chars().collect();
                let at = s
                    .char_indices()
                    .map(|(j, _)| j)
                    .find(|j| *j >= i)
                    .unwrap_or(s.len());
                s.insert(at, c);
                s
            }
        }),
        (0..n, 0..n, 1usize..50).prop_map({
            let v = v.clone();
            move |(a, b, k)| {
                let chars: Vec<char> = v.chars().collect();
                let (a, b) = (a.min(b).min(chars.len()), a.max(b).min(chars.len()));
                let piece: String = chars[a..b].iter().collect();
                let mut s: String = chars[..b].iter().collect();
                for _ in 0..k {
                    s.push_str(&piece);
                }
                s.extend(chars[b..].iter());
                s
            }
        }),
        (0..n, "[ -~]{0,8}|\\PC{0,4}").prop_map(move |(i, ins)| {
            let mut s = v.clone();
            let at = (0..=i.min(s.len()))
                .rev()
                .find(|j| s.is_char_boundary(*j))
                .unwrap_or(0);
            s.insert_str(at, &ins);
            s
        }),
    ]
}

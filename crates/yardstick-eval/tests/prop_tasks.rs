//! Property tests: eval task files (JSONL) load into a task or a clear error that names the file
//! and line, never a panic or a hang.

#[path = "../../../testsupport/prop.rs"]
mod props;

use std::cell::Cell;

use proptest::prelude::*;
use yardstick_eval::task::Task;

#[test]
fn task_files_load_or_fail_naming_the_line() {
    let valid = include_str!("../src/probes/arith.jsonl").to_string();
    assert!(
        Task::parse("t", "t.jsonl", &valid).is_ok(),
        "the valid sample loads"
    );
    let inputs = prop_oneof![
        props::mutations(valid),
        prop::collection::vec(any::<u8>(), 0..300)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "(\\{\"id\": (\"[a-z0-9]{0,4}\"|[0-9]{1,20}|null), \"prompt\": (\"[^\"]{0,12}\"|\\[\\]|null), \"references\": (\\[\"[^\"]{0,6}\"\\]|1e999|\\{\\}|\\[\\])(, \"[a-z]{1,8}\": [0-9]{1,3})?\\}\n){1,6}",
        Just("{\"id\":".repeat(5000)),
    ];
    let cases = Cell::new(0usize);
    props::runner()
        .run(&inputs, |text| {
            cases.set(cases.get() + 1);
            let r = props::within("Task::parse", 30, move || {
                Task::parse("t", "t.jsonl", &text)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            });
            if let Err(e) = r {
                prop_assert!(
                    e.contains("t.jsonl"),
                    "the error does not name the file: {e}"
                );
            }
            Ok(())
        })
        .unwrap();
    props::report("eval task files", cases.get());
}

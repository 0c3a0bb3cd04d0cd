//! Property tests: eval task files (JSONL) load into a task or a clear error that names the file
//! and line, never a panic or a hang.

use crate::props;

use std::cell::Cell;

use proptest::prelude::*;
use yardstick_eval::task::Task;

#[test]
fn task_files_load_or_fail_naming_the_line() {
    let valid = include_str!("../../src/probes/arith.jsonl").to_string();
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

/// The same from a file of raw bytes (`Task::load`, what `bench eval --tasks F.jsonl` calls):
/// bytes that are not UTF-8 are refused naming the file and the line (`t.jsonl:N:`), like every
/// other problem in a task file.
#[test]
fn task_files_of_raw_bytes_fail_naming_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("ys-prop-tasks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.jsonl");
    let valid = include_str!("../../src/probes/arith.jsonl").to_string();
    let inputs = prop_oneof![
        props::mutations(valid.clone()).prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..300),
        // Valid lines, then a byte that cannot start a UTF-8 character.
        (0usize..4, any::<u8>()).prop_map(move |(good, b)| {
            let mut v: Vec<u8> = valid
                .lines()
                .take(good)
                .flat_map(|l| format!("{l}\n").into_bytes())
                .collect();
            v.extend([b'{', 0x80 | (b & 0x3f), b'}', b'\n']);
            v
        }),
    ];
    let cases = Cell::new(0usize);
    let spec = path.display().to_string();
    props::runner()
        .run(&inputs, |bytes| {
            cases.set(cases.get() + 1);
            std::fs::write(&path, &bytes).unwrap();
            let s = spec.clone();
            let r = props::within("Task::load", 30, move || {
                Task::load(&s).map(|_| ()).map_err(|e| e.to_string())
            });
            if let Err(e) = r {
                prop_assert!(e.contains("t.jsonl"), "no file named: {e}");
                if std::str::from_utf8(&bytes).is_err() {
                    prop_assert!(e.contains("t.jsonl:"), "no line named: {e}");
                    prop_assert!(e.contains("not UTF-8"), "{e}");
                }
            }
            Ok(())
        })
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    props::report("eval task files (raw bytes)", cases.get());
}

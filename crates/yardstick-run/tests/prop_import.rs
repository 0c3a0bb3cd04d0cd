//! Property tests: the importers (nccl-tests, fio JSON, STREAM) take hostile text — mutated
//! real outputs and arbitrary bytes — without a panic or a hang, and the real outputs import.

#[path = "../../../testsupport/prop.rs"]
mod props;

use std::cell::Cell;

use proptest::prelude::*;
use yardstick_run::import::Tool;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../yardstick-workloads/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn importers_take_hostile_text_without_panicking() {
    for (tool, file) in [
        (Tool::Nccl, "all_reduce_perf_8xH100.txt"),
        (Tool::Fio, "fio_nvme.json"),
        (Tool::Stream, "stream_omp.txt"),
    ] {
        let valid = fixture(file);
        let n = tool.parse(&valid).map(|r| r.len()).unwrap_or(0);
        assert!(
            n > 0,
            "{file} imports nothing: the property would be vacuous"
        );
        let inputs = prop_oneof![
            props::mutations(valid),
            prop::collection::vec(any::<u8>(), 0..400)
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            Just("{\"jobs\": [".repeat(4000)),
            "(#? *[0-9]{1,30}( +[-0-9.eNa]{1,12}){0,12}\n){0,20}",
        ];
        let cases = Cell::new(0usize);
        props::runner()
            .run(&inputs, |text| {
                cases.set(cases.get() + 1);
                let r = props::within("import", 30, move || {
                    tool.parse(&text)
                        .map(|v| v.len())
                        .map_err(|e| e.to_string())
                });
                if let Err(e) = r {
                    prop_assert!(!e.is_empty());
                }
                Ok(())
            })
            .unwrap();
        props::report(&format!("import {file}"), cases.get());
    }
}

//! Property tests: the importers (nccl-tests, fio JSON, STREAM) take hostile text — structured
//! outputs with reordered columns, extreme numbers (NaN, inf, overflow, 30-digit integers),
//! unicode and NUL bytes, truncations and mutations of real outputs, arbitrary bytes — and give
//! finite figures or a clear error (naming the line where there is one), never a panic or a
//! hang; and `import` with hostile file names and contents writes only inside its store, and
//! nothing at all when a file does not parse.
//!
//! Cases: proptest's `PROPTEST_CASES` (default 256; CI sets 4096). The whole-import property
//! runs an eighth of that (each case creates a store and a SQLite warehouse).

use crate::props;

use std::cell::Cell;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use yardstick_run::import::{EnvSource, ImportFile, ImportOptions, Tool, import};
use yardstick_store::ToolInfo;
use yardstick_workloads::micro::ingest::IngestError;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../yardstick-workloads/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

const FIXTURES: [(Tool, &str); 3] = [
    (Tool::Nccl, "all_reduce_perf_8xH100.txt"),
    (Tool::Fio, "fio_nvme.json"),
    (Tool::Stream, "stream_omp.txt"),
];

/// Numbers at the edges: overflow, underflow, NaN and infinities as C's printf writes them.
fn extreme() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "inf",
        "-inf",
        "nan",
        "-nan",
        "NaN",
        "1e999",
        "-1e999",
        "-0",
        "0",
        "1e308",
        "-1e308",
        "1.7976931348623157e308",
        "5e-324",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999999999",
        "1e30",
        "-1",
    ])
    .prop_map(str::to_owned)
}

/// Number-like tokens: mostly ordinary (so that whole inputs get past the first check), often
/// extreme, sometimes not quite numbers.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop_oneof![
            (1u32..100_000).prop_map(|n| n.to_string()),
            (0u32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b:02}")),
        ],
        3 => extreme(),
        1 => any::<f64>().prop_map(|f| f.to_string()),
        1 => "[0-9]{20,40}|-?[0-9]{1,3}(\\.[0-9]{1,3})?e-?[0-9]{1,3}|N/A|",
    ]
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => number(),
        1 => "[a-z#_]{1,6}",
        1 => "\\PC{1,3}",
        1 => Just("\0".to_owned()),
    ]
}

/// The fixture with 1 to 3 of its numbers replaced by [`number`]s: a valid shape with
/// extreme values.
fn renumbered(valid: String) -> impl Strategy<Value = String> {
    let b = valid.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    assert!(!spans.is_empty());
    let n = spans.len();
    prop::collection::vec((0..n, number()), 1..4).prop_map(move |mut subs| {
        subs.sort_by_key(|s| std::cmp::Reverse(s.0));
        subs.dedup_by_key(|s| s.0);
        let mut s = valid.clone();
        for (k, with) in subs {
            let (a, z) = spans[k];
            s.replace_range(a..z, &with);
        }
        s
    })
}

/// nccl-tests-shaped text: comment lines, a header with the columns in any order, and rows
/// that fit the header (a value per column, the numbers often extreme) cut at any length, with
/// junk words after.
fn nccl_text() -> impl Strategy<Value = String> {
    const REAL: &str = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong";
    let cols = prop_oneof![
        2 => Just(REAL.split(' ').collect::<Vec<_>>()),
        1 => Just(REAL.split(' ').take(9).collect::<Vec<_>>()),
        // The columns read, in any order, with some of the others.
        3 => prop::sample::subsequence(vec!["redop", "root", "#wrong", "error"], 0..=4)
            .prop_flat_map(|extra| {
                let mut c = vec!["size", "count", "type", "time", "algbw", "busbw"];
                c.extend(extra);
                Just(c).prop_shuffle()
            }),
        1 => prop::sample::subsequence(
            vec![
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "error",
            ],
            0..=10,
        )
        .prop_shuffle(),
    ];
    let comment = prop_oneof![
        "\\PC{0,10}".prop_map(|op| format!("# Collective test starting: {op}")),
        prop::collection::vec(word(), 0..8)
            .prop_map(|w| format!("# nThread 1 nGpus {} iters: 20", w.join(" "))),
        number().prop_map(|n| format!("# Avg bus bandwidth    : {n}")),
        Just("# Out of bounds values : 0 OK".to_owned()),
        Just("# Out of bounds values : 3 FAILED".to_owned()),
        Just("#  Rank  0 Group  0 Pid 1 on h device  0 [0x18] GPU".to_owned()),
    ];
    let rows = cols.prop_flat_map(|h| {
        let width = h.len();
        let cell = move |c: &str| -> BoxedStrategy<String> {
            match c {
                "type" => prop_oneof![Just("float".to_owned()), word()].boxed(),
                "redop" => prop_oneof![Just("sum".to_owned()), word()].boxed(),
                "root" => prop_oneof![Just("-1".to_owned()), word()].boxed(),
                "#wrong" | "error" => prop_oneof![
                    3 => Just("0".to_owned()),
                    1 => Just("N/A".to_owned()),
                    1 => word()
                ]
                .boxed(),
                _ => number().boxed(),
            }
        };
        let row = (
            "[0-9]{1,12}",
            h.iter().skip(1).map(|c| cell(c)).collect::<Vec<_>>(),
            0..=width,
            prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(word(), 1..3)],
        )
            .prop_map(|(first, rest, keep, junk)| {
                let mut t = vec![first];
                t.extend(rest);
                t.truncate(keep.max(1));
                t.extend(junk);
                t.join(" ")
            });
        (Just(h), prop::collection::vec(row, 0..4))
    });
    (
        prop::collection::vec(comment, 0..3),
        prop::bool::weighted(0.9),
        rows,
    )
        .prop_map(|(comments, with_header, (header, rows))| {
            let mut s = comments.join("\n");
            s.push('\n');
            if with_header {
                s.push_str(&format!("# {}\n", header.join(" ")));
            }
            s.push_str(&rows.join("\n"));
            s
        })
}

/// fio-JSON-shaped text with extreme values in every numeric field.
fn fio_text() -> impl Strategy<Value = String> {
    // Mostly JSON numbers (another value in one of ~13 fields would make most documents fail
    // early), sometimes another type, rarely a number JSON cannot hold.
    let num = prop_oneof![
        12 => number().prop_filter_map("JSON number", |n| {
            serde_json::from_str::<serde_json::Value>(&n)
                .ok()
                .filter(serde_json::Value::is_number)
                .map(|_| n)
        }),
        3 => prop::sample::select(vec!["null", "\"12\"", "[]", "{}"]).prop_map(str::to_owned),
        1 => Just("1e999".to_owned()),
    ];
    let clat = (
        prop::sample::select(vec!["clat_ns", "clat", "lat_ns"]),
        num.clone(),
        num.clone(),
        num.clone(),
    )
        .prop_map(|(k, a, b, m)| {
            format!("\"{k}\": {{\"percentile\": {{\"50.000000\": {a}, \"99.000000\": {b}}}, \"mean\": {m}}}")
        });
    // A field is absent a third of the time (`bw_bytes` absent: `bw` in KiB/s is used).
    let field = |k: &'static str| {
        prop::option::weighted(0.67, num.clone())
            .prop_map(move |v| v.map(|v| format!("\"{k}\": {v}, ")).unwrap_or_default())
    };
    let dir = (
        prop_oneof![3 => (1u64..1 << 40).prop_map(|n| n.to_string()), 1 => num.clone()],
        field("bw_bytes"),
        field("bw"),
        field("iops"),
        clat,
    )
        .prop_map(|(io, bwb, bw, iops, clat)| {
            format!("{{\"io_bytes\": {io}, {bwb}{bw}{iops}{clat}}}")
        });
    let job = (
        "\\PC{0,6}|\\u{0}|\\.\\./\\.\\.",
        prop_oneof![4 => Just("0".to_owned()), 1 => num.clone()],
        prop::option::of(dir.clone()),
        prop::option::of(dir),
        "(rand)?(read|write|rw)",
    )
        .prop_map(|(name, err, read, write, rw)| {
            let mut s = format!(
                "{{\"jobname\": {}, \"error\": {err}, \"job options\": {{\"rw\": \"{rw}\", \"bs\": \"4k\"}}",
                serde_json::to_string(&name).unwrap()
            );
            if let Some(r) = read {
                s.push_str(&format!(", \"read\": {r}"));
            }
            if let Some(w) = write {
                s.push_str(&format!(", \"write\": {w}"));
            }
            s.push('}');
            s
        });
    (
        "(fio: [a-z ]{0,10}\n)?",
        prop::collection::vec(job, 0..4),
        prop_oneof![4 => Just(0usize), 1 => 0usize..300],
    )
        .prop_map(|(prefix, jobs, depth)| {
            format!(
                "{prefix}{{\"fio version\": \"fio-3.36\", \"global options\": {{\"rw\": \"read\"}}, \
                 \"jobs\": [{}], \"deep\": {}{}}}",
                jobs.join(", "),
                "[".repeat(depth),
                "]".repeat(depth)
            )
        })
}

/// STREAM-shaped text: kernel lines with 0..6 numbers of any kind, validation lines.
fn stream_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => (
            prop::sample::select(vec!["Copy", "Scale", "Add", "Triad", "triad", "Other"]),
            prop_oneof![
                4 => prop::collection::vec(number(), 4..=4),
                1 => prop::collection::vec(number(), 0..6),
            ]
        )
            .prop_map(|(k, n)| format!("{k}: {}", n.join(" "))),
        1 => number().prop_map(|n| format!("Array size = {n} (elements), Offset = 0 (elements)")),
        1 => number().prop_map(|n| format!("Number of Threads counted = {n}")),
        1 => Just("Failed Validation on array c[]".into()),
        1 => "\\PC{0,20}",
    ];
    (prop::collection::vec(line, 0..6), prop::bool::weighted(0.8)).prop_map(|(mut l, ok)| {
        if ok {
            l.push(
                "Solution Validates: avg error less than 1.000000e-13 on all three arrays".into(),
            );
        }
        l.join("\n")
    })
}

fn structured(tool: Tool) -> BoxedStrategy<String> {
    match tool {
        Tool::Nccl => nccl_text().boxed(),
        Tool::Fio => fio_text().boxed(),
        Tool::Stream => stream_text().boxed(),
        // The serving tools' parsers have their own property below.
        other => unreachable!("{} is not generated here", other.name()),
    }
}

/// Raw bytes: uniformly random, or the fixture with random bytes (incl. invalid UTF-8) spliced in.
fn hostile_bytes(valid: String) -> impl Strategy<Value = Vec<u8>> {
    let n = valid.len();
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..400),
        (0..=n, prop::collection::vec(any::<u8>(), 1..8)).prop_map(move |(at, junk)| {
            let mut b = valid.as_bytes().to_vec();
            b.splice(at..at, junk);
            b
        }),
    ]
}

/// What every parse must satisfy: finite figures, or a non-empty error naming a real line.
fn check_parse(tool: Tool, text: &str) -> Result<(), TestCaseError> {
    let t = text.to_owned();
    let r = props::within("import parse", 30, move || tool.parse(&t));
    match r {
        Ok(results) => {
            prop_assert!(!results.is_empty(), "Ok with no figures");
            for r in &results {
                prop_assert!(!r.name.is_empty());
                for v in [r.value, r.min, r.max, r.mean] {
                    prop_assert!(v.is_finite(), "{}: figure {v} is not finite", r.name);
                }
            }
        }
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(!msg.is_empty());
            if let IngestError::BadLine { line, .. } = e {
                let lines = text.lines().count();
                prop_assert!((1..=lines).contains(&line), "line {line} of {lines}: {msg}");
                prop_assert!(msg.contains(&format!("line {line}")), "{msg}");
            }
        }
    }
    Ok(())
}

#[test]
fn importers_give_finite_figures_or_a_clear_error() {
    for (tool, file) in FIXTURES {
        let valid = fixture(file);
        let n = tool.parse(&valid).map(|r| r.len()).unwrap_or(0);
        assert!(
            n > 0,
            "{file} imports nothing: the property would be vacuous"
        );
        // Truncation at every position of the real output.
        let mut cuts = 0;
        for at in (0..=valid.len()).filter(|i| valid.is_char_boundary(*i)) {
            check_parse(tool, &valid[..at]).unwrap_or_else(|e| panic!("cut at {at}: {e}"));
            cuts += 1;
        }
        props::report(&format!("import {} (every truncation)", tool.name()), cuts);

        let inputs = prop_oneof![
            3 => structured(tool),
            2 => renumbered(valid.clone()),
            2 => props::mutations(valid.clone()),
            1 => hostile_bytes(valid.clone())
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            1 => Just("{\"jobs\": [".repeat(4000)),
        ];
        let cases = Cell::new(0usize);
        let accepted = Cell::new(0usize);
        props::runner()
            .run(&inputs, |text| {
                cases.set(cases.get() + 1);
                if tool.parse(&text).is_ok() {
                    accepted.set(accepted.get() + 1);
                }
                check_parse(tool, &text)
            })
            .unwrap();
        assert!(
            accepted.get() > 0,
            "{file}: no generated input parsed; the generators only test the error path"
        );
        props::report(&format!("import {}", tool.name()), cases.get());
    }
}

/// Every file under `dir`, recursively.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

fn file_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("out.txt".to_owned()),
        Just("../../escape.txt".to_owned()),
        Just("/tmp/../abs.txt".to_owned()),
        Just("..".to_owned()),
        Just(String::new()),
        Just("a\0b".to_owned()),
        Just("imports/../../../x".to_owned()),
        "\\PC{0,12}",
        "[./]{1,8}[a-z]{0,3}",
    ]
}

#[test]
fn import_writes_only_inside_its_store_and_nothing_on_bad_input() {
    let base = Config::default().cases;
    let mut runner = TestRunner::new(Config {
        cases: (base / 8).max(16),
        failure_persistence: None,
        ..Config::default()
    });
    let tools = prop::sample::select(FIXTURES.to_vec());
    let files = tools.prop_flat_map(|(tool, fixture_name)| {
        let valid = fixture(fixture_name);
        let content = prop_oneof![
            3 => Just(valid.clone().into_bytes()),
            2 => renumbered(valid.clone()).prop_map(String::into_bytes),
            2 => props::mutations(valid.clone()).prop_map(String::into_bytes),
            1 => hostile_bytes(valid),
        ];
        (
            Just(tool),
            prop::collection::vec((file_name(), content), 1..4),
            prop::option::of(file_name()),
            prop::option::of("\\PC{0,12}"),
        )
    });
    let cases = Cell::new(0usize);
    let imported = Cell::new(0usize);
    runner
        .run(&files, |(tool, files, name, profile)| {
            cases.set(cases.get() + 1);
            let root = tempfile::tempdir().unwrap();
            let store = root.path().join("store");
            let should_parse = files.iter().all(|(_, b)| {
                std::str::from_utf8(b)
                    .ok()
                    .and_then(|t| tool.parse(t).ok())
                    .is_some_and(|r| !r.is_empty())
            });
            let opts = ImportOptions {
                store: store.clone(),
                warehouse: None,
                tool_info: ToolInfo {
                    name: "yardstick".into(),
                    version: "0.0.0-test".into(),
                    git_commit: None,
                },
                name,
                env: profile.map_or(EnvSource::Unknown, EnvSource::Profile),
                confidence_level: 0.95,
                key: None,
            };
            let files: Vec<ImportFile> = files
                .into_iter()
                .map(|(name, bytes)| ImportFile { name, bytes })
                .collect();
            let r = props::within("import", 60, move || {
                import(tool, &files, &opts).map_err(|e| e.to_string())
            });
            let outside: Vec<PathBuf> = tree(root.path())
                .into_iter()
                .filter(|p| !p.starts_with(&store))
                .collect();
            prop_assert!(outside.is_empty(), "written outside the store: {outside:?}");
            match r {
                Ok(out) => {
                    imported.set(imported.get() + 1);
                    prop_assert!(should_parse, "imported a file that does not parse");
                    prop_assert!(out.dir.starts_with(&store));
                    prop_assert!(!out.results.is_empty());
                    for f in &out.results {
                        prop_assert!(f.value.is_finite(), "{}: {}", f.name, f.value);
                    }
                }
                Err(e) => {
                    prop_assert!(!e.is_empty());
                    prop_assert!(!should_parse, "every file parses, yet: {e}");
                    let runs = tree(&store.join("runs"));
                    prop_assert!(runs.is_empty(), "{e}, yet written: {runs:?}");
                }
            }
            Ok(())
        })
        .unwrap();
    assert!(
        imported.get() > 0,
        "no import succeeded: the import path is broken"
    );
    props::report("import (whole, into a temp store)", cases.get());
}

const SERVING_FIXTURES: &[(Tool, &str)] = &[
    (Tool::VllmBench, "vllm-bench-0.33.0/vllm-bench.json"),
    (Tool::Aiperf, "aiperf-0.13.0/profile_export_aiperf.json"),
    (Tool::Guidellm, "guidellm-0.8.1/benchmarks.json"),
    (
        Tool::GenaiBench,
        "genai-bench-0.0.5/D50_20_text-to-text_num_concurrency_4_time_3s.json",
    ),
];

// A failing case is kept in `prop_import.proptest-regressions` beside this file. Said
// explicitly: proptest's default (`SourceParallel`) would write to `tests/proptest-regressions/`
// instead, because `tests/it/` holds a `main.rs`.
proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions")
        )),
        ..ProptestConfig::with_cases(64)
    })]
    /// A serving tool's parser never panics on a damaged file: a cut, or bytes spliced in.
    #[test]
    fn serving_parsers_never_panic(which in 0..SERVING_FIXTURES.len(), at in 0usize..1_000_000,
                                   junk in "[\\x00-\\x7f]{0,6}", cut in any::<bool>()) {
        let (tool, rel) = SERVING_FIXTURES[which];
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../yardstick/tests/fixtures/import")
            .join(rel);
        let text = std::fs::read_to_string(path).unwrap();
        let mut at = at % text.len();
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let damaged = if cut {
            text[..at].to_string()
        } else {
            format!("{}{junk}{}", &text[..at], &text[at..])
        };
        let _ = yardstick_run::import_serving::parse(tool, &[("f.json", &damaged)]);
    }
}

//! Parsers of nccl-tests, fio JSON and STREAM output, on samples written in each tool's
//! documented format (`tests/fixtures`).

use std::path::Path;

use yardstick_workloads::micro::ingest::{self, Format, IngestError, fio, nccl, stream};
use yardstick_workloads::micro::{MicroResult, TrialPolicy};

fn read(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

fn find<'a>(results: &'a [MicroResult], name: &str) -> &'a MicroResult {
    results
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn nccl_all_reduce_on_8_h100() {
    let text = read("all_reduce_perf_8xH100.txt");
    assert_eq!(ingest::detect(&text), Some(Format::Nccl));
    let run = nccl::parse(&text).unwrap();
    assert_eq!(run.op, "all_reduce");
    assert_eq!(run.devices.len(), 8);
    assert_eq!(run.settings["nGpus"], "8");
    assert_eq!(run.settings["iters"], "20");
    assert_eq!(run.rows.len(), 6);
    let big = run.rows.last().unwrap();
    assert_eq!(big.size, 8_589_934_592);
    assert_eq!(big.count, 2_147_483_648);
    assert_eq!(big.redop.as_deref(), Some("sum"));
    assert_eq!(big.out_of_place.busbw, 413.78);
    assert_eq!(big.out_of_place.time_us, 36329.0);
    assert_eq!(big.in_place.unwrap().busbw, 414.21);
    assert_eq!(run.avg_busbw, Some(197.172));
    let results = run.results();
    let r = find(&results, "nccl.all_reduce.busbw.8589934592");
    assert_eq!((r.value, r.unit.as_str(), r.n), (413.78, "GB/s", 1));
    assert!(r.ci.is_none());
    assert_eq!(r.params["ranks"], 8);
    assert_eq!(find(&results, "nccl.all_reduce.busbw.avg").value, 197.172);
    assert!(!find(&results, "nccl.all_reduce.time_us.1024").higher_is_better);
}

#[test]
fn nccl_without_validation_and_without_op_line() {
    let run = nccl::parse(&read("all_gather_perf_novalidation.txt")).unwrap();
    assert_eq!(run.op, "collective");
    assert_eq!(run.rows.len(), 3);
    assert_eq!(run.rows[0].out_of_place.wrong, None);
    assert_eq!(run.rows[2].out_of_place.algbw, 13.72);
    assert_eq!(run.rows[2].redop.as_deref(), Some("none"));
}

#[test]
fn nccl_wrong_results_are_a_failed_run() {
    let err = nccl::parse(&read("all_reduce_perf_wrong.txt")).unwrap_err();
    assert!(matches!(err, IngestError::FailedRun { .. }), "{err}");
    assert!(err.to_string().contains("12 wrong elements"), "{err}");
}

#[test]
fn nccl_garbage_is_refused_with_a_line_number() {
    let text = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n        1024           256     float     sum      -1    fast    0.05    0.05      0\n";
    let err = nccl::parse(text).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    assert!(nccl::parse("hello\n").is_err());
}

#[test]
fn fio_json_jobs_map_to_storage_results() {
    let text = read("fio_nvme.json");
    assert_eq!(ingest::detect(&text), Some(Format::Fio));
    let run = fio::parse(&text).unwrap();
    assert_eq!(run.version, "fio-3.33");
    // Directions without I/O (the write side of a read job, trims) are left out.
    assert_eq!(run.directions.len(), 3);
    let rr = &run.directions[1];
    assert_eq!(
        (rr.job.as_str(), rr.direction.as_str()),
        ("randread", "read")
    );
    assert_eq!(rr.bs.as_deref(), Some("4k"));
    assert_eq!(rr.iops, 12800.0);
    assert_eq!(rr.clat_p50_us, Some(70.144));
    assert_eq!(rr.clat_p99_us, Some(123.392));
    let results = run.results();
    let seq = find(&results, "fio.seqread.read");
    assert_eq!(seq.value, 3221.225472);
    let seq_clat = find(&results, "fio.seqread.read.clat_p50_us").value;
    assert_eq!(seq.unit, "MB/s");
    assert_eq!(seq.params["comparable_to"], "storage.seq_read");
    assert_eq!(
        find(&results, "fio.randwrite.write").params["comparable_to"],
        "storage.rand_write"
    );
    assert_eq!(
        find(&results, "fio.randread.read.clat_p99_us").value,
        123.392
    );
    // The same figures under the micro layer's names, one job per access pattern.
    let s = find(&results, "storage.seq_read");
    assert_eq!((s.value, s.unit.as_str()), (3221.225472, "MB/s"));
    assert_eq!(s.params["job"], "seqread");
    assert_eq!(find(&results, "storage.rand_read.p99_us").value, 123.392);
    // Sequential jobs' completion latencies land under the micro layer's per-block names too.
    assert_eq!(find(&results, "storage.seq_read.p50_us").value, seq_clat);
    assert_eq!(
        find(&results, "storage.rand_write").value,
        find(&results, "fio.randwrite.write").value
    );
    // No sequential-write job in this file: no storage.seq_write.
    assert!(!results.iter().any(|r| r.name == "storage.seq_write"));
}

#[test]
fn fio_failed_job_and_non_fio_json() {
    let text = read("fio_nvme.json").replacen("\"error\": 0", "\"error\": 5", 1);
    assert!(matches!(
        fio::parse(&text),
        Err(IngestError::FailedRun { .. })
    ));
    assert!(fio::parse("{\"jobs\": []}").is_err());
    assert!(fio::parse("{not json").is_err());
}

#[test]
fn stream_output_becomes_memory_results() {
    let text = read("stream_omp.txt");
    assert_eq!(ingest::detect(&text), Some(Format::Stream));
    let run = stream::parse(&text).unwrap();
    assert_eq!(run.array_elements, Some(80_000_000));
    assert_eq!(run.threads, Some(2));
    let results = run.results();
    let triad = find(&results, "memory.triad");
    // 24 bytes x 80e6 elements / 0.107321 s = 17890 MB/s best; at the 0.108977 s average:
    let expected = 17890.2 * 0.107321 / 0.108977 / 1e3;
    assert!((triad.value - expected).abs() < 1e-9, "{}", triad.value);
    assert_eq!(triad.max, 17.8902);
    assert!(triad.min < triad.value && triad.value < triad.max);
    assert_eq!(triad.unit, "GB/s");
    assert_eq!(results.len(), 4);
}

#[test]
fn stream_without_validation_is_refused() {
    let text = read("stream_omp.txt").replace("Solution Validates", "Solution does not validate");
    assert!(matches!(
        stream::parse(&text),
        Err(IngestError::FailedRun { .. })
    ));
}

#[test]
fn runs_of_one_job_pool_into_cis() {
    // Three nccl-tests runs of the same job: the busbw of each is a replicate.
    let base = read("all_reduce_perf_8xH100.txt");
    let runs: Vec<Vec<MicroResult>> = ["413.78", "409.12", "415.30"]
        .iter()
        .map(|bw| {
            let text = base.replace("236.45  413.78", &format!("236.45  {bw}"));
            ingest::parse_any(&text).unwrap()
        })
        .collect();
    let pooled = ingest::replicates(&runs, &TrialPolicy::default()).unwrap();
    let r = find(&pooled, "nccl.all_reduce.busbw.8589934592");
    assert_eq!(r.replicates, 3);
    assert_eq!(r.value, 413.78);
    let [lo, hi] = r.ci.unwrap();
    assert!(lo <= 413.78 && 413.78 <= hi && lo >= 409.12 && hi <= 415.30);
    assert!(ingest::parse_any("no tool here").is_err());
}

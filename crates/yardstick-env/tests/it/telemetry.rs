//! The telemetry sampler on this machine: real /proc readings, a real Parquet file read back.

use std::time::Duration;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use yardstick_env::telemetry::{JoinKeys, Sampler, SamplerConfig, write_parquet};

#[test]
fn samples_the_host_and_writes_parquet() {
    // Each sample's rows reach the callback as they are taken (hot metrics mirror them).
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let sampler = Sampler::start(SamplerConfig {
        interval: Duration::from_millis(50),
        gpus: true,
        on_sample: Some(yardstick_env::telemetry::OnSample(std::sync::Arc::new(
            move |rows| sink.lock().unwrap().extend_from_slice(rows),
        ))),
    })
    .unwrap();
    // Keep a CPU busy for a moment so utilisation is not all idle (a second: 20 samples due, so
    // a sampler thread starved on a loaded machine still has 5).
    let t = std::time::Instant::now();
    let mut x = 0u64;
    while t.elapsed() < Duration::from_millis(1000) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
    let tel = sampler.stop().unwrap();
    let s = &tel.summary;
    assert!(s.samples >= 5, "{s:?}");
    assert!(s.duration_s > 0.3 && s.duration_s < 5.0, "{s:?}");
    let util = s.cpu_util_mean_pct.unwrap();
    assert!((0.0..=100.0).contains(&util), "{util}");
    assert!(s.memory_used_max_bytes.unwrap() > 0.0);
    if s.gpus.is_empty() {
        assert!(s.gpu_note.as_deref().unwrap().starts_with("no NVIDIA GPU"));
    }
    // Timestamps are Unix ms in time order and line up with the wall clock.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        tel.rows
            .windows(2)
            .all(|w| w[0].timestamp_ms <= w[1].timestamp_ms)
    );
    assert!((now_ms - tel.rows[0].timestamp_ms).abs() < 60_000);
    assert!(tel.rows[0].timestamp_ms >= tel.started_ms);

    assert_eq!(
        *seen.lock().unwrap(),
        tel.rows,
        "the callback saw every row, in order"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("telemetry.parquet");
    let keys = JoinKeys {
        constant: vec![
            ("run_id".into(), Some("01RUN".into())),
            ("slurm_job_id".into(), None),
        ],
        gpu_uuids: [("gpu0".to_string(), "GPU-1234".to_string())].into(),
    };
    write_parquet(&path, &tel.rows, &keys).unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let meta = reader.metadata();
    assert_eq!(meta.file_metadata().num_rows() as usize, tel.rows.len());
    let names: Vec<String> = meta
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "timestamp_ms",
            "elapsed_s",
            "device",
            "metric",
            "value",
            "run_id",
            "slurm_job_id",
            "gpu_uuid"
        ]
    );
    let first = reader.get_row_iter(None).unwrap().next().unwrap().unwrap();
    let fields: Vec<(String, Field)> = first
        .get_column_iter()
        .map(|(n, f)| (n.clone(), f.clone()))
        .collect();
    assert_eq!(
        fields[2],
        ("device".to_owned(), Field::Str(tel.rows[0].device.clone()))
    );
    assert_eq!(
        fields[3],
        ("metric".to_owned(), Field::Str(tel.rows[0].metric.clone()))
    );
    assert_eq!(
        fields[4],
        ("value".to_owned(), Field::Double(tel.rows[0].value))
    );
    // The join keys: a constant in every row, null where it does not apply; a host row has no
    // GPU UUID.
    assert_eq!(fields[5], ("run_id".to_owned(), Field::Str("01RUN".into())));
    assert_eq!(fields[6], ("slurm_job_id".to_owned(), Field::Null));
    assert_eq!(tel.rows[0].device, "host");
    assert_eq!(fields[7], ("gpu_uuid".to_owned(), Field::Null));
    assert_eq!(reader.get_row_iter(None).unwrap().count(), tel.rows.len());
}

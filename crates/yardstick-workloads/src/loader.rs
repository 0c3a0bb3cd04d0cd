//! The data-loader layer's built-in reader: reads a directory of files the way a training
//! loop's input pipeline does, and times every batch the loop receives.
//!
//! `workers` threads each take every `workers`-th file (in name order, like the workers of a
//! PyTorch `DataLoader` over a sharded dataset), decode it into samples — a Parquet row, a JSON
//! line, a whole raw file — and hand batches of `batch` samples through a bounded queue (two
//! batches per worker, the usual prefetch) to the loop. The loop does no work of its own, so
//! what it measures is the most the pipeline can supply: the time it waits for each batch,
//! the first batch (which pays for opening files and, cold, for reading them from storage)
//! apart from the steady state after it.
//!
//! Cold passes evict the files from the page cache first (`posix_fadvise(DONTNEED)`, which
//! needs no privilege) and check with `mincore` how much of them stayed resident; warm passes
//! come after a discarded pass that reads every file once.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use yardstick_spec::{CacheMode, LoaderFormat};

/// Why a pass could not be made at all (bad input, not a measured failure).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoaderError {
    /// The directory cannot be listed.
    #[error("{path}: {source}")]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The pattern is not a glob.
    #[error("pattern `{pattern}`: {reason}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Why.
        reason: String,
    },
    /// Nothing to read.
    #[error("{dir}: no files match `{pattern}`")]
    NoFiles {
        /// The directory.
        dir: PathBuf,
        /// The pattern.
        pattern: String,
    },
}

/// What to read and how.
#[derive(Debug, Clone)]
pub struct ReaderConfig {
    /// The directory (files are found under it, recursively).
    pub dir: PathBuf,
    /// A glob on the path relative to `dir` (default: by the format's extension).
    pub pattern: Option<String>,
    /// How a file holds samples.
    pub format: LoaderFormat,
    /// Samples per batch.
    pub batch: usize,
    /// Reader threads.
    pub workers: usize,
    /// Page-cache state of the measured pass.
    pub cache: CacheMode,
}

impl ReaderConfig {
    /// The pattern in force.
    pub fn pattern(&self) -> &str {
        self.pattern.as_deref().unwrap_or(match self.format {
            LoaderFormat::Parquet => "*.parquet",
            LoaderFormat::Jsonl => "*.jsonl",
            LoaderFormat::Raw => "*",
        })
    }
}

/// One batch the loop received.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// Seconds the loop waited for it (since the previous batch, or since the pass began).
    pub wait_s: f64,
    /// Samples in it.
    pub samples: u64,
    /// Bytes of storage its samples came from.
    pub bytes: u64,
}

/// One measured pass over the files.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// Batches in the order the loop received them.
    pub batches: Vec<Batch>,
    /// Seconds from the start of the pass to the last batch.
    pub elapsed_s: f64,
    /// Files read.
    pub files: usize,
    /// Their total size.
    pub file_bytes: u64,
    /// The share of the files' pages resident in the page cache when the pass began (cold
    /// passes only: how cold it really was).
    pub resident_before: Option<f64>,
    /// What the reader had to say (a cold pass that was not cold, a short pass).
    pub warnings: Vec<String>,
    /// The first file that could not be read or decoded: the pass stopped there.
    pub error: Option<String>,
}

/// The files a pass reads: every file under `cfg.dir` whose path relative to it matches the
/// pattern (hidden files and directories skipped), in name order.
pub fn list_files(cfg: &ReaderConfig) -> Result<Vec<PathBuf>, LoaderError> {
    let pattern = cfg.pattern();
    let glob = globset::Glob::new(pattern)
        .map_err(|e| LoaderError::Pattern {
            pattern: pattern.to_string(),
            reason: e.kind().to_string(),
        })?
        .compile_matcher();
    let mut out = Vec::new();
    let mut dirs = vec![cfg.dir.clone()];
    while let Some(d) = dirs.pop() {
        let rd = std::fs::read_dir(&d).map_err(|source| LoaderError::Io {
            path: d.clone(),
            source,
        })?;
        for entry in rd {
            let entry = entry.map_err(|source| LoaderError::Io {
                path: d.clone(),
                source,
            })?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type().map_err(|source| LoaderError::Io {
                path: path.clone(),
                source,
            })?;
            if kind.is_dir() {
                dirs.push(path);
            } else if let Ok(rel) = path.strip_prefix(&cfg.dir)
                && (glob.is_match(rel) || glob.is_match(entry.file_name()))
            {
                out.push(path);
            }
        }
    }
    if out.is_empty() {
        return Err(LoaderError::NoFiles {
            dir: cfg.dir.clone(),
            pattern: pattern.to_string(),
        });
    }
    out.sort();
    Ok(out)
}

/// What a worker hands the loop.
enum Msg {
    Batch { samples: u64, bytes: u64 },
    Failed(ReadError),
}

/// Gathers samples into batches and sends them; `false` once the loop has gone away.
struct Batcher<'a> {
    tx: &'a SyncSender<Msg>,
    batch: u64,
    samples: u64,
    bytes: f64,
}

impl Batcher<'_> {
    fn sample(&mut self, bytes: f64) -> bool {
        self.samples += 1;
        self.bytes += bytes;
        if self.samples < self.batch {
            return true;
        }
        self.flush()
    }

    fn flush(&mut self) -> bool {
        if self.samples == 0 {
            return true;
        }
        let msg = Msg::Batch {
            samples: self.samples,
            bytes: self.bytes.round() as u64,
        };
        self.samples = 0;
        self.bytes = 0.0;
        self.tx.send(msg).is_ok()
    }
}

/// Why a file of the pass could not be read (the pass fails with this).
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}:{line}: not a JSON line: {error}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        error: serde_json::Error,
    },
    #[error("{}: {error}", path.display())]
    Parquet {
        path: PathBuf,
        error: parquet::errors::ParquetError,
    },
}

/// Decodes one file into samples; `Ok(false)` when the loop stopped listening.
fn read_file(path: &Path, format: LoaderFormat, b: &mut Batcher<'_>) -> Result<bool, ReadError> {
    let at = |error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let pq = |error| ReadError::Parquet {
        path: path.to_path_buf(),
        error,
    };
    match format {
        LoaderFormat::Raw => {
            let bytes = std::fs::read(path).map_err(at)?;
            std::hint::black_box(&bytes);
            Ok(b.sample(bytes.len() as f64))
        }
        LoaderFormat::Jsonl => {
            let mut r = BufReader::with_capacity(1 << 16, File::open(path).map_err(at)?);
            let mut line = String::new();
            let mut n = 0usize;
            loop {
                line.clear();
                let len = r.read_line(&mut line).map_err(at)?;
                if len == 0 {
                    return Ok(true);
                }
                n += 1;
                let text = line.trim();
                if text.is_empty() {
                    continue;
                }
                let v: serde_json::Value =
                    serde_json::from_str(text).map_err(|error| ReadError::Json {
                        path: path.to_path_buf(),
                        line: n,
                        error,
                    })?;
                std::hint::black_box(&v);
                if !b.sample(len as f64) {
                    return Ok(false);
                }
            }
        }
        LoaderFormat::Parquet => {
            use parquet::file::reader::{FileReader, SerializedFileReader};
            let f = File::open(path).map_err(at)?;
            let reader = SerializedFileReader::new(f).map_err(pq)?;
            for i in 0..reader.metadata().num_row_groups() {
                let rg = reader.get_row_group(i).map_err(pq)?;
                let rows = rg.metadata().num_rows().max(1) as f64;
                let per_row = rg.metadata().compressed_size() as f64 / rows;
                for row in rg.get_row_iter(None).map_err(pq)? {
                    let row = row.map_err(pq)?;
                    std::hint::black_box(&row);
                    if !b.sample(per_row) {
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        }
    }
}

fn worker(files: Vec<PathBuf>, format: LoaderFormat, batch: u64, tx: SyncSender<Msg>) {
    let mut b = Batcher {
        tx: &tx,
        batch,
        samples: 0,
        bytes: 0.0,
    };
    for f in &files {
        match read_file(f, format, &mut b) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                let _ = tx.send(Msg::Failed(e));
                return;
            }
        }
    }
    b.flush();
}

/// Reads every file once, discarding the bytes (the warm-up of a warm pass).
fn touch(files: &[PathBuf]) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    for f in files {
        let mut r = File::open(f)?;
        while r.read(&mut buf)? > 0 {}
    }
    Ok(())
}

/// The mean share of `files`' pages resident in the page cache (by size).
fn resident(files: &[PathBuf]) -> Option<f64> {
    let (mut res, mut total) = (0.0, 0.0);
    for f in files {
        let len = std::fs::metadata(f).map(|m| m.len() as f64).unwrap_or(0.0);
        if let Some(r) = yardstick_env::pagecache::resident_fraction(f) {
            res += r * len;
            total += len;
        }
    }
    (total > 0.0).then(|| res / total)
}

/// Residency above which a cold pass is reported as not cold.
pub const COLD_RESIDENT_MAX: f64 = 0.05;

/// One measured pass over `files` in `cfg.cache` state. `cancelled` is polled between batches:
/// a cancelled pass returns what it received so far with an error saying so.
pub fn read_pass(cfg: &ReaderConfig, files: &[PathBuf], cancelled: &dyn Fn() -> bool) -> Pass {
    let mut warnings = Vec::new();
    let mut resident_before = None;
    match cfg.cache {
        CacheMode::Warm => {
            if let Err(e) = touch(files) {
                warnings.push(format!("the discarded warm-up pass failed: {e}"));
            }
        }
        CacheMode::Cold => {
            for f in files {
                if let Err(e) = yardstick_env::pagecache::evict_file(f) {
                    warnings.push(format!(
                        "{} could not be evicted from the page cache: {e}",
                        f.display()
                    ));
                }
            }
            resident_before = resident(files);
            if let Some(r) = resident_before.filter(|r| *r > COLD_RESIDENT_MAX) {
                warnings.push(format!(
                    "cold pass asked for, but {:.0}% of the files stayed in the page cache after \
                     eviction (a memory-backed filesystem such as tmpfs, or pages mapped by \
                     another process): this pass is not cold",
                    r * 100.0
                ));
            }
        }
    }
    let file_bytes = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let workers = cfg.workers.clamp(1, files.len().max(1));
    let (tx, rx): (SyncSender<Msg>, Receiver<Msg>) = sync_channel(2 * workers);
    let start = Instant::now();
    let mut handles = Vec::with_capacity(workers);
    for w in 0..workers {
        let mine: Vec<PathBuf> = files.iter().skip(w).step_by(workers).cloned().collect();
        let tx = tx.clone();
        let (format, batch) = (cfg.format, cfg.batch.max(1) as u64);
        handles.push(std::thread::spawn(move || worker(mine, format, batch, tx)));
    }
    drop(tx);
    let mut batches = Vec::new();
    let mut error = None;
    let mut stopped = false;
    let mut last = start;
    loop {
        // Polled at least every 100 ms, so a worker stuck in one huge file cannot hold the loop
        // past a cancellation or the caller's timeout.
        let msg = match rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(m) => Some(m),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        match msg {
            Some(Msg::Batch { samples, bytes }) => {
                let now = Instant::now();
                batches.push(Batch {
                    wait_s: now.duration_since(last).as_secs_f64(),
                    samples,
                    bytes,
                });
                last = now;
            }
            Some(Msg::Failed(e)) => {
                error = Some(e.to_string());
                break;
            }
            None => {}
        }
        if cancelled() {
            error = Some("cancelled before the pass finished".into());
            stopped = true;
            break;
        }
    }
    let elapsed_s = last.duration_since(start).as_secs_f64();
    // Dropping the receiver makes every worker's next send fail: they stop there. A worker
    // still inside one file is not waited for after a cancellation (it ends with that file).
    drop(rx);
    for h in handles {
        if !stopped || h.is_finished() {
            let _ = h.join();
        }
    }
    Pass {
        batches,
        elapsed_s,
        files: files.len(),
        file_bytes,
        resident_before,
        warnings,
        error,
    }
}

/// A distribution's order statistics (the catalogue's distribution statistics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Dist {
    /// Values.
    pub count: u64,
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Dist {
    /// Of `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Dist> {
        if values.is_empty() {
            return None;
        }
        let mut s = values.to_vec();
        s.sort_by(f64::total_cmp);
        let q = |p| yardstick_stats::percentile::percentile_sorted(&s, p);
        Some(Dist {
            count: s.len() as u64,
            min: s[0],
            mean: yardstick_stats::descriptive::mean(&s),
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            max: s[s.len() - 1],
        })
    }
}

/// What a pass (of the built-in reader or of a user's loader) supplied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Supply {
    /// Samples per second in the steady state: the samples of every batch after the first
    /// over the time the loop waited for them (the first batch's when there is only one).
    pub samples_per_s: f64,
    /// Megabytes (10^6 bytes) of storage per second, same span; `None` when no bytes were
    /// reported.
    pub mb_per_s: Option<f64>,
    /// Seconds to the first batch.
    pub first_batch_s: f64,
    /// Milliseconds the loop waited for each batch after the first.
    pub batch_ms: Option<Dist>,
    /// Batches.
    pub batches: u64,
    /// Samples.
    pub samples: u64,
    /// Bytes.
    pub bytes: u64,
}

impl yardstick_spec::metrics::Measured for Supply {
    /// Samples and megabytes per second, the first batch's wait, the batches, and the
    /// distribution of batch waits.
    fn measurements(&self) -> Vec<yardstick_spec::metrics::Measurement> {
        use yardstick_spec::metrics::{Measurement, id};
        let mut out = vec![Measurement::value(
            id::LOADER_SAMPLES_PER_S,
            self.samples_per_s,
        )];
        out.extend(
            self.mb_per_s
                .map(|v| Measurement::value(id::LOADER_MB_PER_S, v)),
        );
        out.push(Measurement::value(
            id::LOADER_FIRST_BATCH_S,
            self.first_batch_s,
        ));
        out.push(Measurement::value(id::LOADER_BATCHES, self.batches as f64));
        if let Some(d) = &self.batch_ms {
            yardstick_spec::metrics::push_stats(
                &mut out,
                id::LOADER_BATCH_MS,
                [
                    ("count", Some(d.count as f64)),
                    ("min", Some(d.min)),
                    ("mean", Some(d.mean)),
                    ("p50", Some(d.p50)),
                    ("p90", Some(d.p90)),
                    ("p95", Some(d.p95)),
                    ("p99", Some(d.p99)),
                    ("max", Some(d.max)),
                ],
            );
        }
        out
    }
}

/// The supply figures of `batches`; `None` without a batch or without time.
pub fn supply(batches: &[Batch]) -> Option<Supply> {
    let first = batches.first()?;
    let steady = if batches.len() > 1 {
        &batches[1..]
    } else {
        batches
    };
    let time: f64 = steady.iter().map(|b| b.wait_s).sum();
    if !(time.is_finite() && time > 0.0) {
        return None;
    }
    let samples: u64 = steady.iter().map(|b| b.samples).sum();
    let bytes: u64 = steady.iter().map(|b| b.bytes).sum();
    let waits: Vec<f64> = batches[1..].iter().map(|b| b.wait_s * 1e3).collect();
    Some(Supply {
        samples_per_s: samples as f64 / time,
        mb_per_s: (bytes > 0).then(|| bytes as f64 / time / 1e6),
        first_batch_s: first.wait_s,
        batch_ms: Dist::of(&waits),
        batches: batches.len() as u64,
        samples: batches.iter().map(|b| b.samples).sum(),
        bytes: batches.iter().map(|b| b.bytes).sum(),
    })
}

/// Writes a synthetic dataset for trying the reader: `files` files of `rows` samples each
/// (Parquet: an id, a label and a 64-value float feature list per row, in row groups of 1,024;
/// JSON Lines: the same as objects; raw: `rows` bytes of seeded noise per file). Returns the
/// paths written.
pub fn generate(
    dir: &Path,
    format: LoaderFormat,
    files: usize,
    rows: usize,
) -> std::io::Result<Vec<PathBuf>> {
    use rand::{Rng, SeedableRng};
    std::fs::create_dir_all(dir)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut out = Vec::new();
    for f in 0..files {
        let ext = match format {
            LoaderFormat::Parquet => "parquet",
            LoaderFormat::Jsonl => "jsonl",
            LoaderFormat::Raw => "bin",
        };
        let path = dir.join(format!("part-{f:05}.{ext}"));
        match format {
            LoaderFormat::Raw => {
                let bytes: Vec<u8> = (0..rows).map(|_| rng.random()).collect();
                std::fs::write(&path, bytes)?;
            }
            LoaderFormat::Jsonl => {
                let mut text = String::new();
                for r in 0..rows {
                    let feats: Vec<f32> = (0..64).map(|_| rng.random()).collect();
                    let line = serde_json::json!({
                        "id": f * rows + r, "label": rng.random_range(0..10), "features": feats
                    });
                    text.push_str(&line.to_string());
                    text.push('\n');
                }
                std::fs::write(&path, text)?;
            }
            LoaderFormat::Parquet => write_parquet(&path, f * rows, rows, &mut rng)?,
        }
        out.push(path);
    }
    Ok(out)
}

fn write_parquet(
    path: &Path,
    first_id: usize,
    rows: usize,
    rng: &mut impl rand::Rng,
) -> std::io::Result<()> {
    use parquet::data_type::{FloatType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use std::sync::Arc;
    let schema = Arc::new(
        parquet::schema::parser::parse_message_type(
            "message sample { REQUIRED INT64 id; REQUIRED INT64 label; \
             REPEATED FLOAT features; }",
        )
        .map_err(std::io::Error::other)?,
    );
    let props = Arc::new(WriterProperties::builder().build());
    let file = File::create(path)?;
    let mut w = SerializedFileWriter::new(file, schema, props).map_err(std::io::Error::other)?;
    const GROUP: usize = 1024;
    const FEATURES: usize = 64;
    let mut start = 0;
    while start < rows {
        let n = GROUP.min(rows - start);
        let ids: Vec<i64> = (0..n).map(|i| (first_id + start + i) as i64).collect();
        let labels: Vec<i64> = (0..n).map(|_| rng.random_range(0..10)).collect();
        let feats: Vec<f32> = (0..n * FEATURES).map(|_| rng.random()).collect();
        // Repetition levels: 0 starts a row, 1 continues its list.
        let rep: Vec<i16> = (0..n * FEATURES)
            .map(|i| i16::from(i % FEATURES != 0))
            .collect();
        let def = vec![1i16; n * FEATURES];
        let mut rg = w.next_row_group().map_err(std::io::Error::other)?;
        let mut col = 0;
        while let Some(mut c) = rg.next_column().map_err(std::io::Error::other)? {
            match col {
                0 => c.typed::<Int64Type>().write_batch(&ids, None, None),
                1 => c.typed::<Int64Type>().write_batch(&labels, None, None),
                _ => c
                    .typed::<FloatType>()
                    .write_batch(&feats, Some(&def), Some(&rep)),
            }
            .map_err(std::io::Error::other)?;
            c.close().map_err(std::io::Error::other)?;
            col += 1;
        }
        rg.close().map_err(std::io::Error::other)?;
        start += n;
    }
    w.close().map_err(std::io::Error::other)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(dir: &Path, format: LoaderFormat, cache: CacheMode) -> ReaderConfig {
        ReaderConfig {
            dir: dir.to_path_buf(),
            pattern: None,
            format,
            batch: 100,
            workers: 3,
            cache,
        }
    }

    #[test]
    fn every_sample_of_every_format_arrives_once_in_batches() {
        for (format, rows, want) in [
            (LoaderFormat::Parquet, 2500, 5 * 2500),
            (LoaderFormat::Jsonl, 300, 5 * 300),
            (LoaderFormat::Raw, 4096, 5),
        ] {
            let dir = tempfile::tempdir().unwrap();
            generate(dir.path(), format, 5, rows).unwrap();
            let c = cfg(dir.path(), format, CacheMode::Warm);
            let files = list_files(&c).unwrap();
            assert_eq!(files.len(), 5);
            let p = read_pass(&c, &files, &|| false);
            assert_eq!(p.error, None, "{format:?}");
            let samples: u64 = p.batches.iter().map(|b| b.samples).sum();
            assert_eq!(samples, want, "{format:?}");
            assert!(p.batches.iter().all(|b| b.samples <= 100));
            let bytes: u64 = p.batches.iter().map(|b| b.bytes).sum();
            if format != LoaderFormat::Parquet {
                // Every byte of a JSON Lines or raw file is a sample's.
                assert_eq!(bytes, p.file_bytes, "{format:?}");
            } else {
                // Row groups' compressed bytes: most of the file, never more.
                assert!(bytes > p.file_bytes / 2 && bytes <= p.file_bytes);
            }
            let s = supply(&p.batches).unwrap();
            assert_eq!(s.samples, want);
            assert!(s.samples_per_s > 0.0 && s.first_batch_s > 0.0);
        }
    }

    #[test]
    fn a_cold_pass_starts_from_evicted_files() {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path(), LoaderFormat::Raw, 4, 1 << 20).unwrap();
        let c = cfg(dir.path(), LoaderFormat::Raw, CacheMode::Cold);
        let files = list_files(&c).unwrap();
        let p = read_pass(&c, &files, &|| false);
        let r = p.resident_before.unwrap();
        assert!(r <= COLD_RESIDENT_MAX, "resident before a cold pass: {r}");
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        // And a warm pass finds them read in.
        let w = read_pass(
            &cfg(dir.path(), LoaderFormat::Raw, CacheMode::Warm),
            &files,
            &|| false,
        );
        assert_eq!(w.resident_before, None);
        assert_eq!(resident(&files), Some(1.0));
    }

    #[test]
    fn a_cancelled_pass_stops_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path(), LoaderFormat::Jsonl, 2, 2000).unwrap();
        let c = cfg(dir.path(), LoaderFormat::Jsonl, CacheMode::Warm);
        let files = list_files(&c).unwrap();
        let p = read_pass(&c, &files, &|| true);
        assert_eq!(
            p.error.as_deref(),
            Some("cancelled before the pass finished")
        );
        assert!(p.batches.len() <= 1, "{}", p.batches.len());
    }

    #[test]
    fn a_bad_line_stops_the_pass_and_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.jsonl"), "{\"x\":1}\n{oops\n").unwrap();
        let c = cfg(dir.path(), LoaderFormat::Jsonl, CacheMode::Warm);
        let files = list_files(&c).unwrap();
        let p = read_pass(&c, &files, &|| false);
        let e = p.error.unwrap();
        assert!(e.contains("a.jsonl:2: not a JSON line"), "{e}");
    }

    #[test]
    fn patterns_select_files_and_nothing_matching_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for f in ["a.jsonl", "b.txt", "sub/c.jsonl", ".hidden.jsonl"] {
            std::fs::write(dir.path().join(f), "{}\n").unwrap();
        }
        let c = cfg(dir.path(), LoaderFormat::Jsonl, CacheMode::Warm);
        let names: Vec<String> = list_files(&c)
            .unwrap()
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a.jsonl", "sub/c.jsonl"]);
        let mut c = c;
        c.pattern = Some("*.parquet".into());
        let e = list_files(&c).unwrap_err().to_string();
        assert!(e.contains("no files match `*.parquet`"), "{e}");
    }

    #[test]
    fn supply_is_the_steady_state_after_the_first_batch() {
        let b = |wait_s, samples| Batch {
            wait_s,
            samples,
            bytes: samples * 10,
        };
        let s = supply(&[b(2.0, 10), b(0.5, 10), b(0.5, 10)]).unwrap();
        assert_eq!(s.first_batch_s, 2.0);
        assert_eq!(s.samples_per_s, 20.0);
        assert_eq!(s.mb_per_s, Some(200.0 / 1e6));
        assert_eq!(s.batch_ms.as_ref().unwrap().p50, 500.0);
        assert_eq!((s.batches, s.samples, s.bytes), (3, 30, 300));
        // One batch: its own rate, no steady-state distribution.
        let one = supply(&[b(0.25, 5)]).unwrap();
        assert_eq!(one.samples_per_s, 20.0);
        assert!(one.batch_ms.is_none());
        assert!(supply(&[]).is_none());
    }
}

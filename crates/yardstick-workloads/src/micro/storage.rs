//! Storage throughput and latency on a directory, comparable to fio's `rw=write|read|randread|
//! randwrite` jobs at queue depth 1.
//!
//! Each replicate creates a fresh file (removed afterwards) and runs: sequential write (1 MiB
//! blocks, ended by `fdatasync`), sequential read (1 MiB blocks), random 4 KiB reads and random
//! 4 KiB writes at aligned offsets for a time budget each. Every operation is timed: p50/p99
//! latency per 1 MiB block of the sequential passes and per 4 KiB operation of the random ones. Direct I/O (`O_DIRECT`, aligned
//! buffers) is used where the filesystem allows it, so the page cache is not measured; where it
//! does not (tmpfs, some overlay filesystems), the file is written through the cache, synced,
//! and dropped from the cache with `posix_fadvise(DONTNEED)` before every read pass, and the
//! report says so (`io_mode`).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::trial::{MetricSamples, Stat, iterate, summarize};
use super::{MicroConfig, MicroError, MicroReport, TrialPolicy};

/// Default file size: 256 MiB.
pub const DEFAULT_FILE_BYTES: u64 = 256 << 20;
/// Sequential block size.
pub const SEQ_BLOCK: usize = 1 << 20;
/// Random block size.
pub const RAND_BLOCK: usize = 4096;
/// Default time budget of one random-I/O iteration.
pub const DEFAULT_RANDOM_BUDGET: Duration = Duration::from_millis(500);
/// Default measured iterations per replicate.
pub const DEFAULT_ITERATIONS: usize = 3;

const ALIGN: usize = 4096;

/// A heap buffer aligned for direct I/O.
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize) -> Self {
        let layout = std::alloc::Layout::from_size_align(len, ALIGN).expect("valid layout");
        // SAFETY: len > 0 (callers pass block sizes), layout is valid.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "allocation of {len} bytes failed");
        Self { ptr, len }
    }
    fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to len initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len, ALIGN).expect("valid layout");
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) }
    }
}

/// Removes the probe file when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// How the file is accessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IoMode {
    Direct,
    BufferedDropCache,
}

impl IoMode {
    fn name(self) -> &'static str {
        match self {
            IoMode::Direct => "direct",
            IoMode::BufferedDropCache => "buffered+fadvise-dontneed",
        }
    }
}

fn open(path: &Path, mode: IoMode, write: bool, create: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(write).create(create).truncate(create);
    #[cfg(target_os = "linux")]
    if mode == IoMode::Direct {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_DIRECT);
    }
    let _ = mode;
    o.open(path)
}

#[cfg(unix)]
fn pwrite(f: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.write_all_at(buf, offset)
}

#[cfg(unix)]
fn pread(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.read_exact_at(buf, offset)
}

fn drop_cache(f: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a valid open descriptor; the call only advises the kernel.
        unsafe {
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    let _ = f;
}

/// Decides the I/O mode for `dir`: direct when an aligned direct write succeeds there.
fn probe_mode(dir: &Path) -> IoMode {
    if !cfg!(target_os = "linux") {
        return IoMode::BufferedDropCache;
    }
    let path = dir.join(format!(".yardstick-odirect-{}", std::process::id()));
    let _guard = TempFile(path.clone());
    let Ok(f) = open(&path, IoMode::Direct, true, true) else {
        return IoMode::BufferedDropCache;
    };
    let buf = AlignedBuf::new(ALIGN);
    if pwrite(&f, buf.as_slice(), 0).is_ok() {
        IoMode::Direct
    } else {
        IoMode::BufferedDropCache
    }
}

/// Runs the storage benchmark.
pub fn run(config: &MicroConfig, policy: &TrialPolicy) -> Result<MicroReport, MicroError> {
    let dir = config.path.clone().unwrap_or_else(std::env::temp_dir);
    if !dir.is_dir() {
        return Err(MicroError::InvalidConfig(format!(
            "storage path {} is not a directory",
            dir.display()
        )));
    }
    let bytes = config.sizes.first().copied().unwrap_or(DEFAULT_FILE_BYTES);
    if bytes < (SEQ_BLOCK as u64) * 2 {
        return Err(MicroError::InvalidConfig(format!(
            "storage file size {bytes} bytes is too small: give at least {} bytes (2 MiB)",
            SEQ_BLOCK * 2
        )));
    }
    let blocks = bytes / SEQ_BLOCK as u64;
    let bytes = blocks * SEQ_BLOCK as u64;
    let budget = config.duration.unwrap_or(DEFAULT_RANDOM_BUDGET);
    let measured = policy.iterations_or(DEFAULT_ITERATIONS);
    let mode = probe_mode(&dir);
    let prefix = config.prefix();
    let mut report = MicroReport::default();
    if mode != IoMode::Direct {
        report.warnings.push(format!(
            "storage: {} does not allow O_DIRECT; reads are cold only through \
             posix_fadvise(DONTNEED) after fdatasync",
            dir.display()
        ));
    }
    let mk = |name: &str, unit: &str, hib: bool, stat: Stat, block: usize| {
        let mut m = MetricSamples::new(format!("{prefix}.{name}"), unit, hib, stat);
        m.param("path", dir.display().to_string());
        m.param("file_bytes", bytes);
        m.param("block_bytes", block);
        m.param("io_mode", mode.name());
        m.param("queue_depth", 1);
        m
    };
    let mut seq_write = mk("seq_write", "MB/s", true, Stat::Median, SEQ_BLOCK);
    let mut seq_read = mk("seq_read", "MB/s", true, Stat::Median, SEQ_BLOCK);
    let mut rand_read = mk("rand_read", "MB/s", true, Stat::Median, RAND_BLOCK);
    let mut rand_write = mk("rand_write", "MB/s", true, Stat::Median, RAND_BLOCK);
    let mut rr_p50 = mk(
        "rand_read.p50_us",
        "us",
        false,
        Stat::Quantile(0.5),
        RAND_BLOCK,
    );
    let mut rr_p99 = mk(
        "rand_read.p99_us",
        "us",
        false,
        Stat::Quantile(0.99),
        RAND_BLOCK,
    );
    let mut rw_p50 = mk(
        "rand_write.p50_us",
        "us",
        false,
        Stat::Quantile(0.5),
        RAND_BLOCK,
    );
    let mut rw_p99 = mk(
        "rand_write.p99_us",
        "us",
        false,
        Stat::Quantile(0.99),
        RAND_BLOCK,
    );
    let mut sr_p50 = mk(
        "seq_read.p50_us",
        "us",
        false,
        Stat::Quantile(0.5),
        SEQ_BLOCK,
    );
    let mut sr_p99 = mk(
        "seq_read.p99_us",
        "us",
        false,
        Stat::Quantile(0.99),
        SEQ_BLOCK,
    );
    let mut sw_p50 = mk(
        "seq_write.p50_us",
        "us",
        false,
        Stat::Quantile(0.5),
        SEQ_BLOCK,
    );
    let mut sw_p99 = mk(
        "seq_write.p99_us",
        "us",
        false,
        Stat::Quantile(0.99),
        SEQ_BLOCK,
    );
    for m in [&mut rand_read, &mut rand_write] {
        m.param("iteration_budget_ms", budget.as_millis() as u64);
    }

    for rep in 0..policy.replicates {
        let path = dir.join(format!(
            ".yardstick-storage-{}-{rep}.tmp",
            std::process::id()
        ));
        let _guard = TempFile(path.clone());
        let f = open(&path, mode, true, true)
            .map_err(|e| MicroError::io(format!("creating {}", path.display()), e))?;
        let mut rng = ChaCha8Rng::seed_from_u64(policy.seed ^ rep as u64);
        let mut buf = AlignedBuf::new(SEQ_BLOCK);
        rng.fill(buf.as_mut_slice());

        // Per-block latency of the sequential passes: every iteration does `blocks` operations,
        // so the warm-up iterations' share is `w * blocks`. The write pass's closing fdatasync
        // is in its throughput, not in any block's latency.
        let mut lat = Vec::new();
        let (s, w) = iterate(policy, measured, || {
            let t = Instant::now();
            for i in 0..blocks {
                let t_op = Instant::now();
                pwrite(&f, buf.as_slice(), i * SEQ_BLOCK as u64)
                    .map_err(|e| MicroError::io("sequential write", e))?;
                lat.push(t_op.elapsed().as_secs_f64() * 1e6);
            }
            f.sync_data().map_err(|e| MicroError::io("fdatasync", e))?;
            Ok(bytes as f64 / t.elapsed().as_secs_f64() / 1e6)
        })?;
        let skip = w * blocks as usize;
        seq_write.push_replicate(s, w);
        sw_p50.push_replicate(lat[skip..].to_vec(), 0);
        sw_p99.push_replicate(lat[skip..].to_vec(), 0);

        let mut lat = Vec::new();
        let (s, w) = iterate(policy, measured, || {
            drop_cache(&f);
            let t = Instant::now();
            for i in 0..blocks {
                let t_op = Instant::now();
                pread(&f, buf.as_mut_slice(), i * SEQ_BLOCK as u64)
                    .map_err(|e| MicroError::io("sequential read", e))?;
                lat.push(t_op.elapsed().as_secs_f64() * 1e6);
            }
            Ok(bytes as f64 / t.elapsed().as_secs_f64() / 1e6)
        })?;
        let skip = w * blocks as usize;
        seq_read.push_replicate(s, w);
        sr_p50.push_replicate(lat[skip..].to_vec(), 0);
        sr_p99.push_replicate(lat[skip..].to_vec(), 0);

        let slots = bytes / RAND_BLOCK as u64;
        let mut small = AlignedBuf::new(RAND_BLOCK);
        // Every operation's latency, and how many each iteration did (to drop the warm-up's).
        let (mut lat, mut per_iter) = (Vec::new(), Vec::new());
        let (s, w) = iterate(policy, measured, || {
            drop_cache(&f);
            let before = lat.len();
            let t = Instant::now();
            while t.elapsed() < budget || lat.len() == before {
                let off = rng.random_range(0..slots) * RAND_BLOCK as u64;
                let t_op = Instant::now();
                pread(&f, small.as_mut_slice(), off)
                    .map_err(|e| MicroError::io("random read", e))?;
                lat.push(t_op.elapsed().as_secs_f64() * 1e6);
            }
            let ops = lat.len() - before;
            per_iter.push(ops);
            Ok(ops as f64 * RAND_BLOCK as f64 / t.elapsed().as_secs_f64() / 1e6)
        })?;
        let skip: usize = per_iter[..w].iter().sum();
        rand_read.push_replicate(s, w);
        rr_p50.push_replicate(lat[skip..].to_vec(), 0);
        rr_p99.push_replicate(lat[skip..].to_vec(), 0);

        let (mut lat, mut per_iter) = (Vec::new(), Vec::new());
        let (s, w) = iterate(policy, measured, || {
            let before = lat.len();
            let t = Instant::now();
            while t.elapsed() < budget || lat.len() == before {
                let off = rng.random_range(0..slots) * RAND_BLOCK as u64;
                let t_op = Instant::now();
                pwrite(&f, small.as_slice(), off).map_err(|e| MicroError::io("random write", e))?;
                lat.push(t_op.elapsed().as_secs_f64() * 1e6);
            }
            // Buffered writes are not durable until synced: the sync is part of the work.
            if mode != IoMode::Direct {
                f.sync_data().map_err(|e| MicroError::io("fdatasync", e))?;
            }
            let ops = lat.len() - before;
            per_iter.push(ops);
            Ok(ops as f64 * RAND_BLOCK as f64 / t.elapsed().as_secs_f64() / 1e6)
        })?;
        let skip: usize = per_iter[..w].iter().sum();
        rand_write.push_replicate(s, w);
        rw_p50.push_replicate(lat[skip..].to_vec(), 0);
        rw_p99.push_replicate(lat[skip..].to_vec(), 0);
    }
    for m in [
        &seq_read,
        &seq_write,
        &rand_read,
        &rand_write,
        &sr_p50,
        &sr_p99,
        &sw_p50,
        &sw_p99,
        &rr_p50,
        &rr_p99,
        &rw_p50,
        &rw_p99,
    ] {
        report.results.push(summarize(m, policy)?);
    }
    Ok(report)
}

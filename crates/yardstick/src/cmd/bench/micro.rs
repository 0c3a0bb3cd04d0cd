//! `yardstick bench micro`: wiring of the micro layer (`yardstick_workloads::micro`) to the CLI.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use yardstick_spec::model::{MicroKind, OutlierPolicy, Precision};
use yardstick_workloads::micro::{
    self, MicroConfig, MicroError, MicroReport, MicroResult, TrialPolicy, Warmup,
};

use crate::cli::{GlobalOpts, verbosity};
use crate::exit::{self, Status};
use crate::output::{self, style};

/// Measure subsystem limits: memory bandwidth, GEMM FLOP/s, storage, network and GPUs.
///
/// GPU probes (gpu-memory, gpu-pcie, gpu-gemm, or `gpu` for all three) run on every GPU the
/// CUDA driver shows; the driver and cuBLASLt are loaded when they run, and where either or a
/// GPU is missing the probe is listed as skipped with what it looked for.
///
/// Each benchmark runs warm-up iterations (discarded), then --replicates independent
/// replicates (fresh buffers, files, connections) of --iterations measured iterations; a
/// figure is the median with a cluster-bootstrap confidence interval. Build with --release:
/// a debug build measures the compiler, not the machine. Methods: docs/micro.md.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick bench micro memory gemm --json\n  \
yardstick bench micro storage --path /mnt/data --storage-size 1GiB\n  \
yardstick bench micro network --listen 0.0.0.0:9753      # on the peer\n  \
yardstick bench micro network --peer HOST:9753            # here\n  \
yardstick bench micro gpu --json                          # HBM, PCIe and matmul peak\n  \
yardstick bench micro gpu-gemm --gpu-gemm-dtype bf16,fp8 --gpu-gemm-size 4096,8192"
)]
pub struct MicroArgs {
    /// Benchmarks to run: memory, gemm, storage, network, gpu-memory, gpu-pcie, gpu-gemm, or
    /// gpu (the three GPU probes) [default: the four CPU-side ones].
    #[arg(value_name = "KIND")]
    pub kinds: Vec<String>,
    /// Independent replicates of each benchmark (the methodology asks for >= 3).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub replicates: usize,
    /// Warm-up iterations discarded at the start of every replicate (or `mser5`).
    #[arg(long, default_value = "1", value_name = "N|mser5")]
    pub warmup: String,
    /// Measured iterations per replicate [default: memory 10, gemm 10, storage 3, network 10].
    #[arg(long, value_name = "N")]
    pub iterations: Option<usize>,
    /// Confidence level of the intervals, in (0, 1).
    #[arg(long, default_value_t = 0.95, value_name = "LEVEL")]
    pub confidence: f64,
    /// Bootstrap and data seed.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seed: u64,
    /// Outlier policy: report-tukey, trim-tukey, report-mad, trim-mad or none.
    #[arg(long, default_value = "report-tukey", value_name = "POLICY")]
    pub outliers: String,
    /// Threads of the memory and GEMM benchmarks [default: the CPUs this process may use].
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Bytes per STREAM array, e.g. 128MiB (repeatable, or comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "SIZE")]
    pub memory_size: Vec<String>,
    /// GEMM sizes N (N×N×N), comma-separated [default: 512,1024,2048].
    #[arg(long, value_delimiter = ',', value_name = "N")]
    pub gemm_size: Vec<u64>,
    /// GEMM element types, comma-separated: fp32, bf16, fp64 [default: fp32,bf16 — bf16 only
    /// where the CPU has avx512_bf16, else listed as skipped; both give gemm.bf16_vs_f32.N].
    #[arg(long, value_delimiter = ',', value_name = "DTYPE")]
    pub gemm_dtype: Vec<String>,
    /// Bytes per GPU buffer of gpu-memory, comma-separated [default: 16MiB,256MiB,1GiB,4GiB;
    /// the largest gives gpu.hbm.copy/read/write].
    #[arg(long, value_delimiter = ',', value_name = "SIZE")]
    pub gpu_memory_size: Vec<String>,
    /// Shapes N (N×N×N) of gpu-gemm, multiples of 16, comma-separated
    /// [default: 1024,2048,4096,8192,16384].
    #[arg(long, value_delimiter = ',', value_name = "N")]
    pub gpu_gemm_size: Vec<u64>,
    /// Element types of gpu-gemm, comma-separated: bf16, fp16, tf32, fp32, fp8
    /// [default: bf16,fp16,tf32,fp8 — fp8 where the GPU has it].
    #[arg(long, value_delimiter = ',', value_name = "DTYPE")]
    pub gpu_gemm_dtype: Vec<String>,
    /// Bytes per host↔device transfer of gpu-pcie [default: 256MiB].
    #[arg(long, value_name = "SIZE")]
    pub pcie_size: Option<String>,
    /// Directory of the storage benchmark [default: the system temp directory].
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
    /// Size of the storage test file, e.g. 1GiB [default: 256MiB].
    #[arg(long, value_name = "SIZE")]
    pub storage_size: Option<String>,
    /// Bytes streamed per network bandwidth iteration [default: 256MiB].
    #[arg(long, value_name = "SIZE")]
    pub network_size: Option<String>,
    /// Time budget of one random-I/O or RTT iteration, e.g. 500ms.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Measure the network to HOST[:PORT] running `yardstick bench micro network --listen`
    /// [default: loopback, against a listener of our own].
    #[arg(long, value_name = "HOST[:PORT]")]
    pub peer: Option<String>,
    /// Run a listener for --peer clients on ADDR (e.g. 0.0.0.0:9753) instead of measuring.
    #[arg(long, value_name = "ADDR", conflicts_with = "peer")]
    pub listen: Option<String>,
    /// Stop the listener after this long [default: until interrupted].
    #[arg(long, value_name = "DURATION", requires = "listen")]
    pub listen_for: Option<String>,
}

/// The JSON of `yardstick bench micro --json`.
/// What `yardstick bench micro --json` prints.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct MicroOutput<'a> {
    /// This machine's profile key.
    pub machine_profile: String,
    /// Its hash.
    pub profile_hash: String,
    /// The trial policy every benchmark ran under.
    pub policy: &'a TrialPolicy,
    /// Every measured metric.
    pub results: Vec<MicroResult>,
    /// What could not be measured here, and why.
    pub skipped: Vec<micro::Skipped>,
    /// Things to know before quoting the numbers.
    pub warnings: Vec<String>,
}

fn parse_kind(s: &str) -> anyhow::Result<MicroKind> {
    s.parse().map_err(|e: yardstick_spec::units::UnitError| {
        exit::invalid(e.to_string(), Some(&e.hint()))
    })
}

fn parse_size(flag: &str, s: &str) -> anyhow::Result<u64> {
    yardstick_spec::units::parse_bytes(s).map_err(|e| crate::cmd::flag_error(flag, e))
}

fn parse_policy(args: &MicroArgs) -> anyhow::Result<TrialPolicy> {
    let warmup = if args.warmup.eq_ignore_ascii_case("mser5") {
        Warmup::Mser5
    } else {
        match args.warmup.parse::<usize>() {
            Ok(n) => Warmup::Iterations(n),
            Err(_) => {
                return Err(exit::invalid(
                    format!("--warmup: `{}` is not a count", args.warmup),
                    Some("give a number of iterations, e.g. --warmup 2, or --warmup mser5"),
                ));
            }
        }
    };
    let outliers: OutlierPolicy = args
        .outliers
        .parse()
        .map_err(|e| crate::cmd::flag_error("outliers", e))?;
    let policy = TrialPolicy {
        replicates: args.replicates,
        warmup,
        iterations: args.iterations,
        confidence: args.confidence,
        seed: args.seed,
        outliers,
    };
    policy.validate().map_err(|e| {
        exit::invalid(
            e.to_string(),
            Some("e.g. --replicates 3 --iterations 10 --confidence 0.95"),
        )
    })?;
    Ok(policy)
}

fn configs(args: &MicroArgs) -> anyhow::Result<Vec<MicroConfig>> {
    let kinds: Vec<MicroKind> = if args.kinds.is_empty() {
        vec![
            MicroKind::Memory,
            MicroKind::Gemm,
            MicroKind::Storage,
            MicroKind::Network,
        ]
    } else {
        let mut v = Vec::new();
        for s in &args.kinds {
            let ks = if s.trim().eq_ignore_ascii_case("gpu") {
                vec![MicroKind::GpuMemory, MicroKind::GpuPcie, MicroKind::GpuGemm]
            } else {
                vec![parse_kind(s)?]
            };
            for k in ks {
                if !v.contains(&k) {
                    v.push(k);
                }
            }
        }
        v
    };
    if args.threads == Some(0) {
        return Err(exit::invalid(
            "--threads must be >= 1",
            Some("omit it to use every CPU"),
        ));
    }
    let duration = args
        .duration
        .as_deref()
        .map(|d| crate::cmd::parse_duration("duration", d))
        .transpose()?;
    let dtypes = args
        .gemm_dtype
        .iter()
        .map(|d| d.parse::<Precision>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| crate::cmd::flag_error("gemm-dtype", e))?;
    if let Some(p) = &args.path
        && !p.is_dir()
    {
        return Err(exit::invalid(
            format!("--path {}: not a directory", p.display()),
            Some("give an existing directory on the filesystem to measure"),
        ));
    }
    let mut out = Vec::new();
    for kind in kinds {
        let mut c = MicroConfig::new(kind);
        c.threads = args.threads;
        c.duration = duration;
        match kind {
            MicroKind::Memory => {
                for s in &args.memory_size {
                    c.sizes.push(parse_size("memory-size", s)?);
                }
            }
            MicroKind::Gemm => {
                c.sizes = args.gemm_size.clone();
                c.dtypes = dtypes.clone();
            }
            MicroKind::Storage => {
                c.path = args.path.clone();
                if let Some(s) = &args.storage_size {
                    c.sizes.push(parse_size("storage-size", s)?);
                }
            }
            MicroKind::Network => {
                c.peer = args.peer.clone();
                if let Some(s) = &args.network_size {
                    c.sizes.push(parse_size("network-size", s)?);
                }
            }
            MicroKind::GpuMemory => {
                for s in &args.gpu_memory_size {
                    c.sizes.push(parse_size("gpu-memory-size", s)?);
                }
            }
            MicroKind::GpuPcie => {
                if let Some(s) = &args.pcie_size {
                    c.sizes.push(parse_size("pcie-size", s)?);
                }
            }
            MicroKind::GpuGemm => {
                c.sizes = args.gpu_gemm_size.clone();
                c.dtypes = args
                    .gpu_gemm_dtype
                    .iter()
                    .map(|d| d.parse::<Precision>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| crate::cmd::flag_error("gpu-gemm-dtype", e))?;
            }
        }
        out.push(c);
    }
    Ok(out)
}

/// Runs `yardstick bench micro`.
pub fn run(args: MicroArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if let Some(bind) = &args.listen {
        return listen(bind, &args);
    }
    let policy = parse_policy(&args)?;
    let configs = configs(&args)?;
    let capture = yardstick_env::capture(&yardstick_env::CaptureOptions {
        probe_python: false,
        probe_rustc: false,
        probe_git_status: false,
        ..Default::default()
    });
    let mut all = MicroReport::default();
    for c in &configs {
        if verbosity() >= 0 {
            output::info(&format!(
                "{}measuring {}…{}",
                style::DIM,
                micro::kind_name(c.kind),
                style::RESET
            ));
        }
        let report = micro::run(c, &policy).map_err(|e| match e {
            MicroError::InvalidConfig(m) => {
                exit::invalid(m, Some("see yardstick bench micro --help"))
            }
            other => anyhow::Error::new(other)
                .context(format!("{} benchmark failed", micro::kind_name(c.kind))),
        })?;
        all.results.extend(report.results);
        all.skipped.extend(report.skipped);
        for w in report.warnings {
            if !all.warnings.contains(&w) {
                all.warnings.push(w);
            }
        }
    }
    if g.json {
        output::json(&MicroOutput {
            machine_profile: capture.machine_profile,
            profile_hash: capture.profile_hash,
            policy: &policy,
            results: all.results,
            skipped: all.skipped,
            warnings: all.warnings,
        })?;
    } else {
        for w in &all.warnings {
            output::warn(w);
        }
        let text = yardstick_workloads::micro::text::table(&capture.machine_profile, &policy, &all);
        output::text(&text)?;
    }
    Ok(Status::Ok)
}

fn listen(bind: &str, args: &MicroArgs) -> anyhow::Result<Status> {
    let non_network = args
        .kinds
        .iter()
        .any(|k| parse_kind(k).map_or(true, |k| k != MicroKind::Network));
    if non_network {
        return Err(exit::invalid(
            "--listen serves only the network benchmark",
            Some("run `yardstick bench micro network --listen ADDR`"),
        ));
    }
    let limit = args
        .listen_for
        .as_deref()
        .map(|d| crate::cmd::parse_duration("listen-for", d))
        .transpose()?;
    let l = micro::network::Listener::bind(bind).map_err(|e| {
        exit::invalid(
            format!("--listen {bind}: {e}"),
            Some("give a free HOST:PORT, e.g. 0.0.0.0:9753"),
        )
    })?;
    output::info(&format!(
        "listening on {} for `yardstick bench micro network --peer {}`{}",
        l.addr(),
        l.addr(),
        limit.map_or(" (Ctrl-C to stop)".to_owned(), |d| format!(
            " for {:.1}s",
            d.as_secs_f64()
        ))
    ));
    let start = std::time::Instant::now();
    while limit.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    output::info(&format!("served {} connection(s)", l.connections()));
    l.stop();
    Ok(Status::Ok)
}

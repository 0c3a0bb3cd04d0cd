//! `yardstick import nccl|fio|stream FILE...`: store the standard tools' output as a run;
//! `yardstick import genai-bench|aiperf|vllm-bench|guidellm DIR|FILE`: store another LLM-serving
//! benchmark's results as a run of serve points.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use yardstick_run::import::{self, EnvSource, ImportFile, ImportOptions, Tool};

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};
use crate::output;

/// Import nccl-tests, fio JSON, STREAM, or LLM-serving benchmark results (genai-bench, AIPerf,
/// vllm bench serve, GuideLLM) into the store and warehouse.
///
/// Serving tools: one import is one run; every (scenario, load level) the tool measured is a
/// serve point `import.<tool>/<scenario>/<concurrency|rate>=<n>` with one replicate, so
/// compare, gate, report and the dashboard read it like a `yardstick run`. Mapped to our ids
/// only where the definition is ours: ttft_ms, tpot_ms ((e2e - ttft) / (tokens - 1): genai-bench
/// tpot, AIPerf inter_token_latency, vLLM tpot, GuideLLM inter_token_latency_ms — never
/// GuideLLM's time_per_output_token_ms, which includes the first token), itl_ms (every gap:
/// AIPerf inter_chunk_latency, vLLM itl), e2e_ms, throughputs, requests, duration_s; latencies
/// in ms. Caveat: the tools time TTFT from their own request start, yardstick from the scheduled
/// send, so under an open loop they differ by client queueing. The run's notes and
/// docs/import.md say where each figure comes from. genai-bench and aiperf take their output
/// directory (or its main JSON), vllm-bench and guidellm their JSON file.
///
/// Each FILE is one run of the tool and a replicate of one point (`import.<tool>`): figures are
/// the mean over files with a Student-t interval (from 2 files; the methodology asks for 3).
/// Names match the micro layer where the measurement is the same (`memory.triad` GB/s from
/// STREAM, `storage.seq_read` MB/s from fio), else `nccl.<op>.busbw.<bytes>` (GB/s, out of
/// place) and `fio.<job>.<read|write>`. The files are kept verbatim under `imports/` in the
/// run directory. Say where the tool ran, so the run gets its machine profile: --here, --env
/// (a `yardstick env --json` taken there) or --profile.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
all_reduce_perf -b 8 -e 8G -f 2 -g 8 > ar1.txt   # x3\n  \
yardstick import nccl ar1.txt ar2.txt ar3.txt --env h100-node-env.json\n  \
fio --output-format=json job.fio > fio.json && yardstick import fio fio.json --here\n  \
./stream_c.exe > stream.txt && yardstick import stream stream.txt --here --json\n  \
yardstick import genai-bench experiments/genai-bench-sim --profile H100x8_drv570_cuda12.8\n  \
yardstick import aiperf artifacts/sim-openai-chat-concurrency4 --here\n  \
yardstick import vllm-bench out/vllm-bench.json --here && yardstick import guidellm benchmarks.json --here")]
pub struct ImportArgs {
    /// The tool that wrote the files.
    #[arg(value_enum, value_name = "TOOL")]
    pub tool: ToolArg,
    /// Output files of the tool (one per run; `-` reads standard input once); for a serving
    /// tool, its output directory or file.
    #[arg(value_name = "FILE|DIR", required = true)]
    pub files: Vec<PathBuf>,
    /// Store directory (runs and the SQLite warehouse), or set YARDSTICK_STORE.
    #[arg(
        long,
        env = "YARDSTICK_STORE",
        default_value = "yardstick-store",
        value_name = "DIR"
    )]
    pub store: PathBuf,
    /// Warehouse URL when not the store's SQLite (postgres://...).
    #[arg(long, value_name = "URL")]
    pub warehouse: Option<String>,
    /// Sign the imported run with this secret key (from `yardstick keygen`); a store that
    /// requires signatures (`yardstick trust require on`) takes only imports signed by a key
    /// it trusts.
    #[arg(long, value_name = "KEY")]
    pub key: Option<PathBuf>,
    /// Benchmark name of the run [default: import-<tool>, import-nccl-<collective>].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The tool ran on this machine: capture its environment and machine profile now.
    #[arg(long, conflicts_with_all = ["env", "profile"])]
    pub here: bool,
    /// A `yardstick env --json` capture from the machine the tool ran on.
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub env: Option<PathBuf>,
    /// The machine-profile key of the machine the tool ran on (no detailed capture).
    #[arg(long, value_name = "KEY")]
    pub profile: Option<String>,
    /// Confidence level of the interval over files, in (0, 1).
    #[arg(long, default_value_t = 0.95, value_name = "LEVEL")]
    pub confidence: f64,
}

/// The tools.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ToolArg {
    /// nccl-tests (`all_reduce_perf`, `all_gather_perf`, ...).
    Nccl,
    /// fio with `--output-format=json`.
    Fio,
    /// McCalpin's STREAM.
    Stream,
    /// genai-bench: its experiment folder (or one run JSON).
    GenaiBench,
    /// AIPerf: its artifact directory (or profile_export_aiperf.json).
    Aiperf,
    /// `vllm bench serve --save-result`: its JSON.
    VllmBench,
    /// GuideLLM: benchmarks.json (or the directory holding it).
    Guidellm,
}

/// The files a serving tool's input names: genai-bench's folder is its JSONs, AIPerf's is its
/// profile_export_aiperf.json, GuideLLM's its benchmarks.json.
fn serving_inputs(tool: Tool, path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let hint = match tool {
        Tool::GenaiBench => "give genai-bench's experiment folder (with its run JSONs)",
        Tool::Aiperf => "give AIPerf's artifact directory (with profile_export_aiperf.json)",
        Tool::Guidellm => "give GuideLLM's benchmarks.json or the directory holding it",
        _ => "give the JSON vllm bench serve wrote (--result-filename)",
    };
    let named = |f: &str| {
        let p = path.join(f);
        if p.is_file() {
            Ok(vec![p])
        } else {
            Err(invalid(
                format!("{}: no {f} in this directory", path.display()),
                Some(hint),
            ))
        }
    };
    match tool {
        Tool::Aiperf => named("profile_export_aiperf.json"),
        Tool::Guidellm => named("benchmarks.json"),
        Tool::GenaiBench => {
            let mut out: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| invalid(format!("cannot read {}: {e}", path.display()), Some(hint)))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
                .collect();
            out.sort();
            if out.is_empty() {
                return Err(invalid(
                    format!("{}: no JSON file in this directory", path.display()),
                    Some(hint),
                ));
            }
            Ok(out)
        }
        _ => Err(invalid(
            format!("{} is a directory", path.display()),
            Some(hint),
        )),
    }
}

pub fn run(args: ImportArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let tool = match args.tool {
        ToolArg::Nccl => Tool::Nccl,
        ToolArg::Fio => Tool::Fio,
        ToolArg::Stream => Tool::Stream,
        ToolArg::GenaiBench => Tool::GenaiBench,
        ToolArg::Aiperf => Tool::Aiperf,
        ToolArg::VllmBench => Tool::VllmBench,
        ToolArg::Guidellm => Tool::Guidellm,
    };
    let paths: Vec<PathBuf> = if tool.is_serving() {
        if args.files.len() != 1 {
            return Err(invalid(
                format!(
                    "{} takes one output directory or file ({} given)",
                    tool.display(),
                    args.files.len()
                ),
                Some("import each run of the tool separately"),
            ));
        }
        serving_inputs(tool, &args.files[0])?
    } else {
        args.files.clone()
    };
    let mut files = Vec::with_capacity(args.files.len());
    let mut stdin_read = false;
    for path in &paths {
        let (name, bytes) = if path.as_os_str() == "-" {
            if stdin_read {
                return Err(invalid("standard input (`-`) can be read only once", None));
            }
            stdin_read = true;
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)?;
            ("stdin".to_string(), buf)
        } else {
            let bytes = std::fs::read(path).map_err(|e| {
                invalid(
                    format!("cannot read {}: {e}", path.display()),
                    Some("give the tool's output file"),
                )
            })?;
            (path.display().to_string(), bytes)
        };
        files.push(ImportFile { name, bytes });
    }
    let env = if args.here {
        EnvSource::Here
    } else if let Some(p) = &args.env {
        EnvSource::Capture(std::fs::read(p).map_err(|e| {
            invalid(
                format!("cannot read {}: {e}", p.display()),
                Some("write it with `yardstick env --json > env.json` where the tool ran"),
            )
        })?)
    } else if let Some(k) = &args.profile {
        EnvSource::Profile(k.clone())
    } else {
        EnvSource::Unknown
    };
    let key = super::keygen::secret_key_arg(args.key.as_deref())?;
    let import_fn = if tool.is_serving() {
        yardstick_run::import_serving::import
    } else {
        import::import
    };
    let outcome = import_fn(
        tool,
        &files,
        &ImportOptions {
            store: args.store.clone(),
            warehouse: args.warehouse.clone(),
            tool_info: super::run::tool_info(),
            name: args.name.clone(),
            env,
            confidence_level: args.confidence,
            key,
        },
    )
    .map_err(crate::exit::lib_error)?;
    for w in &outcome.warnings {
        output::warn(w);
    }
    if g.json {
        output::json(&outcome)?;
        return Ok(Status::Ok);
    }
    output::text(&outcome.text())?;
    Ok(Status::Ok)
}

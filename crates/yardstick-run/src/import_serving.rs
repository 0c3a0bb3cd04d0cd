//! Importing other LLM-serving benchmarks' results as runs: genai-bench, AIPerf,
//! `vllm bench serve` and GuideLLM. Their figures become serve points
//! (`import.<tool>/<scenario>/<load>`, layer `component`, kind `serve`) under yardstick's metric
//! ids where, and only where, the tool measures the same thing (docs/import.md has the mapping
//! per tool and the reasons). One import is one run; each (scenario, load level) the tool
//! measured is one point with one replicate (one run of the tool), so the aggregate is the
//! replicate's value with no interval.
//!
//! Each tool's parser is a pure function from the files' contents to [`ServingPoint`]s; the
//! run is written by [`crate::import::write_run`], as the micro tools' imports are.

use serde_json::{Value, json};

use crate::RunError;
use crate::facts::Figures;
use crate::import::{
    ImportFile, ImportOptions, ImportOutcome, ImportedFigure, StoredPoint, StoredReplicate, Tool,
    write_run,
};
use yardstick_spec::metrics::{Measurement, id};

/// The statistics of a latency distribution, in yardstick's order.
pub const STATS: [&str; 8] = ["count", "min", "mean", "p50", "p90", "p95", "p99", "max"];

/// A latency distribution in ms: the statistics the tool gave (or its per-request records
/// give), in [`STATS`] order; absent ones are left out.
pub type Dist = Vec<(&'static str, f64)>;

/// One (scenario, load level) a tool measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingPoint {
    /// The scenario (`D(50,20)` for fixed lengths; else the tool's dataset name).
    pub scenario: String,
    /// `concurrency` or `rate` (or the tool's own load kind).
    pub load_mode: String,
    /// The level.
    pub load_value: f64,
    /// Index of the input file it came from.
    pub source: usize,
    /// Latency distributions under our ids (`ttft_ms`, `tpot_ms`, `itl_ms`, `e2e_ms`).
    pub latencies: Vec<(&'static str, Dist)>,
    /// Single values under our ids (`request_throughput`, `output_token_throughput`,
    /// `input_token_throughput`, `duration_s`).
    pub values: Vec<(&'static str, f64)>,
    /// Completed requests.
    pub completed: Option<f64>,
    /// Failed requests.
    pub failed: Option<f64>,
}

impl ServingPoint {
    /// The point id: `import.<tool>/<scenario>/<mode>=<value>`.
    pub fn id(&self, tool: Tool) -> String {
        format!(
            "import.{}/{}/{}={}",
            tool.name(),
            self.scenario,
            self.load_mode,
            fmt_value(self.load_value)
        )
    }

    /// The point's figures under our ids: each latency's statistics, each value, and the
    /// completed and failed requests.
    pub fn measurements(&self) -> Vec<Measurement> {
        let mut out = Vec::new();
        for (m, d) in &self.latencies {
            for (k, v) in d {
                out.push(Measurement::stat(*m, *k, *v));
            }
        }
        for (m, v) in &self.values {
            out.push(Measurement::value(*m, *v));
        }
        for (s, v) in [("completed", self.completed), ("failed", self.failed)] {
            out.extend(v.map(|v| Measurement::stat(id::REQUESTS, s, (v.round() as u64) as f64)));
        }
        out
    }

    /// The replicate summary in the shape a serve point's is: `{"ttft_ms": {"mean": ..},
    /// "request_throughput": .., "requests": {"completed": .., "failed": ..}}`.
    pub fn summary(&self) -> Value {
        let mut s = serde_json::Map::new();
        for (m, d) in &self.latencies {
            let mut o = serde_json::Map::new();
            for (k, v) in d {
                o.insert((*k).into(), json!(v));
            }
            s.insert((*m).into(), o.into());
        }
        for (m, v) in &self.values {
            s.insert((*m).into(), json!(v));
        }
        let mut r = serde_json::Map::new();
        if let Some(c) = self.completed {
            r.insert("completed".into(), json!(c.round() as u64));
        }
        if let Some(f) = self.failed {
            r.insert("failed".into(), json!(f.round() as u64));
        }
        if !r.is_empty() {
            s.insert(id::REQUESTS.into(), r.into());
        }
        s.into()
    }
}

/// What a tool's files hold.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingImport {
    /// One per (scenario, load level).
    pub points: Vec<ServingPoint>,
    /// The tool's version, when its output says.
    pub tool_version: Option<String>,
    /// The model benchmarked, when its output says.
    pub model: Option<String>,
    /// Indices of the input files used (the others are not stored).
    pub used: Vec<usize>,
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Where each tool's figures come from and how they differ from ours: stored in the run's
/// `summary.json` `notes` and manifest notes, and printed by `yardstick import`.
pub fn notes(tool: Tool) -> Vec<String> {
    let v: &[&str] = match tool {
        Tool::GenaiBench => &[
            "genai-bench: TTFT measured by genai-bench from its request start to the first \
             non-empty content (or reasoning) chunk; yardstick measures from the scheduled send, \
             so under an open loop or a saturated client the two differ by client queueing",
            "genai-bench: e2e_ms is its e2e_latency, which ends when the stream ends (after the \
             trailing usage chunk and [DONE]) rather than at the last content chunk; tpot_ms is \
             its tpot = (e2e - TTFT) / (output tokens - 1), our definition with that end; \
             seconds converted to ms; count = its per-request records with the value",
            "genai-bench: no inter-token latency (itl_ms) is recorded; request_throughput, \
             output/input_token_throughput are over its run_duration",
        ],
        Tool::Aiperf => &[
            "AIPerf: TTFT measured by AIPerf from its request start (not the credit's issue) to \
             the first response with content; yardstick measures from the scheduled send, so \
             under an open loop the two differ by client queueing",
            "AIPerf: tpot_ms is its inter_token_latency, (request_latency - TTFT) / (output \
             tokens - 1) per request = our TPOT; itl_ms is its inter_chunk_latency (every gap \
             between content responses, pooled; a response may carry several tokens); e2e_ms is \
             its request_latency (to the last content response)",
            "AIPerf: requests.completed is its completed_request_count, failed the errors it \
             counted; the warm-up phase is excluded, as AIPerf excludes it",
        ],
        Tool::VllmBench => &[
            "vllm bench serve: TTFT measured from just before the POST to the first chunk with \
             streamed output; yardstick measures from the scheduled send, so under an open loop \
             (--request-rate) the two differ by client queueing",
            "vllm bench serve: TPOT = (latency - TTFT) / (output tokens - 1), ITL = every gap \
             between chunks with output, e2el = to the last chunk with output: our definitions; \
             median is stored as p50; count, min and max come from its per-request arrays when \
             the file has them (and a metric it did not summarise, e2el without \
             --percentile-metrics, is computed from them); input_token_throughput = total_input_tokens / duration",
        ],
        Tool::Guidellm => &[
            "GuideLLM: TTFT measured from its request start (timings.request_start) to the first \
             token iteration; yardstick measures from the scheduled send, so under an open loop \
             the two differ by client queueing",
            "GuideLLM: its time_per_output_token_ms includes the first token ((last token - \
             request start) / output tokens) and is not our TPOT, so it is not stored; tpot_ms is \
             its inter_token_latency_ms, (last token - first token) / (output tokens - 1), our \
             TPOT definition, whose statistics GuideLLM weights by each request's output tokens \
             - 1 (its count is not a request count and is not stored)",
            "GuideLLM: its request_latency ends at the request's end (after the stream's trailer), \
             not at the last token, so e2e_ms is computed from its per-request records as last \
             token iteration - request start (left out when the file does not hold every \
             successful request); requests.failed counts errored requests (incomplete ones are \
             left out); no per-gap ITL distribution is recorded",
        ],
        _ => &[],
    };
    v.iter().map(|s| s.to_string()).collect()
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// Why a serving tool's files could not be imported: what they lack, with how to give the
/// right ones.
#[derive(Debug, thiserror::Error)]
pub enum ServingImportError {
    /// A file is not JSON.
    #[error("{name}: not {tool} output (not JSON: {error}); {hint}")]
    NotJson {
        /// The file.
        name: String,
        /// The tool, as [`Tool::display`] names it.
        tool: &'static str,
        /// The parser's reason.
        error: serde_json::Error,
        /// What to give instead.
        hint: &'static str,
    },
    /// A JSON file that is not the tool's output.
    #[error("{name}: not {tool} output ({lacks}); {hint}")]
    NotOutput {
        /// The file.
        name: String,
        /// The tool, as [`Tool::display`] names it.
        tool: &'static str,
        /// What it lacks, e.g. "no `benchmarks` list".
        lacks: &'static str,
        /// What to give instead.
        hint: &'static str,
    },
    /// A genai-bench time unit other than seconds or milliseconds.
    #[error("{name}: genai-bench time unit `{unit}` is neither `s` nor `ms`")]
    GenaiBenchUnit {
        /// The file.
        name: String,
        /// The unit given.
        unit: String,
    },
    /// A genai-bench run without its concurrency.
    #[error("{name}: genai-bench output without `aggregated_metrics.num_concurrency`")]
    GenaiBenchNoConcurrency {
        /// The file.
        name: String,
    },
    /// No file of a genai-bench folder is a run.
    #[error("{names}: no genai-bench run JSON (with `aggregated_metrics`); {hint}")]
    GenaiBenchNoRun {
        /// The files given, comma-separated.
        names: String,
        /// What to give instead.
        hint: &'static str,
    },
    /// An AIPerf metric in a unit that is not a time.
    #[error("{name}: AIPerf's `{metric}` has unit {unit} (expected ms, s, us or ns)")]
    AiperfUnit {
        /// The file.
        name: String,
        /// AIPerf's metric tag.
        metric: &'static str,
        /// The unit given (JSON).
        unit: String,
    },
    /// AIPerf output without the load of its profiling phase.
    #[error(
        "{name}: AIPerf output without the profiling phase's concurrency or rate \
         (`input_config.phases`)"
    )]
    AiperfNoLoad {
        /// The file.
        name: String,
    },
    /// A GuideLLM benchmark that is not a generative one.
    #[error(
        "{name}: benchmarks[{index}] has no `metrics.time_to_first_token_ms`: not a \
         GuideLLM generative benchmark; {hint}"
    )]
    GuidellmNotGenerative {
        /// The file.
        name: String,
        /// The benchmark's index.
        index: usize,
        /// What to give instead.
        hint: &'static str,
    },
    /// A tool whose output is one file was given several (or none).
    #[error("{tool} takes one file ({given} given)")]
    OneFile {
        /// The tool, as [`Tool::display`] names it.
        tool: &'static str,
        /// The number of files given.
        given: usize,
    },
    /// The tool is not a serving benchmark.
    #[error("{0} is not a serving benchmark")]
    NotServing(&'static str),
}

fn parse_json(
    name: &str,
    text: &str,
    tool: Tool,
    hint: &'static str,
) -> Result<Value, ServingImportError> {
    serde_json::from_str(text).map_err(|error| ServingImportError::NotJson {
        name: name.to_string(),
        tool: tool.display(),
        error,
        hint,
    })
}

/// [`ServingImportError::NotOutput`] for `tool`.
fn not_output(
    name: &str,
    tool: Tool,
    lacks: &'static str,
    hint: &'static str,
) -> ServingImportError {
    ServingImportError::NotOutput {
        name: name.to_string(),
        tool: tool.display(),
        lacks,
        hint,
    }
}

/// The statistics of `o` under the names `map` gives (`(ours, theirs)`), scaled by `scale`.
fn dist(o: &Value, map: &[(&'static str, &str)], scale: f64) -> Dist {
    let mut d: Dist = Vec::new();
    for s in STATS {
        for (ours, theirs) in map {
            if *ours == s
                && let Some(v) = num(&o[*theirs])
            {
                d.push((s, if s == "count" { v } else { v * scale }));
                break;
            }
        }
    }
    d
}

/// Statistics of per-request values (ms) with yardstick's own percentile definition.
fn dist_of(values: &[f64]) -> Dist {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Vec::new();
    }
    v.sort_by(f64::total_cmp);
    let p = |q| yardstick_stats::percentile::percentile_sorted(&v, q);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    vec![
        ("count", v.len() as f64),
        ("min", v[0]),
        ("mean", mean),
        ("p50", p(0.5)),
        ("p90", p(0.9)),
        ("p95", p(0.95)),
        ("p99", p(0.99)),
        ("max", v[v.len() - 1]),
    ]
}

/// Merges `extra` statistics into `d` where `d` lacks them, keeping [`STATS`] order.
fn fill(d: &Dist, extra: &Dist, only: &[&str]) -> Dist {
    STATS
        .iter()
        .filter_map(|s| {
            d.iter()
                .find(|(k, _)| k == s)
                .or_else(|| extra.iter().find(|(k, _)| k == s && only.contains(k)))
                .copied()
        })
        .collect()
}

/// A `D(in,out)` scenario for fixed lengths.
fn fixed(input: Option<f64>, output: Option<f64>) -> Option<String> {
    Some(format!(
        "D({},{})",
        fmt_value(input?.round()),
        fmt_value(output?.round())
    ))
}

/// genai-bench 0.0.5: an experiment folder's `experiment_metadata.json` and one JSON per
/// scenario and concurrency (`aggregated_metrics`, `individual_request_metrics`).
pub fn parse_genai_bench(files: &[(&str, &str)]) -> Result<ServingImport, ServingImportError> {
    let hint = "give genai-bench's experiment folder (experiment_metadata.json and one \
                <scenario>_..._num_concurrency_<n>_...json per run) or one of its run JSONs";
    let mut out = ServingImport {
        points: Vec::new(),
        tool_version: None,
        model: None,
        used: Vec::new(),
    };
    let mut unit_scale_meta = None;
    for (i, (name, text)) in files.iter().enumerate() {
        let v = parse_json(name, text, Tool::GenaiBench, hint)?;
        if v.get("benchmark_version").is_some() && v.get("aggregated_metrics").is_none() {
            out.tool_version = v["benchmark_version"].as_str().map(str::to_owned);
            out.model = v["model"].as_str().map(str::to_owned);
            unit_scale_meta = v["metrics_time_unit"].as_str().map(str::to_owned);
            out.used.push(i);
            continue;
        }
        let a = &v["aggregated_metrics"];
        if !a.is_object() || !a["stats"].is_object() {
            if files.len() > 1 {
                // Another JSON in the folder: not a run of the tool.
                continue;
            }
            return Err(not_output(
                name,
                Tool::GenaiBench,
                "no `aggregated_metrics` with `stats`",
                hint,
            ));
        }
        let unit = v["_time_unit"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| unit_scale_meta.clone())
            .unwrap_or_else(|| "s".into());
        let scale = match unit.as_str() {
            "s" => 1000.0,
            "ms" => 1.0,
            other => {
                return Err(ServingImportError::GenaiBenchUnit {
                    name: name.to_string(),
                    unit: other.to_string(),
                });
            }
        };
        let (load_mode, load_value) = match a["iteration_type"].as_str() {
            Some("batch_size") => ("batch_size", num(&a["batch_size"])),
            _ => ("concurrency", num(&a["num_concurrency"])),
        };
        let load_value = load_value.ok_or_else(|| ServingImportError::GenaiBenchNoConcurrency {
            name: name.to_string(),
        })?;
        let scenario = a["scenario"].as_str().unwrap_or("default").to_string();
        let stats = &a["stats"];
        let map = [
            ("min", "min"),
            ("mean", "mean"),
            ("p50", "p50"),
            ("p90", "p90"),
            ("p95", "p95"),
            ("p99", "p99"),
            ("max", "max"),
        ];
        let reqs: Vec<&Value> = v["individual_request_metrics"]
            .as_array()
            .map(|r| r.iter().filter(|r| r["error_code"].is_null()).collect())
            .unwrap_or_default();
        let count = |key: &str| reqs.iter().filter(|r| num(&r[key]).is_some()).count() as f64;
        let mut latencies = Vec::new();
        for (ours, theirs) in [
            (id::TTFT_MS, "ttft"),
            (id::TPOT_MS, "tpot"),
            (id::E2E_MS, "e2e_latency"),
        ] {
            let mut d = dist(&stats[theirs], &map, scale);
            if d.is_empty() {
                continue;
            }
            if !reqs.is_empty() {
                d.insert(0, ("count", count(theirs)));
            }
            latencies.push((ours, d));
        }
        let mut values = Vec::new();
        for (ours, theirs) in [
            (id::REQUEST_THROUGHPUT, "requests_per_second"),
            (
                id::OUTPUT_TOKEN_THROUGHPUT,
                "mean_output_throughput_tokens_per_s",
            ),
            (
                id::INPUT_TOKEN_THROUGHPUT,
                "mean_input_throughput_tokens_per_s",
            ),
            (id::DURATION_S, "run_duration"),
        ] {
            if let Some(x) = num(&a[theirs]) {
                values.push((ours, x));
            }
        }
        out.points.push(ServingPoint {
            scenario,
            load_mode: load_mode.into(),
            load_value,
            source: i,
            latencies,
            values,
            completed: num(&a["num_completed_requests"]),
            failed: num(&a["num_error_requests"]),
        });
        out.used.push(i);
    }
    if out.points.is_empty() {
        let names: Vec<&str> = files.iter().map(|f| f.0).collect();
        return Err(ServingImportError::GenaiBenchNoRun {
            names: names.join(", "),
            hint,
        });
    }
    out.points.sort_by(|a, b| {
        (a.scenario.as_str(), a.load_value)
            .partial_cmp(&(b.scenario.as_str(), b.load_value))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out.used.sort_unstable();
    Ok(out)
}

fn aiperf_scale(unit: Option<&str>) -> Option<f64> {
    match unit? {
        "ms" => Some(1.0),
        "s" | "sec" | "seconds" => Some(1000.0),
        "us" => Some(1e-3),
        "ns" => Some(1e-6),
        _ => None,
    }
}

/// AIPerf 0.13: `profile_export_aiperf.json` (one record per metric tag: `unit`, `avg`, `min`,
/// `max`, `p50`, ..., `count`; `input_config` with the load phases).
pub fn parse_aiperf(name: &str, text: &str) -> Result<ServingImport, ServingImportError> {
    let hint = "give AIPerf's artifact directory or its profile_export_aiperf.json";
    let v = parse_json(name, text, Tool::Aiperf, hint)?;
    if !v["time_to_first_token"].is_object() && !v["request_latency"].is_object() {
        return Err(not_output(
            name,
            Tool::Aiperf,
            "no `time_to_first_token` or `request_latency` record",
            hint,
        ));
    }
    let map = [
        ("count", "count"),
        ("min", "min"),
        ("mean", "avg"),
        ("p50", "p50"),
        ("p90", "p90"),
        ("p95", "p95"),
        ("p99", "p99"),
        ("max", "max"),
    ];
    let mut latencies = Vec::new();
    for (ours, theirs) in [
        (id::TTFT_MS, "time_to_first_token"),
        (id::TPOT_MS, "inter_token_latency"),
        (id::ITL_MS, "inter_chunk_latency"),
        (id::E2E_MS, "request_latency"),
    ] {
        let r = &v[theirs];
        if !r.is_object() {
            continue;
        }
        let scale =
            aiperf_scale(r["unit"].as_str()).ok_or_else(|| ServingImportError::AiperfUnit {
                name: name.to_string(),
                metric: theirs,
                unit: r["unit"].to_string(),
            })?;
        let d = dist(r, &map, scale);
        if !d.is_empty() {
            latencies.push((ours, d));
        }
    }
    let avg = |k: &str| num(&v[k]["avg"]);
    let mut values = Vec::new();
    for (ours, theirs) in [
        (id::REQUEST_THROUGHPUT, "request_throughput"),
        (id::OUTPUT_TOKEN_THROUGHPUT, "output_token_throughput"),
        (id::INPUT_TOKEN_THROUGHPUT, "input_token_throughput"),
    ] {
        if let Some(x) = avg(theirs) {
            values.push((ours, x));
        }
    }
    if let Some(d) = avg("benchmark_duration") {
        let scale = aiperf_scale(v["benchmark_duration"]["unit"].as_str()).unwrap_or(1000.0);
        values.push((id::DURATION_S, d * scale / 1000.0));
    }
    let completed = avg("completed_request_count").or_else(|| avg("request_count"));
    let failed = avg("error_request_count").or_else(|| {
        v["error_summary"].as_array().map(|e| {
            e.iter()
                .map(|x| num(&x["count"]).unwrap_or(1.0))
                .sum::<f64>()
        })
    });
    // The load: the profiling phase of input_config (0.13), else the older `loadgen`.
    let cfg = &v["input_config"];
    let phase = cfg["phases"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["kind"] == "profiling"));
    let (mode, value) = match phase {
        Some(p) => match p["type"].as_str() {
            Some("request_rate") | Some("rate") => {
                ("rate", num(&p["rate"]).or_else(|| num(&p["request_rate"])))
            }
            _ => ("concurrency", num(&p["concurrency"])),
        },
        None => match num(&cfg["loadgen"]["request_rate"]) {
            Some(r) => ("rate", Some(r)),
            None => ("concurrency", num(&cfg["loadgen"]["concurrency"])),
        },
    };
    let value = value.ok_or_else(|| ServingImportError::AiperfNoLoad {
        name: name.to_string(),
    })?;
    let ds = &cfg["datasets"][0];
    let prompts = &ds["prompts"];
    let no_sd = |k: &str| num(&prompts[k]["stddev"]).is_none_or(|s| s == 0.0);
    let scenario = if no_sd("isl") && no_sd("osl") {
        fixed(num(&prompts["isl"]["mean"]), num(&prompts["osl"]["mean"]))
    } else {
        None
    }
    .or_else(|| ds["name"].as_str().map(str::to_owned))
    .unwrap_or_else(|| "default".into());
    Ok(ServingImport {
        points: vec![ServingPoint {
            scenario,
            load_mode: mode.into(),
            load_value: value,
            source: 0,
            latencies,
            values,
            completed,
            failed,
        }],
        tool_version: v["aiperf_version"].as_str().map(str::to_owned),
        model: cfg["models"]["items"][0]["name"]
            .as_str()
            .map(str::to_owned),
        used: vec![0],
    })
}

/// `vllm bench serve --save-result` (vLLM 0.33): one flat JSON.
pub fn parse_vllm_bench(name: &str, text: &str) -> Result<ServingImport, ServingImportError> {
    let hint = "give the JSON `vllm bench serve --save-result` wrote (--result-filename)";
    let v = parse_json(name, text, Tool::VllmBench, hint)?;
    if num(&v["completed"]).is_none() || num(&v["duration"]).is_none() {
        return Err(not_output(
            name,
            Tool::VllmBench,
            "no `completed` and `duration`",
            hint,
        ));
    }
    // Per-request arrays (with --save-detailed; `latencies` is always there): successful ones.
    let n = v["latencies"].as_array().map_or(0, Vec::len);
    let errors = v["errors"].as_array();
    let ok: Vec<usize> = (0..n)
        .filter(|&i| match errors {
            Some(e) => e.get(i).and_then(Value::as_str).is_none_or(str::is_empty),
            None => num(&v["failed"]) == Some(0.0),
        })
        .collect();
    let arr = |k: &str| -> Option<Vec<f64>> {
        let a = v[k].as_array()?;
        (a.len() == n).then(|| ok.iter().filter_map(|&i| num(&a[i])).collect())
    };
    let ttfts = arr("ttfts");
    let lats = arr("latencies");
    let outs = arr("output_lens");
    let per_request: Vec<(&'static str, Option<Vec<f64>>)> = vec![
        (id::TTFT_MS, ttfts.clone().map(|t| ms(&t))),
        (
            id::TPOT_MS,
            match (&ttfts, &lats, &outs) {
                (Some(t), Some(l), Some(o)) if t.len() == l.len() && l.len() == o.len() => Some(
                    (0..t.len())
                        .filter(|&i| o[i] > 1.0)
                        .map(|i| 1000.0 * (l[i] - t[i]) / (o[i] - 1.0))
                        .collect(),
                ),
                _ => None,
            },
        ),
        (
            id::ITL_MS,
            v["itls"].as_array().filter(|a| a.len() == n).map(|a| {
                ok.iter()
                    .flat_map(|&i| a[i].as_array().into_iter().flatten().filter_map(num))
                    .map(|x| x * 1000.0)
                    .collect()
            }),
        ),
        (id::E2E_MS, lats.map(|l| ms(&l))),
    ];
    let mut latencies = Vec::new();
    for ((ours, theirs), (_, samples)) in [
        (id::TTFT_MS, "ttft"),
        (id::TPOT_MS, "tpot"),
        (id::ITL_MS, "itl"),
        (id::E2E_MS, "e2el"),
    ]
    .into_iter()
    .zip(&per_request)
    {
        let mut d: Dist = Vec::new();
        for s in ["mean", "p50", "p90", "p95", "p99"] {
            let x = num(&v[format!("{s}_{theirs}_ms")]).or_else(|| {
                (s == "p50")
                    .then(|| num(&v[format!("median_{theirs}_ms")]))
                    .flatten()
            });
            if let Some(x) = x {
                d.push((s, x));
            }
        }
        if let Some(samples) = samples.as_ref().filter(|s| !s.is_empty()) {
            d = if d.is_empty() {
                // Not summarised by the tool (e2el without --percentile-metrics): from its
                // per-request values, with our percentiles.
                dist_of(samples)
            } else {
                fill(&d, &dist_of(samples), &["count", "min", "max"])
            };
        }
        if d.is_empty() {
            continue;
        }
        latencies.push((ours, d));
    }
    let duration = num(&v["duration"]).unwrap_or_default();
    let mut values = Vec::new();
    if let Some(x) = num(&v["request_throughput"]) {
        values.push((id::REQUEST_THROUGHPUT, x));
    }
    if let Some(x) = num(&v["output_throughput"]) {
        values.push((id::OUTPUT_TOKEN_THROUGHPUT, x));
    }
    if let Some(x) = num(&v["total_input_tokens"]).filter(|_| duration > 0.0) {
        values.push((id::INPUT_TOKEN_THROUGHPUT, x / duration));
    }
    values.push((id::DURATION_S, duration));
    let rate = num(&v["request_rate"]);
    let conc = num(&v["max_concurrency"]);
    let (mode, value) = match (rate, conc) {
        (Some(r), _) => ("rate", r),
        (None, Some(c)) => ("concurrency", c),
        // Every prompt at once: as many streams as prompts.
        (None, None) => (
            "concurrency",
            num(&v["num_prompts"]).unwrap_or(n as f64).max(1.0),
        ),
    };
    let scenario = v["label"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string();
    Ok(ServingImport {
        points: vec![ServingPoint {
            scenario,
            load_mode: mode.into(),
            load_value: value,
            source: 0,
            latencies,
            values,
            completed: num(&v["completed"]),
            failed: num(&v["failed"]),
        }],
        tool_version: None,
        model: v["model_id"].as_str().map(str::to_owned),
        used: vec![0],
    })
}

fn ms(s: &[f64]) -> Vec<f64> {
    s.iter().map(|x| x * 1000.0).collect()
}

/// GuideLLM 0.8: `benchmarks.json` (`benchmarks[]`, one per strategy, each with `metrics`
/// distributions split by request status).
pub fn parse_guidellm(name: &str, text: &str) -> Result<ServingImport, ServingImportError> {
    let hint = "give GuideLLM's benchmarks.json (--output kind=json)";
    let v = parse_json(name, text, Tool::Guidellm, hint)?;
    let Some(benchmarks) = v["benchmarks"].as_array().filter(|b| !b.is_empty()) else {
        return Err(not_output(
            name,
            Tool::Guidellm,
            "no `benchmarks` list",
            hint,
        ));
    };
    let data = &v["config"]["spec"]["data"][0];
    let no_sd = |k: &str| data[format!("{k}_stdev")].is_null();
    let scenario = if no_sd("prompt_tokens") && no_sd("output_tokens") {
        fixed(num(&data["prompt_tokens"]), num(&data["output_tokens"]))
    } else {
        None
    }
    .or_else(|| data["kind"].as_str().map(str::to_owned))
    .unwrap_or_else(|| "default".into());
    let map = [
        ("count", "count"),
        ("min", "min"),
        ("mean", "mean"),
        ("max", "max"),
    ];
    let mut points = Vec::new();
    for (i, b) in benchmarks.iter().enumerate() {
        let m = &b["metrics"];
        if !m["time_to_first_token_ms"].is_object() {
            return Err(ServingImportError::GuidellmNotGenerative {
                name: name.to_string(),
                index: i,
                hint,
            });
        }
        let ok = |k: &str| &m[k]["successful"];
        let stat = |o: &Value, with_count: bool| -> Dist {
            let mut d = dist(o, &map, 1.0);
            if !with_count {
                d.retain(|(k, _)| *k != "count");
            }
            let mut out = Vec::new();
            for s in STATS {
                if let Some(x) = d.iter().find(|(k, _)| *k == s) {
                    out.push(*x);
                } else if s.starts_with('p')
                    && let Some(x) = num(&o["percentiles"][s])
                {
                    out.push((s, x));
                }
            }
            if out.iter().all(|(k, _)| *k != "p50")
                && let Some(x) = num(&o["median"])
            {
                out.push(("p50", x));
                out = fill(&out, &Vec::new(), &[]);
            }
            out
        };
        let mut latencies = vec![(id::TTFT_MS, stat(ok("time_to_first_token_ms"), true))];
        if ok("inter_token_latency_ms").is_object() {
            // Token-weighted: its count is tokens - 1 per request, not requests.
            latencies.push((id::TPOT_MS, stat(ok("inter_token_latency_ms"), false)));
        }
        // e2e to the last token, from the per-request records when they are all there.
        let successful = num(&m["request_totals"]["successful"]);
        if let Some(reqs) = b["requests"]["successful"].as_array()
            && Some(reqs.len() as f64) == successful
        {
            let e2e: Vec<f64> = reqs
                .iter()
                .filter_map(|r| {
                    let t = &r["info"]["timings"];
                    Some(1000.0 * (num(&t["last_token_iteration"])? - num(&t["request_start"])?))
                })
                .collect();
            if e2e.len() == reqs.len() && !e2e.is_empty() {
                latencies.push((id::E2E_MS, dist_of(&e2e)));
            }
        }
        latencies.retain(|(_, d)| !d.is_empty());
        let mut values = Vec::new();
        for (ours, theirs) in [
            (id::REQUEST_THROUGHPUT, "requests_per_second"),
            (id::OUTPUT_TOKEN_THROUGHPUT, "output_tokens_per_second"),
            (id::INPUT_TOKEN_THROUGHPUT, "prompt_tokens_per_second"),
        ] {
            if let Some(x) = num(&ok(theirs)["mean"]) {
                values.push((ours, x));
            }
        }
        if let Some(d) = num(&b["duration"]) {
            values.push((id::DURATION_S, d));
        }
        let st = &b["config"]["strategy"];
        let kind = st["type_"].as_str().unwrap_or("unknown");
        let (mode, value) = match kind {
            "synchronous" => ("concurrency".to_string(), Some(1.0)),
            "concurrent" => ("concurrency".into(), num(&st["streams"])),
            "throughput" => ("concurrency".into(), num(&st["max_concurrency"])),
            "constant" | "poisson" | "async" => ("rate".into(), num(&st["rate"])),
            other => (other.to_string(), None),
        };
        points.push(ServingPoint {
            scenario: scenario.clone(),
            load_mode: mode,
            load_value: value.unwrap_or(i as f64),
            source: 0,
            latencies,
            values,
            completed: successful,
            failed: num(&m["request_totals"]["errored"]),
        });
    }
    Ok(ServingImport {
        points,
        tool_version: v["metadata"]["guidellm_version"]
            .as_str()
            .map(str::to_owned),
        model: v["config"]["spec"]["backend"]["model"]
            .as_str()
            .map(str::to_owned),
        used: vec![0],
    })
}

/// Parses a serving tool's files (genai-bench: an experiment folder's JSONs; the others: one
/// file).
pub fn parse(tool: Tool, files: &[(&str, &str)]) -> Result<ServingImport, ServingImportError> {
    let one = || -> Result<(&str, &str), ServingImportError> {
        match files {
            [f] => Ok(*f),
            _ => Err(ServingImportError::OneFile {
                tool: tool.display(),
                given: files.len(),
            }),
        }
    };
    match tool {
        Tool::GenaiBench => parse_genai_bench(files),
        Tool::Aiperf => {
            let (n, t) = one()?;
            parse_aiperf(n, t)
        }
        Tool::VllmBench => {
            let (n, t) = one()?;
            parse_vllm_bench(n, t)
        }
        Tool::Guidellm => {
            let (n, t) = one()?;
            parse_guidellm(n, t)
        }
        other => Err(ServingImportError::NotServing(other.display())),
    }
}

fn safe_name(name: &str) -> String {
    let base = std::path::Path::new(name)
        .file_name()
        .map_or_else(|| name.to_owned(), |s| s.to_string_lossy().into_owned());
    base.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '(' | ')' | ',') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Parses a serving tool's output and stores it as one run: one serve point per (scenario,
/// load level) with one replicate, the used files verbatim under `imports/`, the notes on the
/// tool's definitions in `summary.json` and the manifest. Nothing is written when the files do
/// not parse.
pub fn import(
    tool: Tool,
    files: &[ImportFile],
    opts: &ImportOptions,
) -> Result<ImportOutcome, RunError> {
    if files.is_empty() {
        return Err(RunError::Invalid("no file to import".into()));
    }
    let mut texts = Vec::with_capacity(files.len());
    for f in files {
        texts.push(
            std::str::from_utf8(&f.bytes)
                .map_err(|_| RunError::Invalid(format!("{}: not UTF-8 text", f.name)))?,
        );
    }
    let pairs: Vec<(&str, &str)> = files
        .iter()
        .zip(&texts)
        .map(|(f, t)| (f.name.as_str(), *t))
        .collect();
    let parsed = parse(tool, &pairs).map_err(|e| RunError::Invalid(e.to_string()))?;
    let mut warnings = Vec::new();
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| format!("import-{}", tool.name()));
    let stored: Vec<(usize, String, String)> = parsed
        .used
        .iter()
        .map(|&i| {
            (
                i,
                format!("imports/{}", safe_name(&files[i].name)),
                yardstick_store::fsutil::sha256_bytes(&files[i].bytes),
            )
        })
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for (_, rel, _) in &stored {
        if !seen.insert(rel.clone()) {
            return Err(RunError::Invalid(format!(
                "two input files are named {rel}: import them separately"
            )));
        }
    }
    let notes = notes(tool);
    let mut record = String::new();
    record.push_str(
        "# Imported with `yardstick import`: the figures come from the tool's own output,\n",
    );
    record.push_str("# stored verbatim under imports/ in this run directory.\n");
    for n in &notes {
        record.push_str(&format!("# {n}\n"));
    }
    record.push_str("apiVersion: yardstick/v1\nkind: Import\n");
    record.push_str(&format!("metadata:\n  name: {}\n", yaml_str(&name)));
    record.push_str(&format!("source:\n  tool: {}\n", yaml_str(tool.display())));
    if let Some(v) = &parsed.tool_version {
        record.push_str(&format!("  version: {}\n", yaml_str(v)));
    }
    if let Some(m) = &parsed.model {
        record.push_str(&format!("  model: {}\n", yaml_str(m)));
    }
    record.push_str("  files:\n");
    for (i, _, sha) in &stored {
        record.push_str(&format!(
            "    - {{name: {}, sha256: {sha}}}\n",
            yaml_str(&files[*i].name)
        ));
    }
    let mut ids = std::collections::BTreeSet::new();
    let mut points = Vec::with_capacity(parsed.points.len());
    for p in &parsed.points {
        let pid = p.id(tool);
        if !ids.insert(pid.clone()) {
            return Err(RunError::Invalid(format!(
                "{}: two results for the same point {pid}",
                files[p.source].name
            )));
        }
        let artifact = stored
            .iter()
            .find(|s| s.0 == p.source)
            .map(|s| s.1.clone())
            .unwrap_or_default();
        points.push(StoredPoint {
            id: pid,
            layer: "component".into(),
            kind: "serve".into(),
            work: json!({
                "kind": "serve",
                "import": tool.display(),
                "tool_version": parsed.tool_version,
                "model": parsed.model,
                "scenario": p.scenario,
                "load_mode": p.load_mode,
                "load_value": p.load_value,
                "source": files[p.source].name,
            }),
            replicates: vec![StoredReplicate {
                summary: p.summary(),
                figures: Figures::new(p.measurements()),
                artifact,
                results: Vec::new(),
            }],
        });
    }
    let input_files: Vec<(String, &[u8])> = stored
        .iter()
        .map(|(i, rel, _)| (rel.clone(), files[*i].bytes.as_slice()))
        .collect();
    let written = write_run(
        opts,
        &name,
        &record,
        &input_files,
        &points,
        1,
        &notes,
        &mut warnings,
    )?;
    let mut results = Vec::new();
    for p in &points {
        for f in written.aggregate.iter().filter(|f| f.point_id == p.id) {
            let stat_rank = STATS
                .iter()
                .position(|s| *s == f.statistic)
                .unwrap_or(STATS.len());
            let higher = yardstick_spec::metrics::lookup(&f.metric)
                .is_some_and(|d| d.direction == yardstick_spec::metrics::Direction::HigherIsBetter);
            results.push((
                stat_rank,
                ImportedFigure {
                    point: p.id.clone(),
                    name: f.metric.clone(),
                    statistic: f.statistic.clone(),
                    value: f.value,
                    unit: f.unit.clone(),
                    ci: f.ci_lo.zip(f.ci_hi).map(|(a, b)| [a, b]),
                    n: f.n,
                    higher_is_better: higher,
                    params: Default::default(),
                },
            ));
        }
    }
    // Per point: metrics in catalogue order, statistics in reading order.
    let order = |m: &str| {
        yardstick_spec::metrics::CATALOGUE
            .iter()
            .position(|d| d.matches(m))
            .unwrap_or(usize::MAX)
    };
    let pos = |pid: &str| points.iter().position(|p| p.id == pid).unwrap_or(0);
    results.sort_by(|(ra, a), (rb, b)| {
        (pos(&a.point), order(&a.name), *ra).cmp(&(pos(&b.point), order(&b.name), *rb))
    });
    Ok(ImportOutcome {
        run_id: written.run_id,
        dir: written.dir,
        name,
        tool,
        point: points[0].id.clone(),
        points: points.iter().map(|p| p.id.clone()).collect(),
        files: stored
            .iter()
            .map(|(i, _, _)| files[*i].name.clone())
            .collect(),
        machine_profile: written.machine_profile,
        confidence_level: opts.confidence_level,
        results: results.into_iter().map(|(_, f)| f).collect(),
        notes,
        warnings,
    })
}

fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).expect("JSON string")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../yardstick/tests/fixtures/import")
            .join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn stat(p: &ServingPoint, metric: &str, s: &str) -> Option<f64> {
        p.latencies
            .iter()
            .find(|(m, _)| *m == metric)
            .and_then(|(_, d)| d.iter().find(|(k, _)| *k == s).map(|x| x.1))
    }

    fn value(p: &ServingPoint, metric: &str) -> Option<f64> {
        p.values.iter().find(|(m, _)| *m == metric).map(|x| x.1)
    }

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("present");
        assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{a} != {b}");
    }

    #[test]
    fn genai_bench_points_per_concurrency_in_ms() {
        let dir = "genai-bench-0.0.5/";
        let c1 = fixture(&format!(
            "{dir}D50_20_text-to-text_num_concurrency_1_time_10s.json"
        ));
        let c4 = fixture(&format!(
            "{dir}D50_20_text-to-text_num_concurrency_4_time_3s.json"
        ));
        let meta = fixture(&format!("{dir}experiment_metadata.json"));
        let got =
            parse_genai_bench(&[("c4.json", &c4), ("meta.json", &meta), ("c1.json", &c1)]).unwrap();
        assert_eq!(got.tool_version.as_deref(), Some("0.0.5"));
        assert_eq!(got.points.len(), 2);
        let p = &got.points[1];
        assert_eq!(
            p.id(Tool::GenaiBench),
            "import.genai-bench/D(50,20)/concurrency=4"
        );
        close(stat(p, id::TTFT_MS, "mean"), 55.25765837440607);
        close(stat(p, id::TTFT_MS, "p99"), 61.34350460029964);
        close(stat(p, id::TTFT_MS, "count"), 48.0);
        close(stat(p, id::TPOT_MS, "p50"), 10.065911921150186);
        close(stat(p, id::E2E_MS, "max"), 259.5202539960155);
        assert!(stat(p, id::ITL_MS, "mean").is_none());
        close(value(p, id::REQUEST_THROUGHPUT), 15.943562917498962);
        close(value(p, "duration_s"), 3.010619411004882);
        assert_eq!((p.completed, p.failed), (Some(48.0), Some(0.0)));
        assert_eq!(got.points[0].load_value, 1.0);
        // Not genai-bench: the file is named.
        let e = parse_genai_bench(&[("x.json", "{\"a\":1}")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.json") && e.contains("aggregated_metrics"),
            "{e}"
        );
    }

    #[test]
    fn aiperf_itl_is_our_tpot_and_chunk_gaps_our_itl() {
        let t = fixture("aiperf-0.13.0/profile_export_aiperf.json");
        let got = parse_aiperf("p.json", &t).unwrap();
        let p = &got.points[0];
        assert_eq!(p.id(Tool::Aiperf), "import.aiperf/D(50,20)/concurrency=4");
        close(stat(p, id::TTFT_MS, "mean"), 52.839771025);
        close(stat(p, id::TPOT_MS, "mean"), 10.036476836842104);
        close(stat(p, id::TPOT_MS, "count"), 40.0);
        close(stat(p, id::ITL_MS, "count"), 760.0);
        close(stat(p, id::E2E_MS, "p99"), 255.93523569999996);
        close(value(p, id::REQUEST_THROUGHPUT), 16.02584514970713);
        close(value(p, "duration_s"), 2.489332992);
        assert_eq!((p.completed, p.failed), (Some(40.0), Some(0.0)));
        let e = parse_aiperf("v.json", &fixture("vllm-bench-0.33.0/vllm-bench.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("v.json") && e.contains("not AIPerf"), "{e}");
    }

    #[test]
    fn vllm_bench_with_and_without_per_request_arrays() {
        let got =
            parse_vllm_bench("v.json", &fixture("vllm-bench-0.33.0/vllm-bench.json")).unwrap();
        let p = &got.points[0];
        assert_eq!(
            p.id(Tool::VllmBench),
            "import.vllm-bench/default/concurrency=4"
        );
        close(stat(p, id::TTFT_MS, "mean"), 53.69068235013401);
        close(stat(p, id::TTFT_MS, "p50"), 53.549853997537866);
        close(stat(p, id::TTFT_MS, "count"), 40.0);
        close(stat(p, id::ITL_MS, "count"), 760.0);
        close(stat(p, id::E2E_MS, "p90"), 245.00314979813993);
        assert!(stat(p, id::TPOT_MS, "min").unwrap() <= stat(p, id::TPOT_MS, "mean").unwrap());
        close(
            value(p, "input_token_throughput"),
            864.0 / 2.4428995749985916,
        );
        assert_eq!(p.completed, Some(40.0));
        let d = parse_vllm_bench(
            "d.json",
            &fixture("vllm-bench-0.33.0/vllm-bench-defaults.json"),
        )
        .unwrap();
        let p = &d.points[0];
        close(stat(p, id::TTFT_MS, "p99"), 58.55793734874169);
        assert!(stat(p, id::TTFT_MS, "p90").is_none());
        assert!(stat(p, id::TTFT_MS, "count").is_none());
        close(stat(p, id::E2E_MS, "count"), 40.0);
        let e = parse_vllm_bench("g.json", "[1]").unwrap_err().to_string();
        assert!(e.contains("g.json"), "{e}");
    }

    #[test]
    fn guidellm_keeps_its_itl_as_tpot_not_its_tpot() {
        let got = parse_guidellm("b.json", &fixture("guidellm-0.8.1/benchmarks.json")).unwrap();
        assert_eq!(got.tool_version.as_deref(), Some("0.8.1"));
        let p = &got.points[0];
        assert_eq!(
            p.id(Tool::Guidellm),
            "import.guidellm/D(50,20)/concurrency=4"
        );
        close(stat(p, id::TTFT_MS, "mean"), 53.49898934364319);
        close(stat(p, id::TTFT_MS, "count"), 40.0);
        close(stat(p, id::TPOT_MS, "mean"), 9.972920543269108);
        assert!(stat(p, id::TPOT_MS, "count").is_none());
        close(stat(p, id::E2E_MS, "count"), 40.0);
        close(value(p, id::REQUEST_THROUGHPUT), 15.795649092362073);
        assert_eq!((p.completed, p.failed), (Some(40.0), Some(0.0)));
        let e = parse_guidellm("x.json", "{}").unwrap_err().to_string();
        assert!(e.contains("x.json") && e.contains("GuideLLM"), "{e}");
    }
}

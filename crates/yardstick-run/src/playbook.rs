//! Playbooks: a designed experiment (a spec this module writes) plus the analysis that answers
//! one question. A spec with `playbook: NAME` is run like any other; when it finishes, its
//! summary gets the playbook's diagnosis ([`diagnose`], from `yardstick_analysis::diagnosis`).
//!
//! * `tail-latency`: a closed-loop probe finds the throughput the server sustains (unless the
//!   highest rate is given); an open-loop Poisson sweep then walks evenly spaced rates up to it,
//!   three replicates each, and the diagnosis finds the knee and what grew there.
//! * `starvation`: short and long requests mixed at one open-loop rate, and each class alone at
//!   its share of that rate; the diagnosis compares each class's TTFT in the mix with its own,
//!   and whether short requests wait behind long prefills.
//! * `stragglers`: a multi-rank command (the reference trainer by default) on this machine or a
//!   Slurm allocation; the diagnosis finds a rank that is the slowest in most steps of every
//!   replicate, materially, and names its node.
//! * `backpressure`: a server offered half of what it sustains, and more than it sustains from
//!   a client that takes a refusal as final and from one that retries as told; the diagnosis
//!   says whether it sheds load (429/503, with `Retry-After`) or queues without bound.
//! * `readiness`: every node of a Slurm allocation, its environment captured and its micro
//!   layer compared with the others'; the diagnosis names the nodes to drain.
//! * `triage`: the intake bundle — environment, micro, the reference trainer (or a command) and
//!   a short serve when a server is given; the diagnosis is the workload's bottleneck class.

use yardstick_analysis::diagnosis::{
    self, ClassFigures, Diagnosis, Estimate, LoadLevel, MixFigures, NodeState, PressureFigures,
    PressurePoint, RankFigures, ReadinessFigures, SchedulerFigures, TriageFigures,
};
use yardstick_spec::BenchmarkRun;
use yardstick_spec::metrics::id;
use yardstick_spec::model::PlaybookName;
use yardstick_spec::scenario::Scenario;
use yardstick_store::summary::{PointAggregates, RunSummary};

/// A playbook: its name, the question it answers, and whether this version runs it.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct PlaybookInfo {
    /// `tail-latency`.
    pub name: &'static str,
    /// The question.
    pub question: &'static str,
    /// What it runs, in a sentence.
    pub experiment: &'static str,
    /// The verdicts it can give.
    pub verdicts: &'static [&'static str],
}

/// The playbooks this version runs.
pub const PLAYBOOKS: &[PlaybookInfo] = &[
    PlaybookInfo {
        name: "tail-latency",
        question: "Why is my p99 TTFT bad, and from what load on?",
        experiment: "a closed-loop probe for the throughput the server sustains, then an open-loop \
                 Poisson sweep of evenly spaced rates up to it (3 replicates each); the knee is \
                 where p99 TTFT leaves its unloaded level beyond its interval, and the growth \
                 there is split into client queue, server queue, time outside the server and \
                 service time",
        verdicts: &[
            "queueing",
            "service-time",
            "client",
            "network",
            "no-knee",
            "inconclusive",
        ],
    },
    PlaybookInfo {
        name: "starvation",
        question: "Does one class of requests starve when short and long prompts share the server?",
        experiment: "short and long requests mixed at one open-loop rate (by default 60 % of what \
                     a closed-loop probe of the mix sustains), and each class alone at its share \
                     of that rate (3 replicates each); each class's p99 TTFT in the mix is \
                     compared with its own, Jain's fairness index is taken over the classes, and \
                     short requests sent while a long one was in prefill are compared with the rest",
        verdicts: &[
            "head-of-line",
            "short-starved",
            "long-starved",
            "fair",
            "inconclusive",
        ],
    },
    PlaybookInfo {
        name: "stragglers",
        question: "Is one rank (one node, one device) slower than the others, persistently?",
        experiment: "a command run as N ranks (the reference trainer by default) on this machine \
                     or a Slurm allocation, 3 replicates; per rank, the share of steps in which \
                     it was the slowest with its interval, in every replicate, and its median \
                     step time against the others'; a straggler's node is named, with the \
                     command that drains or cordons it (run only with --apply)",
        verdicts: &["straggler", "no-straggler", "inconclusive"],
    },
    PlaybookInfo {
        name: "backpressure",
        question: "What does the server do when offered more than it can serve: turn requests \
                   away and say when to come back, or queue them without bound?",
        experiment: "a closed-loop probe for the throughput the server sustains, then three \
                     open-loop points (3 replicates each): half of it, and --overload times it \
                     from a client that takes a refusal (429, 503) as final and from one that \
                     retries as the server's Retry-After says; the share turned away, whether \
                     refusals say when to come back, the served rate and p99 TTFT against below \
                     capacity, and what retrying bought; with --engine slurm, a burst of short \
                     jobs at a rate (3 replicates): sbatch time, start latency by quarter, jobs \
                     started per second against submitted",
        verdicts: &[
            "sheds-load",
            "sheds-without-retry-after",
            "unbounded-queue",
            "not-overloaded",
            "backlogged",
            "slow-submission",
            "keeps-up",
            "inconclusive",
        ],
    },
    PlaybookInfo {
        name: "readiness",
        question: "Is every node of the allocation fit for a multi-node workload?",
        experiment: "a Slurm batch job over --nodes nodes (3 replicates): every node's \
                     environment (GPUs, PCIe links, NVLink, ECC, drivers) and its micro layer \
                     (memory bandwidth, GEMM, the GPU probes where there are GPUs), the micro \
                     figures compared across nodes; a node missing GPUs (--gpus-per-node), with \
                     a degraded link, another driver, or figures off the others' median is not \
                     ready, named with the command that drains it (run only with --apply)",
        verdicts: &["ready", "not-ready", "inconclusive"],
    },
    PlaybookInfo {
        name: "triage",
        question: "What is this machine, what does it measure, and what limits the workload?",
        experiment: "the intake bundle in one run (3 replicates): the environment, the micro \
                     layer (memory bandwidth, GEMM, the GPU probes where there are GPUs), the \
                     reference trainer (or the command after --) classified against the \
                     ceilings measured, and a short serve at concurrency 1 and 8 when --url is \
                     given; one HTML report to attach to a ticket",
        verdicts: &[
            "compute",
            "memory",
            "communication",
            "input",
            "control-plane",
            "undetermined",
            "inconclusive",
        ],
    },
];

/// The micro layer of the readiness and triage specs: memory bandwidth, GEMM at two sizes, and
/// the GPU probes (recorded as skipped, with the reason, where there is no GPU).
const MICRO: &str = "    micro:
      - kind: memory
        sizes: [67108864]
      - kind: gemm
        sizes: [256, 512]
      - kind: gpu-memory
      - kind: gpu-pcie
      - kind: gpu-gemm
";

/// The settings of a triage bundle.
#[derive(Debug, Clone)]
pub struct Triage {
    /// The benchmark's name (`metadata.name`).
    pub name: String,
    /// A server to measure too: its base URL and model.
    pub serve: Option<(String, String)>,
    /// The workload's command (metric protocol); the reference trainer when empty.
    pub command: Vec<String>,
    /// Steps of the reference trainer.
    pub steps: u64,
    /// Profile the workload in one extra replicate with this tool (`perf`, `nsys`, `py-spy`,
    /// `torch`), when given.
    pub profile: Option<String>,
    /// Replicates.
    pub replicates: u32,
}

/// The spec of a triage bundle.
pub fn triage_spec(t: &Triage) -> String {
    let profile = t
        .profile
        .as_ref()
        .map(|tool| format!("        profile: {{mode: trace, tool: {tool}}}\n"))
        .unwrap_or_default();
    let serve = match &t.serve {
        Some((url, model)) => format!(
            "    component:
      - kind: serve
        target: {{url: {url}, api: chat, model: {model}}}
        scenarios: [\"D(128,32)\"]
        load: {{mode: concurrency, values: [1, 8]}}
        stop: {{maxRequests: 40, maxDuration: 20s}}
",
            url = yaml_str(url),
            model = yaml_str(model),
        ),
        None => String::new(),
    };
    let workload = if t.command.is_empty() {
        format!(
            "      - kind: train
        preset: tiny
        steps: {}
        timeout: 5m
{profile}",
            t.steps
        )
    } else {
        format!(
            "      - kind: command
        name: workload
        command: [{}]
        timeout: 30m
{profile}",
            t.command
                .iter()
                .map(|a| yaml_str(a))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "# Written by `yardstick playbook show triage`: the intake bundle (environment, micro, the
# workload, a short serve when a server is given); the run's summary ends with the diagnosis
# (docs/playbooks.md).
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: {name}
  labels: {{playbook: triage}}
spec:
  mode: exploratory
  playbook: triage
  workload:
    model: {model}
    precision: fp32
    sequenceLengths: \"D(128,32)\"
    batching: continuous
    concurrency: [1, 8]
    dataset: {{kind: synthetic, seed: 42}}
    correctness: {{policy: none}}
  trials:
    replicates: {replicates}
    warmup: {{requests: 4}}
    confidenceLevel: 0.95
    outlierPolicy: report-tukey
    order: interleaved
  layers:
{micro}{serve}    e2e:
{workload}  provenance:
    signing: off
",
        name = t.name,
        model = yaml_str(t.serve.as_ref().map_or("tiny", |s| s.1.as_str())),
        replicates = t.replicates,
        micro = MICRO,
    )
}

/// The bundle's figures: the machine, its ceilings, the first classified point, the serve
/// point at its highest concurrency.
fn triage_figures(summary: &RunSummary, dir: Option<&std::path::Path>) -> TriageFigures {
    let b = summary.bottlenecks.as_ref();
    let classified = b.and_then(|b| b.points.first());
    let serve = summary
        .points
        .iter()
        .filter(|p| p.work.get("load_mode").and_then(|m| m.as_str()) == Some("concurrency"))
        .max_by(|a, z| {
            let v = |p: &PointAggregates| p.work.get("load_value").and_then(|v| v.as_f64());
            v(a).unwrap_or(0.0).total_cmp(&v(z).unwrap_or(0.0))
        })
        .map(|p| {
            (
                p.id.clone(),
                mean(p, id::TTFT_MS, "p99"),
                mean(p, id::REQUEST_THROUGHPUT, "value"),
            )
        });
    let profile = classified
        .and_then(|c| summary.profiles.as_ref()?.get(&c.point))
        .map(|e| {
            let a = e.analysis.as_ref();
            (
                a.map_or_else(|| "workload".to_string(), |a| a.tool.clone()),
                a.map(|a| {
                    a.top
                        .iter()
                        .take(3)
                        .map(|t| (t.name.clone(), t.share))
                        .collect()
                })
                .unwrap_or_default(),
            )
        });
    TriageFigures {
        profile,
        // The run's environment capture names the machine.
        machine_profile: dir
            .and_then(|d| std::fs::read(d.join("env.json")).ok())
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["machine_profile"].as_str().map(str::to_owned)),
        peak_flops: b.and_then(|b| b.ceilings.as_ref()).map(|c| c.peak_flops),
        memory_bw: b.and_then(|b| b.ceilings.as_ref()).map(|c| c.memory_bw),
        point: classified.map(|c| c.point.clone()),
        bottleneck: classified.map(|c| c.classification.bottleneck.as_str().to_string()),
        bottleneck_evidence: classified
            .map(|c| c.classification.evidence.clone())
            .unwrap_or_default(),
        serve,
    }
}

/// The settings of a readiness check.
#[derive(Debug, Clone)]
pub struct Readiness {
    /// The benchmark's name (`metadata.name`).
    pub name: String,
    /// Nodes of the allocation.
    pub nodes: u32,
    /// The partition, when not the default.
    pub partition: Option<String>,
    /// GPUs every node must have.
    pub gpus_per_node: Option<u32>,
    /// Replicates of the micro layer.
    pub replicates: u32,
    /// nccl-tests outputs of the nodes (paths as the spec will name them).
    pub nccl_tests: Vec<String>,
    /// The average bus bandwidth each must reach, GB/s.
    pub nccl_min_busbw: Option<f64>,
}

/// The spec of a readiness check: the micro layer on every node of a Slurm allocation, each
/// node's environment captured (as every Slurm run does).
pub fn readiness_spec(t: &Readiness) -> String {
    let mut execution = format!(
        "{{engine: slurm, nodes: {}, tasksPerNode: 1, timeLimit: 30m",
        t.nodes.max(1)
    );
    if let Some(p) = &t.partition {
        execution.push_str(&format!(", partition: {}", yaml_str(p)));
    }
    execution.push('}');
    let mut expect: Vec<String> = Vec::new();
    if let Some(g) = t.gpus_per_node {
        expect.push(format!("gpusPerNode: {g}"));
    }
    if !t.nccl_tests.is_empty() {
        expect.push(format!(
            "ncclTests: [{}]",
            t.nccl_tests
                .iter()
                .map(|f| yaml_str(f))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(m) = t.nccl_min_busbw {
        expect.push(format!("ncclMinBusbw: {m}"));
    }
    let expect = if expect.is_empty() {
        String::new()
    } else {
        format!("  expect: {{{}}}\n", expect.join(", "))
    };
    format!(
        "# Written by `yardstick playbook show readiness`: every node of a {nodes}-node allocation, its
# environment and its micro layer compared with the others'; the run's summary ends with the
# diagnosis (docs/playbooks.md).
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: {name}
  labels: {{playbook: readiness}}
spec:
  mode: exploratory
  playbook: readiness
{expect}  execution: {execution}
  trials:
    replicates: {replicates}
    warmup: {{runs: 1}}
    confidenceLevel: 0.95
    outlierPolicy: report-tukey
    order: interleaved
  layers:
{micro}  provenance:
    signing: off
",
        nodes = t.nodes.max(1),
        name = t.name,
        replicates = t.replicates,
        micro = MICRO,
    )
}

/// A node's state from its environment capture (`yardstick env --json`).
pub fn node_state(node: &str, capture: Option<&yardstick_env::capture::Capture>) -> NodeState {
    let Some(c) = capture else {
        return NodeState {
            node: node.into(),
            ..Default::default()
        };
    };
    let mut s = NodeState {
        node: node.into(),
        captured: true,
        gpus: c.gpus.len() as u32,
        driver: c.nvidia.driver_version.clone(),
        cuda_driver: c.nvidia.cuda_driver_version.clone(),
        ..Default::default()
    };
    for g in &c.gpus {
        if let (Some(now), Some(max)) = (g.pcie.width_current, g.pcie.width_max)
            && now < max
        {
            s.narrow_links
                .push(format!("GPU {}: x{now} of x{max}", g.index));
        }
        if let Some(l) = &g.nvlink
            && l.active < l.total
        {
            s.nvlink_down.push(format!(
                "GPU {}: {} of {} active",
                g.index, l.active, l.total
            ));
        }
        if let Some(n) = g.ecc.uncorrected_volatile.filter(|n| *n > 0) {
            s.ecc_uncorrected.push(format!("GPU {}: {n}", g.index));
        }
    }
    s
}

/// The nodes of a readiness run: each environment capture under `<run>/slurm/<job>/env/`, the
/// nodes the check compared (and the ones it names without a capture).
fn readiness_figures(
    spec_body: &yardstick_spec::model::Spec,
    summary: &RunSummary,
    dir: Option<&std::path::Path>,
) -> ReadinessFigures {
    let mut nodes: std::collections::BTreeMap<String, NodeState> = Default::default();
    if let Some(dir) = dir
        && let Ok(jobs) = std::fs::read_dir(dir.join("slurm"))
    {
        for job in jobs.flatten() {
            let Ok(envs) = std::fs::read_dir(job.path().join("env")) else {
                continue;
            };
            for f in envs.flatten() {
                let path = f.path();
                let Some(name) = path.file_stem().map(|n| n.to_string_lossy().into_owned()) else {
                    continue;
                };
                let capture: Option<yardstick_env::capture::Capture> = std::fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                // Named by Slurm's node name (what `scontrol` drains), as the nodes check names
                // its micro files.
                nodes.insert(name.clone(), node_state(&name, capture.as_ref()));
            }
        }
    }
    let report = summary.nodes.as_ref();
    for n in report.map(|r| r.nodes.as_slice()).unwrap_or_default() {
        nodes
            .entry(n.clone())
            .or_insert_with(|| node_state(n, None));
    }
    let expect = spec_body.expect.as_ref();
    ReadinessFigures {
        nodes: nodes.into_values().collect(),
        compared: report.map_or(0, |r| r.nodes.len()),
        flagged: report.map(|r| r.flagged.clone()).unwrap_or_default(),
        gpus_per_node: expect.and_then(|e| e.gpus_per_node),
        nccl: expect
            .and_then(|e| e.nccl_tests.as_ref())
            .into_iter()
            .flatten()
            .map(|name| nccl_figures(name, dir))
            .collect(),
        nccl_min_busbw: expect.and_then(|e| e.nccl_min_busbw),
    }
}

/// What the nccl-tests output `name` (its copy stored with the run) showed.
fn nccl_figures(
    name: &str,
    dir: Option<&std::path::Path>,
) -> yardstick_analysis::diagnosis::NcclFigures {
    let mut f = yardstick_analysis::diagnosis::NcclFigures {
        file: name.to_string(),
        ..Default::default()
    };
    let text = dir
        .map(|d| d.join(crate::input_artifact("nccl", name)))
        .and_then(|p| std::fs::read_to_string(p).ok());
    let Some(text) = text else {
        f.failed = Some("its output was not stored with the run".into());
        return f;
    };
    let (run, failed) = match yardstick_workloads::micro::ingest::nccl::parse_checked(&text) {
        Ok(x) => x,
        Err(e) => {
            f.failed = Some(format!("it could not be read: {e}"));
            return f;
        }
    };
    // The hosts of its device lines (`Rank  0 Group  0 Pid  41327 on HOST device  0 ...`).
    for d in &run.devices {
        let toks: Vec<&str> = d.split_whitespace().collect();
        if let Some(h) = toks
            .iter()
            .position(|t| *t == "on")
            .and_then(|i| toks.get(i + 1))
            && !f.hosts.iter().any(|x| x == h)
        {
            f.hosts.push((*h).to_string());
        }
    }
    f.ranks = run.devices.len();
    f.op = run.op.clone();
    if failed.is_some() {
        // Wrong collectives report no bandwidth.
        f.failed = failed;
        return f;
    }
    f.avg_busbw = run.avg_busbw;
    f.peak_busbw = run
        .rows
        .iter()
        .flat_map(|r| {
            std::iter::once(r.out_of_place.busbw)
                .chain(r.in_place.map(|p| p.busbw))
                .map(move |b| (b, r.size))
        })
        .fold(None, |best: Option<(f64, u64)>, x| match best {
            Some(b) if b.0 >= x.0 => Some(b),
            _ => Some(x),
        });
    f
}

/// The settings of a tail-latency experiment.
#[derive(Debug, Clone)]
pub struct TailLatency {
    /// The benchmark's name (`metadata.name`).
    pub name: String,
    /// The server's base URL.
    pub url: String,
    /// The model.
    pub model: String,
    /// The API (`chat` or `completions`).
    pub api: String,
    /// The precision the server runs (`bf16`, `fp8`...), recorded with the run.
    pub precision: String,
    /// The traffic scenario (`D(256,128)`, `N(480,240)/(300,150)`).
    pub scenario: String,
    /// The SLO on p99 TTFT, ms.
    pub slo_ttft_ms: Option<f64>,
    /// The highest rate, requests/s.
    pub max_rate: f64,
    /// Rates in the sweep (evenly spaced up to `max_rate`).
    pub levels: usize,
    /// Replicates per rate.
    pub replicates: u32,
    /// Requests per replicate at most.
    pub requests: u64,
    /// Seconds per replicate at most.
    pub duration_s: f64,
}

/// Rates evenly spaced up to `max`: `max·i/levels`, three significant digits.
pub fn rates(max: f64, levels: usize) -> Vec<f64> {
    let levels = levels.max(2);
    (1..=levels)
        .map(|i| significant(max * i as f64 / levels as f64))
        .collect()
}

fn significant(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 0.0;
    }
    let scale = 10f64.powi(2 - x.log10().floor() as i32);
    (x * scale).round() / scale
}

fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string is JSON")
}

/// The workload and trials of a serving playbook's spec: `scenario` frozen, replicates
/// interleaved after 5 warm-up requests.
fn serve_frozen(model: &str, precision: &str, scenario: &str, replicates: u32) -> String {
    format!(
        "  workload:
    model: {model}
    precision: {precision}
    sequenceLengths: {scenario}
    batching: continuous
    concurrency: 1
    dataset: {{kind: synthetic, seed: 42}}
    correctness: {{policy: none}}
  trials:
    replicates: {replicates}
    warmup: {{requests: 5}}
    confidenceLevel: 0.95
    outlierPolicy: report-tukey
    order: interleaved
",
        model = yaml_str(model),
        scenario = yaml_str(scenario),
    )
}

/// The spec of a tail-latency sweep.
pub fn tail_latency_spec(t: &TailLatency) -> String {
    let values = rates(t.max_rate, t.levels)
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let slo = t
        .slo_ttft_ms
        .map(|s| format!("        slo: {{ttftMs: {s}}}\n"))
        .unwrap_or_default();
    format!(
        "# Written by `yardstick playbook show tail-latency`: an open-loop Poisson sweep of {levels}
# rates up to {max} req/s; the run's summary ends with the diagnosis (docs/playbooks.md).
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: {name}
  labels: {{playbook: tail-latency}}
spec:
  mode: exploratory
  playbook: tail-latency
{frozen}  layers:
    component:
      - kind: serve
        target: {{url: {url}, api: {api}, model: {model}}}
        scenarios: [{scenario}]
        load: {{mode: rate, arrival: poisson, values: [{values}]}}
        stop: {{maxRequests: {requests}, maxDuration: {duration}s}}
{slo}  provenance:
    signing: off
",
        levels = t.levels.max(2),
        max = significant(t.max_rate),
        name = t.name,
        frozen = serve_frozen(&t.model, &t.precision, &t.scenario, t.replicates),
        model = yaml_str(&t.model),
        scenario = yaml_str(&t.scenario),
        url = yaml_str(&t.url),
        api = t.api,
        requests = t.requests,
        duration = t.duration_s,
    )
}

/// The settings of a starvation experiment.
#[derive(Debug, Clone)]
pub struct Starvation {
    /// The benchmark's name (`metadata.name`).
    pub name: String,
    /// The server's base URL.
    pub url: String,
    /// The model.
    pub model: String,
    /// The API (`chat` or `completions`).
    pub api: String,
    /// The precision the server runs, recorded with the run.
    pub precision: String,
    /// The short class (`D(64,16)`).
    pub short: String,
    /// The long class (`D(2048,16)`).
    pub long: String,
    /// The long class's share of the mix's requests, in (0, 1).
    pub long_share: f64,
    /// The mix's rate, requests/s.
    pub rate: f64,
    /// Replicates per point.
    pub replicates: u32,
    /// Requests per replicate of the mix at most (each class alone: its share, at least 20).
    pub requests: u64,
    /// Seconds per replicate at most.
    pub duration_s: f64,
}

impl Starvation {
    /// The mixed scenario: `0.8*D(64,16)+0.2*D(2048,16)`.
    pub fn mix(&self) -> String {
        let w = |x: f64| significant(x).to_string();
        format!(
            "{}*{}+{}*{}",
            w(1.0 - self.long_share),
            self.short,
            w(self.long_share),
            self.long
        )
    }
}

/// The spec of a starvation experiment: each class alone at its share of the rate, then the mix.
pub fn starvation_spec(t: &Starvation) -> String {
    let entry = |scenario: &str, rate: f64, requests: u64| {
        format!(
            "      - kind: serve
        target: {{url: {url}, api: {api}, model: {model}}}
        scenarios: [{scenario}]
        load: {{mode: rate, arrival: poisson, values: [{rate}]}}
        stop: {{maxRequests: {requests}, maxDuration: {duration}s}}
",
            url = yaml_str(&t.url),
            api = t.api,
            model = yaml_str(&t.model),
            scenario = yaml_str(scenario),
            rate = significant(rate),
            requests = requests.max(20),
            duration = t.duration_s,
        )
    };
    let short_share = 1.0 - t.long_share;
    let share = |f: f64| (t.requests as f64 * f).round() as u64;
    format!(
        "# Written by `yardstick playbook show starvation`: short and long requests mixed at {rate} req/s,
# and each class alone at its share of that rate; the run's summary ends with the diagnosis
# (docs/playbooks.md).
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: {name}
  labels: {{playbook: starvation}}
spec:
  mode: exploratory
  playbook: starvation
{frozen}  layers:
    component:
{short}{long}{mixed}  provenance:
    signing: off
",
        rate = significant(t.rate),
        name = t.name,
        frozen = serve_frozen(&t.model, &t.precision, &t.mix(), t.replicates),
        short = entry(&t.short, t.rate * short_share, share(short_share)),
        long = entry(&t.long, t.rate * t.long_share, share(t.long_share)),
        mixed = entry(&t.mix(), t.rate, t.requests),
    )
}

/// The settings of a backpressure experiment.
#[derive(Debug, Clone)]
pub struct Backpressure {
    /// The benchmark's name (`metadata.name`).
    pub name: String,
    /// The server's base URL.
    pub url: String,
    /// The model.
    pub model: String,
    /// The API (`chat` or `completions`).
    pub api: String,
    /// The precision the server runs, recorded with the run.
    pub precision: String,
    /// The traffic scenario.
    pub scenario: String,
    /// What the server sustains, requests/s (a probe's, or given).
    pub capacity: f64,
    /// The overloaded points offer this many times `capacity`.
    pub overload: f64,
    /// Attempts per request at most of the retrying client.
    pub max_attempts: u32,
    /// Replicates per point.
    pub replicates: u32,
    /// Requests per replicate at most.
    pub requests: u64,
    /// Seconds per replicate at most.
    pub duration_s: f64,
}

/// The spec of a backpressure experiment: below capacity, then overloaded without and with
/// retries.
pub fn backpressure_spec(t: &Backpressure) -> String {
    let entry = |rate: f64, retry: bool, requests: u64| {
        format!(
            "      - kind: serve
        target: {{url: {url}, api: {api}, model: {model}}}
        scenarios: [{scenario}]
        load: {{mode: rate, arrival: poisson, values: [{rate}]}}
        stop: {{maxRequests: {requests}, maxDuration: {duration}s}}
{retry}",
            url = yaml_str(&t.url),
            api = t.api,
            model = yaml_str(&t.model),
            scenario = yaml_str(&t.scenario),
            rate = significant(rate),
            duration = t.duration_s,
            retry = if retry {
                format!(
                    "        retry: {{on: [429, 503], maxAttempts: {}, retryAfter: true}}\n",
                    t.max_attempts
                )
            } else {
                String::new()
            },
        )
    };
    let over = t.capacity * t.overload;
    // The overloaded points send as many requests in the same time as the point below.
    let more = ((t.requests as f64) * t.overload / 0.5).round() as u64;
    format!(
        "# Written by `yardstick playbook show backpressure`: {below} req/s (half of what the server
# sustains), then {over} req/s from a client that takes a refusal as final and from one that
# retries as told; the run's summary ends with the diagnosis (docs/playbooks.md).
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: {name}
  labels: {{playbook: backpressure}}
spec:
  mode: exploratory
  playbook: backpressure
{frozen}  layers:
    component:
{b}{o}{r}  provenance:
    signing: off
",
        below = significant(t.capacity * 0.5),
        over = significant(over),
        name = t.name,
        frozen = serve_frozen(&t.model, &t.precision, &t.scenario, t.replicates),
        b = entry(t.capacity * 0.5, false, t.requests),
        o = entry(over, false, more),
        r = entry(over, true, more),
    )
}

/// The settings of a scheduler's backpressure experiment: a burst of short jobs.
#[derive(Debug, Clone)]
pub struct SchedulerBurst {
    /// The benchmark's name (`metadata.name`).
    pub name: String,
    /// This program (the burst is `yardstick bench scheduler`).
    pub exe: String,
    /// Jobs per burst.
    pub jobs: u32,
    /// Submissions per second.
    pub rate: f64,
    /// Seconds each job holds its allocation.
    pub hold_s: f64,
    /// The partition, when not the default.
    pub partition: Option<String>,
    /// Where jobs stamp their start (shared with the nodes).
    pub dir: String,
    /// Replicates (bursts).
    pub replicates: u32,
    /// Seconds to wait for jobs to start after the last submission.
    pub timeout_s: f64,
}

/// The spec of a scheduler burst: `yardstick bench scheduler` as an e2e command, reporting
/// through the metric protocol.
pub fn scheduler_spec(t: &SchedulerBurst) -> String {
    let mut command = vec![
        t.exe.clone(),
        "bench".into(),
        "scheduler".into(),
        "--engine".into(),
        "slurm".into(),
        "--jobs".into(),
        t.jobs.to_string(),
        "--rate".into(),
        t.rate.to_string(),
        "--hold".into(),
        t.hold_s.to_string(),
        "--dir".into(),
        t.dir.clone(),
        "--timeout".into(),
        format!("{}s", t.timeout_s),
    ];
    if let Some(p) = &t.partition {
        command.extend(["--partition".to_string(), p.clone()]);
    }
    let command = command
        .iter()
        .map(|a| yaml_str(a))
        .collect::<Vec<_>>()
        .join(", ");
    // The burst's own time: its submissions, the jobs' hold, the wait for the last start.
    let bound = f64::from(t.jobs) / t.rate + t.hold_s + t.timeout_s + 60.0;
    format!(
        "# Written by `yardstick playbook show backpressure --engine slurm`: {jobs} short jobs at {rate}
# per second, {replicates} bursts; the run's summary ends with the diagnosis (docs/playbooks.md).
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: {name}
  labels: {{playbook: backpressure}}
spec:
  mode: exploratory
  playbook: backpressure
  workload:
    model: scheduler-burst
    precision: fp32
    sequenceLengths: 1
    batching: static
    concurrency: 1
    dataset: {{kind: synthetic, seed: 0}}
    correctness: {{policy: none}}
  trials:
    replicates: {replicates}
    warmup: {{runs: 0}}
    confidenceLevel: 0.95
    outlierPolicy: report-mad
    order: interleaved
  layers:
    e2e:
      - kind: command
        name: burst
        command: [{command}]
        timeout: {bound}s
  provenance:
    signing: off
",
        jobs = t.jobs,
        rate = t.rate,
        replicates = t.replicates,
        name = t.name,
        bound = bound.ceil(),
    )
}

/// Where a stragglers experiment runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankEngine {
    /// N processes on this machine.
    Local,
    /// A Slurm batch job: `nodes` × `tasks` ranks as one srun step per replicate.
    Slurm,
}

/// The settings of a stragglers experiment.
#[derive(Debug, Clone)]
pub struct Stragglers {
    /// The benchmark's name (`metadata.name`).
    pub name: String,
    /// Where the ranks run.
    pub engine: RankEngine,
    /// Nodes (Slurm).
    pub nodes: u32,
    /// Ranks per node.
    pub tasks: u32,
    /// Replicates.
    pub replicates: u32,
    /// Steps dropped from each replicate before measuring.
    pub warmup_steps: u64,
    /// The command every rank runs (it reports `rank` and `step_time_s`).
    pub command: Vec<String>,
    /// Kill a replicate after this long, seconds.
    pub timeout_s: f64,
}

/// The spec of a stragglers experiment.
pub fn stragglers_spec(t: &Stragglers) -> String {
    let command = match t.engine {
        // Slurm's srun starts every task with SLURM_PROCID and SLURM_NTASKS.
        RankEngine::Slurm => t.command.clone(),
        // Here, a shell starts the ranks with RANK and WORLD_SIZE, as torchrun does, and fails
        // when any of them fails.
        RankEngine::Local => {
            let mut c = vec![
                "sh".to_string(),
                "-c".to_string(),
                format!(
                    "pids=; i=0; while [ $i -lt {n} ]; do RANK=$i LOCAL_RANK=$i WORLD_SIZE={n} \"$0\" \"$@\" & pids=\"$pids $!\"; i=$((i+1)); done; rc=0; for p in $pids; do wait $p || rc=$?; done; exit $rc",
                    n = t.tasks
                ),
            ];
            c.extend(t.command.iter().cloned());
            c
        }
    };
    let command = command
        .iter()
        .map(|a| yaml_str(a))
        .collect::<Vec<_>>()
        .join(", ");
    let execution = match t.engine {
        RankEngine::Slurm => format!(
            "  execution: {{engine: slurm, nodes: {}, tasksPerNode: {}, timeLimit: 1h}}\n",
            t.nodes.max(1),
            t.tasks.max(1)
        ),
        RankEngine::Local => String::new(),
    };
    format!(
        "# Written by `yardstick playbook show stragglers`: {ranks} ranks of one command, {replicates}
# replicates; the run's summary ends with the diagnosis (docs/playbooks.md).
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: {name}
  labels: {{playbook: stragglers}}
spec:
  mode: exploratory
  playbook: stragglers
{execution}  workload:
    model: {model}
    precision: fp32
    sequenceLengths: 128
    batching: static
    concurrency: 1
    dataset: {{kind: synthetic, seed: 0}}
    correctness: {{policy: none}}
  trials:
    replicates: {replicates}
    warmup: {{steps: {warmup}}}
    confidenceLevel: 0.95
    outlierPolicy: report-mad
    order: interleaved
  layers:
    e2e:
      - kind: command
        name: ranks
        command: [{command}]
        timeout: {timeout}s
  provenance:
    signing: off
",
        ranks = t.tasks * if t.engine == RankEngine::Slurm { t.nodes.max(1) } else { 1 },
        model = yaml_str(
            t.command
                .iter()
                .find(|a| !a.starts_with('-') && *a != "env" && !a.contains('='))
                .map(|a| a.rsplit('/').next().unwrap_or(a))
                .unwrap_or("ranks")
        ),
        replicates = t.replicates,
        name = t.name,
        warmup = t.warmup_steps,
        timeout = t.timeout_s,
    )
}

/// The spec of the probe before a tail-latency sweep: closed loop at `concurrency`, three short
/// replicates (the fewest a result takes), each long enough to fill the server. Refusals (429,
/// 503) are tried again as `Retry-After` says, so a server that sheds load is measured at what
/// it serves, not at how fast it refuses.
pub fn probe_spec(t: &TailLatency, concurrency: u32) -> String {
    let requests = (u64::from(concurrency) * 2).max(32);
    format!(
        "# The probe of `yardstick playbook tail-latency`: the throughput the server sustains.
apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: {name}.probe
  labels: {{playbook: tail-latency}}
spec:
  mode: exploratory
  workload:
    model: {model}
    precision: {precision}
    sequenceLengths: {scenario}
    batching: continuous
    concurrency: {concurrency}
    dataset: {{kind: synthetic, seed: 42}}
    correctness: {{policy: none}}
  trials:
    replicates: 3
    warmup: {{requests: {concurrency}}}
    confidenceLevel: 0.95
    outlierPolicy: report-tukey
  layers:
    component:
      - kind: serve
        target: {{url: {url}, api: {api}, model: {model}}}
        scenarios: [{scenario}]
        load: {{mode: concurrency, values: [{concurrency}]}}
        stop: {{maxRequests: {requests}, maxDuration: {duration}s}}
        retry: {{on: [429, 503], maxAttempts: 10}}
  provenance:
    signing: off
",
        name = t.name,
        model = yaml_str(&t.model),
        scenario = yaml_str(&t.scenario),
        url = yaml_str(&t.url),
        api = t.api,
        precision = t.precision,
        duration = t.duration_s.max(30.0),
    )
}

/// The throughput a probe run measured (its first point's request throughput).
pub fn probe_throughput(summary: &RunSummary) -> Option<f64> {
    summary
        .points
        .first()?
        .metrics
        .get(id::REQUEST_THROUGHPUT)?
        .get("value")
        .map(|a| a.mean)
        .filter(|r| *r > 0.0 && r.is_finite())
}

fn estimate(p: &PointAggregates, metric: &str, stat: &str) -> Option<Estimate> {
    let a = p.metrics.get(metric)?.get(stat)?;
    let [lo, hi] = a.ci.unwrap_or([a.mean, a.mean]);
    Some(Estimate {
        mean: a.mean,
        lo,
        hi,
    })
}

fn mean(p: &PointAggregates, metric: &str, stat: &str) -> Option<f64> {
    p.metrics.get(metric)?.get(stat).map(|a| a.mean)
}

/// One serve point of a rate sweep as the diagnosis reads it.
fn level(p: &PointAggregates) -> Option<LoadLevel> {
    if p.work.get("load_mode").and_then(|m| m.as_str()) != Some("rate") {
        return None;
    }
    Some(LoadLevel {
        point: p.id.clone(),
        offered_rps: p.work.get("load_value")?.as_f64()?,
        achieved_rps: estimate(p, id::REQUEST_THROUGHPUT, "value"),
        ttft_mean_ms: mean(p, id::TTFT_MS, "mean"),
        e2e_mean_ms: mean(p, id::E2E_MS, "mean"),
        requests: mean(p, id::TTFT_MS, "count"),
        ttft_p99_ms: estimate(p, id::TTFT_MS, "p99"),
        ttft_p50_ms: mean(p, id::TTFT_MS, "p50"),
        tpot_p50_ms: estimate(p, id::TPOT_MS, "p50"),
        client_queue_mean_ms: mean(p, id::CLIENT_QUEUE_MS, "mean"),
        server_queue_ms: mean(p, id::SERVER_QUEUE_MS, "value"),
        server_waiting: mean(p, id::SERVER_WAITING, "p50"),
        ttft_client_minus_server_ms: mean(p, id::TTFT_CLIENT_MINUS_SERVER_MS, "value"),
    })
}

fn scenario_of(p: &PointAggregates) -> Option<Scenario> {
    p.work.get("scenario")?.as_str()?.parse().ok()
}

/// The mixed point of a starvation run and its classes, each beside the point that ran it alone.
fn mix_figures(summary: &RunSummary) -> Option<MixFigures> {
    let (point, parts) = summary.points.iter().find_map(|p| {
        let sc = scenario_of(p)?;
        let parts = sc.parts()?.to_vec();
        let first = parts.first()?.1.mean_input();
        parts
            .iter()
            .any(|(_, x)| x.mean_input() != first)
            .then_some((p, parts))
    })?;
    let by_input =
        |a: &&(f64, Scenario), b: &&(f64, Scenario)| a.1.mean_input().total_cmp(&b.1.mean_input());
    let short = &parts.iter().min_by(by_input)?.1;
    let long = &parts.iter().max_by(by_input)?.1;
    let class = |sc: &Scenario, metric: &str| {
        let alone = summary
            .points
            .iter()
            .find(|p| scenario_of(p).as_ref() == Some(sc));
        ClassFigures {
            scenario: sc.to_string(),
            mix_mean_ms: estimate(point, metric, "mean"),
            mix_p50_ms: estimate(point, metric, "p50"),
            mix_p99_ms: estimate(point, metric, "p99"),
            alone_point: alone.map(|p| p.id.clone()),
            alone_mean_ms: alone.and_then(|p| estimate(p, id::TTFT_MS, "mean")),
            alone_p50_ms: alone.and_then(|p| estimate(p, id::TTFT_MS, "p50")),
            alone_p99_ms: alone.and_then(|p| estimate(p, id::TTFT_MS, "p99")),
        }
    };
    Some(MixFigures {
        point: point.id.clone(),
        offered_rps: point.work.get("load_value")?.as_f64()?,
        short: class(short, id::SHORT_TTFT_MS),
        long: class(long, id::LONG_TTFT_MS),
        behind_ms: estimate(point, id::HEAD_OF_LINE_TTFT_MS, "behind"),
        clear_ms: estimate(point, id::HEAD_OF_LINE_TTFT_MS, "clear"),
        behind_share: mean(point, id::HEAD_OF_LINE_SHARE, "value"),
    })
}

/// The points of a backpressure run: the lowest and highest offered rates of the points that
/// take a refusal as final, and the point that retries.
fn pressure_figures(summary: &RunSummary) -> PressureFigures {
    let point = |p: &PointAggregates| -> Option<PressurePoint> {
        if p.work.get("load_mode").and_then(|m| m.as_str()) != Some("rate") {
            return None;
        }
        let completed = mean(p, id::REQUESTS, "completed");
        let failed = mean(p, id::REQUESTS, "failed");
        Some(PressurePoint {
            point: p.id.clone(),
            offered_rps: p.work.get("load_value")?.as_f64()?,
            achieved_rps: estimate(p, id::REQUEST_THROUGHPUT, "value"),
            ttft_p99_ms: estimate(p, id::TTFT_MS, "p99"),
            refused_share: estimate(p, id::REFUSED_SHARE, "value"),
            retry_after_share: mean(p, id::RETRY_AFTER_SHARE, "value"),
            served_share: match (completed, failed) {
                (Some(c), Some(f)) if c + f > 0.0 => Some(c / (c + f)),
                (Some(_), None) => Some(1.0),
                _ => None,
            },
            attempts_per_request: mean(p, id::ATTEMPTS_PER_REQUEST, "value"),
            server_waiting_p50: mean(p, id::SERVER_WAITING, "p50"),
            server_waiting_max: mean(p, id::SERVER_WAITING, "max"),
        })
    };
    let retries = |p: &PointAggregates| p.work.get("retry").is_some_and(|r| !r.is_null());
    let plain: Vec<PressurePoint> = summary
        .points
        .iter()
        .filter(|p| !retries(p))
        .filter_map(point)
        .collect();
    let by_rate = |a: &&PressurePoint, b: &&PressurePoint| a.offered_rps.total_cmp(&b.offered_rps);
    PressureFigures {
        below: plain.iter().min_by(by_rate).cloned(),
        over: plain
            .iter()
            .max_by(by_rate)
            .filter(|_| plain.len() >= 2)
            .cloned(),
        retrying: summary.points.iter().filter(|p| retries(p)).find_map(point),
    }
}

/// The burst of a scheduler backpressure run: the first point reporting `custom.started_per_s`.
fn scheduler_figures(summary: &RunSummary) -> Option<SchedulerFigures> {
    let p = summary
        .points
        .iter()
        .find(|p| p.metrics.contains_key("custom.started_per_s"))?;
    let last = |name: &str| estimate(p, &format!("custom.{name}"), "last");
    let median = |name: &str| estimate(p, &format!("custom.{name}"), "p50");
    Some(SchedulerFigures {
        point: p.id.clone(),
        offered_per_s: last("offered_per_s")?.mean,
        submitted_per_s: last("submitted_per_s"),
        started_per_s: last("started_per_s"),
        started_share: last("started_share"),
        submit_p50_s: median("submit_s"),
        start_latency_p50_s: median("start_latency_s"),
        first_quarter_s: last("start_latency_first_quarter_s"),
        last_quarter_s: last("start_latency_last_quarter_s"),
    })
}

/// Each rank's figures per replicate (replicate summaries) of the first multi-rank point: how often it was the slowest,
/// its steps, its median over the other ranks' medians, and its node (Slurm's block
/// distribution over the allocation's nodes, `tasks_per_node` ranks each; else `host`).
fn rank_figures(
    per_point: &[(String, Vec<serde_json::Value>)],
    nodes: &[String],
    tasks_per_node: u32,
    host: Option<String>,
) -> Vec<RankFigures> {
    let Some((_, reps)) = per_point
        .iter()
        .find(|(_, reps)| reps.iter().any(|v| v["ranks"]["ranks"].is_array()))
    else {
        return Vec::new();
    };
    let mut out: std::collections::BTreeMap<u32, RankFigures> = Default::default();
    for v in reps {
        let Some(ranks) = v["ranks"]["ranks"].as_array() else {
            continue;
        };
        let medians: Vec<(u32, f64, u64, u64)> = ranks
            .iter()
            .filter_map(|r| {
                Some((
                    u32::try_from(r["rank"].as_u64()?).ok()?,
                    r["step_time_s"]["p50"].as_f64()?,
                    r["step_time_s"]["n"].as_u64()?,
                    r["slowest_in_steps"].as_u64()?,
                ))
            })
            .collect();
        for &(rank, p50, n, slowest) in &medians {
            let mut others: Vec<f64> = medians
                .iter()
                .filter(|m| m.0 != rank)
                .map(|m| m.1)
                .collect();
            others.sort_by(f64::total_cmp);
            let Some(&mid) = others.get(others.len() / 2) else {
                continue;
            };
            let f = out.entry(rank).or_insert_with(|| RankFigures {
                rank,
                node: nodes
                    .get((rank / tasks_per_node.max(1)) as usize)
                    .cloned()
                    .or_else(|| host.clone()),
                ..Default::default()
            });
            f.slowest_steps.push(slowest);
            f.steps.push(n);
            if mid > 0.0 {
                f.median_ratio.push(p50 / mid);
            }
        }
    }
    out.into_values().collect()
}

/// The diagnosis of a finished run whose spec names a playbook (`None` otherwise), from its
/// summary, each point's replicate records and (readiness) the run's directory, where the
/// nodes' environment captures are.
pub fn diagnose(
    spec: &BenchmarkRun,
    summary: &RunSummary,
    per_point: &[(String, Vec<serde_json::Value>)],
    dir: Option<&std::path::Path>,
) -> Option<Diagnosis> {
    let body = spec.spec.as_ref()?;
    match body.playbook? {
        PlaybookName::Readiness => {
            Some(diagnosis::readiness(&readiness_figures(body, summary, dir)))
        }
        PlaybookName::Triage => Some(diagnosis::triage(&triage_figures(summary, dir))),
        PlaybookName::Stragglers => {
            let execution = body.execution.as_ref();
            let tasks = execution.and_then(|x| x.tasks_per_node).unwrap_or(1);
            let nodes: Vec<String> = summary
                .nodes
                .as_ref()
                .map(|n| n.nodes.clone())
                .unwrap_or_default();
            let host = Some(yardstick_env::join::hostname()).filter(|h| !h.is_empty());
            let ranks = rank_figures(per_point, &nodes, tasks, host);
            let mut d = diagnosis::stragglers(&ranks);
            // A straggler's node, when the node check flagged it too: its micro figures.
            if let Some(report) = &summary.nodes {
                for r in ranks
                    .iter()
                    .filter(|r| d.summary.contains(&format!("rank {}", r.rank)))
                {
                    for why in r
                        .node
                        .as_ref()
                        .and_then(|n| report.flagged.get(n))
                        .into_iter()
                        .flatten()
                    {
                        d.evidence.push(diagnosis::Evidence {
                            claim: format!("The node check flagged its node: {why}"),
                            figures: Default::default(),
                            at: r.node.clone().unwrap_or_default(),
                        });
                    }
                }
            }
            Some(d)
        }
        PlaybookName::Starvation => Some(diagnosis::starvation(mix_figures(summary).as_ref())),
        PlaybookName::Backpressure => Some(
            if summary
                .points
                .iter()
                .any(|p| p.layer == "e2e" || p.metrics.contains_key("custom.started_per_s"))
            {
                diagnosis::scheduler_backpressure(scheduler_figures(summary).as_ref())
            } else {
                diagnosis::backpressure(&pressure_figures(summary))
            },
        ),
        PlaybookName::TailLatency => {
            let levels: Vec<LoadLevel> = summary.points.iter().filter_map(level).collect();
            let slo = summary
                .points
                .iter()
                .find_map(|p| p.work.get("slo_ttft_ms")?.as_f64());
            Some(diagnosis::tail_latency(&levels, slo))
        }
    }
}

/// The diagnosis for a person: verdict and confidence, the summary, the evidence, the actions.
pub fn text(d: &Diagnosis) -> String {
    let mut out = format!(
        "diagnosis ({}): {} — confidence {}\n  {}\n",
        d.playbook, d.verdict, d.confidence, d.summary
    );
    if !d.evidence.is_empty() {
        out.push_str("evidence:\n");
        for e in &d.evidence {
            out.push_str(&format!("  - {} ({})\n", e.claim, e.at));
        }
    }
    if !d.actions.is_empty() {
        out.push_str("next:\n");
        for a in &d.actions {
            out.push_str(&format!("  - {a}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> TailLatency {
        TailLatency {
            name: "playbook-tail-latency".into(),
            url: "http://127.0.0.1:8000".into(),
            model: "m".into(),
            api: "chat".into(),
            precision: "bf16".into(),
            scenario: "D(128,32)".into(),
            slo_ttft_ms: Some(200.0),
            max_rate: 37.3,
            levels: 5,
            replicates: 3,
            requests: 200,
            duration_s: 15.0,
        }
    }

    #[test]
    fn rates_are_evenly_spaced_up_to_the_maximum() {
        assert_eq!(rates(37.3, 5), [7.46, 14.9, 22.4, 29.8, 37.3]);
        assert_eq!(rates(0.5, 2), [0.25, 0.5]);
    }

    fn starving() -> Starvation {
        Starvation {
            name: "playbook-starvation".into(),
            url: "http://127.0.0.1:8000".into(),
            model: "m".into(),
            api: "chat".into(),
            precision: "bf16".into(),
            short: "D(64,16)".into(),
            long: "D(2048,16)".into(),
            long_share: 0.2,
            rate: 12.5,
            replicates: 3,
            requests: 300,
            duration_s: 30.0,
        }
    }

    #[test]
    fn the_written_specs_validate_and_name_the_playbook() {
        let ranks = Stragglers {
            name: "playbook-stragglers".into(),
            engine: RankEngine::Local,
            nodes: 1,
            tasks: 2,
            replicates: 3,
            warmup_steps: 3,
            command: vec!["sh".into(), "train.sh".into()],
            timeout_s: 600.0,
        };
        for engine in [RankEngine::Local, RankEngine::Slurm] {
            let text = stragglers_spec(&Stragglers {
                engine,
                ..ranks.clone()
            });
            let checked = yardstick_spec::check_str(&text);
            assert!(checked.is_valid(), "{:#?}\n{text}", checked.diagnostics);
        }
        let starve = starvation_spec(&starving());
        assert!(
            starve.contains("values: [10]") && starve.contains("values: [2.5]"),
            "{starve}"
        );
        assert!(
            starve.contains("\"0.8*D(64,16)+0.2*D(2048,16)\""),
            "{starve}"
        );
        let checked = yardstick_spec::check_str(&starve);
        assert!(checked.is_valid(), "{:#?}\n{starve}", checked.diagnostics);
        let pressure = backpressure_spec(&Backpressure {
            name: "playbook-backpressure".into(),
            url: "http://127.0.0.1:8000".into(),
            model: "m".into(),
            api: "chat".into(),
            precision: "bf16".into(),
            scenario: "D(128,32)".into(),
            capacity: 20.0,
            overload: 2.0,
            max_attempts: 4,
            replicates: 3,
            requests: 200,
            duration_s: 15.0,
        });
        assert!(
            pressure.contains("values: [10]")
                && pressure.matches("values: [40]").count() == 2
                && pressure.matches("retry:").count() == 1,
            "{pressure}"
        );
        for text in [
            pressure.clone(),
            tail_latency_spec(&settings()),
            probe_spec(&settings(), 32),
        ] {
            let checked = yardstick_spec::check_str(&text);
            assert!(checked.is_valid(), "{:#?}\n{text}", checked.diagnostics);
        }
        let checked = yardstick_spec::check_str(&tail_latency_spec(&settings()));
        assert_eq!(
            checked.spec.unwrap().spec.unwrap().playbook,
            Some(PlaybookName::TailLatency)
        );
    }
}

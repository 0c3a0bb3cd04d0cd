//! The methodology rules. Each has a stable id (scripts match on it), a message that points to
//! the section of `docs/methodology.md` that says why the rule exists, and a hint. `docs/spec.md`
//! lists them all; the methodology's rule index maps each id to its section.

use crate::diag::{Diagnostic, Severity};
use crate::locate::Locator;
use crate::model::*;

/// A rule's id and what it enforces, for documentation and `--json` consumers (the server's
/// contracts endpoint serves this table as data).
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
pub struct RuleInfo {
    /// Stable id.
    pub id: &'static str,
    /// One line on what it checks.
    pub summary: &'static str,
    /// Why it exists: the heading anchor of the section of docs/methodology.md behind it (the
    /// rule index there links the same section; tests/it/docs.rs checks both agree).
    pub section: &'static str,
    /// How to satisfy it, in general (each diagnostic also carries a hint of its own).
    pub hint: &'static str,
}

// Where a message sends the reader: the section of docs/methodology.md behind the rule. A test
// (tests/it/docs.rs) checks that every link into docs/methodology.md names one of its headings.
const SEE_MODES: &str = "(methodology: publication and realism modes, docs/methodology.md#publication-and-realism-modes)";
const SEE_COMPARISON: &str =
    "(methodology: one variable at a time, docs/methodology.md#one-variable-at-a-time)";
const SEE_TRIALS: &str = "(methodology: trial policy, docs/methodology.md#trial-policy)";
const SEE_FREEZE: &str = "(methodology: workload freeze, docs/methodology.md#workload-freeze)";
const SEE_LAYERS: &str = "(methodology: the three layers, docs/methodology.md#the-three-layers)";
const SEE_ARTIFACTS: &str =
    "(methodology: artifact contract, docs/methodology.md#artifact-contract)";

/// Every rule the validator applies, including the reading and decoding ones.
pub const RULES: &[RuleInfo] = &[
    RuleInfo {
        id: "input",
        summary: "the file can be read, is UTF-8 text, not empty, at most 8 MiB",
        section: "specs-are-read-strictly",
        hint: "pass a readable UTF-8 YAML file of at most 8 MiB; `-` reads standard input",
    },
    RuleInfo {
        id: "yaml-syntax",
        summary: "the file is one well-formed YAML document",
        section: "specs-are-read-strictly",
        hint: "fix the YAML at the reported line and column; `yardstick init` writes a valid spec to start from",
    },
    RuleInfo {
        id: "yaml-limits",
        summary: "nesting <= 64 levels, <= 200,000 nodes after alias expansion",
        section: "specs-are-read-strictly",
        hint: "flatten the document: deep nesting and alias bombs are refused",
    },
    RuleInfo {
        id: "duplicate-key",
        summary: "a mapping names each key once",
        section: "specs-are-read-strictly",
        hint: "keep one of the two keys; a later key would silently replace the earlier one",
    },
    RuleInfo {
        id: "unknown-field",
        summary: "every field is known (with a did-you-mean)",
        section: "specs-are-read-strictly",
        hint: "check the spelling against the suggestion, or `yardstick schema` for every field",
    },
    RuleInfo {
        id: "unknown-value",
        summary: "enumerated fields take one of their values (with a did-you-mean)",
        section: "specs-are-read-strictly",
        hint: "use one of the listed values (the message suggests the closest)",
    },
    RuleInfo {
        id: "invalid-value",
        summary: "every value has the right type",
        section: "specs-are-read-strictly",
        hint: "give the field the type the schema expects (`yardstick schema`)",
    },
    RuleInfo {
        id: "duration-syntax",
        summary: "durations read like 120s, 5m, 1h30m",
        section: "specs-are-read-strictly",
        hint: "write a duration such as 500ms, 120s, 5m or 1h30m",
    },
    RuleInfo {
        id: "scenario-syntax",
        summary: "traffic scenarios follow D/N/U/E grammar",
        section: "specs-are-read-strictly",
        hint: "write a scenario such as D(100,100), N(480,240)/(300,150), U(10,100)/(5,50) or E(200)",
    },
    RuleInfo {
        id: "api-version",
        summary: "apiVersion is yardstick/v1",
        section: "specs-are-read-strictly",
        hint: "set `apiVersion: yardstick/v1`",
    },
    RuleInfo {
        id: "kind",
        summary: "kind is BenchmarkRun",
        section: "specs-are-read-strictly",
        hint: "set `kind: BenchmarkRun`",
    },
    RuleInfo {
        id: "metadata-name",
        summary: "metadata.name is present and a lowercase identifier",
        section: "baselines-and-regression-gates",
        hint: "set metadata.name to a lowercase identifier such as llama8b-serving; baselines are keyed by it",
    },
    RuleInfo {
        id: "mode-declared",
        summary: "spec.mode is declared (publication, realism or exploratory)",
        section: "publication-and-realism-modes",
        hint: "declare spec.mode: publication, realism or exploratory",
    },
    RuleInfo {
        id: "layers-declared",
        summary: "at least one micro, component or e2e layer",
        section: "the-three-layers",
        hint: "add at least one entry under spec.layers.micro, component or e2e",
    },
    RuleInfo {
        id: "workload-freeze",
        summary: "serving/training layers pin model, precision, sequence lengths, batching, concurrency, dataset, correctness",
        section: "workload-freeze",
        hint: "pin every field of spec.workload (model, precision, sequenceLengths, batching, concurrency, dataset, correctness)",
    },
    RuleInfo {
        id: "workload-consistency",
        summary: "layers sweep what the workload declares (warning)",
        section: "workload-freeze",
        hint: "make the layers sweep the concurrency and sequence lengths the workload declares",
    },
    RuleInfo {
        id: "trials-replicates",
        summary: "trials.replicates >= 3",
        section: "trial-policy",
        hint: "set spec.trials.replicates to 3 or more",
    },
    RuleInfo {
        id: "trials-confidence",
        summary: "trials.confidenceLevel declared, in (0, 1)",
        section: "trial-policy",
        hint: "set spec.trials.confidenceLevel, e.g. 0.95",
    },
    RuleInfo {
        id: "trials-outlier-policy",
        summary: "trials.outlierPolicy declared",
        section: "trial-policy",
        hint: "set spec.trials.outlierPolicy, e.g. report-tukey",
    },
    RuleInfo {
        id: "trials-warmup",
        summary: "trials.warmup declared, exactly one way",
        section: "trial-policy",
        hint: "set spec.trials.warmup to exactly one of requests, seconds, steps or auto",
    },
    RuleInfo {
        id: "comparison-one-variable",
        summary: "one variable under test, unless mode is exploratory",
        section: "one-variable-at-a-time",
        hint: "name one variable in spec.comparison.variable, or use mode: exploratory",
    },
    RuleInfo {
        id: "publication-isolation",
        summary: "publication mode declares dedicated nodes and fixed topology",
        section: "publication-and-realism-modes",
        hint: "declare spec.isolation: {nodes: dedicated, topology: fixed}, or use mode: realism",
    },
    RuleInfo {
        id: "realism-background-load",
        summary: "realism mode records background load",
        section: "publication-and-realism-modes",
        hint: "declare spec.backgroundLoad: {record: true}",
    },
    RuleInfo {
        id: "provenance-signing-key",
        summary: "signing: required names a key",
        section: "artifact-contract",
        hint: "set provenance.key to a key from `yardstick keygen`, or signing: off",
    },
    RuleInfo {
        id: "serve-config",
        summary: "serve layers have a model, scenarios and a load sweep that fit the API",
        section: "serving-stack-comparisons",
        hint: "give the serve layer a target model, scenarios and a load sweep its API supports",
    },
    RuleInfo {
        id: "load-values",
        summary: "load values are positive (whole numbers for concurrency); gamma needs burstiness",
        section: "serving-stack-comparisons",
        hint: "use positive load values (whole numbers for concurrency); a gamma arrival needs burstiness",
    },
    RuleInfo {
        id: "load-trace",
        summary: "a trace replay names an existing trace file, a positive speed-up and a FROM..TO window",
        section: "serving-stack-comparisons",
        hint: "give the layer `load: {mode: trace, trace: {file: trace.jsonl, format: jsonl}}`",
    },
    RuleInfo {
        id: "load-capacity",
        summary: "a capacity search has an SLO to hold, no sweep values, and settings in range",
        section: "serving-stack-comparisons",
        hint: "give the layer `slo: {ttftMs: 200}` and settings like `capacity: {percentile: 99, confidence: 0.95}`",
    },
    RuleInfo {
        id: "stop-condition",
        summary: "serve layers are bounded by maxRequests or maxDuration",
        section: "serving-stack-comparisons",
        hint: "bound the serve layer with stop.maxRequests or stop.maxDuration",
    },
    RuleInfo {
        id: "slo-values",
        summary: "SLO bounds are positive",
        section: "serving-stack-comparisons",
        hint: "use positive SLO bounds (ttftMs, tpotMs, ...)",
    },
    RuleInfo {
        id: "profile-config",
        summary: "profiles name a mode; a schedule only for torch, with active >= 1; the reference trainer is not PyTorch",
        section: "profiles",
        hint: "write `profile: {mode: trace, tool: torch}` (perf or py-spy for other programs)",
    },
    RuleInfo {
        id: "command-config",
        summary: "command layers have a command; world-size sweeps use {worldSize}",
        section: "the-three-layers",
        hint: "give the command layer a command; use {worldSize} in it when it sweeps worldSizes",
    },
    RuleInfo {
        id: "startup-config",
        summary: "startup layers have a command and exactly one readiness check (an http:// URL, a log line or the exit), a sane expected status, and each cache mode once",
        section: "the-three-layers",
        hint: "add `ready: {http: URL}`, `ready: {log: TEXT}` or `ready: {exit: true}`, and list each cache mode once",
    },
    RuleInfo {
        id: "dataloader-config",
        summary: "dataloader layers have either a command or a built-in reader `source` (an existing directory, a format, a valid pattern, batch and workers of at least 1), and each cache mode once",
        section: "the-three-layers",
        hint: "add `source: {path: data/, format: parquet}` (the built-in reader) or `command: [python, -m, mypkg.bench_loader]`, and list each cache mode once",
    },
    RuleInfo {
        id: "execution-config",
        summary: "the execution section's fields belong to its engine (partition/account/qos: slurm; queue/priorityClass/image/topologyKey: kubernetes), kubernetes names an image, counts are at least 1, memory is a size, local runs on one node",
        section: "the-three-layers",
        hint: "keep each engine's fields with its engine; give kubernetes an `image`",
    },
    RuleInfo {
        id: "execution-placement",
        summary: "publication mode on slurm or kubernetes places tasks exclusively on a fixed topology",
        section: "publication-and-realism-modes",
        hint: "add `placement: {exclusive: true, topology: fixed}`, or use `mode: realism`",
    },
    RuleInfo {
        id: "execution-gpus",
        summary: "GPUs are requested only when a layer can use them (a command or a real serving target)",
        section: "the-three-layers",
        hint: "drop `gpusPerTask`, or add the layer that needs them",
    },
    RuleInfo {
        id: "eval-config",
        summary: "eval layers name a model, tasks (bundled or .jsonl) or perplexity, chat or completions, and sane repeat/confidence/maxTokens/concurrency/timeout; no serve or command fields",
        section: "accuracy-evals",
        hint: "give the eval layer a model and tasks (bundled names or .jsonl files) or perplexity, within the documented limits",
    },
    RuleInfo {
        id: "eval-files",
        summary: "eval task and perplexity files exist, relative to the spec's directory (when it is known)",
        section: "accuracy-evals",
        hint: "check the task and perplexity paths, relative to the spec's directory",
    },
    RuleInfo {
        id: "target-files",
        summary: "a target's caCert and tokenizer files exist, relative to the spec's directory (when it is known)",
        section: "workload-freeze",
        hint: "check the target's caCert and tokenizer paths, relative to the spec's directory",
    },
    RuleInfo {
        id: "server-config",
        summary: "the server under test has a command and exactly one readiness check (`ready.http`, an http:// URL, or `ready.log`), wherever the run runs (this machine, the first node of a Slurm allocation, pod 0 of a Kubernetes Job)",
        section: "sweeps-and-the-server-under-test",
        hint: "add `server: {command: [..., --port, \"{port}\"], ready: {http: \"http://127.0.0.1:{port}/health\"}}`",
    },
    RuleInfo {
        id: "sweep-config",
        summary: "every factor has levels and is a placeholder somewhere; every placeholder in the server, a target or the environment names a factor (or `{port}` and `{host}`, with a server); a design's samples fit it",
        section: "sweeps-and-the-server-under-test",
        hint: "give each factor a list of levels and use it as `{name}` in the server's command or environment, a target or a command",
    },
    RuleInfo {
        id: "tune-config",
        summary: "a tuner searches `sweep.factors` (no `design` or `samples` beside it), maximizes or minimizes one catalogue metric (and trades it off against at most one other), its constraints name catalogue metrics with `max` or `min`, its budget is 2-1000 and its probe share in (0, 1]",
        section: "sweeps-and-the-server-under-test",
        hint: "e.g. `tune: {maximize: request_throughput, budget: 12, strategy: tpe}` beside `sweep.factors`",
    },
    RuleInfo {
        id: "observability-config",
        summary: "a remote-write receiver and an OTLP collector each have an http(s) `url`; `headersEnv` maps header names to environment variable names; `traceRatio` is between 0 and 1; `otlp` sends metrics or traces; `interval` is at least 100ms",
        section: "hot-metrics-are-for-watching",
        hint: "e.g. `observability: {remoteWrite: {url: http://127.0.0.1:9090/api/v1/write, headersEnv: {Authorization: PROM_AUTH}}, otlp: {url: http://127.0.0.1:4318, traces: true}, interval: 5s}`",
    },
    RuleInfo {
        id: "playbook-config",
        summary: "a `tail-latency` playbook's spec has exactly one serve entry whose load sweeps two or more rates; a `starvation` playbook's spec has exactly one serve entry with a mixed scenario (parts of different prompt lengths) at an open-loop rate; a `stragglers` playbook's spec has an e2e layer; a `readiness` playbook's runs on Slurm and its `expect.ncclMinBusbw` is above 0",
        section: "playbooks",
        hint: "let `yardstick playbook show NAME --url URL --model M` write the spec",
    },
    RuleInfo {
        id: "gates-tolerance",
        summary: "tolerances are in [0, 100); exploratory runs never gate (warning)",
        section: "baselines-and-regression-gates",
        hint: "use tolerances in [0, 100); exploratory runs are never gated",
    },
];

struct Ctx<'a, 'b> {
    loc: &'a Locator<'b>,
    out: &'a mut Vec<Diagnostic>,
    base: Option<&'a std::path::Path>,
}

impl Ctx<'_, '_> {
    fn push(
        &mut self,
        sev: Severity,
        rule: &'static str,
        ptr: &str,
        at_key: bool,
        message: String,
        hint: Option<&str>,
    ) {
        let pos = if at_key {
            self.loc.key(ptr)
        } else {
            self.loc.value(ptr)
        };
        self.out.push(Diagnostic {
            severity: sev,
            rule,
            message,
            hint: hint.map(str::to_owned),
            path: crate::diag::display_path(ptr),
            line: pos.line,
            col: pos.col,
        });
    }
    fn error(&mut self, rule: &'static str, ptr: &str, message: String, hint: &str) {
        self.push(Severity::Error, rule, ptr, false, message, Some(hint));
    }
    fn error_at_key(&mut self, rule: &'static str, ptr: &str, message: String, hint: &str) {
        self.push(Severity::Error, rule, ptr, true, message, Some(hint));
    }
    fn warn(&mut self, rule: &'static str, ptr: &str, message: String, hint: &str) {
        self.push(Severity::Warning, rule, ptr, true, message, Some(hint));
    }
}

/// The bundled eval probe sets (crate `yardstick-eval` embeds them; a test there checks that the
/// two lists agree).
pub const BUNDLED_TASKS: &[&str] = &["arith", "format", "extract", "code"];

/// Applies every rule to a decoded spec; `base` is the spec's directory, when known, for rules
/// about the files a spec names.
pub(crate) fn check(
    run: &BenchmarkRun,
    loc: &Locator<'_>,
    base: Option<&std::path::Path>,
    out: &mut Vec<Diagnostic>,
) {
    let mut cx = Ctx { loc, out, base };
    header(run, &mut cx);
    let Some(spec) = &run.spec else {
        if !loc.exists("/spec") {
            cx.error(
                "layers-declared",
                "/spec",
                "`spec` is missing: nothing to run".into(),
                "add a `spec:` section; `yardstick init` writes a complete example",
            );
        }
        return;
    };
    mode(spec, &mut cx);
    trials(spec, &mut cx);
    layers(spec, &mut cx);
    workload(spec, &mut cx);
    provenance(spec, &mut cx);
    gates(spec, &mut cx);
    execution(spec, &mut cx);
    server(spec, &mut cx);
    sweep(spec, &mut cx);
    tune(spec, &mut cx);
    observability(spec, &mut cx);
    playbook(spec, &mut cx);
}

/// `spec.playbook`: the spec is the playbook's experiment (tail-latency: one serve entry whose
/// load sweeps two or more rates).
fn playbook(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let Some(p) = spec.playbook else {
        return;
    };
    match p {
        crate::model::PlaybookName::TailLatency => {
            let serve = serve_entries(spec);
            let rates = |c: &crate::model::ComponentLayer| {
                c.load.as_ref().is_some_and(|l| {
                    l.mode == Some(crate::model::LoadMode::Rate)
                        && l.values.as_ref().is_some_and(|v| v.len() >= 2)
                })
            };
            if serve.len() != 1 || !rates(serve[0]) {
                cx.error(
                    "playbook-config",
                    "/spec/playbook",
                    "`playbook: tail-latency` needs exactly one serve entry whose load sweeps two or more rates".into(),
                    "let `yardstick playbook show tail-latency --url URL --model M` write the spec",
                );
            }
        }
        crate::model::PlaybookName::Stragglers => {
            if !has_e2e(spec) {
                cx.error(
                    "playbook-config",
                    "/spec/playbook",
                    "`playbook: stragglers` needs an e2e layer whose command runs as several ranks, each reporting `rank` and `step_time_s`".into(),
                    "let `yardstick playbook show stragglers --tasks 2 -- CMD` write the spec",
                );
            }
        }
        crate::model::PlaybookName::Triage => {
            if !has_e2e(spec) {
                cx.error(
                    "playbook-config",
                    "/spec/playbook",
                    "`playbook: triage` needs an e2e layer: the workload whose bottleneck it classifies".into(),
                    "let `yardstick playbook show triage` write the spec",
                );
            }
        }
        crate::model::PlaybookName::Readiness => {
            let slurm = spec
                .execution
                .as_ref()
                .is_some_and(|x| x.engine == Some(crate::model::Engine::Slurm));
            if !slurm {
                cx.error(
                    "playbook-config",
                    "/spec/playbook",
                    "`playbook: readiness` checks the nodes of an allocation: it needs `execution: {engine: slurm, nodes: N}`".into(),
                    "let `yardstick playbook show readiness --nodes N` write the spec",
                );
            }
            if let Some(m) = spec.expect.as_ref().and_then(|e| e.nccl_min_busbw)
                && !(m.is_finite() && m > 0.0)
            {
                cx.error(
                    "playbook-config",
                    "/spec/expect/ncclMinBusbw",
                    format!("`ncclMinBusbw` is {m}: a bus bandwidth in GB/s above 0"),
                    "e.g. ncclMinBusbw: 350 (8 H100s on NVLink reach about 400 at 8 GiB)",
                );
            }
        }
        crate::model::PlaybookName::Backpressure => {
            let rated = serve_entries(spec)
                .into_iter()
                .filter(|c| {
                    c.load
                        .as_ref()
                        .is_some_and(|l| l.mode == Some(crate::model::LoadMode::Rate))
                })
                .count();
            if rated < 2 && !has_e2e(spec) {
                cx.error(
                    "playbook-config",
                    "/spec/playbook",
                    format!("`playbook: backpressure` needs serve entries at open-loop rates below and above what the server sustains (at least 2; this spec has {rated}), or an e2e command that submits a burst of jobs (`yardstick bench scheduler`)"),
                    "let `yardstick playbook show backpressure --url URL --model M` (or `--engine slurm`) write the spec",
                );
            }
        }
        crate::model::PlaybookName::Starvation => {
            let mixes = serve_entries(spec)
                .into_iter()
                .filter(|c| {
                    c.scenarios.iter().flatten().any(|s| {
                        s.0.parts().is_some_and(|parts| {
                            let lengths: Vec<f64> =
                                parts.iter().map(|(_, p)| p.mean_input()).collect();
                            lengths.iter().any(|l| *l != lengths[0])
                        })
                    }) && c
                        .load
                        .as_ref()
                        .is_some_and(|l| l.mode == Some(crate::model::LoadMode::Rate))
                })
                .count();
            if mixes != 1 {
                cx.error(
                    "playbook-config",
                    "/spec/playbook",
                    format!("`playbook: starvation` needs exactly one serve entry with a mixed scenario of different prompt lengths (`0.8*D(64,16) + 0.2*D(2048,16)`) at an open-loop rate; this spec has {mixes}"),
                    "let `yardstick playbook show starvation --url URL --model M` write the spec",
                );
            }
        }
    }
}

fn has_e2e(spec: &Spec) -> bool {
    spec.layers
        .as_ref()
        .and_then(|l| l.e2e.as_ref())
        .is_some_and(|e| !e.is_empty())
}

fn serve_entries(spec: &Spec) -> Vec<&crate::model::ComponentLayer> {
    spec.layers
        .as_ref()
        .and_then(|l| l.component.as_ref())
        .map(|c| {
            c.iter()
                .filter(|c| c.kind == Some(ComponentKind::Serve))
                .collect()
        })
        .unwrap_or_default()
}

/// `spec.observability`: an http(s) receiver, header names and environment variable names, an
/// interval of at least 100 ms.
fn observability(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let Some(o) = &spec.observability else {
        return;
    };
    let base = "/spec/observability";
    let sinks = [
        o.remote_write.as_ref().map(|r| {
            (
                "remoteWrite",
                &r.url,
                &r.headers_env,
                "http://127.0.0.1:9090/api/v1/write",
            )
        }),
        o.otlp
            .as_ref()
            .map(|r| ("otlp", &r.url, &r.headers_env, "http://127.0.0.1:4318")),
    ];
    for (key, url, headers_env, example) in sinks.into_iter().flatten() {
        let rb = format!("{base}/{key}");
        match url.as_deref() {
            None => cx.error_at_key(
                "observability-config",
                &rb,
                format!("`{key}` needs a `url`"),
                &format!("e.g. `url: {example}`"),
            ),
            Some(u) if !(u.starts_with("http://") || u.starts_with("https://")) || u.len() < 10 => {
                cx.error(
                    "observability-config",
                    &format!("{rb}/url"),
                    format!("`{u}` is not an http(s) URL"),
                    &format!("e.g. `url: {example}`"),
                )
            }
            Some(_) => {}
        }
        for (name, var) in headers_env {
            let ok_name = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c));
            let ok_var =
                !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok_name || !ok_var {
                cx.error(
                    "observability-config",
                    &format!("{rb}/headersEnv/{name}"),
                    format!("`{name}: {var}` is not a header name and an environment variable name"),
                    "e.g. `headersEnv: {Authorization: PROM_AUTH}` (the value is read from $PROM_AUTH)",
                );
            }
        }
    }
    if let Some(ot) = &o.otlp {
        if let Some(r) = ot.trace_ratio
            && !(0.0..=1.0).contains(&r)
        {
            cx.error(
                "observability-config",
                &format!("{base}/otlp/traceRatio"),
                format!("`traceRatio: {r}` is not between 0 and 1"),
                "e.g. `traceRatio: 0.1` (a tenth of the requests, and every failure or SLO miss)",
            );
        }
        if ot.metrics == Some(false) && !ot.traces.unwrap_or(false) {
            cx.error_at_key(
                "observability-config",
                &format!("{base}/otlp"),
                "`otlp` sends neither metrics nor traces".into(),
                "set `traces: true`, or remove `metrics: false`",
            );
        }
    }
    if o.interval
        .is_some_and(|i| i.0 < std::time::Duration::from_millis(100))
    {
        cx.error(
            "observability-config",
            &format!("{base}/interval"),
            "`interval` is below 100ms".into(),
            "e.g. `interval: 5s`",
        );
    }
}

/// `spec.server`: a command, one readiness check, stop settings, this machine.
fn server(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let Some(srv) = &spec.server else {
        return;
    };
    let base = "/spec/server";
    let hint = "add `command: [my-server, --port, \"{port}\"]` and `ready: {http: \"http://127.0.0.1:{port}/health\"}`";
    match &srv.command {
        Some(c) if !c.is_empty() && !c[0].trim().is_empty() => {}
        Some(_) => cx.error(
            "server-config",
            &format!("{base}/command"),
            "the server's command is empty".into(),
            hint,
        ),
        None => cx.error_at_key(
            "server-config",
            base,
            "the server under test needs a `command`".into(),
            hint,
        ),
    }
    match &srv.ready {
        None => cx.error_at_key(
            "server-config",
            base,
            "the server under test needs `ready`: when it counts as started".into(),
            "add `ready: {http: \"http://127.0.0.1:{port}/health\"}` or `ready: {log: \"listening\"}`",
        ),
        Some(r) => {
            let rb = format!("{base}/ready");
            if usize::from(r.http.is_some()) + usize::from(r.log.is_some()) != 1 {
                cx.error_at_key(
                    "server-config",
                    &rb,
                    "`ready` needs exactly one of `http` and `log`".into(),
                    "e.g. `ready: {http: \"http://127.0.0.1:{port}/health\"}`",
                );
            }
            if let Some(url) = &r.http
                && !url.starts_with("http://")
            {
                cx.error(
                    "server-config",
                    &format!("{rb}/http"),
                    format!("`ready.http` must be an http:// URL, got `{url}`"),
                    "the probe speaks plain HTTP to a local port: e.g. http://127.0.0.1:{port}/health (use `ready.log` for a server that only speaks TLS)",
                );
            }
            if let Some(code) = r.expect
                && (r.http.is_none() || !(100..=599).contains(&code))
            {
                cx.error(
                    "server-config",
                    &format!("{rb}/expect"),
                    format!("`ready.expect` is {code}: it is an HTTP status for `ready.http`"),
                    "e.g. expect: 200, beside `http: URL`",
                );
            }
            if r.log.as_deref().is_some_and(str::is_empty) {
                cx.error(
                    "server-config",
                    &format!("{rb}/log"),
                    "`ready.log` is empty: every line would match".into(),
                    "give text the server prints once it is ready",
                );
            }
            if r.timeout.is_some_and(|t| t.0.is_zero()) {
                cx.error(
                    "server-config",
                    &format!("{rb}/timeout"),
                    "`ready.timeout` is zero: no server could be ready in time".into(),
                    "e.g. timeout: 10m",
                );
            }
        }
    }
    for (i, c) in spec
        .layers
        .as_ref()
        .and_then(|l| l.component.as_ref())
        .into_iter()
        .flatten()
        .enumerate()
    {
        let measures_sim = matches!(c.kind, Some(ComponentKind::Serve | ComponentKind::Eval))
            && c.target
                .as_ref()
                .and_then(|t| t.url.as_deref())
                .is_none_or(|u| u == "sim");
        if measures_sim {
            cx.warn(
                "server-config",
                &format!("/spec/layers/component/{i}/target"),
                "this layer measures the bundled simulator, not the server under test".into(),
                "point it at the server: `url: \"http://127.0.0.1:{port}\"`",
            );
        }
    }
}

/// `spec.sweep` and the placeholders of the fields it fills.
fn sweep(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let fields = crate::sweep::template_fields(spec);
    let factors = spec.sweep.as_ref().and_then(|s| s.factors.as_ref());
    let is_factor = |n: &str| factors.is_some_and(|f| f.contains_key(n));
    for f in fields.iter().filter(|f| f.strict) {
        for name in crate::sweep::placeholders(&f.text) {
            if crate::sweep::is_address(name) {
                if spec.server.is_none() {
                    cx.error(
                        "sweep-config",
                        &f.pointer,
                        format!(
                            "`{{{name}}}` is the {name} of the server under test, and the spec starts none"
                        ),
                        &format!("add `spec.server`, or write the {name}"),
                    );
                }
            } else if !is_factor(name) {
                cx.error(
                    "sweep-config",
                    &f.pointer,
                    format!("`{{{name}}}` names no factor of `spec.sweep.factors`"),
                    &format!(
                        "add `{name}: [..levels..]` under spec.sweep.factors, or write the value"
                    ),
                );
            }
        }
    }
    let Some(sw) = &spec.sweep else {
        return;
    };
    let base = "/spec/sweep";
    let Some(factors) = factors.filter(|f| !f.is_empty()) else {
        cx.error_at_key(
            "sweep-config",
            base,
            "a sweep needs `factors`: each a placeholder and its levels".into(),
            "e.g. `factors: {max_num_seqs: [64, 128, 256]}`",
        );
        return;
    };
    for (name, levels) in factors {
        let ptr = format!("{base}/factors/{name}");
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid || crate::sweep::is_address(name) {
            cx.error_at_key(
                "sweep-config",
                &ptr,
                format!(
                    "`{name}` cannot be a factor: {}",
                    if valid {
                        "`port` and `host` are the address yardstick gives the server under test"
                    } else {
                        "a factor is a name of letters, digits and `_`"
                    }
                ),
                "rename it, e.g. `max_num_seqs`",
            );
            continue;
        }
        if levels.is_empty() {
            cx.error(
                "sweep-config",
                &ptr,
                format!("factor `{name}` has no levels"),
                "give it one level or more, e.g. `[64, 128]`",
            );
        }
        let texts: Vec<String> = levels.iter().map(ToString::to_string).collect();
        for (j, t) in texts.iter().enumerate() {
            if texts[..j].contains(t) {
                cx.error(
                    "sweep-config",
                    &format!("{ptr}/{j}"),
                    format!("factor `{name}` lists level `{t}` twice"),
                    "list each level once (replicates repeat a treatment)",
                );
            }
        }
        let used = fields
            .iter()
            .any(|f| crate::sweep::placeholders(&f.text).contains(&name.as_str()));
        if !used {
            cx.error_at_key(
                "sweep-config",
                &ptr,
                format!("factor `{name}` is used nowhere: every treatment would run the same thing"),
                &format!("write `{{{name}}}` in the server's command or environment, a target or a command"),
            );
        }
    }
    let levels = crate::sweep::levels(sw);
    let size = crate::sweep::grid_size(&levels);
    match (sw.design.unwrap_or(SweepDesign::Grid), sw.samples) {
        (SweepDesign::Grid, Some(_)) => cx.error_at_key(
            "sweep-config",
            &format!("{base}/samples"),
            "`samples` applies to the random and lhs designs; a grid runs every combination".into(),
            "drop it, or set `design: random` or `design: lhs`",
        ),
        (SweepDesign::Grid, None) if size > MAX_TREATMENTS => cx.error_at_key(
            "sweep-config",
            &format!("{base}/factors"),
            format!("the grid has {size} treatments, more than {MAX_TREATMENTS}"),
            "sample it: `design: lhs, samples: 20` (or `random`)",
        ),
        (_, None) if sw.design.is_some_and(|d| d != SweepDesign::Grid) => cx.error_at_key(
            "sweep-config",
            &format!("{base}/design"),
            "a random or lhs design needs `samples`: how many treatments".into(),
            "add e.g. `samples: 12`",
        ),
        (_, Some(n)) if n == 0 || u64::from(n) > MAX_TREATMENTS => cx.error(
            "sweep-config",
            &format!("{base}/samples"),
            format!("`samples` is {n}; it must be in 1..={MAX_TREATMENTS}"),
            "e.g. samples: 12",
        ),
        (SweepDesign::Random, Some(n)) if u64::from(n) > size => cx.error(
            "sweep-config",
            &format!("{base}/samples"),
            format!("a random design draws distinct treatments, and the grid has only {size}"),
            &format!("use at most {size}, or `design: grid`"),
        ),
        _ => {}
    }
}

/// `spec.tune`: an objective from the catalogue, constraints likewise, a budget, a probe share.
fn tune(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let Some(t) = &spec.tune else {
        return;
    };
    let base = "/spec/tune";
    if spec
        .sweep
        .as_ref()
        .and_then(|s| s.factors.as_ref())
        .is_none_or(|f| f.is_empty())
    {
        cx.error_at_key(
            "tune-config",
            base,
            "a tuner searches `sweep.factors`, and the spec has none".into(),
            "add `sweep: {factors: {name: [levels...]}}` with the factors to search",
        );
    }
    if spec
        .sweep
        .as_ref()
        .is_some_and(|s| s.design.is_some() || s.samples.is_some())
    {
        cx.error_at_key(
            "tune-config",
            "/spec/sweep",
            "`sweep.design` and `samples` choose treatments to walk; with `tune` the tuner chooses them".into(),
            "drop `design` and `samples`, or drop `tune` to walk the design",
        );
    }
    let check_metric = |cx: &mut Ctx<'_, '_>, ptr: &str, m: &str| {
        if crate::metrics::lookup(m).is_none() {
            cx.error(
                "tune-config",
                ptr,
                format!("`{m}` is not a metric of the catalogue"),
                "name one of `yardstick metrics` (e.g. capacity_rps, goodput, request_throughput, ttft_ms)",
            );
        }
    };
    match (&t.maximize, &t.minimize) {
        (Some(m), None) => check_metric(cx, &format!("{base}/maximize"), m),
        (None, Some(m)) => check_metric(cx, &format!("{base}/minimize"), m),
        _ => cx.error_at_key(
            "tune-config",
            base,
            "`tune` needs exactly one of `maximize` and `minimize`".into(),
            "e.g. `maximize: request_throughput`",
        ),
    }
    if let Some(o) = &t.trade_off {
        let ptr = format!("{base}/tradeOff");
        match (&o.maximize, &o.minimize) {
            (Some(m), None) => check_metric(cx, &format!("{ptr}/maximize"), m),
            (None, Some(m)) => check_metric(cx, &format!("{ptr}/minimize"), m),
            _ => cx.error_at_key(
                "tune-config",
                &ptr,
                "`tradeOff` needs exactly one of `maximize` and `minimize`".into(),
                "e.g. `tradeOff: {minimize: ttft_ms, statistic: p99}`",
            ),
        }
        let first = t.maximize.as_ref().or(t.minimize.as_ref());
        let second = o.maximize.as_ref().or(o.minimize.as_ref());
        if first.is_some() && first == second && t.statistic == o.statistic {
            cx.error_at_key(
                "tune-config",
                &ptr,
                "`tradeOff` names the objective itself: a front of one objective is its best".into(),
                "trade the objective against another metric, e.g. `tradeOff: {minimize: ttft_ms, statistic: p99}`",
            );
        }
    }
    for (i, c) in t.subject_to.iter().flatten().enumerate() {
        let ptr = format!("{base}/subjectTo/{i}");
        match &c.metric {
            Some(m) => check_metric(cx, &format!("{ptr}/metric"), m),
            None => cx.error_at_key(
                "tune-config",
                &ptr,
                "a constraint needs a `metric`".into(),
                "e.g. `{metric: ttft_ms, statistic: p99, max: 200}`",
            ),
        }
        if c.max.is_none() && c.min.is_none() {
            cx.error_at_key(
                "tune-config",
                &ptr,
                "a constraint needs `max` or `min`".into(),
                "e.g. `max: 200`",
            );
        }
    }
    if let Some(b) = t.budget
        && !(2..=1000).contains(&b)
    {
        cx.error(
            "tune-config",
            &format!("{base}/budget"),
            format!("`budget` is {b}; a search probes 2 to 1000 treatments"),
            "e.g. budget: 12",
        );
    }
    if let Some(p) = t.probe
        && !(p > 0.0 && p <= 1.0)
    {
        cx.error(
            "tune-config",
            &format!("{base}/probe"),
            format!("`probe` is {p}; it is a share of the requests, in (0, 1]"),
            "e.g. probe: 0.25",
        );
    }
}

/// The most treatments a sweep may plan.
pub const MAX_TREATMENTS: u64 = 10_000;

/// The `execution` section: fields of one engine on another, counts, sizes, placement in
/// publication mode, and GPUs nobody uses.
fn execution(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let Some(x) = &spec.execution else {
        return;
    };
    let engine = x.engine.unwrap_or(Engine::Local);
    let base = "/spec/execution";
    let foreign: &[(&str, bool, Engine)] = &[
        ("partition", x.partition.is_some(), Engine::Slurm),
        ("account", x.account.is_some(), Engine::Slurm),
        ("qos", x.qos.is_some(), Engine::Slurm),
        ("queue", x.queue.is_some(), Engine::Kubernetes),
        (
            "priorityClass",
            x.priority_class.is_some(),
            Engine::Kubernetes,
        ),
        ("image", x.image.is_some(), Engine::Kubernetes),
    ];
    for (field, set, owner) in foreign {
        if *set && engine != *owner {
            cx.error_at_key(
                "execution-config",
                &format!("{base}/{field}"),
                format!(
                    "`execution.{field}` applies to `engine: {}`, but the engine is `{}`",
                    owner.as_str(),
                    engine.as_str()
                ),
                &format!("set `engine: {}`, or drop `{field}`", owner.as_str()),
            );
        }
    }
    if engine == Engine::Kubernetes && x.image.as_deref().is_none_or(str::is_empty) {
        cx.error_at_key(
            "execution-config",
            base,
            "`engine: kubernetes` needs `image`: the container the pods run `yardstick` in".into(),
            "add `image: ghcr.io/your-org/yardstick:0.1` (an image with yardstick on its PATH)",
        );
    }
    for (field, v) in [
        ("nodes", x.nodes),
        ("tasksPerNode", x.tasks_per_node),
        ("cpusPerTask", x.cpus_per_task),
    ] {
        if v == Some(0) {
            cx.error(
                "execution-config",
                &format!("{base}/{field}"),
                format!("`execution.{field}` is 0; it is at least 1"),
                "e.g. nodes: 2, tasksPerNode: 4",
            );
        }
    }
    if engine == Engine::Local && (x.nodes.unwrap_or(1) > 1) {
        cx.error(
            "execution-config",
            &format!("{base}/nodes"),
            format!(
                "`engine: local` runs on this machine, not on {} nodes",
                x.nodes.unwrap_or(1)
            ),
            "use `engine: slurm` or `engine: kubernetes` for several nodes",
        );
    }
    if let Some(m) = &x.memory
        && let Err(e) = crate::units::parse_bytes(m)
    {
        cx.error(
            "execution-config",
            &format!("{base}/memory"),
            format!("`execution.memory`: {e}"),
            "e.g. memory: 64GiB",
        );
    }
    if x.time_limit.is_some_and(|t| t.0.is_zero()) {
        cx.error(
            "execution-config",
            &format!("{base}/timeLimit"),
            "`execution.timeLimit` is zero".into(),
            "e.g. timeLimit: 2h",
        );
    }
    // Publication-grade numbers from a scheduler need whole nodes and the same topology every
    // time; a laptop's isolation is the `isolation` section's business.
    if spec.mode == Some(Mode::Publication) && engine != Engine::Local {
        let p = x.placement.clone().unwrap_or_default();
        let exclusive = p.exclusive == Some(true);
        let fixed = p.topology == Some(Topology::Fixed);
        if !(exclusive && fixed) {
            let missing: Vec<&str> = [
                (!exclusive).then_some("`exclusive: true`"),
                (!fixed).then_some("`topology: fixed`"),
            ]
            .into_iter()
            .flatten()
            .collect();
            let ptr = if x.placement.is_some() {
                format!("{base}/placement")
            } else {
                base.to_string()
            };
            cx.error(
                "execution-placement",
                &ptr,
                format!(
                    "publication mode on {} needs a placement with {}: shared nodes or a \
                     topology that changes between runs move the numbers {SEE_MODES}",
                    engine.as_str(),
                    missing.join(" and ")
                ),
                "add `placement: {exclusive: true, topology: fixed}`, or use `mode: realism`",
            );
        }
    }
    if let Some(p) = &x.placement
        && p.topology_key.is_some()
        && engine != Engine::Kubernetes
    {
        cx.error_at_key(
            "execution-config",
            &format!("{base}/placement/topologyKey"),
            "`placement.topologyKey` is a Kubernetes node label; the engine is not kubernetes"
                .into(),
            "drop it (Slurm keeps a fixed topology with one switch), or set `engine: kubernetes`",
        );
    }
    if x.gpus_per_task.is_some_and(|g| g > 0) && !uses_gpus(spec) {
        cx.warn(
            "execution-gpus",
            &format!("{base}/gpusPerTask"),
            format!(
                "{} GPU(s) per task requested, but every layer is a built-in CPU workload \
                 (micro, the reference trainer, the data-loader reader, the simulator): the \
                 allocation would hold GPUs nothing uses",
                x.gpus_per_task.unwrap_or(0)
            ),
            "drop `gpusPerTask`, or add the layer that needs them (a command, a real serving target)",
        );
    }
}

/// Whether any layer could use a GPU: a user command or a served endpoint that is not the
/// bundled simulator.
fn uses_gpus(spec: &Spec) -> bool {
    let Some(l) = &spec.layers else {
        return false;
    };
    let component = l.component.iter().flatten().any(|c| match c.kind {
        Some(ComponentKind::Serve | ComponentKind::Eval) => c
            .target
            .as_ref()
            .and_then(|t| t.url.as_deref())
            .is_some_and(|u| u != "sim"),
        Some(ComponentKind::Startup) => true,
        Some(ComponentKind::Dataloader) => c.source.is_none(),
        None => false,
    });
    let e2e = l
        .e2e
        .iter()
        .flatten()
        .any(|e| e.kind == Some(E2eKind::Command));
    component || e2e
}

fn header(run: &BenchmarkRun, cx: &mut Ctx<'_, '_>) {
    match run.api_version.as_deref() {
        Some(API_VERSION) => {}
        Some(other) => cx.error(
            "api-version",
            "/apiVersion",
            format!("apiVersion is `{other}`; this yardstick reads `{API_VERSION}`"),
            "set `apiVersion: yardstick/v1`",
        ),
        None if !cx.loc.exists("/apiVersion") => cx.error(
            "api-version",
            "/apiVersion",
            "apiVersion is missing".into(),
            "start the spec with `apiVersion: yardstick/v1`",
        ),
        None => {}
    }
    match run.kind.as_deref() {
        Some(KIND) => {}
        Some(other) => cx.error(
            "kind",
            "/kind",
            format!("kind is `{other}`; expected `{KIND}`"),
            "set `kind: BenchmarkRun`",
        ),
        None if !cx.loc.exists("/kind") => cx.error(
            "kind",
            "/kind",
            "kind is missing".into(),
            "add `kind: BenchmarkRun`",
        ),
        None => {}
    }
    let name = run.metadata.as_ref().and_then(|m| m.name.as_deref());
    match name {
        None if !cx.loc.exists("/metadata/name") => cx.error("metadata-name", "/metadata/name",
            "metadata.name is missing; baselines and reports are keyed by it".into(),
            "add `metadata: {name: my-benchmark}`"),
        Some(n) if !valid_name(n) => cx.error("metadata-name", "/metadata/name",
            format!("metadata.name `{n}` is not a lowercase identifier"),
            "use lowercase letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit (at most 128 characters)"),
        _ => {}
    }
}

fn valid_name(n: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !n.is_empty()
        && n.len() <= 128
        && n.chars().all(|c| ok(c) || matches!(c, '-' | '_' | '.'))
        && n.chars().next().is_some_and(ok)
        && n.chars().last().is_some_and(ok)
}

fn mode(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    match spec.mode {
        None if !cx.loc.exists("/spec/mode") => cx.error("mode-declared", "/spec/mode",
            format!("spec.mode is missing; publication-grade and realism-grade runs are different test modes and must stay different {SEE_MODES}"),
            "add `mode: publication` (isolated, gating), `mode: realism` (multi-tenant) or `mode: exploratory`"),
        Some(Mode::Publication) => {
            let iso = spec.isolation.as_ref();
            let dedicated = iso.and_then(|i| i.nodes) == Some(NodeTenancy::Dedicated);
            let fixed = iso.and_then(|i| i.topology) == Some(Topology::Fixed);
            if !(dedicated && fixed) {
                let missing: Vec<&str> = [(!dedicated).then_some("`nodes: dedicated`"), (!fixed).then_some("`topology: fixed`")].into_iter().flatten().collect();
                let ptr = if iso.is_some() { "/spec/isolation" } else { "/spec/mode" };
                cx.error("publication-isolation", ptr,
                    format!("publication mode requires an isolation declaration with {}: publication-grade runs use dedicated nodes and a fixed topology {SEE_MODES}", missing.join(" and ")),
                    "add `isolation: {nodes: dedicated, topology: fixed}`, or use `mode: realism` for multi-tenant measurements");
            }
        }
        Some(Mode::Realism) => {
            let recorded = spec.background_load.as_ref().and_then(|b| b.record) == Some(true);
            if !recorded {
                let ptr = if spec.background_load.is_some() { "/spec/backgroundLoad" } else { "/spec/mode" };
                cx.error("realism-background-load", ptr,
                    format!("realism mode requires background load to be recorded: realism-grade runs tolerate background load and record it, to explain outliers later {SEE_MODES}"),
                    "add `backgroundLoad: {record: true, description: \"...\"}`");
            }
        }
        _ => {}
    }
    if let Some(c) = &spec.comparison {
        let vars = c.all_variables();
        if vars.is_empty() {
            cx.error("comparison-one-variable", "/spec/comparison",
                "comparison names no variable under test".into(),
                "set `comparison: {variable: runtimeVersion}` (or the one thing that differs), or remove `comparison`");
        } else if vars.len() > 1 {
            let list = vars.join(", ");
            if spec.mode == Some(Mode::Exploratory) {
                cx.warn("comparison-one-variable", "/spec/comparison",
                    format!("{} variables move ({list}): the run is exploratory, not publication-grade, and its results never gate {SEE_COMPARISON}", vars.len()),
                    "to attribute a difference, compare one variable at a time");
            } else {
                cx.error("comparison-one-variable", "/spec/comparison",
                    format!("{} variables move ({list}); compare one variable at a time — if more than one moves, the run is exploratory, not publication-grade {SEE_COMPARISON}", vars.len()),
                    "keep one variable under test, or set `mode: exploratory` to accept an exploratory run");
            }
        }
    }
}

fn trials(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let Some(t) = &spec.trials else {
        if !cx.loc.exists("/spec/trials") {
            cx.error("trials-replicates", "/spec/trials",
                format!("spec.trials is missing; do not report a single run {SEE_TRIALS}"),
                "add `trials: {replicates: 5, warmup: {requests: 20}, confidenceLevel: 0.95, outlierPolicy: report-tukey}`");
        }
        return;
    };
    let base = "/spec/trials";
    match t.replicates {
        Some(n) if n < 3 => cx.error("trials-replicates", "/spec/trials/replicates",
            format!("trials.replicates is {n}; a result needs at least 3 independent replicates {SEE_TRIALS}"),
            "set `replicates: 3` or more; 5 gives tighter confidence intervals"),
        None if !cx.loc.exists("/spec/trials/replicates") => cx.error_at_key("trials-replicates", base,
            format!("trials.replicates is missing; run at least 3 independent replicates {SEE_TRIALS}"),
            "add `replicates: 5` under `trials`"),
        _ => {}
    }
    match t.confidence_level {
        Some(c) if !(c > 0.0 && c < 1.0) => cx.error("trials-confidence", "/spec/trials/confidenceLevel",
            format!("trials.confidenceLevel is {c}; it is a probability strictly between 0 and 1 {SEE_TRIALS}"),
            "use 0.95 (or 0.99); write percentages as fractions"),
        None if !cx.loc.exists("/spec/trials/confidenceLevel") => cx.error_at_key("trials-confidence", base,
            format!("trials.confidenceLevel is missing; every interval is reported at a declared confidence level {SEE_TRIALS}"),
            "add `confidenceLevel: 0.95` under `trials`"),
        _ => {}
    }
    if t.outlier_policy.is_none() && !cx.loc.exists("/spec/trials/outlierPolicy") {
        cx.error_at_key("trials-outlier-policy", base,
            format!("trials.outlierPolicy is missing; outliers are handled by a policy declared before measuring {SEE_TRIALS}"),
            "add `outlierPolicy: report-tukey` (report, keep), or trim-tukey, report-mad, trim-mad, none");
    }
    match &t.warmup {
        None if !cx.loc.exists("/spec/trials/warmup") => cx.error_at_key("trials-warmup", base,
            "trials.warmup is missing; declare what is discarded before measuring, even if nothing".into(),
            "add `warmup: {requests: 20}` (or steps, duration, runs, or `auto: mser5`; `requests: 0` declares none)"),
        Some(w) => {
            let set = w.declared();
            if set.len() != 1 {
                let msg = if set.is_empty() {
                    "trials.warmup declares nothing".to_string()
                } else {
                    format!("trials.warmup declares {} ways at once ({}); the warm-up must be unambiguous", set.len(), set.join(", "))
                };
                cx.error("trials-warmup", "/spec/trials/warmup", msg,
                    "give exactly one of requests, steps, duration, runs or auto");
            }
        }
        None => {}
    }
}

/// Whether the spec has layers that serve or train (the freeze rule applies to them).
fn has_workload_layers(spec: &Spec) -> bool {
    spec.layers.as_ref().is_some_and(|l| {
        l.component.as_ref().is_some_and(|c| !c.is_empty())
            || l.e2e.as_ref().is_some_and(|e| !e.is_empty())
    })
}

fn workload(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    if !has_workload_layers(spec) {
        return;
    }
    let hint_all = "pin every one of: model, precision, sequenceLengths, batching, concurrency, dataset, correctness";
    let Some(w) = &spec.workload else {
        if !cx.loc.exists("/spec/workload") {
            cx.error("workload-freeze", "/spec/workload",
                format!("spec.workload is missing; before comparing anything, freeze the workload: model, precision, sequence-length mix, batching, concurrency, dataset, correctness policy {SEE_FREEZE}"),
                hint_all);
        }
        return;
    };
    let fields: [(&str, &str, bool); 7] = [
        ("model", "the same model", w.model.is_some()),
        ("precision", "the same precision", w.precision.is_some()),
        (
            "sequenceLengths",
            "the same sequence-length mix",
            w.sequence_lengths.is_some(),
        ),
        ("batching", "the same batching policy", w.batching.is_some()),
        (
            "concurrency",
            "the same concurrency model",
            w.concurrency.is_some(),
        ),
        (
            "dataset",
            "the same dataset or prompt corpus",
            w.dataset.is_some(),
        ),
        (
            "correctness",
            "the same correctness policy",
            w.correctness.as_ref().is_some_and(|c| c.policy.is_some()),
        ),
    ];
    for (field, phrase, present) in fields {
        let ptr = if field == "correctness" {
            "/spec/workload/correctness/policy".to_string()
        } else {
            format!("/spec/workload/{field}")
        };
        if !present && !cx.loc.exists(&ptr) {
            cx.error_at_key("workload-freeze", &ptr,
                format!("workload.{field} is not pinned; results are comparable only with {phrase} {SEE_FREEZE}"),
                match field {
                    "model" => "add `model: org/name@revision` (or a path)",
                    "precision" => "add `precision: bf16` (fp32, tf32, bf16, fp16, fp8, int8, int4, ...)",
                    "sequenceLengths" => "add `sequenceLengths: \"N(480,240)/(300,150)\"` or a fixed length such as 2048",
                    "batching" => "add `batching: continuous` (dynamic, static, none)",
                    "concurrency" => "add `concurrency: [1, 16, 64]` (the sweep points)",
                    "dataset" => "add `dataset: {kind: synthetic, seed: 42}`",
                    _ => "add `correctness: {policy: none}` to declare a performance-only run, or `policy: eval`",
                });
        }
    }
    if let Some(concurrency) = &w.concurrency {
        let v = concurrency.values();
        if v.contains(&0) {
            cx.error(
                "load-values",
                "/spec/workload/concurrency",
                "workload.concurrency contains 0".into(),
                "concurrency levels are at least 1",
            );
        }
        let declared: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        for (i, c) in spec
            .layers
            .iter()
            .flat_map(|l| l.component.iter().flatten())
            .enumerate()
        {
            if let Some(load) = &c.load
                && load.mode == Some(LoadMode::Concurrency)
                && let Some(values) = &load.values
                && values.iter().any(|x| !declared.contains(x))
            {
                cx.warn(
                    "workload-consistency",
                    &format!("/spec/layers/component/{i}/load/values"),
                    format!("this layer sweeps concurrency {values:?} but workload.concurrency pins {v:?}"),
                    "make the layer's sweep a subset of workload.concurrency, or update the workload",
                );
            }
        }
    }
}

fn layers(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let Some(l) = &spec.layers else {
        if !cx.loc.exists("/spec/layers") {
            cx.error("layers-declared", "/spec/layers",
                format!("spec.layers is missing; nothing would run: declare at least one micro, component or e2e entry {SEE_LAYERS}"),
                "add at least one of `layers.micro`, `layers.component`, `layers.e2e`");
        }
        return;
    };
    if l.is_empty() && cx.loc.exists("/spec/layers") {
        cx.error_at_key("layers-declared", "/spec/layers", "spec.layers has no entries; nothing would run".into(),
            "add at least one of `micro: [{kind: memory}]`, `component: [{kind: serve, ...}]`, `e2e: [{kind: train}]`");
    }
    for (i, c) in l.component.iter().flatten().enumerate() {
        let base = format!("/spec/layers/component/{i}");
        if c.kind.is_some() && c.kind != Some(ComponentKind::Eval) {
            eval_fields_elsewhere(c, &base, cx);
        }
        match c.kind {
            Some(ComponentKind::Serve) => serve(c, &base, cx),
            Some(ComponentKind::Eval) => eval(spec, c, &base, cx),
            Some(ComponentKind::Startup) if c.command.as_ref().is_some_and(|v| !v.is_empty()) => {
                startup(c, &base, cx)
            }
            Some(ComponentKind::Dataloader) => dataloader(c, &base, cx),
            Some(_) if c.command.as_ref().is_none_or(Vec::is_empty) => {
                cx.error_at_key(
                    "command-config",
                    &format!("{base}/command"),
                    "this component layer runs a command, but `command` is missing or empty".into(),
                    "add `command: [python, load_data.py]`",
                );
            }
            Some(_) => {}
            None if !cx.loc.exists(&format!("{base}/kind")) => cx.error_at_key(
                "serve-config",
                &base,
                "component layer without `kind`".into(),
                "add `kind: serve` (or eval, dataloader, startup)",
            ),
            None => {}
        }
    }
    for (i, e) in l.e2e.iter().flatten().enumerate() {
        let base = format!("/spec/layers/e2e/{i}");
        if let Some(p) = &e.profile {
            profile_config(p, e.kind, &format!("{base}/profile"), cx);
        }
        match e.kind {
            Some(E2eKind::Command) => {
                match &e.command {
                    Some(cmd) if !cmd.is_empty() => {
                        let multi = e.world_sizes.as_ref().is_some_and(|w| w.len() > 1);
                        if multi && !cmd.iter().any(|a| a.contains("{worldSize}")) {
                            cx.warn("command-config", &format!("{base}/command"),
                                "worldSizes sweeps several sizes but the command has no `{worldSize}` placeholder: every point would run the same command".into(),
                                "pass the size, e.g. `[torchrun, --nproc-per-node, \"{worldSize}\", train.py]`");
                        }
                    }
                    _ => cx.error_at_key(
                        "command-config",
                        &format!("{base}/command"),
                        "e2e layer of kind command has no command".into(),
                        "add `command: [torchrun, --nproc-per-node, \"{worldSize}\", train.py]`",
                    ),
                }
                if e.world_sizes.as_ref().is_some_and(|w| w.contains(&0)) {
                    cx.error(
                        "load-values",
                        &format!("{base}/worldSizes"),
                        "worldSizes contains 0".into(),
                        "world sizes are at least 1",
                    );
                }
            }
            Some(E2eKind::Train) => {}
            None if !cx.loc.exists(&format!("{base}/kind")) => cx.error_at_key(
                "command-config",
                &base,
                "e2e layer without `kind`".into(),
                "add `kind: command` (any program) or `kind: train` (built-in trainer)",
            ),
            None => {}
        }
    }
    for (i, m) in l.micro.iter().flatten().enumerate() {
        let base = format!("/spec/layers/micro/{i}");
        if m.kind.is_none() && !cx.loc.exists(&format!("{base}/kind")) {
            cx.error_at_key(
                "layers-declared",
                &base,
                "micro layer without `kind`".into(),
                "add `kind: memory` (or gemm, storage, network)",
            );
        }
    }
}

/// A profile's settings fit together and fit the layer.
fn profile_config(
    p: &crate::ProfilerSpec,
    kind: Option<E2eKind>,
    base: &str,
    cx: &mut Ctx<'_, '_>,
) {
    use crate::ProfilerTool;
    if p.mode.is_none() && !cx.loc.exists(&format!("{base}/mode")) {
        cx.error_at_key(
            "profile-config",
            base,
            "profile without `mode`".into(),
            "add `mode: trace` (Chrome/Perfetto JSON), `tb` (TensorBoard) or `off`",
        );
    }
    let tool = p.tool.unwrap_or(ProfilerTool::Torch);
    if let Some(s) = &p.schedule {
        if tool != ProfilerTool::Torch {
            cx.warn(
                "profile-config",
                &format!("{base}/schedule"),
                format!(
                    "`schedule` is torch.profiler's; `{}` records the whole replicate",
                    tool.name()
                ),
                "remove `schedule`, or use `tool: torch`",
            );
        }
        if s.active == Some(0) {
            cx.error(
                "profile-config",
                &format!("{base}/schedule/active"),
                "`active: 0` records no step".into(),
                "record at least one step, e.g. `active: 3`",
            );
        }
    }
    if tool == ProfilerTool::Torch && kind == Some(E2eKind::Train) {
        cx.error_at_key(
            "profile-config",
            &format!("{base}/tool"),
            "the reference trainer (`kind: train`) is not a PyTorch program: torch.profiler \
             cannot profile it"
                .into(),
            "use `tool: perf` for it",
        );
    }
}

/// `load: {mode: trace}`: the trace file exists (relative to the spec's directory), the
/// speed-up is positive, the window reads, and nothing else sets the load.
fn trace_rules(c: &ComponentLayer, base: &str, cx: &mut Ctx<'_, '_>) {
    let lptr = format!("{base}/load");
    let Some(t) = c.load.as_ref().and_then(|l| l.trace.as_ref()) else {
        if !cx.loc.exists(&format!("{lptr}/trace")) {
            cx.error_at_key(
                "load-trace",
                &lptr,
                "`mode: trace` has no `trace` to replay".into(),
                "add `trace: {file: trace.jsonl, format: jsonl}` (formats: docs/traces.md)",
            );
        }
        return;
    };
    let tptr = format!("{lptr}/trace");
    match (&t.file, cx.base) {
        (None, _) if !cx.loc.exists(&format!("{tptr}/file")) => cx.error_at_key(
            "load-trace",
            &tptr,
            "the trace has no `file`".into(),
            "add `file: trace.jsonl` (relative to the spec's directory)",
        ),
        (Some(f), Some(dir)) if !dir.join(f).is_file() => cx.error(
            "load-trace",
            &format!("{tptr}/file"),
            format!(
                "trace file `{f}` does not exist (paths are relative to the spec's directory, {})",
                dir.display()
            ),
            "check the path; it names a trace in one of the formats of docs/traces.md",
        ),
        _ => {}
    }
    if let Some(x) = t.speedup
        && !(x.is_finite() && x > 0.0)
    {
        cx.error(
            "load-trace",
            &format!("{tptr}/speedup"),
            format!("trace.speedup is {x}; it must be > 0"),
            "e.g. `speedup: 2` replays twice as fast, `0.5` at half speed",
        );
    }
    if let Err(e) = t.window_ms() {
        cx.error(
            "load-trace",
            &format!("{tptr}/window"),
            format!("trace.{e}"),
            "e.g. `window: 10m..20m`, `..30s` or `1h..`",
        );
    }
    if t.model_map.is_some() && t.models != Some(true) {
        cx.error_at_key(
            "load-trace",
            &format!("{tptr}/modelMap"),
            "`modelMap` renames the models the trace sends, but `models` is not true".into(),
            "add `models: true` to send each request to its trace line's model",
        );
    }
    for (from, to) in t.model_map.iter().flatten() {
        if from.is_empty() || to.is_empty() {
            cx.error(
                "load-trace",
                &format!("{tptr}/modelMap"),
                "a model map entry has an empty name".into(),
                "e.g. `modelMap: {GPT-4: llama-70b}`",
            );
        }
    }
    if t.models == Some(true) && c.target.as_ref().is_some_and(|t| t.models.is_some()) {
        cx.error_at_key(
            "load-trace",
            &format!("{tptr}/models"),
            "the trace sends its own models; `target.models` would be a second mix".into(),
            "give `target.model` (for lines without a model), or drop `trace.models`",
        );
    }
    for (name, present) in [
        ("mlperf", c.mlperf.is_some()),
        ("sessions", c.sessions.is_some()),
    ] {
        if present {
            cx.error_at_key(
                "load-trace",
                &format!("{base}/{name}"),
                format!(
                    "`{name}` does not combine with `mode: trace`: the trace sets every request"
                ),
                "replay the trace in a serve layer of its own, or remove it",
            );
        }
    }
}

/// `target.caCert` and `target.tokenizer` name files relative to the spec's directory.
fn target_files(c: &ComponentLayer, base: &str, cx: &mut Ctx<'_, '_>) {
    if let (Some(p), Some(dir)) = (
        c.sessions.as_ref().and_then(|s| s.dataset.as_deref()),
        cx.base,
    ) && !dir.join(p).is_file()
    {
        cx.error(
            "target-files",
            &format!("{base}/sessions/dataset"),
            format!(
                "sessions.dataset `{p}` does not exist (paths are relative to the spec's directory, {})",
                dir.display()
            ),
            "check the path; it names a file of conversations (ShareGPT JSON or JSON lines)",
        );
    }
    if let Some(dir) = cx.base {
        for (field, key) in [(&c.tools, "tools"), (&c.json_schema, "jsonSchema")] {
            if let Some(p) = field
                && !dir.join(p).is_file()
            {
                cx.error(
                    "target-files",
                    &format!("{base}/{key}"),
                    format!(
                        "{key} `{p}` does not exist (paths are relative to the spec's directory, {})",
                        dir.display()
                    ),
                    "check the path; it names a JSON file",
                );
            }
        }
    }
    let (Some(t), Some(dir)) = (c.target.as_ref(), cx.base) else {
        return;
    };
    let files = [
        (
            "caCert",
            t.ca_cert.as_deref(),
            "a PEM file of CA certificates (-----BEGIN CERTIFICATE-----)",
        ),
        (
            "tokenizer",
            t.tokenizer.as_deref(),
            "a Hugging Face tokenizer.json",
        ),
    ];
    for (field, path, what) in files {
        if let Some(p) = path
            && !dir.join(p).is_file()
        {
            cx.error(
                "target-files",
                &format!("{base}/target/{field}"),
                format!(
                    "target.{field} `{p}` does not exist (paths are relative to the spec's directory, {})",
                    dir.display()
                ),
                &format!("check the path; it names {what}"),
            );
        }
    }
}

fn cache_modes(c: &ComponentLayer, base: &str, rule: &'static str, cx: &mut Ctx<'_, '_>) {
    if let Some(modes) = &c.cache {
        let m = modes.modes();
        let dup = m.iter().enumerate().any(|(i, x)| m[..i].contains(x));
        if m.is_empty() || dup {
            cx.error_at_key(
                rule,
                &format!("{base}/cache"),
                "`cache` lists each of cold and warm at most once, and at least one".into(),
                "e.g. cache: [cold, warm]",
            );
        }
    }
}

fn dataloader(c: &ComponentLayer, base: &str, cx: &mut Ctx<'_, '_>) {
    const RULE: &str = "dataloader-config";
    cache_modes(c, base, RULE, cx);
    let command = c.command.as_ref().is_some_and(|v| !v.is_empty());
    let Some(src) = &c.source else {
        if !command {
            cx.error_at_key(
                RULE,
                base,
                "a dataloader layer needs `source` (the built-in reader) or `command` (your \
                 loader, speaking the metric protocol)"
                    .into(),
                "add `source: {path: data/, format: parquet}` or `command: [python, -m, mypkg.bench_loader]`",
            );
        }
        return;
    };
    let sb = format!("{base}/source");
    if command {
        cx.error_at_key(
            RULE,
            &sb,
            "a dataloader layer has either `source` or `command`, not both".into(),
            "keep `source` to measure the built-in reader over your files, or `command` to \
             measure your own loader",
        );
    }
    if src.format.is_none() && !cx.loc.exists(&format!("{sb}/format")) {
        cx.error_at_key(
            RULE,
            &sb,
            "`source` needs `format`: how a file holds samples".into(),
            "add `format: parquet` (a row is a sample), `jsonl` (a line) or `raw` (a file)",
        );
    }
    match src.path.as_deref() {
        None => cx.error_at_key(
            RULE,
            &sb,
            "`source` needs `path`: the directory of the files to read".into(),
            "add `path: data/train` (relative to the spec's directory)",
        ),
        Some(p) => {
            if let Some(dir) = cx.base
                && !dir.join(p).is_dir()
            {
                cx.error(
                    RULE,
                    &format!("{sb}/path"),
                    format!(
                        "source.path `{p}` is not a directory (paths are relative to the spec's \
                         directory, {})",
                        dir.display()
                    ),
                    "check the path; it names the directory holding the files to read",
                );
            }
        }
    }
    if let Some(pat) = &src.pattern
        && let Err(e) = globset::Glob::new(pat)
    {
        cx.error(
            RULE,
            &format!("{sb}/pattern"),
            format!("source.pattern `{pat}` is not a glob: {}", e.kind()),
            "match file names with * and ?, e.g. `shard-*.parquet`",
        );
    }
    for (field, v, max) in [("batch", src.batch, 1 << 20), ("workers", src.workers, 256)] {
        if let Some(n) = v
            && !(1..=max).contains(&n)
        {
            cx.error(
                RULE,
                &format!("{sb}/{field}"),
                format!("source.{field} is {n}; it must be between 1 and {max}"),
                "e.g. batch: 32, workers: 2",
            );
        }
    }
}

fn startup(c: &ComponentLayer, base: &str, cx: &mut Ctx<'_, '_>) {
    let hint = "add `ready: {http: \"http://127.0.0.1:8000/health\"}`, `ready: {log: \"listening\"}` or `ready: {exit: true}`";
    let Some(r) = &c.ready else {
        cx.error_at_key(
            "startup-config",
            base,
            "a startup layer needs `ready`: when the started command counts as ready".into(),
            hint,
        );
        return;
    };
    let rb = format!("{base}/ready");
    let checks = [r.http.is_some(), r.log.is_some(), r.exit == Some(true)];
    if checks.iter().filter(|&&x| x).count() != 1 {
        cx.error_at_key(
            "startup-config",
            &rb,
            "`ready` needs exactly one of `http`, `log` and `exit: true`".into(),
            hint,
        );
    }
    if let Some(url) = &r.http
        && !url.starts_with("http://")
    {
        cx.error(
            "startup-config",
            &format!("{rb}/http"),
            format!("`ready.http` must be an http:// URL, got `{url}`"),
            "e.g. http://127.0.0.1:8000/health (the probe speaks plain HTTP to a local port)",
        );
    }
    if let Some(code) = r.expect {
        if r.http.is_none() {
            cx.error_at_key(
                "startup-config",
                &format!("{rb}/expect"),
                "`ready.expect` applies to `ready.http`".into(),
                "drop it, or add `http: URL`",
            );
        } else if !(100..=599).contains(&code) {
            cx.error(
                "startup-config",
                &format!("{rb}/expect"),
                format!("`ready.expect` is {code}, not an HTTP status"),
                "e.g. expect: 200",
            );
        }
    }
    if let Some(log) = &r.log
        && log.is_empty()
    {
        cx.error(
            "startup-config",
            &format!("{rb}/log"),
            "`ready.log` is empty: every line would match".into(),
            "give text the process prints once it is ready, e.g. `log: \"server is listening\"`",
        );
    }
    cache_modes(c, base, "startup-config", cx);
}

/// `load: {mode: capacity, capacity: {...}}`: the search needs an objective to hold, and its
/// settings must leave it something to decide.
fn capacity_rules(cx: &mut Ctx<'_, '_>, c: &ComponentLayer, load: &Load, lptr: &str) {
    let cptr = format!("{lptr}/capacity");
    if load.mode != Some(LoadMode::Capacity) {
        cx.error_at_key(
            "load-capacity",
            &cptr,
            "`capacity` settings without `mode: capacity`".into(),
            "set `mode: capacity`, or remove the `capacity` section",
        );
        return;
    }
    let slo = c.slo.clone().unwrap_or_default();
    if slo.ttft_ms.is_none() && slo.tpot_ms.is_none() && slo.e2e_ms.is_none() {
        cx.error_at_key(
            "load-capacity",
            lptr,
            "`mode: capacity` needs an SLO to hold, and the layer has none".into(),
            "add `slo: {ttftMs: 200, tpotMs: 50}` to the serve layer",
        );
    }
    if c.mlperf.is_some() {
        cx.error_at_key(
            "load-capacity",
            lptr,
            "`mode: capacity` and `mlperf` are two different questions".into(),
            "run the MLPerf scenario in one layer and the capacity search in another",
        );
    }
    let Some(s) = &load.capacity else { return };
    let mut bad = |field: &str, ok: bool, message: String, hint: &str| {
        if !ok {
            cx.error("load-capacity", &format!("{cptr}/{field}"), message, hint);
        }
    };
    if let Some(p) = s.percentile {
        bad(
            "percentile",
            p > 0.0 && p < 100.0,
            format!("percentile {p} is not between 0 and 100"),
            "e.g. `percentile: 99`",
        );
    }
    if let Some(a) = s.attainment {
        bad(
            "attainment",
            a > 0.0 && a < 1.0,
            format!("attainment {a} is not a share between 0 and 1"),
            "e.g. `attainment: 0.99`",
        );
        bad(
            "attainment",
            s.percentile.is_none(),
            "`percentile` and `attainment` are two ways to judge the SLO; give one".into(),
            "keep `percentile` (each objective on its own) or `attainment` (all at once)",
        );
    }
    if let Some(c) = s.confidence {
        bad(
            "confidence",
            c > 0.5 && c < 1.0,
            format!("confidence {c} is not between 0.5 and 1"),
            "e.g. `confidence: 0.95`",
        );
    }
    if let Some(p) = s.precision {
        bad(
            "precision",
            p > 0.0 && p < 1.0,
            format!("precision {p} is not a share between 0 and 1"),
            "e.g. `precision: 0.05` (5 % of the capacity)",
        );
    }
    if let Some(x) = s.start {
        bad(
            "start",
            x.is_finite() && x > 0.0,
            format!("start {x} must be positive"),
            "e.g. `start: 10`",
        );
    }
    if let (Some(x), Some(m)) = (s.start.or(Some(1.0)), s.max) {
        bad(
            "max",
            m.is_finite() && m >= x,
            format!("max {m} is below the start {x}"),
            "raise `max`, or lower `start`",
        );
    }
    if let Some(n) = s.probe_requests {
        bad(
            "probeRequests",
            n >= 1,
            "probeRequests must be at least 1".into(),
            "e.g. `probeRequests: 300`",
        );
        if let Some(m) = s.max_probe_requests {
            bad(
                "maxProbeRequests",
                m >= n,
                format!("maxProbeRequests {m} is below probeRequests {n}"),
                "pool at least one probe's worth",
            );
        }
    }
    if let Some(n) = s.max_probes {
        bad(
            "maxProbes",
            n >= 2,
            format!("maxProbes {n}: a search needs at least 2"),
            "e.g. `maxProbes: 30`",
        );
    }
}

/// The entries of a weighted mix (`target.models`, `requestKinds`): named once, weights above
/// 0, at least one.
fn mix_rules(what: &str, ptr: &str, entries: Vec<(String, Option<f64>)>, cx: &mut Ctx<'_, '_>) {
    if entries.is_empty() {
        cx.error(
            "serve-config",
            ptr,
            format!("`{what}` is empty"),
            "name at least one, or remove it",
        );
    }
    let mut seen: Vec<&str> = Vec::new();
    for (k, (name, weight)) in entries.iter().enumerate() {
        if name.trim().is_empty() {
            cx.error_at_key(
                "serve-config",
                &format!("{ptr}/{k}"),
                format!("`{what}[{k}]` has no name"),
                "e.g. `{name: lora-a, weight: 0.3}`",
            );
        } else if seen.contains(&name.as_str()) {
            cx.error_at_key(
                "serve-config",
                &format!("{ptr}/{k}"),
                format!("`{name}` is named twice in `{what}`"),
                "name each once; weights are shares of the requests",
            );
        }
        seen.push(name);
        if let Some(w) = weight
            && !(*w > 0.0 && w.is_finite())
        {
            cx.error(
                "serve-config",
                &format!("{ptr}/{k}/weight"),
                format!("`{what}[{k}].weight` must be a number above 0, got {w}"),
                "weights are normalised over the mix: `0.7` and `0.3`, or `7` and `3`",
            );
        }
    }
}

/// `WxH` or `WxH,COUNT`: sides of 16 to 4096 pixels, 1 to 16 images.
fn check_images(s: &str) -> Result<(), String> {
    s.parse::<crate::images::ImageSpec>()
        .map(drop)
        .map_err(|e| e.why)
}

/// `requestKinds`, `tools` and `jsonSchema` of a serve layer.
fn serve_kinds(c: &ComponentLayer, base: &str, api: Api, cx: &mut Ctx<'_, '_>) {
    let kinds: Vec<RequestKindName> = c
        .request_kinds
        .iter()
        .flatten()
        .filter_map(|k| k.kind)
        .collect();
    if let Some(ks) = &c.request_kinds {
        mix_rules(
            "requestKinds",
            &format!("{base}/requestKinds"),
            ks.iter()
                .map(|k| {
                    (
                        k.kind.map(|k| k.name()).unwrap_or_default().to_string(),
                        k.weight,
                    )
                })
                .collect(),
            cx,
        );
        let structured = kinds.iter().any(|k| *k != RequestKindName::Text);
        let why = if !structured {
            None
        } else if api != Api::Chat {
            Some(
                "tool calls and structured output are chat requests, but the target API is not `chat`",
            )
        } else if c.sessions.is_some() {
            Some("request kinds are single requests; they do not combine with `sessions`")
        } else if c.mlperf.is_some() {
            Some("an MLPerf scenario sends plain queries; it does not check answers")
        } else {
            None
        };
        if let Some(why) = why {
            cx.error_at_key(
                "serve-config",
                &format!("{base}/requestKinds"),
                why.into(),
                "run the request kinds in a serve layer of their own with `api: chat`",
            );
        }
    }
    if let Some(img) = &c.images {
        let why = if api != Api::Chat {
            Some("images are parts of chat messages, but the target API is not `chat`".to_string())
        } else if c.sessions.is_some() {
            Some("images are sent with single requests; they do not combine with `sessions`".into())
        } else {
            check_images(img).err()
        };
        if let Some(why) = why {
            cx.error(
                "serve-config",
                &format!("{base}/images"),
                format!("images `{img}`: {why}"),
                "e.g. `images: 512x512` or `images: 1024x768,2` with `api: chat`",
            );
        }
    }
    for (field, key, kind) in [
        (&c.tools, "tools", RequestKindName::ToolCall),
        (&c.json_schema, "jsonSchema", RequestKindName::Json),
    ] {
        if field.is_some() && !kinds.contains(&kind) {
            cx.error_at_key(
                "serve-config",
                &format!("{base}/{key}"),
                format!(
                    "`{key}` describes the answers of `{}` requests, but `requestKinds` has none",
                    kind.name()
                ),
                "add the kind to `requestKinds`, or remove it",
            );
        }
    }
}

/// `evalMix` of a serve layer: tasks that exist, a share in (0, 1], and a load it fits.
fn serve_eval_mix(c: &ComponentLayer, base: &str, api: Api, cx: &mut Ctx<'_, '_>) {
    let Some(m) = &c.eval_mix else {
        return;
    };
    let ptr = format!("{base}/evalMix");
    let why = if api == Api::Embeddings {
        Some("eval items ask for answers, but the target API is `embeddings`")
    } else if c.sessions.is_some() {
        Some("eval items are single requests; they do not combine with `sessions`")
    } else if c.mlperf.is_some() {
        Some("an MLPerf scenario sends plain queries; it does not grade answers")
    } else {
        None
    };
    if let Some(why) = why {
        cx.error_at_key(
            "serve-config",
            &ptr,
            why.into(),
            "run the eval mix in a serve layer of its own with `api: chat` or `completions`",
        );
    }
    match m.share {
        Some(s) if s > 0.0 && s <= 1.0 => {}
        Some(s) => cx.error(
            "serve-config",
            &format!("{ptr}/share"),
            format!(
                "evalMix.share is {s}; it is the share of requests that are eval items, in (0, 1]"
            ),
            "e.g. `share: 0.2`",
        ),
        None => cx.error_at_key(
            "serve-config",
            &format!("{ptr}/share"),
            "evalMix has no `share`".into(),
            "e.g. `evalMix: {tasks: [arith], share: 0.2}`",
        ),
    }
    if m.max_tokens == Some(0) {
        cx.error(
            "serve-config",
            &format!("{ptr}/maxTokens"),
            "evalMix.maxTokens is 0; an answer needs at least one token".into(),
            "e.g. `maxTokens: 128` (the default)",
        );
    }
    let tasks = m.tasks.as_deref().unwrap_or_default();
    if tasks.is_empty() {
        cx.error_at_key(
            "serve-config",
            &format!("{ptr}/tasks"),
            "evalMix has no tasks".into(),
            &format!(
                "e.g. `tasks: [arith, format]` (bundled: {}; or .jsonl files)",
                BUNDLED_TASKS.join(", ")
            ),
        );
    }
    let mut names: Vec<String> = Vec::new();
    for (j, t) in tasks.iter().enumerate() {
        let tptr = format!("{ptr}/tasks/{j}");
        if task_is_file(t) {
            if let Some(dir) = cx.base
                && !dir.join(t).is_file()
            {
                cx.error(
                    "eval-files",
                    &tptr,
                    format!("task file `{t}` does not exist (paths are relative to the spec's directory, {})", dir.display()),
                    "check the path; task files are JSONL, one item per line (docs/eval.md)",
                );
            }
        } else if !BUNDLED_TASKS.contains(&t.as_str()) {
            let hint = match crate::diag::did_you_mean(t, BUNDLED_TASKS.iter().copied()) {
                Some(s) => format!("did you mean `{s}`? a file needs a .jsonl name or a path"),
                None => format!(
                    "bundled: {}; a file needs a .jsonl name or a path",
                    BUNDLED_TASKS.join(", ")
                ),
            };
            cx.error(
                "eval-config",
                &tptr,
                format!("unknown task `{t}`: not a bundled probe, and not a .jsonl file"),
                &hint,
            );
            continue;
        }
        let name = task_name(t);
        if names.contains(&name) {
            cx.error(
                "serve-config",
                &tptr,
                format!("task `{name}` is in evalMix twice"),
                "list each task once, or rename one of the files",
            );
        }
        names.push(name);
    }
}

fn serve(c: &ComponentLayer, base: &str, cx: &mut Ctx<'_, '_>) {
    target_files(c, base, cx);
    let api = c.target.as_ref().and_then(|t| t.api).unwrap_or(Api::Chat);
    let models = c.target.as_ref().and_then(|t| t.models.as_ref());
    let models_from = c.target.as_ref().and_then(|t| t.models_from.as_ref());
    if let Some(f) = models_from {
        let named = c
            .target
            .as_ref()
            .is_some_and(|t| t.model.is_some() || t.models.is_some());
        if named {
            cx.error_at_key(
                "serve-config",
                &format!("{base}/target/modelsFrom"),
                "`target.modelsFrom` and `target.model`/`target.models` both name the models"
                    .into(),
                "keep one of them",
            );
        }
        if let Some(dir) = cx.base
            && !dir.join(f).is_file()
        {
            cx.error(
                "target-files",
                &format!("{base}/target/modelsFrom"),
                format!("modelsFrom `{f}` does not exist (paths are relative to the spec's directory, {})", dir.display()),
                "a text file of model names, one per line",
            );
        }
    }
    if let Some(s) = c.target.as_ref().and_then(|t| t.model_zipf) {
        if models_from.is_none() {
            cx.error_at_key(
                "serve-config",
                &format!("{base}/target/modelZipf"),
                "`modelZipf` weights the names of `modelsFrom`, which is not given".into(),
                "add `modelsFrom: adapters.txt`, or remove `modelZipf`",
            );
        } else if !(s > 0.0 && s.is_finite()) {
            cx.error(
                "serve-config",
                &format!("{base}/target/modelZipf"),
                format!("modelZipf is {s}; the Zipf exponent is a number above 0"),
                "1 is classic Zipf; larger is more skewed",
            );
        }
    }
    match (c.target.as_ref().and_then(|t| t.model.as_ref()), models) {
        (None, None) if models_from.is_some() => {}
        (None, None) => cx.error_at_key("serve-config", &format!("{base}/target/model"),
            "serve layer has no `target.model`: requests must name the model".into(),
            "add `target: {url: sim, api: chat, model: sim-llama}` (url `sim` starts the bundled simulator)"),
        (Some(_), Some(_)) => cx.error_at_key(
            "serve-config",
            &format!("{base}/target/models"),
            "`target.model` and `target.models` both name the models".into(),
            "keep `models` for a mix (`[{name: base, weight: 0.7}, {name: lora-a, weight: 0.3}]`), or `model` for one",
        ),
        _ => {}
    }
    if let Some(ms) = models {
        mix_rules(
            "models",
            &format!("{base}/target/models"),
            ms.iter()
                .map(|m| (m.name.clone().unwrap_or_default(), m.weight))
                .collect(),
            cx,
        );
    }
    serve_kinds(c, base, api, cx);
    serve_eval_mix(c, base, api, cx);
    if c.sessions.is_some() {
        if api != Api::Chat {
            cx.error_at_key(
                "serve-config",
                &format!("{base}/sessions"),
                "sessions are chat conversations, but the target API is not `chat`".into(),
                "use `api: chat` with `sessions`, or remove `sessions`",
            );
        }
        if c.mlperf.is_some() {
            cx.error_at_key(
                "serve-config",
                &format!("{base}/sessions"),
                "an MLPerf scenario sends single queries; it does not run sessions".into(),
                "run the sessions in another serve layer, or remove `sessions`",
            );
        }
    }
    let trace_mode = c
        .load
        .as_ref()
        .is_some_and(|l| l.mode == Some(LoadMode::Trace));
    if trace_mode {
        trace_rules(c, base, cx);
    }
    match &c.scenarios {
        Some(_) if trace_mode => cx.warn(
            "load-trace",
            &format!("{base}/scenarios"),
            "`mode: trace` takes every request's lengths from the trace: `scenarios` are ignored"
                .into(),
            "remove `scenarios`",
        ),
        None if trace_mode => {}
        Some(s) if !s.is_empty() => {
            for (j, sc) in s.iter().enumerate() {
                let embedding = sc.0.is_embedding();
                if embedding != (api == Api::Embeddings) {
                    cx.error("serve-config", &format!("{base}/scenarios/{j}"),
                        if embedding { format!("scenario `{}` is for embeddings but the target API is not `embeddings`", sc.0) }
                        else { format!("scenario `{}` generates text but the target API is `embeddings`", sc.0) },
                        "use E(tokens) with `api: embeddings`, and D/N/U scenarios with chat or completions");
                }
            }
        }
        // An empty list here may be one whose entries were all invalid (already reported).
        _ if !cx.loc.exists(&format!("{base}/scenarios/0")) => cx.error_at_key(
            "serve-config",
            &format!("{base}/scenarios"),
            "serve layer has no traffic scenarios".into(),
            "add `scenarios: [\"D(100,100)\"]`",
        ),
        _ => {}
    }
    if let Some(r) = &c.retry {
        let rptr = format!("{base}/retry");
        match &r.on {
            Some(on) if on.is_empty() => cx.error(
                "serve-config",
                &format!("{rptr}/on"),
                "retry.on is empty: nothing would be tried again".into(),
                "list the statuses to try again, e.g. `on: [429, 503]`, or remove `retry`",
            ),
            Some(on) => {
                for (j, st) in on.iter().enumerate() {
                    if !(400..=599).contains(st) {
                        cx.error(
                            "serve-config",
                            &format!("{rptr}/on/{j}"),
                            format!("retry status {st} is not an HTTP error status (400-599)"),
                            "servers turn requests away with 429 (too many requests) or 503 (unavailable)",
                        );
                    }
                }
            }
            None => {}
        }
        if let Some(n) = r.max_attempts
            && !(2..=20).contains(&n)
        {
            cx.error(
                "serve-config",
                &format!("{rptr}/maxAttempts"),
                format!("retry.maxAttempts {n} is outside 2..=20 (the first attempt counts)"),
                "use `maxAttempts: 4` (one attempt and three retries); remove `retry` for none",
            );
        }
    }
    match &c.load {
        None if !cx.loc.exists(&format!("{base}/load")) => cx.error_at_key(
            "serve-config",
            &format!("{base}/load"),
            "serve layer has no `load`".into(),
            "add `load: {mode: concurrency, values: [1, 16, 64]}`",
        ),
        Some(load) => {
            let lptr = format!("{base}/load");
            if load.mode.is_none() && !cx.loc.exists(&format!("{lptr}/mode")) {
                cx.error_at_key(
                    "serve-config",
                    &lptr,
                    "load has no `mode`".into(),
                    "add `mode: concurrency` (closed loop) or `mode: rate` (open loop)",
                );
            }
            let capacity = load.mode == Some(LoadMode::Capacity);
            if capacity || load.capacity.is_some() {
                capacity_rules(cx, c, load, &lptr);
            }
            if load.trace.is_some() && load.mode != Some(LoadMode::Trace) {
                cx.warn(
                    "load-trace",
                    &format!("{lptr}/trace"),
                    "`trace` applies to `mode: trace`; it is ignored here".into(),
                    "use `mode: trace`, or remove `trace`",
                );
            }
            match &load.values {
                Some(_) if trace_mode => cx.warn(
                    "load-trace",
                    &format!("{lptr}/values"),
                    "`mode: trace` sends each request at its time in the trace: `values` are ignored"
                        .into(),
                    "remove `values`; `trace.speedup` replays faster or slower",
                ),
                None if trace_mode => {}
                Some(_) if capacity => cx.warn(
                    "load-capacity",
                    &format!("{lptr}/values"),
                    "`mode: capacity` searches the load: `values` are ignored".into(),
                    "remove `values`, or use `mode: rate` / `mode: concurrency` for a sweep",
                ),
                None if capacity => {}
                Some(v) if v.is_empty() => cx.error(
                    "load-values",
                    &format!("{lptr}/values"),
                    "load.values is empty".into(),
                    "list the sweep points, e.g. [1, 16, 64]",
                ),
                Some(v) => {
                    for (j, x) in v.iter().enumerate() {
                        let ptr = format!("{lptr}/values/{j}");
                        if !x.is_finite() || *x <= 0.0 {
                            cx.error(
                                "load-values",
                                &ptr,
                                format!("load value {x} must be positive"),
                                "concurrency levels are >= 1; rates are requests per second > 0",
                            );
                        } else if load.mode == Some(LoadMode::Concurrency) && x.fract() != 0.0 {
                            cx.error(
                                "load-values",
                                &ptr,
                                format!("concurrency {x} is not a whole number"),
                                "concurrency counts in-flight requests: 1, 16, 64",
                            );
                        }
                    }
                }
                None if !cx.loc.exists(&format!("{lptr}/values")) => cx.error_at_key(
                    "load-values",
                    &lptr,
                    "load has no `values`".into(),
                    "add `values: [1, 16, 64]`",
                ),
                None => {}
            }
            if load.arrival == Some(Arrival::Gamma) && !load.burstiness.is_some_and(|b| b > 0.0) {
                cx.error_at_key("load-values", &lptr, "gamma arrivals need `burstiness` > 0 (the gamma shape; < 1 is burstier than Poisson)".into(), "add `burstiness: 0.5`");
            }
            if load.arrival.is_some() && load.mode == Some(LoadMode::Concurrency) {
                cx.warn("load-values", &format!("{lptr}/arrival"), "`arrival` applies to `mode: rate`; a closed loop sends the next request when one completes".into(), "remove `arrival`, or use `mode: rate`");
            }
        }
        None => {}
    }
    let bounded = c.stop.as_ref().is_some_and(|s| {
        s.max_requests.is_some_and(|n| n > 0) || s.max_duration.is_some_and(|d| !d.0.is_zero())
    });
    // A trace ends by itself.
    if !bounded
        && !trace_mode
        && !cx.loc.exists(&format!("{base}/stop/maxRequests"))
        && !cx.loc.exists(&format!("{base}/stop/maxDuration"))
    {
        cx.error_at_key(
            "stop-condition",
            &format!("{base}/stop"),
            "serve layer has no stop condition: every point must end by request count or time"
                .into(),
            "add `stop: {maxRequests: 500, maxDuration: 120s}`",
        );
    }
    if let Some(cost) = &c.cost {
        match cost.per_accelerator_hour {
            Some(p) if p > 0.0 && p.is_finite() => {}
            _ => cx.error_at_key(
                "serve-config",
                &format!("{base}/cost/perAcceleratorHour"),
                "cost needs a positive `perAcceleratorHour` (dollars per accelerator-hour)".into(),
                "e.g. `cost: {perAcceleratorHour: 2.48, accelerators: 8}`",
            ),
        }
        if cost.accelerators == Some(0) {
            cx.error(
                "serve-config",
                &format!("{base}/cost/accelerators"),
                "cost.accelerators is 0".into(),
                "the accelerators the deployment uses: 1 or more",
            );
        }
    }
    // Each model's own objectives, where the mix gives them.
    let model_slos = c
        .target
        .iter()
        .filter_map(|t| t.models.as_ref())
        .flatten()
        .enumerate()
        .filter_map(|(i, m)| Some((format!("{base}/target/models/{i}/slo"), m.slo.as_ref()?)));
    let layer_slo = c.slo.as_ref().map(|s| (format!("{base}/slo"), s));
    for (at, slo) in layer_slo.into_iter().chain(model_slos) {
        for (name, v) in [
            ("ttftMs", slo.ttft_ms),
            ("tpotMs", slo.tpot_ms),
            ("e2eMs", slo.e2e_ms),
        ] {
            // NaN cannot reach here: YAML's .nan has no JSON form and decodes as absent.
            if let Some(v) = v
                && v <= 0.0
            {
                cx.error(
                    "slo-values",
                    &format!("{at}/{name}"),
                    format!("slo.{name} is {v}; an SLO bound is a positive number of milliseconds"),
                    "e.g. `ttftMs: 500`",
                );
            }
        }
    }
}

/// The fields only eval layers read, as (name, present).
fn eval_only_fields(c: &ComponentLayer) -> [(&'static str, bool); 8] {
    [
        ("tasks", c.tasks.is_some()),
        ("perplexity", c.perplexity.is_some()),
        ("repeat", c.repeat.is_some()),
        ("confidence", c.confidence.is_some()),
        ("maxTokens", c.max_tokens.is_some()),
        ("seed", c.seed.is_some()),
        ("stopSequences", c.stop_sequences.is_some()),
        ("concurrency", c.concurrency.is_some()),
    ]
}

fn eval_fields_elsewhere(c: &ComponentLayer, base: &str, cx: &mut Ctx<'_, '_>) {
    for (name, present) in eval_only_fields(c) {
        if present {
            cx.error_at_key(
                "eval-config",
                &format!("{base}/{name}"),
                format!("`{name}` applies to eval layers only; this layer would ignore it"),
                "move it to a `kind: eval` layer, or remove it",
            );
        }
    }
}

/// Whether an eval task names a file rather than a bundled probe.
pub fn task_is_file(task: &str) -> bool {
    task.ends_with(".jsonl") || task.contains('/') || task.contains('\\')
}

/// The name a task gets in point ids and facts: a bundled name, or a file's stem.
pub fn task_name(task: &str) -> String {
    if task_is_file(task) {
        std::path::Path::new(task)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| task.to_string())
    } else {
        task.to_string()
    }
}

fn eval(spec: &Spec, c: &ComponentLayer, base: &str, cx: &mut Ctx<'_, '_>) {
    target_files(c, base, cx);
    let target = c.target.as_ref();
    if target.and_then(|t| t.model.as_ref()).is_none() {
        cx.error_at_key("eval-config", &format!("{base}/target/model"),
            "eval layer has no `target.model`: requests must name the model".into(),
            "add `target: {url: sim, api: chat, model: sim-llama}` (url `sim` starts the bundled simulator)");
    }
    if target.and_then(|t| t.api) == Some(Api::Embeddings) {
        cx.error(
            "eval-config",
            &format!("{base}/target/api"),
            "an eval layer generates text: `api: embeddings` has no outputs to score".into(),
            "use `api: chat` (the server's chat template) or `api: completions`",
        );
    }
    if target.and_then(|t| t.stream) == Some(true) {
        cx.warn(
            "eval-config",
            &format!("{base}/target/stream"),
            "eval requests are never streamed; `stream: true` is ignored".into(),
            "remove `stream`",
        );
    }
    for (name, present) in [
        ("load", c.load.is_some()),
        ("scenarios", c.scenarios.is_some()),
        ("stop", c.stop.is_some()),
        ("slo", c.slo.is_some()),
        ("mlperf", c.mlperf.is_some()),
        ("sessions", c.sessions.is_some()),
        ("requestKinds", c.request_kinds.is_some()),
        ("tools", c.tools.is_some()),
        ("jsonSchema", c.json_schema.is_some()),
        ("images", c.images.is_some()),
        ("evalMix", c.eval_mix.is_some()),
        ("command", c.command.is_some()),
    ] {
        if present {
            cx.error_at_key(
                "eval-config",
                &format!("{base}/{name}"),
                format!("`{name}` does not apply to an eval layer (every item of every task runs once per repeat)"),
                "remove it; load a server with a `kind: serve` layer next to this one",
            );
        }
    }
    let perplexity = c.perplexity.as_deref().map(str::trim);
    if perplexity == Some("") {
        cx.error(
            "eval-config",
            &format!("{base}/perplexity"),
            "`perplexity` is empty".into(),
            "use `builtin` (the bundled shard), a text file, or `none`",
        );
    }
    let measures_perplexity = perplexity.is_some_and(|p| !p.is_empty() && p != "none");
    let tasks = c.tasks.as_deref().unwrap_or_default();
    if tasks.is_empty() && !measures_perplexity {
        let ptr = if c.tasks.is_some() {
            format!("{base}/tasks")
        } else {
            base.to_string()
        };
        cx.error_at_key(
            "eval-config",
            &ptr,
            "eval layer has no tasks and no perplexity: nothing to measure".into(),
            "add `tasks: [arith, format]` (bundled probes or .jsonl files) and/or `perplexity: builtin`",
        );
    }
    // The workload's declared eval tasks (the frozen correctness policy), when it lists any.
    let declared: Vec<&str> = spec
        .workload
        .as_ref()
        .and_then(|w| w.correctness.as_ref())
        .and_then(|c| c.tasks.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|t| t.trim())
        .collect();
    let mut names: Vec<String> = Vec::new();
    for (j, t) in tasks.iter().enumerate() {
        let ptr = format!("{base}/tasks/{j}");
        let t = t.trim();
        if !t.is_empty() && !declared.is_empty() && !declared.contains(&t) {
            cx.warn(
                "eval-config",
                &ptr,
                format!(
                    "task `{t}` is not among workload.correctness.tasks ({}): the frozen workload does not declare what this layer measures",
                    declared.join(", ")
                ),
                "list the same tasks in `workload.correctness.tasks` and in the eval layer",
            );
        }
        if t.is_empty() {
            cx.error(
                "eval-config",
                &ptr,
                "empty task name".into(),
                "name a bundled probe or a .jsonl file",
            );
            continue;
        }
        if task_is_file(t) {
            if let Some(dir) = cx.base
                && !dir.join(t).is_file()
            {
                cx.error(
                    "eval-files",
                    &ptr,
                    format!("task file `{t}` does not exist (paths are relative to the spec's directory, {})", dir.display()),
                    "check the path; task files are JSONL, one item per line (docs/eval.md)",
                );
            }
        } else if !BUNDLED_TASKS.contains(&t) {
            let hint = match crate::diag::did_you_mean(t, BUNDLED_TASKS.iter().copied()) {
                Some(s) => format!(
                    "did you mean `{s}`? bundled: {}; a file needs a .jsonl name or a path",
                    BUNDLED_TASKS.join(", ")
                ),
                None => format!(
                    "bundled: {}; a file needs a .jsonl name or a path",
                    BUNDLED_TASKS.join(", ")
                ),
            };
            cx.error(
                "eval-config",
                &ptr,
                format!("unknown task `{t}`: not a bundled probe, and not a .jsonl file"),
                &hint,
            );
            continue;
        }
        let name = task_name(t);
        if names.contains(&name) || name == "perplexity" {
            cx.error(
                "eval-config",
                &ptr,
                format!("task name `{name}` is used twice in this layer (a task's point and facts are named by it; `perplexity` is the perplexity point)"),
                "list each task once, or rename one of the files",
            );
        }
        names.push(name);
    }
    if let Some(p) = perplexity
        && measures_perplexity
        && p != "builtin"
        && let Some(dir) = cx.base
        && !dir.join(p).is_file()
    {
        cx.error(
            "eval-files",
            &format!("{base}/perplexity"),
            format!("perplexity text `{p}` does not exist (paths are relative to the spec's directory, {})", dir.display()),
            "use `builtin` (the bundled shard) or a UTF-8 text file, paragraphs separated by blank lines",
        );
    }
    let positive: [(&str, Option<f64>, &str); 3] = [
        (
            "repeat",
            c.repeat.map(f64::from),
            "`repeat: 2` runs every item twice and measures determinism",
        ),
        (
            "maxTokens",
            c.max_tokens.map(|x| x as f64),
            "e.g. `maxTokens: 64`",
        ),
        (
            "concurrency",
            c.concurrency.map(f64::from),
            "1 (the default) sends one request at a time",
        ),
    ];
    for (name, v, hint) in positive {
        if v == Some(0.0) {
            cx.error(
                "eval-config",
                &format!("{base}/{name}"),
                format!("{name} is 0; it must be at least 1"),
                hint,
            );
        }
    }
    if let Some(x) = c.confidence
        && !(x > 0.0 && x < 1.0)
    {
        cx.error(
            "eval-config",
            &format!("{base}/confidence"),
            format!("confidence is {x}; it is a probability strictly between 0 and 1"),
            "use 0.95 (or 0.99); write percentages as fractions",
        );
    }
    if c.timeout.is_some_and(|t| t.0.is_zero()) {
        cx.error(
            "eval-config",
            &format!("{base}/timeout"),
            "timeout is 0: every request would time out".into(),
            "the per-request timeout, e.g. `timeout: 120s`",
        );
    }
    let policy = spec
        .workload
        .as_ref()
        .and_then(|w| w.correctness.as_ref())
        .and_then(|c| c.policy);
    if policy == Some(CorrectnessPolicy::None) {
        cx.warn(
            "eval-config",
            "/spec/workload/correctness/policy",
            "an eval layer measures accuracy, but workload.correctness.policy is `none` (performance only)".into(),
            "declare `correctness: {policy: eval}`",
        );
    }
}

fn provenance(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    if let Some(p) = &spec.provenance {
        if p.signing == Some(Signing::Required)
            && p.key.as_deref().is_none_or(|k| k.trim().is_empty())
        {
            cx.error("provenance-signing-key", "/spec/provenance/signing",
                format!("provenance.signing is `required` but no `key` is given: the run could not be signed {SEE_ARTIFACTS}"),
                "add `key: ~/.config/yardstick/signing.key` (create one with `yardstick keygen`), or set `signing: optional`");
        }
    } else if spec.mode == Some(Mode::Publication) {
        cx.warn("provenance-signing-key", "/spec/mode",
            format!("publication mode without `provenance`: results will not be signed, and publication-grade work requires signed provenance {SEE_ARTIFACTS}"),
            "add `provenance: {signing: required, key: ~/.config/yardstick/signing.key}`");
    }
}

fn gates(spec: &Spec, cx: &mut Ctx<'_, '_>) {
    let Some(g) = &spec.gates else { return };
    if spec.mode == Some(Mode::Exploratory) {
        cx.warn(
            "gates-tolerance",
            "/spec/gates",
            "exploratory runs never gate: `gates` will be reported but not enforced".into(),
            "use `mode: publication` for a run that gates",
        );
    }
    if let Some(t) = &g.tolerances {
        let all = [
            ("throughputDropPct", t.throughput_drop_pct),
            ("stepTimeIncreasePct", t.step_time_increase_pct),
            ("latencyIncreasePct", t.latency_increase_pct),
            ("memoryIncreasePct", t.memory_increase_pct),
            ("perplexityIncreasePct", t.perplexity_increase_pct),
            ("accuracyDropPoints", t.accuracy_drop_points),
            ("qualityDropPoints", t.quality_drop_points),
            ("tailIncreasePct", t.tail_increase_pct),
            ("costIncreasePct", t.cost_increase_pct),
        ];
        // (name shown, JSON pointer below /spec/gates/tolerances, value)
        let per_metric = t.metrics.iter().flatten().map(|(k, v)| {
            (
                format!("metrics.{k}"),
                format!("metrics/{}", k.replace('~', "~0").replace('/', "~1")),
                Some(*v),
            )
        });
        let all = all
            .iter()
            .map(|(k, v)| (k.to_string(), k.to_string(), *v))
            .chain(per_metric);
        for (name, ptr, v) in all {
            if let Some(v) = v
                && !(0.0..100.0).contains(&v)
            {
                cx.error(
                    "gates-tolerance",
                    &format!("/spec/gates/tolerances/{ptr}"),
                    format!("tolerance {name} is {v}; it must be in [0, 100)"),
                    "tolerances are percentages (points for accuracy and quality scores), e.g. 5 for a 5 % drop",
                );
            }
        }
    }
}

//! Importing the standard tools' output as a run: nccl-tests (`all_reduce_perf` and friends),
//! fio `--output-format=json` and McCalpin's STREAM. Their figures land in the same store,
//! warehouse and reports as ours, under the same names where they measure the same thing
//! (`memory.triad`, `storage.seq_read`) and under `nccl.<op>.busbw.<size>` /
//! `fio.<job>.<dir>` otherwise.
//!
//! One file is one run of the tool, so several files of the same job are the replicates of one
//! point (`import.<tool>`): each file's figures are a replicate's facts, and the aggregate is
//! the mean over files with a Student-t interval, exactly as `yardstick run` aggregates its
//! own replicates. The files are stored verbatim under `imports/` and hashed in the manifest.
//!
//! The machine the tool ran on is not necessarily this one (nccl-tests output usually comes
//! from a cluster), so the machine profile is never guessed: it comes from a `yardstick env
//! --json` capture taken there, from this machine when the caller says so, or from a given key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value, json};
use yardstick_spec::metrics::Measurement;
use yardstick_store::summary::RunSummary;
use yardstick_store::warehouse::{FactRow, PointRow, ReplicateRow};
use yardstick_store::{RunWriter, ToolInfo};
use yardstick_workloads::micro::MicroResult;
use yardstick_workloads::micro::ingest::{self, Format, IngestError};

use crate::facts::Figures;
use crate::{RunError, facts};

/// The tools whose output can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    /// nccl-tests (`all_reduce_perf`, `all_gather_perf`, ...).
    Nccl,
    /// fio JSON (`--output-format=json`).
    Fio,
    /// STREAM.
    Stream,
    /// genai-bench's experiment folder (one JSON per scenario and concurrency).
    #[serde(rename = "genai-bench")]
    GenaiBench,
    /// AIPerf's `profile_export_aiperf.json`.
    Aiperf,
    /// `vllm bench serve --save-result` JSON.
    #[serde(rename = "vllm-bench")]
    VllmBench,
    /// GuideLLM's `benchmarks.json`.
    Guidellm,
}

impl Tool {
    /// The short name (`nccl`, `fio`, `stream`, `genai-bench`, `aiperf`, `vllm-bench`,
    /// `guidellm`).
    pub fn name(self) -> &'static str {
        match self {
            Tool::Nccl => "nccl",
            Tool::Fio => "fio",
            Tool::Stream => "stream",
            Tool::GenaiBench => "genai-bench",
            Tool::Aiperf => "aiperf",
            Tool::VllmBench => "vllm-bench",
            Tool::Guidellm => "guidellm",
        }
    }

    /// The tool as its output calls itself.
    pub fn display(self) -> &'static str {
        match self {
            Tool::Nccl => "nccl-tests",
            Tool::Fio => "fio JSON",
            Tool::Stream => "STREAM",
            Tool::GenaiBench => "genai-bench",
            Tool::Aiperf => "AIPerf",
            Tool::VllmBench => "vllm bench serve",
            Tool::Guidellm => "GuideLLM",
        }
    }

    /// Whether the tool is an LLM-serving benchmark (imported by
    /// [`crate::import_serving::import`] as serve points).
    pub fn is_serving(self) -> bool {
        matches!(
            self,
            Tool::GenaiBench | Tool::Aiperf | Tool::VllmBench | Tool::Guidellm
        )
    }

    fn format(self) -> Option<Format> {
        match self {
            Tool::Nccl => Some(Format::Nccl),
            Tool::Fio => Some(Format::Fio),
            Tool::Stream => Some(Format::Stream),
            _ => None,
        }
    }

    /// Parses one file of this tool's output into results (the micro tools; a serving tool's
    /// output is parsed by [`crate::import_serving`]).
    pub fn parse(self, text: &str) -> Result<Vec<MicroResult>, IngestError> {
        match self {
            Tool::Nccl => Ok(ingest::nccl::parse(text)?.results()),
            Tool::Fio => Ok(ingest::fio::parse(text)?.results()),
            Tool::Stream => Ok(ingest::stream::parse(text)?.results()),
            _ => Err(IngestError::NotRecognised {
                tool: self.display(),
                reason: "a serving benchmark's output is imported as serve points".into(),
            }),
        }
    }
}

/// Where the machine profile of the imported run comes from.
#[derive(Debug, Clone)]
pub enum EnvSource {
    /// The tool ran on this machine: capture it now.
    Here,
    /// A `yardstick env --json` capture taken where the tool ran (its bytes).
    Capture(Vec<u8>),
    /// A machine-profile key given by the caller (no detailed capture).
    Profile(String),
    /// Unknown: the run has no machine profile (it cannot be gated against a baseline).
    Unknown,
}

/// One file to import.
#[derive(Debug, Clone)]
pub struct ImportFile {
    /// Its name as given (stored under `imports/`).
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// How to import.
pub struct ImportOptions {
    /// Store directory.
    pub store: PathBuf,
    /// Warehouse location when not the store's SQLite.
    pub warehouse: Option<String>,
    /// The tool.
    pub tool_info: ToolInfo,
    /// The run's benchmark name (`metadata.name`); default `import-<tool>[-<op>]`.
    pub name: Option<String>,
    /// Where the machine profile comes from.
    pub env: EnvSource,
    /// Confidence level of the interval over files.
    pub confidence_level: f64,
    /// Signs the imported run (DSSE/in-toto attestation), as `provenance.key` does for a run.
    pub key: Option<ed25519_dalek::SigningKey>,
}

/// One aggregated figure.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ImportedFigure {
    /// The point it is stored under.
    pub point: String,
    /// Result name, e.g. `nccl.all_reduce.busbw.8589934592`, `ttft_ms`.
    pub name: String,
    /// Statistic (`value`; `mean`, `p99`, ... of a serving distribution).
    pub statistic: String,
    /// Mean over files.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// Interval over files (from 2 files on).
    pub ci: Option<[f64; 2]>,
    /// Files that reported it.
    pub n: u64,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// Parameters of the figure (source, sizes, settings), from the first file.
    pub params: BTreeMap<String, Value>,
}

/// What an import produced.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ImportOutcome {
    /// Run id.
    pub run_id: String,
    /// Run directory.
    pub dir: PathBuf,
    /// Benchmark name.
    pub name: String,
    /// The tool.
    pub tool: Tool,
    /// The point the figures are stored under (the first, when several).
    pub point: String,
    /// Every point stored (a serving import: one per scenario and load level).
    pub points: Vec<String>,
    /// Files imported (replicates), in order.
    pub files: Vec<String>,
    /// Machine profile recorded, if any.
    pub machine_profile: Option<String>,
    /// Confidence level of the intervals.
    pub confidence_level: f64,
    /// Aggregated figures, in the tool's order.
    pub results: Vec<ImportedFigure>,
    /// Where the figures come from and how they differ from yardstick's own definitions.
    pub notes: Vec<String>,
    /// Things to know.
    pub warnings: Vec<String>,
}

impl ImportOutcome {
    /// The import as `yardstick import` prints it: the run, the machine profile, one row per
    /// figure with its interval, and the run directory. ANSI styles mark the name and the
    /// intervals; the caller strips them when the output is not a terminal.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out).expect("writing to a String");
        out
    }

    fn write_text(&self, out: &mut String) -> std::fmt::Result {
        use std::fmt::Write;
        let (b, x, d) = ("\x1b[1m", "\x1b[0m", "\x1b[2m");
        writeln!(
            out,
            "{b}{}{x}: {} file(s) of {} -> run {}",
            self.name,
            self.files.len(),
            self.tool.display(),
            self.run_id
        )?;
        writeln!(
            out,
            "  machine profile: {}",
            self.machine_profile.as_deref().unwrap_or("(none)")
        )?;
        let label = |r: &ImportedFigure| {
            if r.statistic == "value" {
                r.name.clone()
            } else {
                format!("{} {}", r.name, r.statistic)
            }
        };
        let width = self
            .results
            .iter()
            .map(|r| label(r).len())
            .max()
            .unwrap_or(0);
        let mut point: Option<&str> = None;
        // A serving import prints each distribution's mean, p50 and p99 (--json has them all).
        let shown = |r: &ImportedFigure| {
            !self.tool.is_serving()
                || matches!(
                    r.statistic.as_str(),
                    "value" | "mean" | "p50" | "p99" | "completed" | "failed"
                )
        };
        for r in self.results.iter().filter(|r| shown(r)) {
            if self.tool.is_serving() && point != Some(r.point.as_str()) {
                writeln!(out, "  {b}{}{x}", r.point)?;
                point = Some(r.point.as_str());
            }
            let ci = match r.ci {
                Some([lo, hi]) => format!(
                    "  {d}[{lo:.4}, {hi:.4}] {:.0}% CI, n={}{x}",
                    self.confidence_level * 100.0,
                    r.n
                ),
                None => format!("  {d}n={}{x}", r.n),
            };
            writeln!(
                out,
                "  {:width$}  {:>12.4} {:<6}{ci}",
                label(r),
                r.value,
                r.unit
            )?;
        }
        for n in &self.notes {
            writeln!(out, "  {d}note: {n}{x}")?;
        }
        writeln!(out, "  {}", self.dir.display())?;
        Ok(())
    }
}

/// The point id of an imported tool's figures.
pub fn point_id(tool: Tool) -> String {
    format!("import.{}", tool.name())
}

fn op_of(results: &[MicroResult]) -> Option<String> {
    results.iter().find_map(|r| {
        r.params
            .get("op")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

fn safe_name(name: &str) -> String {
    let base = std::path::Path::new(name)
        .file_name()
        .map_or_else(|| name.to_owned(), |s| s.to_string_lossy().into_owned());
    base.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The stored `spec.yaml` of an import: not a BenchmarkRun (nothing was planned or run by
/// yardstick), a record of what was imported.
fn import_record(name: &str, tool: Tool, files: &[(String, String)]) -> String {
    let mut s = String::new();
    s.push_str(
        "# Imported with `yardstick import`: the figures come from the tool's own output,\n",
    );
    s.push_str("# stored verbatim under imports/ in this run directory.\n");
    s.push_str("apiVersion: yardstick/v1\nkind: Import\n");
    s.push_str(&format!("metadata:\n  name: {}\n", yaml_str(name)));
    s.push_str(&format!(
        "source:\n  tool: {}\n  files:\n",
        yaml_str(tool.display())
    ));
    for (file, sha) in files {
        s.push_str(&format!(
            "    - {{name: {}, sha256: {sha}}}\n",
            yaml_str(file)
        ));
    }
    s
}

fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).expect("JSON string")
}

/// Parses `files` as `tool` output and stores them as one complete run: the files verbatim,
/// one replicate per file, facts in the warehouse, a `summary.json`, a sealed manifest.
/// Nothing is written when a file does not parse.
pub fn import(
    tool: Tool,
    files: &[ImportFile],
    opts: &ImportOptions,
) -> Result<ImportOutcome, RunError> {
    if files.is_empty() {
        return Err(RunError::Invalid("no file to import".into()));
    }
    if !(opts.confidence_level > 0.0 && opts.confidence_level < 1.0) {
        return Err(RunError::Invalid(format!(
            "the confidence level must be in (0, 1), got {}",
            opts.confidence_level
        )));
    }
    let mut warnings = Vec::new();
    // Parse everything before writing anything.
    let mut parsed: Vec<Vec<MicroResult>> = Vec::with_capacity(files.len());
    for f in files {
        let text = std::str::from_utf8(&f.bytes)
            .map_err(|_| RunError::Invalid(format!("{}: not UTF-8 text", f.name)))?;
        let results = tool.parse(text).map_err(|e| {
            let hint = match ingest::detect(text) {
                Some(other) if Some(other) != tool.format() => format!(
                    " (it looks like {} output)",
                    match other {
                        Format::Nccl => "nccl-tests",
                        Format::Fio => "fio JSON",
                        Format::Stream => "STREAM",
                    }
                ),
                _ => String::new(),
            };
            RunError::Invalid(format!("{}: {e}{hint}", f.name))
        })?;
        if results.is_empty() {
            return Err(RunError::Invalid(format!(
                "{}: no figures in this {} output",
                f.name,
                tool.display()
            )));
        }
        parsed.push(results);
    }
    let ops: Vec<Option<String>> = parsed.iter().map(|r| op_of(r)).collect();
    if ops.iter().any(|o| o != &ops[0]) {
        warnings.push(format!(
            "the files report different collectives ({}): each figure is pooled over the files \
             that have it",
            ops.iter()
                .map(|o| o.clone().unwrap_or_else(|| "-".into()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if files.len() < 3 {
        warnings.push(format!(
            "{} file(s): the methodology asks for >= 3 runs of the tool for an interval",
            files.len()
        ));
    }
    let name = opts.name.clone().unwrap_or_else(|| match &ops[0] {
        Some(op) if tool == Tool::Nccl => format!("import-nccl-{op}"),
        _ => format!("import-{}", tool.name()),
    });

    let stored: Vec<(String, String)> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            (
                format!("imports/{i}-{}", safe_name(&f.name)),
                yardstick_store::fsutil::sha256_bytes(&f.bytes),
            )
        })
        .collect();
    let record = import_record(
        &name,
        tool,
        &files
            .iter()
            .zip(&stored)
            .map(|(f, (_, sha))| (f.name.clone(), sha.clone()))
            .collect::<Vec<_>>(),
    );

    let point = point_id(tool);
    let work = json!({
        "import": tool.display(),
        "files": files.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
    });
    let input_files: Vec<(String, &[u8])> = stored
        .iter()
        .zip(files)
        .map(|((rel, _), f)| (rel.clone(), f.bytes.as_slice()))
        .collect();
    let points = [StoredPoint {
        id: point.clone(),
        layer: "micro".into(),
        kind: tool.name().into(),
        work: work.clone(),
        replicates: parsed
            .iter()
            .zip(&stored)
            .map(|(results, (rel, _))| StoredReplicate {
                summary: replicate_summary(results),
                figures: Figures::new(replicate_measurements(results)),
                artifact: rel.clone(),
                results: results
                    .iter()
                    .map(|r| {
                        json!({
                            "name": r.name, "value": r.value, "unit": r.unit, "params": r.params,
                        })
                    })
                    .collect(),
            })
            .collect(),
    }];
    let written = write_run(
        opts,
        &name,
        &record,
        &input_files,
        &points,
        files.len(),
        &[],
        &mut warnings,
    )?;
    let aggregate = written.aggregate;
    let figures = figures(&point, &parsed, &aggregate);
    Ok(ImportOutcome {
        run_id: written.run_id,
        dir: written.dir,
        name,
        tool,
        point: point.clone(),
        points: vec![point],
        files: files.iter().map(|f| f.name.clone()).collect(),
        machine_profile: written.machine_profile,
        confidence_level: opts.confidence_level,
        results: figures,
        notes: Vec::new(),
        warnings,
    })
}

/// One point of an imported run.
pub(crate) struct StoredPoint {
    pub id: String,
    pub layer: String,
    pub kind: String,
    pub work: Value,
    pub replicates: Vec<StoredReplicate>,
}

/// One replicate of an imported point: its summary, its figures (its facts) and the input file
/// it came from.
pub(crate) struct StoredReplicate {
    pub summary: Value,
    pub figures: Figures,
    pub artifact: String,
    pub results: Vec<Value>,
}

/// What [`write_run`] stored.
pub(crate) struct Written {
    pub run_id: String,
    pub dir: PathBuf,
    pub machine_profile: Option<String>,
    pub aggregate: Vec<FactRow>,
}

/// Stores an import as one complete run: the input files verbatim (`imports/...`), the
/// machine profile, one result record and facts per replicate, the aggregate facts, a
/// `summary.json` (with `notes`), the notes and warnings in the manifest, and the sealed
/// manifest. Shared by every importer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_run(
    opts: &ImportOptions,
    name: &str,
    record: &str,
    files: &[(String, &[u8])],
    points: &[StoredPoint],
    replicates: usize,
    notes: &[String],
    warnings: &mut Vec<String>,
) -> Result<Written, RunError> {
    crate::check_admitted(&opts.store, opts.key.as_ref(), crate::Writer::Import)?;
    // The machine profile.
    let (env_bytes, profile) = match &opts.env {
        EnvSource::Here => {
            let env = yardstick_env::capture(&yardstick_env::CaptureOptions {
                tool_version: Some(opts.tool_info.version.clone()),
                ..Default::default()
            });
            (
                Some(serde_json::to_vec_pretty(&env).expect("JSON")),
                Some(env.machine_profile),
            )
        }
        EnvSource::Capture(bytes) => {
            let v: Value = serde_json::from_slice(bytes).map_err(|e| {
                RunError::Invalid(format!("the environment capture is not JSON: {e}"))
            })?;
            let key = v["machine_profile"].as_str().ok_or_else(|| {
                RunError::Invalid(
                    "the environment capture has no `machine_profile` (write it with \
                     `yardstick env --json` on the machine the tool ran on)"
                        .into(),
                )
            })?;
            (Some(bytes.clone()), Some(key.to_owned()))
        }
        EnvSource::Profile(key) => {
            let env = json!({
                "machine_profile": key,
                "note": "machine profile given at import; no capture of the machine the tool ran on",
            });
            (
                Some(serde_json::to_vec_pretty(&env).expect("JSON")),
                Some(key.clone()),
            )
        }
        EnvSource::Unknown => {
            warnings.push(
                "no machine profile: the run cannot be gated against a baseline (say where the \
                 tool ran with --here, --env FILE or --profile KEY)"
                    .into(),
            );
            (None, None)
        }
    };

    let runs_dir = opts.store.join("runs");
    let mut writer = RunWriter::create(&runs_dir, name, record, opts.tool_info.clone())?;
    if let (Some(bytes), Some(key)) = (&env_bytes, &profile) {
        writer.set_env(bytes, key)?;
    }
    for (rel, bytes) in files {
        writer.add(rel, bytes, "import")?;
    }
    let location = opts
        .warehouse
        .clone()
        .unwrap_or_else(|| opts.store.display().to_string());
    let mut wh = yardstick_store::warehouse::open_warehouse(&location)?;
    let run_id = writer.run_id().to_string();
    let run_row = |m: &yardstick_store::Manifest| crate::facts::run_row(m, None, &location);
    wh.upsert_run(&run_row(writer.manifest()))?;
    wh.upsert_points(
        &points
            .iter()
            .map(|p| PointRow {
                run_id: run_id.clone(),
                point_id: p.id.clone(),
                layer: p.layer.clone(),
                kind: p.kind.clone(),
                params: p.work.clone(),
            })
            .collect::<Vec<_>>(),
    )?;

    let mut per_point = Vec::with_capacity(points.len());
    for p in points {
        let slug = crate::plan::slug(&p.id);
        let mut summaries = Vec::with_capacity(p.replicates.len());
        for (i, r) in p.replicates.iter().enumerate() {
            let replicate = i as u32;
            let now = yardstick_env::now_rfc3339();
            let record = yardstick_store::record::ReplicateRecord {
                point: p.id.clone(),
                replicate,
                started_at: None,
                ended_at: None,
                samples: None,
                source: Some(r.artifact.clone()),
                summary: r.summary.clone(),
                figures: Some(r.figures.clone()),
                results: r.results.clone(),
            };
            writer.add(
                &format!("results/{slug}/r{replicate}.json"),
                &record.to_bytes(),
                "result",
            )?;
            wh.upsert_facts(&facts::replicate_facts(
                &run_id,
                &p.id,
                replicate,
                &r.figures,
                Some(&r.artifact),
            ))?;
            wh.upsert_replicate(&ReplicateRow {
                run_id: run_id.clone(),
                point_id: p.id.clone(),
                replicate,
                status: yardstick_store::ReplicateStatus::Complete,
                started_at: now.clone(),
                ended_at: Some(now),
                artifact: Some(r.artifact.clone()),
            })?;
            summaries.push(Some(r.figures.clone()));
        }
        per_point.push((p.id.clone(), summaries));
    }
    let aggregate = facts::aggregate(&run_id, &per_point, opts.confidence_level);
    wh.upsert_facts(&aggregate)?;
    let summary = summary_json(
        name,
        points,
        replicates,
        opts.confidence_level,
        &aggregate,
        notes,
    );
    writer.add(
        "summary.json",
        &serde_json::to_vec_pretty(&summary).expect("JSON"),
        "summary",
    )?;
    for n in notes.iter().chain(warnings.iter()) {
        writer.note(n.clone())?;
    }
    let m = writer.complete(opts.key.as_ref())?;
    wh.upsert_run(&run_row(&m))?;
    Ok(Written {
        run_id,
        dir: runs_dir.join(&m.run_id),
        machine_profile: m.machine_profile.clone(),
        aggregate,
    })
}

/// A replicate summary in the shape the micro executor writes:
/// `{"<name>": {"value": v}, "units": {"<name>": unit}}`.
fn replicate_summary(results: &[MicroResult]) -> Value {
    let mut summary = serde_json::Map::new();
    let mut units = serde_json::Map::new();
    for r in results {
        let mut stats = serde_json::Map::new();
        stats.insert("value".into(), json!(r.value));
        // STREAM reports its best and worst times too.
        if r.max != r.value || r.min != r.value {
            stats.insert("min".into(), json!(r.min));
            stats.insert("max".into(), json!(r.max));
        }
        summary.insert(r.name.clone(), stats.into());
        units.insert(r.name.clone(), r.unit.clone().into());
    }
    summary.insert("units".into(), units.into());
    summary.into()
}

/// The figures of one imported file: each result's value (and its best and worst when the
/// tool reports them), in the result's unit.
fn replicate_measurements(results: &[MicroResult]) -> Vec<Measurement> {
    let mut out = Vec::new();
    for r in results {
        let mut stats = vec![("value", r.value)];
        if r.max != r.value || r.min != r.value {
            stats.extend([("min", r.min), ("max", r.max)]);
        }
        for (s, v) in stats {
            out.push(Measurement::stat(&r.name, s, v).in_unit(Some(&r.unit)));
        }
    }
    out
}

fn figures(point: &str, parsed: &[Vec<MicroResult>], aggregate: &[FactRow]) -> Vec<ImportedFigure> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for r in parsed.iter().flatten() {
        if !seen.insert(r.name.clone()) {
            continue;
        }
        let Some(f) = aggregate
            .iter()
            .find(|f| f.metric == r.name && f.statistic == "value")
        else {
            continue;
        };
        out.push(ImportedFigure {
            point: point.to_string(),
            name: r.name.clone(),
            statistic: "value".into(),
            value: f.value,
            unit: f.unit.clone(),
            ci: f.ci_lo.zip(f.ci_hi).map(|(a, b)| [a, b]),
            n: f.n,
            higher_is_better: r.higher_is_better,
            params: r.params.clone(),
        });
    }
    out
}

fn summary_json(
    name: &str,
    points: &[StoredPoint],
    replicates: usize,
    level: f64,
    aggregate: &[FactRow],
    notes: &[String],
) -> RunSummary {
    let mut summary = RunSummary::of(
        name,
        replicates as u32,
        level,
        points
            .iter()
            .map(|p| (p.id.as_str(), p.layer.as_str(), &p.work)),
        aggregate,
    );
    if !notes.is_empty() {
        summary.notes = Some(notes.to_vec());
    }
    summary
}

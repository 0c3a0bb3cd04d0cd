//! Roofline placement and bottleneck classification (docs/methodology.md#bottleneck-taxonomy),
//! and the comparative roofline of two machines (docs/methodology.md#comparing-machines).
//!
//! The ceilings come from measurements (`gemm.f32.peak`, `memory.triad`, nccl-tests busbw,
//! storage or network throughput) or from a datasheet; the workload gives its FLOPs and bytes
//! per step (from the training analysis, or stated). [`place`] puts it on the roofline:
//! arithmetic intensity I = FLOPs / bytes, ridge point R = peak / bandwidth, attainable
//! performance min(peak, bandwidth · I). [`classify`] names the bottleneck with its evidence,
//! checking the causes that a roofline cannot see first — waiting for input, collectives,
//! queueing — because "do not over-index on GPU utilisation": a step that waits for data is
//! input-bound however its kernels would sit on the roofline.
//!
//! **GPU ceilings.** When the micro results hold figures of a GPU (any result named `gpu.…`,
//! or `gpu<i>.…` on a node with several), the workload is taken to run on that GPU and the
//! ceilings are the GPU's alone ([`Ceilings::from_micro_gpu`]): the peak is
//! `gpu.gemm.<dtype>.peak` (else the best `gpu.gemm.<dtype>.<N>`) of the workload's
//! precision, the bandwidth `gpu.hbm.copy`. CPU figures in the same results are then not used,
//! and a GPU peak is never paired with a CPU bandwidth or the reverse: GPU figures that lack
//! one of the two give no ceilings rather than a mixed roofline. Results without GPU figures
//! keep the CPU path (`gemm.<dtype>.<N>`, `memory.triad`). A caller that knows better — a CPU
//! workload on a GPU node — names the device with [`Target`] ([`Ceilings::from_micro_on`]).
//! With several GPUs each ceiling is the lowest of the GPUs' figures: a synchronised job runs
//! at the pace of its slowest device (`yardstick nodes check` is where a slow one is found).

use serde::{Deserialize, Serialize};

/// The ceilings of one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ceilings {
    /// What they describe (a machine profile, or "datasheet H100 SXM").
    pub label: String,
    /// Peak compute, FLOP/s.
    pub peak_flops: f64,
    /// Memory bandwidth, bytes/s.
    pub memory_bw: f64,
    /// Interconnect bus bandwidth of collectives (nccl-tests busbw peak), bytes/s.
    pub link_bw: Option<f64>,
}

/// Which micro results [`Ceilings::from_micro`] took its figures from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CeilingSources {
    /// The GEMM result of the peak, e.g. `gemm.f32.2048`.
    pub peak: String,
    /// The bandwidth result, e.g. `memory.triad`.
    pub memory: String,
    /// The collective result of the link peak, e.g. `nccl.all_reduce.busbw.8589934592`.
    pub link: Option<String>,
    /// Why the peak is not of the workload's own element type, when it is not (a bf16
    /// workload on a CPU without a bf16 GEMM figure gets the f32 peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The GEMM element type (`f32`, `bf16`, `f64`, `f16`) of a workload precision as the spec
/// and `--dtype` name it (`fp32`, `tf32`, `bf16`, `mixed`, ...); `None` for types without a
/// CPU GEMM figure (fp8, int8, ...).
pub fn gemm_dtype(precision: &str) -> Option<&'static str> {
    match precision.to_ascii_lowercase().as_str() {
        "fp32" | "f32" | "float32" | "tf32" => Some("f32"),
        "fp64" | "f64" | "float64" => Some("f64"),
        "bf16" | "bfloat16" | "mixed" => Some("bf16"),
        "fp16" | "f16" | "half" => Some("f16"),
        _ => None,
    }
}

/// The GPU GEMM types (`bf16`, `fp16`, `tf32`, `fp8`, as the GPU micro layer names them) whose
/// peak bounds a workload of `precision`, in order of preference: its own type first, then the
/// types it falls back to when the GPU has no figure of its own type. Empty for types without
/// a GPU GEMM figure (fp64, int8, ...).
///
/// fp32 maps to tf32: on a GPU, fp32 matrix products reach tensor cores only as tf32, so the
/// tf32 peak bounds them (and overstates a workload that keeps TF32 off). fp8 falls back to
/// bf16 then fp16 (a GPU without fp8 tensor cores runs fp8 models' GEMMs in 16-bit), bf16 and
/// fp16 to each other (tensor cores run both at one rate).
pub fn gpu_gemm_dtypes(precision: &str) -> &'static [&'static str] {
    match precision.to_ascii_lowercase().as_str() {
        "fp8" | "f8" | "e4m3" | "e5m2" => &["fp8", "bf16", "fp16"],
        "bf16" | "bfloat16" | "mixed" => &["bf16", "fp16"],
        "fp16" | "f16" | "half" => &["fp16", "bf16"],
        "tf32" | "fp32" | "f32" | "float32" => &["tf32"],
        _ => &[],
    }
}

/// The device prefix and the rest of a GPU micro result's name: `("gpu", "hbm.copy")` for
/// `gpu.hbm.copy`, `("gpu1", "gemm.bf16.peak")` for `gpu1.gemm.bf16.peak` (a node with several
/// GPUs numbers them). `None` for any other name.
pub fn split_gpu(name: &str) -> Option<(&str, &str)> {
    let (device, rest) = name.split_once('.')?;
    let index = device.strip_prefix("gpu")?;
    (index.bytes().all(|b| b.is_ascii_digit()) && !rest.is_empty()).then_some((device, rest))
}

/// Which device's micro figures give the ceilings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Target {
    /// The GPU's when the results hold any GPU figure (`gpu.…`, `gpu<i>.…`), else the CPU's.
    #[default]
    Auto,
    /// The CPU's (`gemm.<dtype>.<N>`, `memory.triad`), whatever else the results hold.
    Cpu,
    /// The GPU's (`gpu.gemm.<dtype>.peak`, `gpu.hbm.copy`) or none.
    Gpu,
}

/// Whether micro results hold figures of a GPU (any `gpu.…` or `gpu<i>.…` name).
pub fn has_gpu_figures<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    names.into_iter().any(|n| split_gpu(n).is_some())
}

/// Converts a throughput in `unit` to per-second base units (FLOP/s or bytes/s).
fn scale(unit: &str) -> Option<f64> {
    match unit {
        "FLOP/s" | "B/s" => Some(1.0),
        "KB/s" => Some(1e3),
        "MFLOP/s" | "MB/s" => Some(1e6),
        "GFLOP/s" | "GB/s" => Some(1e9),
        "TFLOP/s" | "TB/s" => Some(1e12),
        "PFLOP/s" | "PB/s" => Some(1e15),
        "MiB/s" => Some(1_048_576.0),
        "GiB/s" => Some(1_073_741_824.0),
        _ => None,
    }
}

impl Ceilings {
    /// Ceilings from micro-benchmark results `(name, value, unit)` of one machine, named as
    /// `yardstick bench micro` and `yardstick import` name them: the peak is the best
    /// `gemm.<dtype>.<n>` (the GEMM of the workload's element type, e.g. `f32`), the memory
    /// bandwidth `memory.triad` (STREAM's figure of merit), the link peak the best
    /// `nccl.*.busbw.<size>` when nccl-tests output was imported. `None` without a GEMM or a
    /// triad figure.
    pub fn from_micro<'a>(
        label: impl Into<String>,
        dtype: &str,
        results: impl IntoIterator<Item = (&'a str, f64, &'a str)>,
    ) -> Option<(Ceilings, CeilingSources)> {
        let mut peak: Option<(f64, String)> = None;
        let mut mem: Option<(f64, String)> = None;
        let mut link: Option<(f64, String)> = None;
        let gemm_prefix = format!("gemm.{dtype}.");
        let better =
            |slot: &Option<(f64, String)>, v: f64| slot.as_ref().is_none_or(|(b, _)| v > *b);
        for (name, value, unit) in results {
            let Some(k) = scale(unit) else { continue };
            let v = value * k;
            if !(v.is_finite() && v > 0.0) {
                continue;
            }
            let size_suffix = |p: &str| {
                name.strip_prefix(p)
                    .is_some_and(|rest| rest.parse::<u64>().is_ok())
            };
            if size_suffix(&gemm_prefix) && better(&peak, v) {
                peak = Some((v, name.to_owned()));
            } else if name == yardstick_spec::metrics::id::MEMORY_TRIAD && better(&mem, v) {
                mem = Some((v, name.to_owned()));
            } else if is_busbw_size(name) && better(&link, v) {
                link = Some((v, name.to_owned()));
            }
        }
        let (peak_flops, peak_name) = peak?;
        let (memory_bw, mem_name) = mem?;
        Some((
            Ceilings {
                label: label.into(),
                peak_flops,
                memory_bw,
                link_bw: link.as_ref().map(|l| l.0),
            },
            CeilingSources {
                peak: peak_name,
                memory: mem_name,
                link: link.map(|l| l.1),
                note: None,
            },
        ))
    }

    /// [`Ceilings::from_micro`] for a workload of `precision` (`fp32`, `bf16`, `mixed`, ...):
    /// the peak of its GEMM element type — the measured bf16 GEMM for a bf16 workload. A
    /// bf16 or f16 workload without a figure of its own type (a CPU without `avx512_bf16`
    /// lists `gemm.bf16` as skipped) falls back to the f32 peak, said so in `note`: without
    /// the instructions, the CPU does that arithmetic in f32 units, so f32 is its ceiling.
    /// `None` when neither is there, or the precision has no CPU GEMM.
    ///
    /// Results that hold GPU figures give the GPU's ceilings instead ([`Target::Auto`]; see
    /// the module documentation and [`Ceilings::from_micro_gpu`]).
    pub fn from_micro_for<'a>(
        label: impl Into<String>,
        precision: &str,
        results: impl IntoIterator<Item = (&'a str, f64, &'a str)>,
    ) -> Option<(Ceilings, CeilingSources)> {
        Self::from_micro_on(label, precision, Target::Auto, results)
    }

    /// The ceilings of `target`'s figures for a workload of `precision`: the GPU's
    /// ([`Ceilings::from_micro_gpu`]) or the CPU's (the f32 fallback of
    /// [`Ceilings::from_micro_for`]); [`Target::Auto`] picks the GPU when the results hold any
    /// GPU figure, and then never falls back to the CPU's.
    pub fn from_micro_on<'a>(
        label: impl Into<String>,
        precision: &str,
        target: Target,
        results: impl IntoIterator<Item = (&'a str, f64, &'a str)>,
    ) -> Option<(Ceilings, CeilingSources)> {
        let results: Vec<(&str, f64, &str)> = results.into_iter().collect();
        let gpu = match target {
            Target::Auto => has_gpu_figures(results.iter().map(|r| r.0)),
            Target::Cpu => false,
            Target::Gpu => true,
        };
        if gpu {
            Self::from_micro_gpu(label, precision, results)
        } else {
            Self::from_micro_cpu(label, precision, results)
        }
    }

    /// The GPU's ceilings for a workload of `precision`, from the GPU micro layer's results:
    /// the peak is `gpu.gemm.<dtype>.peak` — else the best `gpu.gemm.<dtype>.<N>` — of the first
    /// type of [`gpu_gemm_dtypes`] that has a figure (a fallback type, or an fp32 workload
    /// bounded by the tf32 peak, is said so in `note`), the bandwidth `gpu.hbm.copy` (bytes
    /// read plus bytes written per second, as the roofline counts bytes moved), the link peak
    /// the best nccl-tests busbw as on the CPU path. On a node with several GPUs (`gpu0.…`,
    /// `gpu1.…`) each ceiling is the lowest of the GPUs that measured it, said so in `note`.
    /// `None` without a GEMM figure of a usable type or without `gpu.hbm.copy`.
    pub fn from_micro_gpu<'a>(
        label: impl Into<String>,
        precision: &str,
        results: impl IntoIterator<Item = (&'a str, f64, &'a str)>,
    ) -> Option<(Ceilings, CeilingSources)> {
        use std::collections::BTreeMap;
        type Best = Option<(f64, String)>;
        #[derive(Default)]
        struct Device {
            /// dtype -> (`.peak`, best `.<N>`)
            gemm: BTreeMap<String, (Best, Best)>,
            copy: Best,
        }
        let better = |slot: &Best, v: f64| slot.as_ref().is_none_or(|(b, _)| v > *b);
        let mut devices: BTreeMap<&str, Device> = BTreeMap::new();
        let mut link: Best = None;
        for (name, value, unit) in results {
            let Some(k) = scale(unit) else { continue };
            let v = value * k;
            if !(v.is_finite() && v > 0.0) {
                continue;
            }
            if is_busbw_size(name) && better(&link, v) {
                link = Some((v, name.to_owned()));
                continue;
            }
            let Some((device, rest)) = split_gpu(name) else {
                continue;
            };
            let d = devices.entry(device).or_default();
            let parts: Vec<&str> = rest.split('.').collect();
            match parts.as_slice() {
                ["hbm", "copy"] => d.copy = Some((v, name.to_owned())),
                ["gemm", dtype, size] => {
                    let (peak, best) = d.gemm.entry((*dtype).to_owned()).or_default();
                    if *size == "peak" {
                        *peak = Some((v, name.to_owned()));
                    } else if size.parse::<u64>().is_ok() && better(best, v) {
                        *best = Some((v, name.to_owned()));
                    }
                }
                _ => {}
            }
        }
        // The lowest over the devices that have a figure: (value, name, how many had one).
        fn lowest<'d>(
            figures: impl Iterator<Item = &'d (f64, String)>,
        ) -> Option<((f64, String), usize)> {
            let all: Vec<&(f64, String)> = figures.collect();
            let low = all.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
            Some(((*low).clone(), all.len()))
        }
        let chain = gpu_gemm_dtypes(precision);
        let (dtype, (peak, peak_devices)) = chain.iter().find_map(|t| {
            let per_device = devices.values().filter_map(|d| {
                let (peak, best) = d.gemm.get(*t)?;
                peak.as_ref().or(best.as_ref())
            });
            lowest(per_device).map(|p| (*t, p))
        })?;
        let (memory, memory_devices) = lowest(devices.values().filter_map(|d| d.copy.as_ref()))?;
        let mut notes = Vec::new();
        let own = chain[0];
        if dtype != own {
            notes.push(format!(
                "no gpu.gemm.{own} figure for this {precision} workload: the {dtype} GEMM peak \
                 is the ceiling ({})",
                if own == "fp8" {
                    "a GPU without fp8 tensor cores runs fp8 models' matrix products in 16 bits"
                } else {
                    "tensor cores run bf16 and fp16 at the same rate"
                }
            ));
        } else if !precision.eq_ignore_ascii_case("tf32") && own == "tf32" {
            notes.push(format!(
                "the tf32 GEMM peak bounds this {precision} workload: on the GPU, fp32 matrix \
                 products reach tensor cores only as tf32 (with TF32 off they run well below it)"
            ));
        }
        let gpus = peak_devices.max(memory_devices);
        if gpus > 1 {
            notes.push(format!(
                "each ceiling is the lowest of {gpus} GPUs' figures: a synchronised job runs at \
                 the pace of its slowest device"
            ));
        }
        Some((
            Ceilings {
                label: label.into(),
                peak_flops: peak.0,
                memory_bw: memory.0,
                link_bw: link.as_ref().map(|l| l.0),
            },
            CeilingSources {
                peak: peak.1,
                memory: memory.1,
                link: link.map(|l| l.1),
                note: (!notes.is_empty()).then(|| notes.join("; ")),
            },
        ))
    }

    /// The CPU path of [`Ceilings::from_micro_for`].
    fn from_micro_cpu(
        label: impl Into<String>,
        precision: &str,
        results: Vec<(&str, f64, &str)>,
    ) -> Option<(Ceilings, CeilingSources)> {
        let dtype = gemm_dtype(precision)?;
        let label = label.into();
        if let Some(found) = Self::from_micro(label.clone(), dtype, results.iter().copied()) {
            return Some(found);
        }
        if dtype != "bf16" && dtype != "f16" {
            return None;
        }
        let (c, mut src) = Self::from_micro(label, "f32", results)?;
        src.note = Some(format!(
            "no gemm.{dtype} figure for this {precision} workload: the f32 GEMM peak is the \
             ceiling (a CPU without {dtype} instructions computes in f32)"
        ));
        Some((c, src))
    }

    /// The ridge point, FLOP/byte.
    pub fn ridge(&self) -> f64 {
        self.peak_flops / self.memory_bw
    }
}

/// Whether `name` is an nccl-tests bus bandwidth at one message size
/// (`nccl.<op>.busbw.<bytes>`).
fn is_busbw_size(name: &str) -> bool {
    name.starts_with("nccl.")
        && name
            .split('.')
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w[0] == "busbw" && w[1].parse::<u64>().is_ok())
}

/// The roof a workload sits under: memory bandwidth below the ridge point, peak compute at or
/// above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Roof {
    /// Below the ridge point: memory bandwidth limits it.
    Memory,
    /// At or above the ridge point: peak compute limits it.
    Compute,
}

impl Roof {
    /// `memory` or `compute`, as it is written.
    pub fn as_str(self) -> &'static str {
        match self {
            Roof::Memory => "memory",
            Roof::Compute => "compute",
        }
    }
}

/// Where a workload sits on a roofline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Placement {
    /// Arithmetic intensity, FLOP/byte.
    pub intensity: f64,
    /// Ridge point of the machine, FLOP/byte.
    pub ridge: f64,
    /// min(peak, bandwidth · intensity), FLOP/s.
    pub attainable_flops: f64,
    /// `memory` below the ridge, `compute` at or above it.
    pub roof: Roof,
    /// Achieved FLOP/s, when a step time was given.
    pub achieved_flops: Option<f64>,
    /// Achieved / attainable.
    pub efficiency: Option<f64>,
}

/// Places a workload of `flops` and `bytes` per step (and, optionally, its measured step time)
/// on the roofline of `c`. `None` when an input is not positive and finite.
pub fn place(c: &Ceilings, flops: f64, bytes: f64, step_s: Option<f64>) -> Option<Placement> {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    if !(ok(flops) && ok(bytes) && ok(c.peak_flops) && ok(c.memory_bw)) {
        return None;
    }
    let intensity = flops / bytes;
    let ridge = c.peak_flops / c.memory_bw;
    let attainable = c.peak_flops.min(c.memory_bw * intensity);
    let achieved = step_s.filter(|s| ok(*s)).map(|s| flops / s);
    Some(Placement {
        intensity,
        ridge,
        attainable_flops: attainable,
        roof: if intensity < ridge {
            Roof::Memory
        } else {
            Roof::Compute
        },
        achieved_flops: achieved,
        efficiency: achieved.map(|a| a / attainable),
    })
}

/// What one step (or one request) of a workload was observed to do. Every field is optional;
/// the more is given, the more causes can be told apart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Observation {
    /// FLOPs per step.
    pub flops: Option<f64>,
    /// Memory bytes moved per step.
    pub bytes: Option<f64>,
    /// Step time, s.
    pub step_s: Option<f64>,
    /// Time per step waiting for input (data loader, storage, network), s.
    pub data_wait_s: Option<f64>,
    /// Time per step in collectives not overlapped with compute, s.
    pub comm_s: Option<f64>,
    /// Achieved collective bus bandwidth, bytes/s.
    pub comm_busbw: Option<f64>,
    /// Time requests spend queued or being scheduled (serving, job start), s.
    pub queue_s: Option<f64>,
    /// Time requests spend being served, s.
    pub service_s: Option<f64>,
    /// The wall time `queue_s` and `service_s` are parts of, when they describe a whole job
    /// run (start-up and teardown against the steps) rather than requests. The control-plane
    /// share is then `queue_s / wall_s`, and it is checked before the per-step causes: when
    /// most of a job's wall time is spent outside its steps, no step is the bottleneck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

/// The bottleneck classes of docs/methodology.md#bottleneck-taxonomy (memory split out of
/// compute, as a roofline does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    /// Arithmetic throughput: at or above the ridge point.
    Compute,
    /// Memory bandwidth: below the ridge point.
    Memory,
    /// Collectives and interconnect.
    Communication,
    /// Data loading, storage, network input.
    Input,
    /// Scheduling, queueing, job start-up.
    ControlPlane,
    /// Not enough evidence.
    Undetermined,
}

impl Bottleneck {
    /// Its name as it is written (`compute`, `control-plane`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Bottleneck::Compute => "compute",
            Bottleneck::Memory => "memory",
            Bottleneck::Communication => "communication",
            Bottleneck::Input => "input",
            Bottleneck::ControlPlane => "control-plane",
            Bottleneck::Undetermined => "undetermined",
        }
    }
}

/// A classification with the evidence behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Classification {
    /// The bottleneck.
    pub bottleneck: Bottleneck,
    /// Sentences a reader can check, strongest first.
    pub evidence: Vec<String>,
    /// The roofline placement, when FLOPs and bytes were given.
    pub placement: Option<Placement>,
}

impl Classification {
    /// Cites where a job's wall time went (`split`: start-up, steps, teardown): right under a
    /// control-plane verdict's own sentence, else last, with its `share` against the threshold.
    /// `wall` follows "the wall time" (` 2.000 s`, or empty when `split` names it).
    pub fn cite_job_split(&mut self, split: String, share: f64, wall: &str) {
        if self.bottleneck == Bottleneck::ControlPlane {
            self.evidence.insert(1, split);
        } else {
            self.evidence.push(format!(
                "start-up and teardown are {:.0}% of the wall time{wall} (control-plane \
                 threshold {:.0}%): {split}",
                share * 100.0,
                QUEUE_SHARE * 100.0
            ));
        }
    }
}

/// A trainer's input demand against a data loader's measured supply (the data-loader layer of
/// the same run): whether the loader, measured on its own, can feed the trainer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InputBalance {
    /// Samples per second the trainer would consume if input were free: its achieved rate,
    /// scaled up by the share of its step spent waiting for input when it reports that.
    pub demand_samples_per_s: f64,
    /// Samples per second the loader supplies in its steady state.
    pub supply_samples_per_s: f64,
    /// The loader point measured.
    pub supply_point: String,
    /// `supply / demand`: below 1 the trainer must wait for input.
    pub headroom: f64,
}

impl InputBalance {
    /// From the trainer's achieved `consumed` samples/s, its step time and input wait per step
    /// (when reported), and the loader's `supply` at `point`. `None` unless both rates are
    /// positive and finite.
    pub fn new(
        consumed: f64,
        step_s: Option<f64>,
        data_wait_s: Option<f64>,
        supply: f64,
        point: &str,
    ) -> Option<InputBalance> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !(ok(consumed) && ok(supply)) {
            return None;
        }
        let demand = match (step_s, data_wait_s) {
            (Some(step), Some(wait)) if ok(step) && wait >= 0.0 && wait < step => {
                consumed * step / (step - wait)
            }
            _ => consumed,
        };
        Some(InputBalance {
            demand_samples_per_s: demand,
            supply_samples_per_s: supply,
            supply_point: point.to_string(),
            headroom: supply / demand,
        })
    }

    /// Whether the loader supplies less than the trainer consumes.
    pub fn input_bound(&self) -> bool {
        self.headroom < 1.0
    }
}

impl Classification {
    /// Weighs a loader's measured supply against the trainer's demand: a loader that cannot keep
    /// up makes the step input-bound (both figures the evidence, strongest first); one that can
    /// is cited as evidence that input is not what limits the step.
    pub fn cite_input_supply(&mut self, b: &InputBalance) {
        let figures = format!(
            "the data loader ({}) supplies {:.1} samples/s against the {:.1} samples/s the \
             trainer consumes with input free",
            b.supply_point, b.supply_samples_per_s, b.demand_samples_per_s
        );
        if b.input_bound() {
            let sentence = format!(
                "{figures}: it covers {:.0}% of the demand, so steps wait for input",
                b.headroom * 100.0
            );
            if self.bottleneck == Bottleneck::ControlPlane {
                self.evidence.push(sentence);
            } else {
                self.bottleneck = Bottleneck::Input;
                self.evidence.insert(0, sentence);
            }
        } else if self.bottleneck == Bottleneck::Input {
            self.evidence.push(format!(
                "{figures} ({:.1}x): measured on its own the loader keeps up, so the wait comes \
                 from how the trainer runs it (fewer workers, contention for CPU, another source)",
                b.headroom
            ));
        } else {
            self.evidence.push(format!(
                "{figures} ({:.1}x): input is not the bottleneck",
                b.headroom
            ));
        }
    }
}

/// Share of step time waiting for input above which a step is input-bound.
pub const INPUT_SHARE: f64 = 0.2;
/// Share of step time in exposed collectives above which a step is communication-bound.
pub const COMM_SHARE: f64 = 0.3;
/// Lower exposed-communication share that suffices when the link is near its peak.
pub const COMM_SHARE_SATURATED: f64 = 0.15;
/// Fraction of the link peak that counts as saturated.
pub const LINK_SATURATED: f64 = 0.8;
/// Queue share of (queue + service) — or, for a job run, control-plane share of the wall time
/// (start-up and teardown) — at or above which the control plane is the bottleneck.
pub const QUEUE_SHARE: f64 = 0.5;

/// The control-plane verdict of a job run's start-up and teardown against its wall time.
fn job_control_plane(o: &Observation) -> Option<String> {
    let (q, s, w) = (o.queue_s?, o.service_s.unwrap_or(0.0), o.wall_s?);
    if !(w.is_finite() && w > 0.0 && q.is_finite()) || q / w < QUEUE_SHARE {
        return None;
    }
    Some(format!(
        "{:.0}% of the job's wall time ({q:.3} s of {w:.3} s) is start-up and teardown, against \
         {s:.3} s in its steps (control-plane threshold {:.0}%)",
        q / w * 100.0,
        QUEUE_SHARE * 100.0
    ))
}

/// The roofline sentences of a placement on `c`.
fn roofline_evidence(c: &Ceilings, p: &Placement) -> Vec<String> {
    let mut evidence = vec![format!(
        "arithmetic intensity {:.2} FLOP/B is {} the ridge point {:.2} FLOP/B of {}",
        p.intensity,
        if p.roof == Roof::Memory {
            "below"
        } else {
            "at or above"
        },
        p.ridge,
        c.label
    )];
    if let Some(e) = p.efficiency {
        evidence.push(format!(
            "achieved {:.3e} FLOP/s = {:.0}% of the attainable {:.3e} FLOP/s",
            p.achieved_flops.unwrap_or(0.0),
            e * 100.0,
            p.attainable_flops
        ));
    }
    evidence
}

/// Classifies the bottleneck of an observation on the machine `c`.
pub fn classify(c: &Ceilings, o: &Observation) -> Classification {
    let pct = |x: f64| x * 100.0;
    let placement = match (o.flops, o.bytes) {
        (Some(f), Some(b)) => place(c, f, b, o.step_s),
        _ => None,
    };
    let mut evidence = Vec::new();
    if let Some(e) = job_control_plane(o) {
        evidence.push(e);
        // Where the steps themselves sit still matters once the start-up is fixed.
        if let Some(p) = &placement {
            evidence.extend(
                roofline_evidence(c, p)
                    .into_iter()
                    .map(|e| format!("its steps: {e}")),
            );
        }
        return Classification {
            bottleneck: Bottleneck::ControlPlane,
            evidence,
            placement,
        };
    }
    let step = o.step_s.filter(|s| s.is_finite() && *s > 0.0);
    if let (Some(step), Some(wait)) = (step, o.data_wait_s) {
        let share = wait / step;
        if share >= INPUT_SHARE {
            evidence.push(format!(
                "{:.0}% of the step ({wait:.4} s of {step:.4} s) waits for input (threshold {:.0}%)",
                pct(share),
                pct(INPUT_SHARE)
            ));
            return Classification {
                bottleneck: Bottleneck::Input,
                evidence,
                placement,
            };
        }
    }
    if let (Some(step), Some(comm)) = (step, o.comm_s) {
        let share = comm / step;
        let saturation = match (o.comm_busbw, c.link_bw) {
            (Some(bw), Some(peak)) if peak > 0.0 => Some(bw / peak),
            _ => None,
        };
        let saturated = saturation.is_some_and(|s| s >= LINK_SATURATED);
        if share >= COMM_SHARE || (saturated && share >= COMM_SHARE_SATURATED) {
            evidence.push(format!(
                "{:.0}% of the step ({comm:.4} s) is in exposed collectives",
                pct(share)
            ));
            match (saturation, o.comm_busbw, c.link_bw) {
                (Some(s), Some(bw), Some(peak)) => evidence.push(format!(
                    "collective bus bandwidth {:.2} GB/s is {:.0}% of the link peak {:.2} GB/s{}",
                    bw / 1e9,
                    pct(s),
                    peak / 1e9,
                    if s >= LINK_SATURATED {
                        " (saturated: a faster link, not overlap, is the remedy)"
                    } else {
                        " (not saturated: overlap or larger buckets before a faster link)"
                    }
                )),
                (_, Some(bw), _) => evidence.push(format!(
                    "collective bus bandwidth {:.2} GB/s; no link peak to compare it with \
                     (import nccl-tests output of this machine)",
                    bw / 1e9
                )),
                _ => {}
            }
            return Classification {
                bottleneck: Bottleneck::Communication,
                evidence,
                placement,
            };
        }
    }
    if let (Some(q), Some(s), None) = (o.queue_s, o.service_s, o.wall_s)
        && q + s > 0.0
        && q / (q + s) >= QUEUE_SHARE
    {
        evidence.push(format!(
            "requests spend {q:.4} s queued or scheduled against {s:.4} s served ({:.0}% queueing)",
            pct(q / (q + s))
        ));
        return Classification {
            bottleneck: Bottleneck::ControlPlane,
            evidence,
            placement,
        };
    }
    match &placement {
        Some(p) => {
            evidence.extend(roofline_evidence(c, p));
            Classification {
                bottleneck: if p.roof == Roof::Memory {
                    Bottleneck::Memory
                } else {
                    Bottleneck::Compute
                },
                evidence,
                placement,
            }
        }
        None => {
            evidence.push(
                "neither time shares above their thresholds nor FLOPs and bytes per step were given"
                    .into(),
            );
            Classification {
                bottleneck: Bottleneck::Undetermined,
                evidence,
                placement: None,
            }
        }
    }
}

/// Two machines' rooflines at one workload's intensity.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RooflineComparison {
    /// The intensity compared at, FLOP/byte.
    pub intensity: f64,
    /// Attainable FLOP/s on A.
    pub attainable_a: f64,
    /// Attainable FLOP/s on B.
    pub attainable_b: f64,
    /// attainable_b / attainable_a.
    pub ratio_b_over_a: f64,
    /// The intensity where the two rooflines cross, when one machine has the higher peak and
    /// the other the higher bandwidth: below it the high-bandwidth machine wins.
    pub crossover_intensity: Option<f64>,
}

/// Compares two machines at `intensity`: high peak and low bandwidth against low peak and high
/// bandwidth (docs/methodology.md#comparing-machines).
pub fn compare(a: &Ceilings, b: &Ceilings, intensity: f64) -> Option<RooflineComparison> {
    let att = |c: &Ceilings| c.peak_flops.min(c.memory_bw * intensity);
    if !(intensity.is_finite() && intensity > 0.0) {
        return None;
    }
    let (aa, ab) = (att(a), att(b));
    if !(aa > 0.0 && ab > 0.0) {
        return None;
    }
    // With A higher in peak and B in bandwidth (or the reverse), the rooflines meet where the
    // sloped part of the low-bandwidth machine reaches the flat part of the low-peak machine:
    // I* = lower peak / lower bandwidth.
    let crossover = if (a.peak_flops - b.peak_flops) * (a.memory_bw - b.memory_bw) < 0.0 {
        Some(a.peak_flops.min(b.peak_flops) / a.memory_bw.min(b.memory_bw))
    } else {
        None
    };
    Some(RooflineComparison {
        intensity,
        attainable_a: aa,
        attainable_b: ab,
        ratio_b_over_a: ab / aa,
        crossover_intensity: crossover,
    })
}

/// Two machine profiles' rooflines side by side, over the intensities of the workloads that
/// matter (which machine wins depends on where the workload sits;
/// docs/methodology.md#comparing-machines).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProfileComparison {
    /// Machine A.
    pub a: Ceilings,
    /// Machine B.
    pub b: Ceilings,
    /// Ridge point of A, FLOP/byte.
    pub ridge_a: f64,
    /// Ridge point of B, FLOP/byte.
    pub ridge_b: f64,
    /// Where the rooflines cross (one machine has the higher peak, the other the higher
    /// bandwidth); below it the high-bandwidth machine wins.
    pub crossover_intensity: Option<f64>,
    /// One row per workload.
    pub workloads: Vec<WorkloadOnTwo>,
}

/// One workload on two rooflines.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WorkloadOnTwo {
    /// Its name.
    pub name: String,
    /// Its intensity, FLOP/byte.
    pub intensity: f64,
    /// Attainable FLOP/s on A and on B.
    pub attainable: [f64; 2],
    /// The roof it is under on A and on B (`memory` or `compute`).
    pub roof: [&'static str; 2],
    /// attainable B / attainable A.
    pub ratio_b_over_a: f64,
    /// `a`, `b`, or `tie` (within 1 %).
    pub faster: &'static str,
}

/// Compares two machine profiles for a set of named workload intensities (FLOP/byte).
/// `None` when a machine's ceilings are not positive or an intensity is not.
pub fn compare_profiles(
    a: &Ceilings,
    b: &Ceilings,
    workloads: &[(&str, f64)],
) -> Option<ProfileComparison> {
    let ok = |c: &Ceilings| c.peak_flops > 0.0 && c.memory_bw > 0.0;
    if !(ok(a) && ok(b)) {
        return None;
    }
    let mut rows = Vec::with_capacity(workloads.len());
    let mut crossover = None;
    for (name, intensity) in workloads {
        let c = compare(a, b, *intensity)?;
        crossover = c.crossover_intensity;
        let roof = |m: &Ceilings| {
            if *intensity < m.ridge() {
                "memory"
            } else {
                "compute"
            }
        };
        rows.push(WorkloadOnTwo {
            name: (*name).to_owned(),
            intensity: *intensity,
            attainable: [c.attainable_a, c.attainable_b],
            roof: [roof(a), roof(b)],
            ratio_b_over_a: c.ratio_b_over_a,
            faster: if (c.ratio_b_over_a - 1.0).abs() <= 0.01 {
                "tie"
            } else if c.ratio_b_over_a > 1.0 {
                "b"
            } else {
                "a"
            },
        });
    }
    if workloads.is_empty() && (a.peak_flops - b.peak_flops) * (a.memory_bw - b.memory_bw) < 0.0 {
        crossover = Some(a.peak_flops.min(b.peak_flops) / a.memory_bw.min(b.memory_bw));
    }
    Some(ProfileComparison {
        a: a.clone(),
        b: b.clone(),
        ridge_a: a.ridge(),
        ridge_b: b.ridge(),
        crossover_intensity: crossover,
        workloads: rows,
    })
}

/// FLOP/s or B/s with an SI prefix.
fn si(v: f64, unit: &str) -> String {
    let (d, p) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| v.abs() >= *d)
        .unwrap_or((1.0, ""));
    format!("{:.3} {p}{unit}", v / d)
}

/// A comparative roofline as `yardstick env compare` prints it: both machines' peak, bandwidth
/// and ridge, where the roofs cross, and per named workload what each attains. `profiles` and
/// `sources` are A's and B's machine profile and where their ceilings came from. ANSI styles
/// mark labels; the caller strips them when the output is not a terminal.
pub fn comparison_text(
    dtype: &str,
    profiles: [&str; 2],
    sources: [&str; 2],
    c: &ProfileComparison,
) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let (b, d, r) = ("\x1b[1m", "\x1b[2m", "\x1b[0m");
    // The bandwidth the sources name (`memory.triad` on a CPU, `gpu.hbm.copy` on a GPU).
    let bandwidth = match sources.map(|s| s.contains("hbm.copy")) {
        [true, true] => "gpu.hbm.copy",
        [false, false] => "memory.triad",
        _ => "memory.triad or gpu.hbm.copy",
    };
    let _ = writeln!(
        out,
        "{b}comparative roofline{r} {d}({} GEMM peak, {bandwidth} bandwidth){r}",
        dtype
    );
    let _ = writeln!(out, "{b}{:<10}{r} {:<44} B", "", "A");
    let _ = writeln!(
        out,
        "{b}{:<10}{r} {:<44} {}",
        "profile", profiles[0], profiles[1]
    );
    let _ = writeln!(
        out,
        "{b}{:<10}{r} {:<44} {}",
        "peak",
        si(c.a.peak_flops, "FLOP/s"),
        si(c.b.peak_flops, "FLOP/s")
    );
    let _ = writeln!(
        out,
        "{b}{:<10}{r} {:<44} {}",
        "bandwidth",
        si(c.a.memory_bw, "B/s"),
        si(c.b.memory_bw, "B/s")
    );
    let ridges = [
        format!("{:.3} FLOP/B", c.ridge_a),
        format!("{:.3} FLOP/B", c.ridge_b),
    ];
    let _ = writeln!(out, "{b}{:<10}{r} {:<44} {}", "ridge", ridges[0], ridges[1]);
    let _ = writeln!(out, "{d}A: {}{r}", sources[0]);
    let _ = writeln!(out, "{d}B: {}{r}", sources[1]);
    match c.crossover_intensity {
        Some(x) => {
            let high_bw = if c.b.memory_bw > c.a.memory_bw {
                "B"
            } else {
                "A"
            };
            let high_peak = if high_bw == "B" { "A" } else { "B" };
            let _ = writeln!(
                out,
                "the rooflines cross at {x:.3} FLOP/B: below it {high_bw} (higher bandwidth) \
                 attains more, above it {high_peak} (higher peak)"
            );
        }
        None => {
            let better = if c.b.peak_flops >= c.a.peak_flops && c.b.memory_bw >= c.a.memory_bw {
                "B"
            } else {
                "A"
            };
            let _ = writeln!(
                out,
                "the rooflines do not cross: {better} attains at least as much at every intensity"
            );
        }
    }
    if !c.workloads.is_empty() {
        let _ = writeln!(
            out,
            "{b}{:<16} {:>10} {:>20} {:>8} {:>20} {:>8} {:>7} {:>6}{r}",
            "workload", "FLOP/B", "A attainable", "roof", "B attainable", "roof", "B/A", "faster"
        );
        for w in &c.workloads {
            let _ = writeln!(
                out,
                "{:<16} {:>10.3} {:>20} {:>8} {:>20} {:>8} {:>7.3} {:>6}",
                w.name,
                w.intensity,
                si(w.attainable[0], "FLOP/s"),
                w.roof[0],
                si(w.attainable[1], "FLOP/s"),
                w.roof[1],
                w.ratio_b_over_a,
                w.faster
            );
        }
    }
    out
}

/// One device's ceilings from the text of a `yardstick bench micro --json` (or `yardstick import
/// --json`) document: the best `gemm.<dtype>.N` of the workload's `precision` and
/// `memory.triad` ([`Ceilings::from_micro_for`]) — or, when the document holds GPU figures,
/// the GPU's `gpu.gemm.<dtype>.peak` and `gpu.hbm.copy` ([`Ceilings::from_micro_gpu`]) — with a
/// description of the source that names `source` (the file). The error says what the document
/// lacks.
pub fn ceilings_from_micro_json(
    text: &[u8],
    precision: &str,
    source: &str,
) -> Result<(Ceilings, String), crate::MicroDocError> {
    use crate::MicroDocError;
    let v: serde_json::Value = serde_json::from_slice(text).map_err(MicroDocError::Json)?;
    let results = v["results"]
        .as_array()
        .ok_or(MicroDocError::NoResultsList)?;
    let triples: Vec<(&str, f64, &str)> = results
        .iter()
        .filter_map(|r| {
            Some((
                r["name"].as_str()?,
                r["value"].as_f64()?,
                r["unit"].as_str()?,
            ))
        })
        .collect();
    let label = v["machine_profile"].as_str().unwrap_or("this machine");
    let (c, src) = if has_gpu_figures(triples.iter().map(|t| t.0)) {
        let own = gpu_gemm_dtypes(precision)
            .first()
            .ok_or_else(|| MicroDocError::NoGemmType(precision.to_string()))?;
        Ceilings::from_micro_gpu(label, precision, triples)
            .ok_or_else(|| MicroDocError::NoGpuCeilings(own.to_string()))?
    } else {
        let dtype = gemm_dtype(precision)
            .ok_or_else(|| MicroDocError::NoGemmType(precision.to_string()))?;
        Ceilings::from_micro_on(label, precision, Target::Cpu, triples)
            .ok_or_else(|| MicroDocError::NoCeilings(dtype.to_string()))?
    };
    let note = src.note.map_or(String::new(), |n| format!("; {n}"));
    Ok((
        c,
        format!("measured ({source}: {}, {}{note})", src.peak, src.memory),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The development VM: 131 GFLOP/s f32 GEMM, 14.6 GB/s triad.
    fn vm() -> Ceilings {
        Ceilings {
            label: "cpu-EPYC-f25m17x2c".into(),
            peak_flops: 131e9,
            memory_bw: 14.6e9,
            link_bw: None,
        }
    }

    #[test]
    fn placement_against_the_ridge() {
        let c = vm();
        // Triad-like: 2 FLOPs per 24 bytes.
        let p = place(&c, 2.0, 24.0, None).unwrap();
        assert_eq!(p.roof, Roof::Memory);
        assert_eq!(serde_json::to_value(p.roof).unwrap(), p.roof.as_str());
        assert!((p.attainable_flops - 14.6e9 / 12.0).abs() < 1.0);
        // GEMM 1024: 2n³ FLOPs over 3n² * 4 bytes.
        let n = 1024.0f64;
        let p = place(&c, 2.0 * n.powi(3), 12.0 * n * n, Some(0.02)).unwrap();
        assert_eq!(p.roof, Roof::Compute);
        assert_eq!(p.attainable_flops, 131e9);
        assert!((p.efficiency.unwrap() - 2.0 * n.powi(3) / 0.02 / 131e9).abs() < 1e-12);
        assert!(place(&c, 0.0, 1.0, None).is_none());
    }

    #[test]
    fn input_and_comm_and_queueing_come_before_the_roofline() {
        let mut c = vm();
        c.link_bw = Some(400e9);
        let compute_heavy = Observation {
            flops: Some(1e12),
            bytes: Some(1e9),
            step_s: Some(1.0),
            ..Observation::default()
        };
        assert_eq!(classify(&c, &compute_heavy).bottleneck, Bottleneck::Compute);
        let starved = Observation {
            data_wait_s: Some(0.35),
            ..compute_heavy.clone()
        };
        let k = classify(&c, &starved);
        assert_eq!(k.bottleneck, Bottleneck::Input);
        assert!(
            k.evidence[0].starts_with("35% of the step"),
            "{:?}",
            k.evidence
        );
        let chatty = Observation {
            comm_s: Some(0.2),
            comm_busbw: Some(360e9),
            ..compute_heavy.clone()
        };
        let k = classify(&c, &chatty);
        assert_eq!(k.bottleneck, Bottleneck::Communication);
        assert!(k.evidence[1].contains("90% of the link peak 400.00 GB/s (saturated"));
        let quiet_link = Observation {
            comm_s: Some(0.2),
            comm_busbw: Some(100e9),
            ..compute_heavy.clone()
        };
        assert_eq!(classify(&c, &quiet_link).bottleneck, Bottleneck::Compute);
        let queued = Observation {
            queue_s: Some(0.3),
            service_s: Some(0.1),
            ..Observation::default()
        };
        assert_eq!(classify(&c, &queued).bottleneck, Bottleneck::ControlPlane);
        assert_eq!(
            classify(&c, &Observation::default()).bottleneck,
            Bottleneck::Undetermined
        );
        let streaming = Observation {
            flops: Some(2.0),
            bytes: Some(24.0),
            ..Observation::default()
        };
        assert_eq!(classify(&c, &streaming).bottleneck, Bottleneck::Memory);
    }

    #[test]
    fn a_job_that_mostly_starts_up_is_control_plane_bound_before_its_steps() {
        let c = vm();
        // 2.2 s of a 2.5 s job outside its steps (0.3 s), and the steps themselves wait for
        // input: start-up bounds the job.
        let job = Observation {
            step_s: Some(0.1),
            data_wait_s: Some(0.05),
            queue_s: Some(2.2),
            service_s: Some(0.3),
            wall_s: Some(2.5),
            ..Observation::default()
        };
        let k = classify(&c, &job);
        assert_eq!(k.bottleneck, Bottleneck::ControlPlane);
        assert!(
            k.evidence[0].starts_with("88% of the job's wall time (2.200 s of 2.500 s)"),
            "{:?}",
            k.evidence
        );
        // 0.2 s of start-up in a 2.5 s job: the steps decide.
        let busy = Observation {
            queue_s: Some(0.2),
            service_s: Some(2.3),
            ..job.clone()
        };
        assert_eq!(classify(&c, &busy).bottleneck, Bottleneck::Input);
        // Against the wall time, not against queue + service: 1.0 s of start-up and 0.9 s
        // of steps in a 2.5 s job is 40 %, below the threshold, though 53 % of their sum.
        let gappy = Observation {
            data_wait_s: None,
            queue_s: Some(1.0),
            service_s: Some(0.9),
            ..job
        };
        assert_eq!(classify(&c, &gappy).bottleneck, Bottleneck::Undetermined);
    }

    #[test]
    fn busbw_is_cited_against_the_link_peak() {
        let mut c = vm();
        let chatty = Observation {
            step_s: Some(1.0),
            comm_s: Some(0.4),
            comm_busbw: Some(150e9),
            ..Observation::default()
        };
        // No link peak: the figure, and what is missing.
        let k = classify(&c, &chatty);
        assert_eq!(k.bottleneck, Bottleneck::Communication);
        assert!(k.evidence[1].contains("150.00 GB/s; no link peak"), "{k:?}");
        c.link_bw = Some(400e9);
        let k = classify(&c, &chatty);
        assert_eq!(
            k.evidence[1],
            "collective bus bandwidth 150.00 GB/s is 38% of the link peak 400.00 GB/s \
             (not saturated: overlap or larger buckets before a faster link)"
        );
    }

    #[test]
    fn high_peak_low_bandwidth_versus_low_peak_high_bandwidth() {
        // System A: 2 PFLOP/s, 2 TB/s. System B: 1 PFLOP/s, 4 TB/s.
        let a = Ceilings {
            label: "A".into(),
            peak_flops: 2e15,
            memory_bw: 2e12,
            link_bw: None,
        };
        let b = Ceilings {
            label: "B".into(),
            peak_flops: 1e15,
            memory_bw: 4e12,
            link_bw: None,
        };
        // A decode-like workload at 100 FLOP/B: B attains 2x A.
        let cmp = compare(&a, &b, 100.0).unwrap();
        assert_eq!(cmp.attainable_a, 2e14);
        assert_eq!(cmp.attainable_b, 4e14);
        assert_eq!(cmp.ratio_b_over_a, 2.0);
        // They cross at 1e15 / 2e12 = 500 FLOP/B; above it A wins.
        assert_eq!(cmp.crossover_intensity, Some(500.0));
        let above = compare(&a, &b, 2000.0).unwrap();
        assert!(above.ratio_b_over_a > 0.0 && above.ratio_b_over_a < 1.0);
        let at = compare(&a, &b, 500.0).unwrap();
        assert_eq!(at.attainable_a, at.attainable_b);
        // A machine better in both has no crossover.
        assert_eq!(compare(&a, &a, 10.0).unwrap().crossover_intensity, None);
    }

    #[test]
    fn ceilings_from_a_micro_json_document() {
        let doc = br#"{"machine_profile": "vm", "results": [
            {"name": "memory.triad", "value": 14.6, "unit": "GB/s"},
            {"name": "gemm.f32.2048", "value": 131.0, "unit": "GFLOP/s"},
            {"name": "gemm.f32.512", "value": 98.0}
        ]}"#;
        let (c, src) = ceilings_from_micro_json(doc, "fp32", "micro.json").unwrap();
        assert_eq!((c.peak_flops, c.memory_bw), (131e9, 14.6e9));
        assert_eq!(c.label, "vm");
        assert_eq!(src, "measured (micro.json: gemm.f32.2048, memory.triad)");
        let no_triad =
            br#"{"results": [{"name": "gemm.f32.64", "value": 1.0, "unit": "GFLOP/s"}]}"#;
        let e = ceilings_from_micro_json(no_triad, "fp32", "m.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs a gemm.f32.N and a memory.triad"), "{e}");
        assert_eq!(
            ceilings_from_micro_json(b"{}", "fp32", "m.json")
                .unwrap_err()
                .to_string(),
            "no `results` list"
        );
        assert!(ceilings_from_micro_json(b"not json", "fp32", "m.json").is_err());
    }

    #[test]
    fn ceilings_from_micro_results() {
        let results = [
            ("memory.copy", 16.1, "GB/s"),
            ("memory.triad", 14.6, "GB/s"),
            ("gemm.f32.512", 98.0, "GFLOP/s"),
            ("gemm.f32.2048", 131.0, "GFLOP/s"),
            ("gemm.f64.2048", 64.0, "GFLOP/s"),
            ("gemm.f32.peak", 999.0, "GFLOP/s"), // not a size: ignored
            ("nccl.all_reduce.busbw.1048576", 52.62, "GB/s"),
            ("nccl.all_reduce.busbw.8589934592", 413.78, "GB/s"),
            ("nccl.all_reduce.busbw.avg", 197.172, "GB/s"),
            ("storage.seq_read", 3221.2, "MB/s"),
        ];
        let (c, src) = Ceilings::from_micro("vm", "f32", results).unwrap();
        assert_eq!(c.peak_flops, 131e9);
        assert_eq!(c.memory_bw, 14.6e9);
        assert_eq!(c.link_bw, Some(413.78e9));
        assert_eq!(src.peak, "gemm.f32.2048");
        assert_eq!(src.memory, "memory.triad");
        assert_eq!(
            src.link.as_deref(),
            Some("nccl.all_reduce.busbw.8589934592")
        );
        assert!((c.ridge() - 131.0 / 14.6).abs() < 1e-12);
        let (c64, _) = Ceilings::from_micro("vm", "f64", results).unwrap();
        assert_eq!(c64.peak_flops, 64e9);
        // No triad: no ceilings.
        assert!(Ceilings::from_micro("x", "f32", [("gemm.f32.1024", 1.0, "GFLOP/s")]).is_none());
    }

    #[test]
    fn a_bf16_workload_gets_the_bf16_peak_and_falls_back_to_f32_with_a_note() {
        let with_bf16 = [
            ("memory.triad", 14.6, "GB/s"),
            ("gemm.f32.1024", 120.0, "GFLOP/s"),
            ("gemm.bf16.1024", 230.0, "GFLOP/s"),
            ("gemm.bf16.2048", 250.0, "GFLOP/s"),
            ("gemm.bf16_vs_f32.2048", 2.1, "x"), // a ratio, not a peak
        ];
        for precision in ["bf16", "mixed", "BF16"] {
            let (c, src) = Ceilings::from_micro_for("vm", precision, with_bf16).unwrap();
            assert_eq!(c.peak_flops, 250e9, "{precision}");
            assert_eq!(src.peak, "gemm.bf16.2048");
            assert_eq!(src.note, None);
        }
        for precision in ["fp32", "tf32"] {
            let (c, src) = Ceilings::from_micro_for("vm", precision, with_bf16).unwrap();
            assert_eq!((c.peak_flops, src.peak.as_str()), (120e9, "gemm.f32.1024"));
        }
        // A CPU without avx512_bf16: only f32 figures.
        let f32_only = [
            ("memory.triad", 14.6, "GB/s"),
            ("gemm.f32.1024", 120.0, "GFLOP/s"),
        ];
        let (c, src) = Ceilings::from_micro_for("vm", "bf16", f32_only).unwrap();
        assert_eq!(c.peak_flops, 120e9);
        assert_eq!(src.peak, "gemm.f32.1024");
        assert!(src.note.unwrap().contains("no gemm.bf16 figure"));
        // No fallback for an f64 workload, and none for types without a CPU GEMM.
        assert!(Ceilings::from_micro_for("vm", "fp64", f32_only).is_none());
        assert!(Ceilings::from_micro_for("vm", "fp8", with_bf16).is_none());
    }

    #[test]
    fn two_machine_profiles_side_by_side() {
        // A "high peak, low bandwidth" (2 PFLOP/s, 2 TB/s) against B "low peak, high
        // bandwidth" (1 PFLOP/s, 4 TB/s), as micro results of two profiles.
        let (a, _) = Ceilings::from_micro(
            "A",
            "bf16",
            [
                ("gemm.bf16.8192", 2000.0, "TFLOP/s"),
                ("memory.triad", 2.0, "TB/s"),
            ],
        )
        .unwrap();
        let (b, _) = Ceilings::from_micro(
            "B",
            "bf16",
            [
                ("gemm.bf16.8192", 1000.0, "TFLOP/s"),
                ("memory.triad", 4.0, "TB/s"),
            ],
        )
        .unwrap();
        // Decode (batch 1: ~1 FLOP/B per weight byte, say 2), a mid-size prefill (300) and a
        // large training GEMM (2000).
        let cmp = compare_profiles(
            &a,
            &b,
            &[("decode", 2.0), ("prefill", 300.0), ("train", 2000.0)],
        )
        .unwrap();
        assert_eq!((cmp.ridge_a, cmp.ridge_b), (1000.0, 250.0));
        assert_eq!(cmp.crossover_intensity, Some(500.0));
        let decode = &cmp.workloads[0];
        assert_eq!(decode.attainable, [4e12, 8e12]);
        assert_eq!(decode.roof, ["memory", "memory"]);
        assert_eq!((decode.ratio_b_over_a, decode.faster), (2.0, "b"));
        // 300 FLOP/B: memory-bound on A (ridge 1000), compute-bound on B (ridge 250); B still
        // wins, 1e15 against 6e14.
        let prefill = &cmp.workloads[1];
        assert_eq!(prefill.roof, ["memory", "compute"]);
        assert_eq!(prefill.attainable, [6e14, 1e15]);
        assert_eq!(prefill.faster, "b");
        // Past the crossover the high-peak machine wins.
        let train = &cmp.workloads[2];
        assert_eq!(train.roof, ["compute", "compute"]);
        assert_eq!((train.ratio_b_over_a, train.faster), (0.5, "a"));
        assert!(compare_profiles(&a, &b, &[("bad", -1.0)]).is_none());
    }

    /// An H200's GPU micro results (HBM copy ~4.3 TB/s, bf16 GEMM peak ~790 TFLOP/s), beside
    /// its host CPU's and an 8-GPU nccl-tests import.
    fn h200() -> Vec<(&'static str, f64, &'static str)> {
        vec![
            ("memory.triad", 231.0, "GB/s"),
            ("gemm.f32.2048", 3150.0, "GFLOP/s"),
            ("gemm.bf16.2048", 6020.0, "GFLOP/s"),
            ("gemm.f64.2048", 1580.0, "GFLOP/s"),
            ("gpu.hbm.copy", 4310.0, "GB/s"),
            ("gpu.hbm.read", 4420.0, "GB/s"),
            ("gpu.hbm.write", 4180.0, "GB/s"),
            ("gpu.hbm.copy.268435456", 4120.0, "GB/s"),
            ("gpu.hbm.copy.4294967296", 4310.0, "GB/s"),
            ("gpu.pcie.h2d", 53.8, "GB/s"),
            ("gpu.pcie.d2h", 54.6, "GB/s"),
            ("gpu.gemm.bf16.4096", 712.0, "TFLOP/s"),
            ("gpu.gemm.bf16.8192", 768.0, "TFLOP/s"),
            ("gpu.gemm.bf16.peak", 791.0, "TFLOP/s"),
            ("gpu.gemm.fp16.peak", 786.0, "TFLOP/s"),
            ("gpu.gemm.tf32.peak", 402.0, "TFLOP/s"),
            ("gpu.gemm.fp8.peak", 1452.0, "TFLOP/s"),
            ("nccl.all_reduce.busbw.8589934592", 478.5, "GB/s"),
        ]
    }

    #[test]
    fn gpu_names_and_gemm_types() {
        assert_eq!(split_gpu("gpu.hbm.copy"), Some(("gpu", "hbm.copy")));
        assert_eq!(
            split_gpu("gpu12.gemm.bf16.peak"),
            Some(("gpu12", "gemm.bf16.peak"))
        );
        assert_eq!(split_gpu("gpu0.p2p.0to1"), Some(("gpu0", "p2p.0to1")));
        for not_gpu in [
            "gpu",
            "gpu.",
            "gpus.hbm.copy",
            "gpux1.hbm",
            "memory.triad",
            "gemm.f32.1",
        ] {
            assert_eq!(split_gpu(not_gpu), None, "{not_gpu}");
        }
        assert!(has_gpu_figures(["memory.triad", "gpu3.pcie.h2d"]));
        assert!(!has_gpu_figures(["memory.triad", "gemm.f32.peak"]));
        assert_eq!(gpu_gemm_dtypes("BF16"), ["bf16", "fp16"]);
        assert_eq!(gpu_gemm_dtypes("mixed"), ["bf16", "fp16"]);
        assert_eq!(gpu_gemm_dtypes("fp16"), ["fp16", "bf16"]);
        assert_eq!(gpu_gemm_dtypes("fp8"), ["fp8", "bf16", "fp16"]);
        assert_eq!(gpu_gemm_dtypes("fp32"), ["tf32"]);
        assert!(gpu_gemm_dtypes("fp64").is_empty());
        assert!(gpu_gemm_dtypes("int8").is_empty());
    }

    #[test]
    fn a_gpu_workload_gets_the_gpus_ceilings_over_the_cpus() {
        let (c, src) = Ceilings::from_micro_for("h200-node", "bf16", h200()).unwrap();
        // The probe's peak over the best square size, HBM copy over the host's triad.
        assert_eq!(c.peak_flops, 791e12);
        assert_eq!(c.memory_bw, 4310e9);
        assert_eq!(c.link_bw, Some(478.5e9));
        assert_eq!(src.peak, "gpu.gemm.bf16.peak");
        assert_eq!(src.memory, "gpu.hbm.copy");
        assert_eq!(
            src.link.as_deref(),
            Some("nccl.all_reduce.busbw.8589934592")
        );
        assert_eq!(src.note, None);
        // Ridge 791e12 / 4.31e12 = 183.5 FLOP/B.
        assert!((c.ridge() - 791.0 / 4.31).abs() < 1e-9);
        // Batch-1 decode (~2 FLOP/B) is far below it: 2 x 4.31 TB/s attainable.
        let decode = place(&c, 2e12, 1e12, None).unwrap();
        assert_eq!(decode.roof, Roof::Memory);
        assert!((decode.attainable_flops - 8.62e12).abs() < 1e3);
        // A large training GEMM (8192³ in bf16: 2n³ over 3n²·2 bytes = 2731 FLOP/B) is on the
        // compute roof; a product achieving 700 TFLOP/s is at 88.5 % of the attainable.
        let n = 8192.0f64;
        let flops = 2.0 * n.powi(3);
        let p = place(&c, flops, 6.0 * n * n, Some(flops / 700e12)).unwrap();
        assert_eq!(p.roof, Roof::Compute);
        assert_eq!(p.attainable_flops, 791e12);
        assert!((p.efficiency.unwrap() - 700.0 / 791.0).abs() < 1e-12);
        // Other precisions take their own GPU peak.
        let peak = |precision: &str| {
            Ceilings::from_micro_for("h200-node", precision, h200())
                .map(|(c, s)| (c.peak_flops, s.peak, s.note.is_some()))
        };
        assert_eq!(
            peak("fp8"),
            Some((1452e12, "gpu.gemm.fp8.peak".into(), false))
        );
        assert_eq!(
            peak("fp16"),
            Some((786e12, "gpu.gemm.fp16.peak".into(), false))
        );
        assert_eq!(
            peak("tf32"),
            Some((402e12, "gpu.gemm.tf32.peak".into(), false))
        );
        // fp32 is bounded by tf32, and says so.
        let (c, src) = Ceilings::from_micro_for("h200-node", "fp32", h200()).unwrap();
        assert_eq!(c.peak_flops, 402e12);
        assert!(
            src.note
                .unwrap()
                .contains("the tf32 GEMM peak bounds this fp32 workload")
        );
        // No GPU fp64 figure: no ceilings, never the CPU's for a workload on the GPU.
        assert!(Ceilings::from_micro_for("h200-node", "fp64", h200()).is_none());
        // A CPU workload on the same node names its device.
        let (c, src) = Ceilings::from_micro_on("h200-node", "bf16", Target::Cpu, h200()).unwrap();
        assert_eq!((c.peak_flops, c.memory_bw), (6020e9, 231e9));
        assert_eq!(
            (src.peak.as_str(), src.memory.as_str()),
            ("gemm.bf16.2048", "memory.triad")
        );
        let (c, _) = Ceilings::from_micro_on("h200-node", "fp64", Target::Cpu, h200()).unwrap();
        assert_eq!(c.peak_flops, 1580e9);
    }

    #[test]
    fn the_gpu_peak_without_the_probes_summary_is_the_best_size() {
        let sizes = [
            ("gpu.hbm.copy", 3.02, "TB/s"),
            ("gpu.gemm.bf16.2048", 402.0, "TFLOP/s"),
            ("gpu.gemm.bf16.8192", 688.0, "TFLOP/s"),
            ("gpu.gemm.bf16.16384", 671.0, "TFLOP/s"),
        ];
        let (c, src) = Ceilings::from_micro_for("h100", "bf16", sizes).unwrap();
        assert_eq!(c.peak_flops, 688e12);
        assert_eq!(src.peak, "gpu.gemm.bf16.8192");
        // TB/s and GB/s, TFLOP/s and GFLOP/s are the same figures.
        assert_eq!(c.memory_bw, 3.02e12);
        let in_giga = [
            ("gpu.hbm.copy", 3020.0, "GB/s"),
            ("gpu.gemm.bf16.8192", 688_000.0, "GFLOP/s"),
        ];
        let (g, _) = Ceilings::from_micro_for("h100", "bf16", in_giga).unwrap();
        assert_eq!((g.peak_flops, g.memory_bw), (c.peak_flops, c.memory_bw));
        // A figure in a unit that is no rate is not a ceiling.
        let bad_unit = [
            ("gpu.hbm.copy", 3020.0, "GB"),
            ("gpu.gemm.bf16.8192", 688.0, "TFLOP/s"),
        ];
        assert!(Ceilings::from_micro_for("h100", "bf16", bad_unit).is_none());
    }

    #[test]
    fn a_gpu_without_a_figure_of_the_workloads_type_falls_back_with_a_note() {
        // An H100 whose fp8 probe was skipped, with bf16 only.
        let h100 = [
            ("gpu.hbm.copy", 3010.0, "GB/s"),
            ("gpu.gemm.bf16.peak", 712.0, "TFLOP/s"),
        ];
        let (c, src) = Ceilings::from_micro_for("h100", "fp8", h100).unwrap();
        assert_eq!(c.peak_flops, 712e12);
        assert_eq!(src.peak, "gpu.gemm.bf16.peak");
        let note = src.note.unwrap();
        assert!(
            note.starts_with("no gpu.gemm.fp8 figure for this fp8 workload: the bf16"),
            "{note}"
        );
        let (c, src) = Ceilings::from_micro_for("h100", "fp16", h100).unwrap();
        assert_eq!(c.peak_flops, 712e12);
        assert!(src.note.unwrap().contains("same rate"));
        // tf32 has nothing to fall back to.
        assert!(Ceilings::from_micro_for("h100", "tf32", h100).is_none());
    }

    #[test]
    fn gpu_and_cpu_figures_are_never_mixed() {
        // A GPU GEMM without its HBM figure: the host's triad is not its bandwidth.
        let no_hbm = [
            ("memory.triad", 231.0, "GB/s"),
            ("gemm.bf16.2048", 6020.0, "GFLOP/s"),
            ("gpu.gemm.bf16.peak", 791.0, "TFLOP/s"),
            ("gpu.hbm.copy.4294967296", 4310.0, "GB/s"),
        ];
        assert!(Ceilings::from_micro_for("n", "bf16", no_hbm).is_none());
        assert!(Ceilings::from_micro_on("n", "bf16", Target::Gpu, no_hbm).is_none());
        // HBM without a GPU GEMM: the CPU's GEMM is not its peak.
        let no_gemm = [
            ("memory.triad", 231.0, "GB/s"),
            ("gemm.bf16.2048", 6020.0, "GFLOP/s"),
            ("gpu.hbm.copy", 4310.0, "GB/s"),
        ];
        assert!(Ceilings::from_micro_for("n", "bf16", no_gemm).is_none());
        // Told it is a CPU workload, the CPU figures serve.
        let (c, _) = Ceilings::from_micro_on("n", "bf16", Target::Cpu, no_gemm).unwrap();
        assert_eq!((c.peak_flops, c.memory_bw), (6020e9, 231e9));
        // Told it is a GPU workload, CPU-only results give nothing.
        let cpu_only = [
            ("memory.triad", 14.6, "GB/s"),
            ("gemm.f32.2048", 131.0, "GFLOP/s"),
        ];
        assert!(Ceilings::from_micro_on("vm", "fp32", Target::Gpu, cpu_only).is_none());
        assert!(Ceilings::from_micro_on("vm", "fp32", Target::Auto, cpu_only).is_some());
    }

    #[test]
    fn several_gpus_give_the_lowest_of_their_figures() {
        // An 8-GPU H100 node: gpu3 computes 6 % slow, gpu5's HBM is 4 % slow.
        let names: Vec<(String, f64, &str)> = (0..8)
            .flat_map(|i| {
                let peak = if i == 3 { 668.0 } else { 711.0 + f64::from(i) };
                let copy = if i == 5 {
                    2890.0
                } else {
                    3010.0 + f64::from(i)
                };
                [
                    (format!("gpu{i}.gemm.bf16.peak"), peak, "TFLOP/s"),
                    (format!("gpu{i}.gemm.bf16.8192"), peak - 20.0, "TFLOP/s"),
                    (format!("gpu{i}.hbm.copy"), copy, "GB/s"),
                    (format!("gpu{i}.pcie.h2d"), 55.1, "GB/s"),
                ]
            })
            .collect();
        let results = names.iter().map(|(n, v, u)| (n.as_str(), *v, *u));
        let (c, src) = Ceilings::from_micro_for("h100x8", "bf16", results).unwrap();
        assert_eq!(c.peak_flops, 668e12);
        assert_eq!(c.memory_bw, 2890e9);
        assert_eq!(src.peak, "gpu3.gemm.bf16.peak");
        assert_eq!(src.memory, "gpu5.hbm.copy");
        assert!(
            src.note
                .unwrap()
                .starts_with("each ceiling is the lowest of 8 GPUs' figures"),
        );
        // The job's ceilings are eight of that device.
        let job = crate::bottleneck::job_ceilings(&c, 8);
        assert_eq!(job.peak_flops, 8.0 * 668e12);
    }

    #[test]
    fn gpu_ceilings_from_a_micro_json_document() {
        let doc = br#"{"machine_profile": "h200-sxm", "results": [
            {"name": "memory.triad", "value": 231.0, "unit": "GB/s"},
            {"name": "gemm.f32.2048", "value": 3150.0, "unit": "GFLOP/s"},
            {"name": "gpu.hbm.copy", "value": 4310.0, "unit": "GB/s",
             "ci": [4302.0, 4316.0], "higher_is_better": true, "params": {"bytes": 4294967296}},
            {"name": "gpu.gemm.bf16.peak", "value": 791.0, "unit": "TFLOP/s",
             "params": {"m": 8192, "n": 8192, "k": 8192}}
        ]}"#;
        let (c, src) = ceilings_from_micro_json(doc, "bf16", "h200.json").unwrap();
        assert_eq!((c.peak_flops, c.memory_bw), (791e12, 4310e9));
        assert_eq!(c.label, "h200-sxm");
        assert_eq!(
            src,
            "measured (h200.json: gpu.gemm.bf16.peak, gpu.hbm.copy)"
        );
        let (_, src) = ceilings_from_micro_json(doc, "fp8", "h200.json").unwrap();
        assert!(src.contains("no gpu.gemm.fp8 figure"), "{src}");
        let e = ceilings_from_micro_json(doc, "tf32", "h200.json")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "holds GPU results but needs a gpu.gemm.tf32.peak (or gpu.gemm.tf32.N) and a \
             gpu.hbm.copy result (the GPU micro layer)"
        );
        let e = ceilings_from_micro_json(doc, "int8", "h200.json")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "no GEMM element type for dtype `int8`");
    }

    #[test]
    fn an_h100_against_an_h200_on_the_gpu_roofline() {
        let h100 = [
            ("gpu.hbm.copy", 3010.0, "GB/s"),
            ("gpu.gemm.bf16.peak", 712.0, "TFLOP/s"),
        ];
        let (a, sa) = Ceilings::from_micro_for("h100", "bf16", h100).unwrap();
        let (b, sb) = Ceilings::from_micro_for("h200", "bf16", h200()).unwrap();
        let cmp = compare_profiles(&a, &b, &[("decode", 2.0), ("train", 2731.0)]).unwrap();
        // The H200 is better in both: no crossover; decode gains the bandwidth ratio, a large
        // GEMM the (smaller) peak ratio.
        assert_eq!(cmp.crossover_intensity, None);
        assert!((cmp.workloads[0].ratio_b_over_a - 4310.0 / 3010.0).abs() < 1e-12);
        assert!((cmp.workloads[1].ratio_b_over_a - 791.0 / 712.0).abs() < 1e-12);
        let sources = [
            format!("measured (a.json: {}, {})", sa.peak, sa.memory),
            format!("measured (b.json: {}, {})", sb.peak, sb.memory),
        ];
        let text = comparison_text("bf16", ["h100", "h200"], [&sources[0], &sources[1]], &cmp);
        assert!(
            text.contains("(bf16 GEMM peak, gpu.hbm.copy bandwidth)"),
            "{text}"
        );
        assert!(text.contains("712.000 TFLOP/s"), "{text}");
        assert!(text.contains("4.310 TB/s"), "{text}");
        // CPU sources keep their header.
        let cpu = comparison_text(
            "bf16",
            ["a", "b"],
            ["gemm.bf16.8192, memory.triad"; 2],
            &cmp,
        );
        assert!(cpu.contains("(bf16 GEMM peak, memory.triad bandwidth)"));
    }

    #[test]
    fn a_loader_slower_than_the_trainer_makes_the_step_input_bound() {
        // The trainer achieves 900 samples/s and waits 10% of each step: with input free it
        // would take 1000 samples/s. A loader at 600 covers 60%.
        let b = InputBalance::new(
            900.0,
            Some(0.1),
            Some(0.01),
            600.0,
            "component.0.dataloader/warm",
        )
        .unwrap();
        assert!((b.demand_samples_per_s - 1000.0).abs() < 1e-9);
        assert!(b.input_bound());
        let mut k = Classification {
            bottleneck: Bottleneck::Compute,
            evidence: vec!["roofline".into()],
            placement: None,
        };
        k.cite_input_supply(&b);
        assert_eq!(k.bottleneck, Bottleneck::Input);
        assert!(
            k.evidence[0].contains("600.0 samples/s against the 1000.0"),
            "{:?}",
            k.evidence
        );
        assert!(k.evidence[0].contains("covers 60%"));
        assert_eq!(k.evidence[1], "roofline");
        // A fast loader leaves the verdict alone and says why input is ruled out.
        let fast = InputBalance::new(900.0, None, None, 9000.0, "p").unwrap();
        assert_eq!(fast.headroom, 10.0);
        let mut k = Classification {
            bottleneck: Bottleneck::Compute,
            evidence: vec![],
            placement: None,
        };
        k.cite_input_supply(&fast);
        assert_eq!(k.bottleneck, Bottleneck::Compute);
        assert!(k.evidence[0].ends_with("(10.0x): input is not the bottleneck"));
        assert!(InputBalance::new(0.0, None, None, 1.0, "p").is_none());
    }
}

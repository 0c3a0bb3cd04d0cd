//! `yardstick nodes check FILE...`: node-to-node consistency of micro figures
//! (`yardstick_analysis::nodes`).

use std::path::PathBuf;

use yardstick_analysis::nodes::{NodeFigure, NodesReport, Tolerances, check};

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};

/// Check that the nodes of a fleet measure alike.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  yardstick nodes check micro-*.json\n  \
yardstick nodes check gpu-a=a.json gpu-b=b.json gpu-c=c.json --json")]
pub struct NodesArgs {
    #[command(subcommand)]
    pub command: NodesCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum NodesCommand {
    /// Compare the micro figures of several nodes and flag the ones that stand out.
    ///
    /// Each FILE is the `yardstick bench micro --json` output of one node (run the same
    /// benchmarks with the same sizes on every node, e.g. one `srun` task per node). For each
    /// metric the reference is the fleet median (with two nodes, the better one); a node is
    /// flagged when its figure and its whole confidence interval lie outside the tolerance band
    /// around it (±5 % for compute, storage and network, ±2 % for memory bandwidth). A figure
    /// outside the band whose interval reaches into it is reported as uncertain: re-measure it.
    /// Exit 3 when a node is flagged, so a scheduler prologue can drain it.
    #[command(after_help = "Examples:\n  \
srun --ntasks-per-node=1 sh -c 'yardstick --json bench micro gemm memory > micro-$(hostname).json'\n  \
yardstick nodes check micro-*.json\n  \
yardstick nodes check gpu-a=a.json gpu-b=b.json gpu-c=c.json --throughput-tolerance 3 --json")]
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// One `bench micro --json` output per node, as `FILE` (the node is named by the file's
    /// stem) or `NAME=FILE`. At least two.
    #[arg(value_name = "FILE", required = true, num_args = 2..)]
    pub files: Vec<String>,
    /// Tolerance for compute, storage and network figures, percent of the reference.
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub throughput_tolerance: f64,
    /// Tolerance for memory bandwidth (`memory.*`, and the GPU's `gpu*.hbm.*`, `gpu*.pcie.*`,
    /// `gpu*.p2p.*`), percent of the reference.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub memory_tolerance: f64,
}

fn read_node(arg: &str) -> anyhow::Result<(String, Vec<NodeFigure>)> {
    let (name, path) = match arg.split_once('=') {
        Some((n, p)) if !n.is_empty() => (n.to_string(), PathBuf::from(p)),
        _ => {
            let p = PathBuf::from(arg);
            let stem = p
                .file_stem()
                .map_or_else(|| arg.to_string(), |s| s.to_string_lossy().into_owned());
            (stem, p)
        }
    };
    let hint = "give the `yardstick --json bench micro` output of each node";
    let bytes = std::fs::read(&path)
        .map_err(|e| invalid(format!("{}: {e}", path.display()), Some(hint)))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| invalid(format!("{}: not JSON: {e}", path.display()), Some(hint)))?;
    let figures = yardstick_analysis::nodes::figures_from_micro_json(&v)
        .map_err(|e| invalid(format!("{}: {e}", path.display()), Some(hint)))?;
    Ok((name, figures))
}

pub fn run(args: NodesArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let NodesCommand::Check(args) = args.command;
    for (flag, t) in [
        ("--throughput-tolerance", args.throughput_tolerance),
        ("--memory-tolerance", args.memory_tolerance),
    ] {
        if !(t.is_finite() && t > 0.0 && t < 100.0) {
            return Err(invalid(
                format!("{flag} {t}: a tolerance is a percentage in (0, 100)"),
                Some("e.g. --throughput-tolerance 5"),
            ));
        }
    }
    let mut fleet = Vec::new();
    for f in &args.files {
        let node = read_node(f)?;
        if fleet.iter().any(|(n, _): &(String, _)| *n == node.0) {
            return Err(invalid(
                format!("node `{}` is given twice", node.0),
                Some("name files apart with NAME=FILE"),
            ));
        }
        fleet.push(node);
    }
    let report = check(
        &fleet,
        Tolerances {
            throughput_pct: args.throughput_tolerance,
            memory_pct: args.memory_tolerance,
        },
    );
    if g.json {
        crate::output::json(&report)?;
    } else {
        print(&report);
    }
    Ok(if report.metrics.is_empty() {
        Status::Inconclusive
    } else if report.passed() {
        Status::Ok
    } else {
        Status::GateFail
    })
}

fn print(r: &NodesReport) {
    let w = r.nodes.iter().map(String::len).max().unwrap_or(4).max(4);
    for m in &r.metrics {
        println!(
            "{} ({}, fleet {} {}, tolerance ±{}%)",
            m.metric,
            m.unit,
            m.reference_kind,
            yardstick_report::format::num(m.reference),
            m.tolerance_pct
        );
        for c in &m.nodes {
            let mark = if c.flagged {
                "FLAGGED"
            } else if c.uncertain {
                "uncertain"
            } else {
                "ok"
            };
            println!(
                "  {:w$}  {:>12}  {:+7.1}%  {mark}",
                c.node,
                yardstick_report::format::num(c.value),
                c.deviation_pct
            );
        }
    }
    for w in &r.warnings {
        crate::output::warn(w);
    }
    if r.passed() {
        println!("PASS: {} nodes alike within tolerance", r.nodes.len());
    } else {
        for (node, evidence) in &r.flagged {
            println!("FAIL: {node}");
            for e in evidence {
                println!("  - {e}");
            }
        }
    }
}

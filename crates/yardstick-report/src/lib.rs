//! Reports of yardstick runs and gate results (issue 8).
//!
//! A [`Report`] is built from a stored run ([`model::load_run`]: warehouse facts plus the run
//! directory's spec, env, raw samples, step logs and telemetry) and, optionally, a saved
//! `yardstick gate --json` or `compare --json` output ([`GateView`]). Every format is rendered
//! from it:
//!
//! * [`terminal`]: aligned tables with CIs and deltas (ANSI styles; the caller strips them off a
//!   terminal);
//! * [`html`]: one self-contained file with inline SVG plots ([`plots`], plotters' SVG backend);
//! * [`xlsx`]: a summary sheet and one sheet per point (rust_xlsxwriter);
//! * [`markdown`]: for `$GITHUB_STEP_SUMMARY` and PR comments;
//! * [`junit`]: one test case per (point, metric), so CI shows regressions natively;
//! * [`csv`]: one file per table ([`tables`]);
//! * [`text`]: store listings (`runs list`, `runs show`).
//!
//! Each format is an [`Exporter`]; [`exporters`] lists them in the order they are written.
//! Numbers people read are in human units ([`format::human`]); JSON, CSV and Excel keep raw
//! values.
//!
//! Every output is a deterministic function of the run and the gate file: no clock is read.
#![deny(missing_docs)]

pub mod csv;
mod error;
pub mod export;
pub mod format;
pub mod gate;
pub mod headlines;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod model;
pub mod plots;
pub mod tables;
pub mod terminal;
pub mod text;
pub mod xlsx;

pub use error::ReportError;
pub use export::{Artifact, Dest, Exporter, Shape, Written, exporter, exporters};
pub use gate::{GateDocError, GateKind, GateRow, GateView};
pub use model::{Compact, Report, RunReport, load_run};

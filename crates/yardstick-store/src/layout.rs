//! The name every module of a run directory agrees on: its manifest, which marks a directory as
//! a run ([`crate::run`]) and is the subject of its attestation ([`crate::sign`]).

/// File name of the manifest.
pub const MANIFEST: &str = "manifest.json";

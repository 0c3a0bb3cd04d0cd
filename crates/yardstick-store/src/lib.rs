//! The store: run directories with manifests, hashing and signed provenance; raw samples as
//! Parquet; and the warehouse of facts (SQLite embedded, PostgreSQL shared).
#![deny(missing_docs)]

pub mod export;
pub mod fsutil;
pub mod gc;
pub mod layout;
pub mod order;
pub mod record;
pub mod run;
pub mod samples;
pub mod sign;
pub mod summary;
pub mod trust;
pub mod verify;
pub mod warehouse;

pub use run::{
    Artifact, Manifest, ReplicateStatus, RunStatus, RunWriter, ToolInfo, UnknownStatus,
    read_manifest,
};
pub use verify::{VerifyOutput, VerifyReport, verify_run};

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The caller asked for something impossible (bad path, existing key...).
    #[error("{0}")]
    Invalid(String),
    /// Something that should exist does not.
    #[error("not found: {0}")]
    NotFound(String),
    /// Stored data does not match its record.
    #[error("integrity: {0}")]
    Integrity(String),
    /// A file-system error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The store's trust policy refuses a run (unsigned, signed by an untrusted key, or not
    /// intact).
    #[error("{0}")]
    Refused(String),
    /// A warehouse (database) error.
    #[error("warehouse: {0}")]
    Warehouse(String),
    /// The write would replace something another caller set, and was not forced (another
    /// run's baseline).
    #[error("{0}")]
    Conflict(String),
}

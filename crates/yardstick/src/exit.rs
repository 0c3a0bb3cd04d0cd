//! Exit codes and error reporting, implemented once (the exit codes are listed in README.md,
//! "Commands").
//!
//! `0` success/PASS, `1` runtime failure, `2` invalid input (bad spec, bad flag, unreadable
//! file), `3` gate FAIL, `4` INCONCLUSIVE, `5` a run completed and stored locally whose
//! `--push` failed.

use std::fmt;
use std::process::ExitCode;

use yardstick_error::UserFacing;

/// The process exit status of a command that ran to a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // GateFail and Inconclusive are used by the gate commands.
pub enum Status {
    /// Success, or a gate that passed.
    Ok,
    /// A runtime failure.
    Failure,
    /// Invalid input: bad spec, bad flag, unreadable file.
    Invalid,
    /// A regression gate failed.
    GateFail,
    /// Not enough evidence to decide.
    Inconclusive,
    /// `run --push`: the run completed and is stored locally, but the push failed.
    PushFailed,
}

impl Status {
    /// The numeric exit code.
    pub fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::Failure => 1,
            Status::Invalid => 2,
            Status::GateFail => 3,
            Status::Inconclusive => 4,
            Status::PushFailed => 5,
        }
    }
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        ExitCode::from(s.code())
    }
}

/// Marks an error as the user's input being wrong (exit 2) rather than a runtime failure (exit 1).
/// The message is printed as is, followed by the hint when there is one.
#[derive(Debug)]
pub struct InvalidInput {
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidInput {}

/// An error for invalid input (exit code 2).
pub fn invalid(message: impl Into<String>, hint: Option<&str>) -> anyhow::Error {
    anyhow::Error::new(InvalidInput {
        message: message.into(),
        hint: hint.map(str::to_owned),
    })
}

/// Maps a library error the one way every library error maps ([`UserFacing`]): the user's input
/// at fault is invalid input (exit 2), printed with its hint; anything else a runtime failure
/// (exit 1).
pub fn lib_error<E: UserFacing + Send + Sync + 'static>(e: E) -> anyhow::Error {
    if e.is_invalid_input() {
        invalid(e.to_string(), e.hint().as_deref())
    } else {
        anyhow::Error::new(e)
    }
}

/// Prints `err` to stderr and returns the exit code it maps to. A broken pipe (the reader of our
/// stdout went away, e.g. `| head`) is not an error.
pub fn report(err: &anyhow::Error) -> ExitCode {
    for cause in err.chain() {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::BrokenPipe
        {
            return Status::Ok.into();
        }
    }
    let status = if err.chain().any(|c| c.is::<InvalidInput>()) {
        Status::Invalid
    } else {
        Status::Failure
    };
    crate::output::error(&format!("{err:#}"));
    status.into()
}

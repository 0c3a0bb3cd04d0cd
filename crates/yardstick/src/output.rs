//! Terminal output conventions: results on stdout, progress and diagnostics on stderr, colour only
//! on a terminal (anstream strips ANSI codes when the stream is not a TTY and honours `NO_COLOR`
//! and `CLICOLOR_FORCE`).

use std::io::Write;

/// ANSI styles used across commands.
pub mod style {
    use anstream::adapter::strip_str;
    pub const ERROR: &str = "\x1b[1;31m";
    pub const WARN: &str = "\x1b[1;33m";
    pub const OK: &str = "\x1b[1;32m";
    pub const DIM: &str = "\x1b[2m";
    pub const RESET: &str = "\x1b[0m";

    /// Removes ANSI escapes (for computing display widths).
    #[allow(dead_code)]
    pub fn plain(s: &str) -> String {
        strip_str(s).to_string()
    }
}

/// Prints `error: MESSAGE` to stderr.
pub fn error(message: &str) {
    let mut err = anstream::stderr().lock();
    let _ = writeln!(err, "{}error{}: {message}", style::ERROR, style::RESET);
}

/// Prints `warning: MESSAGE` to stderr unless quiet.
#[allow(dead_code)]
pub fn warn(message: &str) {
    if crate::cli::verbosity() >= 0 {
        let mut err = anstream::stderr().lock();
        let _ = writeln!(err, "{}warning{}: {message}", style::WARN, style::RESET);
    }
}

/// Prints an informational line to stderr unless quiet.
#[allow(dead_code)]
pub fn info(message: &str) {
    if crate::cli::verbosity() >= 0 {
        let mut err = anstream::stderr().lock();
        let _ = writeln!(err, "{message}");
    }
}

/// Writes a serialisable value as pretty JSON to stdout, followed by a newline.
pub fn json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Writes text rendered for people to stdout through anstream, which strips its ANSI styles
/// when stdout is not a terminal (and honours `NO_COLOR`). A closed pipe is returned as an error
/// for `exit::report`, like [`outln!`].
pub fn text(text: &str) -> anyhow::Result<()> {
    let mut out = anstream::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `println!` that returns the write's error instead of panicking: a reader that went away
/// (`yardstick runs list | head`) ends the command through `exit::report`, which treats a broken
/// pipe as success. Use it with `?` in a function returning `anyhow::Result`.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}
pub(crate) use outln;

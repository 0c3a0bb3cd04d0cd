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

    /// Removes ANSI escapes (for computing display widths and log lines).
    pub fn plain(s: &str) -> String {
        strip_str(s).to_string()
    }
}

static JSON_LOGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The join keys of the work under way (`run_id`, `benchmark`, `point`, `replicate`): fields of
/// every JSON log line.
static CONTEXT: std::sync::Mutex<Vec<(&'static str, serde_json::Value)>> =
    std::sync::Mutex::new(Vec::new());

/// `--log-format json`: diagnostics become one JSON object per line.
pub fn set_json_logs(on: bool) {
    JSON_LOGS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Sets (or, with `None`, clears) a join key of the log lines that follow.
pub fn set_context(key: &'static str, value: Option<serde_json::Value>) {
    let mut c = CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
    c.retain(|(k, _)| *k != key);
    if let Some(v) = value {
        c.push((key, v));
    }
}

/// Writes one JSON log line when JSON logs are on; says whether it did.
fn json_line(level: &str, message: &str) -> bool {
    if !JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    let mut line = serde_json::Map::new();
    line.insert(
        "ts".into(),
        humantime::format_rfc3339_millis(std::time::SystemTime::now())
            .to_string()
            .into(),
    );
    line.insert("level".into(), level.into());
    line.insert("message".into(), style::plain(message).trim().into());
    for (k, v) in yardstick_env::join::present() {
        line.insert(k.into(), v.into());
    }
    for (k, v) in CONTEXT.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        line.insert((*k).into(), v.clone());
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", serde_json::Value::Object(line));
    true
}

/// Prints `error: MESSAGE` to stderr.
pub fn error(message: &str) {
    if json_line("error", message) {
        return;
    }
    let mut err = anstream::stderr().lock();
    let _ = writeln!(err, "{}error{}: {message}", style::ERROR, style::RESET);
}

/// Prints `warning: MESSAGE` to stderr unless quiet.
#[allow(dead_code)]
pub fn warn(message: &str) {
    if crate::cli::verbosity() >= 0 && !json_line("warning", message) {
        let mut err = anstream::stderr().lock();
        let _ = writeln!(err, "{}warning{}: {message}", style::WARN, style::RESET);
    }
}

/// Prints an informational line to stderr unless quiet.
#[allow(dead_code)]
pub fn info(message: &str) {
    if crate::cli::verbosity() >= 0 && !json_line("info", message) {
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

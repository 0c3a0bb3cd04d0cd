//! Headless Chromium for the browser tests (the HTML report, the server's dashboard): where it
//! is, how it is run (isolated: a fresh profile, no network services), and the console messages
//! it logged. Used by each test crate that needs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `$YARDSTICK_CHROMIUM` when set (and only it: setting it to a missing path hides Chromium),
/// else `chromium` or `chromium-browser` in /usr/bin or on `PATH`.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("YARDSTICK_CHROMIUM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    std::iter::once(PathBuf::from("/usr/bin"))
        .chain(dirs)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Runs Chromium headless on `url` with the isolation flags (no network services, the fresh
/// profile `profile`) plus `extra`.
pub fn run(bin: &Path, profile: &Path, url: &str, extra: &[&str]) -> Output {
    Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("run chromium")
}

/// Console messages Chromium logged (`…:INFO:CONSOLE:LINE] "message", source: …`).
pub fn console_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect()
}

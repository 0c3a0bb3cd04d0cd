//! The program's one Ctrl-C (SIGINT) and SIGTERM handler, and the token it cancels.
//!
//! A command that can stop gracefully asks for [`token`] before it starts its work and passes the
//! token down (`RunOptions::cancel`, `ServeBench::cancel`, `ExecConfig::cancel`, the simulator's
//! shutdown). The first signal prints what the command will do and cancels the token: the
//! library finishes or drains what is in flight and returns what it measured. A second signal
//! kills the supervised child's process group, if any, and exits with status 130 at once.
//!
//! Commands that never ask for the token keep the default behaviour: Ctrl-C ends them.

use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

use crate::output;

static TOKEN: OnceLock<CancellationToken> = OnceLock::new();

/// The process's cancellation token, with the signal handler installed on first use. `on_first`
/// is what the user is told when the first signal arrives (the first caller's message is kept).
pub fn token(on_first: &'static str) -> CancellationToken {
    TOKEN
        .get_or_init(|| {
            let token = CancellationToken::new();
            install(token.clone(), on_first);
            token
        })
        .clone()
}

/// Listens for SIGINT and SIGTERM on a small thread of its own (tokio's signal handling, on a
/// current-thread runtime), so the handler works whether or not the command runs async code.
fn install(token: CancellationToken, on_first: &'static str) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::warn(&format!(
                "cannot watch for Ctrl-C ({e}): an interrupt will end the command at once"
            ));
            return;
        }
    };
    // Register before returning, so a signal sent as soon as the work starts is not missed.
    let signals = rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        ))
    });
    let (mut int, mut term) = match signals {
        Ok(s) => s,
        Err(e) => {
            output::warn(&format!(
                "cannot watch for Ctrl-C ({e}): an interrupt will end the command at once"
            ));
            return;
        }
    };
    let spawned = std::thread::Builder::new()
        .name("yardstick-signals".into())
        .spawn(move || {
            rt.block_on(async move {
                loop {
                    tokio::select! {
                        s = int.recv() => if s.is_none() { return },
                        s = term.recv() => if s.is_none() { return },
                    }
                    if token.is_cancelled() {
                        yardstick_exec::kill_supervised_group();
                        std::process::exit(130);
                    }
                    output::warn(on_first);
                    token.cancel();
                }
            })
        });
    if let Err(e) = spawned {
        output::warn(&format!(
            "cannot watch for Ctrl-C ({e}): an interrupt will end the command at once"
        ));
    }
}

//! `yardstick`: the command-line entry point; everything is in the library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    yardstick::main()
}

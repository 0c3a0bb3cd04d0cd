//! Writes a synthetic dataset for the data-loader layer's built-in reader:
//! `cargo run --release -p yardstick-workloads --example gen_loader_data -- DIR FORMAT FILES ROWS`
//! (FORMAT: parquet, jsonl or raw; ROWS: samples per file, or bytes per file for raw).

use std::path::PathBuf;

use yardstick_spec::LoaderFormat;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen_loader_data DIR parquet|jsonl|raw FILES ROWS";
    let [dir, format, files, rows] = args.as_slice() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let format = match format.as_str() {
        "parquet" => LoaderFormat::Parquet,
        "jsonl" => LoaderFormat::Jsonl,
        "raw" => LoaderFormat::Raw,
        other => {
            eprintln!("unknown format `{other}`; {usage}");
            std::process::exit(2);
        }
    };
    let (Ok(files), Ok(rows)) = (files.parse::<usize>(), rows.parse::<usize>()) else {
        eprintln!("FILES and ROWS are counts; {usage}");
        std::process::exit(2);
    };
    match yardstick_workloads::loader::generate(&PathBuf::from(dir), format, files, rows) {
        Ok(paths) => {
            let bytes: u64 = paths
                .iter()
                .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
                .sum();
            println!("{} files, {bytes} bytes in {dir}", paths.len());
        }
        Err(e) => {
            eprintln!("{dir}: {e}");
            std::process::exit(1);
        }
    }
}

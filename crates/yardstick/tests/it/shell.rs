//! `yardstick completions SHELL` and `yardstick man`: generated from the CLI definitions, and
//! working in the real shell and the real man page format.

use std::process::Command;

use crate::common::yardstick;

fn stdout_of(args: &[&str]) -> String {
    let o = yardstick().args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Completes `words` (the last one partial) with the bash script, in bash.
fn bash_complete(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cur = words.last().unwrap();
    let prev = words[words.len() - 2];
    let line = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _yardstick yardstick '{cur}' '{prev}'; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let o = Command::new("bash").args(["-c", &line]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn completions_complete_commands_and_flags_in_bash() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("yardstick.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();
    let commands = bash_complete(&script, &["yardstick", "be"]);
    assert_eq!(commands, ["bench"], "{commands:?}");
    let flags = bash_complete(&script, &["yardstick", "bench", "serve", "--ur"]);
    assert_eq!(flags, ["--url"], "{flags:?}");
    let all = bash_complete(&script, &["yardstick", ""]);
    for c in ["run", "gate", "completions", "man", "server"] {
        assert!(all.iter().any(|x| x == c), "{c} in {all:?}");
    }
    // The other shells get their own formats.
    assert!(stdout_of(&["completions", "zsh"]).starts_with("#compdef yardstick"));
    assert!(stdout_of(&["completions", "fish"]).contains("complete -c yardstick"));
    assert!(stdout_of(&["completions", "powershell"]).contains("Register-ArgumentCompleter"));
    // A shell it does not know is a usage error.
    let o = yardstick().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn man_writes_a_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let o = yardstick()
        .args(["--json", "man", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pages: Vec<&str> = v["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for p in [
        "yardstick.1",
        "yardstick-bench-serve.1",
        "yardstick-gate.1",
        "yardstick-man.1",
    ] {
        assert!(pages.contains(&p), "{p} in {pages:?}");
        assert!(out.join(p).is_file());
    }
    let serve = std::fs::read_to_string(out.join("yardstick-bench-serve.1")).unwrap();
    assert!(
        serve.starts_with(".ie") || serve.contains(".TH"),
        "roff: {}",
        &serve[..200]
    );
    assert!(
        serve.contains("yardstick\\-bench\\-serve"),
        "{}",
        &serve[..400]
    );
    assert!(serve.contains("\\-\\-url"), "the page documents --url");
    // Without a directory: yardstick(1) on standard output.
    let page = stdout_of(&["man"]);
    assert!(page.contains(".TH yardstick 1"), "{}", &page[..200]);
}

/// Every command's `--help` ends with examples (issue 39: the README says every command's
/// does). Walks the whole command tree from the clap definitions, and runs the real binary's
/// `--help` for each, so a command added without examples fails here.
#[test]
fn every_command_help_has_examples() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            out.push(p.clone());
            walk(sub, p, out);
        }
    }
    let mut commands = Vec::new();
    walk(&yardstick::cli::Cli::command(), Vec::new(), &mut commands);
    assert!(commands.len() > 40, "{commands:?}");
    let missing: Vec<String> = commands
        .iter()
        .filter(|path| {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push("--help");
            let help = stdout_of(&args);
            // An example is a line one can type: `yardstick` and the command's own words.
            let name = format!("yardstick {}", path.join(" "));
            !help
                .lines()
                .skip_while(|l| !l.starts_with("Example"))
                .any(|l| l.trim_start().starts_with(&name))
        })
        .map(|p| p.join(" "))
        .collect();
    assert!(
        missing.is_empty(),
        "{} command(s) whose --help has no examples: {missing:#?}",
        missing.len()
    );
}

/// Splits a command line as a POSIX shell would for the examples: words at blanks, single and
/// double quotes kept together (no expansions).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Every example in every command's `--help` that starts with `yardstick` parses: its command,
/// flags and values exist (a renamed flag left in an example fails here). The part before a
/// comment, pipe, redirect or `&&` is parsed, as clap would parse it, without running it.
#[test]
fn every_help_example_parses() {
    use clap::{CommandFactory, Parser};
    fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(path.clone());
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            walk(sub, p, out);
        }
    }
    let mut commands = Vec::new();
    walk(&yardstick::cli::Cli::command(), Vec::new(), &mut commands);
    let mut checked = 0;
    let mut bad = Vec::new();
    for path in &commands {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = stdout_of(&args);
        for line in help.lines().skip_while(|l| !l.starts_with("Example")) {
            if !line.trim().starts_with("yardstick ") {
                continue;
            }
            // clap wraps help at 100 columns where there is no terminal: an example that long
            // would be cut in two, and the second half read as something else.
            assert!(
                line.chars().count() < 99,
                "`{}` --help: an example too long to print whole: {line}",
                path.join(" ")
            );
            let line = line.trim();
            let cut = [" #", " | ", " > ", " && ", " & "]
                .iter()
                .filter_map(|s| line.find(s))
                .min()
                .unwrap_or(line.len());
            // A glob (`micro-*.json`) stands for the files it matches: two of them.
            let words: Vec<String> = shell_words(&line[..cut])
                .into_iter()
                .flat_map(|w| {
                    let n = if w.contains('*') && !w.contains(' ') {
                        2
                    } else {
                        1
                    };
                    std::iter::repeat_n(w, n)
                })
                .collect();
            checked += 1;
            if let Err(e) = yardstick::cli::Cli::try_parse_from(&words) {
                bad.push(format!(
                    "{line}\n    {}",
                    e.to_string().lines().next().unwrap_or("")
                ));
            }
        }
    }
    assert!(checked > 100, "only {checked} examples found");
    assert!(
        bad.is_empty(),
        "examples that do not parse:\n{}",
        bad.join("\n")
    );
}

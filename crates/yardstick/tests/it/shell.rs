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

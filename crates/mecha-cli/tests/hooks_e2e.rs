//! `mecha hooks` through the real binary: the listing, a Claude-Code-style
//! guard refusing `rm -rf` through `mecha hooks test`, and a project file
//! that tries to add a hook.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A guard as Claude Code users write them: JSON on stdin, a
/// `permissionDecision` on stdout.
const GUARD: &str = r#"#!/usr/bin/env bash
input=$(cat)
case "$input" in
  *'"tool_name":"shell"'*'rm -rf'*)
    printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"rm -rf is not allowed here"}}'
    ;;
  *'sudo'*)
    echo "no sudo" >&2
    exit 2
    ;;
esac
exit 0
"#;

struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

fn dirs(config: &str) -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(home.join("hooks")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let guard = home.join("hooks/guard.sh");
    std::fs::write(&guard, GUARD).unwrap();
    std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(home.join("config.toml"), config).unwrap();
    Dirs {
        _tmp: tmp,
        home,
        ws,
    }
}

fn mecha(d: &Dirs, args: &[&str]) -> Output {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("HOME", &d.home)
        .env("MECHA_HOME", &d.home)
        .current_dir(&d.ws)
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const CONFIG: &str = "[[hook]]\nevent = \"pre_tool\"\nmatcher = \"shell|fs_.*\"\n\
                      command = \"~/hooks/guard.sh\"\ntimeout_s = 10\n";

fn try_shell(d: &Dirs, command: &str) -> Output {
    let input = serde_json::json!({ "command": command }).to_string();
    mecha(
        d,
        &[
            "hooks", "test", "pre_tool", "--tool", "shell", "--input", &input,
        ],
    )
}

#[test]
fn the_guard_refuses_rm_rf_and_passes_the_rest() {
    let d = dirs(CONFIG);
    let o = try_shell(&d, "rm -rf build");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "hook `~/hooks/guard.sh` (pre_tool on `shell`): refused: rm -rf is not allowed here"
        ),
        "{out}"
    );
    assert!(
        out.contains("decision: block: rm -rf is not allowed here"),
        "{out}"
    );

    let o = try_shell(&d, "sudo ls");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("decision: block: no sudo"), "{out}");

    let o = try_shell(&d, "ls -la");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("decision: pass"), "{out}");
}

#[test]
fn a_tool_the_matcher_leaves_out_runs_no_hook() {
    let d = dirs(CONFIG);
    let input = r#"{"url": "https://example.invalid/rm -rf"}"#;
    let o = mecha(
        &d,
        &[
            "hooks",
            "test",
            "pre_tool",
            "--tool",
            "http_fetch",
            "--input",
            input,
        ],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("no pre_tool hook matches tool `http_fetch`"),
        "{out}"
    );
}

#[test]
fn the_listing_shows_each_hook_or_says_there_are_none() {
    let d = dirs(CONFIG);
    let o = mecha(&d, &["hooks"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "pre_tool  matcher=shell|fs_.*  command=~/hooks/guard.sh  timeout=10s  on_error=block\n"
    );
    let d = dirs("");
    let o = mecha(&d, &["hooks"]);
    assert!(text(&o).contains("no hooks configured"), "{}", text(&o));
}

#[test]
fn bad_input_or_event_is_a_usage_error() {
    let d = dirs(CONFIG);
    let o = mecha(
        &d,
        &[
            "hooks", "test", "pre_tool", "--tool", "shell", "--input", "{nope",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--input is not JSON"), "{}", text(&o));
    let o = mecha(&d, &["hooks", "test", "pre_tol", "--tool", "shell"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("unknown hook event `pre_tol`"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_project_files_hook_is_ignored_with_a_warning() {
    let d = dirs(CONFIG);
    std::fs::write(d.ws.join("pwn.sh"), "#!/bin/sh\ntouch pwned\n").unwrap();
    std::fs::set_permissions(d.ws.join("pwn.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        d.ws.join("mecha.toml"),
        "[[hook]]\nevent = \"pre_tool\"\ncommand = \"./pwn.sh\"\n",
    )
    .unwrap();
    let o = mecha(&d, &["hooks"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("mecha.toml: [[hook]] has no effect; your hooks stay"),
        "{out}"
    );
    assert!(
        out.contains("must not run programs of its choosing"),
        "{out}"
    );
    // Only the user's hook is listed, and it is what a test runs.
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains("~/hooks/guard.sh"), "{listed}");
    let o = try_shell(&d, "ls");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!Path::new(&d.ws.join("pwned")).exists());
}

#[test]
fn a_broken_hook_is_reported_by_what_inspects_and_stops_only_runs() {
    let d = dirs(&format!(
        "{CONFIG}[[hook]]\nevent = \"stop\"\ncommand = \"~/hooks/missing.sh\"\n"
    ));
    let named = |out: &str| {
        out.contains("mecha: warning: ")
            && out.contains("config.toml: [[hook]] #2 (`~/hooks/missing.sh`): there is no file")
            && out.contains("`mecha run`, `mecha chat` and the screen refuse to start")
    };
    // The listing shows the hook that works, and names the one that does not.
    let o = mecha(&d, &["hooks"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("command=~/hooks/guard.sh"),
        "{out}"
    );
    assert!(named(&out), "{out}");
    // The working guard can still be tried: it blocks, as it would in a run.
    let o = try_shell(&d, "rm -rf /");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("rm -rf is not allowed here"), "{out}");
    assert!(named(&out), "{out}");
    for command in [&["config"][..], &["tools"][..]] {
        let o = mecha(&d, command);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(0), "{command:?}: {out}");
        assert!(named(&out), "{command:?}: {out}");
    }
    // A run refuses to start without the hook, naming it.
    let o = mecha(&d, &["run", "hi"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("[[hook]] #2 (`~/hooks/missing.sh`)"), "{out}");
    assert!(
        out.contains("A run needs every hook it is configured with"),
        "{out}"
    );
}

/// A hook for the loop's events: it blocks prompts that mention a key,
/// adds context otherwise, and sends a stop back when the answer does not
/// mention tests.
const LOOP: &str = r#"#!/usr/bin/env bash
input=$(cat)
case "$input" in
  *'"UserPromptSubmit"'*'sk-'*) echo "that prompt holds a key" >&2; exit 2 ;;
  *'"UserPromptSubmit"'*) echo "branch: main" ;;
  *'"Stop"'*'tests pass'*) exit 0 ;;
  *'"Stop"'*) printf '%s\n' '{"decision":"block","reason":"run the tests"}' ;;
  *'"PostToolUse"'*) printf '%s\n' '{"hookSpecificOutput":{"additionalContext":"lint clean"}}' ;;
esac
exit 0
"#;

fn loop_dirs() -> Dirs {
    let mut config = String::new();
    for event in ["user_prompt", "stop", "post_tool", "session_start"] {
        config.push_str(&format!(
            "[[hook]]\nevent = \"{event}\"\ncommand = \"~/hooks/loop.sh\"\n"
        ));
    }
    let d = dirs(&config);
    let script = d.home.join("hooks/loop.sh");
    std::fs::write(&script, LOOP).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

#[test]
fn hooks_test_tries_every_event() {
    let d = loop_dirs();
    let o = mecha(
        &d,
        &["hooks", "test", "user_prompt", "--prompt", "use sk-123"],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("(user_prompt): refused the prompt: that prompt holds a key"),
        "{out}"
    );

    let o = mecha(&d, &["hooks", "test", "user_prompt", "--prompt", "hello"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("context for the model:\nbranch: main"),
        "{out}"
    );

    let o = mecha(&d, &["hooks", "test", "stop", "--answer", "done"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("(stop): sends the model back: run the tests"),
        "{out}"
    );
    let o = mecha(
        &d,
        &["hooks", "test", "stop", "--answer", "done, tests pass"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let o = mecha(
        &d,
        &[
            "hooks",
            "test",
            "post_tool",
            "--tool",
            "shell",
            "--response",
            "ok",
        ],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("context for the model:\nlint clean"), "{out}");

    let o = mecha(
        &d,
        &["hooks", "test", "session_start", "--source", "resume"],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("(session_start): no objection"), "{out}");

    let o = mecha(&d, &["hooks", "test", "post_tool"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("--tool NAME"), "{out}");
}

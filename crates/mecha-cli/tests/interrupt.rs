//! Ctrl-C (or SIGTERM, or SIGHUP) during a run: the running tool's whole
//! process group is killed and mecha exits with 130.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

#[test]
fn sigint_kills_running_tools_and_exits_130() {
    stops_cleanly_on(rustix::process::Signal::INT);
}

#[test]
fn sigterm_kills_running_tools_too() {
    stops_cleanly_on(rustix::process::Signal::TERM);
}

#[test]
fn sighup_kills_running_tools_too() {
    stops_cleanly_on(rustix::process::Signal::HUP);
}

fn stops_cleanly_on(sig: rustix::process::Signal) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    // The command records its own pid and its background child's, then
    // waits: only the interrupt can end it.
    let command = "echo $$ > bash.pid; sleep 300 & echo $! > bg.pid; wait";
    let call = serde_json::json!({"name": "shell", "input": {"command": command}});
    common::scripted_home(&home, &[call], "never reached", "");
    let child = start_run(&home, &ws);
    // Interrupt once the shell call is running, however long a loaded
    // machine takes to get there.
    assert!(
        eventually(Duration::from_secs(60), || ws.join("bg.pid").exists()),
        "the shell call never started"
    );
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, sig).unwrap();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Far below the 300 s the command would take: mecha did not wait for it.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "mecha did not stop promptly"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    for file in ["bash.pid", "bg.pid"] {
        let pid: u32 = std::fs::read_to_string(ws.join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            eventually(Duration::from_secs(10), || !alive(pid)),
            "{file}: a tool process outlived the interrupt"
        );
    }
}

/// `mecha run --yes go` with `home`'s script, in `ws`, output piped.
fn start_run(home: &std::path::Path, ws: &std::path::Path) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .env("MECHA_HOME", home)
        .current_dir(ws)
        .args(["run", "--yes", "go"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Polls `cond` until it holds or `limit` passes.
fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Whether a process still runs; a zombie (killed, not yet reaped by
/// whoever inherited it) counts as dead.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// A confined command interrupted after it planted a repository with an
/// executable config is still swept: the interrupt kills it, and the undo
/// runs before mecha exits.
#[test]
fn an_interrupted_confined_command_is_still_swept() {
    if !common::have(
        "bwrap",
        "the sandbox tests",
        "bubblewrap (apt-get install bubblewrap)",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let command = "git init -q n && git -C n config core.fsmonitor 'touch /tmp/never' && \
                   touch planted && sleep 300";
    let call = serde_json::json!({"name": "shell", "input": {"command": command}});
    common::scripted_home(
        &home,
        &[call],
        "never reached",
        "[sandbox]\nkind = \"bwrap\"\n",
    );
    let child = start_run(&home, &ws);
    assert!(
        eventually(Duration::from_secs(60), || ws.join("planted").exists()),
        "the shell call never planted"
    );
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let config = std::fs::read_to_string(ws.join("n/.git/config")).unwrap();
    assert!(
        !config.contains("fsmonitor"),
        "the interrupted command's plant survived: {config}"
    );
}

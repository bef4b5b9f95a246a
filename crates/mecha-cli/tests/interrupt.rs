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
    let marker = ws.join("survived");
    let command = format!(
        "(sleep 3; touch {m}) & sleep 3; touch {m}",
        m = marker.display()
    );
    let call = serde_json::json!({"name": "shell", "input": {"command": command}});
    common::scripted_home(&home, &[call], "never reached", "");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mecha"))
        .env("MECHA_HOME", &home)
        .current_dir(&ws)
        .args(["run", "--yes", "go"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let the shell call start, then interrupt.
    std::thread::sleep(Duration::from_millis(700));
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
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "mecha did not stop promptly"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    // Past the point where either process would have written the marker.
    std::thread::sleep(Duration::from_millis(3000));
    assert!(!marker.exists(), "a tool process outlived the interrupt");
}

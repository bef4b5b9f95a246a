//! A reader that goes away (`mecha run … | head -1`) ends the run quietly:
//! no panic (a release build would abort with 134 and leave the tools'
//! process groups behind), running tools are stopped as on Ctrl-C, and the
//! exit code is 141, what a shell reports for a writer stopped by SIGPIPE.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{env, stderr};
use mecha_testkit::{MockModel, MockReply};

const EXIT_PIPE_CLOSED: i32 = 141;

fn mecha() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("mecha")
}

#[tokio::test]
async fn a_closed_stdout_ends_the_run_quietly_with_141() {
    let e = env();
    let mock = MockModel::start(vec![MockReply::text("line one\nline two\nline three\n")]).await;
    let (home, ws, url) = (e.home.clone(), e.ws.clone(), mock.anthropic_url());
    std::fs::write(
        home.join("config.toml"),
        "[provider]\nkind = \"anthropic\"\n",
    )
    .unwrap();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(mecha())
            .env_clear()
            .env("MECHA_HOME", &home)
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", url)
            .current_dir(&ws)
            .args(["run", "hi"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before mecha writes a byte.
        drop(child.stdout.take());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(EXIT_PIPE_CLOSED), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("Broken pipe"), "not quiet: {err}");
}

#[tokio::test]
async fn head_on_stdout_and_stderr_together_does_not_crash_mecha() {
    let e = env();
    let mock = MockModel::start(vec![MockReply::text("one\ntwo\nthree\n")]).await;
    std::fs::write(
        e.home.join("config.toml"),
        "[provider]\nkind = \"anthropic\"\n",
    )
    .unwrap();
    // The reported case: `mecha run hi 2>&1 | head -1`, its status taken
    // from PIPESTATUS.
    let script = format!(
        "'{}' run hi 2>&1 | head -c1 >/dev/null; exit ${{PIPESTATUS[0]}}",
        mecha().display()
    );
    let (home, ws, url) = (e.home.clone(), e.ws.clone(), mock.anthropic_url());
    let out = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .args(["-c", &script])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap())
            .env("MECHA_HOME", &home)
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", url)
            .current_dir(&ws)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(EXIT_PIPE_CLOSED),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_reader_leaving_during_a_tool_call_stops_the_tool() {
    let e = env();
    let marker = e.ws.join("finished");
    let call = serde_json::json!({
        "name": "shell",
        "input": {"command": format!("sleep 3; touch {}", marker.display())}
    });
    common::scripted_home(&e.home, &[call], "never reached", "");
    let mut child = Command::new(mecha())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("MECHA_HOME", &e.home)
        .current_dir(&e.ws)
        .args(["run", "--yes", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the call is announced, then both readers go away while
    // the tool runs and nothing is being written.
    let mut activity = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("→ shell") {
        line.clear();
        assert!(activity.read_line(&mut line).unwrap() > 0, "no tool call");
    }
    drop(activity);
    drop(child.stdout.take());
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(EXIT_PIPE_CLOSED));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "mecha went on running the tool for nobody"
    );
    std::thread::sleep(Duration::from_millis(3500));
    assert!(!marker.exists(), "the tool outlived the closed pipe");
}

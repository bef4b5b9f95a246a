//! `[checkpoint]` through the real binary: switched off, a session has
//! nothing to rewind and `mecha rewind` says why; the caps and
//! `include_ignored` decide what a rewind puts back; a project cannot widen
//! them; a bad value names its line; `mecha config` and `mecha doctor` show
//! them; a file named in Latin-1 comes back and is listed readably.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;

use common::{Api, Env, env, only_session, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

fn shell(command: &str) -> Vec<MockReply> {
    vec![
        tool_turn(&[("shell", json!({ "command": command }))]),
        MockReply::text("done"),
    ]
}

async fn mecha(e: &Env, mock: &MockModel, command: &str, args: &[&str]) -> std::process::Output {
    e.mecha(Api::OpenAi, mock, "k", command, args, "").await
}

async fn one_prompt(e: &Env, mock: &MockModel) -> String {
    let out = e
        .mecha(Api::OpenAi, mock, "k", "chat", &["-y"], "change things\n")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    only_session(e)
}

fn snapshots(e: &Env) -> usize {
    fs::read_dir(e.home.join("checkpoints/snapshots")).map_or(0, |d| d.count())
}

#[tokio::test]
async fn switched_off_a_session_has_no_checkpoints_and_rewind_says_why() {
    let mut e = env();
    e.extra_config = "[checkpoint]\nenabled = false\n".into();
    fs::write(e.ws.join("a.txt"), "before\n").unwrap();
    let mock = MockModel::start(shell("printf after > a.txt")).await;
    let id = one_prompt(&e, &mock).await;
    assert_eq!(fs::read_to_string(e.ws.join("a.txt")).unwrap(), "after");
    assert_eq!(snapshots(&e), 0, "no snapshot was taken");

    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "1", "--files"]).await;
    let said = stderr(&out);
    assert!(said.contains("no checkpoints"), "{said}");
    assert!(said.contains("[checkpoint] enabled = false"), "{said}");
    assert!(said.contains("config.toml"), "names the file: {said}");
    assert_eq!(fs::read_to_string(e.ws.join("a.txt")).unwrap(), "after");
    let out = mecha(&e, &mock, "rewind", &[&id, "--list"]).await;
    assert!(
        stderr(&out).contains("checkpoints are off"),
        "{}",
        stderr(&out)
    );

    let out = mecha(&e, &mock, "doctor", &[]).await;
    let report = stdout(&out);
    let line = report
        .lines()
        .find(|l| l.contains("checkpoints:"))
        .unwrap_or_default();
    assert!(line.contains("off"), "{report}");
    assert!(line.contains("mecha rewind --prune"), "{report}");
}

#[tokio::test]
async fn the_caps_and_include_ignored_decide_what_a_rewind_puts_back() {
    let mut e = env();
    e.extra_config = "[checkpoint]\nmax_file_bytes = 100\ninclude_ignored = [\".env\"]\n".into();
    fs::write(e.ws.join(".gitignore"), ".env\n*.log\n").unwrap();
    fs::write(e.ws.join(".env"), "TOKEN=mine\n").unwrap();
    fs::write(e.ws.join("run.log"), "log\n").unwrap();
    fs::write(e.ws.join("big.bin"), vec![b'x'; 200]).unwrap();
    fs::create_dir(e.ws.join("kept-empty")).unwrap();
    // A project asking for more than the user allows changes nothing.
    fs::write(
        e.ws.join("mecha.toml"),
        "[checkpoint]\nmax_file_bytes = 100000\n",
    )
    .unwrap();
    let mock = MockModel::start(shell(
        "printf TOKEN=agent > .env && printf agent > run.log && printf agent > big.bin \
         && rmdir kept-empty && mkdir made-empty",
    ))
    .await;
    let id = one_prompt(&e, &mock).await;

    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "1", "--files"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |name: &str| fs::read_to_string(e.ws.join(name)).unwrap();
    assert_eq!(read(".env"), "TOKEN=mine\n", "included though ignored");
    assert_eq!(read("run.log"), "agent", "ignored: left alone");
    assert_eq!(read("big.bin"), "agent", "over the cap: left alone");
    assert!(
        e.ws.join("kept-empty").is_dir(),
        "an empty directory is back"
    );
    assert!(!e.ws.join("made-empty").exists(), "and a made one gone");

    let out = mecha(&e, &mock, "config", &[]).await;
    let shown = stdout(&out);
    for key in [
        "checkpoint.enabled",
        "checkpoint.max_file_bytes",
        "checkpoint.max_snapshot_bytes",
        "checkpoint.include_ignored",
    ] {
        assert!(shown.contains(key), "{key}: {shown}");
    }
    let cap = shown
        .lines()
        .find(|l| l.starts_with("checkpoint.max_file_bytes"))
        .unwrap();
    assert!(
        cap.contains(" 100 ") && cap.contains("config.toml"),
        "{cap}"
    );
    assert!(
        stderr(&out).contains("[checkpoint] max_file_bytes = 100000 has no effect; it stays 100"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_bad_value_is_refused_naming_its_line_and_the_fix() {
    let mut e = env();
    e.extra_config = "[checkpoint]\nmax_file_bytes = 0\n".into();
    let mock = MockModel::start(Vec::new()).await;
    let out = mecha(&e, &mock, "config", &[]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("config.toml:5:"), "{said}");
    assert!(said.contains("whole number of bytes above 0"), "{said}");
    assert!(said.contains("enabled = false"), "{said}");
}

#[tokio::test]
async fn a_name_that_is_not_utf8_is_put_back_and_listed_readably() {
    let e = env();
    let name = OsStr::from_bytes(b"caf\xe9.txt");
    fs::write(e.ws.join(name), "before\n").unwrap();
    let mock = MockModel::start(shell(
        "printf after > \"$(printf 'caf\\351.txt')\" && mkdir \"$(printf 'd\\377')\"",
    ))
    .await;
    let id = one_prompt(&e, &mock).await;
    assert_eq!(fs::read(e.ws.join(name)).unwrap(), b"after");

    let out = mecha(&e, &mock, "rewind", &[&id, "--list"]).await;
    let listed = stdout(&out);
    assert!(listed.contains("caf\\xe9.txt"), "{listed}");
    assert!(listed.contains("d\\xff"), "{listed}");
    let out = mecha(&e, &mock, "rewind", &[&id, "--to", "1", "--files"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read(e.ws.join(name)).unwrap(), b"before\n");
    assert!(!e.ws.join(OsStr::from_bytes(b"d\xff")).exists());
}

//! When bwrap is tried: a run tries it before anything runs, `mecha tools`
//! only when something it starts is confined. A stand-in `bwrap` on PATH
//! records each call and fails as a machine without a usable /proc would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{Api, Env, env, stderr, stdout};
use mecha_testkit::{MockModel, MockReply, fixture_mcp};

/// A `bwrap` that appends a line to `calls` each time it runs, and fails.
fn failing_bwrap(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = dir.join("calls");
    let script = bin.join("bwrap");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho ran >> '{}'\n\
             echo \"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\" >&2\n\
             exit 1\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    calls
}

fn calls(record: &Path) -> usize {
    std::fs::read_to_string(record).map_or(0, |text| text.lines().count())
}

fn sandboxed(e: &mut Env, extra: &str) -> PathBuf {
    let record = failing_bwrap(&e.home);
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        e.home.join("bin").display()
    );
    e.extra_env.push(("PATH".into(), path));
    e.extra_config = format!("[sandbox]\nkind = \"bwrap\"\n{extra}");
    record
}

#[tokio::test]
async fn listing_the_tools_does_not_try_bwrap() {
    let mut e = env();
    let record = sandboxed(&mut e, "");
    let mock = MockModel::start(vec![]).await;
    let out = e.mecha(Api::OpenAi, &mock, "k", "tools", &[], "").await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("sandbox: bwrap (no network): shell commands run confined"),
        "{}",
        stdout(&out)
    );
    assert_eq!(calls(&record), 0, "the listing ran bwrap");
}

#[tokio::test]
async fn a_run_tries_bwrap_before_anything_runs() {
    let mut e = env();
    let record = sandboxed(&mut e, "");
    let mock = MockModel::start(vec![MockReply::text("never asked")]).await;
    let out = e.run(Api::OpenAi, &mock, "k", &["go"]).await;
    assert!(!out.status.success(), "{}", stdout(&out));
    let text = stderr(&out);
    assert!(text.contains("Can't mount proc"), "{text}");
    assert_eq!(calls(&record), 1);
    assert!(mock.requests().is_empty(), "the model was asked: {text}");
}

#[tokio::test]
async fn a_listing_that_confines_a_server_tries_bwrap_once_and_names_the_failure() {
    let mut e = env();
    let fixture = fixture_mcp();
    let servers = format!(
        "readable = [{dir:?}]\n\n[[mcp]]\nname = \"one\"\ncommand = {cmd:?}\nsandbox = true\n\n\
         [[mcp]]\nname = \"two\"\ncommand = {cmd:?}\nsandbox = true\n",
        dir = fixture.parent().unwrap().display().to_string(),
        cmd = fixture.display().to_string(),
    );
    let record = sandboxed(&mut e, &servers);
    let mock = MockModel::start(vec![]).await;
    let out = e.mecha(Api::OpenAi, &mock, "k", "tools", &[], "").await;
    let text = stdout(&out) + &stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed server fails the listing: {text}"
    );
    assert!(text.contains("Can't mount proc"), "{text}");
    assert!(
        text.contains("fs_read"),
        "the built-ins are still listed: {text}"
    );
    assert_eq!(calls(&record), 1, "bwrap was tried more than once: {text}");
}

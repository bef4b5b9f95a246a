//! The docker backend against the real engine, in a small image built
//! from this machine's own programs (tests/docker-image.sh; no registry).
//! Each test skips, saying why, where no engine answers, and fails under
//! `CI=true`, where `.ci/run` starts one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use mecha_sandbox::{Confined, HostEnv, Job, Network, Sandbox, SandboxConfig, SandboxKind};
use tokio::io::{AsyncBufReadExt, BufReader};

const IMAGE: &str = "mecha-test:local";

/// Whether an engine answers, and the test image is built (once).
fn engine_ready() -> bool {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let version = Command::new("docker")
            .args(["version", "--format", "{{.Server.Version}}"])
            .output()
            .map_err(|e| format!("no docker client ({e})"))?;
        if !version.status.success() {
            return Err(format!(
                "no Docker engine answers ({})",
                String::from_utf8_lossy(&version.stderr).trim()
            ));
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/docker-image.sh");
        let built = Command::new("bash").arg(&script).output().unwrap();
        assert!(
            built.status.success(),
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&built.stderr)
        );
        Ok(())
    });
    match ready {
        Ok(()) => true,
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the docker engine tests need a running engine: {why}; install docker.io and \
                 start dockerd (.ci/run does both)"
            );
            eprintln!("SKIPPED: {why}");
            false
        }
    }
}

fn sandbox() -> Option<Sandbox> {
    if !engine_ready() {
        return None;
    }
    let config = SandboxConfig {
        kind: Some(SandboxKind::Docker),
        image: Some(IMAGE.to_owned()),
        ..SandboxConfig::default()
    };
    Some(
        Sandbox::start(&config, HostEnv::current())
            .unwrap()
            .unwrap(),
    )
}

/// A workspace, canonical, as the tools hand it over.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<OsString, OsString> {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

/// `bash -c script` confined in `ws`, with `extra` in its environment.
fn confine(
    sandbox: &Sandbox,
    ws: &Path,
    script: &str,
    extra: &[(&str, &str)],
    read_only: &[PathBuf],
) -> Confined {
    let args = [OsString::from("-c"), OsString::from(script)];
    let mut env = env(extra);
    env.insert("PATH".into(), "/usr/bin:/bin".into());
    let mut confined = sandbox
        .confine(Job {
            program: "bash".as_ref(),
            args: &args,
            workspace: ws,
            env,
            network: Network::None,
            read_only,
            hidden: &[],
        })
        .unwrap();
    confined
        .command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    confined
}

/// The job's container name, from its `docker run` command line.
fn container_name(confined: &Confined) -> String {
    let args: Vec<String> = confined
        .command
        .as_std()
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let at = args.iter().position(|a| a == "--name").unwrap();
    args[at + 1].clone()
}

/// Every container of that name, running or not.
fn containers_named(name: &str) -> String {
    let out = Command::new("docker")
        .args(["ps", "-a", "--format", "{{.Names}}", "--filter"])
        .arg(format!("name=^{name}$"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Whether `path`'s contents change over a second (the survivor writes
/// every 50 ms).
async fn still_changing(path: &Path) -> bool {
    let before = read(path);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    read(path) != before
}

/// Polls `done` for up to ten seconds.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

/// Detached with `setsid` and `&`, stdio let go: it keeps counting into
/// `tick` for as long as anything lets it live.
const SURVIVOR: &str = "setsid bash -c 'i=0; while :; do i=$((i+1)); echo $i > tick; \
                        sleep 0.05; done' </dev/null >/dev/null 2>&1 &";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_a_finished_job_started_survives_it() {
    let Some(sandbox) = sandbox() else { return };
    let (_dir, ws) = workspace();
    // Until the survivor has written once, however loaded the machine.
    let script =
        format!("{SURVIVOR} sleep 1000 & until [ -s tick ]; do sleep 0.05; done; echo started");
    let confined = confine(&sandbox, &ws, &script, &[], &[]);
    let name = container_name(&confined);
    let Confined { mut command, lease } = confined;
    let out = command.output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
    // Polled: each tick truncates the file before it writes.
    assert!(
        eventually(|| !read(&ws.join("tick")).is_empty()).await,
        "the survivor never ran"
    );
    drop(lease);
    assert!(
        !still_changing(&ws.join("tick")).await,
        "a setsid process outlived its job"
    );
    assert_eq!(containers_named(&name), "");
}

/// A timeout or a cancellation kills the `docker run` client, which leaves
/// its container running: the lease is what ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_job_leaves_no_container_once_its_lease_drops() {
    let Some(sandbox) = sandbox() else { return };
    let (_dir, ws) = workspace();
    let script = format!("{SURVIVOR} exec sleep 1000");
    let confined = confine(&sandbox, &ws, &script, &[], &[]);
    let name = container_name(&confined);
    let Confined { mut command, lease } = confined;
    let mut child = command.spawn().unwrap();
    assert!(eventually(|| !read(&ws.join("tick")).is_empty()).await);
    child.kill().await.unwrap();
    assert!(
        still_changing(&ws.join("tick")).await,
        "the container went with its client: this test shows nothing"
    );
    drop(lease);
    assert!(
        !still_changing(&ws.join("tick")).await,
        "the job's container outlived its lease"
    );
    assert_eq!(containers_named(&name), "");
}

/// `Lease::finish` ends the container before it sweeps, so what a survivor
/// plants cannot come back after the sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_ends_the_container_before_it_sweeps() {
    let Some(sandbox) = sandbox() else { return };
    let (_dir, ws) = workspace();
    // Each write is whole (a rename), so the kill never leaves a config
    // cut short with nothing in it to undo.
    let script = "setsid bash -c 'while :; do mkdir -p nested/.git; printf \
                  \"[core]\\n\\tfsmonitor = touch /tmp/pwned\\n\" > nested/.git/c.tmp; \
                  mv nested/.git/c.tmp nested/.git/config; sleep 0.01; done' \
                  </dev/null >/dev/null 2>&1 & exec sleep 1000";
    let Confined { mut command, lease } = confine(&sandbox, &ws, script, &[], &[]);
    let mut child = command.spawn().unwrap();
    let config = ws.join("nested/.git/config");
    assert!(eventually(|| read(&config).contains("fsmonitor")).await);
    child.kill().await.unwrap();
    let undone = tokio::task::spawn_blocking(move || lease.finish())
        .await
        .unwrap()
        .undone;
    assert!(undone.iter().any(|u| u.contains("nested")), "{undone:?}");
    // Watched for a second: the planter rewrote it every few ms.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let text = read(&config);
        assert!(
            !text.contains("fsmonitor"),
            "planted again after the sweep: {text}"
        );
    }
}

/// Two jobs at once, one of them playing a sandboxed MCP server with a
/// secret in its environment: the other sees none of its processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cannot_see_another_jobs_processes_or_environment() {
    let Some(sandbox) = sandbox() else { return };
    let (_dir, ws) = workspace();
    let server = confine(
        &sandbox,
        &ws,
        "echo ready; exec sleep 1000",
        &[("SERVER_TOKEN", "s3cr3t-passthrough")],
        &[],
    );
    let Confined {
        command: mut server_cmd,
        lease: server_lease,
    } = server;
    let mut server_child = server_cmd.spawn().unwrap();
    let mut ready = String::new();
    BufReader::new(server_child.stdout.take().unwrap())
        .read_line(&mut ready)
        .await
        .unwrap();
    if ready.is_empty() {
        let out = server_child.wait_with_output().await.unwrap();
        panic!("the server did not start: {out:?}");
    }

    let probe = "for p in /proc/[0-9]*; do echo \"== $p\"; cat $p/cmdline; echo; \
                 cat $p/environ; echo; done";
    let Confined { mut command, lease } =
        confine(&sandbox, &ws, probe, &[("PROBE_MARK", "visible")], &[]);
    let out = command.output().await.unwrap();
    drop(lease);
    let seen = String::from_utf8_lossy(&out.stdout).into_owned();
    // The probe reads its own processes' environments, so it would have
    // found the server's had it been there to see.
    assert!(seen.contains("PROBE_MARK=visible"), "{seen}");
    assert!(!seen.contains("s3cr3t-passthrough"), "{seen}");
    assert!(
        !seen.contains("sleep"),
        "the server's process is visible: {seen}"
    );

    server_child.kill().await.unwrap();
    drop(server_lease);
}

/// What bwrap keeps read-only, the container keeps read-only; a
/// repository the job plants is undone by the sweep and reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protected_paths_hold_and_a_planted_repository_is_undone() {
    let Some(sandbox) = sandbox() else { return };
    let (_dir, ws) = workspace();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::write(ws.join("mecha.toml"), "# project\n").unwrap();
    let home = ws.join("mecha-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), "# mine\n").unwrap();
    let script = r#"
        try() { if eval "$1" 2>/dev/null; then echo "DID: $1"; fi; }
        try 'echo x > .git/config'
        try 'echo x > .git/hooks/pre-commit'
        try 'echo x > mecha.toml'
        try 'echo x > mecha-home/config.toml'
        try 'echo x > mecha-home/new'
        try 'mv .git moved-git'
        try 'mv .git/hooks moved-hooks'
        try 'mv mecha-home moved-home'
        try 'rm -rf .git'
        mkdir -p nested/.git && printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' > nested/.git/config && echo PLANTED
        echo ok > ordinary && echo WROTE
    "#;
    let read_only = [home.clone()];
    let Confined { mut command, lease } = confine(&sandbox, &ws, script, &[], &read_only);
    let out = command.output().await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!said.contains("DID"), "{said}");
    assert!(said.contains("PLANTED") && said.contains("WROTE"), "{said}");
    assert_eq!(read(&ws.join(".git/config")), "[core]\n\tbare = false\n");
    assert!(
        std::fs::read_dir(ws.join(".git/hooks"))
            .unwrap()
            .next()
            .is_none()
    );
    assert_eq!(read(&ws.join("mecha.toml")), "# project\n");
    assert_eq!(read(&home.join("config.toml")), "# mine\n");
    assert!(!home.join("new").exists());
    assert_eq!(read(&ws.join("ordinary")), "ok\n");

    let undone = lease.sweep();
    drop(lease);
    assert!(
        undone.iter().any(|u| u.contains("nested")),
        "not reported: {undone:?}"
    );
    assert!(
        !read(&ws.join("nested/.git/config")).contains("fsmonitor"),
        "{}",
        read(&ws.join("nested/.git/config"))
    );
}

/// A repository-less workspace gets the placeholder bwrap gives it: no
/// `.git` can be made at its root for host git to find.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_repository_can_be_made_at_the_root() {
    let Some(sandbox) = sandbox() else { return };
    let (_dir, ws) = workspace();
    let script = "mkdir -p .git/hooks 2>/dev/null && echo MADE; \
                  echo x > .git/config 2>/dev/null && echo WROTE; true";
    let Confined { mut command, lease } = confine(&sandbox, &ws, script, &[], &[]);
    let out = command.output().await.unwrap();
    drop(lease);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(said, "", "{out:?}");
    assert!(!ws.join(".git").exists(), "the placeholder was left behind");
}

/// Exactly the job's environment: nothing of the image's `ENV`, and none
/// of the `HOSTNAME`, `HOME` or `PATH` the engine adds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_sees_exactly_its_own_environment() {
    let Some(sandbox) = sandbox() else { return };
    let (_dir, ws) = workspace();
    for job_env in [
        env(&[("ONLY", "this one"), ("PATH", "/usr/bin:/bin")]),
        env(&[("ONLY", "this one")]),
    ] {
        let mut confined = sandbox
            .confine(Job {
                program: "/usr/bin/env".as_ref(),
                args: &[],
                workspace: &ws,
                env: job_env.clone(),
                network: Network::None,
                read_only: &[],
                hidden: &[],
            })
            .unwrap();
        confined.command.stdin(Stdio::null());
        let out = confined.command.output().await.unwrap();
        drop(confined.lease);
        assert!(out.status.success(), "{out:?}");
        let mut seen: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        seen.sort();
        let expected: Vec<String> = job_env
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect();
        assert_eq!(seen, expected);
    }
}

/// The container's /tmp is the job's own, as under bwrap: what a command
/// leaves there is named when it is done, and gone afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_job_leaves_in_tmp_is_named_and_discarded() {
    let Some(sandbox) = sandbox() else { return };
    let (_dir, ws) = workspace();
    let script = "echo draft > /tmp/report.txt && ls -ld /tmp && echo WROTE";
    let Confined { mut command, lease } = confine(&sandbox, &ws, script, &[], &[]);
    let out = command.output().await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("WROTE"),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let finished = tokio::task::spawn_blocking(move || lease.finish())
        .await
        .unwrap();
    let notice = finished.left_in_tmp.unwrap_or_default();
    assert!(
        notice.contains("left /tmp/report.txt in /tmp"),
        "{notice:?}"
    );
}

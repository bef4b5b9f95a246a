#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The docker backend's life cycle through the public API, against a fake
//! `docker` that records every call (no engine runs on these machines):
//! when containers are made and removed, what each job's `docker exec`
//! carries, and the kill that follows it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use mecha_sandbox::{HostEnv, Job, Sandbox, SandboxConfig, SandboxError, SandboxKind};

/// Logs, in the directory of the `docker` it was called as, each call as one line of `\x1f`-separated arguments, its
/// environment beside it, and a copy of any `--env-file`; answers like an
/// engine that is up, unless a file in the directory says otherwise.
const FAKE: &str = r#"#!/bin/sh
d="${0%/*}"
/usr/bin/env > "$d/env.$$"
PATH=/usr/bin:/bin
{ printf '%s\037' "$$" "$@"; echo; } >> "$d/log"
case "$1" in
version)
    [ -e "$d/engine-down" ] || exit 0
    echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
    exit 1 ;;
image)
    [ -e "$d/no-image" ] || exit 0
    echo "Error response from daemon: No such image: $5" >&2
    exit 1 ;;
run)
    printf '%064x\n' "$$" ;;
exec)
    while [ $# -gt 0 ]; do
        if [ "$1" = --env-file ]; then
            cat "$2" > "$d/envfile.$$"; stat -c %a "$2" > "$d/envmode.$$"
        fi
        shift
    done ;;
esac
exit 0
"#;

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    /// A `docker` symlink in a directory of its own, to the one script:
    /// the script is written once, before any test spawns anything, since
    /// a file still open for writing in a forked child cannot be executed
    /// (ETXTBSY).
    fn new() -> Self {
        static SCRIPT: OnceLock<PathBuf> = OnceLock::new();
        let script = SCRIPT.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap().keep();
            let script = dir.join("fake-docker");
            std::fs::write(&script, FAKE).unwrap();
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
            script
        });
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(script, dir.path().join("docker")).unwrap();
        Self { dir }
    }

    fn host(&self) -> HostEnv {
        HostEnv {
            path: self.dir.path().into(),
            home: Some(PathBuf::from("/home/someone")),
        }
    }

    fn start(&self, image: Option<&str>) -> Result<Option<Sandbox>, SandboxError> {
        let config = SandboxConfig {
            kind: Some(SandboxKind::Docker),
            image: image.map(str::to_owned),
            ..SandboxConfig::default()
        };
        Sandbox::start(&config, self.host())
    }

    /// Each call: (pid of the fake, its arguments).
    fn calls(&self) -> Vec<(String, Vec<String>)> {
        let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
        log.lines()
            .map(|line| {
                let mut fields: Vec<String> = line
                    .trim_end_matches('\x1f')
                    .split('\x1f')
                    .map(str::to_owned)
                    .collect();
                let pid = fields.remove(0);
                (pid, fields)
            })
            .collect()
    }

    fn verbs(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .map(|(_, a)| a[0].clone())
            .collect()
    }

    fn file(&self, name: &str, pid: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{name}.{pid}"))).unwrap()
    }
}

/// The client starts from a cleared environment: only what it needs to
/// find its engine (the fake's own sh adds PWD), none of the test's.
fn assert_client_env(client_env: &str) {
    let names: Vec<&str> = client_env
        .lines()
        .filter_map(|l| l.split('=').next())
        .filter(|n| *n != "PWD")
        .collect();
    assert!(names.contains(&"PATH"), "{client_env}");
    assert!(
        names
            .iter()
            .all(|n| ["PATH", "HOME"].contains(n) || n.starts_with("DOCKER_")),
        "{client_env}"
    );
}

fn job_env() -> BTreeMap<OsString, OsString> {
    [("PATH", "/usr/bin:/bin"), ("GREETING", "hello there")]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
}

fn job<'a>(workspace: &'a Path, args: &'a [OsString], network: bool) -> Job<'a> {
    Job {
        program: "bash".as_ref(),
        args,
        workspace,
        env: job_env(),
        network,
        read_only: &[],
    }
}

#[test]
fn start_checks_the_engine_and_the_image_but_makes_no_container() {
    let fake = Fake::new();
    let sandbox = fake.start(Some("debian:stable-slim")).unwrap();
    assert!(sandbox.is_some());
    assert_eq!(fake.verbs(), ["version", "image"]);
    let calls = fake.calls();
    assert_eq!(
        calls[1].1,
        [
            "image",
            "inspect",
            "--format",
            "{{.Id}}",
            "debian:stable-slim"
        ]
    );
    for (pid, _) in &calls {
        assert_client_env(&fake.file("env", pid));
    }
    drop(sandbox);
    // Nothing was made, so nothing is removed.
    assert_eq!(fake.verbs(), ["version", "image"]);
}

#[test]
fn what_cannot_be_honoured_is_an_error_never_an_unconfined_run() {
    let fake = Fake::new();
    assert_eq!(
        fake.start(None).unwrap_err(),
        SandboxError::DockerImageMissing
    );
    // The image is checked before docker is even asked.
    assert!(fake.verbs().is_empty());

    std::fs::write(fake.dir.path().join("no-image"), "").unwrap();
    let err = fake.start(Some("debian:stable-slim")).unwrap_err();
    assert!(
        matches!(err, SandboxError::DockerImageAbsent { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("docker pull debian:stable-slim"),
        "{err}"
    );

    std::fs::write(fake.dir.path().join("engine-down"), "").unwrap();
    let err = fake.start(Some("debian:stable-slim")).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("Cannot connect to the Docker daemon"),
        "{message}"
    );
    assert!(message.contains("start the Docker engine"), "{message}");
    assert!(message.contains("kind = \"bwrap\""), "{message}");
}

#[tokio::test]
async fn one_container_per_workspace_and_network_made_at_first_use_removed_at_the_end() {
    let fake = Fake::new();
    let workspace = tempfile::tempdir().unwrap();
    let args: Vec<OsString> = vec!["-c".into(), "true".into()];
    let sandbox = fake.start(Some("debian:stable-slim")).unwrap().unwrap();
    let clone = sandbox.clone();

    let first = sandbox
        .confine(job(workspace.path(), &args, false))
        .unwrap();
    let second = clone.confine(job(workspace.path(), &args, false)).unwrap();
    let networked = sandbox.confine(job(workspace.path(), &args, true)).unwrap();
    let runs: Vec<Vec<String>> = fake
        .calls()
        .into_iter()
        .filter(|(_, a)| a[0] == "run")
        .map(|(_, a)| a)
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].windows(2).any(|w| w == ["--network", "none"]));
    assert!(!runs[1].iter().any(|a| a == "--network"));
    let ws = workspace.path().display().to_string();
    for run in &runs {
        let mount = format!("type=bind,source={ws},target={ws}");
        assert!(run.contains(&mount), "{run:?}");
        let uid = user_ids();
        assert!(
            run.windows(2).any(|w| w == ["--user", uid.as_str()]),
            "{run:?}"
        );
    }
    drop((first, second, networked));

    drop(sandbox);
    assert!(
        !fake.verbs().contains(&"rm".to_owned()),
        "removed while a clone lives"
    );
    drop(clone);
    let (_, rm) = fake.calls().pop().unwrap();
    let ids: Vec<String> = fake
        .calls()
        .into_iter()
        .filter(|(_, a)| a[0] == "run")
        .map(|(pid, _)| format!("{:064x}", pid.parse::<u64>().unwrap()))
        .collect();
    let mut removed = rm[2..].to_vec();
    removed.sort();
    let mut expected = ids;
    expected.sort();
    assert_eq!(rm[..2], ["rm", "-f"]);
    assert_eq!(removed, expected);
}

fn user_ids() -> String {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    let uid = String::from_utf8(out.stdout).unwrap();
    let out = std::process::Command::new("id").arg("-g").output().unwrap();
    let gid = String::from_utf8(out.stdout).unwrap();
    format!("{}:{}", uid.trim(), gid.trim())
}

/// On the multi-threaded runtime, as mecha runs, the blocking docker calls
/// in `confine` and in the drops go through `block_in_place`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_gets_its_env_from_a_private_file_and_is_killed_when_its_lease_drops() {
    let fake = Fake::new();
    let workspace = tempfile::tempdir().unwrap();
    let args: Vec<OsString> = vec!["-c".into(), "echo hi".into()];
    let sandbox = fake.start(Some("debian:stable-slim")).unwrap().unwrap();
    let mut confined = sandbox
        .confine(job(workspace.path(), &args, false))
        .unwrap();
    let status = confined.command.status().await.unwrap();
    assert!(status.success());

    let (exec_pid, exec) = fake.calls().pop().unwrap();
    let container = fake
        .calls()
        .into_iter()
        .find(|(_, a)| a[0] == "run")
        .map(|(pid, _)| format!("{:064x}", pid.parse::<u64>().unwrap()))
        .unwrap();
    let ws = workspace.path().display().to_string();
    assert_eq!(exec[..4], ["exec", "-i", "-w", ws.as_str()]);
    assert_eq!(exec[4], "--env-file");
    assert_eq!(exec[6], container);
    assert_eq!(exec[exec.len() - 3..], ["bash", "-c", "echo hi"]);
    // The values travel in a file only the user can read, not on argv.
    assert_eq!(
        fake.file("envfile", &exec_pid),
        "GREETING=hello there\nPATH=/usr/bin:/bin\n"
    );
    assert_eq!(fake.file("envmode", &exec_pid).trim(), "600");
    assert!(!exec.iter().any(|a| a.contains("hello there")), "{exec:?}");
    assert_client_env(&fake.file("env", &exec_pid));
    let job_tag = exec
        .iter()
        .find(|a| a.starts_with("mecha-job-"))
        .unwrap()
        .clone();

    let calls_before = fake.calls().len();
    drop(confined.lease);
    let calls = fake.calls();
    assert_eq!(calls.len(), calls_before + 1, "one kill per job");
    let (_, kill) = calls.last().unwrap();
    assert_eq!(kill[..4], ["exec", container.as_str(), "bash", "-c"]);
    assert!(
        kill[4].starts_with(&format!("f=/tmp/{job_tag};")),
        "{kill:?}"
    );

    // A job that outlives the sandbox (an MCP server at the end of a run)
    // died with the container: its lease does not call docker again.
    let late = sandbox
        .confine(job(workspace.path(), &args, false))
        .unwrap();
    drop(sandbox);
    assert_eq!(fake.verbs().last().map(String::as_str), Some("rm"));
    let calls_before = fake.calls().len();
    drop(late);
    assert_eq!(fake.calls().len(), calls_before);
}

#[test]
fn a_value_docker_cannot_carry_is_refused_for_that_job_only() {
    let fake = Fake::new();
    let workspace = tempfile::tempdir().unwrap();
    let args: Vec<OsString> = Vec::new();
    let sandbox = fake.start(Some("debian:stable-slim")).unwrap().unwrap();
    let mut bad = job(workspace.path(), &args, false);
    bad.env.insert("MULTI".into(), "a\nb".into());
    let err = sandbox.confine(bad).unwrap_err();
    assert!(
        matches!(&err, SandboxError::Confine { reason, .. } if reason.contains("MULTI")),
        "{err:?}"
    );
    // No container was made for a job that could not run.
    assert!(!fake.verbs().contains(&"run".to_owned()));
    assert!(sandbox.confine(job(workspace.path(), &args, false)).is_ok());
}

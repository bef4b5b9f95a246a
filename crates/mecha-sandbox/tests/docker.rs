#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The docker backend's life cycle through the public API, against a fake
//! `docker` that records every call (no engine needed; docker_engine.rs
//! runs the real one): what start-up checks, what each job's `docker run`
//! carries, and the removal of its container that follows it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use mecha_sandbox::{HostEnv, Job, Sandbox, SandboxConfig, SandboxError, SandboxKind};

/// Logs, in the directory of the `docker` it was called as, each call as
/// one line of `\x1f`-separated arguments, its environment beside it, and
/// a copy of any `--env-file` and its mode; answers like an engine that is
/// up, unless a file in the directory says otherwise.
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
    if [ -e "$d/no-image" ]; then
        echo "Error response from daemon: No such image: $5" >&2
        exit 1
    fi
    printf 'PATH=/usr/local/bin:/usr/bin\nIMAGE_VAR=1\n' ;;
run)
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
            records: None,
            bridge: None,
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
        network: network.into(),
        read_only: &[],
        hidden: &[],
    }
}

#[test]
fn start_checks_the_engine_and_the_image_and_makes_no_container() {
    let fake = Fake::new();
    let sandbox = fake.start(Some("debian:stable-slim")).unwrap();
    assert!(sandbox.is_some());
    assert_eq!(fake.verbs(), ["version", "image"]);
    let calls = fake.calls();
    assert_eq!(calls[1].1[..2], ["image", "inspect"]);
    assert_eq!(calls[1].1.last().unwrap(), "debian:stable-slim");
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

fn run_calls(fake: &Fake) -> Vec<(String, Vec<String>)> {
    fake.calls()
        .into_iter()
        .filter(|(_, a)| a[0] == "run")
        .collect()
}

fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.windows(2)
        .find(|w| w[0] == flag)
        .map(|w| w[1].as_str())
}

fn user_ids() -> String {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    let uid = String::from_utf8(out.stdout).unwrap();
    let out = std::process::Command::new("id").arg("-g").output().unwrap();
    let gid = String::from_utf8(out.stdout).unwrap();
    format!("{}:{}", uid.trim(), gid.trim())
}

/// On the multi-threaded runtime, as mecha runs, the blocking docker call
/// in the lease's drop goes through `block_in_place`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_job_is_a_container_of_its_own_removed_when_its_lease_drops() {
    let fake = Fake::new();
    let workspace = tempfile::tempdir().unwrap();
    let args: Vec<OsString> = vec!["-c".into(), "echo hi".into()];
    let sandbox = fake.start(Some("debian:stable-slim")).unwrap().unwrap();
    let clone = sandbox.clone();
    let mut first = sandbox
        .confine(job(workspace.path(), &args, false))
        .unwrap();
    let mut second = clone.confine(job(workspace.path(), &args, true)).unwrap();
    // Confining asks the engine nothing; the job's own command does.
    assert_eq!(fake.verbs(), ["version", "image"]);
    assert!(first.command.status().await.unwrap().success());
    assert!(second.command.status().await.unwrap().success());

    let runs = run_calls(&fake);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let ws = workspace
        .path()
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let pid = std::process::id();
    let mut names = Vec::new();
    for (fake_pid, run) in &runs {
        for flag in ["--rm", "-i", "--init", "--read-only"] {
            assert!(run.iter().any(|a| a == flag), "{flag}: {run:?}");
        }
        assert_eq!(value_of(run, "--pull"), Some("never"));
        assert_eq!(value_of(run, "--user"), Some(user_ids().as_str()));
        assert_eq!(
            value_of(run, "--label"),
            Some(format!("mecha.run={pid}").as_str())
        );
        assert_eq!(value_of(run, "-w"), Some(ws.as_str()));
        let mount = format!("type=bind,source={ws},target={ws}");
        assert!(run.contains(&mount), "{run:?}");
        // The values travel in a file only the user can read, not on argv.
        assert_eq!(
            fake.file("envfile", fake_pid),
            "GREETING=hello there\nPATH=/usr/bin:/bin\n"
        );
        assert_eq!(fake.file("envmode", fake_pid).trim(), "600");
        assert!(!run.iter().any(|a| a.contains("hello there")), "{run:?}");
        assert_client_env(&fake.file("env", fake_pid));
        // The image's ENV is dropped; the job's own PATH is not.
        let tail = &run[run.iter().position(|a| a == "debian:stable-slim").unwrap()..];
        assert!(
            tail.windows(2).any(|w| w == ["-u", "IMAGE_VAR"]),
            "{tail:?}"
        );
        assert!(!tail.windows(2).any(|w| w == ["-u", "PATH"]), "{tail:?}");
        assert_eq!(tail[tail.len() - 4..], ["--", "bash", "-c", "echo hi"]);
        names.push(value_of(run, "--name").unwrap().to_owned());
    }
    assert_eq!(value_of(&runs[0].1, "--network"), Some("none"));
    assert_eq!(value_of(&runs[1].1, "--network"), None);
    assert_ne!(names[0], names[1]);
    for name in &names {
        assert!(name.starts_with(&format!("mecha-job-{pid}-")), "{name}");
    }

    drop(first.lease);
    let (_, rm) = fake.calls().pop().unwrap();
    assert_eq!(rm, ["rm", "-f", names[0].as_str()]);
    // Released explicitly: the container goes before the sweep.
    assert!(second.lease.finish().undone.is_empty());
    let (_, rm) = fake.calls().pop().unwrap();
    assert_eq!(rm, ["rm", "-f", names[1].as_str()]);

    // The sandbox itself holds no container, so dropping it calls nothing.
    let calls = fake.calls().len();
    drop((sandbox, clone));
    assert_eq!(fake.calls().len(), calls);
}

/// What bwrap mounts read-only, the container gets read-only too.
#[test]
fn the_protected_paths_are_mounted_read_only_and_pinned() {
    let fake = Fake::new();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(ws.join("home/.mecha")).unwrap();
    let read_only = [ws.join("home/.mecha")];
    let sandbox = fake.start(Some("debian:stable-slim")).unwrap().unwrap();
    let args: Vec<OsString> = Vec::new();
    let confined = sandbox
        .confine(Job {
            read_only: &read_only,
            hidden: &[],
            ..job(&ws, &args, false)
        })
        .unwrap();
    let run: Vec<String> = confined
        .command
        .as_std()
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let bind = |path: &Path, readonly: bool| {
        let p = path.display();
        let ro = if readonly { ",readonly" } else { "" };
        format!("type=bind,source={p},target={p}{ro}")
    };
    for (path, readonly) in [
        (ws.clone(), false),
        (ws.join(".git"), false),
        (ws.join(".git/hooks"), true),
        (ws.join(".git/config"), true),
        (ws.join("home/.mecha"), true),
    ] {
        assert!(run.contains(&bind(&path, readonly)), "{path:?}: {run:?}");
    }
    drop(confined);
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
    // Nothing was asked of docker for a job that could not run.
    assert_eq!(fake.verbs(), ["version", "image"]);
    assert!(sandbox.confine(job(workspace.path(), &args, false)).is_ok());
}

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

use super::*;
use crate::{SandboxConfig, SandboxKind};

fn config(image: Option<&str>) -> SandboxConfig {
    SandboxConfig {
        kind: Some(SandboxKind::Docker),
        image: image.map(str::to_owned),
        ..SandboxConfig::default()
    }
}

#[test]
fn an_image_is_required_and_must_be_a_reference() {
    assert_eq!(checked_image(None), Err(SandboxError::DockerImageMissing));
    assert_eq!(
        checked_image(Some("  ")),
        Err(SandboxError::DockerImageMissing)
    );
    for bad in [
        "--privileged",
        "-v/:/host",
        "debian stable",
        "a;b",
        "ubuntu\n",
    ] {
        assert!(
            matches!(
                checked_image(Some(bad)),
                Err(SandboxError::DockerImageInvalid { .. })
            ),
            "{bad:?} accepted"
        );
    }
    for good in [
        "debian:stable-slim",
        "ghcr.io/owner/img:1.2",
        "localhost:5000/x",
        "rust@sha256:0123abcd",
    ] {
        assert_eq!(checked_image(Some(good)).as_deref(), Ok(good));
    }
    let message = SandboxError::DockerImageMissing.to_string();
    assert!(
        message.contains("image = \"debian:stable-slim\""),
        "{message}"
    );
}

#[test]
fn only_an_absent_container_is_taken_for_a_removed_one() {
    assert!(gone(
        "Error response from daemon: No such container: mecha-job-1-1"
    ));
    assert!(gone(
        "Error response from daemon: removal of container mecha-job-1-1 is already in progress"
    ));
    assert!(!gone(
        "Cannot connect to the Docker daemon at unix:///x.sock"
    ));
    assert!(!gone("the docker client did not finish within 30 s"));
}

#[test]
fn no_docker_client_is_an_error_naming_the_package() {
    let empty = tempfile::tempdir().unwrap();
    let host = HostEnv {
        path: empty.path().into(),
        home: None,
        records: None,
        bridge: None,
    };
    let err = Docker::start_with(&config(Some("debian")), &host, |_| None).unwrap_err();
    assert_eq!(err, SandboxError::DockerMissing);
    let message = err.to_string();
    assert!(message.contains("docker.io"), "{message}");
    assert!(message.contains("kind = \"bwrap\""), "{message}");
}

/// Whether the real docker client is on PATH; without it a test that needs
/// it says so, and fails in CI rather than passing quietly.
fn real_client(host: &HostEnv) -> bool {
    let found = std::env::split_paths(&host.path).any(|dir| dir.join("docker").is_file());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "this test needs the docker client on PATH (the docker.io package)"
        );
        eprintln!("skipped: no docker client on PATH (install docker.io)");
    }
    found
}

/// `DOCKER_HOST` at a socket nobody listens on, so a test sees the absent
/// engine even on a machine that runs one.
fn absent_engine(dir: &tempfile::TempDir) -> impl Fn(&str) -> Option<OsString> {
    let socket: OsString = format!("unix://{}/absent.sock", dir.path().display()).into();
    move |name: &str| (name == "DOCKER_HOST").then(|| socket.clone())
}

/// The real client against the absent engine: start-up refuses, naming
/// the fix.
#[test]
fn an_engine_that_does_not_answer_is_an_error_at_start() {
    let host = HostEnv::current();
    if !real_client(&host) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lookup = absent_engine(&dir);
    let err = Docker::start_with(&config(Some("debian:stable-slim")), &host, lookup).unwrap_err();
    let SandboxError::DockerEngine { detail } = &err else {
        panic!("expected DockerEngine, got {err:?}");
    };
    assert!(detail.contains("absent.sock"), "{detail}");
    let message = err.to_string();
    assert!(message.contains("start the Docker engine"), "{message}");
    assert!(message.contains("kind = \"bwrap\""), "{message}");
}

#[test]
fn the_client_gets_only_what_it_needs_to_find_its_engine() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("docker");
    std::fs::write(&fake, "").unwrap();
    let host = HostEnv {
        path: dir.path().into(),
        home: Some(PathBuf::from("/home/u")),
        records: None,
        bridge: None,
    };
    let lookup = |name: &str| match name {
        "DOCKER_CONTEXT" => Some(OsString::from("remote")),
        "ANTHROPIC_API_KEY" => Some(OsString::from("sk-secret")),
        _ => None,
    };
    let client = Client::find(&host, lookup).unwrap();
    let program = client.job_program(Vec::new(), crate::Lease::default());
    let mut envs: Vec<(String, String)> = program
        .env
        .iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    envs.sort();
    let path = dir.path().display().to_string();
    assert_eq!(
        envs,
        [
            ("DOCKER_CONTEXT".to_owned(), "remote".to_owned()),
            ("HOME".to_owned(), "/home/u".to_owned()),
            ("PATH".to_owned(), path),
        ]
    );
}

/// The client checks its flags before it connects, so reaching "cannot
/// connect" means the real docker accepted every argument mecha builds
/// (an unknown flag or a mangled `--mount` stops it earlier).
#[test]
fn the_real_client_accepts_every_argument_vector() {
    let host = HostEnv::current();
    if !real_client(&host) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let client = Client::find(&host, absent_engine(&dir)).unwrap();
    let workspace = dir.path().join("work,space");
    let readable = [dir.path().join("a \"quoted\" dir")];
    let env_file = dir.path().join("env");
    std::fs::write(&env_file, "A=1\n").unwrap();
    let protected = [
        crate::protect::Mount::Pin {
            source: workspace.join(".git"),
            dest: workspace.join(".git"),
        },
        crate::protect::Mount::ReadOnly {
            source: workspace.join(".git/hooks"),
            dest: workspace.join(".git/hooks"),
        },
    ];
    let names: BTreeSet<String> = ["A".to_owned()].into();
    let spec = argv::RunSpec {
        image: "debian:stable-slim",
        user: "1000:1000",
        name: "mecha-job-1-1",
        label: "mecha.run=1",
        network: false,
        env_file: &env_file,
        env_names: &names,
        image_env: &["LANG".to_owned()],
        host_workspace: &workspace,
        workspace: &workspace,
        readable: &readable,
        writable: &[],
        protected: &protected,
        tmp: &env_file,
        bridge: None,
    };
    let job = ["-c".into(), "true".into()];
    let vectors = [
        argv::version_args(),
        argv::image_args("debian:stable-slim"),
        argv::run_args(&spec, "bash".as_ref(), &job).unwrap(),
        argv::run_args(
            &argv::RunSpec {
                network: true,
                ..spec
            },
            "bash".as_ref(),
            &job,
        )
        .unwrap(),
        argv::rm_args("mecha-job-1-1"),
    ];
    for args in vectors {
        let detail = client.run(&args, QUICK).unwrap_err();
        assert!(detail.contains("absent.sock"), "{args:?}: {detail}");
    }
}

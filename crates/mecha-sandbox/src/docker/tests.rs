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
fn only_a_hex_id_is_taken_from_docker_run() {
    assert!(is_container_id(&"ab12".repeat(16)));
    for bad in ["", "abc", "--rm", "0123456789ab cd", &"a".repeat(65)] {
        assert!(!is_container_id(bad), "{bad:?}");
    }
}

#[test]
fn no_docker_client_is_an_error_naming_the_package() {
    let empty = tempfile::tempdir().unwrap();
    let host = HostEnv {
        path: empty.path().into(),
        home: None,
    };
    let err = Docker::start_with(&config(Some("debian")), &host, |_| None).unwrap_err();
    assert_eq!(err, SandboxError::DockerMissing);
    let message = err.to_string();
    assert!(message.contains("docker.io"), "{message}");
    assert!(message.contains("kind = \"bwrap\""), "{message}");
}

/// The real docker client, pointed at a socket nobody listens on, so the
/// test sees the absent engine even on a machine that runs one.
#[test]
fn an_engine_that_does_not_answer_is_an_error_at_start() {
    let host = HostEnv::current();
    let has_client = std::env::split_paths(&host.path).any(|dir| dir.join("docker").is_file());
    if !has_client {
        assert!(
            std::env::var_os("CI").is_none(),
            "this test needs the docker client on PATH (the docker.io package)"
        );
        eprintln!("skipped: no docker client on PATH (install docker.io)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket: OsString = format!("unix://{}/absent.sock", dir.path().display()).into();
    let lookup = |name: &str| (name == "DOCKER_HOST").then(|| socket.clone());
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
    };
    let lookup = |name: &str| match name {
        "DOCKER_CONTEXT" => Some(OsString::from("remote")),
        "ANTHROPIC_API_KEY" => Some(OsString::from("sk-secret")),
        _ => None,
    };
    let client = Client::find(&host, lookup).unwrap();
    let command = client.job_command(Vec::new());
    let envs: Vec<(String, String)> = command
        .as_std()
        .get_envs()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.map(|v| v.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            )
        })
        .collect();
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

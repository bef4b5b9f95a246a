//! What confinement adds to one shell call: `bash -c true` spawned and
//! awaited, confined as the shell tool does it (`Sandbox::confine_program`,
//! `posix_spawn`, and the lease's sweep included) and not, alternating, and
//! the start-up probe. Run with bench/sandbox.sh; a second argument, an
//! image, measures the docker backend instead (one container per call).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use mecha_core::{Program, spawn_program_group};
use mecha_sandbox::{HostEnv, Job, Sandbox, SandboxConfig, SandboxKind};

/// Median and minimum in ms: on a busy machine the minimum is the better
/// estimate of the cost itself.
fn summary(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(samples[samples.len() / 2]), ms(samples[0]))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let runs: usize = std::env::args().nth(1).map_or(200, |n| n.parse().unwrap());
    let image = std::env::args().nth(2);
    let config = SandboxConfig {
        kind: Some(match image {
            Some(_) => SandboxKind::Docker,
            None => SandboxKind::Bwrap,
        }),
        image,
        ..SandboxConfig::default()
    };
    let mut starts = Vec::new();
    let mut sandbox = None;
    for _ in 0..20 {
        let at = Instant::now();
        sandbox = Sandbox::start(&config, HostEnv::current()).unwrap();
        starts.push(at.elapsed());
    }
    let sandbox = sandbox.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let args = [OsString::from("-c"), OsString::from("true")];
    let null = std::fs::File::create("/dev/null").unwrap();
    let (mut plain, mut confined) = (Vec::new(), Vec::new());
    // Of a confined call: `confine` (the walk for repositories, the job's
    // /tmp, the argument vector) and the lease's `finish` (the sweep).
    let (mut prepared, mut finished) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let at = Instant::now();
        let status = tokio::process::Command::new("bash")
            .args(&args)
            .current_dir(ws.path())
            .status()
            .await
            .unwrap();
        assert!(status.success());
        plain.push(at.elapsed());

        let at = Instant::now();
        let env = BTreeMap::from([(OsString::from("PATH"), sandbox.path_inside())]);
        let job = Job {
            program: "bash".as_ref(),
            args: &args,
            workspace: ws.path(),
            env,
            network: mecha_sandbox::Network::None,
            read_only: &[],
            hidden: &[],
        };
        let run = sandbox.confine_program(job).unwrap();
        prepared.push(at.elapsed());
        let keep: Vec<BorrowedFd<'_>> = run.keep.iter().map(AsFd::as_fd).collect();
        let (mut child, group) = spawn_program_group(&Program {
            path: &run.program,
            args: &run.args,
            env: &run.env,
            stdin: None,
            stdout: null.as_fd(),
            stderr: null.as_fd(),
            keep: &keep,
        })
        .unwrap();
        let status = child.wait().await.unwrap();
        let exited = Instant::now();
        run.lease.finish();
        finished.push(exited.elapsed());
        assert!(status.success());
        confined.push(at.elapsed());
        group.finish().await;
    }
    let (start, start_min) = summary(starts);
    let (plain, plain_min) = summary(plain);
    let (confined, confined_min) = summary(confined);
    let (prepared, _) = summary(prepared);
    let (finished, _) = summary(finished);
    println!(
        "Sandbox::start (probe included): median {start:.2} ms, min {start_min:.2} ms (20 runs)"
    );
    println!("bash -c true unconfined: median {plain:.2} ms, min {plain_min:.2} ms ({runs} runs)");
    println!(
        "bash -c true confined:   median {confined:.2} ms, min {confined_min:.2} ms \
         (confine {prepared:.2} ms, the sweep after {finished:.2} ms)"
    );
    let target = match sandbox.kind() {
        SandboxKind::Bwrap => " (target: under 5 ms)",
        SandboxKind::Docker => "",
    };
    println!(
        "added per call: median {:.2} ms, min {:.2} ms{target}",
        confined - plain,
        confined_min - plain_min
    );
}

//! Running scripts in the real bwrap sandbox, for the integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use mecha_sandbox::{Confined, HostEnv, Job, Sandbox, SandboxConfig, SandboxError, SandboxKind};

pub mod plants;

/// A bwrap sandbox, or `None` (the test skips) where bubblewrap is not
/// installed; under CI a missing bwrap fails the test instead.
pub fn sandbox(config: SandboxConfig, host: HostEnv) -> Option<Sandbox> {
    let config = SandboxConfig {
        kind: Some(SandboxKind::Bwrap),
        ..config
    };
    match Sandbox::start(&config, host) {
        Ok(sandbox) => Some(sandbox.expect("a kind is configured")),
        Err(SandboxError::BwrapMissing) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the sandbox tests need bubblewrap: apt-get install bubblewrap"
            );
            eprintln!("SKIPPED: bubblewrap is not installed");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// The default sandbox: no extra paths, no network.
pub fn bwrap() -> Option<Sandbox> {
    sandbox(SandboxConfig::default(), HostEnv::current())
}

#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn both(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// `bash -c script` confined in `workspace`.
pub fn confine(sandbox: &Sandbox, workspace: &Path, script: &str, network: bool) -> Confined {
    let args = [OsString::from("-c"), OsString::from(script)];
    let mut env = BTreeMap::new();
    env.insert(OsString::from("PATH"), sandbox.path_inside());
    env.insert(OsString::from("MECHA_TEST_VISIBLE"), OsString::from("1"));
    let mut confined = sandbox
        .confine(Job {
            program: "bash".as_ref(),
            args: &args,
            workspace,
            env,
            network: network.into(),
            read_only: &[],
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

/// Runs `script` to the end, then releases its lease.
pub async fn run(sandbox: &Sandbox, workspace: &Path, script: &str, network: bool) -> Run {
    let Confined { mut command, lease } = confine(sandbox, workspace, script, network);
    let out = command.output().await.unwrap();
    drop(lease);
    Run {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A python3 program confined (the system's, which the sandbox shows).
pub async fn python(sandbox: &Sandbox, workspace: &Path, program: &str, network: bool) -> Run {
    let script = format!("python3 - <<'PY'\n{program}\nPY");
    run(sandbox, workspace, &script, network).await
}

/// Whether a process whose command line starts with `command` runs on the
/// host (pgrep sees into the sandbox's pid namespace). Anchored, so the
/// bwrap and bash command lines that merely contain it do not count.
pub fn running(command: &str) -> bool {
    std::process::Command::new("pgrep")
        .args(["-f", &format!("^{command}")])
        .output()
        .unwrap()
        .status
        .success()
}

/// Polls `done` for up to five seconds.
pub async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if done() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    done()
}

/// Writes an executable script from a child shell, so no descriptor open
/// for writing exists in this process for a concurrent fork to inherit
/// (which would make running it fail with "Text file busy").
pub fn write_executable(path: &Path, content: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("/bin/sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(content.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
}

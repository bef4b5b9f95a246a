//! A shell command (or any child) cannot read the model API key out of
//! mecha's own environment through /proc.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// The check needs an unprivileged user: root reads any process's environ.
/// We are root here and in CI, so drop to `nobody` with util-linux setpriv.
fn can_drop_privileges() -> bool {
    let root = rustix::process::geteuid().is_root();
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !(root && setpriv) {
        assert!(
            std::env::var_os("CI").is_none(),
            "this test runs as root with setpriv (util-linux) to become `nobody`"
        );
        eprintln!("SKIPPED: needs root and setpriv to run mecha as an unprivileged user");
    }
    root && setpriv
}

#[test]
fn the_model_api_key_is_not_readable_from_proc() {
    if !can_drop_privileges() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o777)).unwrap();
    // Its own TMPDIR: a machine's /tmp need not be writable by `nobody`.
    let (home, ws, tmpdir) = (root.join("home"), root.join("ws"), root.join("tmp"));
    for dir in [&home, &ws, &tmpdir] {
        std::fs::create_dir(dir).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    // A copy the unprivileged user can surely execute, whatever the
    // permissions of the build directory.
    let mecha = root.join("mecha");
    std::fs::copy(assert_cmd::cargo::cargo_bin("mecha"), &mecha).unwrap();
    std::fs::set_permissions(&mecha, std::fs::Permissions::from_mode(0o755)).unwrap();
    let command = "tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null | grep -o 'sk-test-[A-Z]*' || echo NOT-READABLE";
    let call = serde_json::json!({"name": "shell", "input": {"command": command}});
    common::scripted_home(&home, &[call], "done", "");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&mecha)
        .args(["run", "--yes", "--output-format", "stream-json", "go"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("MECHA_HOME", &home)
        .env("TMPDIR", &tmpdir)
        .env("ANTHROPIC_API_KEY", "sk-test-SECRET")
        .current_dir(&ws)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !stdout.contains("sk-test-SECRET"),
        "the key was read from /proc: {stdout}"
    );
    assert!(stdout.contains("NOT-READABLE"), "{stdout}");
}

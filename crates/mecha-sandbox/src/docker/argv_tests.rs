use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

fn os(items: &[&str]) -> Vec<OsString> {
    items.iter().map(OsString::from).collect()
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<OsString, OsString> {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

fn spec<'a>(readable: &'a [PathBuf], writable: &'a [PathBuf], network: bool) -> RunSpec<'a> {
    RunSpec {
        image: "debian:stable-slim",
        user: "1000:1000",
        workspace: Path::new("/home/u/proj"),
        network,
        readable,
        writable,
        label: "mecha.run=42",
    }
}

#[test]
fn run_without_network_is_the_whole_confinement() {
    let readable = [PathBuf::from("/home/u/.cargo")];
    let writable = [PathBuf::from("/home/u/cache")];
    let args = run_args(&spec(&readable, &writable, false));
    assert_eq!(
        args,
        os(&[
            "run",
            "-d",
            "--rm",
            "--init",
            "--read-only",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--pull",
            "never",
            "--user",
            "1000:1000",
            "--label",
            "mecha.run=42",
            "--network",
            "none",
            "--tmpfs",
            "/tmp:rw,exec,nosuid,nodev,mode=1777",
            "--mount",
            "type=bind,source=/home/u/proj,target=/home/u/proj",
            "--mount",
            "type=bind,source=/home/u/cache,target=/home/u/cache",
            "--mount",
            "type=bind,source=/home/u/.cargo,target=/home/u/.cargo,readonly",
            "-w",
            "/home/u/proj",
            "debian:stable-slim",
            "sleep",
            "2147483647",
        ])
    );
}

#[test]
fn run_with_network_uses_the_default_bridge() {
    let args = run_args(&spec(&[], &[], true));
    assert!(!args.iter().any(|a| a == "--network"), "{args:?}");
    assert!(!args.iter().any(|a| a == "none"), "{args:?}");
    // Everything else stays.
    for flag in ["--read-only", "--init", "--rm", "ALL", "no-new-privileges"] {
        assert!(args.iter().any(|a| a == flag), "{flag} missing: {args:?}");
    }
}

#[test]
fn a_path_listed_twice_is_mounted_once_and_the_workspace_stays_writable() {
    let readable = [PathBuf::from("/home/u/proj"), PathBuf::from("/data")];
    let writable = [PathBuf::from("/data")];
    let args = run_args(&spec(&readable, &writable, false));
    let mounts: Vec<&OsString> = args
        .iter()
        .zip(args.iter().skip(1))
        .filter(|(flag, _)| *flag == "--mount")
        .map(|(_, value)| value)
        .collect();
    assert_eq!(
        mounts,
        [
            "type=bind,source=/home/u/proj,target=/home/u/proj",
            "type=bind,source=/data,target=/data",
        ]
    );
}

#[test]
fn a_comma_in_a_path_is_quoted_not_split_into_mount_options() {
    // Unquoted, `,readonly` in a directory name would be read as an option
    // and `source=/x,target=/etc` could retarget the mount.
    let arg = mount_arg(Path::new("/w/a,target=/etc,\"q\""), false);
    assert_eq!(
        arg,
        "type=bind,\"source=/w/a,target=/etc,\"\"q\"\"\",\"target=/w/a,target=/etc,\"\"q\"\"\""
    );
}

#[test]
fn exec_runs_the_job_in_its_own_session_with_its_env_from_a_file() {
    let job_env = env(&[("PATH", "/usr/bin:/bin"), ("SECRET", "hunter2")]);
    let args = exec_args(
        "abc123",
        Path::new("/home/u/proj"),
        Path::new("/tmp/mecha-docker-env-x"),
        7,
        &job_env,
        "bash".as_ref(),
        &os(&["-c", "ls -la"]),
    );
    let mut expected = os(&[
        "exec",
        "-i",
        "-w",
        "/home/u/proj",
        "--env-file",
        "/tmp/mecha-docker-env-x",
        "abc123",
        "setsid",
        "-w",
        "bash",
        "-c",
    ]);
    expected.push(wrapper_script("/tmp", 7).into());
    expected.extend(os(&["mecha-job-7", "PATH SECRET", "bash", "-c", "ls -la"]));
    assert_eq!(args, expected);
    // No value reaches a command line the host's `ps` shows.
    assert!(
        !args.iter().any(|a| a.to_string_lossy().contains("hunter2")),
        "{args:?}"
    );
}

#[test]
fn kill_and_rm_name_the_container_and_the_job() {
    let mut expected = os(&["exec", "abc123", "bash", "-c"]);
    expected.push(kill_script("/tmp", 9).into());
    assert_eq!(kill_args("abc123", 9), expected);
    assert!(kill_script("/tmp", 9).contains("/tmp/mecha-job-9"));
    assert_eq!(
        rm_args(&["a1".to_owned(), "b2".to_owned()]),
        os(&["rm", "-f", "a1", "b2"])
    );
}

#[test]
fn env_file_holds_every_variable_and_refuses_what_docker_would_mangle() {
    let file = env_file(&env(&[("A", "1"), ("B", "x = y "), ("E", "")])).unwrap();
    assert_eq!(file, b"A=1\nB=x = y \nE=\n");
    for (name, value, says) in [
        ("K", "line\nbreak", "line break"),
        ("K", "cr\r", "line break"),
        ("A B", "1", "not a name"),
        ("#K", "1", "not a name"),
        ("", "1", "not a name"),
    ] {
        let err = env_file(&env(&[(name, value)])).unwrap_err();
        assert!(err.contains(says), "{name:?}={value:?}: {err}");
    }
}

/// Runs the wrapper on this machine's bash and setsid, as the container
/// would, with the job files in `dir`.
fn start_wrapped(dir: &Path, job: u64, job_env: &[(&str, &str)], program: &[&str]) -> Command {
    let mut command = Command::new("setsid");
    command
        .args(["-w", "bash", "-c"])
        .arg(wrapper_script(dir.to_str().unwrap(), job))
        .arg(format!("mecha-job-{job}"))
        .arg(keep_list(&env(job_env)))
        .args(program)
        .env_clear()
        .envs(job_env.iter().copied())
        // What docker exec adds, which the job must not see.
        .env("HOSTNAME", "c0ffee")
        .env("IMAGE_ENV", "from-the-image");
    command
}

fn run_kill(dir: &Path, job: u64) {
    let status = Command::new("bash")
        .arg("-c")
        .arg(kill_script(dir.to_str().unwrap(), job))
        .status()
        .unwrap();
    assert!(status.success());
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; only its entry is left until it is reaped.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(") ").next().unwrap_or("").starts_with('Z'),
        Err(_) => false,
    }
}

fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn the_wrapper_leaves_exactly_the_jobs_environment() {
    let dir = tempfile::tempdir().unwrap();
    let job_env = [("PATH", "/usr/bin:/bin"), ("A", "1")];
    let out = start_wrapped(dir.path(), 1, &job_env, &["env"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut seen: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    seen.sort();
    assert_eq!(seen, ["A=1", "PATH=/usr/bin:/bin"]);
}

#[test]
fn the_kill_reaches_background_and_regrouped_processes_of_the_job() {
    let dir = tempfile::tempdir().unwrap();
    // One sleep in the job's group, one moved to a group of its own by
    // job control (still in the job's session).
    let program = [
        "bash",
        "-c",
        "sleep 300 & echo $!; set -m; sleep 300 & echo $!; wait",
    ];
    let mut child = start_wrapped(dir.path(), 2, &[("PATH", "/usr/bin:/bin")], &program)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut pids = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        pids.push(line.trim().parse::<u32>().unwrap());
    }
    assert!(pids.iter().all(|&pid| alive(pid)));
    run_kill(dir.path(), 2);
    for pid in pids {
        assert!(gone_within(pid, Duration::from_secs(5)), "{pid} survived");
    }
    let _ = child.wait();
}

#[test]
fn a_job_killed_before_it_started_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    run_kill(dir.path(), 3);
    let marker = dir.path().join("ran");
    let status = start_wrapped(
        dir.path(),
        3,
        &[("PATH", "/usr/bin:/bin")],
        &["touch", marker.to_str().unwrap()],
    )
    .status()
    .unwrap();
    assert_eq!(status.code(), Some(137));
    assert!(!marker.exists());
}

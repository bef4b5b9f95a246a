use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

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

fn names(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

struct Lists {
    readable: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    protected: Vec<Mount>,
    env_names: BTreeSet<String>,
    image_env: Vec<String>,
}

impl Lists {
    fn new() -> Self {
        Self {
            readable: Vec::new(),
            writable: Vec::new(),
            protected: Vec::new(),
            env_names: names(&["PATH", "SECRET"]),
            image_env: vec!["LANG".to_owned(), "PATH".to_owned()],
        }
    }

    fn spec(&self, network: bool) -> RunSpec<'_> {
        RunSpec {
            image: "debian:stable-slim",
            user: "1000:1000",
            name: "mecha-job-42-7",
            label: "mecha.run=42",
            network,
            env_file: Path::new("/tmp/mecha-docker-env-x"),
            env_names: &self.env_names,
            image_env: &self.image_env,
            host_workspace: Path::new("/real/proj"),
            workspace: Path::new("/home/u/proj"),
            readable: &self.readable,
            writable: &self.writable,
            protected: &self.protected,
            tmp: Path::new("/var/tmp/mecha-tmp-x"),
            bridge: None,
        }
    }
}

fn pin(path: &str) -> Mount {
    Mount::Pin {
        source: path.into(),
        dest: path.into(),
    }
}

fn read_only(path: &str) -> Mount {
    Mount::ReadOnly {
        source: path.into(),
        dest: path.into(),
    }
}

fn mounts(args: &[OsString]) -> Vec<&OsString> {
    args.windows(2)
        .filter(|w| w[0] == "--mount")
        .map(|w| &w[1])
        .collect()
}

#[test]
fn run_without_network_is_the_whole_confinement() {
    let mut lists = Lists::new();
    lists.readable = vec!["/home/u/.cargo".into()];
    lists.writable = vec!["/home/u/cache".into()];
    lists.protected = vec![pin("/real/proj/.git"), read_only("/real/proj/.git/hooks")];
    let args = run_args(&lists.spec(false), "bash".as_ref(), &os(&["-c", "ls -la"])).unwrap();
    assert_eq!(
        args,
        os(&[
            "run",
            "--rm",
            "-i",
            "--init",
            "--pull",
            "never",
            "--read-only",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--user",
            "1000:1000",
            "--name",
            "mecha-job-42-7",
            "--label",
            "mecha.run=42",
            "--log-driver",
            "none",
            "--network",
            "none",
            "--env-file",
            "/tmp/mecha-docker-env-x",
            "-w",
            "/home/u/proj",
            "--mount",
            "type=bind,source=/real/proj,target=/home/u/proj",
            "--mount",
            "type=bind,source=/home/u/cache,target=/home/u/cache",
            "--mount",
            "type=bind,source=/home/u/.cargo,target=/home/u/.cargo,readonly",
            "--mount",
            "type=bind,source=/var/tmp/mecha-tmp-x,target=/tmp",
            "--mount",
            "type=bind,source=/real/proj/.git,target=/real/proj/.git",
            "--mount",
            "type=bind,source=/real/proj/.git/hooks,target=/real/proj/.git/hooks,readonly",
            "--entrypoint",
            "/usr/bin/env",
            "debian:stable-slim",
            // What the engine and the image add, less the job's own names.
            "-u",
            "HOME",
            "-u",
            "HOSTNAME",
            "-u",
            "LANG",
            "-u",
            "TERM",
            "--",
            "bash",
            "-c",
            "ls -la",
        ])
    );
}

#[test]
fn run_with_network_uses_the_default_bridge() {
    let lists = Lists::new();
    let args = run_args(&lists.spec(true), "true".as_ref(), &[]).unwrap();
    assert!(!args.iter().any(|a| a == "--network"), "{args:?}");
    assert!(!args.iter().any(|a| a == "host"), "{args:?}");
    for flag in [
        "--read-only",
        "--init",
        "--rm",
        "ALL",
        "no-new-privileges",
        "--env-file",
    ] {
        assert!(args.iter().any(|a| a == flag), "{flag} missing: {args:?}");
    }
}

/// A listed `/tmp` keeps its way; the job's own is not mounted over it.
#[test]
fn a_listed_tmp_is_not_replaced_by_the_jobs_own() {
    let mut lists = Lists::new();
    lists.writable = vec!["/tmp".into()];
    let args = run_args(&lists.spec(false), "true".as_ref(), &[]).unwrap();
    assert_eq!(
        mounts(&args),
        [
            "type=bind,source=/real/proj,target=/home/u/proj",
            "type=bind,source=/tmp,target=/tmp",
        ]
    );
}

#[test]
fn a_path_listed_twice_is_mounted_once_and_the_workspace_stays_writable() {
    let mut lists = Lists::new();
    lists.readable = vec!["/home/u/proj".into(), "/data".into()];
    lists.writable = vec!["/data".into()];
    let args = run_args(&lists.spec(false), "true".as_ref(), &[]).unwrap();
    assert_eq!(
        mounts(&args),
        [
            "type=bind,source=/real/proj,target=/home/u/proj",
            "type=bind,source=/data,target=/data",
            "type=bind,source=/var/tmp/mecha-tmp-x,target=/tmp",
        ]
    );
}

/// Docker refuses a target given twice; where a protection mount meets
/// another mount of the same target, the result must still protect.
#[test]
fn read_only_protection_wins_over_any_other_mount_of_its_target() {
    let mut lists = Lists::new();
    lists.writable = vec!["/home/u/.mecha".into(), "/cache".into()];
    lists.protected = vec![
        // A pin onto a writable root is a mount point already.
        pin("/cache"),
        pin("/real/proj/.git"),
        read_only("/home/u/.mecha"),
        read_only("/real/proj/.git"),
    ];
    let args = run_args(&lists.spec(false), "true".as_ref(), &[]).unwrap();
    assert_eq!(
        mounts(&args),
        [
            "type=bind,source=/real/proj,target=/home/u/proj",
            "type=bind,source=/home/u/.mecha,target=/home/u/.mecha,readonly",
            "type=bind,source=/cache,target=/cache",
            "type=bind,source=/var/tmp/mecha-tmp-x,target=/tmp",
            "type=bind,source=/real/proj/.git,target=/real/proj/.git,readonly",
        ]
    );
    // The caller protecting the workspace itself makes all of it read-only.
    lists.protected = vec![Mount::ReadOnly {
        source: "/real/proj".into(),
        dest: "/home/u/proj".into(),
    }];
    let args = run_args(&lists.spec(false), "true".as_ref(), &[]).unwrap();
    assert_eq!(
        mounts(&args)[0],
        "type=bind,source=/real/proj,target=/home/u/proj,readonly"
    );
}

#[test]
fn a_comma_in_a_path_is_quoted_not_split_into_mount_options() {
    // Unquoted, `,readonly` in a directory name would be read as an option
    // and `source=/x,target=/etc` could retarget the mount.
    let path = Path::new("/w/a,target=/etc,\"q\"");
    let bind = Bind {
        source: path,
        target: path,
        readonly: false,
    };
    assert_eq!(
        mount_arg(&bind).unwrap(),
        "type=bind,\"source=/w/a,target=/etc,\"\"q\"\"\",\"target=/w/a,target=/etc,\"\"q\"\"\""
    );
}

/// The client would turn the bytes into U+FFFD, mounting or running
/// something else than asked.
#[test]
fn what_is_not_utf8_is_refused_rather_than_changed() {
    let bad = PathBuf::from(OsString::from_vec(b"/data/\xff".to_vec()));
    let mut lists = Lists::new();
    lists.protected = vec![Mount::ReadOnly {
        source: bad.clone(),
        dest: bad.clone(),
    }];
    let err = run_args(&lists.spec(false), "true".as_ref(), &[]).unwrap_err();
    assert!(
        err.contains("mount source") && err.contains("rename it"),
        "{err}"
    );
    let lists = Lists::new();
    let arg = OsString::from_vec(b"\xfe".to_vec());
    let err = run_args(&lists.spec(false), "cat".as_ref(), &[arg]).unwrap_err();
    assert!(err.contains("argument"), "{err}");
}

/// env would run `B=1` as an assignment and then the first argument.
#[test]
fn a_program_env_would_read_as_a_variable_is_refused() {
    let lists = Lists::new();
    let err = run_args(&lists.spec(false), "/opt/A=1/server".as_ref(), &[]).unwrap_err();
    assert!(err.contains("holds `=`"), "{err}");
    // In an argument it is just text.
    assert!(run_args(&lists.spec(false), "env".as_ref(), &os(&["A=1"])).is_ok());
}

/// No value reaches a command line the host's `ps` shows: only names.
#[test]
fn values_travel_in_the_file_never_on_the_command_line() {
    let lists = Lists::new();
    let args = run_args(&lists.spec(false), "true".as_ref(), &[]).unwrap();
    let file = env_file(&env(&[("PATH", "/usr/bin"), ("SECRET", "hunter2")])).unwrap();
    assert_eq!(file, b"PATH=/usr/bin\nSECRET=hunter2\n");
    assert!(
        !args.iter().any(|a| a.to_string_lossy().contains("hunter2")),
        "{args:?}"
    );
}

#[test]
fn the_job_keeps_every_name_it_sets_and_loses_every_other() {
    let job = names(&["HOME", "PATH"]);
    let image = vec!["HOME".to_owned(), "JAVA_HOME".to_owned()];
    let dropped: Vec<&str> = unset_names(&job, &image).collect();
    assert_eq!(dropped, ["HOSTNAME", "JAVA_HOME", "TERM"]);
}

#[test]
fn the_image_env_is_read_by_name() {
    let printed = "PATH=/usr/bin:/bin\nLANG=C.UTF-8\nMULTI=a\nb c\nEMPTY=\n=odd\n\n";
    assert_eq!(image_env_names(printed), ["EMPTY", "LANG", "MULTI", "PATH"]);
}

#[test]
fn rm_names_the_container() {
    assert_eq!(
        rm_args("mecha-job-42-7"),
        os(&["rm", "-f", "mecha-job-42-7"])
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

#[test]
fn an_allowlisted_job_has_no_network_and_runs_under_the_bridge() {
    let parts = Lists::new();
    let bridge = crate::allow::Bridge {
        exe: "/opt/mecha".into(),
        socket: "/tmp/mecha-proxy-1/proxy.sock".into(),
    };
    let spec = RunSpec {
        bridge: Some(&bridge),
        ..parts.spec(false)
    };
    let args: Vec<String> = run_args(&spec, "bash".as_ref(), &["-c".into(), "true".into()])
        .unwrap()
        .into_iter()
        .map(|a| a.into_string().unwrap())
        .collect();
    let joined = args.join(" ");
    assert!(joined.contains("--network none"), "{joined}");
    assert!(
        joined.contains("type=bind,source=/opt/mecha,target=/run/mecha/bridge,readonly"),
        "{joined}"
    );
    assert!(
        joined.contains(
            "type=bind,source=/tmp/mecha-proxy-1/proxy.sock,target=/run/mecha/proxy.sock"
        ),
        "{joined}"
    );
    assert!(
        joined.ends_with(
            "-- /run/mecha/bridge __sandbox-bridge /run/mecha/proxy.sock -- bash -c true"
        ),
        "{joined}"
    );
}

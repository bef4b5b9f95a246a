//! The argument vectors mecha hands the docker client, as pure functions:
//! what a job's container is allowed can be read and tested here without
//! an engine.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::allow::{self, BRIDGE_INSIDE, Bridge, SOCKET_INSIDE};
use crate::protect::Mount;

/// What the engine puts in a container's environment on its own when the
/// job's lacks them; `TERM` only comes with a terminal, which mecha never
/// asks for, but costs nothing to list.
const ENGINE_VARS: [&str; 4] = ["HOME", "HOSTNAME", "PATH", "TERM"];

/// The container's first program (under `--init`): it drops what the
/// engine and the image added to the environment, then becomes the job.
/// Every image has it (`#!/usr/bin/env` scripts rely on it), and naming it
/// as the entrypoint also keeps the image's own entrypoint from running.
const ENV_PROGRAM: &str = "/usr/bin/env";

/// What one job's container is given.
#[derive(Debug)]
pub(super) struct RunSpec<'a> {
    pub image: &'a str,
    /// `UID:GID`, the user's own ids, so files written in the workspace are
    /// the user's and nothing inside is root.
    pub user: &'a str,
    /// `mecha-job-<pid>-<nonce>-<n>`: what the lease removes, by name.
    pub name: &'a str,
    /// A `key=value` label, so that containers a killed mecha left behind
    /// can be found with `docker ps --filter label=...`.
    pub label: &'a str,
    pub network: bool,
    /// The job's environment, read by the client (see [`env_file`]).
    pub env_file: &'a Path,
    /// The names of the job's environment, and of the image's own `ENV`.
    pub env_names: &'a BTreeSet<String>,
    pub image_env: &'a [String],
    /// The workspace on the host (canonical), and where it is inside.
    pub host_workspace: &'a Path,
    pub workspace: &'a Path,
    /// Only the ones that exist (a missing toolchain is skipped, as bwrap's
    /// `--ro-bind-try` does).
    pub readable: &'a [PathBuf],
    pub writable: &'a [PathBuf],
    /// The protection mounts (protect.rs), pins first.
    pub protected: &'a [Mount],
    /// The job's `/tmp` on the host (scratch.rs).
    pub tmp: &'a Path,
    /// With `allow_hosts`: mecha's binary and the proxy's socket, bound in
    /// and put before the program (the container has no network).
    pub bridge: Option<&'a Bridge>,
}

/// `docker run` for one job: a self-removing container with no
/// capabilities, a read-only root, no way to gain privileges, no network
/// unless the job asks for it (then docker's default bridge), and the job
/// as its one program, stdio attached. Errors name what docker cannot
/// carry: the client sends every path and argument as UTF-8 text and would
/// replace anything else, so a mount or a command would silently change.
pub(super) fn run_args(
    spec: &RunSpec<'_>,
    program: &OsStr,
    program_args: &[OsString],
) -> Result<Vec<OsString>, String> {
    let mut args = strings(&[
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
        spec.user,
        "--name",
        spec.name,
        "--label",
        spec.label,
        // The output reaches mecha through the client; the engine keeps no
        // copy of it on disk.
        "--log-driver",
        "none",
    ]);
    if !spec.network {
        args.extend(strings(&["--network", "none"]));
    }
    args.push("--env-file".into());
    args.push(text(spec.env_file.as_os_str(), "the environment file")?.into());
    args.push("-w".into());
    args.push(text(spec.workspace.as_os_str(), "the workspace")?.into());
    for bind in binds(spec) {
        args.push("--mount".into());
        args.push(mount_arg(&bind)?);
    }
    args.extend(strings(&["--entrypoint", ENV_PROGRAM, spec.image]));
    for name in unset_names(spec.env_names, spec.image_env) {
        args.push("-u".into());
        args.push(name.into());
    }
    let program = text(program, "the program")?;
    if program.contains('=') {
        // env reads NAME=value operands before the program, `--` or not.
        return Err(format!(
            "the program `{program}` holds `=`, which env inside the container would take for \
             a variable; give a path without one"
        ));
    }
    args.push("--".into());
    let line = match spec.bridge {
        Some(_) => allow::bridged(program.as_ref(), program_args),
        None => [OsString::from(program)]
            .into_iter()
            .chain(program_args.iter().cloned())
            .collect(),
    };
    for arg in line {
        args.push(text(&arg, "an argument")?.into());
    }
    Ok(args)
}

/// What `env -u` drops: whatever the engine or the image would add that
/// the job did not ask for, so the job sees exactly its own environment.
fn unset_names<'a>(
    env_names: &'a BTreeSet<String>,
    image_env: &'a [String],
) -> impl Iterator<Item = &'a str> {
    let added: BTreeSet<&str> = ENGINE_VARS
        .into_iter()
        .chain(image_env.iter().map(String::as_str))
        .collect();
    added
        .into_iter()
        .filter(move |name| !env_names.contains(*name))
}

/// One bind mount of a job's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bind<'a> {
    pub source: &'a Path,
    pub target: &'a Path,
    pub readonly: bool,
}

/// Where the job's private directory is mounted.
const TMP: &str = "/tmp";

/// The bind mounts, one per target. Docker mounts them shallowest target
/// first whatever the order here, and refuses a target given twice, so:
/// the workspace, `writable` and `readable` keep the first way a target
/// appears (the workspace stays writable if also listed readable); a pin
/// onto a target already mounted adds nothing (it is already a mount
/// point, which cannot be renamed away); a read-only protection mount
/// replaces whatever else had its target, since it is a mount point too
/// and the protection must win, as bwrap's later mount does. The job's
/// `/tmp` comes after the listed paths, so a listed `/tmp` keeps its way.
pub(super) fn binds<'a>(spec: &'a RunSpec<'_>) -> Vec<Bind<'a>> {
    let mut binds = vec![Bind {
        source: spec.host_workspace,
        target: spec.workspace,
        readonly: false,
    }];
    let listed = spec
        .writable
        .iter()
        .map(|p| (p, false))
        .chain(spec.readable.iter().map(|p| (p, true)));
    for (path, readonly) in listed {
        if !binds.iter().any(|b| b.target == path) {
            binds.push(Bind {
                source: path,
                target: path,
                readonly,
            });
        }
    }
    if let Some(bridge) = spec.bridge {
        binds.push(Bind {
            source: &bridge.exe,
            target: Path::new(BRIDGE_INSIDE),
            readonly: true,
        });
        binds.push(Bind {
            source: &bridge.socket,
            target: Path::new(SOCKET_INSIDE),
            readonly: false,
        });
    }
    // The job's own /tmp, unless a listed path is /tmp itself.
    if !binds.iter().any(|b| b.target == Path::new(TMP)) {
        binds.push(Bind {
            source: spec.tmp,
            target: Path::new(TMP),
            readonly: false,
        });
    }
    for mount in spec.protected {
        let (source, target, readonly) = match mount {
            Mount::Pin { source, dest } => (source, dest, false),
            Mount::ReadOnly { source, dest } => (source, dest, true),
        };
        let bind = Bind {
            source,
            target,
            readonly,
        };
        match binds.iter_mut().find(|b| b.target == target) {
            None => binds.push(bind),
            Some(existing) if readonly => *existing = bind,
            Some(_) => {}
        }
    }
    binds
}

/// One `--mount` value. Docker reads it as a CSV record, so a path holding
/// a comma or a quote is quoted, CSV style, rather than split into fields
/// (`-v` has no quoting at all and splits on every `:`).
fn mount_arg(bind: &Bind<'_>) -> Result<OsString, String> {
    let source = text(bind.source.as_os_str(), "a mount source")?;
    let target = text(bind.target.as_os_str(), "a mount target")?;
    let mut fields = vec![
        "type=bind".to_owned(),
        format!("source={source}"),
        format!("target={target}"),
    ];
    if bind.readonly {
        fields.push("readonly".to_owned());
    }
    let quoted: Vec<String> = fields.into_iter().map(csv_field).collect();
    Ok(quoted.join(",").into())
}

fn csv_field(field: String) -> String {
    if !field.contains([',', '"', '\n', '\r']) {
        return field;
    }
    format!("\"{}\"", field.replace('"', "\"\""))
}

/// `value` as UTF-8, or why docker cannot carry it.
fn text<'a>(value: &'a OsStr, what: &str) -> Result<&'a str, String> {
    value.to_str().ok_or_else(|| {
        format!(
            "{what} `{}` is not UTF-8, which docker cannot pass unchanged; rename it, or use \
             kind = \"bwrap\"",
            String::from_utf8_lossy(value.as_bytes())
        )
    })
}

/// Removes one job's container, killing whatever still runs in it.
pub(super) fn rm_args(name: &str) -> Vec<OsString> {
    strings(&["rm", "-f", name])
}

/// Fails unless a Docker engine answers.
pub(super) fn version_args() -> Vec<OsString> {
    strings(&["version", "--format", "{{.Server.Version}}"])
}

/// Runs mecha's binary in `image` as the `allow_hosts` bridge would, only
/// to see that it starts there (an image without glibc cannot run it).
pub(super) fn bridge_check_args(image: &str, exe: &Path) -> Result<Vec<OsString>, String> {
    let bind = Bind {
        source: exe,
        target: Path::new(BRIDGE_INSIDE),
        readonly: true,
    };
    let mut args = strings(&[
        "run",
        "--rm",
        "--pull",
        "never",
        "--network",
        "none",
        "--mount",
    ]);
    args.push(mount_arg(&bind)?);
    args.extend(strings(&[
        "--entrypoint",
        BRIDGE_INSIDE,
        image,
        crate::allow::BRIDGE_ARG,
        crate::allow::BRIDGE_CHECK,
    ]));
    Ok(args)
}

/// Fails unless the engine holds `image` (`docker run --pull never` will
/// not fetch it in the middle of a run); prints the image's `ENV`, one
/// `NAME=value` a line.
pub(super) fn image_args(image: &str) -> Vec<OsString> {
    strings(&[
        "image",
        "inspect",
        "--format",
        "{{range .Config.Env}}{{println .}}{{end}}",
        image,
    ])
}

/// The names in what [`image_args`] printed. A value holding a line break
/// would make its second line look like another variable; dropping that
/// one too is harmless, since no name of the job's own is ever dropped.
pub(super) fn image_env_names(printed: &str) -> Vec<String> {
    let names: BTreeSet<&str> = printed
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .filter(|name| !name.is_empty())
        .collect();
    names.into_iter().map(str::to_owned).collect()
}

/// The `--env-file` contents for `env`, or why docker cannot carry a
/// variable: the file is read line by line as UTF-8, a name may not hold
/// whitespace or `=`, and a value cannot hold a line break.
pub(super) fn env_file(env: &BTreeMap<OsString, OsString>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (name, value) in env {
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            return Err(format!(
                "the environment variable `{}` is not UTF-8, which docker cannot pass",
                name.to_string_lossy()
            ));
        };
        if name.is_empty()
            || name.starts_with('#')
            || name.contains('=')
            || name.chars().any(char::is_whitespace)
        {
            return Err(format!(
                "`{name}` is not a name docker can pass as an environment variable"
            ));
        }
        if value.contains(['\n', '\r']) {
            return Err(format!(
                "the environment variable `{name}` holds a line break, which docker cannot pass"
            ));
        }
        out.extend_from_slice(format!("{name}={value}\n").as_bytes());
    }
    Ok(out)
}

fn strings(items: &[&str]) -> Vec<OsString> {
    items.iter().map(OsString::from).collect()
}

#[cfg(test)]
#[path = "argv_tests.rs"]
mod tests;

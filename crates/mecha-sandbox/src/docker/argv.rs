//! The argument vectors mecha hands the docker client, and the two small
//! bash programs that run inside the container, as pure functions: what a
//! container is allowed can be read and tested here without an engine.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Where a job's pid file and tombstone live inside the container: the
/// container's own tmpfs, the only writable place every job has.
pub(super) const JOB_DIR: &str = "/tmp";

/// The container's main process only has to stay up: the run removes the
/// container when it ends, so the sleep is never meant to run out.
const KEEPALIVE: [&str; 2] = ["sleep", "2147483647"];

/// What one container of a run is given.
#[derive(Debug)]
pub(super) struct RunSpec<'a> {
    pub image: &'a str,
    /// `UID:GID`, the user's own ids, so files written in the workspace are
    /// the user's and nothing inside is root.
    pub user: &'a str,
    pub workspace: &'a Path,
    pub network: bool,
    /// Only the ones that exist (a missing toolchain is skipped, as bwrap's
    /// `--ro-bind-try` does).
    pub readable: &'a [PathBuf],
    pub writable: &'a [PathBuf],
    /// A `key=value` label, so that containers a killed mecha left behind
    /// can be found with `docker ps --filter label=...`.
    pub label: &'a str,
}

/// `docker run`: a detached, self-removing container with no capabilities,
/// a read-only root, no way to gain privileges, and no network unless the
/// job asks for it (then docker's default bridge).
pub(super) fn run_args(spec: &RunSpec<'_>) -> Vec<OsString> {
    let mut args = strings(&[
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
        spec.user,
        "--label",
        spec.label,
    ]);
    if !spec.network {
        args.extend(strings(&["--network", "none"]));
    }
    // exec, because build tools run what they compile in /tmp; docker's
    // default tmpfs is noexec.
    args.extend(strings(&["--tmpfs", "/tmp:rw,exec,nosuid,nodev,mode=1777"]));
    for (path, readonly) in mounts(spec.workspace, spec.readable, spec.writable) {
        args.push("--mount".into());
        args.push(mount_arg(path, readonly));
    }
    args.push("-w".into());
    args.push(spec.workspace.into());
    args.push(spec.image.into());
    args.extend(strings(&KEEPALIVE));
    args
}

/// The bind mounts, one per target: the workspace read-write first, then
/// `writable`, then `readable`; a path listed twice is mounted once, the
/// first way it appears (docker refuses a duplicate mount point).
fn mounts<'a>(
    workspace: &'a Path,
    readable: &'a [PathBuf],
    writable: &'a [PathBuf],
) -> Vec<(&'a Path, bool)> {
    let mut seen: Vec<(&Path, bool)> = vec![(workspace, false)];
    let listed = writable
        .iter()
        .map(|p| (p.as_path(), false))
        .chain(readable.iter().map(|p| (p.as_path(), true)));
    for (path, readonly) in listed {
        if !seen.iter().any(|(s, _)| *s == path) {
            seen.push((path, readonly));
        }
    }
    seen
}

/// One `--mount` value. Docker reads it as a CSV record, so a path holding
/// a comma or a quote is quoted, CSV style, rather than split into fields
/// (`-v` has no quoting at all and splits on every `:`).
fn mount_arg(path: &Path, readonly: bool) -> OsString {
    let path = path.as_os_str().as_bytes();
    let mut fields: Vec<Vec<u8>> = vec![b"type=bind".to_vec()];
    for key in [&b"source="[..], &b"target="[..]] {
        fields.push([key, path].concat());
    }
    if readonly {
        fields.push(b"readonly".to_vec());
    }
    let quoted: Vec<Vec<u8>> = fields.into_iter().map(csv_field).collect();
    OsString::from_vec(quoted.join(&b","[..]))
}

fn csv_field(field: Vec<u8>) -> Vec<u8> {
    if !field
        .iter()
        .any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
    {
        return field;
    }
    let mut out = vec![b'"'];
    for byte in field {
        if byte == b'"' {
            out.push(b'"');
        }
        out.push(byte);
    }
    out.push(b'"');
    out
}

/// One confined job: `docker exec -i` in the workspace, with the job's
/// environment read from `env_file` (so no value shows on the host's `ps`),
/// running [`wrapper_script`] under `setsid -w` so that the job leads a
/// session and process group of its own that [`kill_args`] can find.
pub(super) fn exec_args(
    container: &str,
    workspace: &Path,
    env_file: &Path,
    job: u64,
    env: &BTreeMap<OsString, OsString>,
    program: &OsStr,
    program_args: &[OsString],
) -> Vec<OsString> {
    let mut args = strings(&["exec", "-i", "-w"]);
    args.push(workspace.into());
    args.push("--env-file".into());
    args.push(env_file.into());
    args.extend(strings(&[container, "setsid", "-w", "bash", "-c"]));
    args.push(wrapper_script(JOB_DIR, job).into());
    args.push(format!("mecha-job-{job}").into());
    args.push(keep_list(env));
    args.push(program.into());
    args.extend(program_args.iter().cloned());
    args
}

/// The names of the job's environment, space-separated: the wrapper unsets
/// everything else (the image's `ENV`, the `HOSTNAME` and `HOME` docker
/// adds), so the job sees exactly the environment it was given.
fn keep_list(env: &BTreeMap<OsString, OsString>) -> OsString {
    let names: Vec<&[u8]> = env.keys().map(|k| k.as_bytes()).collect();
    OsString::from_vec(names.join(&b" "[..]))
}

/// Runs as the session leader `setsid` made: it records its pid (which is
/// then the job's session and process group id), gives up if the job was
/// already killed before it started, trims the environment to the names in
/// `$1`, and becomes the job. The pid-then-tombstone order here and the
/// tombstone-then-pid order in [`kill_script`] mean that a kill racing a
/// start either finds the pid or is seen by the wrapper. bash's `exec`
/// re-creates `SHLVL` (it undoes bash's own increment when the job's
/// environment has one), hence `env -u` when it has none.
pub(super) fn wrapper_script(dir: &str, job: u64) -> String {
    format!(
        "f={dir}/mecha-job-{job}; echo $$ > \"$f.pid\" || exit 125; \
         if [ -e \"$f.end\" ]; then exit 137; fi; \
         keep=\" $1 \"; shift; \
         for v in $(compgen -e); do case \"$keep\" in *\" $v \"*) ;; \
         *) unset \"$v\" 2>/dev/null ;; esac; done; \
         case \"$keep\" in *\" SHLVL \"*) exec \"$@\" ;; esac; \
         exec env -u SHLVL \"$@\""
    )
}

/// Kills job `job`: its process group at once, then every process still
/// in its session or group (a `setpgid` child, a `set -m` job). Killing the
/// `docker exec` client on the host would leave all of these running.
pub(super) fn kill_script(dir: &str, job: u64) -> String {
    format!(
        "f={dir}/mecha-job-{job}; : > \"$f.end\"; \
         read -r id 2>/dev/null < \"$f.pid\" || exit 0; \
         case $id in ''|*[!0-9]*|0|1) exit 0 ;; esac; \
         kill -KILL -- \"-$id\" 2>/dev/null; \
         for s in /proc/[0-9]*/stat; do read -r l 2>/dev/null < \"$s\" || continue; \
         set -- ${{l##*) }}; \
         if [ \"$3\" = \"$id\" ] || [ \"$4\" = \"$id\" ]; then p=${{s#/proc/}}; \
         kill -KILL \"${{p%/stat}}\" 2>/dev/null; fi; done; exit 0"
    )
}

/// `docker exec` running [`kill_script`] for one job.
pub(super) fn kill_args(container: &str, job: u64) -> Vec<OsString> {
    let mut args = strings(&["exec", container, "bash", "-c"]);
    args.push(kill_script(JOB_DIR, job).into());
    args
}

/// Removes the run's containers, killing whatever still runs in them.
pub(super) fn rm_args(containers: &[String]) -> Vec<OsString> {
    let mut args = strings(&["rm", "-f"]);
    args.extend(containers.iter().map(OsString::from));
    args
}

/// Fails unless a Docker engine answers.
pub(super) fn version_args() -> Vec<OsString> {
    strings(&["version", "--format", "{{.Server.Version}}"])
}

/// Fails unless the engine holds `image` (`docker run --pull never` will
/// not fetch it in the middle of a run).
pub(super) fn image_args(image: &str) -> Vec<OsString> {
    strings(&["image", "inspect", "--format", "{{.Id}}", image])
}

/// The `--env-file` contents for `env`, or why docker cannot carry a
/// variable: the file is read line by line as UTF-8, a name may not hold
/// whitespace or `=`, and a value cannot hold a line break.
pub(super) fn env_file(env: &BTreeMap<OsString, OsString>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (name, value) in env {
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            return Err(format!(
                "the environment variable `{}` is not UTF-8, which docker exec cannot pass",
                name.to_string_lossy()
            ));
        };
        if name.is_empty()
            || name.starts_with('#')
            || name.contains('=')
            || name.chars().any(char::is_whitespace)
        {
            return Err(format!(
                "`{name}` is not a name docker exec can pass as an environment variable"
            ));
        }
        if value.contains(['\n', '\r']) {
            return Err(format!(
                "the environment variable `{name}` holds a line break, which docker exec \
                 cannot pass"
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

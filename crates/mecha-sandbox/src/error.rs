//! Why a sandbox cannot be honoured; every message names the fix.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "[sandbox] lists `{}`, which is not an absolute path; write it as /abs/path or ~/path",
        path.display()
    )]
    RelativePath { path: PathBuf },
    #[error(
        "[sandbox] writable lists `{}`, which does not exist; create it, or remove the line",
        path.display()
    )]
    MissingWritable { path: PathBuf },
    #[error(
        "[sandbox] kind = \"bwrap\" needs bubblewrap, which is not on PATH; install the \
         `bubblewrap` package (apt-get install bubblewrap, dnf install bubblewrap), or remove \
         [sandbox] kind to run unconfined"
    )]
    BwrapMissing,
    #[error(
        "[sandbox] kind = \"bwrap\" cannot run here: the kernel refuses user namespaces \
         ({cause}). Allow them with `{fix}` (and a file in /etc/sysctl.d/ to keep it), or make \
         bwrap setuid root (`chmod u+s {bwrap}`), or remove [sandbox] kind to run unconfined"
    )]
    UserNamespaces {
        cause: String,
        fix: String,
        bwrap: PathBuf,
    },
    #[error(
        "[sandbox] kind = \"bwrap\" cannot mount a fresh /proc here (bwrap: {detail}); this \
         happens inside a container that masks /proc. Start the container with \
         `--security-opt systempaths=unconfined` (docker, podman), or run mecha outside it; \
         the sandbox never shares the host's /proc, which shows every process's environment"
    )]
    ProcUnavailable { detail: String },
    #[error(
        "[sandbox] kind = \"bwrap\" failed its check on this machine (bwrap: {detail}); fix what \
         bwrap names, or remove [sandbox] kind to run unconfined"
    )]
    BwrapFailed { detail: String },
    #[error("[sandbox] kind = \"bwrap\": the seccomp filter: {0}")]
    Seccomp(String),
    #[error(
        "`{}` is a symlink, and a read-only mount cannot protect it (the mount follows the \
         link, and the link itself stays replaceable); replace it with the file or directory it \
         points to, then run the command again",
        path.display()
    )]
    ProtectedSymlink { path: PathBuf },
    #[error(
        "`{}` is on mecha's PATH and is a path the sandbox lets a command write (the \
         workspace, or a [sandbox] writable line): a program put there would run outside the \
         sandbox the next time it is called; take it off PATH, or run mecha elsewhere (or drop \
         the writable line)",
        path.display()
    )]
    WritableOnPath { path: PathBuf },
    #[error(
        "mecha's PATH holds the relative entry `{entry}` (an empty entry, from `::` or a \
         leading or trailing `:`, means `.`): it names whatever directory a shell is in, most \
         often the workspace, so a program a confined command put there would run outside the \
         sandbox the next time you call it there; take the entry off PATH (or use its absolute \
         path) and start mecha again"
    )]
    RelativeOnPath { entry: String },
    #[error(
        "the git config `{}` cannot be read the way git reads it ({reason}), so the sandbox \
         cannot tell which hooks or included files it points git at, and runs no command that \
         could change them; look at it with `git config --file {} --list`, and fix or shorten it",
        path.display(),
        path.display()
    )]
    UnreadableGitConfig { path: PathBuf, reason: String },
    #[error(
        "[sandbox] sets both network = true and allow_hosts; network = true gives every host, \
         allow_hosts only those listed: keep the one you mean"
    )]
    NetworkAndHosts,
    #[error("[sandbox] allow_hosts: {reason}")]
    AllowHosts { reason: String },
    #[error("the sandbox could not confine `{program}`: {reason}")]
    Confine { program: String, reason: String },
    #[error(
        "[sandbox] kind = \"docker\" needs the docker client, which is not on PATH; install the \
         `docker.io` package (apt-get install docker.io) or Docker Engine (docker-ce), or use \
         kind = \"bwrap\""
    )]
    DockerMissing,
    #[error(
        "[sandbox] kind = \"docker\" needs a running Docker engine, and `docker version` could \
         not reach one ({detail}); start the Docker engine (systemctl start docker, or Docker \
         Desktop), or use kind = \"bwrap\""
    )]
    DockerEngine { detail: String },
    #[error(
        "[sandbox] kind = \"docker\" needs an image; set [sandbox] image = \"debian:stable-slim\" \
         (any image that holds /usr/bin/env, bash and the tools your commands use), or \
         use kind = \"bwrap\""
    )]
    DockerImageMissing,
    #[error(
        "[sandbox] image = \"{image}\" is not an image reference; write it as name[:tag] or \
         name@sha256:digest, e.g. image = \"debian:stable-slim\""
    )]
    DockerImageInvalid { image: String },
    #[error(
        "[sandbox] image \"{image}\" is not on this Docker engine ({detail}); fetch it with \
         `docker pull {image}`, or set [sandbox] image to one you have"
    )]
    DockerImageAbsent { image: String, detail: String },
}

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
         (any image that holds bash, util-linux's setsid and the tools your commands use), or \
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
    #[error(
        "the sandbox container could not be started ({detail}); check that `docker run` works \
         with [sandbox] image, or use kind = \"bwrap\""
    )]
    DockerRun { detail: String },
}

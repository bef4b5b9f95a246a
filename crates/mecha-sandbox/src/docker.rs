//! The docker backend: one container per run.

use std::path::PathBuf;

use crate::{Confined, HostEnv, Job, SandboxConfig, SandboxError};

#[derive(Debug)]
pub(crate) struct Docker {}

impl Docker {
    pub(crate) fn start(_config: &SandboxConfig, _host: &HostEnv) -> Result<Self, SandboxError> {
        Err(SandboxError::Docker(
            "[sandbox] kind = \"docker\" is not built yet; use kind = \"bwrap\"".to_owned(),
        ))
    }

    pub(crate) fn confine(
        &self,
        _job: &Job<'_>,
        _readable: &[PathBuf],
        _writable: &[PathBuf],
    ) -> Result<Confined, SandboxError> {
        Err(SandboxError::Docker("not built yet".to_owned()))
    }
}

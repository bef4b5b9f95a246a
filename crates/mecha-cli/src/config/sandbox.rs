//! A project's `[sandbox]`: it may switch confinement on and take the
//! network away, never show a confined command more.

use std::path::Path;

use super::model::ProjectSandbox;
use super::{ConfigError, Settings};

impl Settings {
    /// A project may switch confinement on and the network off; it may not
    /// add paths or pick an image, and never switches confinement off.
    pub(super) fn narrow_sandbox(
        &mut self,
        path: &Path,
        project: ProjectSandbox,
    ) -> Result<(), ConfigError> {
        let widening = [
            ("readable", project.readable.is_some()),
            ("writable", project.writable.is_some()),
            ("image", project.image.is_some()),
        ];
        if let Some((key, _)) = widening.iter().find(|(_, set)| *set) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "a project's mecha.toml cannot set [sandbox] {key}: it may switch the sandbox \
                     on (kind) and the network off, never show a confined command more. Put it in \
                     $MECHA_HOME/config.toml"
                ),
            });
        }
        let sandbox = &mut self.sandbox;
        match (sandbox.kind, project.kind) {
            (None, Some(kind)) => sandbox.kind = Some(kind),
            (Some(mine), Some(theirs)) if mine != theirs => self.warnings.push(format!(
                "{}: [sandbox] kind = \"{}\" is not used: {} already confines with \"{}\", \
                 which stays (a project may switch the sandbox on, not choose another)",
                path.display(),
                theirs.as_str(),
                self.global_file.display(),
                mine.as_str()
            )),
            _ => {}
        }
        match project.network {
            Some(false) => sandbox.network = false,
            Some(true) if !sandbox.network => self.warnings.push(format!(
                "{}: [sandbox] network = true is not used: {} keeps the sandbox off the network \
                 (a project may only take the network away)",
                path.display(),
                self.global_file.display()
            )),
            _ => {}
        }
        Ok(())
    }
}

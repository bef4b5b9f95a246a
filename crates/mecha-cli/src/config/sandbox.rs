//! A project's `[sandbox]`: it may switch confinement on and take the
//! network away, never show a confined command more.

use super::Settings;
use super::model::ProjectSandbox;
use super::unheeded::Narrowing;

impl Settings {
    /// A project may switch confinement on and the network off; its paths
    /// and image are ignored, and it never switches confinement off.
    pub(super) fn narrow_sandbox(&mut self, project: ProjectSandbox, narrowing: &mut Narrowing) {
        let widening = [
            ("readable", project.readable.is_some()),
            ("writable", project.writable.is_some()),
            ("image", project.image.is_some()),
        ];
        for (key, _) in widening.iter().filter(|(_, set)| *set) {
            narrowing.not_the_projects(
                &format!("[sandbox] {key}"),
                "yours stays",
                "a project may switch the sandbox on (kind) and the network off, never show a \
                 confined command more",
            );
        }
        let sandbox = &mut self.sandbox;
        match (sandbox.kind, project.kind) {
            (None, Some(kind)) => sandbox.kind = Some(kind),
            (Some(mine), Some(theirs)) if mine != theirs => narrowing.unheeded(
                "[sandbox] kind",
                format!("{:?}", theirs.as_str()),
                format!("{:?}", mine.as_str()),
                "a project may switch the sandbox on, not choose another",
            ),
            _ => {}
        }
        match project.network {
            Some(false) => sandbox.network = false,
            Some(true) if !sandbox.network => narrowing.unheeded(
                "[sandbox] network",
                true,
                false,
                "a project may only take the network away",
            ),
            _ => {}
        }
    }
}

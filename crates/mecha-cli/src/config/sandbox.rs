//! A project's `[sandbox]`: it may switch confinement on and take the
//! network away (or narrow it to hosts the user allows), never show a
//! confined command more.

use mecha_sandbox::Allowlist;

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
            Some(false) => {
                sandbox.network = false;
                sandbox.allow_hosts.clear();
            }
            Some(true) if !sandbox.network => narrowing.unheeded(
                "[sandbox] network",
                true,
                false,
                "a project may only take the network away",
            ),
            _ => {}
        }
        if let Some(theirs) = project.allow_hosts {
            self.narrow_allow_hosts(theirs, narrowing);
        }
    }

    /// A project's `allow_hosts` replaces the whole network with its list,
    /// or keeps of the user's list what it names again; an entry the
    /// user's own setting does not already allow is dropped with a warning.
    fn narrow_allow_hosts(&mut self, theirs: Vec<String>, narrowing: &mut Narrowing) {
        let sandbox = &mut self.sandbox;
        let mine = if sandbox.network {
            None
        } else {
            // The user's list is checked where the sandbox starts; one that
            // does not parse covers nothing here.
            Some(Allowlist::parse(&sandbox.allow_hosts).unwrap_or_default())
        };
        let (kept, dropped): (Vec<String>, Vec<String>) = theirs
            .into_iter()
            .partition(|entry| mine.as_ref().is_none_or(|m| m.covers(entry)));
        for entry in &dropped {
            narrowing.not_the_projects(
                &format!("[sandbox] allow_hosts entry {entry:?}"),
                "that host stays out of reach",
                "a project may narrow the hosts a confined command reaches, never add one",
            );
        }
        sandbox.network = false;
        sandbox.allow_hosts = kept;
    }
}

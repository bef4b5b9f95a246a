//! A job's `/tmp`: a fresh private directory on the host, bound as `/tmp`
//! inside and removed when the job's lease drops. A tmpfs would do as well
//! for keeping the host's `/tmp` (and every socket in it) out, but what a
//! command leaves in a tmpfs vanishes without a word; here mecha can see
//! what was left, and tell the model that it is gone, before it goes.

use std::io;
use std::path::{Path, PathBuf};

use crate::SandboxError;

/// How many names the notice lists before it counts the rest.
const NAMED: usize = 3;

#[derive(Debug)]
pub(crate) struct Scratch {
    dir: tempfile::TempDir,
    /// The job's other mounts that lie under `/tmp` (a workspace in the
    /// host's `/tmp`), relative to it: the backend makes their mount points
    /// in this directory, and those are not the job's doing.
    mount_points: Vec<PathBuf>,
}

impl Scratch {
    /// A 0700 directory in the host's temporary directory, for a job whose
    /// other mounts go to `mounts` (inside paths).
    pub(crate) fn new<'a>(mounts: impl Iterator<Item = &'a Path>) -> Result<Self, SandboxError> {
        let mount_points = mounts
            .filter_map(|dest| dest.strip_prefix("/tmp").ok())
            .filter(|rel| !rel.as_os_str().is_empty())
            .map(Path::to_owned)
            .collect();
        let dir = tempfile::Builder::new()
            .prefix("mecha-tmp-")
            .tempdir()
            .map_err(|e| SandboxError::Confine {
                program: "the sandbox".into(),
                reason: format!(
                    "could not make a private /tmp in {}: {e}",
                    std::env::temp_dir().display()
                ),
            })?;
        Ok(Self { dir, mount_points })
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// One sentence naming what the job left in `/tmp`, or `None` when it
    /// left nothing.
    pub(crate) fn left_behind(&self) -> Option<String> {
        let mut names = Vec::new();
        self.collect(Path::new(""), &mut names);
        if names.is_empty() {
            return None;
        }
        names.sort();
        let more = names.len().saturating_sub(NAMED);
        names.truncate(NAMED);
        let mut listed = names.join(", ");
        if more > 0 {
            listed.push_str(&format!(" and {more} more"));
        }
        Some(format!(
            "the command left {listed} in /tmp, which the sandbox discards after each \
             command: it is gone now; write to the workspace to keep a file"
        ))
    }
}

impl Scratch {
    /// What the job made under `rel`: every entry that is neither a mount
    /// point nor on the way to one, and what it made beside those.
    fn collect(&self, rel: &Path, names: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(self.dir.path().join(rel)) else {
            return;
        };
        for entry in entries.flatten() {
            let path = rel.join(entry.file_name());
            if self.mount_points.contains(&path) {
                continue;
            }
            let on_the_way = self.mount_points.iter().any(|m| m.starts_with(&path));
            if on_the_way && entry.file_type().is_ok_and(|t| t.is_dir()) {
                self.collect(&path, names);
            } else {
                names.push(format!("/tmp/{}", path.display()));
            }
        }
    }
}

impl Drop for Scratch {
    /// std's `remove_dir_all` does not follow symlinks, so a link the job
    /// left pointing at the workspace or the home removes only the link.
    fn drop(&mut self) {
        let path = self.dir.path().to_owned();
        if let Err(e) = remove(&path) {
            tracing::warn!(
                dir = %path.display(),
                "could not remove a sandboxed command's /tmp ({e}); remove it by hand"
            );
        }
    }
}

/// Removes the tree, first making every directory in it writable and
/// searchable again (a job can leave a `chmod 000` directory behind, which
/// its owner could not otherwise empty).
fn remove(path: &Path) -> io::Result<()> {
    if std::fs::remove_dir_all(path).is_ok() || !path.exists() {
        return Ok(());
    }
    open_up(path);
    std::fs::remove_dir_all(path)
}

fn open_up(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            open_up(&entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn nothing_left_is_no_notice_and_what_is_left_is_named() {
        let scratch = Scratch::new(std::iter::empty()).unwrap();
        assert_eq!(scratch.left_behind(), None);
        for name in ["d", "a", "c", "b", "e"] {
            std::fs::write(scratch.path().join(name), "x").unwrap();
        }
        let notice = scratch.left_behind().unwrap();
        assert!(
            notice.starts_with("the command left /tmp/a, /tmp/b, /tmp/c and 2 more in /tmp"),
            "{notice}"
        );
        assert!(notice.contains("write to the workspace"), "{notice}");
    }

    /// A workspace in the host's /tmp has its mount point made in the
    /// job's /tmp; that is not reported, what the job put beside it is.
    #[test]
    fn the_mount_points_of_other_mounts_are_not_the_jobs() {
        let ws = Path::new("/tmp/.tmpAbc/ws");
        let git = Path::new("/tmp/.tmpAbc/ws/.git/hooks");
        let scratch = Scratch::new([ws, git, Path::new("/home/u")].into_iter()).unwrap();
        std::fs::create_dir_all(scratch.path().join(".tmpAbc/ws")).unwrap();
        assert_eq!(scratch.left_behind(), None);
        std::fs::write(scratch.path().join(".tmpAbc/beside"), "x").unwrap();
        std::fs::write(scratch.path().join(".tmpAbc/ws/under"), "x").unwrap();
        let notice = scratch.left_behind().unwrap();
        assert!(
            notice.starts_with("the command left /tmp/.tmpAbc/beside in /tmp"),
            "{notice}"
        );
    }

    #[test]
    fn dropping_removes_it_all_but_never_what_a_link_points_to() {
        let keep = tempfile::tempdir().unwrap();
        std::fs::write(keep.path().join("precious"), "x").unwrap();
        let scratch = Scratch::new(std::iter::empty()).unwrap();
        let path = scratch.path().to_owned();
        std::os::unix::fs::symlink(keep.path(), path.join("link")).unwrap();
        let locked = path.join("locked");
        std::fs::create_dir_all(locked.join("inner")).unwrap();
        std::fs::write(locked.join("inner/file"), "x").unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        drop(scratch);
        assert!(!path.exists(), "the scratch directory is still there");
        assert!(keep.path().join("precious").exists(), "a link was followed");
    }
}

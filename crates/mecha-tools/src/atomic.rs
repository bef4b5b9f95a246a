//! Replacing a file so that a reader sees the old contents or the new, never
//! half of either: write a sibling temp file, then rename it over the target.
//!
//! The rename also replaces the directory entry rather than writing through
//! it, so a hard link planted in the workspace to a file outside is cut, not
//! written through: the outside file keeps its contents. The directory the
//! rename happens in is opened without following symlinks, so it is the one
//! the jail judged, even if a directory on the way was swapped for a link
//! since (`ResolvedPath::open_parent`).
//!
//! The temp file is never more readable than the file it replaces: it is
//! created no wider than 0600 (narrower still if the target is), and only
//! given the target's own mode once the contents are in. A new file is
//! created with the mode a plain create gives (umask and default ACLs
//! applied), which is the mode it ends with, so its contents are never more
//! exposed while written than after.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt, Permissions, PermissionsExt};
use mecha_core::ResolvedPath;

use crate::regular;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The mode `open` is asked for when nothing stricter applies; the kernel
/// takes the umask off, as for any new file.
const PLAIN_CREATE_MODE: u32 = 0o666;

/// The widest a temp file replacing an existing file may be: its new
/// contents are the old file's to share, and that mode is set only after.
const REPLACING_MODE: u32 = 0o600;

/// Whether the write made a new file or replaced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    Created,
    Replaced,
}

/// Atomically sets the contents of `target`, creating parent directories.
/// An existing file keeps its permissions.
pub(crate) fn replace_file(target: &ResolvedPath, contents: &[u8]) -> io::Result<Written> {
    replace_with(target, |file| file.write_all(contents))
}

/// [`replace_file`], with `fill` writing the contents into the temp file.
fn replace_with(
    target: &ResolvedPath,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<Written> {
    let rel = target.relative();
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::IsADirectory, "is the workspace root"))?;
    let parent = target.open_parent(true)?;
    let existing = match parent.metadata(name) {
        // Only a regular file is replaced: renaming over a FIFO, socket or
        // device would quietly cut whatever talks through it.
        Ok(meta) => {
            regular::check(&meta)?;
            Some(meta.permissions())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let temp_name = format!(
        ".{}.{}-{}.mecha-tmp",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let written = if existing.is_some() {
        Written::Replaced
    } else {
        Written::Created
    };
    let result = write_then_rename(
        &parent,
        Path::new(&temp_name),
        name.as_ref(),
        existing,
        fill,
    );
    if result.is_err() {
        let _ = parent.remove_file(&temp_name);
    }
    result.map(|()| written)
}

fn write_then_rename(
    parent: &Dir,
    temp: &Path,
    name: &Path,
    existing: Option<Permissions>,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let create_mode = existing
        .as_ref()
        .map_or(PLAIN_CREATE_MODE, |p| p.mode() & REPLACING_MODE);
    let mut file = parent.open_with(
        temp,
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(create_mode),
    )?;
    fill(&mut file)?;
    if let Some(perms) = existing {
        file.set_permissions(perms)?;
    }
    file.sync_all()?;
    drop(file);
    parent.rename(temp, parent, name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::os::unix::fs::PermissionsExt as _;

    use mecha_core::ToolCtx;

    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// Replaces (or creates) `name` and returns the mode the temp file had
    /// while its contents were being written.
    fn mode_while_writing(ctx: &ToolCtx, name: &str, contents: &[u8]) -> u32 {
        let target = ctx.resolve_in_workspace(name).unwrap();
        let mut seen = None;
        replace_with(&target, |file| {
            seen = Some(file.metadata()?.permissions().mode() & 0o777);
            file.write_all(contents)
        })
        .unwrap();
        seen.unwrap()
    }

    #[test]
    fn a_private_file_s_new_contents_are_never_in_a_wider_file() {
        let ws = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(ws.path(), 4096).unwrap();
        for (target_mode, widest_temp) in [(0o600, 0o600), (0o400, 0o400), (0o644, 0o600)] {
            let path = ws.path().join(format!("f{target_mode:o}"));
            std::fs::write(&path, "old").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(target_mode)).unwrap();
            let name = path.file_name().unwrap().to_str().unwrap();
            let during = mode_while_writing(&ctx, name, b"new secret");
            assert_eq!(
                during & !widest_temp,
                0,
                "a {target_mode:o} target's temp file was {during:o}"
            );
            assert_eq!(mode_of(&path), target_mode, "the target keeps its mode");
            assert_eq!(std::fs::read(&path).unwrap(), b"new secret");
        }
    }

    #[test]
    fn a_new_file_gets_the_mode_a_plain_create_gives() {
        let ws = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(ws.path(), 4096).unwrap();
        let plain = ws.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let during = mode_while_writing(&ctx, "sub/new.txt", b"hello");
        let made = mode_of(&ws.path().join("sub/new.txt"));
        assert_eq!(made, mode_of(&plain));
        assert_eq!(during, made, "no wider while written than after");
    }
}

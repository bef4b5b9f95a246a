//! Replacing a file so that a reader sees the old contents or the new, never
//! half of either: write a sibling temp file, then rename it over the target.
//!
//! The rename also replaces the directory entry rather than writing through
//! it, so a hard link planted in the workspace to a file outside is cut, not
//! written through: the outside file keeps its contents.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions};
use mecha_core::ResolvedPath;

use crate::regular;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Whether the write made a new file or replaced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    Created,
    Replaced,
}

/// Atomically sets the contents of `target`, creating parent directories.
/// An existing file keeps its permissions.
pub(crate) fn replace_file(target: &ResolvedPath, contents: &[u8]) -> io::Result<Written> {
    let rel = target.relative();
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::IsADirectory, "is the workspace root"))?;
    let parent_rel = rel.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = match parent_rel {
        Some(p) => {
            target.dir().create_dir_all(p)?;
            target.dir().open_dir(p)?
        }
        None => target.dir().try_clone()?,
    };
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
    let result = write_then_rename(
        &parent,
        Path::new(&temp_name),
        name.as_ref(),
        contents,
        existing.clone(),
    );
    if result.is_err() {
        let _ = parent.remove_file(&temp_name);
    }
    result.map(|()| {
        if existing.is_some() {
            Written::Replaced
        } else {
            Written::Created
        }
    })
}

fn write_then_rename(
    parent: &Dir,
    temp: &Path,
    name: &Path,
    contents: &[u8],
    permissions: Option<cap_std::fs::Permissions>,
) -> io::Result<()> {
    let mut file = parent.open_with(temp, OpenOptions::new().write(true).create_new(true))?;
    file.write_all(contents)?;
    if let Some(perms) = permissions {
        file.set_permissions(perms)?;
    }
    file.sync_all()?;
    drop(file);
    parent.rename(temp, parent, name)
}

//! The stores' files: written whole or not at all, readable by their owner
//! alone, and named only by names that cannot leave their folder.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::UnattendedError;

/// A name that is safe as a file name: 1 to 64 ASCII letters, digits, `-`
/// and `_`, not starting with `-`.
pub(crate) fn checked_name(kind: &str, name: &str) -> Result<(), UnattendedError> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if fine {
        Ok(())
    } else {
        Err(UnattendedError::Usage(format!(
            "`{name}` cannot name a {kind}: use 1 to 64 letters, digits, `-` and `_` (not \
             starting with `-`)"
        )))
    }
}

/// Makes `dir` (0700) if it is not there.
pub(crate) fn private_dir(dir: &Path) -> Result<(), UnattendedError> {
    std::fs::create_dir_all(dir).map_err(|source| UnattendedError::Io {
        what: "cannot create",
        path: dir.to_owned(),
        source,
    })?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|source| {
        UnattendedError::Io {
            what: "cannot restrict",
            path: dir.to_owned(),
            source,
        }
    })
}

/// Writes `text` to `path` (0600) through a temporary file beside it, so a
/// reader sees the old file or the new one, never half of one.
pub(crate) fn write_private(path: &Path, text: &str) -> Result<(), UnattendedError> {
    let io = |source| UnattendedError::Io {
        what: "cannot write",
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    private_dir(dir)?;
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&temp, path).map_err(io)
}

/// The text of `path`, `None` when there is no such file.
pub(crate) fn read(path: &Path) -> Result<Option<String>, UnattendedError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(UnattendedError::Io {
            what: "cannot read",
            path: path.to_owned(),
            source,
        }),
    }
}

/// The names of `dir`'s files ending in `.suffix`, sorted; none when the
/// folder is not there.
pub(crate) fn names(dir: &Path, suffix: &str) -> Result<Vec<String>, UnattendedError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(UnattendedError::Io {
                what: "cannot list",
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name.strip_suffix(suffix)?.strip_suffix('.')?;
            (!stem.starts_with('.')).then(|| stem.to_owned())
        })
        .collect();
    names.sort();
    Ok(names)
}

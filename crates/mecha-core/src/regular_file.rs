//! The one way mecha opens a file it expects to be regular, beneath a
//! directory handle: without blocking and without taking a terminal as
//! the controlling one, then judged by the open file's own type. A FIFO
//! swapped in after any earlier check is then refused at once instead of
//! hanging the read until something writes to it (on a regular file
//! O_NONBLOCK changes nothing). The file tools and the skill tool's bundled
//! files both go through it.

use std::io;
use std::path::Path;

use cap_std::fs::{Dir, FileType, OpenOptions, OpenOptionsExt};
use rustix::fs::OFlags;

/// The regular file at `relative` beneath `dir`, opened for reading; or,
/// when something else is there, its type, for the caller's own words.
pub fn open_regular_beneath(
    dir: &Dir,
    relative: &Path,
) -> io::Result<Result<std::fs::File, FileType>> {
    // Both flags are small positive constants; the cast changes no bits.
    let flags = (OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32;
    let file = dir.open_with(relative, OpenOptions::new().read(true).custom_flags(flags))?;
    let kind = file.metadata()?.file_type();
    Ok(match kind.is_file() {
        true => Ok(file.into_std()),
        false => Err(kind),
    })
}

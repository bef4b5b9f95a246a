//! The repositories confined commands made, remembered past the job that
//! made them.
//!
//! A job's baseline counts as the user's own every repository that was
//! there when it started, and leaves those alone. That is not enough when
//! jobs overlap: job A makes a repository (writable to A, as everything
//! new in the workspace is), job B starts and counts it as known, A hands
//! B a descriptor for it over a unix socket (a subagent's shell, or a
//! second mecha in the same workspace), and after A's sweep has cleaned
//! it, B plants a hook through that descriptor, which B's own sweep would
//! then not look at. So every sweep writes down each git directory (and
//! `.git` file or symlink) it finds new, by device and inode, before it
//! cleans it; and every later sweep treats what is written down as new,
//! known or not. The user's own repositories are never written down.
//!
//! The record is kept in memory for this process's jobs, and in a file in
//! a directory every job sees read-only (mecha's home) for other mecha
//! processes. An entry is a device, an inode and the inode's birth time,
//! so a number the file system hands out again later does not make a
//! repository of the user's own count as made; the file keeps the last
//! [`KEPT`] entries.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use rustix::fs::FlockOperation;

/// The file's name in the records directory.
const FILE: &str = "made-repositories";

/// How many entries the file keeps, the newest.
const KEPT: usize = 4096;

/// Device, inode, and birth time in nanoseconds (0 where the file system
/// does not keep one).
pub(crate) type Id = (u64, u64, u128);

/// What `meta` is, as the record names it.
pub(crate) fn id_of(meta: &fs::Metadata) -> Id {
    let born = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    (meta.dev(), meta.ino(), born)
}

/// This process's record: seen by its next job without reading the file,
/// and all there is when there is no file.
static IN_MEMORY: Mutex<Vec<Id>> = Mutex::new(Vec::new());

#[derive(Debug, Default)]
pub(crate) struct Made {
    /// The records file; `None` keeps the record in memory only.
    file: Option<PathBuf>,
}

impl Made {
    pub(crate) fn in_dir(dir: Option<&Path>) -> Self {
        Self {
            file: dir.map(|d| d.join(FILE)),
        }
    }

    /// Writes down that a job made `path` (not followed). Called before
    /// the sweep cleans it, so a sweep that starts while this one works
    /// already sees it.
    pub(crate) fn record(&self, path: &Path) {
        let Ok(meta) = fs::symlink_metadata(path) else {
            return;
        };
        let id = id_of(&meta);
        let mut memory = IN_MEMORY.lock().unwrap_or_else(|p| p.into_inner());
        if memory.contains(&id) {
            return;
        }
        memory.push(id);
        drop(memory);
        if let Some(file) = &self.file
            && let Err(e) = append(file, id)
        {
            tracing::warn!(
                "could not record {} in {}: {e}; another mecha's sweep will not know that a \
                 confined command made it",
                path.display(),
                file.display()
            );
        }
    }

    /// Everything written down.
    pub(crate) fn load(&self) -> HashSet<Id> {
        let mut ids: HashSet<Id> = IN_MEMORY
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        if let Some(file) = &self.file {
            ids.extend(read(file));
        }
        ids
    }
}

fn line(id: Id) -> String {
    format!("{} {} {}\n", id.0, id.1, id.2)
}

fn parse(line: &str) -> Option<Id> {
    let mut parts = line.split(' ');
    let id = (
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
    );
    parts.next().is_none().then_some(id)
}

fn open_locked(file: &Path) -> std::io::Result<File> {
    if let Some(dir) = file.parent() {
        fs::create_dir_all(dir)?;
    }
    let handle = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(file)?;
    rustix::fs::flock(&handle, FlockOperation::LockExclusive)?;
    Ok(handle)
}

/// Appends `id`; past [`KEPT`] entries, the oldest go.
fn append(file: &Path, id: Id) -> std::io::Result<()> {
    let mut handle = open_locked(file)?;
    let mut text = String::new();
    handle.read_to_string(&mut text)?;
    let count = text.lines().count();
    if count < KEPT {
        return handle.write_all(line(id).as_bytes());
    }
    let kept: String = text
        .lines()
        .skip(count + 1 - KEPT)
        .map(|l| format!("{l}\n"))
        .chain([line(id)])
        .collect();
    handle.set_len(0)?;
    handle.write_all(kept.as_bytes())
}

fn read(file: &Path) -> Vec<Id> {
    let mut text = String::new();
    match File::open(file).and_then(|mut f| f.read_to_string(&mut text)) {
        Ok(_) => text.lines().filter_map(parse).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back() {
        let id = (7, 42, 1_700_000_000_123_456_789);
        assert_eq!(parse(line(id).trim_end()), Some(id));
        assert_eq!(parse("7 42"), None);
        assert_eq!(parse("7 42 1 junk"), None);
    }

    #[test]
    fn another_process_sees_what_one_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let records = dir.path().join("records");
        let repo = dir.path().join("repo");
        fs::create_dir(&repo).unwrap();
        Made::in_dir(Some(&records)).record(&repo);
        let id = id_of(&fs::metadata(&repo).unwrap());
        assert_eq!(read(&records.join(FILE)), vec![id]);
    }

    #[test]
    fn the_file_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        let full: String = (0..KEPT as u64).map(|n| line((1, n, 0))).collect();
        fs::write(&file, full).unwrap();
        append(&file, (1, KEPT as u64, 0)).unwrap();
        append(&file, (1, KEPT as u64 + 1, 0)).unwrap();
        let ids = read(&file);
        assert_eq!(ids.len(), KEPT);
        assert_eq!(ids.first(), Some(&(1, 2, 0)));
        assert_eq!(ids.last(), Some(&(1, KEPT as u64 + 1, 0)));
    }
}

//! A snapshot's manifest: every file it holds, and how two compare.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One snapshot of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub workspace: PathBuf,
    /// When the walk began (nanoseconds since the epoch). A file modified
    /// at or after it may have changed during the walk, so the next
    /// snapshot reads it again rather than trusting its size and time.
    pub started_ns: u64,
    /// Every file, symlink and empty directory, by its path relative to
    /// the workspace (`/`-separated; see [`name_key`] for names that are
    /// not UTF-8).
    pub files: BTreeMap<String, FileEntry>,
    /// Files left out, with why (over the size caps, unreadable). A
    /// restore leaves them where they are.
    pub skipped: BTreeMap<String, String>,
    /// Each directory's listing blob, once stored or loaded: what the next
    /// save reuses for a directory whose entries did not change.
    pub(crate) listings: BTreeMap<String, String>,
}

/// One file of a snapshot: its content and mode, and what the next walk
/// compares to know whether it must read the file again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub content: Content,
    /// Permission bits (`0o777` and the set-id/sticky bits).
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: u64,
    pub inode: u64,
}

/// What a path holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Content {
    /// A regular file whose bytes are the blob with this SHA-256.
    File { sha256: String },
    /// A symlink, never followed.
    Symlink { target: String },
    /// A directory with nothing in it, recorded so that a rewind removes
    /// one the agent made and brings back one it removed. (A directory
    /// that holds anything is implied by its entries.)
    Dir,
}

impl FileEntry {
    /// Whether two entries hold the same thing, whatever their timestamps.
    pub fn same_as(&self, other: &FileEntry) -> bool {
        self.content == other.content
            && (matches!(self.content, Content::Symlink { .. }) || self.mode == other.mode)
    }
}

/// How a path differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added(String),
    Changed(String),
    Removed(String),
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Added(p) | Change::Changed(p) | Change::Removed(p) => p,
        }
    }
}

/// What turns `from` into `to`, by path. A path either side skipped is
/// not compared: its content is not known.
pub fn changes(from: &Manifest, to: &Manifest) -> Vec<Change> {
    side_by_side(&from.files, &to.files)
        .filter(|(path, _, _)| !from.skipped.contains_key(*path) && !to.skipped.contains_key(*path))
        .filter_map(|(path, a, b)| match (a, b) {
            (None, Some(_)) => Some(Change::Added(path.to_owned())),
            (Some(_), None) => Some(Change::Removed(path.to_owned())),
            (Some(a), Some(b)) if !a.same_as(b) => Some(Change::Changed(path.to_owned())),
            _ => None,
        })
        .collect()
}

/// Every path of either, in order, with its entry on each side: one pass
/// over both, which a snapshot of many files makes worth more than a set
/// of their names.
pub(crate) fn side_by_side<'a>(
    from: &'a BTreeMap<String, FileEntry>,
    to: &'a BTreeMap<String, FileEntry>,
) -> impl Iterator<Item = (&'a str, Option<&'a FileEntry>, Option<&'a FileEntry>)> {
    let (mut from, mut to) = (from.iter().peekable(), to.iter().peekable());
    std::iter::from_fn(move || {
        let order = match (from.peek(), to.peek()) {
            (None, None) => return None,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((a, _)), Some((b, _))) => a.cmp(b),
        };
        Some(match order {
            Ordering::Less => from.next().map(|(p, e)| (p.as_str(), Some(e), None))?,
            Ordering::Greater => to.next().map(|(p, e)| (p.as_str(), None, Some(e)))?,
            Ordering::Equal => {
                let (path, a) = from.next()?;
                (path.as_str(), Some(a), to.next().map(|(_, b)| b))
            }
        })
    })
}

/// How a manifest spells one name of a path: the name itself when it is
/// UTF-8, else a NUL followed by its bytes in hex. No file name can hold a
/// NUL, so the two spellings never meet, and listings written before names
/// that are not UTF-8 were recorded read as they did.
pub(crate) fn name_key(name: &OsStr) -> Cow<'_, str> {
    match name.to_str() {
        Some(text) => Cow::Borrowed(text),
        None => {
            let hex: String = name.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
            Cow::Owned(format!("\0{hex}"))
        }
    }
}

/// A manifest path as a person reads it: a name that is not UTF-8 with its
/// other bytes as `\xNN` (the manifest's NUL-and-hex spelling is for
/// telling names apart, not for reading).
pub fn readable(path: &str) -> Cow<'_, str> {
    if !path.contains('\0') {
        return Cow::Borrowed(path);
    }
    let names: Vec<String> = path
        .split('/')
        .map(|key| match key_name(key) {
            Some(name) => name
                .as_bytes()
                .utf8_chunks()
                .map(|chunk| {
                    let bad: String = chunk
                        .invalid()
                        .iter()
                        .map(|b| format!("\\x{b:02x}"))
                        .collect();
                    format!("{}{bad}", chunk.valid())
                })
                .collect(),
            None => key.to_owned(),
        })
        .collect();
    Cow::Owned(names.join("/"))
}

/// The bytes a [`name_key`] spelling stands for; `None` for hex that is
/// not, or bytes no name can hold (a `/` or a NUL).
fn spelt_bytes(key: &str) -> Option<Vec<u8>> {
    let bytes = match key.strip_prefix('\0') {
        None => key.as_bytes().to_vec(),
        Some(hex) if hex.len() % 2 == 0 => (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?,
        Some(_) => return None,
    };
    (!bytes.iter().any(|b| matches!(b, b'/' | b'\0'))).then_some(bytes)
}

/// The name a [`name_key`] spelling stands for; `None` for one that names
/// no file of a directory (empty, `.`, `..`, holding a `/` or a NUL, or
/// hex that is not).
pub(crate) fn key_name(key: &str) -> Option<OsString> {
    let bytes = spelt_bytes(key)?;
    let named = !matches!(bytes.as_slice(), b"" | b"." | b"..");
    named.then(|| OsString::from_vec(bytes))
}

/// A symlink's target as a manifest spells it: each of its names as
/// [`name_key`] spells names, so that a target that is not UTF-8 is kept
/// byte for byte and one that is reads as itself.
pub(crate) fn target_key(target: &OsStr) -> String {
    let names: Vec<Cow<'_, str>> = target
        .as_bytes()
        .split(|b| *b == b'/')
        .map(|name| name_key(OsStr::from_bytes(name)))
        .collect();
    names.join("/")
}

/// The target a [`target_key`] spelling stands for; `None` if a name of it
/// is hex that is not.
pub(crate) fn key_target(key: &str) -> Option<OsString> {
    let names: Vec<Vec<u8>> = key.split('/').map(spelt_bytes).collect::<Option<_>>()?;
    Some(OsString::from_vec(names.join(&b'/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_spelt_as_a_key_reads_back_the_same() {
        for name in [&b"plain"[..], b"caf\xe9", b"\xff", b"\\0ff"] {
            let name = OsStr::from_bytes(name);
            assert_eq!(key_name(&name_key(name)).as_deref(), Some(name));
        }
        assert_eq!(
            readable(&format!("d/{}", name_key(OsStr::from_bytes(b"caf\xe9")))),
            "d/caf\\xe9"
        );
        assert_eq!(readable("plain/path"), "plain/path");
        assert_eq!(
            name_key(OsStr::from_bytes(b"a\xffb")),
            "\0".to_owned() + "61ff62"
        );
    }

    #[test]
    fn a_link_target_spelt_as_a_key_reads_back_the_same() {
        for target in [&b"/tmp/x"[..], b"../caf\xe9/\xff", b"a//b/", b"", b"."] {
            let target = OsStr::from_bytes(target);
            assert_eq!(key_target(&target_key(target)).as_deref(), Some(target));
        }
        assert_eq!(target_key(OsStr::new("../plain")), "../plain");
        assert_eq!(key_target("a/\x00zz"), None);
    }

    #[test]
    fn a_key_that_names_no_file_is_refused() {
        for key in [
            "", ".", "..", "\x00", "\x002f", "\x0000", "\x002e2e", "\x00zz", "\x00f",
        ] {
            assert_eq!(key_name(key), None, "{key:?}");
        }
    }
}

//! Listing the workspace: every entry the walk takes in, with what `lstat`
//! says of it. The directories are read one after another (what a directory
//! holds decides what is read below it); the entries are then `lstat`ed on
//! a few threads, since one `lstat` per file is most of an incremental
//! checkpoint's cost and nothing cheaper can tell a file changed in place.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ignores::{Frame, Included, Problem};
use crate::manifest::name_key;
use crate::store::Store;

/// One entry the walk takes in: its manifest path, and where it is.
struct Found {
    key: String,
    path: PathBuf,
}

/// An entry looked at: its manifest path, where it is, and what `lstat`
/// said of it.
pub(crate) type Looked = (String, PathBuf, std::io::Result<fs::Metadata>);

/// Fewer entries than this are looked at on the calling thread: starting
/// threads would cost more than they save.
const PARALLEL_FROM: usize = 2048;

/// `lstat`s every entry, in order, on up to four threads.
fn look_at_all(found: Vec<Found>) -> Vec<Looked> {
    let metas = mecha_core::map_in_order(&found, PARALLEL_FROM, |f| fs::symlink_metadata(&f.path));
    found
        .into_iter()
        .zip(metas)
        .map(|(f, meta)| (f.key, f.path, meta))
        .collect()
}

/// What the walk reads its rules from.
struct Walk<'a> {
    store_root: Option<PathBuf>,
    included: &'a Included,
    found: Vec<Found>,
    problems: Vec<(String, String)>,
}

/// Every path the walk takes in, in order; and what could not be walked
/// (a directory it may not read, an ignore file it cannot parse), by path,
/// which the snapshot then skips rather than fail the call it precedes.
pub(crate) fn list(
    store: &Store,
    workspace: &Path,
    included: &Included,
) -> (Vec<Looked>, BTreeMap<String, String>) {
    let mut walk = Walk {
        store_root: fs::canonicalize(store.root()).ok(),
        included,
        found: Vec::new(),
        problems: Vec::new(),
    };
    let mut read_problems = Vec::new();
    let above = Frame::above(workspace, &mut read_problems);
    walk.dir(workspace, "", above.as_ref(), false, &mut read_problems);
    let mut problems: BTreeMap<String, String> = walk.problems.into_iter().collect();
    for (path, e) in read_problems {
        let at = relative(workspace, &path).unwrap_or_else(|| ".".to_owned());
        problems.insert(at, format!("not walked: {e}"));
    }
    (look_at_all(walk.found), problems)
}

impl Walk<'_> {
    /// Lists `dir` (manifest path `key`) and what is under it. An empty
    /// directory is itself an entry. An `ignored` one is entered only on
    /// the way to what `include_ignored` names, and gives only that.
    fn dir(
        &mut self,
        dir: &Path,
        key: &str,
        parent: Option<&Arc<Frame>>,
        ignored: bool,
        read_problems: &mut Vec<Problem>,
    ) {
        let listed = fs::read_dir(dir).and_then(|entries| {
            entries
                .map(|e| e.map(|e| (e.file_name(), e)))
                .collect::<std::io::Result<Vec<(OsString, fs::DirEntry)>>>()
        });
        let entries = match listed {
            Ok(entries) => entries,
            Err(e) => return self.unwalked(key, e),
        };
        if entries.is_empty() && !key.is_empty() && !ignored {
            self.found.push(Found {
                key: key.to_owned(),
                path: dir.to_path_buf(),
            });
            return;
        }
        let has = |name: &str| entries.iter().any(|(n, _)| n == name);
        let own = Frame::of(dir, parent, has, read_problems);
        let frame = own.as_ref().or(parent);
        let mut children: Vec<(OsString, bool, String)> = entries
            .into_iter()
            .filter(|(name, _)| name != ".git")
            .map(|(name, entry)| {
                // `d_type` from the listing: no `stat` for what is left out.
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                let slash = if is_dir { "/" } else { "" };
                let child = match (key, name_key(&name)) {
                    ("", spelt) => format!("{spelt}{slash}"),
                    (key, spelt) => format!("{key}/{spelt}{slash}"),
                };
                (name, is_dir, child)
            })
            .collect();
        // A directory sorts where `name/` would (and is spelt so until
        // here): depth first, the whole walk then gives files in manifest
        // path order.
        children.sort_unstable_by(|a, b| a.2.cmp(&b.2));
        for (name, is_dir, mut child) in children {
            if is_dir {
                child.pop();
            }
            let path = dir.join(&name);
            let left_out = (ignored || frame.is_some_and(|f| f.ignores(&path, is_dir)))
                && !self.included.includes(&path, is_dir);
            if is_dir {
                let on_route = left_out && self.included.leads_in(&child);
                if (!left_out || on_route) && self.store_root.as_deref() != Some(path.as_path()) {
                    self.dir(&path, &child, frame, on_route, read_problems);
                }
                continue;
            }
            if left_out {
                continue;
            }
            self.found.push(Found { key: child, path });
        }
    }

    fn unwalked(&mut self, key: &str, e: std::io::Error) {
        let at = if key.is_empty() { "." } else { key };
        self.problems
            .push((at.to_owned(), format!("not walked: {e}")));
    }
}

/// `path` relative to `workspace`, as a manifest spells it; `None` for the
/// workspace itself or a path outside it.
fn relative(workspace: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(workspace).ok()?;
    let names: Vec<_> = rest.iter().map(name_key).collect();
    (!names.is_empty()).then(|| names.join("/"))
}

//! Following a start-up file or a PATH directory the way the user's shell
//! will reach it: through every symlink on the way, as often as not into a
//! dotfiles repository, and on past a missing part (a link whose target
//! does not exist yet can still be given one).
//!
//! A mount follows links but a link itself is no mount point, so each link
//! passed through is reported for the sweep to find unchanged afterwards,
//! at a location reached without any symlink (its own parent resolved), so
//! the sweep can open that parent without following one.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Links resolved before giving up, as the kernel's own limit.
const MAX_HOPS: usize = 40;

/// Where a path leads, and the links on the way there.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Followed {
    /// No symlink anywhere in it; what does not exist yet is appended as
    /// written.
    pub resolved: PathBuf,
    /// Each link passed: where it is (a parent that holds no symlink) and
    /// what it says.
    pub links: Vec<(PathBuf, PathBuf)>,
}

/// What each path was the first time one plan looked: the dozens of
/// start-up files under one home, and the PATH directories, share most of
/// their parents, so each parent is looked at once per plan, not once per
/// file under it.
#[derive(Debug, Default)]
pub(super) struct Lookups(HashMap<PathBuf, Seen>);

#[derive(Debug, Clone)]
enum Seen {
    /// A symlink, and what it says.
    Link(PathBuf),
    Other,
    Missing,
    /// Unreadable, or below a file: nothing can lead through it.
    Dead,
}

impl Lookups {
    fn look(&mut self, path: &Path) -> Seen {
        if let Some(seen) = self.0.get(path) {
            return seen.clone();
        }
        let seen = match fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                fs::read_link(path).map_or(Seen::Dead, Seen::Link)
            }
            Ok(_) => Seen::Other,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Seen::Missing,
            Err(_) => Seen::Dead,
        };
        self.0.insert(path.to_path_buf(), seen.clone());
        seen
    }

    /// `path` resolved as `realpath -m` would: `None` for a relative path,
    /// a link loop, or a file where a directory would have to be (nothing
    /// can be created below it).
    pub(super) fn follow(&mut self, path: &Path) -> Option<Followed> {
        if !path.is_absolute() {
            return None;
        }
        let mut todo: Vec<OsString> = reversed(path);
        let mut at = PathBuf::from("/");
        let mut links = Vec::new();
        let mut missing = false;
        while let Some(part) = todo.pop() {
            match part.to_str() {
                Some("/") => at = PathBuf::from("/"),
                Some(".") => {}
                Some("..") => {
                    at.pop();
                }
                _ => {
                    let next = at.join(&part);
                    if missing {
                        at = next;
                        continue;
                    }
                    match self.look(&next) {
                        Seen::Link(target) => {
                            if links.len() == MAX_HOPS {
                                return None;
                            }
                            todo.extend(reversed(&target));
                            links.push((next, target));
                        }
                        Seen::Other => at = next,
                        Seen::Missing => {
                            missing = true;
                            at = next;
                        }
                        Seen::Dead => return None,
                    }
                }
            }
        }
        Some(Followed {
            resolved: at,
            links,
        })
    }
}

/// The components of `path`, last first (a stack to pop).
fn reversed(path: &Path) -> Vec<OsString> {
    path.components()
        .rev()
        .filter(|c| !matches!(c, Component::Prefix(_)))
        .map(|c| c.as_os_str().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn follow(path: &Path) -> Option<Followed> {
        Lookups::default().follow(path)
    }

    #[test]
    fn a_missing_leaf_below_a_symlinked_parent_resolves_where_it_would_be_created() {
        let tmp = tempfile::tempdir().unwrap();
        let home = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(home.join("dotfiles/config")).unwrap();
        symlink("dotfiles/config", home.join(".config")).unwrap();
        let followed = follow(&home.join(".config/fish/config.fish")).unwrap();
        assert_eq!(
            followed.resolved,
            home.join("dotfiles/config/fish/config.fish")
        );
        assert_eq!(
            followed.links,
            [(home.join(".config"), PathBuf::from("dotfiles/config"))]
        );
    }

    #[test]
    fn links_are_reported_where_they_are_and_dot_dot_follows_the_link() {
        let tmp = tempfile::tempdir().unwrap();
        let home = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(home.join("dotfiles/bin")).unwrap();
        fs::create_dir_all(home.join(".local")).unwrap();
        symlink(home.join("dotfiles/bin"), home.join(".local/bin")).unwrap();
        symlink("../.local/bin", home.join("dotfiles/alias")).unwrap();
        let followed = follow(&home.join("dotfiles/alias/../x")).unwrap();
        assert_eq!(followed.resolved, home.join("dotfiles/x"));
        assert_eq!(
            followed.links,
            [
                (home.join("dotfiles/alias"), PathBuf::from("../.local/bin")),
                (home.join(".local/bin"), home.join("dotfiles/bin")),
            ]
        );
    }

    #[test]
    fn files_under_one_link_each_report_it_from_one_set_of_lookups() {
        let tmp = tempfile::tempdir().unwrap();
        let home = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(home.join("dotfiles/config")).unwrap();
        symlink("dotfiles/config", home.join(".config")).unwrap();
        let mut lookups = Lookups::default();
        for file in ["fish/config.fish", "git/config", "fish/config.fish"] {
            let followed = lookups.follow(&home.join(".config").join(file)).unwrap();
            assert_eq!(followed.resolved, home.join("dotfiles/config").join(file));
            assert_eq!(
                followed.links,
                [(home.join(".config"), PathBuf::from("dotfiles/config"))]
            );
        }
        // A dead end stays one for the next file through it.
        fs::write(home.join("file"), "").unwrap();
        assert_eq!(lookups.follow(&home.join("file/a")), None);
        assert_eq!(lookups.follow(&home.join("file/b")), None);
    }

    #[test]
    fn a_loop_or_a_file_on_the_way_leads_nowhere() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        symlink("b", dir.join("a")).unwrap();
        symlink("a", dir.join("b")).unwrap();
        fs::write(dir.join("file"), "").unwrap();
        assert_eq!(follow(&dir.join("a/x")), None);
        assert_eq!(follow(&dir.join("file/x")), None);
        assert_eq!(follow(Path::new("relative")), None);
    }
}

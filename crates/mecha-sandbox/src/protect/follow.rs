//! Following a start-up file or a PATH directory the way the user's shell
//! will reach it: through every symlink on the way, as often as not into a
//! dotfiles repository, and on past a missing part (a link whose target
//! does not exist yet can still be given one).
//!
//! A mount follows links but a link itself is no mount point, so each link
//! passed through is reported for the sweep to find unchanged afterwards,
//! at a location reached without any symlink (its own parent resolved), so
//! the sweep can open that parent without following one.

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

/// `path` resolved as `realpath -m` would: `None` for a relative path, a
/// link loop, or a file where a directory would have to be (nothing can be
/// created below it).
pub(super) fn follow(path: &Path) -> Option<Followed> {
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
                match fs::symlink_metadata(&next) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        if links.len() == MAX_HOPS {
                            return None;
                        }
                        let target = fs::read_link(&next).ok()?;
                        todo.extend(reversed(&target));
                        links.push((next, target));
                    }
                    Ok(_) => at = next,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        missing = true;
                        at = next;
                    }
                    Err(_) => return None,
                }
            }
        }
    }
    Some(Followed {
        resolved: at,
        links,
    })
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

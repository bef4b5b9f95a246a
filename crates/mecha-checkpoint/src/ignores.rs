//! Which paths the walk leaves out: `.ignore`, `.gitignore` and
//! `.git/info/exclude` read as patterns, in the `ignore` crate's order of
//! precedence (any `.ignore` over any `.gitignore` over the exclude file,
//! and a deeper file over a shallower one), and the globs a user named to
//! take in even so (`[checkpoint] include_ignored`).
//!
//! The walk is mecha's own rather than `ignore::Walk`, which has no way to
//! take back in a path its rules leave out; the patterns are still that
//! crate's, so they mean what they mean to git.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The ignore files of one directory, and those of the directories above.
#[derive(Default)]
pub(crate) struct Frame {
    parent: Option<Arc<Frame>>,
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
}

/// A problem reading an ignore file: where, and what.
pub(crate) type Problem = (std::path::PathBuf, String);

impl Frame {
    /// The frame of `dir`, below `parent`: `has` says which of its names
    /// are there (the walk has them from the listing, so a directory
    /// without ignore files costs no look). `None` when it has none, and
    /// the parent's frame serves.
    pub fn of(
        dir: &Path,
        parent: Option<&Arc<Frame>>,
        has: impl Fn(&str) -> bool,
        problems: &mut Vec<Problem>,
    ) -> Option<Arc<Frame>> {
        let ignore = has(".ignore").then(|| read(dir, &[".ignore"], problems));
        let gitignore = has(".gitignore").then(|| read(dir, &[".gitignore"], problems));
        let exclude = has(".git").then(|| read(dir, &[".git", "info", "exclude"], problems));
        let frame = Frame {
            parent: parent.cloned(),
            ignore: ignore.flatten(),
            gitignore: gitignore.flatten(),
            exclude: exclude.flatten(),
        };
        let any = frame.ignore.is_some() || frame.gitignore.is_some() || frame.exclude.is_some();
        any.then(|| Arc::new(frame))
    }

    /// The frames of the directories above `workspace`, whose ignore files
    /// apply inside it too (as they do to git and to the `ignore` crate).
    pub fn above(workspace: &Path, problems: &mut Vec<Problem>) -> Option<Arc<Frame>> {
        let mut above: Vec<&Path> = workspace.ancestors().skip(1).collect();
        above.reverse();
        above.into_iter().fold(None, |parent, dir| {
            let has = |name: &str| dir.join(name).exists();
            Frame::of(dir, parent.as_ref(), has, problems).or(parent)
        })
    }

    fn chain(&self) -> impl Iterator<Item = &Frame> {
        std::iter::successors(Some(self), |f| f.parent.as_deref())
    }

    /// Whether the rules leave `path` out.
    pub fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        let layers: [fn(&Frame) -> Option<&Gitignore>; 3] = [
            |f| f.ignore.as_ref(),
            |f| f.gitignore.as_ref(),
            |f| f.exclude.as_ref(),
        ];
        for layer in layers {
            for rules in self.chain().filter_map(layer) {
                match rules.matched(path, is_dir) {
                    Match::None => {}
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                }
            }
        }
        false
    }
}

/// The patterns of `dir`'s ignore file at `name`; what could not be read
/// or parsed is a problem, and the patterns that parsed still count.
fn read(dir: &Path, name: &[&str], problems: &mut Vec<Problem>) -> Option<Gitignore> {
    let file = name.iter().fold(dir.to_path_buf(), |p, n| p.join(n));
    let mut builder = GitignoreBuilder::new(dir);
    if let Some(e) = builder.add(&file) {
        let missing = e.io_error().is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            )
        });
        if missing {
            return None;
        }
        problems.push((file.clone(), e.to_string()));
    }
    match builder.build() {
        Ok(rules) => (!rules.is_empty()).then_some(rules),
        Err(e) => {
            problems.push((file, e.to_string()));
            None
        }
    }
}

/// `[checkpoint] include_ignored`: globs in `.gitignore`'s syntax, relative
/// to the workspace, naming ignored paths to take in anyway.
pub(crate) struct Included {
    rules: Option<Gitignore>,
    /// The directories on the way to what a glob with a `/` names
    /// (`build` for `build/keep/`): entered even when ignored, though only
    /// what a glob names is taken in from them. A glob without one (`.env`)
    /// matches in the directories the walk enters anyway, so that a
    /// `node_modules/` is never walked for it.
    routes: BTreeSet<String>,
}

impl Included {
    /// Compiled against `workspace`; the first glob that is not one is the
    /// error, with why.
    pub fn new(workspace: &Path, globs: &[String]) -> Result<Self, (String, String)> {
        let mut routes = BTreeSet::new();
        if globs.is_empty() {
            return Ok(Self {
                rules: None,
                routes,
            });
        }
        let mut builder = GitignoreBuilder::new(workspace);
        for glob in globs {
            builder
                .add_line(None, glob)
                .map_err(|e| (glob.clone(), e.to_string()))?;
            routes.extend(route(glob));
        }
        let rules = builder
            .build()
            .map_err(|e| (globs.join(", "), e.to_string()))?;
        Ok(Self {
            rules: Some(rules),
            routes,
        })
    }

    /// Whether the ignored directory `key` leads to what a glob names.
    pub fn leads_in(&self, key: &str) -> bool {
        self.routes.contains(key)
    }

    /// Whether `path`, which the rules leave out, is to be taken in.
    pub fn includes(&self, path: &Path, is_dir: bool) -> bool {
        self.rules
            .as_ref()
            .is_some_and(|rules| rules.matched(path, is_dir).is_ignore())
    }
}

/// The directories leading to what `glob` names, when it names a place (a
/// `/` before its last name): each literal directory before the first
/// wildcard, as manifest paths.
fn route(glob: &str) -> Vec<String> {
    let glob = glob.trim_end_matches('/');
    let anchored = glob.trim_start_matches('/');
    let Some((dirs, _)) = anchored.rsplit_once('/') else {
        return Vec::new();
    };
    let mut routes = Vec::new();
    let mut path = String::new();
    for name in dirs.split('/') {
        if name.is_empty() || name.contains(['*', '?', '[', '\\', '!']) || name == ".." {
            break;
        }
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(name);
        routes.push(path.clone());
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::route;

    #[test]
    fn a_glob_with_a_place_leads_through_its_directories() {
        assert_eq!(route("build/keep/"), ["build"]);
        assert_eq!(route("/a/b/c/*.json"), ["a", "a/b", "a/b/c"]);
        assert_eq!(route("a/*/c/x"), ["a"]);
        assert!(route(".env").is_empty());
        assert!(route("**/x").is_empty());
    }
}

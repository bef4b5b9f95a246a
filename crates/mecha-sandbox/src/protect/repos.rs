//! From the repositories the walk found (git.rs) to protection targets.

use std::fs;
use std::path::{Path, PathBuf};

use super::git::{self, Found};
use super::{Kind, Scope, Target, normalize, placeholder, refuse_symlinks_below};
use crate::SandboxError;

/// In every git directory, its protected entries and what its config
/// points at; for a `.git` file, the file itself; and the git and common
/// directories a `.git` file or symlink leads to, or a git directory's
/// `commondir` names (protected like the workspace's own inside a writable
/// root, shown read-only elsewhere, so git inside works). The root's
/// `.git`, when missing or only a placeholder of another job, is one
/// read-only empty directory that stands for its hooks and config both;
/// when it is a symlink it is refused, as no mount can hold it.
pub(super) fn repository_targets(
    scope: &Scope<'_>,
    found: &[Found],
    records: &placeholder::Records,
) -> Result<Vec<Target>, SandboxError> {
    let root_git = scope.host.join(".git");
    let mut targets = Vec::new();
    let mut root_seen = false;
    for repo in found {
        match repo {
            Found::Dir(dir) if *dir == root_git && records.is_placeholder(dir) => {}
            Found::Dir(dir) => {
                root_seen |= *dir == root_git;
                let worktree = match dir.file_name() {
                    Some(name) if name == ".git" => dir.parent().unwrap_or(dir),
                    _ => dir,
                };
                targets.extend(git::gitdir_targets(dir, worktree, scope.home)?);
                let common = git::read_commondir(dir).and_then(|text| {
                    let canonical = fs::canonicalize(dir.join(&text)).ok()?;
                    Some((normalize(&dir.join(&text)), canonical))
                });
                if let Some(common) = common {
                    named_targets(scope, &[common], worktree, &mut targets)?;
                }
            }
            Found::Link(link) if *link == root_git => {
                return Err(SandboxError::ProtectedSymlink { path: link.clone() });
            }
            Found::File(pointer) | Found::Link(pointer) => {
                root_seen |= *pointer == root_git;
                if matches!(repo, Found::File(_)) {
                    targets.push(Target::existing(pointer.clone()));
                }
                let named = match git::pointed(pointer) {
                    Ok(Some(named)) => named,
                    Ok(None) => continue,
                    Err((lexical, e)) if *pointer == root_git => {
                        return Err(SandboxError::Confine {
                            program: pointer.display().to_string(),
                            reason: format!(
                                "it names `{}`, which cannot be opened ({e}); repair the \
                                 worktree with `git worktree repair`, or remove the file",
                                lexical.display()
                            ),
                        });
                    }
                    // A nested one that leads nowhere: git there fails.
                    Err(_) => continue,
                };
                let worktree = pointer.parent().unwrap_or(scope.host);
                let dirs: Vec<_> = named.common.into_iter().chain([named.gitdir]).collect();
                named_targets(scope, &dirs, worktree, &mut targets)?;
            }
        }
    }
    if !root_seen {
        targets.push(Target::placeheld(root_git, Kind::Dir));
    }
    Ok(targets)
}

/// Git directories reached from elsewhere, each as written (lexical) and
/// canonical. Inside a writable root one is a repository of the workspace
/// like any other (its own entries protected, the rest writable);
/// elsewhere it is shown to git inside, read-only, where git inside looks.
fn named_targets(
    scope: &Scope<'_>,
    dirs: &[(PathBuf, PathBuf)],
    worktree: &Path,
    targets: &mut Vec<Target>,
) -> Result<(), SandboxError> {
    let writable_roots =
        std::iter::once(scope.host).chain(scope.writable.iter().map(PathBuf::as_path));
    for (lexical, canonical) in dirs {
        for root in writable_roots.clone() {
            if lexical.starts_with(root) {
                refuse_symlinks_below(root, lexical)?;
            }
        }
        if writable_roots
            .clone()
            .any(|root| canonical.starts_with(root))
        {
            targets.extend(git::gitdir_targets(canonical, worktree, scope.home)?);
            continue;
        }
        let shown = match lexical.strip_prefix(scope.host) {
            Ok(rel) => scope.inside.join(rel),
            Err(_) => lexical.clone(),
        };
        targets.push(Target {
            shown: Some(shown),
            ..Target::existing(canonical.clone())
        });
        targets.extend(super::config::config_targets_or_refuse(
            canonical, worktree, scope.home,
        )?);
    }
    Ok(())
}

//! What the sweep does to a repository the job made: config keys that
//! would run something go, hooks are renamed; the originals are kept
//! aside for the user to read.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};

use super::access::Opened;
use super::{QUARANTINE, aside};
use crate::gitconfig;
use crate::protect::CONFIG_LIMIT;

/// Keeps only the inert entries of `dir/name`; the original goes aside.
pub(super) fn sanitize_config(
    dir: &OwnedFd,
    shown: &str,
    name: &str,
    opened: &mut Opened,
    undone: &mut Vec<String>,
) {
    let open = || {
        rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )
    };
    let file = match open() {
        Err(rustix::io::Errno::ACCESS) if opened.open_up_at(dir, name, Mode::RUSR) => open(),
        file => file,
    };
    let file = match file {
        Ok(file) => std::fs::File::from(file),
        Err(rustix::io::Errno::LOOP) => {
            if opened.rename_in(dir, name, &aside(name)).is_ok() {
                undone.push(format!(
                    "{shown}/{name} was a symlink in a repository the command made; moved aside \
                     to {}, since git on the host would read it as config",
                    aside(name)
                ));
            }
            return;
        }
        Err(rustix::io::Errno::NOENT) => return,
        Err(e) => {
            undone.push(could_not(&format!("{shown}/{name}"), "read it", e));
            return;
        }
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        if opened.rename_in(dir, name, &aside(name)).is_ok() {
            undone.push(format!(
                "{shown}/{name} was not a regular file in a repository the command made; moved \
                 aside to {}, since git on the host would open it as config",
                aside(name)
            ));
        }
        return;
    }
    // Git reads all of it; one past the limit is a file mecha cannot vouch
    // for, however harmless its first megabyte.
    let mut bytes = Vec::new();
    let read = file.take(CONFIG_LIMIT + 1).read_to_end(&mut bytes);
    let whole = read.is_ok_and(|n| n as u64 <= CONFIG_LIMIT);
    let (keep, removed) = match whole.then(|| gitconfig::parse(&bytes)).flatten() {
        Some(entries) => {
            let (keep, bad): (Vec<_>, Vec<_>) = entries.into_iter().partition(|e| e.is_inert());
            if bad.is_empty() {
                return;
            }
            let names: Vec<String> = bad.iter().map(gitconfig::Entry::name).collect();
            (keep, format!("removed {}", names.join(", ")))
        }
        None => (
            Vec::new(),
            "emptied it (it is not config mecha can read)".into(),
        ),
    };
    if let Err(e) = opened.rename_in(dir, name, &aside(name)) {
        undone.push(could_not(
            &format!("{shown}/{name}"),
            "take out what git would run",
            e,
        ));
        return;
    }
    let written = rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(std::io::Error::from)
    .map(std::fs::File::from)
    .and_then(|mut f| f.write_all(&gitconfig::render(&keep)));
    if let Err(e) = written {
        tracing::warn!("could not write the cleaned {shown}/{name}: {e}");
    }
    undone.push(format!(
        "{shown}/{name}: {removed}, in a repository the command made (git on the host would \
         run or include what they name); the original is kept as {}",
        aside(name)
    ));
}

/// Renames every hook in `dir/hooks_dir` of a new repository (its git
/// directory's `hooks`, or the one the user's `core.hooksPath` names in its
/// work tree; a `.sample` runs never), or that directory itself when it is
/// a symlink.
pub(super) fn quarantine_hooks(
    dir: &OwnedFd,
    hooks_dir: &str,
    shown: &str,
    opened: &mut Opened,
    undone: &mut Vec<String>,
) {
    let open = || {
        rustix::fs::openat(
            dir,
            hooks_dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    let hooks = match open() {
        Err(rustix::io::Errno::ACCESS)
            if opened.open_up_at(dir, hooks_dir, Mode::RUSR | Mode::XUSR) =>
        {
            open()
        }
        hooks => hooks,
    };
    let hooks = match hooks {
        Ok(hooks) => hooks,
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
            if opened.rename_in(dir, hooks_dir, &aside(hooks_dir)).is_ok() {
                undone.push(format!(
                    "{shown}/{hooks_dir} was not a directory in a repository the command made; moved \
                     aside to {}, so git on the host runs nothing from it",
                    aside(hooks_dir)
                ));
            }
            return;
        }
        Err(rustix::io::Errno::NOENT) => return,
        Err(e) => {
            undone.push(could_not(
                &format!("{shown}/{hooks_dir}"),
                "look at its hooks",
                e,
            ));
            return;
        }
    };
    let mut listing = match rustix::fs::Dir::read_from(&hooks) {
        Ok(listing) => listing,
        Err(e) => {
            undone.push(could_not(
                &format!("{shown}/{hooks_dir}"),
                "list its hooks",
                e,
            ));
            return;
        }
    };
    let mut names = Vec::new();
    while let Some(Ok(entry)) = listing.read() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // A sample git never runs is a file; anything else named so (a
        // directory holding a repository of its own) goes aside too.
        let sample =
            name.ends_with(".sample") && entry.file_type() == rustix::fs::FileType::RegularFile;
        if name != "." && name != ".." && !sample && !name.ends_with(QUARANTINE) {
            names.push(name);
        }
    }
    for name in names {
        match opened.rename_in(&hooks, &name, &aside(&name)) {
            Ok(()) => undone.push(format!(
                "{shown}/{hooks_dir}/{name}: renamed to {}, a hook in a repository the command made \
                 (git on the host would run it)",
                aside(&name)
            )),
            Err(e) => undone.push(could_not(
                &format!("{shown}/{hooks_dir}/{name}"),
                "rename the hook aside",
                e,
            )),
        }
    }
}

/// What the sweep says when the job kept it from undoing something (as an
/// ordinary user, a `chmod` on what the job made is enough): loudly, since
/// what stays is for git on the host to run.
pub(super) fn could_not(what: &str, undo: &str, e: rustix::io::Errno) -> String {
    format!(
        "{what}: could NOT {undo} ({}), in a repository the command made; git on the host \
         would run what it names: do not run git there until you have looked at it (or \
         removed it)",
        mecha_core::system_words(&e.into())
    )
}

//! With the workspace at the home directory, what the user's next shell
//! runs lies in the writable tree: start-up files, the directories on
//! PATH, and the symlinks into a dotfiles repository that lead to them.
//! Each test plants from inside the real sandbox, sweeps, and then runs
//! what the host would run (a shell, a program looked up on PATH),
//! checking that the planted program did not run (a marker file outside
//! the workspace stays absent).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ffi::OsString;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{confine, write_executable};
use mecha_sandbox::{HostEnv, Sandbox, SandboxConfig};

/// A home directory that is the workspace, a marker outside it, and a
/// program that leaves the marker behind.
struct Home {
    dir: tempfile::TempDir,
    _outside: tempfile::TempDir,
    marker: PathBuf,
    payload: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let marker = outside.path().join("RAN");
        // Inside, where the confined command can copy it.
        let payload = dir.path().join("payload");
        write_executable(
            &payload,
            &format!("#!/bin/sh\ntouch {}\n", marker.display()),
        );
        Self {
            dir,
            _outside: outside,
            marker,
            payload,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The sandbox mecha would start here: HOME is the workspace, and
    /// mecha's PATH is `path`.
    fn sandbox(&self, path: &[&Path]) -> Option<Sandbox> {
        let path: Vec<&Path> = path
            .iter()
            .copied()
            .chain([Path::new("/usr/bin")])
            .collect();
        let host = HostEnv {
            path: std::env::join_paths(path).unwrap(),
            home: Some(self.path().to_path_buf()),
            records: None,
            bridge: None,
        };
        common::sandbox(SandboxConfig::default(), host)
    }
}

/// Runs `script` confined in the home, then sweeps: its output, and what
/// the sweep said.
async fn plant(sandbox: &Sandbox, home: &Path, script: &str) -> (String, Vec<String>) {
    let confined = confine(sandbox, home, script, false);
    let mut command = confined.command;
    let out = command.output().await.unwrap();
    let undone = confined.lease.finish().undone;
    // The placeholders go after finish returns, in the background.
    mecha_sandbox::wait_for_background_sweeps(std::time::Duration::from_secs(10));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (text, undone)
}

/// Each attempt that succeeds is reported as a breach.
const TRY: &str = "try() { if (eval \"$1\") >/dev/null 2>&1; then echo \"BREACH: $1\"; fi; }\n";

/// A shell on the host, as the user starts one, in `home`.
fn host_shell(home: &Path, path: &OsString, args: &[&str]) {
    Command::new("bash")
        .args(args)
        .current_dir(home)
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .output()
        .unwrap();
}

/// Debian's and Ubuntu's default `.bashrc` reads `~/.bash_aliases`.
#[tokio::test]
async fn bash_aliases_cannot_be_planted() {
    let home = Home::new();
    let ws = home.path();
    std::fs::write(
        ws.join(".bashrc"),
        "if [ -f ~/.bash_aliases ]; then . ~/.bash_aliases; fi\n",
    )
    .unwrap();
    let Some(sandbox) = home.sandbox(&[]) else {
        return;
    };
    let script = format!(
        "{TRY}try 'echo {p} > .bash_aliases'\necho DONE",
        p = home.payload.display()
    );
    let (out, _) = plant(&sandbox, ws, &script).await;
    host_shell(ws, &"/usr/bin:/bin".into(), &["-ic", "true"]);
    assert!(
        !home.marker.exists(),
        "the host's bash ran the planted program"
    );
    assert!(out.contains("DONE") && !out.contains("BREACH"), "{out}");
}

/// The code a `.bashrc` runs is often in a file it sources, which an
/// installer put under the home directory (nvm, fzf): those are kept as
/// read-only as the `.bashrc`, found by reading it (the third review), a
/// name built from a variable it set included.
#[tokio::test]
async fn what_the_bashrc_sources_cannot_be_planted() {
    let home = Home::new();
    let ws = home.path();
    std::fs::create_dir(ws.join(".nvm")).unwrap();
    std::fs::write(ws.join(".nvm/nvm.sh"), "nvm() { :; }\n").unwrap();
    std::fs::write(
        ws.join(".bashrc"),
        "export TOOL_DIR=\"$HOME/.tool\"\n\
         [ -s \"$HOME/.nvm/nvm.sh\" ] && \\. \"$HOME/.nvm/nvm.sh\"\n\
         [ -f ~/.fzf.bash ] && source ~/.fzf.bash\n\
         [ -f \"$TOOL_DIR/init.sh\" ] && . \"$TOOL_DIR/init.sh\"\n\
         for file in ~/.{path,extra}; do\n\
         \t[ -r \"$file\" ] && [ -f \"$file\" ] && source \"$file\";\n\
         done;\n",
    )
    .unwrap();
    let Some(sandbox) = home.sandbox(&[]) else {
        return;
    };
    let script = format!(
        "{TRY}try 'echo {p} >> .nvm/nvm.sh'\ntry 'echo {p} > .fzf.bash'\n\
         try 'mkdir -p .tool && echo {p} > .tool/init.sh'\ntry 'echo {p} > .extra'\necho DONE",
        p = home.payload.display()
    );
    let (out, _) = plant(&sandbox, ws, &script).await;
    host_shell(ws, &"/usr/bin:/bin".into(), &["-ic", "true"]);
    assert!(
        !home.marker.exists(),
        "the host's bash ran the planted program: {out}"
    );
    assert!(out.contains("DONE") && !out.contains("BREACH"), "{out}");
}

/// `~/.cargo/bin` comes first on PATH once `.cargo/env` is read, and every
/// directory on mecha's own PATH is searched by the user's shells too:
/// none of them, existing or not, can be given an `ls`.
#[tokio::test]
async fn no_program_can_be_planted_in_a_directory_on_path() {
    let home = Home::new();
    let ws = home.path();
    let (cargo, opt, tools) = (
        ws.join(".cargo/bin"),
        ws.join("opt/bin"),
        ws.join("tools/bin"),
    );
    std::fs::create_dir_all(&cargo).unwrap();
    std::fs::create_dir_all(&opt).unwrap();
    let Some(sandbox) = home.sandbox(&[&opt, &tools]) else {
        return;
    };
    let p = home.payload.display();
    let script = format!(
        "{TRY}try 'cp {p} .cargo/bin/ls'\ntry 'cp {p} opt/bin/ls'\n\
         try 'mkdir -p tools/bin && cp {p} tools/bin/ls'\ntry 'mv opt opt.old'\n\
         echo x > elsewhere && echo DONE"
    );
    let (out, _) = plant(&sandbox, ws, &script).await;
    for dir in [&cargo, &opt, &tools] {
        let path = std::env::join_paths([dir, Path::new("/usr/bin")]).unwrap();
        host_shell(ws, &path, &["-c", "ls"]);
        assert!(
            !home.marker.exists(),
            "the host's shell ran the `ls` planted in {}",
            dir.display()
        );
    }
    assert!(out.contains("DONE") && !out.contains("BREACH"), "{out}");
    assert!(!ws.join("tools").exists(), "the placeholder is gone");
}

/// `~/.config` a symlink into a dotfiles repository, and `fish` missing
/// below it: the placeholder goes where the link leads, so neither
/// fish's start-up file nor a user service can be created through it.
#[tokio::test]
async fn a_missing_start_up_file_below_a_symlinked_directory_cannot_be_created() {
    let home = Home::new();
    let ws = home.path();
    std::fs::create_dir_all(ws.join("dotfiles/config")).unwrap();
    symlink("dotfiles/config", ws.join(".config")).unwrap();
    let Some(sandbox) = home.sandbox(&[]) else {
        return;
    };
    let script = format!(
        "{TRY}try 'mkdir -p .config/fish && echo {p} > .config/fish/config.fish'\n\
         try 'mkdir -p .config/systemd/user && echo x > .config/systemd/user/x.service'\n\
         try 'touch dotfiles/config/fish/x'\ntry 'mv dotfiles dotfiles.old'\n\
         try 'rm .config && mkdir -p .config/fish && echo {p} > .config/fish/config.fish'\n\
         echo DONE",
        p = home.payload.display()
    );
    let (out, undone) = plant(&sandbox, ws, &script).await;
    assert!(out.contains("DONE"), "{out}");
    // What fish would read at start-up.
    let fish = ws.join(".config/fish/config.fish");
    if fish.exists() {
        host_shell(ws, &"/usr/bin:/bin".into(), &[fish.to_str().unwrap()]);
    }
    assert!(!home.marker.exists(), "the planted start-up file ran");
    let breaches: Vec<&str> = out.lines().filter(|l| l.contains("BREACH")).collect();
    // The link itself can be replaced (it is no mount point); the sweep
    // puts it back, with what the command made kept aside.
    assert_eq!(
        breaches,
        [
            "BREACH: rm .config && mkdir -p .config/fish && echo ".to_owned()
                + &home.payload.display().to_string()
                + " > .config/fish/config.fish"
        ],
        "{out}"
    );
    assert!(
        undone.join("\n").contains(".config: the command replaced"),
        "{undone:?}"
    );
    assert_eq!(
        std::fs::read_link(ws.join(".config")).unwrap(),
        Path::new("dotfiles/config")
    );
    assert!(!ws.join(".config/systemd").exists());
    assert_eq!(
        std::fs::read_dir(ws.join("dotfiles/config"))
            .unwrap()
            .count(),
        0,
        "the placeholders are gone"
    );
}

/// `~/.local/bin` a symlink into a dotfiles repository, below a real
/// `~/.local`: the directory holding the link cannot be swapped for a link
/// to somewhere else, and if it is swapped anyway (here on the host, as a
/// stand-in), the sweep refuses to restore the link through it instead of
/// renaming and planting wherever it now leads.
#[tokio::test]
async fn a_start_up_links_directory_cannot_be_swapped_and_is_not_followed() {
    let home = Home::new();
    let ws = home.path();
    let victim = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(victim.path().join("bin")).unwrap();
    std::fs::create_dir_all(ws.join("dotfiles/bin")).unwrap();
    std::fs::create_dir(ws.join(".local")).unwrap();
    let target = ws.join("dotfiles/bin");
    symlink(&target, ws.join(".local/bin")).unwrap();
    let Some(sandbox) = home.sandbox(&[]) else {
        return;
    };
    let script = format!(
        "{TRY}try 'mv .local .local.old && ln -s {v} .local'\n\
         rm .local/bin && ln -s {v} .local/bin && echo REPLACED",
        v = victim.path().display()
    );
    let confined = confine(&sandbox, ws, &script, false);
    let mut command = confined.command;
    let out = command.output().await.unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("REPLACED") && !out.contains("BREACH"), "{out}");
    let undone = confined.lease.sweep();
    assert!(
        undone
            .join("\n")
            .contains(".local/bin: the command replaced"),
        "{undone:?}"
    );
    assert_eq!(std::fs::read_link(ws.join(".local/bin")).unwrap(), target);

    std::fs::rename(ws.join(".local"), ws.join(".local.old")).unwrap();
    symlink(victim.path(), ws.join(".local")).unwrap();
    let undone = confined.lease.sweep();
    assert!(victim.path().join("bin").is_dir() && !victim.path().join("bin").is_symlink());
    assert_eq!(
        std::fs::read_dir(victim.path()).unwrap().count(),
        1,
        "nothing renamed or planted in the victim"
    );
    assert!(
        undone
            .join("\n")
            .contains("the directory holding this start-up link was moved"),
        "{undone:?}"
    );
}

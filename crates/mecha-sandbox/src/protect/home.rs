//! The user's start-up files: what a login shell, git, ssh, a desktop
//! session or a toolchain runs or trusts from the home directory. When the
//! workspace is the home directory (or a `writable` line brings part of it
//! in), a confined command could otherwise add a line to `~/.bashrc` that
//! the user's next terminal runs unconfined.
//!
//! The same holds for every directory on mecha's PATH, which the user's
//! shells share: an `ls` put in one that a writable root holds would run
//! on the host at the next `ls`.
//!
//! A missing one gets a placeholder while a job runs, because creating it
//! is the attack; the placeholders of the bash login files carry on to the
//! file bash would have read next, so a login during a job behaves as if
//! they were absent.

use std::ffi::OsStr;
use std::path::Path;

use super::{Kind, Target};

/// bash reads the first of these that exists; each placeholder reads the
/// next in line, as absence would.
const BASH_PROFILE: &[u8] =
    b"# mecha placeholder (removed when the command ends): reads what bash would read next\n\
      if [ -f \"$HOME/.bash_login\" ]; then . \"$HOME/.bash_login\"; \
      elif [ -f \"$HOME/.profile\" ]; then . \"$HOME/.profile\"; fi\n";
const BASH_LOGIN: &[u8] =
    b"# mecha placeholder (removed when the command ends): reads what bash would read next\n\
      if [ -f \"$HOME/.profile\" ]; then . \"$HOME/.profile\"; fi\n";

/// Relative to the home directory. Listed in the README.
pub(crate) const STARTUP_FILES: &[(&str, Kind)] = &[
    (".profile", Kind::File(b"")),
    (".bash_profile", Kind::File(BASH_PROFILE)),
    (".bash_login", Kind::File(BASH_LOGIN)),
    (".bashrc", Kind::File(b"")),
    (".bash_aliases", Kind::File(b"")),
    (".bash_logout", Kind::File(b"")),
    (".bashrc.d", Kind::Dir),
    (".zshenv", Kind::File(b"")),
    (".zprofile", Kind::File(b"")),
    (".zshrc", Kind::File(b"")),
    (".zlogin", Kind::File(b"")),
    (".zlogout", Kind::File(b"")),
    (".config/fish", Kind::Dir),
    (".inputrc", Kind::File(b"")),
    (".pam_environment", Kind::File(b"")),
    (".xprofile", Kind::File(b"")),
    (".xsessionrc", Kind::File(b"")),
    (".xinitrc", Kind::File(b"")),
    (".tmux.conf", Kind::File(b"")),
    (".vimrc", Kind::File(b"")),
    (".ssh", Kind::Dir),
    (".gitconfig", Kind::File(b"")),
    (".config/git", Kind::Dir),
    (".npmrc", Kind::File(b"")),
    (".cargo/env", Kind::File(b"")),
    (".cargo/config.toml", Kind::File(b"")),
    (".cargo/config", Kind::File(b"")),
    (".cargo/bin", Kind::Dir),
    ("bin", Kind::Dir),
    (".local/bin", Kind::Dir),
    (".config/autostart", Kind::Dir),
    (".config/systemd", Kind::Dir),
    (".config/environment.d", Kind::Dir),
    (".config/nvim", Kind::Dir),
    (".vim", Kind::Dir),
    (".config/tmux", Kind::Dir),
    (".bash_completion", Kind::File(b"")),
    (".bash_completion.d", Kind::Dir),
    (".local/share/bash-completion", Kind::Dir),
    (".zcompdump", Kind::File(b"")),
    (".config/starship.toml", Kind::File(b"")),
    // Python runs every `.pth` in the user site-packages at start-up.
    (".local/lib", Kind::Dir),
    (".emacs", Kind::File(b"")),
    (".emacs.d", Kind::Dir),
    // Credential helpers these tools run: `credential_process`, exec
    // plugins, CLI plugins, the agent's programs.
    (".aws", Kind::Dir),
    (".kube", Kind::Dir),
    (".docker", Kind::Dir),
    (".gnupg", Kind::Dir),
    (".rustup", Kind::Dir),
    // Sourced by the shell files above (what they source is read and
    // protected as well, see sourced.rs; these are here for the guarded
    // `[ -f ~/.fzf.bash ] && source ~/.fzf.bash` of a file not yet read).
    (".nvm/nvm.sh", Kind::File(b"")),
    (".fzf.bash", Kind::File(b"")),
    (".fzf.zsh", Kind::File(b"")),
    (".oh-my-zsh", Kind::Dir),
    (".p10k.zsh", Kind::File(b"")),
    // Other shells and sessions.
    (".cshrc", Kind::File(b"")),
    (".tcshrc", Kind::File(b"")),
    (".login", Kind::File(b"")),
    (".logout", Kind::File(b"")),
    (".kshrc", Kind::File(b"")),
    (".mkshrc", Kind::File(b"")),
    (".xsession", Kind::File(b"")),
    (".local/share/applications", Kind::Dir),
    (".config/i3", Kind::Dir),
    (".config/sway", Kind::Dir),
    (".config/hypr", Kind::Dir),
    (".wezterm.lua", Kind::File(b"")),
    (".config/wezterm", Kind::Dir),
    // Tools that run code from their start-up files.
    (".gdbinit", Kind::File(b"")),
    (".config/gdb", Kind::Dir),
    (".lldbinit", Kind::File(b"")),
    (".hgrc", Kind::File(b"")),
    (".gradle/init.d", Kind::Dir),
    (".gradle/init.gradle", Kind::File(b"")),
    (".ipython/profile_default/startup", Kind::Dir),
    (".config/direnv", Kind::Dir),
    (".Rprofile", Kind::File(b"")),
    (".irbrc", Kind::File(b"")),
    (".pryrc", Kind::File(b"")),
];

/// The start-up files of `home`, as protection targets. Only those inside
/// a root the program can write are mounted (see [`super::plan`]); a
/// missing one is masked at its first missing component (no `~/.cargo`
/// means `~/.cargo` itself is masked while the job runs).
pub(crate) fn targets(home: &Path) -> Vec<Target> {
    STARTUP_FILES
        .iter()
        .map(|(rel, kind)| Target::followed(home.join(rel), *kind))
        .collect()
}

/// The absolute directories on `path`, as protection targets, followed
/// like the start-up files. A relative or empty entry is refused when the
/// sandbox starts ([`crate::SandboxError::RelativeOnPath`]).
pub(crate) fn search_path_targets(path: &OsStr) -> Vec<Target> {
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(Target::on_path)
        .collect()
}

/// The first entry of `path` that is not absolute (an empty one is the
/// current directory), shown as written.
pub(crate) fn relative_entry(path: &OsStr) -> Option<String> {
    std::env::split_paths(path)
        .find(|dir| !dir.is_absolute())
        .map(|dir| dir.display().to_string())
}

//! What the user's shell start-up files source. Keeping `~/.bashrc`
//! read-only protects nothing when the line in it that matters is
//! `. "$NVM_DIR/nvm.sh"` or `[ -f ~/.fzf.bash ] && source ~/.fzf.bash`:
//! the code is in the file it reads, which an installer put under the home
//! directory. So the shell start-up files are read for `.` and `source`
//! commands, and every file they name under the home directory is
//! protected too, followed a few levels down (what those files source in
//! turn). A name built from a variable is understood when the variable was
//! set in the same file from the home directory (`export
//! NVM_DIR="$HOME/.nvm"`); anything else is left alone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{Kind, Target};

/// The start-up files shells and sessions read as shell code.
const SHELL_FILES: &[&str] = &[
    ".profile",
    ".bash_profile",
    ".bash_login",
    ".bashrc",
    ".bash_aliases",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".kshrc",
    ".mkshrc",
    ".xprofile",
    ".xsessionrc",
    ".xsession",
    ".xinitrc",
];

/// How far sourcing is followed: a start-up file, what it sources, and
/// what that sources.
const DEPTH: usize = 3;

/// The most of one file that is read.
const LIMIT: u64 = 256 * 1024;

/// Every file under `home` that a shell start-up file sources, directly or
/// through what it sources, as protection targets (a missing one is masked
/// while a job runs: creating it is the attack); a glob's directory whole.
pub(crate) fn targets(home: &Path) -> Vec<Target> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut pending: Vec<(PathBuf, usize)> =
        SHELL_FILES.iter().map(|f| (home.join(f), 0)).collect();
    let mut targets = Vec::new();
    while let Some((file, depth)) = pending.pop() {
        let Some(text) = read(&file) else {
            continue;
        };
        for (named, kind) in sourced(&text, home) {
            if seen.contains(&named) {
                continue;
            }
            seen.push(named.clone());
            if depth + 1 < DEPTH && kind != Kind::Dir {
                pending.push((named.clone(), depth + 1));
            }
            targets.push(Target::followed(named, kind));
        }
    }
    targets
}

fn read(file: &Path) -> Option<String> {
    let bytes = super::read_regular(file, LIMIT).ok().flatten()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The files under `home` that the shell code `text` sources, and the
/// directories a sourced glob reads every file of.
fn sourced(text: &str, home: &Path) -> Vec<(PathBuf, Kind)> {
    let mut vars: HashMap<String, Vec<PathBuf>> = HashMap::new();
    let mut named = Vec::new();
    for line in text.lines() {
        for command in commands(line) {
            let mut words = command.split_whitespace();
            let Some(first) = words.next() else {
                continue;
            };
            // `for file in ~/.{path,extra} ~/.bash/*.sh`: the loop's words
            // are what `$file` can be.
            if first == "for" {
                if let (Some(var), Some("in")) = (words.next(), words.next()) {
                    let values = words.flat_map(|w| expand(w, home, &vars)).collect();
                    vars.insert(var.to_owned(), values);
                }
                continue;
            }
            if let Some((var, value)) = assignment(first, command) {
                vars.insert(var.to_owned(), expand(value, home, &vars));
                continue;
            }
            if !matches!(first, "." | "\\." | "source") {
                continue;
            }
            let word = words.find(|w| *w != "--");
            for path in word.map(|w| expand(w, home, &vars)).unwrap_or_default() {
                if path.starts_with(home) && path != home {
                    named.push(globbed(path));
                }
            }
        }
    }
    named
}

/// A path with a glob in it as the directory holding the glob, whole;
/// any other as itself.
fn globbed(path: PathBuf) -> (PathBuf, Kind) {
    let is_glob = |part: &std::ffi::OsStr| part.to_string_lossy().contains(['*', '?', '[']);
    match path.components().position(|c| is_glob(c.as_os_str())) {
        Some(at) => (path.components().take(at).collect(), Kind::Dir),
        None => (path, Kind::File(b"")),
    }
}

/// The simple commands of one line: split at `&&`, `||`, `;` and `|`,
/// with a comment and the words that only lead to the command (`then`,
/// `do`, `else`, `if`, `elif`, `while`, `until`, `!`, `{`, `(`, `builtin`,
/// `command`) taken off.
fn commands(line: &str) -> Vec<&str> {
    let line = if line.trim_start().starts_with('#') {
        ""
    } else {
        line
    };
    line.split(['&', '|', ';'])
        .map(|part| {
            let mut part = part.trim();
            loop {
                let stripped = [
                    "then ", "do ", "else ", "if ", "elif ", "while ", "until ", "! ", "{ ", "( ",
                    "(", "builtin ", "command ",
                ]
                .iter()
                .find_map(|k| part.strip_prefix(k));
                match stripped {
                    Some(rest) => part = rest.trim_start(),
                    None => break part,
                }
            }
        })
        .filter(|part| !part.is_empty())
        .collect()
}

/// `NAME=value` or `export NAME=value`: the name and the value as written.
fn assignment<'a>(first: &'a str, command: &'a str) -> Option<(&'a str, &'a str)> {
    let word = match first {
        "export" | "local" | "typeset" | "declare" => command.split_whitespace().nth(1)?,
        _ => first,
    };
    let (name, value) = word.split_once('=')?;
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    valid.then_some((name, value))
}

/// A word as the paths it can be, where it starts from the home directory
/// (`~/`, `$HOME`, `${HOME}`, a variable set from those, a loop's
/// variable) or is relative (a login shell starts in the home directory);
/// quotes taken off, `{a,b}` expanded. Nothing for what depends on
/// anything else.
fn expand(word: &str, home: &Path, vars: &HashMap<String, Vec<PathBuf>>) -> Vec<PathBuf> {
    let word: String = word.chars().filter(|c| *c != '"' && *c != '\'').collect();
    braces(&word)
        .iter()
        .flat_map(|word| expand_one(word, home, vars))
        .collect()
}

fn expand_one(word: &str, home: &Path, vars: &HashMap<String, Vec<PathBuf>>) -> Vec<PathBuf> {
    if let Some(rest) = word.strip_prefix("~/") {
        return vec![home.join(rest)];
    }
    if let Some(rest) = word.strip_prefix('$') {
        let Some((name, rest)) = (match rest.strip_prefix('{') {
            Some(braced) => braced.split_once('}'),
            None => Some(rest.split_at(rest.find('/').unwrap_or(rest.len()))),
        }) else {
            return Vec::new();
        };
        let bases = match name {
            "HOME" => vec![home.to_path_buf()],
            name => vars.get(name).cloned().unwrap_or_default(),
        };
        let rest = rest.trim_start_matches('/');
        return bases
            .into_iter()
            .map(|base| {
                if rest.is_empty() {
                    base
                } else {
                    base.join(rest)
                }
            })
            .collect();
    }
    if word.starts_with('/') {
        return vec![PathBuf::from(word)];
    }
    if word.is_empty() || word.contains(['$', '`']) {
        return Vec::new();
    }
    vec![home.join(word)]
}

/// `a{b,c}d` as `abd`, `acd` (one level, as startup files write it).
fn braces(word: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (word.find('{'), word.find('}')) else {
        return vec![word.to_owned()];
    };
    if close < open || word[..open].ends_with('$') {
        return vec![word.to_owned()];
    }
    word[open + 1..close]
        .split(',')
        .map(|part| format!("{}{part}{}", &word[..open], &word[close + 1..]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_installers_write_is_understood() {
        let home = Path::new("/h");
        let text = "# comment: . ~/not-this\n\
                    export NVM_DIR=\"$HOME/.nvm\"\n\
                    [ -s \"$NVM_DIR/nvm.sh\" ] && \\. \"$NVM_DIR/nvm.sh\"  # loads nvm\n\
                    [ -f ~/.fzf.bash ] && source ~/.fzf.bash\n\
                    if [ -f \"${HOME}/.cargo/env\" ]; then . \"${HOME}/.cargo/env\"; fi\n\
                    source .aliases\n\
                    . /etc/bash_completion\n\
                    source \"$(brew --prefix)/x.sh\"\n\
                    . $UNSET/x\n";
        let files: Vec<PathBuf> = sourced(text, home).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            files,
            [
                "/h/.nvm/nvm.sh",
                "/h/.fzf.bash",
                "/h/.cargo/env",
                "/h/.aliases"
            ]
            .map(PathBuf::from)
        );
    }

    /// The forms dotfiles repositories copy: a loop over a brace list and
    /// a glob, `builtin source`, `source --`, `if .`.
    #[test]
    fn loops_and_prefixes_are_understood() {
        let home = Path::new("/h");
        let text = "for file in ~/.{path,extra}; do\n\
                    \t[ -r \"$file\" ] && [ -f \"$file\" ] && source \"$file\";\n\
                    done;\n\
                    for f in ~/.bash/*.sh; do . \"$f\"; done\n\
                    builtin source ~/.a\n\
                    source -- ~/.b\n\
                    if . ~/.c; then :; fi\n";
        assert_eq!(
            sourced(text, home),
            [
                (PathBuf::from("/h/.path"), Kind::File(b"")),
                (PathBuf::from("/h/.extra"), Kind::File(b"")),
                (PathBuf::from("/h/.bash"), Kind::Dir),
                (PathBuf::from("/h/.a"), Kind::File(b"")),
                (PathBuf::from("/h/.b"), Kind::File(b"")),
                (PathBuf::from("/h/.c"), Kind::File(b"")),
            ]
        );
    }
}

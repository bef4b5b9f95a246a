//! "command not found" inside, for a program that exists outside: the
//! `[sandbox] readable` line that would bring it in. Toolchains under HOME
//! (cargo and rustup, nvm, pyenv) are the usual case.

use std::ffi::OsStr;
use std::path::{Component, Path};

/// Directories a toolchain needs besides the one its programs are in,
/// keyed by that one: cargo's proxies run toolchains kept by rustup.
const COMPANIONS: [(&str, &str); 1] = [(".cargo", ".rustup")];

/// One sentence for the first program `output` says was not found that
/// exists on `path` (mecha's PATH) where `shown` says the sandbox does not
/// show it.
pub(crate) fn missing_program_hint(
    output: &str,
    path: &OsStr,
    home: Option<&Path>,
    shown: impl Fn(&Path) -> bool,
) -> Option<String> {
    output.lines().filter_map(not_found).find_map(|name| {
        let found = std::env::split_paths(path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())?;
        // A link on a shown directory may point into one that is not.
        let real = std::fs::canonicalize(&found).unwrap_or_else(|_| found.clone());
        let mut lines: Vec<String> = Vec::new();
        for p in [&found, &real] {
            if !shown(p) {
                for line in readable_lines(p, home) {
                    if !lines.contains(&line) {
                        lines.push(line);
                    }
                }
            }
        }
        if lines.is_empty() {
            return None;
        }
        let quoted = lines
            .iter()
            .map(|l| format!("\"{l}\""))
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!(
            "`{name}` is at {} outside the sandbox, which does not show it; add `readable = \
             [{quoted}]` to [sandbox] in your config to bring it in.",
            found.display()
        ))
    })
}

/// The program bash (or dash) could not find, from one line of output:
/// `bash: line 1: NAME: command not found`, `sh: 1: NAME: not found`.
fn not_found(line: &str) -> Option<&str> {
    let rest = line.strip_suffix(": command not found").or_else(|| {
        line.strip_suffix(": not found")
            .filter(|_| line.contains("sh: "))
    })?;
    let name = rest.rsplit(": ").next()?.trim();
    let plain = !name.is_empty() && !name.contains(['/', ' ']);
    plain.then_some(name)
}

/// The top-level directory under HOME holding `program` (and its
/// companions), or the program's own directory elsewhere.
fn readable_lines(program: &Path, home: Option<&Path>) -> Vec<String> {
    let top = home.and_then(|home| {
        let rel = program.strip_prefix(home).ok()?;
        match rel.components().next()? {
            Component::Normal(top) if rel.components().count() > 1 => top.to_str(),
            _ => None,
        }
    });
    match top {
        Some(top) => {
            let mut lines = vec![format!("~/{top}")];
            for (dir, companion) in COMPANIONS {
                if dir == top {
                    lines.push(format!("~/{companion}"));
                }
            }
            lines
        }
        None => program
            .parent()
            .map(|dir| vec![dir.display().to_string()])
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A fake HOME with `rel` in it, and a PATH naming its directory.
    fn home_with(rel: &str) -> (tempfile::TempDir, std::ffi::OsString) {
        let home = tempfile::tempdir().unwrap();
        let program = home.path().join(rel);
        std::fs::create_dir_all(program.parent().unwrap()).unwrap();
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths(["/usr/bin".into(), program.parent().unwrap().to_owned()])
            .unwrap();
        (home, path)
    }

    fn hint(output: &str, path: &OsStr, home: &Path) -> Option<String> {
        missing_program_hint(output, path, Some(home), |p| p.starts_with("/usr"))
    }

    #[test]
    fn cargo_needs_rustup_too() {
        let (home, path) = home_with(".cargo/bin/cargo");
        let out = "bash: line 1: cargo: command not found\n";
        let hint = hint(out, &path, home.path()).unwrap();
        assert!(
            hint.contains(r#"readable = ["~/.cargo", "~/.rustup"]"#),
            "{hint}"
        );
        assert!(hint.starts_with("`cargo` is at "), "{hint}");
    }

    #[test]
    fn nvm_and_pyenv_get_their_top_level_directory() {
        for (rel, line) in [
            (
                ".nvm/versions/node/v20.0.0/bin/mecha-test-node",
                r#"["~/.nvm"]"#,
            ),
            (".pyenv/shims/mecha-test-python", r#"["~/.pyenv"]"#),
        ] {
            let (home, path) = home_with(rel);
            let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
            let out = format!("bash: {name}: command not found");
            let hint = hint(&out, &path, home.path()).unwrap();
            assert!(hint.contains(line), "{hint}");
        }
    }

    #[test]
    fn nothing_for_a_program_that_is_shown_or_nowhere() {
        let (home, path) = home_with(".cargo/bin/cargo");
        assert_eq!(
            hint("bash: line 1: ls: command not found", &path, home.path()),
            None
        );
        assert_eq!(
            hint("bash: nosuchprog: command not found", &path, home.path()),
            None
        );
        assert_eq!(hint("cargo: build failed", &path, home.path()), None);
        let shown_everywhere = missing_program_hint(
            "bash: line 1: cargo: command not found",
            &path,
            Some(home.path()),
            |_| true,
        );
        assert_eq!(shown_everywhere, None);
    }

    #[test]
    fn dash_says_it_differently() {
        assert_eq!(not_found("sh: 1: cargo: not found"), Some("cargo"));
        assert_eq!(
            not_found("bash: line 3: cargo: command not found"),
            Some("cargo")
        );
        assert_eq!(not_found("error: not found"), None);
        assert_eq!(not_found("bash: ./x: command not found"), None);
    }
}

//! The `[sandbox] readable` line that would show a host path inside: for
//! a program a confined command could not find ("command not found"), and
//! for a sandboxed MCP server's program or a path among its arguments.
//! Toolchains under HOME (cargo and rustup, nvm, pyenv) are the usual case.

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
        let readable = readable_to_show(&found, home, &shown)?;
        Some(format!(
            "`{name}` is at {} outside the sandbox, which does not show it; add `readable = \
             [{readable}]` to [sandbox] in your config to bring it in.",
            found.display()
        ))
    })
}

/// The value of the `readable` line that would show `path` inside, as
/// `"~/.cargo", "~/.rustup"`, when `shown` says the sandbox shows neither
/// it nor what it links to; `None` when both are shown.
pub(crate) fn readable_to_show(
    path: &Path,
    home: Option<&Path>,
    shown: impl Fn(&Path) -> bool,
) -> Option<String> {
    // A link on a shown directory may point into one that is not.
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut lines: Vec<String> = Vec::new();
    for p in [path, &real] {
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
    let quoted: Vec<String> = lines.iter().map(|l| format!("\"{l}\"")).collect();
    Some(quoted.join(", "))
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

/// The top-level directory under HOME holding `path` (and its
/// companions), or elsewhere the directory itself, or a file's directory.
fn readable_lines(path: &Path, home: Option<&Path>) -> Vec<String> {
    let top = home.and_then(|home| {
        let rel = path.strip_prefix(home).ok()?;
        match rel.components().next()? {
            Component::Normal(top) if rel.components().count() > 1 || path.is_dir() => top.to_str(),
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
        None if path.is_dir() => vec![path.display().to_string()],
        None => path
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
    fn a_directory_is_shown_itself_and_a_file_by_its_directory() {
        let (home, _) = home_with(".tools/bin/prog");
        let hidden = |_: &Path| false;
        let h = Some(home.path());
        let tools = home.path().join(".tools");
        assert_eq!(
            readable_to_show(&tools, h, hidden).as_deref(),
            Some(r#""~/.tools""#)
        );
        let elsewhere = tempfile::tempdir().unwrap();
        let script = elsewhere.path().join("server.js");
        std::fs::write(&script, "").unwrap();
        let dir = format!("\"{}\"", elsewhere.path().display());
        assert_eq!(readable_to_show(&script, h, hidden), Some(dir.clone()));
        assert_eq!(readable_to_show(elsewhere.path(), h, hidden), Some(dir));
        assert_eq!(readable_to_show(&script, h, |_| true), None);
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

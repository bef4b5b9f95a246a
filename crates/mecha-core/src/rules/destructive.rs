//! The commands an "always" never stands for: those whose executable
//! removes, overwrites or rewrites history. An "always" to `rm -rf build`
//! would be an allow rule for `rm -rf`, and every later `rm -rf` the model
//! writes would run unasked; so would `find . -delete` under an "always" to
//! `find .`. Such a command is asked every time.
//!
//! These are the per-command tests; `wrappers.rs` finds the commands a
//! line runs, through `sudo`, `env`, `xargs`, `find -exec`, `bash -c` and
//! git's global options, as it does for a forbid rule. Like a forbid rule,
//! a test fails toward "destructive": a word the shell expands could be the
//! flag that makes it so, and so could the arguments `xargs` appends.

use super::options::Arg;

/// Why a command mecha cannot see is asked every time.
pub(super) const UNSEEN: &str = "it may run a command mecha cannot see (one named by a word the \
                                 shell expands, or a git alias), so it is asked every time";

/// What the command `name` (a basename) with `args` destroys, if it does.
/// `open_tail`: more arguments may be appended (`xargs`).
pub(super) fn command(name: &str, args: &[Arg], open_tail: bool) -> Option<String> {
    if let Some(sub) = name.strip_prefix("git-") {
        // `git-clean` in git's libexec directory is `git clean`.
        let mut git_args = vec![Arg {
            text: sub.to_owned(),
            wild: false,
        }];
        git_args.extend(args.iter().cloned());
        return git(&git_args, open_tail);
    }
    let what = match name {
        "rm" | "unlink" => "removes files",
        "rmdir" => "removes directories",
        "shred" => "overwrites files",
        "dd" => "overwrites what it writes to",
        "truncate" => "cuts files short",
        _ if name.starts_with("mkfs") => "overwrites a file system",
        "find" if flag(args, open_tail, None, &["-delete"]) => {
            return Some(asked("`find -delete` removes what it finds"));
        }
        "chmod" | "chown" | "chgrp" if flag(args, open_tail, Some('R'), &["--recursive"]) => {
            return Some(asked(&format!("`{name} -R` changes a whole tree")));
        }
        _ => return None,
    };
    Some(asked(&format!("`{name}` {what}")))
}

/// What `git` with `args` (its global options skipped) destroys, if it
/// does.
pub(super) fn git(args: &[Arg], open_tail: bool) -> Option<String> {
    let (sub, rest) = args.split_first()?;
    if sub.wild {
        return Some(UNSEEN.to_owned());
    }
    let what = match sub.text.as_str() {
        "clean" => "`git clean` removes untracked files",
        "reset" if flag(rest, open_tail, None, &["--hard"]) => {
            "`git reset --hard` discards uncommitted changes"
        }
        "push" if force_push(rest, open_tail) => "`git push --force` rewrites the remote's history",
        _ => return None,
    };
    Some(asked(what))
}

fn asked(what: &str) -> String {
    format!("{what}, so it is asked every time")
}

/// Whether `args` hold the option: `short` alone or in a cluster (`-Rv`),
/// or one of `long` (also as `--name=value`). A word the shell expands, or
/// arguments still to come, may be it.
fn flag(args: &[Arg], open_tail: bool, short: Option<char>, long: &[&str]) -> bool {
    open_tail
        || args.iter().any(|a| {
            let t = a.text.as_str();
            // Bash leaves a bare `{}` as it is (`find -exec … {}`).
            (a.wild && t != "{}")
                || long
                    .iter()
                    .any(|l| t == *l || t.strip_prefix(l).is_some_and(|v| v.starts_with('=')))
                || short.is_some_and(|s| {
                    t.strip_prefix('-')
                        .is_some_and(|cluster| !cluster.starts_with('-') && cluster.contains(s))
                })
        })
}

/// `git push -f`, `--force`, `--force-with-lease`, `--mirror` (which
/// forces), or a `+refspec`.
fn force_push(args: &[Arg], open_tail: bool) -> bool {
    flag(
        args,
        open_tail,
        Some('f'),
        &["--force", "--force-with-lease", "--mirror"],
    ) || args.iter().any(|a| a.text.starts_with('+'))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::StandingAnswer;

    fn offer(command: &str) -> Result<String, String> {
        StandingAnswer::for_call("shell", &json!({ "command": command })).map(|a| a.describe())
    }

    #[test]
    fn no_always_for_what_destroys_however_it_is_spelled() {
        for (command, named) in [
            ("rm -rf build", "`rm` removes files"),
            ("/bin/rm x", "`rm`"),
            ("sudo rm -rf /tmp/x", "`rm`"),
            ("sudo -u root rm x", "`rm`"),
            ("env rm x", "`rm`"),
            ("env -i A=1 rm x", "`rm`"),
            ("xargs rm", "`rm`"),
            ("xargs -0 rm -f", "`rm`"),
            ("command rm x", "`rm`"),
            ("timeout 5 rm x", "`rm`"),
            ("bash -c 'rm -rf x'", "`rm`"),
            ("git status && rm x", "`rm`"),
            ("unlink f", "`unlink`"),
            ("ls; rmdir d", "`rmdir`"),
            ("shred -u f", "`shred`"),
            ("dd if=/dev/zero of=f", "`dd`"),
            ("mkfs.ext4 /dev/sdz1", "overwrites a file system"),
            ("mkfs -t ext4 x", "overwrites a file system"),
            ("truncate -s 0 f", "`truncate`"),
            ("find . -delete", "`find -delete`"),
            ("find . -name '*.o' -delete", "`find -delete`"),
            ("find . -exec rm {} +", "`rm`"),
            ("find . -execdir rm -f {} \\;", "`rm`"),
            ("git clean -fd", "`git clean`"),
            ("git -C dir clean -fd", "`git clean`"),
            ("/usr/bin/git clean -n", "`git clean`"),
            ("git-clean -fd", "`git clean`"),
            ("git reset --hard", "`git reset --hard`"),
            ("git reset --hard HEAD~1", "`git reset --hard`"),
            ("git push -f", "`git push --force`"),
            ("git push origin main --force", "`git push --force`"),
            ("git push --force-with-lease", "`git push --force`"),
            ("git push --force-with-lease=main:abc", "`git push --force`"),
            ("git push -uf origin main", "`git push --force`"),
            ("git push origin +main", "`git push --force`"),
            ("git push --mirror", "`git push --force`"),
            ("git -c core.pager='rm -rf x' log", "`rm`"),
            ("chmod -R 777 .", "`chmod -R`"),
            ("chmod --recursive u+w .", "`chmod -R`"),
            ("chmod u+x -R dir", "`chmod -R`"),
            ("chown -R me .", "`chown -R`"),
            ("chgrp -vR g .", "`chgrp -R`"),
            ("xargs chmod 644", "`chmod -R`"),
            ("git -c alias.x='!rm -rf y' x", "cannot see"),
        ] {
            match offer(command) {
                Ok(answer) => panic!("{command}: always offered for {answer}"),
                Err(why) => {
                    assert!(why.contains(named), "{command}: {why}");
                    assert!(
                        why.contains("cannot see") || why.ends_with("asked every time"),
                        "{command}: {why}"
                    );
                }
            }
        }
    }

    #[test]
    fn what_only_looks_like_it_keeps_its_always() {
        for command in [
            "git status",
            "git push origin main",
            "git reset HEAD a.txt",
            "chmod +x run.sh",
            "chmod 644 f",
            "find . -name x",
            "grep -R needle .",
            "ls -R",
            "echo rm",
            "cargo test",
        ] {
            assert!(offer(command).is_ok(), "{command}: {:?}", offer(command));
        }
    }

    #[test]
    fn a_shorter_prefix_never_covers_the_destructive_form() {
        for command in [
            "find . -delete",
            "git push origin --force",
            "git reset HEAD --hard",
            "chmod u+x -R /",
            "timeout 5 rm -rf /",
        ] {
            assert!(
                StandingAnswer::never_covers(&json!({ "command": command })).is_some(),
                "{command}"
            );
        }
        assert_eq!(
            StandingAnswer::never_covers(&json!({ "command": "git push origin main" })),
            None
        );
        assert_eq!(StandingAnswer::never_covers(&json!({"path": "a"})), None);
    }
}

//! How a forbid or prompt rule sees a simple command: by the executable's
//! basename (`/usr/bin/git` is `git`), past git's global options
//! (`git -C . push` is `git push`), through the wrappers that run their
//! arguments as a command (`sudo`, `timeout`, `xargs`, `find -exec`, `eval`,
//! `bash -c`, …) and into the strings that hold commands (`alias`, `trap`,
//! `VAR=…` values, `git -c key=…`), and matching whatever it cannot see: a
//! word bash expands (`$cmd push`, `git $(echo push)`) could be anything,
//! so it matches.
//!
//! Allow rules never come here; they match exactly (see `allows`).

use super::destructive;
use super::options::{
    Arg, args, basename, command_position, git_globals, is_assignment, xargs_options,
};
use crate::shell_words::{SimpleCommand, split_commands};

/// How many commands one check may look at before giving up and firing:
/// wrappers are read at every later word and `eval`s are re-split, and a
/// crafted line must not make that exponential.
const BUDGET: usize = 4096;

/// Wrappers whose command starts at a later word. Their options are only
/// roughly known, so a literal match is looked for at every later word; a
/// word bash expands fires only where the command most likely starts.
#[rustfmt::skip]
const SKIPPING: [&str; 27] = [
    "env", "command", "exec", "builtin", "nice", "nohup", "time", "timeout", "sudo", "doas",
    "setsid", "stdbuf", "ionice", "chrt", "taskset", "flock", "unbuffer", "strace", "ltrace",
    "chroot", "nsenter", "unshare", "busybox", "firejail", "torsocks", "proxychains4", "faketime",
];

/// Shells, whose `-c` argument is a script of its own.
const SHELLS: [&str; 8] = ["bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash"];

/// Whether a forbid or prompt rule for `prefix` fires on this part.
pub(super) fn touches(part: &SimpleCommand, prefix: &[String]) -> bool {
    let mut matcher = Matcher {
        target: Target::Prefix(prefix),
        budget: BUDGET,
        found: None,
    };
    matcher.runs(&args(part), false, true)
}

/// What this part runs, seen through the same wrappers, that removes,
/// overwrites or rewrites history (see [`destructive`]), described.
pub(super) fn destroys(part: &SimpleCommand) -> Option<String> {
    let mut matcher = Matcher {
        target: Target::Destructive,
        budget: BUDGET,
        found: None,
    };
    matcher.runs(&args(part), false, true).then(|| {
        matcher
            .found
            .unwrap_or_else(|| destructive::UNSEEN.to_owned())
    })
}

/// What a command run through the wrappers is compared with.
#[derive(Clone, Copy)]
enum Target<'a> {
    /// A rule's executable and leading arguments.
    Prefix(&'a [String]),
    /// Any command of [`destructive`]'s list.
    Destructive,
}

struct Matcher<'a> {
    target: Target<'a>,
    budget: usize,
    /// What the destructive target found, for the person asked.
    found: Option<String>,
}

impl Matcher<'_> {
    /// Whether `words`, run as a command, runs the prefix. `open_tail`: more
    /// arguments may be appended (`xargs`). `scan`: look for the command at
    /// every later word of a wrapper (off when a caller already does).
    fn runs(&mut self, words: &[Arg], open_tail: bool, scan: bool) -> bool {
        let Some(budget) = self.budget.checked_sub(1) else {
            return true;
        };
        self.budget = budget;
        let start = words
            .iter()
            .position(|w| !is_assignment(&w.text))
            .unwrap_or(words.len());
        // A variable's value may be a command run later (`GIT_SSH_COMMAND`,
        // `GIT_EDITOR`, `PAGER`).
        if words[..start]
            .iter()
            .any(|w| !w.wild && w.text.split_once('=').is_some_and(|(_, v)| self.script(v)))
        {
            return true;
        }
        let words = &words[start..];
        let Some((exec, rest)) = words.split_first() else {
            return false;
        };
        if exec.wild || self.compare(words, open_tail) {
            return true;
        }
        match basename(&exec.text) {
            "eval" => self.eval(rest, open_tail),
            // `watch` joins its arguments into a script for `sh -c`.
            "watch" => (0..rest.len()).any(|i| self.eval(&rest[i..], open_tail)),
            "su" | "runuser" => self.su(rest),
            "xargs" => self.xargs(rest),
            "find" => self.find(rest),
            // An alias's value and a trap's first argument are scripts.
            "alias" => rest
                .iter()
                .any(|w| w.wild || w.text.split_once('=').is_some_and(|(_, v)| self.script(v))),
            "trap" => rest
                .iter()
                .find(|w| !w.text.starts_with('-'))
                .is_some_and(|w| w.wild || self.script(&w.text)),
            name if SHELLS.contains(&name) => self.shell(rest, open_tail),
            name if SKIPPING.contains(&name) => {
                (name == "env" && self.env_split(rest, open_tail))
                    || (scan && self.any_suffix(name, rest, open_tail))
            }
            _ => false,
        }
    }

    fn compare(&mut self, words: &[Arg], open_tail: bool) -> bool {
        match self.target {
            Target::Prefix(prefix) => self.compare_prefix(prefix, words, open_tail),
            Target::Destructive => self.compare_destructive(words, open_tail),
        }
    }

    /// The part runs a destructive command, by basename, or past git's
    /// global options (whose `-c` values may name a command of their own).
    fn compare_destructive(&mut self, words: &[Arg], open_tail: bool) -> bool {
        let Some((exec, args)) = words.split_first() else {
            return false;
        };
        let name = basename(&exec.text);
        let found = if name == "git" {
            let globals = git_globals(args);
            if globals.any || globals.values.iter().any(|v| self.script(v)) {
                return true;
            }
            destructive::git(&args[globals.subcommand..], open_tail)
        } else {
            destructive::command(name, args, open_tail)
        };
        let hit = found.is_some();
        if hit {
            self.found = found;
        }
        hit
    }

    /// The part runs the prefix as written, by basename, or past git's
    /// global options.
    fn compare_prefix(&mut self, prefix: &[String], words: &[Arg], open_tail: bool) -> bool {
        let (Some((head, want)), Some((exec, args))) = (prefix.split_first(), words.split_first())
        else {
            return false;
        };
        let (name, head) = (basename(&exec.text), basename(head));
        let libexec: Vec<Arg>;
        let args = if name == head {
            args
        } else if let Some(sub) = name.strip_prefix("git-").filter(|_| head == "git") {
            // `git-push` in git's libexec directory is `git push`.
            libexec = std::iter::once(Arg {
                text: sub.to_owned(),
                wild: false,
            })
            .chain(args.iter().cloned())
            .collect();
            &libexec
        } else {
            return false;
        };
        if args_match(args, want, open_tail) {
            return true;
        }
        if head != "git" {
            return false;
        }
        let globals = git_globals(args);
        globals.any
            || globals.values.iter().any(|v| self.script(v))
            || args_match(&args[globals.subcommand..], want, open_tail)
    }

    /// A wrapper's command: tried at every later word, with the wrapper's
    /// options skipped to find where a command most likely starts.
    fn any_suffix(&mut self, name: &str, rest: &[Arg], open_tail: bool) -> bool {
        let likely = command_position(name, rest);
        (0..rest.len()).any(|i| {
            if i == likely {
                self.runs(&rest[i..], open_tail, true)
            } else {
                !rest[i].wild && self.runs(&rest[i..], open_tail, false)
            }
        })
    }

    /// `eval` joins its arguments and runs them as a line of their own.
    fn eval(&mut self, rest: &[Arg], open_tail: bool) -> bool {
        if rest.iter().any(|w| w.wild) {
            return true;
        }
        let line: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
        self.script(&line.join(" ")) || (open_tail && rest.is_empty())
    }

    fn script(&mut self, line: &str) -> bool {
        split_commands(line)
            .iter()
            .any(|part| self.runs(&args(part), false, true))
    }

    /// `bash -c SCRIPT` runs the script; a shell reading commands from its
    /// input (`… | sh`, `sh -s`) runs what we cannot see. A script file is
    /// a program like any other.
    fn shell(&mut self, rest: &[Arg], open_tail: bool) -> bool {
        let (mut i, mut inline, mut stdin) = (0, false, false);
        while let Some(w) = rest.get(i) {
            let t = w.text.as_str();
            if w.wild {
                return true;
            }
            if t == "--" || t == "-" {
                i += 1;
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                if matches!(long, "version" | "help") {
                    return false;
                }
                i += if matches!(long, "rcfile" | "init-file") {
                    2
                } else {
                    1
                };
                continue;
            }
            let Some(flags) = t.strip_prefix(['-', '+']).filter(|f| !f.is_empty()) else {
                break;
            };
            inline |= flags.contains('c');
            stdin |= flags.contains('s');
            // `-o name` and `-O name` take the next word.
            i += 1 + flags.chars().filter(|c| matches!(c, 'o' | 'O')).count();
        }
        match (inline, rest.get(i)) {
            (true, Some(script)) => script.wild || self.script(&script.text),
            (true, None) => open_tail,
            (false, operand) => stdin || operand.is_none(),
        }
    }

    /// `su -c SCRIPT`, `runuser -c SCRIPT`; without one, a shell reading
    /// its input.
    fn su(&mut self, rest: &[Arg]) -> bool {
        for (i, w) in rest.iter().enumerate() {
            if w.wild {
                return true;
            }
            let script = match w.text.as_str() {
                "-c" | "--command" => rest.get(i + 1),
                t => match t.strip_prefix("--command=") {
                    Some(s) => return self.script(s),
                    None => continue,
                },
            };
            return script.is_none_or(|s| s.wild || self.script(&s.text));
        }
        true
    }

    /// `xargs [options] command…` runs the command with more arguments
    /// read from its input, or with `-I` replaced in: those words are wild.
    fn xargs(&mut self, rest: &[Arg]) -> bool {
        let Some((i, replace)) = xargs_options(rest) else {
            return true;
        };
        let command: Vec<Arg> = match rest.get(i..) {
            Some(command) if !command.is_empty() => command
                .iter()
                .map(|w| Arg {
                    text: w.text.clone(),
                    wild: w.wild
                        || replace
                            .as_deref()
                            .is_some_and(|r| !r.is_empty() && w.text.contains(r)),
                })
                .collect(),
            // With no command, xargs runs `echo`.
            _ => vec![Arg {
                text: "echo".to_owned(),
                wild: false,
            }],
        };
        self.runs(&command, replace.is_none(), true)
    }

    /// `find … -exec command… ;` (or `+`, `-execdir`, `-ok`, `-okdir`): the
    /// file names put in place of `{}` make those words wild.
    fn find(&mut self, rest: &[Arg]) -> bool {
        let mut i = 0;
        while i < rest.len() {
            if matches!(
                rest[i].text.as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir"
            ) {
                let start = i + 1;
                let mut end = start;
                while end < rest.len()
                    && !(rest[end].text == ";"
                        || (rest[end].text == "+" && end > start && rest[end - 1].text == "{}"))
                {
                    end += 1;
                }
                let command: Vec<Arg> = rest[start..end]
                    .iter()
                    .map(|w| Arg {
                        text: w.text.clone(),
                        wild: w.wild || w.text.contains("{}"),
                    })
                    .collect();
                if self.runs(&command, false, true) {
                    return true;
                }
                i = end;
            }
            i += 1;
        }
        false
    }

    /// `env -S 'command args'` (`--split-string`): the string is split into
    /// the command's first words.
    fn env_split(&mut self, rest: &[Arg], open_tail: bool) -> bool {
        let mut i = 0;
        while let Some(w) = rest.get(i) {
            let t = w.text.as_str();
            if w.wild || t == "--" {
                return false;
            }
            i += 1;
            let split = if let Some(s) = t.strip_prefix("--split-string=") {
                Some(s)
            } else if t == "--split-string" {
                i += 1;
                rest.get(i - 1).map(|w| w.text.as_str())
            } else if t.starts_with("--") {
                if matches!(t, "--unset" | "--chdir" | "--argv0") {
                    i += 1;
                }
                continue;
            } else if let Some(flags) = t.strip_prefix('-').filter(|f| !f.is_empty()) {
                match flags.find(['S', 'u', 'C', 'a']) {
                    Some(k) if flags[k..].starts_with('S') => {
                        let attached = &flags[k + 1..];
                        if attached.is_empty() {
                            i += 1;
                            rest.get(i - 1).map(|w| w.text.as_str())
                        } else {
                            Some(attached)
                        }
                    }
                    Some(k) => {
                        if k + 1 == flags.len() {
                            i += 1;
                        }
                        continue;
                    }
                    None => continue,
                }
            } else if is_assignment(t) {
                continue;
            } else {
                return false;
            };
            let Some(split) = split else { return open_tail };
            if rest.get(i - 1).is_some_and(|w| w.wild) {
                return true;
            }
            let mut command: Vec<Arg> = split_commands(split).iter().flat_map(args).collect();
            command.extend(rest[i.min(rest.len())..].iter().cloned());
            return self.runs(&command, open_tail, true);
        }
        false
    }
}

/// Compares arguments with the rule's: a wild one matches the rest, and a
/// command that may get more arguments matches a shorter prefix.
fn args_match(args: &[Arg], want: &[String], open_tail: bool) -> bool {
    for (k, want) in want.iter().enumerate() {
        match args.get(k) {
            None => return open_tail,
            Some(a) if a.wild => return true,
            Some(a) if a.text != *want => return false,
            Some(_) => {}
        }
    }
    true
}

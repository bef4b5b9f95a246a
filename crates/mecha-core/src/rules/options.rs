//! The options of the commands a forbid rule sees through: where a
//! wrapper's command starts, and git's global options.

use crate::shell_words::SimpleCommand;

/// A word as a forbid rule sees it.
#[derive(Debug, Clone)]
pub(super) struct Arg {
    pub(super) text: String,
    /// Bash may expand it into anything, several words included.
    pub(super) wild: bool,
}

pub(super) fn args(part: &SimpleCommand) -> Vec<Arg> {
    part.words
        .iter()
        .enumerate()
        .map(|(i, text)| Arg {
            text: text.clone(),
            wild: part.expands.get(i).copied().unwrap_or(false),
        })
        .collect()
}

/// Where `xargs`'s command starts, and its `-I` replacement string, if
/// any; `None` when a word among its options is one bash expands.
pub(super) fn xargs_options(rest: &[Arg]) -> Option<(usize, Option<String>)> {
    let mut i = 0;
    let mut replace: Option<String> = None;
    while let Some(w) = rest.get(i) {
        if w.wild {
            return None;
        }
        let t = w.text.as_str();
        i += 1;
        if t == "--" {
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, value) = long
                .split_once('=')
                .map_or((long, None), |(n, v)| (n, Some(v)));
            if name == "replace" {
                replace = Some(value.unwrap_or("{}").to_owned());
            }
            let separate = matches!(
                name,
                "arg-file"
                    | "delimiter"
                    | "max-args"
                    | "max-procs"
                    | "max-chars"
                    | "process-slot-var"
            );
            if separate && value.is_none() {
                i += 1;
            }
            continue;
        }
        let Some(flags) = t.strip_prefix('-').filter(|f| !f.is_empty()) else {
            i -= 1; // the command
            break;
        };
        for (k, c) in flags.char_indices() {
            let attached = &flags[k + c.len_utf8()..];
            match c {
                'a' | 'd' | 'E' | 'I' | 'L' | 'n' | 'P' | 's' => {
                    let value = if attached.is_empty() {
                        i += 1;
                        rest.get(i - 1).map_or("", |w| w.text.as_str())
                    } else {
                        attached
                    };
                    if c == 'I' {
                        replace = Some(value.to_owned());
                    }
                    break;
                }
                'i' => {
                    replace = Some(if attached.is_empty() { "{}" } else { attached }.to_owned());
                    break;
                }
                'e' | 'l' => break,
                _ => {}
            }
        }
    }
    Some((i, replace))
}

/// git's global options, before the subcommand (`-C dir`, `-c k=v`,
/// `--git-dir=…`, `--no-pager`, …).
pub(super) struct GitGlobals<'a> {
    /// Where the subcommand starts.
    pub(super) subcommand: usize,
    /// An alias is defined on the command line (`-c alias.p=push p`), or a
    /// config hides in a word bash expands: any subcommand may run.
    pub(super) any: bool,
    /// The values of `-c key=value`: many keys (`core.fsmonitor`,
    /// `core.sshCommand`, `diff.external`, …) name a command git runs.
    pub(super) values: Vec<&'a str>,
}

pub(super) fn git_globals(args: &[Arg]) -> GitGlobals<'_> {
    let mut globals = GitGlobals {
        subcommand: 0,
        any: false,
        values: Vec::new(),
    };
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if a.wild || !t.starts_with('-') {
            break;
        }
        let (name, value) = t.split_once('=').map_or((t, None), |(n, v)| (n, Some(v)));
        let separate = value.is_none()
            && matches!(
                name,
                "-C" | "-c"
                    | "--git-dir"
                    | "--work-tree"
                    | "--namespace"
                    | "--config-env"
                    | "--super-prefix"
            );
        let config = match (name, separate) {
            ("-c" | "--config-env", true) => args.get(i + 1).map(|c| (c.text.as_str(), c.wild)),
            ("--config-env", false) => value.map(|v| (v, false)),
            _ => None,
        };
        if let Some((config, wild)) = config {
            globals.any |= wild || config.to_ascii_lowercase().starts_with("alias.");
            if name == "-c" {
                globals
                    .values
                    .extend(config.split_once('=').map(|(_, v)| v));
            }
        }
        i += if separate { 2 } else { 1 };
    }
    globals.subcommand = i.min(args.len());
    globals
}

/// Where a wrapper's command most likely starts: after its options (and
/// the arguments of those known to take one), numbers (`timeout 5`) and
/// variable assignments (`env A=1`).
pub(super) fn command_position(name: &str, rest: &[Arg]) -> usize {
    let with_argument = match name {
        "env" => "uCa",
        "exec" => "a",
        "nice" => "n",
        "time" => "fo",
        "timeout" => "sk",
        "sudo" => "ugCDhprtTUR",
        "doas" => "uC",
        "stdbuf" => "ioe",
        "ionice" => "cnp",
        _ => "",
    };
    let mut i = 0;
    while let Some(w) = rest.get(i) {
        let t = w.text.as_str();
        if w.wild {
            break;
        }
        i += 1;
        if t == "--" {
            break;
        }
        if t.starts_with("--") || is_assignment(t) || is_number(t) {
            continue;
        }
        let Some(flags) = t.strip_prefix('-').filter(|f| !f.is_empty()) else {
            i -= 1;
            break;
        };
        // The option's argument is the rest of the word, or the next one.
        if flags.find(|c| with_argument.contains(c)) == Some(flags.len() - 1) {
            i += 1;
        }
    }
    i
}

/// `NAME=value` (or `NAME+=value`) before a command sets a variable.
pub(super) fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `5`, `0.5`, `10s`, `1m`: a duration or priority, not a command.
pub(super) fn is_number(word: &str) -> bool {
    let digits = word.trim_end_matches(['s', 'm', 'h', 'd']);
    !digits.is_empty() && digits.parse::<f64>().is_ok()
}

pub(super) fn basename(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

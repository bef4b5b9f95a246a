//! Just enough of git's config syntax to tell what a config file sets:
//! sections with and without subsections, bare booleans, quoting, escapes,
//! comments and continuation lines. Used to find where a repository's
//! hooks and includes live, and to strip from a repository a command made
//! every key that would have git on the host run a program.
//!
//! It errs towards refusing: a file this parser cannot read is treated as
//! holding something it must not, because git may read it differently.

/// One `key = value` of a config file. Section and key names are lower
/// case, as git compares them; a subsection keeps its case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub section: String,
    pub subsection: Option<String>,
    pub key: String,
    /// `None` for a bare key (`[core] bare`), which git reads as true.
    pub value: Option<String>,
}

impl Entry {
    /// `section.subsection.key`, as `git config` spells it.
    pub(crate) fn name(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }

    /// Whether git reading this entry runs, includes or trusts nothing
    /// beyond the repository itself. An allowlist: everything a plain
    /// `git init`, `git remote add`, `git branch -u` or `git submodule
    /// add` writes, and no key that names a program, a hook directory, an
    /// include, a filter, a pager, an editor or a credential helper.
    pub(crate) fn is_inert(&self) -> bool {
        let shape = match self.subsection {
            Some(_) => format!("{}.*.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        };
        INERT.contains(&shape.as_str())
    }
}

const INERT: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.abbrev",
    "core.untrackedcache",
    "core.splitindex",
    "core.commitgraph",
    "core.multipackindex",
    "core.checkstat",
    "core.trustctime",
    "core.compression",
    "core.bigfilethreshold",
    "core.whitespace",
    "extensions.objectformat",
    "extensions.refstorage",
    "extensions.worktreeconfig",
    "extensions.preciousobjects",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.mirror",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "branch.*.description",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "merge.ff",
    "merge.conflictstyle",
    "rebase.autostash",
    "rerere.enabled",
    "index.version",
    "gc.auto",
    "color.ui",
    "status.showuntrackedfiles",
];

/// The entries of `text`, in order, or `None` where it is not config git
/// syntax this parser is sure of.
pub(crate) fn parse(text: &str) -> Option<Vec<Entry>> {
    let mut chars = text.chars().peekable();
    let mut entries = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&c) = chars.peek() else {
            return Some(entries);
        };
        match c {
            '#' | ';' => while chars.next_if(|&c| c != '\n').is_some() {},
            '[' => {
                chars.next();
                section = Some(header(&mut chars)?);
            }
            c if c.is_ascii_alphabetic() => {
                let (name, sub) = section.clone()?;
                let mut key = String::new();
                while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '-') {
                    key.push(c.to_ascii_lowercase());
                }
                while chars.next_if(|&c| c == ' ' || c == '\t').is_some() {}
                let value = match chars.peek() {
                    None | Some('\n' | '\r' | '#' | ';') => None,
                    Some('=') => {
                        chars.next();
                        Some(value(&mut chars)?)
                    }
                    Some(_) => return None,
                };
                entries.push(Entry {
                    section: name,
                    subsection: sub,
                    key,
                    value,
                });
            }
            _ => return None,
        }
    }
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// After `[`: `name]`, `name "sub"]`, or the old `name.sub]`.
fn header(chars: &mut Chars<'_>) -> Option<(String, Option<String>)> {
    let mut name = String::new();
    while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.')) {
        name.push(c.to_ascii_lowercase());
    }
    let mut sub = None;
    if chars.next_if(|&c| c == ' ' || c == '\t').is_some() {
        while chars.next_if(|&c| c == ' ' || c == '\t').is_some() {}
        if chars.next() != Some('"') {
            return None;
        }
        let mut text = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => text.push(chars.next()?),
                '\n' => return None,
                c => text.push(c),
            }
        }
        sub = Some(text);
    } else if let Some((base, rest)) = name.split_once('.') {
        sub = Some(rest.to_owned());
        name = base.to_owned();
    }
    if chars.next() != Some(']') || name.is_empty() {
        return None;
    }
    Some((name, sub))
}

/// After `=`: to the end of the line, joining continuation lines, with
/// quotes and escapes undone and whitespace outside quotes trimmed at the
/// ends.
fn value(chars: &mut Chars<'_>) -> Option<String> {
    while chars.next_if(|&c| c == ' ' || c == '\t').is_some() {}
    let mut out = String::new();
    let mut pending = String::new();
    let mut quoted = false;
    loop {
        let c = match chars.next() {
            None => return (!quoted).then_some(out),
            Some(c) => c,
        };
        match c {
            '\n' if !quoted => return Some(out),
            '\n' => return None,
            '\r' if chars.peek() == Some(&'\n') => {}
            '\\' => {
                let escaped = match chars.next()? {
                    '\n' => continue,
                    'n' => '\n',
                    't' => '\t',
                    'b' => '\u{8}',
                    '"' => '"',
                    '\\' => '\\',
                    _ => return None,
                };
                out.push_str(&std::mem::take(&mut pending));
                out.push(escaped);
            }
            '"' => {
                out.push_str(&std::mem::take(&mut pending));
                quoted = !quoted;
            }
            '#' | ';' if !quoted => {
                while chars.next_if(|&c| c != '\n').is_some() {}
                return Some(out);
            }
            ' ' | '\t' if !quoted => pending.push(c),
            c => {
                out.push_str(&std::mem::take(&mut pending));
                out.push(c);
            }
        }
    }
}

/// `entries` written back as a config file git reads the same way.
pub(crate) fn render(entries: &[Entry]) -> String {
    let mut out = String::new();
    let mut current: Option<(&str, Option<&str>)> = None;
    for entry in entries {
        let here = (entry.section.as_str(), entry.subsection.as_deref());
        if current != Some(here) {
            match here.1 {
                Some(sub) => out.push_str(&format!("[{} \"{}\"]\n", here.0, escape(sub))),
                None => out.push_str(&format!("[{}]\n", here.0)),
            }
            current = Some(here);
        }
        match &entry.value {
            Some(value) => out.push_str(&format!("\t{} = \"{}\"\n", entry.key, escape(value))),
            None => out.push_str(&format!("\t{}\n", entry.key)),
        }
    }
    out
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        parse(text).unwrap().iter().map(Entry::name).collect()
    }

    #[test]
    fn what_git_init_writes_is_inert() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://h/r.git\n\
                    \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                    \tremote = origin\n\tmerge = refs/heads/main\n";
        let entries = parse(text).unwrap();
        assert_eq!(entries.len(), 8);
        assert!(entries.iter().all(Entry::is_inert), "{entries:?}");
    }

    #[test]
    fn every_spelling_of_a_program_is_read_and_is_not_inert() {
        let text = "[Core]\n  FSMonitor = \"./run\" # c\n[core \"x\"]\n[alias]\n\tst = !sh -c x\n\
                    [filter \"lfs\"]\n\tclean = a\\\n b\n[include]\n\tpath = ../x\n\
                    [includeIf \"gitdir:/\"]\n\tpath = y\n[diff \"t\"]\n\ttextconv = z\n\
                    [core.legacy]\n\thookspath=.husky\n[credential]\n\thelper\n";
        let entries = parse(text).unwrap();
        assert_eq!(
            entries.iter().map(Entry::name).collect::<Vec<_>>(),
            [
                "core.fsmonitor",
                "alias.st",
                "filter.lfs.clean",
                "include.path",
                "includeif.gitdir:/.path",
                "diff.t.textconv",
                "core.legacy.hookspath",
                "credential.helper"
            ]
        );
        assert_eq!(entries[0].value.as_deref(), Some("./run"));
        assert_eq!(entries[2].value.as_deref(), Some("a b"));
        assert!(entries.iter().all(|e| !e.is_inert()));
    }

    #[test]
    fn what_it_cannot_read_is_refused() {
        for text in [
            "key = 1\n",
            "[core\n",
            "[core]\n\tx = \"open\n",
            "[c]\n\t9 = x\n",
            "[c]\nk = \\q\n",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn render_reads_back_the_same() {
        let text = "[core]\n\tbare = false\n\teditor = \"vi \\\"x\\\"\\\\ ;#\"\n[remote \"o r\"]\n\
                    \turl = u\n[user]\n\tname\n";
        let entries = parse(text).unwrap();
        assert_eq!(parse(&render(&entries)).unwrap(), entries);
        assert_eq!(names(&render(&entries)), names(text));
    }
}

//! Just enough of git's config syntax to tell what a config file sets:
//! sections with and without subsections, bare booleans, quoting, escapes,
//! comments and continuation lines. Used to find where a repository's
//! hooks and includes live, and to strip from a repository a command made
//! every key that would have git on the host run a program.
//!
//! It errs towards refusing: a file this parser cannot read is treated as
//! holding something it must not, because git may read it differently.

/// One `key = value` of a config file. Section and key names are lower
/// case, as git compares them; a subsection and a value are bytes, as git
/// keeps them (a config need not be UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub section: String,
    pub subsection: Option<Vec<u8>>,
    pub key: String,
    /// `None` for a bare key (`[core] bare`), which git reads as true.
    pub value: Option<Vec<u8>>,
}

impl Entry {
    /// `section.subsection.key`, as `git config` spells it.
    pub(crate) fn name(&self) -> String {
        match &self.subsection {
            Some(sub) => format!(
                "{}.{}.{}",
                self.section,
                String::from_utf8_lossy(sub),
                self.key
            ),
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

/// The entries of a config file's bytes, in order, read as git reads them
/// (a UTF-8 byte order mark skipped, CRLF as LF, any bytes in values), or
/// `None` where it is not config syntax this parser is sure of.
pub(crate) fn parse(bytes: &[u8]) -> Option<Vec<Entry>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = crlf_as_lf(bytes);
    let mut chars = text.iter().copied().peekable();
    let mut entries = Vec::new();
    let mut section: Option<(String, Option<Vec<u8>>)> = None;
    loop {
        while chars.next_if(|&c| is_space(c)).is_some() {}
        let Some(&c) = chars.peek() else {
            return Some(entries);
        };
        match c {
            b'#' | b';' => while chars.next_if(|&c| c != b'\n').is_some() {},
            b'[' => {
                chars.next();
                section = Some(header(&mut chars)?);
            }
            c if c.is_ascii_alphabetic() => {
                let (name, sub) = section.clone()?;
                let mut key = String::new();
                while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == b'-') {
                    key.push(char::from(c.to_ascii_lowercase()));
                }
                while chars.next_if(|&c| c == b' ' || c == b'\t').is_some() {}
                let value = match chars.peek() {
                    None | Some(b'\n' | b'#' | b';') => None,
                    Some(b'=') => {
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

/// Git's whitespace: no vertical tab or form feed.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// Every CRLF as LF, as git reads a config (a lone CR stays).
fn crlf_as_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for (i, &c) in bytes.iter().enumerate() {
        if !(c == b'\r' && bytes.get(i + 1) == Some(&b'\n')) {
            out.push(c);
        }
    }
    out
}

type Chars<'a> = std::iter::Peekable<std::iter::Copied<std::slice::Iter<'a, u8>>>;

/// After `[`: `name]`, `name "sub"]`, or the old `name.sub]`.
fn header(chars: &mut Chars<'_>) -> Option<(String, Option<Vec<u8>>)> {
    let mut name = String::new();
    while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.')) {
        name.push(char::from(c.to_ascii_lowercase()));
    }
    let mut sub = None;
    if chars.next_if(|&c| c == b' ' || c == b'\t').is_some() {
        while chars.next_if(|&c| c == b' ' || c == b'\t').is_some() {}
        if chars.next() != Some(b'"') {
            return None;
        }
        let mut text = Vec::new();
        loop {
            match chars.next()? {
                b'"' => break,
                b'\\' => text.push(chars.next()?),
                b'\n' | 0 => return None,
                c => text.push(c),
            }
        }
        sub = Some(text);
    } else if let Some((base, rest)) = name.split_once('.') {
        sub = Some(rest.as_bytes().to_vec());
        name = base.to_owned();
    }
    if chars.next() != Some(b']') || name.is_empty() {
        return None;
    }
    Some((name, sub))
}

/// After `=`: to the end of the line, joining continuation lines, with
/// quotes and escapes undone and whitespace outside quotes trimmed at the
/// ends. A NUL, where git would stop reading the value, is refused.
fn value(chars: &mut Chars<'_>) -> Option<Vec<u8>> {
    while chars.next_if(|&c| c == b' ' || c == b'\t').is_some() {}
    let mut out = Vec::new();
    let mut pending = Vec::new();
    let mut quoted = false;
    loop {
        let c = match chars.next() {
            None => return (!quoted).then_some(out),
            Some(c) => c,
        };
        match c {
            0 => return None,
            b'\n' if !quoted => return Some(out),
            b'\n' => return None,
            b'\\' => {
                let escaped = match chars.next()? {
                    b'\n' => continue,
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'b' => 8,
                    b'"' => b'"',
                    b'\\' => b'\\',
                    _ => return None,
                };
                out.append(&mut pending);
                out.push(escaped);
            }
            b'"' => {
                out.append(&mut pending);
                quoted = !quoted;
            }
            b'#' | b';' if !quoted => {
                while chars.next_if(|&c| c != b'\n').is_some() {}
                return Some(out);
            }
            b' ' | b'\t' if !quoted => pending.push(c),
            c => {
                out.append(&mut pending);
                out.push(c);
            }
        }
    }
}

/// `entries` written back as a config file git reads the same way.
pub(crate) fn render(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut current: Option<(&str, Option<&[u8]>)> = None;
    for entry in entries {
        let here = (entry.section.as_str(), entry.subsection.as_deref());
        if current != Some(here) {
            out.push(b'[');
            out.extend_from_slice(here.0.as_bytes());
            if let Some(sub) = here.1 {
                out.extend_from_slice(b" \"");
                escape(sub, &mut out);
                out.push(b'"');
            }
            out.extend_from_slice(b"]\n");
            current = Some(here);
        }
        out.push(b'\t');
        out.extend_from_slice(entry.key.as_bytes());
        if let Some(value) = &entry.value {
            out.extend_from_slice(b" = \"");
            escape(value, &mut out);
            out.push(b'"');
        }
        out.push(b'\n');
    }
    out
}

fn escape(text: &[u8], out: &mut Vec<u8>) {
    for &c in text {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            8 => out.extend_from_slice(b"\\b"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        parse(text.as_bytes())
            .unwrap()
            .iter()
            .map(Entry::name)
            .collect()
    }

    #[test]
    fn what_git_init_writes_is_inert() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://h/r.git\n\
                    \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                    \tremote = origin\n\tmerge = refs/heads/main\n";
        let entries = parse(text.as_bytes()).unwrap();
        assert_eq!(entries.len(), 8);
        assert!(entries.iter().all(Entry::is_inert), "{entries:?}");
    }

    #[test]
    fn every_spelling_of_a_program_is_read_and_is_not_inert() {
        let text = "[Core]\n  FSMonitor = \"./run\" # c\n[core \"x\"]\n[alias]\n\tst = !sh -c x\n\
                    [filter \"lfs\"]\n\tclean = a\\\n b\n[include]\n\tpath = ../x\n\
                    [includeIf \"gitdir:/\"]\n\tpath = y\n[diff \"t\"]\n\ttextconv = z\n\
                    [core.legacy]\n\thookspath=.husky\n[credential]\n\thelper\n";
        let entries = parse(text.as_bytes()).unwrap();
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
        assert_eq!(entries[0].value.as_deref(), Some(b"./run".as_slice()));
        assert_eq!(entries[2].value.as_deref(), Some(b"a b".as_slice()));
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
            "[c]\nk = a\0b\n",
        ] {
            assert_eq!(parse(text.as_bytes()), None, "{text:?}");
        }
    }

    #[test]
    fn render_reads_back_the_same() {
        let text = "[core]\n\tbare = false\n\teditor = \"vi \\\"x\\\"\\\\ ;#\"\n[remote \"o r\"]\n\
                    \turl = u\n[user]\n\tname\n";
        let entries = parse(text.as_bytes()).unwrap();
        let rendered = render(&entries);
        assert_eq!(parse(&rendered).unwrap(), entries);
        assert_eq!(names(std::str::from_utf8(&rendered).unwrap()), names(text));
    }

    /// Git reads each of these, so each must be read, not given up on (a
    /// config given up on protected nothing it pointed at).
    #[test]
    fn what_git_reads_is_read_the_same() {
        let cases: [&[u8]; 4] = [
            b"\xEF\xBB\xBF[core]\n\thooksPath = .githooks\n",
            b"[user]\r\n\tname = a\\\r\n b\r\n[core]\r\n\thooksPath = .githooks\r\n",
            b"[user]\n\tname = Ren\xe9\n[core]\n\thooksPath = .githooks\n",
            b"[core] hooksPath = .githooks",
        ];
        for bytes in cases {
            let entries = parse(bytes).unwrap_or_else(|| panic!("{bytes:?}"));
            let hooks = entries.iter().find(|e| e.name() == "core.hookspath");
            assert_eq!(
                hooks.and_then(|e| e.value.as_deref()),
                Some(b".githooks".as_slice()),
                "{bytes:?}"
            );
        }
        let latin = parse(b"[core]\n\thooksPath = h\xe9\n").unwrap();
        assert_eq!(latin[0].value.as_deref(), Some(b"h\xe9".as_slice()));
        let joined = parse(b"[user]\n\tname = a\\\r\n b\r\n").unwrap();
        assert_eq!(joined[0].value.as_deref(), Some(b"a b".as_slice()));
    }
}

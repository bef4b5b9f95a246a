//! The case file. Everything that could stop a case from meaning anything
//! is found when the file is read, before the first case runs: an unknown
//! key or check kind, a fixture that is not there, a regex that does not
//! compile, a path that leaves the workspace, two cases of one name, a
//! case with nothing to grade.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How long a case may run when it does not say (seconds).
pub const DEFAULT_TIMEOUT_S: u64 = 300;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    #[serde(default)]
    case: Vec<Case>,
}

/// One case: a prompt run in a copy of its fixture, then graded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub prompt: String,
    /// A folder, relative to the case file, copied into a fresh workspace
    /// for each run; absent: an empty workspace.
    #[serde(default)]
    pub fixture: Option<PathBuf>,
    #[serde(default)]
    pub max_turns: Option<u32>,
    #[serde(default)]
    pub timeout_s: Option<u64>,
    #[serde(default)]
    pub check: Vec<Check>,
}

impl Case {
    pub fn timeout_s(&self) -> u64 {
        self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S)
    }
}

/// One way a run is graded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The answer contains `text`.
    Contains { text: String },
    /// The answer matches the regex `pattern`.
    Matches { pattern: String },
    /// The workspace's file at `path` holds exactly `text`.
    FileEquals { path: String, text: String },
    /// The workspace's file at `path` contains `text`.
    FileContains { path: String, text: String },
    /// Nothing is at `path` in the workspace.
    FileAbsent { path: String },
    /// The model called `tool` (whether or not the gate let it run).
    ToolCalled { tool: String },
    /// The model never called `tool`.
    ToolNotCalled { tool: String },
    /// A call of `tool` was refused by the gate.
    Refused { tool: String },
    /// `run` (a program and its arguments) exits with `exit` in the
    /// workspace after the run, confined as the config confines commands.
    Command {
        run: Vec<String>,
        #[serde(default)]
        exit: i32,
    },
}

impl Check {
    /// The kind, as the case file spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Check::Contains { .. } => "contains",
            Check::Matches { .. } => "matches",
            Check::FileEquals { .. } => "file_equals",
            Check::FileContains { .. } => "file_contains",
            Check::FileAbsent { .. } => "file_absent",
            Check::ToolCalled { .. } => "tool_called",
            Check::ToolNotCalled { .. } => "tool_not_called",
            Check::Refused { .. } => "refused",
            Check::Command { .. } => "command",
        }
    }

    fn problem(&self) -> Option<String> {
        match self {
            Check::Matches { pattern } => regex::Regex::new(pattern)
                .err()
                .map(|e| format!("`matches` pattern `{pattern}` does not compile: {e}")),
            Check::FileEquals { path, .. }
            | Check::FileContains { path, .. }
            | Check::FileAbsent { path } => inside(path).err(),
            Check::Command { run, .. } if run.first().is_none_or(|p| p.is_empty()) => {
                Some("`command` needs `run`, the program and its arguments".to_owned())
            }
            _ => None,
        }
    }
}

/// A path a check names must stay in the workspace: relative, no `..`.
fn inside(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    let leaves = p.is_absolute()
        || path.is_empty()
        || p.components().any(|c| matches!(c, Component::ParentDir));
    match leaves {
        true => Err(format!(
            "`{path}` is not a path inside the case's workspace; write it relative to the \
             fixture's root, without `..`"
        )),
        false => Ok(()),
    }
}

/// A checked case file: its cases, their fixtures resolved.
#[derive(Debug, Clone)]
pub struct CaseSet {
    pub cases: Vec<Case>,
}

impl CaseSet {
    /// Reads and checks `path`; the error names the case and what to fix.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the case file {}: {e}", path.display()))?;
        let file: CaseFile = toml::from_str(&text)
            .map_err(|e| format!("{}: {}", path.display(), e.to_string().trim_end()))?;
        if file.case.is_empty() {
            return Err(format!(
                "{} holds no [[case]]; each case needs a name, a prompt and at least one \
                 [[case.check]]",
                path.display()
            ));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut names = BTreeSet::new();
        let mut cases = Vec::with_capacity(file.case.len());
        for mut case in file.case {
            let name = case.name.clone();
            let fail = |why: String| format!("{}: case `{name}`: {why}", path.display());
            if name.trim().is_empty() {
                return Err(format!("{}: a case has an empty name", path.display()));
            }
            if !names.insert(name.clone()) {
                return Err(fail(
                    "a second case has this name; names must be unique".into(),
                ));
            }
            if case.prompt.trim().is_empty() {
                return Err(fail("its prompt is empty".into()));
            }
            if case.check.is_empty() {
                return Err(fail(
                    "it has no [[case.check]], so it would pass whatever the model did".into(),
                ));
            }
            if let Some(problem) = case.check.iter().find_map(Check::problem) {
                return Err(fail(problem));
            }
            if let Some(fixture) = &case.fixture {
                let resolved = dir.join(fixture);
                if !resolved.is_dir() {
                    return Err(fail(format!(
                        "its fixture {} is not a folder (it is relative to the case file)",
                        resolved.display()
                    )));
                }
                case.fixture = Some(resolved);
            }
            cases.push(case);
        }
        Ok(Self { cases })
    }

    /// The cases of shard `index` of `count` (from 1): each case belongs to
    /// exactly one shard, chosen by its name, so every machine running the
    /// same file picks the same cases whatever the order.
    pub fn shard(self, index: u32, count: u32) -> Self {
        let cases = self
            .cases
            .into_iter()
            .filter(|case| shard_of(&case.name, count) == index)
            .collect();
        Self { cases }
    }
}

/// Which of `count` shards (from 1) the case `name` belongs to.
pub fn shard_of(name: &str, count: u32) -> u32 {
    // FNV-1a: stable across platforms and releases, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    u32::try_from(hash % u64::from(count.max(1))).unwrap_or(0) + 1
}

/// `I/N` as given to `--shard`.
pub fn parse_shard(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("`{text}` is no shard; write I/N with 1 <= I <= N, e.g. --shard 2/4");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn load(text: &str) -> Result<CaseSet, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("fx")).unwrap();
        let path = dir.path().join("cases.toml");
        std::fs::write(&path, text).unwrap();
        CaseSet::load(&path)
    }

    #[test]
    fn a_good_file_loads_with_its_fixture_resolved() {
        let set = load(
            "[[case]]\nname = \"a\"\nprompt = \"p\"\nfixture = \"fx\"\n\
             [[case.check]]\nkind = \"tool_not_called\"\ntool = \"http_fetch\"\n\
             [[case.check]]\nkind = \"command\"\nrun = [\"true\"]\n",
        )
        .unwrap();
        assert!(set.cases[0].fixture.as_ref().unwrap().ends_with("fx"));
        assert_eq!(
            set.cases[0].check[1],
            Check::Command {
                run: vec!["true".into()],
                exit: 0
            }
        );
    }

    #[test]
    fn every_bad_file_is_refused_before_anything_runs() {
        let case = |extra: &str| format!("[[case]]\nname = \"a\"\nprompt = \"p\"\n{extra}");
        for (text, says) in [
            (
                case("[[case.check]]\nkind = \"smells_right\"\n"),
                "smells_right",
            ),
            (
                case("[[case.check]]\nkind = \"contains\"\ntext = \"x\"\ntxet = \"y\"\n"),
                "txet",
            ),
            (
                case("colour = \"red\"\n[[case.check]]\nkind = \"contains\"\ntext = \"x\"\n"),
                "colour",
            ),
            (case(""), "no [[case.check]]"),
            (
                case("fixture = \"nope\"\n[[case.check]]\nkind = \"contains\"\ntext = \"x\"\n"),
                "not a folder",
            ),
            (
                case("[[case.check]]\nkind = \"matches\"\npattern = \"(\"\n"),
                "does not compile",
            ),
            (
                case("[[case.check]]\nkind = \"file_absent\"\npath = \"../x\"\n"),
                "inside",
            ),
            (
                format!(
                    "{0}[[case.check]]\nkind = \"contains\"\ntext = \"x\"\n{0}[[case.check]]\nkind = \"contains\"\ntext = \"x\"\n",
                    case("")
                ),
                "unique",
            ),
            (String::new(), "no [[case]]"),
        ] {
            let err = load(&text).unwrap_err();
            assert!(err.contains(says), "{says}: {err}");
        }
    }

    #[test]
    fn shard_arguments_are_checked() {
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        for bad in ["0/4", "5/4", "2", "a/b", "1/0"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        /// Shards partition any set exactly: each case in one shard.
        #[test]
        fn shards_partition_the_cases(names in proptest::collection::btree_set("[a-z0-9-]{1,12}", 0..40), count in 1u32..9) {
            let set = CaseSet { cases: names.iter().map(|n| Case {
                name: n.clone(), prompt: "p".into(), fixture: None, max_turns: None,
                timeout_s: None, check: vec![],
            }).collect() };
            let mut seen = Vec::new();
            for index in 1..=count {
                seen.extend(set.clone().shard(index, count).cases.into_iter().map(|c| c.name));
            }
            seen.sort();
            let all: Vec<String> = names.into_iter().collect();
            prop_assert_eq!(seen, all);
        }
    }
}

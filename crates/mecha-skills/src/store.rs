//! The skill store: every `<dir>/<name>/SKILL.md`, loaded once at start-up,
//! and the reasons the ones that did not load were refused.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::frontmatter;
use crate::lenient::{self, Slip};
use crate::yaml::{self, Failure, Raw};

/// The most bytes a SKILL.md may take. The body reaches the model through
/// the output budget anyway; this bounds what start-up reads.
pub const MAX_SKILL_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Fewer skill folders than this are read on the calling thread; more are
/// read on a few threads at once (about 20 µs of reading and parsing a
/// skill against some 50 µs to start a thread).
const PARALLEL_FROM: usize = 128;

/// Descriptions longer than the standard's limit still load (real skills
/// have them), with a warning: all of it goes into every prompt.
const DESCRIPTION_LIMIT_CHARS: usize = 1024;

/// What the store holds: the skills that loaded, sorted by folder name; the
/// ones that did not, with why; what loaded with a caveat; and why the
/// store itself could not be read, when it could not (then it holds
/// nothing, and that is a failure too, not an empty store).
#[derive(Debug, Default)]
pub struct Store {
    pub skills: Vec<Skill>,
    pub failures: Vec<LoadFailure>,
    pub warnings: Vec<String>,
    pub unreadable: Option<String>,
}

/// One loaded skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The folder's name.
    pub dir_name: String,
    pub name: String,
    pub description: String,
    pub triggers: Vec<String>,
    /// The tools its procedure needs; `None`: no narrowing.
    pub tools: Option<Vec<String>>,
    /// The markdown after the frontmatter.
    pub body: String,
    /// The skill's folder (absolute).
    pub dir: PathBuf,
}

/// A skill folder that did not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailure {
    pub dir_name: String,
    pub reason: String,
}

impl fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "skill `{}` did not load — {}",
            self.dir_name, self.reason
        )
    }
}

impl Store {
    /// Every `<dir>/<name>/SKILL.md`, sorted by folder name; a missing
    /// `dir` is an empty store, not an error. Hidden entries and loose
    /// files are not skills; a folder without a SKILL.md is a failure, and
    /// so is a symlinked folder that leads nowhere, since a skill that
    /// silently did not load looks like one the model chose not to use.
    pub fn load(dir: &Path) -> Store {
        let mut store = Store::default();
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            // A symlink to nothing is a store someone meant to have.
            Err(e) if e.kind() == io::ErrorKind::NotFound && !is_symlink(dir) => return store,
            Err(e) => {
                store.unreadable = Some(format!(
                    "cannot read the skills directory {}: {}; no skill was loaded — fix it or \
                     point [skills] dir elsewhere",
                    dir.display(),
                    gone_or(&e)
                ));
                return store;
            }
        };
        let mut folders: Vec<(String, PathBuf)> = Vec::new();
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    store.warnings.push(format!(
                        "cannot read an entry of the skills directory {}: {e}; a skill there \
                         may be missing",
                        dir.display()
                    ));
                    continue;
                }
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            // The entry's own type answers for all but a symlink, which is
            // followed: no stat per skill folder at start-up.
            let is_dir = match entry.file_type() {
                Ok(kind) if kind.is_symlink() => std::fs::metadata(&path).map(|m| m.is_dir()),
                Ok(kind) => Ok(kind.is_dir()),
                Err(e) => Err(e),
            };
            match is_dir {
                Ok(true) => folders.push((name, path)),
                Ok(false) => {}
                Err(e) => store.failures.push(LoadFailure {
                    dir_name: name,
                    reason: format!(
                        "cannot open the folder: {}; point it at a skill folder or remove it",
                        gone_or(&e)
                    ),
                }),
            }
        }
        folders.sort();
        let loaded = mecha_core::map_in_order(&folders, PARALLEL_FROM, |(dir_name, path)| {
            let mut warnings = Vec::new();
            (load_one(dir_name, path, &mut warnings), warnings)
        });
        for ((dir_name, _), (loaded, warnings)) in folders.into_iter().zip(loaded) {
            store.warnings.extend(warnings);
            match loaded {
                Ok(skill) => store.skills.push(skill),
                Err(reason) => store.failures.push(LoadFailure { dir_name, reason }),
            }
        }
        store
    }
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// An error opening a path, said as a person would: a symlink that leads
/// nowhere rather than "not found".
fn gone_or(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "it is a symlink to something that does not exist".to_owned(),
        _ => e.to_string(),
    }
}

fn load_one(dir_name: &str, path: &Path, warnings: &mut Vec<String>) -> Result<Skill, String> {
    let file = path.join("SKILL.md");
    let text = read_capped(&file).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            "the folder has no SKILL.md — a skill is a folder holding a SKILL.md".to_owned()
        }
        io::ErrorKind::InvalidData => format!("SKILL.md {e}"),
        _ => format!("cannot read SKILL.md: {e}"),
    })?;
    let split = frontmatter::split(&text)?;
    let (raw, slips) = read_frontmatter(&split.yaml)?;
    for Slip { line, key } in slips {
        // Line 1 of the file is the opening `---`.
        warnings.push(format!(
            "{}: line {}: the value of `{key}` is not valid YAML (most often an unquoted `: ` \
             inside it); mecha read it as plain text — put the value in quotes so every \
             parser reads it the same way",
            file.display(),
            line + 1
        ));
    }
    let skill = validate(dir_name, raw, split.body)?;
    let chars = skill.description.chars().count();
    if chars > DESCRIPTION_LIMIT_CHARS {
        warnings.push(format!(
            "{}: the description is {chars} characters, over the standard's \
             {DESCRIPTION_LIMIT_CHARS}; it loads, and all of it goes into every prompt",
            file.display()
        ));
    }
    // Absolute, not canonical: the skill tool canonicalizes at each call,
    // where containment is proved, and start-up saves the syscalls.
    let dir = std::path::absolute(path).map_err(|e| format!("cannot resolve the folder: {e}"))?;
    Ok(Skill { dir, ..skill })
}

/// Strict YAML first; on a syntax error, the per-entry fallback.
fn read_frontmatter(yaml_text: &str) -> Result<(Raw, Vec<Slip>), String> {
    let (line, message) = match yaml::parse(yaml_text) {
        Ok(raw) => return Ok((raw, Vec::new())),
        Err(Failure::Syntax { line, message }) => (line, message),
        Err(other) => return Err(refusal(other)),
    };
    match lenient::parse(yaml_text) {
        Ok(Some(read)) => Ok(read),
        Ok(None) => Err(format!(
            "the frontmatter is not YAML mecha can read (line {}: {message}) — write it as \
             `key: value` lines",
            line + 1
        )),
        Err(other) => Err(refusal(other)),
    }
}

fn refusal(failure: Failure) -> String {
    match failure {
        Failure::Budget(message) => format!(
            "the frontmatter expands far beyond its size ({message}), the shape of a YAML \
             alias bomb — remove its anchors (`&`) and aliases (`*`)"
        ),
        Failure::Shape(why) => why,
        Failure::Syntax { line, message } => {
            format!(
                "the frontmatter cannot be read (line {}: {message})",
                line + 1
            )
        }
    }
}

fn validate(dir_name: &str, raw: Raw, body: &str) -> Result<Skill, String> {
    let name = raw.name.flatten().unwrap_or_default();
    if name.is_empty() {
        return Err(format!(
            "the frontmatter has no `name` — add `name: {dir_name}` (the folder's name)"
        ));
    }
    if name != dir_name {
        return Err(format!(
            "frontmatter says `name = {name}` but the directory is `{dir_name}` — they have \
             to match"
        ));
    }
    let description = raw.description.flatten().unwrap_or_default();
    if description.trim().is_empty() {
        return Err(
            "the frontmatter has no `description` — add one that says what the skill \
                    does and when to use it; it is all the model sees until it loads the skill"
                .to_owned(),
        );
    }
    let tools = match raw.tools {
        None => None,
        Some(Some(tools)) if !tools.is_empty() => Some(tools),
        Some(_) => {
            return Err(
                "`tools` is empty, which would leave the procedure no tools — list the \
                        tools it needs, or remove the key for no narrowing"
                    .to_owned(),
            );
        }
    };
    Ok(Skill {
        dir_name: dir_name.to_owned(),
        name,
        description,
        triggers: raw.triggers.flatten().unwrap_or_default(),
        tools,
        body: body.to_owned(),
        dir: PathBuf::new(),
    })
}

/// Reads `file` as UTF-8, refusing one over [`MAX_SKILL_FILE_BYTES`].
fn read_capped(file: &Path) -> io::Result<String> {
    let file = std::fs::File::open(file)?;
    // Room for the whole file at once: behind `take`, read_to_end would
    // otherwise start small and grow, a read call per doubling.
    let size = file
        .metadata()
        .map_or(0, |m| m.len())
        .min(MAX_SKILL_FILE_BYTES);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0) + 1);
    file.take(MAX_SKILL_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SKILL_FILE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "is over {} MB — move the long parts into bundled files the procedure points at",
                MAX_SKILL_FILE_BYTES / (1024 * 1024)
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "is not UTF-8 text — save it as UTF-8",
        )
    })
}

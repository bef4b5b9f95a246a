//! The sessions directory: creating a session, finding one by id or prefix,
//! a workspace's sessions and the newest of them.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::listing::{self, Listing};
use crate::parse::{self, Mode};
use crate::{Entry, Header, Restored, SessionError, Writer};

/// What a new session records in its header.
#[derive(Debug, Clone, Copy)]
pub struct NewSession<'a> {
    pub workspace: &'a Path,
    pub model: &'a str,
    /// `run`, `chat` or `subagent`.
    pub command: &'a str,
    /// The session that delegated to this one (a subagent's).
    pub parent: Option<&'a str>,
}

/// The sessions directory, `$MECHA_HOME/sessions`. Its files hold private
/// data (prompts, file contents, command output): the directory is 0700 and
/// every file 0600.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// A session read back whole.
#[derive(Debug)]
pub struct Loaded {
    pub header: Header,
    pub path: PathBuf,
    pub entries: Vec<Entry>,
    pub state: Restored,
    /// What was skipped while reading (a torn last line), for the user.
    pub warnings: Vec<String>,
    /// Where the last whole record ends, and how long the file was.
    pub(crate) whole_len: u64,
    pub(crate) file_len: u64,
    /// Read in salvage mode: fit to show, not to resume.
    pub(crate) salvaged: bool,
}

impl Store {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts a new session: a fresh id and a file holding its header.
    pub fn create(&self, new: NewSession<'_>) -> Result<Writer, SessionError> {
        self.prepare_dir()?;
        Writer::create(&self.dir, new)
    }

    /// The session `id`, or the one session whose id starts with it.
    pub fn load(&self, id_or_unique_prefix: &str) -> Result<Loaded, SessionError> {
        self.load_with(id_or_unique_prefix, Mode::Strict)
    }

    /// As [`load`](Self::load), but reads past records that do not read (a
    /// file changed by something else), with a warning for each: for
    /// showing a session, never for resuming it.
    pub fn load_salvaging(&self, id_or_unique_prefix: &str) -> Result<Loaded, SessionError> {
        self.load_with(id_or_unique_prefix, Mode::Salvage)
    }

    fn load_with(&self, id: &str, mode: Mode) -> Result<Loaded, SessionError> {
        let id = self.resolve(id)?;
        load_file(&self.file(&id), mode)
    }

    /// The newest session whose header's workspace is `workspace` (both
    /// canonicalized), read whole.
    pub fn latest_in(&self, workspace: &Path) -> Result<Option<Loaded>, SessionError> {
        let wanted = canonical(workspace);
        let mut best: Option<(String, String)> = None;
        for id in self.ids()? {
            // A file whose header does not read is not this workspace's as
            // far as anyone can tell; `mecha sessions list` shows it.
            let Ok(header) = listing::read_header(&self.file(&id)) else {
                continue;
            };
            if !belongs(&header.workspace, header.parent.as_deref(), &wanted) {
                continue;
            }
            let key = (header.started, id);
            if best.as_ref().is_none_or(|b| key > *b) {
                best = Some(key);
            }
        }
        best.map(|(_, id)| load_file(&self.file(&id), Mode::Strict))
            .transpose()
    }

    /// Every session, newest first; one that cannot be read is listed with
    /// its problem.
    pub fn list(&self) -> Result<Vec<Listing>, SessionError> {
        let mut all: Vec<Listing> = self
            .ids()?
            .into_iter()
            .map(|id| listing::listing(&self.file(&id), id))
            .collect();
        all.sort_by(|a, b| (&b.started, &b.id).cmp(&(&a.started, &a.id)));
        Ok(all)
    }

    /// The sessions of `workspace` (as [`latest_in`](Self::latest_in)
    /// counts them), newest first.
    pub fn list_in(&self, workspace: &Path) -> Result<Vec<Listing>, SessionError> {
        let wanted = canonical(workspace);
        let mut all = self.list()?;
        all.retain(|l| l.problem.is_none() && belongs(&l.workspace, l.parent.as_deref(), &wanted));
        Ok(all)
    }

    fn file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// The ids in the directory, from its file names: an id is never made
    /// into a path without being one of these, so `../x` finds nothing.
    fn ids(&self) -> Result<Vec<String>, SessionError> {
        let read = match fs::read_dir(&self.dir) {
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(SessionError::io("read", &self.dir, e)),
        };
        let mut ids = Vec::new();
        for entry in read {
            let entry = entry.map_err(|e| SessionError::io("read", &self.dir, e))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            if !id.is_empty() {
                ids.push(id.to_owned());
            }
        }
        Ok(ids)
    }

    /// The one id that is `wanted` or starts with it.
    fn resolve(&self, wanted: &str) -> Result<String, SessionError> {
        if wanted.is_empty() {
            return Err(SessionError::Unknown(String::new()));
        }
        let ids = self.ids()?;
        if ids.iter().any(|id| id == wanted) {
            return Ok(wanted.to_owned());
        }
        let mut matches: Vec<String> = ids
            .into_iter()
            .filter(|id| id.starts_with(wanted))
            .collect();
        match matches.len() {
            0 => Err(SessionError::Unknown(wanted.to_owned())),
            1 => Ok(matches.remove(0)),
            _ => {
                matches.sort();
                Err(SessionError::Ambiguous {
                    prefix: wanted.to_owned(),
                    ids: matches,
                })
            }
        }
    }

    /// Makes the directory (0700), and narrows one that exists with wider
    /// permissions: its files are private whoever made it.
    fn prepare_dir(&self) -> Result<(), SessionError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| SessionError::io("create", &self.dir, e))?;
        let meta = fs::metadata(&self.dir).map_err(|e| SessionError::io("read", &self.dir, e))?;
        if meta.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| SessionError::io("restrict the permissions of", &self.dir, e))?;
        }
        Ok(())
    }
}

/// Reads and replays one file.
pub(crate) fn load_file(path: &Path, mode: Mode) -> Result<Loaded, SessionError> {
    let bytes = fs::read(path).map_err(|e| SessionError::io("read", path, e))?;
    let parsed = parse::parse(path, &bytes, mode)?;
    let state = Restored::replay(&parsed.entries);
    Ok(Loaded {
        header: parsed.header,
        path: path.to_owned(),
        entries: parsed.entries,
        state,
        salvaged: mode == Mode::Salvage,
        warnings: parsed.warnings,
        whole_len: parsed.whole_len,
        file_len: bytes.len() as u64,
    })
}

/// Whether a session that ran in `workspace`, delegated to by `parent`
/// if a subagent's, is one of the (canonical) workspace `wanted`'s to go
/// on with: a subagent's conversation is part of its parent's session.
fn belongs(workspace: &Path, parent: Option<&str>, wanted: &Path) -> bool {
    parent.is_none() && canonical(workspace) == wanted
}

fn canonical(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

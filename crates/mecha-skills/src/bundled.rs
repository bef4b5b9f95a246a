//! Level 3: the files bundled beside a SKILL.md. A skill lives outside the
//! workspace, so the path jail would (rightly) refuse them to the file
//! tools; the skill tool serves them instead, with containment proved
//! against the skill's own folder. `file` is the one argument here a model
//! can aim at the filesystem, so it gets what every model-supplied path
//! gets: canonicalize, then prove, then open beneath the folder
//! (`openat2(RESOLVE_BENEATH)` through cap-std), so a symlink swapped in
//! after the check cannot lead outside either.

use std::io::{self, BufRead, BufReader};
use std::path::Path;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use mecha_core::{ToolCtx, ToolOutput, open_regular_beneath, system_words};

use crate::Skill;

/// How deep the listing of bundled files looks.
const LIST_DEPTH: usize = 4;
/// How many bundled files the level-2 result names.
pub(crate) const LIST_MAX: usize = 30;
/// How much of a file's start is sniffed for NUL bytes.
const SNIFF_BYTES: usize = 8192;

/// The bundled files (relative to the skill's folder, `/`-separated,
/// sorted, SKILL.md itself left out), at most `max`, and how many there
/// are in all. Symlinked folders are not descended into.
pub(crate) fn list(dir: &Path, max: usize) -> (Vec<String>, usize) {
    let mut all = Vec::new();
    walk(dir, "", 0, &mut all);
    all.retain(|f| f != "SKILL.md");
    all.sort();
    let total = all.len();
    all.truncate(max);
    (all, total)
}

fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}{name}");
        match entry.file_type() {
            Ok(t) if t.is_dir() && depth + 1 < LIST_DEPTH => {
                walk(&entry.path(), &format!("{rel}/"), depth + 1, out);
            }
            Ok(t) if t.is_file() || t.is_symlink() => out.push(rel),
            _ => {}
        }
    }
}

/// Reads `requested` from `skill`'s folder into this call's budget.
pub(crate) fn read(skill: &Skill, requested: &str, ctx: &ToolCtx) -> ToolOutput {
    let name = &skill.name;
    if requested.is_empty() {
        return ToolOutput::refusal(format!(
            "`file` is empty; name a file bundled with skill `{name}`, relative to its folder"
        ));
    }
    let cannot = |e: io::Error| {
        ToolOutput::err(format!(
            "cannot read `{requested}` of skill `{name}`: {}",
            system_words(&e)
        ))
    };
    let root = match std::fs::canonicalize(&skill.dir) {
        Ok(root) => root,
        Err(e) => return cannot(e),
    };
    let resolved = match std::fs::canonicalize(root.join(requested)) {
        Ok(resolved) => resolved,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let (files, _) = list(&root, LIST_MAX);
            return ToolOutput::err(format!(
                "skill `{name}` has no file `{requested}`; its files: {}",
                if files.is_empty() {
                    "none".to_owned()
                } else {
                    files.join(", ")
                }
            ));
        }
        Err(e) => return cannot(e),
    };
    let Ok(relative) = resolved.strip_prefix(&root) else {
        return ToolOutput::refusal(format!(
            "`{requested}` resolves to {}, outside the folder of skill `{name}`; `file` names a \
             file inside it, relative to it (e.g. one the procedure mentions)",
            resolved.display()
        ));
    };
    let file = match open_beneath(&root, relative) {
        Ok(Some(file)) => file,
        Ok(None) => {
            return ToolOutput::refusal(format!(
                "`{requested}` in skill `{name}` is not a regular file (a folder, a pipe or a \
                 device); name a file"
            ));
        }
        Err(e) => return cannot(e),
    };
    let mut reader = BufReader::new(file);
    match reader.fill_buf() {
        Ok(head) if head[..head.len().min(SNIFF_BYTES)].contains(&0) => {
            return ToolOutput::refusal(format!(
                "`{requested}` in skill `{name}` is a binary file; the skill tool returns text \
                 files only"
            ));
        }
        Ok(_) => {}
        Err(e) => return cannot(e),
    }
    let mut sink = ctx.sink("skill", ctx.call_budget_bytes);
    loop {
        let chunk = match reader.fill_buf() {
            Ok([]) => break,
            Ok(chunk) => chunk,
            Err(e) => return cannot(e),
        };
        sink.push(chunk);
        let used = chunk.len();
        reader.consume(used);
    }
    ToolOutput::ok(sink.finish())
}

/// Opens `relative` beneath `root`, without blocking (a FIFO swapped in
/// is refused, not waited on). `None` when it is not a regular file.
fn open_beneath(root: &Path, relative: &Path) -> io::Result<Option<std::fs::File>> {
    let dir = Dir::open_ambient_dir(root, ambient_authority())?;
    Ok(open_regular_beneath(&dir, relative)?.ok())
}

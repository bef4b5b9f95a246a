//! `fs_edit`: replaces one exact occurrence of a string in a file.

use async_trait::async_trait;
use mecha_core::{ArgKind, Capabilities, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

use crate::args::{jail_refusal, required_str};
use crate::atomic::replace_file;
use crate::blocking::off_thread;
use crate::fs_read::read_to_string_beneath;
use crate::regular;

/// Files larger than this are edited with shell tools, not held in memory.
const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

pub struct FsEdit;

#[async_trait]
impl Tool for FsEdit {
    fn name(&self) -> &str {
        "fs_edit"
    }

    fn description(&self) -> &str {
        "Replace one exact occurrence of `old` with `new` in a file. `old` must appear exactly \
         once, matching whitespace and indentation; include surrounding lines to make it unique. \
         Read the file first."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace"},
                "old": {"type": "string", "description": "The exact text to replace; must occur once"},
                "new": {"type": "string", "description": "The replacement text"}
            },
            "required": ["path", "old", "new"],
            "additionalProperties": false
        })
    }

    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        &[("path", ArgKind::WritePath)]
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            destructive: true,
            ..Capabilities::NONE
        }
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        off_thread(self.name(), input, ctx, edit).await
    }
}

fn edit(input: &Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolOutput> {
    let requested = required_str(input, "path")?;
    let old = required_str(input, "old")?;
    let new = required_str(input, "new")?;
    if let Some(refusal) = refuse_pair(old, new) {
        return Err(ToolOutput::err(refusal));
    }
    let target = ctx.resolve_in_workspace(requested).map_err(jail_refusal)?;
    let size = target
        .dir()
        .metadata(target.relative())
        .map_or(0, |m| m.len());
    if size > MAX_EDIT_BYTES {
        return Err(ToolOutput::err(format!(
            "{requested} is {size} bytes, more than fs_edit handles ({MAX_EDIT_BYTES}); \
             edit it with shell tools such as sed"
        )));
    }
    let text =
        read_to_string_beneath(&target).map_err(|e| regular::failure("read", requested, e))?;
    let updated = replace_unique(&text, old, new).map_err(ToolOutput::err)?;
    replace_file(&target, updated.as_bytes())
        .map_err(|e| regular::failure("write", requested, e))?;
    let line = text[..text.find(old).unwrap_or(0)].matches('\n').count() + 1;
    Ok(ToolOutput::ok(format!("edited {requested} at line {line}")))
}

/// Why `old` → `new` is no edit at all, whatever the file holds.
fn refuse_pair(old: &str, new: &str) -> Option<&'static str> {
    if old.is_empty() {
        Some("`old` is empty; give the exact text to replace, or use fs_write for a new file")
    } else if old == new {
        Some("`old` and `new` are identical; nothing would change")
    } else {
        None
    }
}

/// The file's text after the edit fs_edit would make, or its refusal: what
/// an approval question shows before the edit is allowed.
pub fn apply_edit(text: &str, old: &str, new: &str) -> Result<String, String> {
    match refuse_pair(old, new) {
        Some(refusal) => Err(refusal.to_owned()),
        None => replace_unique(text, old, new),
    }
}

/// `text` with its single occurrence of `old` replaced; zero or several
/// occurrences are refused rather than guessed at.
pub(crate) fn replace_unique(text: &str, old: &str, new: &str) -> Result<String, String> {
    match occurrences(text, old) {
        1 => Ok(text.replacen(old, new, 1)),
        0 => Err(
            "`old` does not appear in the file; read it again and copy the exact text, \
                  including whitespace and indentation"
                .to_owned(),
        ),
        n => Err(format!(
            "`old` appears {n} times; include more surrounding context to make it unique"
        )),
    }
}

/// How many places `old` starts at, overlapping ones included: in `aaa`,
/// `aa` is ambiguous, not unique.
fn occurrences(text: &str, old: &str) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(pos) = text[from..].find(old) {
        count += 1;
        let start = from + pos;
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::replace_unique;

    #[test]
    fn overlapping_matches_are_ambiguous() {
        let err = replace_unique("aaa", "aa", "x").unwrap_err();
        assert!(err.contains("appears 2 times"), "{err}");
    }

    #[test]
    fn one_match_is_replaced() {
        assert_eq!(replace_unique("a b c", "b", "x").unwrap(), "a x c");
    }

    #[test]
    fn zero_matches_are_refused() {
        let err = replace_unique("a b c", "z", "x").unwrap_err();
        assert!(err.contains("does not appear"), "{err}");
    }

    #[test]
    fn several_matches_are_refused_with_the_count() {
        let err = replace_unique("b b b", "b", "x").unwrap_err();
        assert_eq!(
            err,
            "`old` appears 3 times; include more surrounding context to make it unique"
        );
    }
}

//! What a call will do, in the terms a person checks: the command, the URL,
//! or the change to a file as a diff of the file before and after.

use std::time::Duration;

use mecha_core::ToolCtx;
use serde_json::Value;
use similar::TextDiff;

use super::current::{Current, current};

/// How long a diff may search for the smallest edit script; past it, a
/// larger but still exact diff is shown, so a huge change cannot stall the
/// question.
const DIFF_TIMEOUT: Duration = Duration::from_secs(1);

/// The whole preview, however long: the caller pages it.
pub fn preview(tool: &str, input: &Value, ctx: &ToolCtx) -> String {
    let text = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or("");
    match tool {
        "shell" => format!("  $ {}\n", text("command")),
        "http_fetch" => format!("  GET {}\n", text("url")),
        "fs_edit" => edit(text("path"), text("old"), text("new"), ctx),
        "fs_write" => write(text("path"), text("content"), ctx),
        _ => serde_json::to_string_pretty(input).unwrap_or_default() + "\n",
    }
}

/// The file as fs_edit would leave it, diffed against the file now; if the
/// edit would be refused, the refusal and the requested replacement.
fn edit(path: &str, old: &str, new: &str, ctx: &ToolCtx) -> String {
    let note = match current(ctx, path) {
        Current::Text(before) => match mecha_tools::apply_edit(&before, old, new) {
            Ok(after) => return diff(&format!("a/{path}"), &format!("b/{path}"), &before, &after),
            Err(refusal) => format!("  fs_edit will refuse this edit: {refusal}\n"),
        },
        Current::Absent => format!("  fs_edit will refuse this edit: {path} does not exist\n"),
        Current::Unshown(why) => format!("  {path} {why}; the edit replaces:\n"),
    };
    note + &diff("old", "new", old, new)
}

/// The file after the write, diffed against the file now.
fn write(path: &str, content: &str, ctx: &ToolCtx) -> String {
    let (label, before, note) = match current(ctx, path) {
        Current::Text(before) if before == content => {
            return format!("  {path} already holds exactly this; nothing would change\n");
        }
        Current::Text(before) => (format!("a/{path}"), before, String::new()),
        Current::Absent => (
            "/dev/null".to_owned(),
            String::new(),
            format!("  new file {path}\n"),
        ),
        Current::Unshown(why) => (
            "(current contents)".to_owned(),
            String::new(),
            format!("  {path} {why}; it would be replaced with:\n"),
        ),
    };
    note + &diff(&label, &format!("b/{path}"), &before, content)
}

fn diff(old_label: &str, new_label: &str, old: &str, new: &str) -> String {
    TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolCtx) {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        let ctx = ToolCtx::new(dir.path(), 10_000).unwrap();
        (dir, ctx)
    }

    /// The change as it lands in the file: the right line number, and no
    /// "no newline" claim about a file that ends in one.
    #[test]
    fn an_edit_is_shown_as_the_change_to_the_file() {
        let (_dir, ctx) = setup(&[("a.txt", "hello\nworld\n")]);
        let shown = preview(
            "fs_edit",
            &json!({"path": "a.txt", "old": "world", "new": "there"}),
            &ctx,
        );
        assert_eq!(
            shown,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n"
        );
    }

    #[test]
    fn an_edit_that_would_be_refused_says_so() {
        let (_dir, ctx) = setup(&[("a.txt", "x x\n")]);
        let missing = preview(
            "fs_edit",
            &json!({"path": "a.txt", "old": "y", "new": "z"}),
            &ctx,
        );
        assert!(
            missing.starts_with("  fs_edit will refuse this edit: `old` does not appear"),
            "{missing}"
        );
        let twice = preview(
            "fs_edit",
            &json!({"path": "a.txt", "old": "x", "new": "z"}),
            &ctx,
        );
        assert!(twice.contains("`old` appears 2 times"), "{twice}");
        let absent = preview(
            "fs_edit",
            &json!({"path": "nope.txt", "old": "x", "new": "z"}),
            &ctx,
        );
        assert!(absent.contains("nope.txt does not exist"), "{absent}");
    }

    #[test]
    fn a_write_shows_every_line_of_the_change() {
        let (_dir, ctx) = setup(&[]);
        let content: String = (1..=500).map(|i| format!("line {i}\n")).collect();
        let shown = preview(
            "fs_write",
            &json!({"path": "new.txt", "content": content}),
            &ctx,
        );
        assert!(shown.starts_with("  new file new.txt\n"), "{shown}");
        assert!(shown.contains("+line 500\n"), "{shown}");
        assert_eq!(shown.matches("\n+line ").count(), 500);
    }

    #[test]
    fn a_write_over_a_file_too_large_to_diff_gives_its_size_and_the_new_content() {
        let (dir, ctx) = setup(&[]);
        let file = std::fs::File::create(dir.path().join("big")).unwrap();
        file.set_len(super::super::current::MAX_DIFF_BYTES * 3)
            .unwrap();
        let shown = preview(
            "fs_write",
            &json!({"path": "big", "content": "small\n"}),
            &ctx,
        );
        assert!(
            shown.contains("big is 3145728 bytes, too large to diff"),
            "{shown}"
        );
        assert!(shown.contains("+small"), "{shown}");
    }
}

//! What a line typed at the prompt asks besides a prompt or a slash
//! command, for chat and the TUI alike: `!command` runs a shell command as
//! the user (the `shell` tool, so confined when a sandbox is configured),
//! and each `@path` mention attaches a workspace file (`fs_read`) or
//! directory listing (`fs_list`) to the prompt. mecha-agent's `run_typed`
//! puts both through the gate with the user's yes and keeps what ran for
//! the model's next turn; this module only names the tools and judges the
//! mentions.
//!
//! A mention is `@` at the start of a word, naming something that exists
//! (so `me@example.com` and `@alice` stay text). One that exists but that
//! the jail refuses, outside the workspace or in mecha's own files (or a
//! git directory), stops the prompt: nothing is sent, and the line says
//! why, so no file is read or withheld behind the user's back.

use std::path::Path;

use mecha_agent::{Agent, EventSink, Session, TypedCall};
use mecha_core::{JailError, ToolCtx, ToolOutput};
use serde_json::json;

/// The tool a `!command` runs and the one an `@path` reads with; both are
/// the built-ins of those names, as the model would call them.
const SHELL: &str = "shell";
const READ: &str = "fs_read";
const LIST: &str = "fs_list";

/// The command of a `!command` line, if the line is one.
pub fn shell_command(line: &str) -> Option<&str> {
    line.trim_start()
        .strip_prefix('!')
        .map(str::trim)
        .filter(|c| !c.is_empty())
}

/// Runs a `!command` as the user; what the front end shows of it (the
/// output, or why it did not run). Its output goes with the next prompt.
pub async fn run_shell(
    agent: &Agent,
    session: &mut Session,
    command: &str,
    events: &dyn EventSink,
) -> String {
    if !agent.tools().iter().any(|t| t.name() == SHELL) {
        return format!(
            "!command runs the `{SHELL}` tool, which this run does not have ([tools] or --tool \
             left it out)"
        );
    }
    let call = TypedCall {
        tool: SHELL.to_owned(),
        input: json!({ "command": command }),
        label: format!(
            "the user ran `{command}` at the prompt themselves; its output, which they saw, \
             follows"
        ),
    };
    let ran = agent.run_typed(session, &[call], events).await;
    agent.journal_attached(session);
    match ran.into_iter().next() {
        Some(Ok(output)) => shown(&output),
        Some(Err(refusal)) => format!("!{command} did not run: {refusal}"),
        None => String::new(),
    }
}

/// What the screen shows of a command's output: it whole, as the model
/// gets it (the spill marker says where the rest is).
fn shown(output: &ToolOutput) -> String {
    let text = output.content.trim_end();
    if text.is_empty() {
        "(no output)".to_owned()
    } else {
        text.to_owned()
    }
}

/// Attaches every `@path` mention of `prompt` to the next prompt, read
/// through the jail within one turn's budget. `Err`: the line saying why
/// the prompt must not go (a refused mention, or a read that failed).
pub async fn attach_mentions(
    agent: &Agent,
    session: &mut Session,
    ctx: &ToolCtx,
    prompt: &str,
    events: &dyn EventSink,
) -> Result<(), String> {
    let mut calls = Vec::new();
    for path in mentions(prompt, ctx.workspace()) {
        let resolved = ctx
            .resolve_in_workspace(path)
            .map_err(|e| refused(path, &e))?;
        let relative = resolved.relative();
        let is_dir = relative.as_os_str().is_empty()
            || resolved.dir().metadata(relative).is_ok_and(|m| m.is_dir());
        let tool = if is_dir { LIST } else { READ };
        calls.push(TypedCall {
            tool: tool.to_owned(),
            input: json!({ "path": path }),
            label: format!("the user attached `{path}` to this prompt (`{tool}`'s output)"),
        });
    }
    if calls.is_empty() {
        return Ok(());
    }
    let before = session.attached.len();
    let ran = agent.run_typed(session, &calls, events).await;
    for (call, result) in calls.iter().zip(ran) {
        let failed = match result {
            Ok(output) if !output.is_error => continue,
            Ok(output) => output.content,
            Err(refusal) => refusal,
        };
        // A prompt about a file the model never got would be answered
        // from a guess: it waits for the user instead (what a `!command`
        // left waiting still goes with the next one).
        session.attached.truncate(before);
        return Err(format!(
            "@{} was not attached, so nothing was sent: {failed}",
            call.input["path"].as_str().unwrap_or_default()
        ));
    }
    Ok(())
}

fn refused(path: &str, error: &JailError) -> String {
    format!(
        "@{path} was not attached ({}), so nothing was sent: {error}",
        error.summary()
    )
}

/// The `@` mentions in `prompt`: words that start with `@` and name
/// something that exists, relative to `workspace` or absolute; a word's
/// trailing punctuation is not part of it unless the path has it.
pub fn mentions<'a>(prompt: &'a str, workspace: &Path) -> Vec<&'a str> {
    let mut found = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let bare = path.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '"', '\'']);
        let exists = |p: &str| !p.is_empty() && workspace.join(p).symlink_metadata().is_ok();
        let path = if exists(path) { path } else { bare };
        if exists(path) && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bang_line_is_a_command_and_an_empty_one_is_not() {
        assert_eq!(shell_command("!ls -la"), Some("ls -la"));
        assert_eq!(shell_command("  ! git status "), Some("git status"));
        assert_eq!(shell_command("!"), None);
        assert_eq!(shell_command("say !this"), None);
    }

    #[test]
    fn mentions_are_words_that_name_something_there() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("notes.txt"), "n").unwrap();
        std::fs::create_dir(ws.path().join("src")).unwrap();
        let found = mentions(
            "read @notes.txt, then @src and @missing; mail me@example.com @notes.txt",
            ws.path(),
        );
        assert_eq!(found, ["notes.txt", "src"]);
        assert_eq!(mentions("@/etc/hostname", ws.path()).len(), {
            usize::from(Path::new("/etc/hostname").exists())
        });
    }
}

//! Ctrl-G in the TUI: the prompt written in the user's own editor
//! (`$VISUAL`, else `$EDITOR`, as git picks one). The prompt's text goes
//! into a private temporary file, the screen steps aside while the editor
//! runs on it, and what the file holds when the editor exits well becomes
//! the prompt. Anything else (no editor set, one that cannot start or
//! fails) leaves the prompt as it was and says why in one line.
//!
//! The editor is the user's own program at the user's own terminal, so it
//! runs in mecha's process group, in the terminal's foreground where it
//! can read keys, rather than through `mecha_core::spawn_group`; mecha
//! waits for it, so it does not outlive the screen.

use std::ffi::OsString;
use std::io::Write;
use std::process::{Command, ExitStatus};

use crate::raw_screen::{self, KeyReader};

/// Edits `text` in the user's editor, the screen suspended meanwhile.
pub fn edit(keys: &KeyReader, text: &str) -> Result<String, String> {
    let editor = chosen(std::env::var_os("VISUAL"), std::env::var_os("EDITOR"))?;
    let unchanged = "the prompt is as it was";
    let mut file = tempfile::Builder::new()
        .prefix("mecha-prompt-")
        .suffix(".md")
        .tempfile()
        .map_err(|e| format!("cannot make a file for the editor ({e}); {unchanged}"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write the prompt for the editor ({e}); {unchanged}"))?;
    // As git runs it: the shell splits `code --wait` and the like.
    let ran = raw_screen::suspended(keys, || {
        Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("mecha-editor")
            .arg(file.path())
            .status()
    })
    .map_err(|e| format!("the terminal UI failed to come back from the editor: {e}"))?;
    match ran {
        Ok(status) if status.success() => {}
        Ok(status) => return Err(format!("{}; {unchanged}", failed(&editor, status))),
        Err(e) => {
            return Err(format!(
                "cannot run the editor `{editor}`: {e}; {unchanged}"
            ));
        }
    }
    let edited = std::fs::read_to_string(file.path())
        .map_err(|e| format!("cannot read back what the editor wrote ({e}); {unchanged}"))?;
    // Editors end a file with a line break that no prompt means.
    let edited = edited.strip_suffix('\n').unwrap_or(&edited);
    Ok(edited.strip_suffix('\r').unwrap_or(edited).to_owned())
}

/// The editor to run: `$VISUAL`, else `$EDITOR`, whichever is set and not
/// empty.
fn chosen(visual: Option<OsString>, editor: Option<OsString>) -> Result<String, String> {
    [visual, editor]
        .into_iter()
        .flatten()
        .map(|e| e.to_string_lossy().trim().to_owned())
        .find(|e| !e.is_empty())
        .ok_or_else(|| {
            "Ctrl-G opens the prompt in your editor, and none is set: set $VISUAL or $EDITOR \
             (e.g. `export EDITOR=vim`); the prompt is as it was"
                .to_owned()
        })
}

/// Why the editor's run gave no prompt.
fn failed(editor: &str, status: ExitStatus) -> String {
    match status.code() {
        // The shell's word for a program it could not find.
        Some(127) => format!("the editor `{editor}` was not found"),
        _ => format!("the editor `{editor}` failed ({status})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visual_comes_before_editor_and_an_empty_one_does_not_count() {
        let some = |s: &str| Some(OsString::from(s));
        assert_eq!(
            chosen(some("code --wait"), some("vi")).unwrap(),
            "code --wait"
        );
        assert_eq!(chosen(some(" "), some("vi")).unwrap(), "vi");
        let none = chosen(None, some("")).unwrap_err();
        assert!(none.contains("set $VISUAL or $EDITOR"), "{none}");
    }
}

//! The prompt's own keys besides editing: Shift-Tab cycles the permission
//! mode, Tab completes a `/command` or an `@path`. What either has to say
//! (the choices, or why the mode cannot change) shows under the prompt
//! until the next key.

use crossterm::event::{KeyCode, KeyEvent};

use super::App;

impl App {
    /// Handles `key` if it is one of these; whether it was.
    pub(super) fn prompt_key(&mut self, key: KeyEvent) -> bool {
        self.said = None;
        match key.code {
            KeyCode::BackTab => {
                self.said = crate::mode::cycle(self.info.mode.as_ref()).err();
                true
            }
            KeyCode::Tab => {
                if let Some(completion) = &self.completion {
                    self.said = completion.complete(&mut self.editor);
                }
                true
            }
            _ => false,
        }
    }
}

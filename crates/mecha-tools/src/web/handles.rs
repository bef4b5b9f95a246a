//! The results `web_search` has returned in this session, by handle.
//!
//! A handle is the number printed beside a result. Numbers run on across
//! searches, so an old handle keeps meaning the same page; they are saved
//! with the session (through `web_search`'s saved state) and live in the
//! tool rather than in messages, so a resumed or compacted session can
//! still open them.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::Hit;

#[derive(Debug, Clone, Default)]
pub struct Handles {
    hits: Arc<Mutex<Vec<Hit>>>,
}

impl Handles {
    /// Adds `hits` and returns the handle of the first.
    pub fn add(&self, hits: &[Hit]) -> usize {
        let mut all = self.lock();
        let first = all.len() + 1;
        all.extend_from_slice(hits);
        first
    }

    /// The result behind handle `n`, if this session's searches returned one.
    pub fn get(&self, n: usize) -> Option<Hit> {
        let all = self.lock();
        n.checked_sub(1).and_then(|i| all.get(i)).cloned()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every handle so far, for the session to save.
    pub fn saved(&self) -> Option<Value> {
        let all = self.lock();
        if all.is_empty() {
            return None;
        }
        let bare: Vec<Hit> = all
            .iter()
            .map(|h| Hit {
                snippet: String::new(),
                ..h.clone()
            })
            .collect();
        serde_json::to_value(bare).ok()
    }

    /// Takes back what [`saved`](Self::saved) returned in an earlier run.
    pub fn restore(&self, state: Value) -> Result<(), String> {
        let hits: Vec<Hit> = serde_json::from_value(state).map_err(|e| {
            format!(
                "web_search's saved results could not be read ({e}); search again to get new \
                 handles"
            )
        })?;
        *self.lock() = hits;
        Ok(())
    }

    /// What the model keeps after a compaction: that the handles still
    /// open, and which numbers exist. Numbers only: a title or a URL is a
    /// stranger's text, and the carried message is mecha's, not marked as
    /// outside content, so none of it may travel there.
    pub fn carried(&self) -> Option<String> {
        match self.len() {
            0 => None,
            n => Some(format!(
                "web_search has returned results [1] to [{n}] in this session; web_open still \
                 opens any of them by its number."
            )),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Hit>> {
        // A panic while holding the lock leaves the list as it was: still
        // a list of valid hits.
        self.hits.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn hit(n: u32) -> Hit {
        Hit {
            title: format!("t{n}"),
            url: format!("https://example.org/{n}").parse().unwrap(),
            snippet: "s".into(),
        }
    }

    #[test]
    fn handles_run_on_across_searches_and_survive_a_save() {
        let handles = Handles::default();
        assert_eq!(handles.add(&[hit(1), hit(2)]), 1);
        assert_eq!(handles.add(&[hit(3)]), 3);
        assert_eq!(handles.get(3).unwrap().title, "t3");
        assert_eq!(handles.get(0), None);
        assert_eq!(handles.get(4), None);
        let resumed = Handles::default();
        resumed.restore(handles.saved().unwrap()).unwrap();
        assert_eq!(
            resumed.get(2).unwrap().url.as_str(),
            "https://example.org/2"
        );
        let carried = resumed.carried().unwrap();
        assert!(carried.contains("results [1] to [3]"), "{carried}");
        assert!(
            !carried.contains("t3") && !carried.contains("example.org"),
            "{carried}"
        );
        assert_eq!(Handles::default().carried(), None);
        assert!(resumed.restore(serde_json::json!({"x": 1})).is_err());
    }
}

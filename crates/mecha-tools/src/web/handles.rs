//! The results `web_search` has returned in this session, by handle.
//!
//! A handle is the number printed beside a result. Numbers run on across
//! searches, so an old handle keeps meaning the same page; they are saved
//! with the session (through `web_search`'s saved state) and carried over
//! a compaction, so a resumed or compacted session can still open them.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::Hit;

/// How many of the latest handles a compaction carries into the rebuilt
/// conversation; older ones still open, they are just not listed again.
const CARRIED_HANDLES: usize = 20;

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

    /// The latest handles, for the model to keep after a compaction.
    pub fn carried(&self) -> Option<String> {
        let all = self.lock();
        if all.is_empty() {
            return None;
        }
        let skip = all.len().saturating_sub(CARRIED_HANDLES);
        let mut out = String::from(
            "Search results so far (open one with web_open and its handle; older handles \
             still work):\n",
        );
        for (i, hit) in all.iter().enumerate().skip(skip) {
            out.push_str(&format!("[{}] {} — {}\n", i + 1, hit.title, hit.url));
        }
        Some(out)
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
        assert!(
            resumed
                .carried()
                .unwrap()
                .contains("[3] t3 — https://example.org/3")
        );
        assert!(resumed.restore(serde_json::json!({"x": 1})).is_err());
    }
}

//! A write cannot be raced into mecha's home: the protected check judges
//! the canonical path, and a confined command beside the call can swap a
//! directory of that path for a symlink into the home between the check
//! and the open (`renameat2` with `RENAME_EXCHANGE`, atomically, over and
//! over). The write must land where it was judged, or fail; never in the
//! home.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mecha_core::{Tool, ToolCtx};
use mecha_tools::{FsEdit, FsWrite};
use rustix::fs::{CWD, RenameFlags, renameat_with};
use serde_json::json;

/// How many calls race the swapper. Without the guard about one write in
/// eighty landed in the home, so this many make a landing all but certain.
const ROUNDS: usize = 1500;

struct Racer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Racer {
    /// Swaps `dir` and `link` (a symlink) back and forth until stopped,
    /// holding each state for a varying few microseconds: swapping flat
    /// out, on a loaded machine every call met the link and none got
    /// through, so the test could not tell a race run from none; with the
    /// pauses calls land in either state and across the swaps.
    fn start(dir: PathBuf, link: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut swaps = 0;
            let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
            while !flag.load(Ordering::Relaxed) {
                renameat_with(CWD, &dir, CWD, &link, RenameFlags::EXCHANGE).unwrap();
                swaps += 1;
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let hold = std::time::Duration::from_micros(seed % 40);
                let since = std::time::Instant::now();
                while since.elapsed() < hold {
                    std::hint::spin_loop();
                }
            }
            swaps
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

/// A workspace holding a protected home `.mecha`, a real directory `sub`
/// and a symlink `swap` to the home for the racer to exchange with it.
fn workspace() -> (tempfile::TempDir, PathBuf, ToolCtx) {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".mecha")).unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    // Relative, as a planted link would be: the jail's handle refuses an
    // absolute one on its own.
    std::os::unix::fs::symlink(".mecha", ws.join("swap")).unwrap();
    let ctx = ToolCtx::new(&ws, 64 * 1024)
        .unwrap()
        .protecting(&ws.join(".mecha"))
        .unwrap();
    (dir, ws, ctx)
}

fn home_entries(ws: &Path) -> Vec<String> {
    std::fs::read_dir(ws.join(".mecha"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_write_raced_by_a_symlink_swap_never_lands_in_the_home() {
    let (_dir, ws, ctx) = workspace();
    let racer = Racer::start(ws.join("sub"), ws.join("swap"));
    let mut written = 0;
    for round in 0..ROUNDS {
        let input = json!({"path": format!("sub/planted-{round}.txt"), "content": "x"});
        let out = FsWrite.call(input, &ctx).await.unwrap();
        if !out.is_error {
            written += 1;
        }
    }
    let swaps = racer.finish();
    assert_eq!(
        home_entries(&ws),
        Vec::<String>::new(),
        "a write landed in the protected home ({written} writes, {swaps} swaps)"
    );
    assert!(
        written > 0,
        "no write got through at all: the race was never run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_edit_raced_by_a_symlink_swap_never_changes_the_home() {
    let (_dir, ws, ctx) = workspace();
    std::fs::write(ws.join("sub/notes.txt"), "old").unwrap();
    std::fs::write(ws.join(".mecha/notes.txt"), "old").unwrap();
    let racer = Racer::start(ws.join("sub"), ws.join("swap"));
    let mut edited = 0;
    for _ in 0..ROUNDS {
        let edit = json!({"path": "sub/notes.txt", "old": "old", "new": "old!"});
        if !FsEdit.call(edit, &ctx).await.unwrap().is_error {
            edited += 1;
            // Back to "old" for the next round, through the same race.
            let undo = json!({"path": "sub/notes.txt", "old": "old!", "new": "old"});
            FsEdit.call(undo, &ctx).await.unwrap();
        }
    }
    let swaps = racer.finish();
    assert_eq!(
        std::fs::read_to_string(ws.join(".mecha/notes.txt")).unwrap(),
        "old",
        "an edit landed in the protected home ({edited} edits, {swaps} swaps)"
    );
    assert_eq!(home_entries(&ws), vec!["notes.txt".to_owned()]);
    assert!(
        edited > 0,
        "no edit got through at all: the race was never run"
    );
}

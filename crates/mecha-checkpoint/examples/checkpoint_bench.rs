//! The cost of an incremental checkpoint: a workspace of 10,000 files
//! (a few KB each, in 100 directories), snapshotted once, then ten
//! files changed and snapshotted again, round after round. Prints the
//! median and the 95th percentile of the incremental snapshot, and how
//! much each one added to the store, and the CPU time each took (all
//! threads): on a machine other work shares, the wall time says how busy
//! it was as much as what a checkpoint costs. Run with
//! `bash bench/checkpoint.sh`.

use std::fs;
use std::path::Path;
use std::time::Instant;

use mecha_checkpoint::{Limits, Store, WorkspaceCheckpoints};
use mecha_core::Checkpointer;

const FILES: usize = 10_000;
const CHANGED_PER_ROUND: usize = 10;
const ROUNDS: usize = 50;
const TARGET_MS: f64 = 50.0;

/// The CPU time this process has used, all threads, in milliseconds.
fn cpu_ms() -> f64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    now.tv_sec as f64 * 1e3 + now.tv_nsec as f64 / 1e6
}

fn store_bytes(store: &Store) -> u64 {
    store.size().0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    for n in 0..FILES {
        let sub = ws.join(format!("dir{:03}", n % 100));
        fs::create_dir_all(&sub)?;
        let body = format!("// file {n}\n{}", "fn step() { let x = 1; }\n".repeat(80));
        fs::write(sub.join(format!("file{n:05}.rs")), body)?;
    }
    let store = Store::new(&home);
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), &ws, Limits::default());
    let started = Instant::now();
    checkpoints.snapshot()?;
    let first_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut times = Vec::with_capacity(ROUNDS);
    let mut added = Vec::with_capacity(ROUNDS);
    let mut cpu = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        for k in 0..CHANGED_PER_ROUND {
            let n = (round * CHANGED_PER_ROUND + k) * 97 % FILES;
            let path = ws
                .join(format!("dir{:03}", n % 100))
                .join(format!("file{n:05}.rs"));
            append(&path, &format!("// round {round}\n"))?;
        }
        let before = store_bytes(&store);
        let started = Instant::now();
        let cpu_before = cpu_ms();
        // As the loop takes it.
        let changed = checkpoints.checkpoint()?.changed;
        times.push(started.elapsed().as_secs_f64() * 1e3);
        cpu.push(cpu_ms() - cpu_before);
        added.push(store_bytes(&store) - before);
        if changed.len() != CHANGED_PER_ROUND {
            return Err(format!("round {round}: {} changes seen", changed.len()).into());
        }
    }
    times.sort_by(f64::total_cmp);
    let median = times[ROUNDS / 2];
    let p95 = times[ROUNDS * 95 / 100];
    added.sort_unstable();
    cpu.sort_by(f64::total_cmp);
    println!("first checkpoint of {FILES} files: {first_ms:.1} ms");
    println!(
        "incremental checkpoint ({CHANGED_PER_ROUND} files changed): median {median:.1} ms, \
         p95 {p95:.1} ms (target <= {TARGET_MS} ms: {})",
        if p95 <= TARGET_MS { "met" } else { "MISSED" }
    );
    println!(
        "CPU time per incremental checkpoint (all threads): median {:.1} ms, p95 {:.1} ms",
        cpu[ROUNDS / 2],
        cpu[ROUNDS * 95 / 100]
    );
    println!(
        "store growth per incremental checkpoint: median {} bytes (the changed files and their directories' listings)",
        added[ROUNDS / 2]
    );
    Ok(())
}

fn append(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    fs::OpenOptions::new()
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}

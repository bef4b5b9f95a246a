#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What the release build's panic hook does before it aborts: with every
//! guard still alive (an abort runs no destructor), the process groups die
//! and the spill directories go.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use mecha_core::{SpillDir, clean_up_after_panic, spawn_group};
use tokio::process::Command;

#[tokio::test]
async fn the_panic_clean_up_kills_groups_and_removes_spill_dirs_under_live_guards() {
    let mut cmd = Command::new("sh");
    // The grandchild shares the group: the whole group dies, not only sh.
    cmd.arg("-c").arg("sleep 300 & echo $!; wait");
    cmd.stdout(std::process::Stdio::piped());
    let (mut child, group) = spawn_group(&mut cmd).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    {
        use tokio::io::AsyncBufReadExt;
        let mut reader = tokio::io::BufReader::new(&mut stdout);
        reader.read_line(&mut line).await.unwrap();
    }
    let grandchild: u32 = line.trim().parse().unwrap();
    let spill = SpillDir::new(mecha_core::DEFAULT_SPILL_MAX_BYTES);
    let dir = spill.path().unwrap().to_owned();
    assert!(dir.is_dir());

    clean_up_after_panic();

    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("the group leader was not killed")
        .unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
    let gone = || {
        std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
            .map_or(true, |stat| stat.contains(") Z "))
    };
    for _ in 0..100 {
        if gone() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone(), "the group's other process survived");
    assert!(!dir.exists(), "the spill directory survived");
    drop(group);
}

//! Running a file tool's body on tokio's blocking pool.
//!
//! The file tools' I/O is synchronous (the jail's canonicalizing, cap-std
//! opens, reads, fsync). Done inside the async `call`, it would hold the
//! runtime thread for as long as the disk takes, so one turn's calls would
//! run one after another and everything else the loop waits on (MCP servers,
//! fetches, a shell's output) would stall with them.

use anyhow::anyhow;
use mecha_core::{ToolCtx, ToolOutput};
use serde_json::Value;

/// A file tool's synchronous body. A refusal is a result too, so both sides
/// are `ToolOutput`.
pub(crate) type Body = fn(&Value, &ToolCtx) -> Result<ToolOutput, ToolOutput>;

/// Runs `body` on the blocking pool and waits for it without holding the
/// async thread.
///
/// A `JoinError` becomes `Err`, which ends the run: it means the body
/// panicked (a bug in mecha, not something the call's arguments can fix;
/// a refusal would invite the model to repeat the call that crashed) or the
/// runtime is shutting down, when there is no run left to answer.
pub(crate) async fn off_thread(
    tool: &str,
    input: Value,
    ctx: &ToolCtx,
    body: Body,
) -> anyhow::Result<ToolOutput> {
    let ctx = ctx.clone();
    tokio::task::spawn_blocking(move || body(&input, &ctx).unwrap_or_else(|refusal| refusal))
        .await
        .map_err(|e| anyhow!("`{tool}` stopped without a result ({e}); this is a bug in mecha"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    /// Two bodies that each wait for the other to start. Run in turn on the
    /// one async thread, the first would wait alone until its deadline; run
    /// off it, both are in progress at once and meet.
    #[test]
    fn two_bodies_are_in_progress_at_once() {
        static STARTED: Mutex<u32> = Mutex::new(0);
        static CHANGED: Condvar = Condvar::new();
        fn meet(_: &Value, _: &ToolCtx) -> Result<ToolOutput, ToolOutput> {
            let mut started = STARTED.lock().unwrap();
            *started += 1;
            CHANGED.notify_all();
            let (started, wait) = CHANGED
                .wait_timeout_while(started, Duration::from_secs(10), |n| *n < 2)
                .unwrap();
            if wait.timed_out() {
                return Err(ToolOutput::err(format!("alone: {} started", *started)));
            }
            Ok(ToolOutput::ok("met"))
        }
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 1 << 16).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (a, b) = rt.block_on(async {
            futures::join!(
                off_thread("a", json!({}), &ctx, meet),
                off_thread("b", json!({}), &ctx, meet)
            )
        });
        assert_eq!(a.unwrap().content, "met");
        assert_eq!(b.unwrap().content, "met");
    }

    #[test]
    fn a_panicking_body_ends_the_run() {
        fn boom(_: &Value, _: &ToolCtx) -> Result<ToolOutput, ToolOutput> {
            panic!("boom")
        }
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 1 << 16).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = rt
            .block_on(off_thread("fs_read", json!({}), &ctx, boom))
            .unwrap_err();
        assert!(err.to_string().contains("`fs_read` stopped"), "{err}");
    }
}

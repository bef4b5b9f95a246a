//! Which calls of one turn must wait for which: models put dependent calls
//! in one turn (create a directory, then write into it), and running those
//! at once races. Two calls conflict when
//! - both change the same shared state ([`Tool::resource_group`]: an MCP
//!   server's), neither being read-only; or
//! - both write a path, one the same as or inside the other, as the jail
//!   resolves them (so `a/../b` and `b` are one path).
//!
//! A call waits only for the earlier calls it conflicts with, so a chain
//! runs in the model's order and everything else still overlaps. The waits
//! always point backwards, so they cannot deadlock.

use std::path::PathBuf;

use futures::channel::oneshot;
use serde_json::Value;

use crate::{ArgKind, Call, Registry, Tool, ToolCtx};

/// What one call may change that another call of the turn may also touch.
#[derive(Debug, Default)]
struct Footprint {
    /// The shared state a non-read-only call changes.
    group: Option<String>,
    /// Canonical absolute paths the call writes.
    writes: Vec<PathBuf>,
}

impl Footprint {
    fn of(tool: &dyn Tool, input: &Value, ctx: &ToolCtx) -> Self {
        let group = if tool.read_only() {
            None
        } else {
            tool.resource_group().map(str::to_owned)
        };
        let writes = tool
            .argument_kinds()
            .iter()
            .filter(|(_, kind)| *kind == ArgKind::WritePath)
            .filter_map(|(key, _)| input.get(*key).and_then(Value::as_str))
            // A path the jail refuses was refused by the gate, or the tool
            // refuses it without writing: it orders nothing.
            .filter_map(|raw| ctx.resolve_in_workspace(raw).ok())
            .map(|resolved| resolved.absolute().to_path_buf())
            .collect();
        Self { group, writes }
    }

    fn conflicts(&self, other: &Self) -> bool {
        let same_group = self.group.is_some() && self.group == other.group;
        same_group
            || self.writes.iter().any(|a| {
                other
                    .writes
                    .iter()
                    .any(|b| a.starts_with(b) || b.starts_with(a))
            })
    }
}

/// One call's place in the turn's order: what it waits for before it
/// starts, and what it releases when it ends.
#[derive(Debug, Default)]
pub(crate) struct Turnstile {
    after: Vec<oneshot::Receiver<()>>,
    before: Vec<oneshot::Sender<()>>,
}

impl Turnstile {
    /// Waits until every earlier conflicting call has ended, and returns
    /// what this call holds until it ends (dropping it, however the call
    /// ended, lets the later ones go).
    pub(crate) async fn pass(self) -> Release {
        for earlier in self.after {
            // Cancelled means the earlier call is over, which is all we wait for.
            let _ = earlier.await;
        }
        Release { _held: self.before }
    }
}

/// Held while a call runs; dropped when it ends.
pub(crate) struct Release {
    _held: Vec<oneshot::Sender<()>>,
}

/// The turnstile of each call, in call order; `None` for a call that does
/// not run (refused, or left out by the budget), which orders nothing.
pub(crate) fn turnstiles(
    registry: &Registry,
    ctx: &ToolCtx,
    calls: &[Option<&Call>],
) -> Vec<Turnstile> {
    let footprints: Vec<Option<Footprint>> = calls
        .iter()
        .map(|call| {
            let call = (*call)?;
            let tool = registry.get(&call.name)?;
            Some(Footprint::of(tool.as_ref(), &call.input, ctx))
        })
        .collect();
    let mut stiles: Vec<Turnstile> = footprints.iter().map(|_| Turnstile::default()).collect();
    for (later, theirs) in footprints.iter().enumerate() {
        let Some(theirs) = theirs else { continue };
        for (earlier, ours) in footprints[..later].iter().enumerate() {
            if ours.as_ref().is_some_and(|ours| ours.conflicts(theirs)) {
                let (done, wait) = oneshot::channel();
                stiles[earlier].before.push(done);
                stiles[later].after.push(wait);
            }
        }
    }
    stiles
}

//! A turn's progress reports, as events while its calls run: the calls
//! report from their own tasks, and the sink is the loop's to call.

use std::future::Future;
use std::pin::pin;

use futures::StreamExt;
use futures::channel::mpsc;
use futures::future::{Either, select};
use mecha_core::{ProgressSink, ToolCall, ToolCtx};

use crate::events::{Event, EventSink};

/// Runs `work` (given a context whose progress reports are collected) and
/// emits a [`Event::ToolProgress`] for each report as it comes, naming the
/// call among `calls`. Reports still queued when the work ends come out
/// before this returns, so they precede the calls' results.
pub(crate) async fn reporting<F, T>(
    ctx: &ToolCtx,
    calls: &[&ToolCall],
    events: &dyn EventSink,
    work: impl FnOnce(ToolCtx) -> F,
) -> T
where
    F: Future<Output = T>,
{
    let (tx, mut reports) = mpsc::unbounded::<(String, String)>();
    let sink = ProgressSink::new(move |id: &str, message: &str| {
        // Closed only once the turn is over, when no one is watching.
        let _ = tx.unbounded_send((id.to_owned(), message.to_owned()));
    });
    let emit = |(id, message): (String, String)| {
        let name = calls
            .iter()
            .find(|c| c.id == id)
            .map_or_else(String::new, |c| c.name.clone());
        events.emit(Event::ToolProgress { id, name, message });
    };
    let mut work = pin!(work(ctx.clone().with_progress(sink)));
    loop {
        match select(work.as_mut(), reports.next()).await {
            Either::Left((out, _)) => {
                while let Ok(report) = reports.try_recv() {
                    emit(report);
                }
                return out;
            }
            Either::Right((Some(report), _)) => emit(report),
            // Every sender is gone: nothing more to show.
            Either::Right((None, _)) => return work.await,
        }
    }
}

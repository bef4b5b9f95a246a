//! Where a running call says how far it has got, for the person watching:
//! the loop turns each report into an event for the activity line. Nothing
//! reported here reaches the model.

use std::fmt;
use std::sync::Arc;

/// What a sink calls with `(call_id, message)`.
type Report = dyn Fn(&str, &str) + Send + Sync;

/// Receives `(call_id, message)` for every progress report of a turn's
/// calls. Called from the call's task: keep it quick.
#[derive(Clone)]
pub struct ProgressSink(Arc<Report>);

impl ProgressSink {
    pub fn new(report: impl Fn(&str, &str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(report))
    }

    pub(crate) fn report(&self, call_id: &str, message: &str) {
        (self.0)(call_id, message);
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

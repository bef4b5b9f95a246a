//! mecha's side of server-to-client traffic. mecha declares no client
//! capabilities and serves none of the server-to-client requests: sampling
//! would let a server spend the user's model, roots would widen or narrow a
//! filesystem server's sandbox behind the config's back, and elicitation has
//! no one to ask in most runs. Each is answered with a JSON-RPC error at
//! once, so a server never waits on an answer that is not coming.

// Sampling and roots are deprecated in the protocol's newest revision
// (SEP-2577), but servers on 2025-06-18 still send them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mecha_core::ToolCtx;
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorCode, ErrorData, Implementation, JsonRpcMessage,
    JsonRpcNotification, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerNotification,
};
use rmcp::service::{
    NotificationContext, RequestContext, RoleClient, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::Transport;

use crate::spawn::lock;

/// What the handler tells the rest of the crate.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// The server said its tool list changed; re-list at the next turn
    /// boundary.
    pub tools_stale: AtomicBool,
}

/// The longest progress message passed on, in characters: it is one line
/// of activity, written by the server.
const MAX_PROGRESS_CHARS: usize = 200;

/// Reports kept for tokens no call has claimed yet, at most.
const MAX_EARLY: usize = 64;

/// The calls of one connection that are waiting for their result, by the
/// `progressToken` their request carried, each with the context whose
/// progress sink shows its reports.
#[derive(Debug, Default)]
pub(crate) struct ProgressRoutes(Mutex<Routes>);

#[derive(Debug, Default)]
struct Routes {
    open: HashMap<ProgressToken, ToolCtx>,
    /// rmcp picks a request's token as it sends it, so a call learns its
    /// token only after the server may have answered with a first report:
    /// the latest such report waits here for its call.
    early: HashMap<ProgressToken, String>,
}

impl ProgressRoutes {
    /// Routes reports for `token` to `ctx` until the returned guard drops.
    pub fn open(&self, token: ProgressToken, ctx: &ToolCtx) -> Route<'_> {
        let early = {
            let mut routes = lock(&self.0);
            routes.open.insert(token.clone(), ctx.clone());
            routes.early.remove(&token)
        };
        if let Some(text) = early {
            ctx.report_progress(&text);
        }
        Route {
            routes: self,
            token,
        }
    }

    fn report(&self, params: &ProgressNotificationParam) {
        let text = progress_text(params);
        let ctx = {
            let mut routes = lock(&self.0);
            let ctx = routes.open.get(&params.progress_token).cloned();
            if ctx.is_none() {
                // A report for a call that ended (or never was) is never
                // claimed: the bound keeps those from piling up.
                if routes.early.len() >= MAX_EARLY {
                    routes.early.clear();
                }
                routes
                    .early
                    .insert(params.progress_token.clone(), text.clone());
            }
            ctx
        };
        if let Some(ctx) = ctx {
            ctx.report_progress(&text);
        }
    }
}

/// Reports for one call reach its context while this lives.
pub(crate) struct Route<'a> {
    routes: &'a ProgressRoutes,
    token: ProgressToken,
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        lock(&self.routes.0).open.remove(&self.token);
    }
}

/// One progress report as a short line: the server's message, or without
/// one the numbers (`3/10`, or `3` when the total is unknown).
fn progress_text(params: &ProgressNotificationParam) -> String {
    let numbers = match params.total {
        Some(total) => format!("{}/{total}", params.progress),
        None => params.progress.to_string(),
    };
    let text = match params.message.as_deref().map(str::trim) {
        Some(message) if !message.is_empty() => message,
        _ => return numbers,
    };
    match text.char_indices().nth(MAX_PROGRESS_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

pub(crate) struct Handler {
    server: String,
    progress: Arc<ProgressRoutes>,
}

impl Handler {
    pub fn new(server: String, progress: Arc<ProgressRoutes>) -> Self {
        Self { server, progress }
    }

    fn decline(&self, what: &str) -> ErrorData {
        tracing::debug!(server = %self.server, "declined a {what} request from the server");
        ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("mecha does not serve {what} requests"),
            None,
        )
    }
}

impl ClientHandler for Handler {
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Err(self.decline("sampling/createMessage"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Err(self.decline("roots/list"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Err(self.decline("elicitation/create"))
    }

    /// rmcp itself resets the call's idle deadline on each report (see
    /// `Connection::call`); this passes the words on to the person.
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.report(&params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(
            target: "mecha_mcp::log",
            server = %self.server,
            level = ?params.level,
            "{}",
            params.data
        );
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mecha", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_06_18)
    }
}

/// The server's side of the stdio transport, recording
/// `tools/list_changed` as each message is read, in the server's order.
pub(crate) struct Watched<T> {
    inner: T,
    server: String,
    signals: Arc<Signals>,
}

impl<T> Watched<T> {
    pub fn new(inner: T, server: String, signals: Arc<Signals>) -> Self {
        Self {
            inner,
            server,
            signals,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ToolListChangedNotification(_),
            ..
        }) = &message
        {
            tracing::debug!(server = %self.server, "tools/list_changed");
            self.signals.tools_stale.store(true, Ordering::SeqCst);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn params(
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> ProgressNotificationParam {
        let mut p =
            ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(1)), progress);
        p.total = total;
        p.message = message.map(str::to_owned);
        p
    }

    #[test]
    fn a_report_is_its_message_or_its_numbers() {
        assert_eq!(progress_text(&params(3.0, Some(10.0), None)), "3/10");
        assert_eq!(progress_text(&params(0.5, None, Some("  "))), "0.5");
        assert_eq!(
            progress_text(&params(1.0, None, Some(" indexing "))),
            "indexing"
        );
        let long = "x".repeat(500);
        let shown = progress_text(&params(1.0, None, Some(&long)));
        assert_eq!(shown.chars().count(), MAX_PROGRESS_CHARS + 1);
    }
}

//! mecha's side of server-to-client traffic. mecha declares no client
//! capabilities and serves none of the server-to-client requests: sampling
//! would let a server spend the user's model, roots would widen or narrow a
//! filesystem server's sandbox behind the config's back, and elicitation has
//! no one to ask in most runs. Each is answered with a JSON-RPC error at
//! once, so a server never waits on an answer that is not coming.

// Sampling and roots are deprecated in the protocol's newest revision
// (SEP-2577), but servers on 2025-06-18 still send them.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorCode, ErrorData, Implementation, JsonRpcMessage,
    JsonRpcNotification, ListRootsResult, LoggingMessageNotificationParam, ProtocolVersion,
    ServerNotification,
};
use rmcp::service::{
    NotificationContext, RequestContext, RoleClient, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::Transport;

/// What the handler tells the rest of the crate.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// The server said its tool list changed; re-list at the next turn
    /// boundary.
    pub tools_stale: AtomicBool,
}

pub(crate) struct Handler {
    server: String,
}

impl Handler {
    pub fn new(server: String) -> Self {
        Self { server }
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

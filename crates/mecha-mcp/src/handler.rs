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
    ElicitRequestParams, ElicitResult, ErrorCode, ErrorData, Implementation, ListRootsResult,
    LoggingMessageNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

/// What the handler tells the rest of the crate.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// The server said its tool list changed; re-list at the next turn
    /// boundary.
    pub tools_stale: AtomicBool,
}

pub(crate) struct Handler {
    server: String,
    signals: Arc<Signals>,
}

impl Handler {
    pub fn new(server: String, signals: Arc<Signals>) -> Self {
        Self { server, signals }
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

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "tools/list_changed");
        self.signals.tools_stale.store(true, Ordering::SeqCst);
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

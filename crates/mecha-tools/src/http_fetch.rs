//! `http_fetch`: a guarded GET of one URL.

use std::time::Duration;

use async_trait::async_trait;
use mecha_core::{Capabilities, Egress, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

/// Limits for `http_fetch`.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// The whole request, connect to last byte.
    pub timeout: Duration,
    /// Bytes of body read at most; the rest is not downloaded.
    pub max_body_bytes: usize,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            max_body_bytes: 5 * 1024 * 1024,
        }
    }
}

pub struct HttpFetch {
    config: FetchConfig,
}

impl HttpFetch {
    pub fn new(config: FetchConfig) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for HttpFetch {
    fn name(&self) -> &str {
        "http_fetch"
    }

    fn description(&self) -> &str {
        "Fetch a URL with GET."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]})
    }

    fn read_only(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        // Read-only towards the user's data, yet a send: the query string
        // carries a payload to a host the model picks.
        Capabilities {
            private_data: false,
            untrusted_input: true,
            egress: Egress::Chosen,
            destructive: false,
        }
    }

    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let _ = &self.config;
        Ok(ToolOutput::err("http_fetch is not implemented yet"))
    }
}

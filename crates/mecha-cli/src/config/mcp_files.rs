//! The MCP servers an `mcpServers` JSON file adds (Claude Desktop's, a
//! `.mcp.json`), named by config's `mcp_files` or by `--mcp-file`.

use std::path::Path;

use mecha_mcp::McpServerConfig;

use super::{ConfigError, ConfiguredServer, Settings};

impl Settings {
    /// Adds the servers of an `mcpServers` JSON file; `via` says what named
    /// it (a config file, or --mcp-file). Entries mecha cannot run become
    /// warnings, never silent omissions.
    pub(super) fn import_mcp_file(&mut self, file: &Path, via: &str) -> Result<(), ConfigError> {
        let imported =
            mecha_mcp::read_mcp_servers_json(file).map_err(|e| ConfigError::Invalid {
                path: e.path.clone(),
                message: format!("{} (named by {via})", e.message),
            })?;
        for skipped in imported.skipped {
            self.warnings.push(format!(
                "MCP server `{}` in {} is skipped: {}",
                skipped.name,
                file.display(),
                skipped.reason
            ));
        }
        self.mcp
            .extend(imported.servers.into_iter().map(|config| ConfiguredServer {
                config,
                source: file.display().to_string(),
            }));
        let configs: Vec<McpServerConfig> = self.mcp.iter().map(|s| s.config.clone()).collect();
        mecha_mcp::validate_all(&configs, self.sandbox.kind.is_some()).map_err(|e| {
            ConfigError::Invalid {
                path: file.to_path_buf(),
                message: e.to_string(),
            }
        })
    }
}

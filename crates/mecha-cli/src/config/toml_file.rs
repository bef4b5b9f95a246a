//! Reading one TOML config file, with errors that point at the line.

use std::path::Path;

use serde::de::DeserializeOwned;

use super::ConfigError;

/// Parses a TOML file if it exists.
pub(super) fn read_optional<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::debug!(path = %path.display(), "no config file here");
            return Ok(None);
        }
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    tracing::debug!(path = %path.display(), bytes = text.len(), "read config file");
    toml::from_str(&text)
        .map(Some)
        .map_err(|e| parse_error(path, &text, &e))
}

fn parse_error(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let offset = e.span().map_or(0, |s| s.start).min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() + 1;
    let line_text = text[line_start..].lines().next().unwrap_or("").to_owned();
    ConfigError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message: e.message().trim().to_owned(),
        text: line_text,
    }
}

//! `[[search]]`: the backends `web_search` asks, in order. Read from the
//! user's file only (a project must not choose where queries go), and
//! checked whole at start-up: each refusal names the entry and the fix.

use std::path::Path;
use std::time::Duration;

use mecha_tools::{
    BRAVE_BASE_URL, BackendSpec, DEFAULT_BACKEND_TIMEOUT, SearchBackend, SearchConfig,
    TAVILY_BASE_URL,
};
use serde::Deserialize;
use url::Url;

use super::ConfigError;

/// One `[[search]]` as written. Every key is optional here so that a
/// missing or misplaced one is refused naming the entry.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSection {
    pub kind: Option<String>,
    /// `searxng`: the instance.
    pub url: Option<String>,
    /// `brave`, `tavily`: where the API is, for a proxy or a stand-in.
    pub base_url: Option<String>,
    /// `brave`, `tavily`: the variable in mecha's environment with the key.
    pub api_key_env: Option<String>,
    /// `mcp`: the MCP tool, as registered (`server__search`).
    pub tool: Option<String>,
    /// How long this backend may take to answer before the next is tried.
    pub timeout_s: Option<u64>,
}

const KINDS: &str = "`searxng`, `brave`, `tavily` or `mcp`";

/// Checks the entries of `path` into the chain's config; `None` when there
/// are none (and so no web tools).
pub(super) fn check(
    path: &Path,
    sections: &[SearchSection],
) -> Result<Option<SearchConfig>, ConfigError> {
    if sections.is_empty() {
        return Ok(None);
    }
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let mut backends = Vec::with_capacity(sections.len());
    for (index, section) in sections.iter().enumerate() {
        let at = format!("[[search]] entry {}", index + 1);
        let spec = one(&at, section).map_err(invalid)?;
        let timeout = match section.timeout_s {
            Some(0) => return Err(invalid(format!("{at}: timeout_s must be at least 1"))),
            Some(s) => Duration::from_secs(s),
            None => DEFAULT_BACKEND_TIMEOUT,
        };
        backends.push(SearchBackend { spec, timeout });
    }
    Ok(Some(SearchConfig {
        backends,
        ..SearchConfig::new(Vec::new())
    }))
}

fn one(at: &str, s: &SearchSection) -> Result<BackendSpec, String> {
    let Some(kind) = s.kind.as_deref() else {
        return Err(format!("{at} has no `kind`; set kind = {KINDS}"));
    };
    let not_for = |key: &str, set: bool, instead: &str| {
        if set {
            Err(format!(
                "{at} (kind = \"{kind}\") does not take `{key}`; {instead}"
            ))
        } else {
            Ok(())
        }
    };
    match kind {
        "searxng" => {
            not_for(
                "base_url",
                s.base_url.is_some(),
                "give the instance as `url`",
            )?;
            not_for(
                "api_key_env",
                s.api_key_env.is_some(),
                "SearXNG takes no key",
            )?;
            not_for("tool", s.tool.is_some(), "`tool` is for kind = \"mcp\"")?;
            let Some(raw) = s.url.as_deref() else {
                return Err(format!(
                    "{at} (kind = \"searxng\") has no `url`; set it to the instance, e.g. url = \
                     \"http://localhost:8888\""
                ));
            };
            Ok(BackendSpec::Searxng {
                url: http_url(at, "url", raw)?,
            })
        }
        "brave" | "tavily" => {
            not_for(
                "url",
                s.url.is_some(),
                "use `base_url` to point it elsewhere",
            )?;
            not_for("tool", s.tool.is_some(), "`tool` is for kind = \"mcp\"")?;
            let (default_base, default_key) = if kind == "brave" {
                (BRAVE_BASE_URL, "BRAVE_API_KEY")
            } else {
                (TAVILY_BASE_URL, "TAVILY_API_KEY")
            };
            let base_url = http_url(
                at,
                "base_url",
                s.base_url.as_deref().unwrap_or(default_base),
            )?;
            let api_key_env = s
                .api_key_env
                .clone()
                .unwrap_or_else(|| default_key.to_owned());
            if api_key_env.is_empty()
                || !api_key_env
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(format!(
                    "{at}: api_key_env = \"{api_key_env}\" is not an environment variable's \
                     name; name the variable that holds the key, e.g. \"{default_key}\""
                ));
            }
            Ok(if kind == "brave" {
                BackendSpec::Brave {
                    base_url,
                    api_key_env,
                }
            } else {
                BackendSpec::Tavily {
                    base_url,
                    api_key_env,
                }
            })
        }
        "mcp" => {
            not_for(
                "url",
                s.url.is_some(),
                "the MCP server's own config says where it is",
            )?;
            not_for(
                "base_url",
                s.base_url.is_some(),
                "the MCP server's own config says where it is",
            )?;
            not_for(
                "api_key_env",
                s.api_key_env.is_some(),
                "pass the server its key in its [[mcp]] env",
            )?;
            match s.tool.as_deref() {
                Some(tool) if tool.contains("__") => Ok(BackendSpec::Mcp {
                    tool: tool.to_owned(),
                }),
                Some(tool) => Err(format!(
                    "{at}: tool = \"{tool}\" names no MCP tool; give it as registered, \
                     SERVER__TOOL (e.g. \"brave__brave_web_search\")"
                )),
                None => Err(format!(
                    "{at} (kind = \"mcp\") has no `tool`; name the MCP server's search tool, \
                     e.g. tool = \"search__web_search\""
                )),
            }
        }
        other => Err(format!("{at}: kind = \"{other}\" is unknown; use {KINDS}")),
    }
}

fn http_url(at: &str, key: &str, raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw.trim())
        .map_err(|e| format!("{at}: {key} = \"{raw}\" is not a URL ({e}); write it whole, e.g. \"http://localhost:8888\""))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(format!(
            "{at}: {key} = \"{raw}\" must be an http:// or https:// URL"
        ));
    }
    if !url.username().is_empty() || url.password().is_some() || url.query().is_some() {
        return Err(format!(
            "{at}: {key} = \"{raw}\" carries credentials or a query; give the bare address (a \
             key goes in api_key_env)"
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn entry(toml_text: &str) -> SearchSection {
        toml::from_str(toml_text).unwrap()
    }

    fn checked(entries: &[&str]) -> Result<Option<SearchConfig>, String> {
        let sections: Vec<SearchSection> = entries.iter().map(|e| entry(e)).collect();
        check(Path::new("/c.toml"), &sections).map_err(|e| e.to_string())
    }

    #[test]
    fn every_kind_is_read_with_its_defaults() {
        let config = checked(&[
            "kind = \"searxng\"\nurl = \"http://localhost:8888\"",
            "kind = \"brave\"",
            "kind = \"tavily\"\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"MY_KEY\"\ntimeout_s = 3",
            "kind = \"mcp\"\ntool = \"web__search\"",
        ])
        .unwrap()
        .unwrap();
        let timeouts: Vec<u64> = config
            .backends
            .iter()
            .map(|b| b.timeout.as_secs())
            .collect();
        assert_eq!(timeouts, [15, 15, 3, 15]);
        let shown: Vec<String> = config.backends.iter().map(|b| b.spec.to_string()).collect();
        assert_eq!(
            shown,
            [
                "searxng http://localhost:8888/",
                "brave https://api.search.brave.com/ (key from $BRAVE_API_KEY)",
                "tavily http://127.0.0.1:9/ (key from $MY_KEY)",
                "mcp tool web__search",
            ]
        );
        assert!(checked(&[]).unwrap().is_none());
    }

    #[test]
    fn a_bad_entry_is_refused_naming_it_and_the_fix() {
        let cases = [
            ("url = \"http://x\"", "entry 1 has no `kind`; set kind ="),
            (
                "kind = \"bing\"",
                "kind = \"bing\" is unknown; use `searxng`",
            ),
            ("kind = \"searxng\"", "has no `url`; set it to the instance"),
            (
                "kind = \"searxng\"\nurl = \"localhost:8888\"",
                "must be an http:// or https:// URL",
            ),
            (
                "kind = \"brave\"\nurl = \"http://x\"",
                "does not take `url`; use `base_url`",
            ),
            (
                "kind = \"brave\"\napi_key_env = \"$KEY\"",
                "is not an environment variable's name",
            ),
            ("kind = \"mcp\"", "has no `tool`"),
            (
                "kind = \"mcp\"\ntool = \"search\"",
                "give it as registered, SERVER__TOOL",
            ),
            (
                "kind = \"searxng\"\nurl = \"http://x\"\ntimeout_s = 0",
                "timeout_s must be at least 1",
            ),
        ];
        for (text, expected) in cases {
            let err = checked(&[text]).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
        let unknown: Result<SearchSection, _> = toml::from_str("kind = \"brave\"\napikey = \"x\"");
        assert!(
            unknown
                .unwrap_err()
                .to_string()
                .contains("unknown field `apikey`")
        );
    }
}

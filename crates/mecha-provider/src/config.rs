//! The `[provider]` config section and turning it, with the environment,
//! into a provider.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::anthropic::{AnthropicOptions, AnthropicProvider, Thinking};
use crate::http::HttpOptions;
use crate::openai::{MaxTokensField, OpenAiOptions, OpenAiProvider};
use crate::resolve::{Sourced, resolve};
use crate::scripted::ScriptedProvider;
use crate::{Provider, ProviderError};

pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Which API the provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Anthropic,
    #[serde(rename = "openai")]
    OpenAi,
    Scripted,
}

impl Kind {
    /// The kind as config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::Scripted => "scripted",
        }
    }
}

/// The `[provider]` section. Everything optional: the environment fills the
/// conventional gaps (keys, base URLs, `ANTHROPIC_MODEL` / `OPENAI_MODEL`),
/// and config wins over it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    pub kind: Option<Kind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The variable holding the API key, instead of the conventional one.
    pub api_key_env: Option<String>,
    pub context_window: Option<u64>,
    /// The conversation's size, in tokens, at which the loop compacts it.
    /// Unset: derived from the context window, leaving room for one turn's
    /// tool output and the reply (`mecha_core::compaction_threshold`).
    pub compact_at_tokens: Option<u64>,
    /// Unset: the model's output limit where mecha knows it (Anthropic).
    pub max_tokens: Option<u32>,
    /// The field an OpenAI-compatible request carries `max_tokens` in:
    /// `"max_tokens"` or `"max_completion_tokens"` (default: by host).
    pub max_tokens_field: Option<MaxTokensField>,
    /// Claude's extended thinking: `"adaptive"` or `{ budget_tokens = N }`.
    pub thinking: Option<Thinking>,
    /// How long Anthropic keeps the prompt's stable prefix (the tool list
    /// and the system prompt) cached: `"5m"` (the default) or `"1h"`.
    pub cache_ttl: Option<CacheTtl>,
    /// The script file the scripted provider plays.
    pub script: Option<PathBuf>,
    /// Longest silence, in seconds, before a stalled request or stream is an
    /// error (default 120). Raise it for slow local models.
    pub idle_timeout_secs: Option<u64>,
    /// Whether the model reads images in tool results (default true for
    /// Anthropic and OpenAI-compatible servers). `false` for a text-only
    /// model: its images become a placeholder saying where they are saved.
    pub images: Option<bool>,
    /// The file these settings were read from, named in messages that say
    /// which key to change (never read from the file itself).
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
}

/// `[provider] cache_ttl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CacheTtl {
    #[serde(rename = "5m")]
    FiveMinutes,
    #[serde(rename = "1h")]
    OneHour,
}

/// How to configure a provider; shown when none is.
pub(crate) const HOW_TO_CONFIGURE: &str =
    "no model provider is configured. Set ANTHROPIC_API_KEY, or \
OPENAI_API_KEY (or OPENAI_BASE_URL) with OPENAI_MODEL, or add a [provider] section to \
config.toml, e.g.

  [provider]                      # Anthropic (key from ANTHROPIC_API_KEY)
  kind = \"anthropic\"
  model = \"claude-sonnet-4-5\"

  [provider]                      # OpenAI (key from OPENAI_API_KEY)
  kind = \"openai\"
  model = \"gpt-4.1\"

  [provider]                      # ollama, or any OpenAI-compatible server
  kind = \"openai\"
  base_url = \"http://localhost:11434/v1\"
  model = \"qwen3:8b\"

  [provider]                      # replay a script offline, no model at all
  kind = \"scripted\"
  script = \"turns.json\"";

/// Builds the configured provider with default timeouts and retries. Makes
/// no network call.
pub fn build(
    settings: &ProviderSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    build_with(settings, env, HttpOptions::default())
}

/// [`build`] with explicit HTTP behaviour (tests use short timeouts and
/// backoff). `idle_timeout_secs` in the settings still wins.
pub fn build_with(
    settings: &ProviderSettings,
    env: &dyn Fn(&str) -> Option<String>,
    http: HttpOptions,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let built = build_provider(settings, env, http);
    if let Ok(provider) = &built {
        // Kind, model and base URL: what a request goes to.
        tracing::debug!(provider = %provider.describe(), "model provider");
    }
    built
}

fn build_provider(
    settings: &ProviderSettings,
    env: &dyn Fn(&str) -> Option<String>,
    mut http: HttpOptions,
) -> Result<Arc<dyn Provider>, ProviderError> {
    // An empty variable is the same as an unset one.
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    http.idle_timeout_hint = idle_timeout_hint(settings, http.idle_timeout);
    if let Some(secs) = settings.idle_timeout_secs {
        http.idle_timeout = Duration::from_secs(secs);
    }
    let resolved = resolve(settings, env)?;
    let kind = resolved.kind.value;
    tracing::debug!(?kind, "building the model provider");
    if settings.max_tokens_field.is_some() && kind != Kind::OpenAi {
        return Err(ProviderError::NotConfigured(
            "[provider] max_tokens_field only applies to kind = \"openai\"; remove it".to_owned(),
        ));
    }
    if kind == Kind::OpenAi && settings.thinking.is_some() {
        return Err(ProviderError::NotConfigured(
            "`thinking` in [provider] is for kind = \"anthropic\": the OpenAI-compatible API has \
             no thinking budget to send (reasoning models think on their own, and mecha shows \
             the reasoning a server streams); remove `thinking`"
                .to_owned(),
        ));
    }
    if kind == Kind::Scripted && settings.images == Some(true) {
        return Err(ProviderError::NotConfigured(
            "[provider] images = true cannot apply to kind = \"scripted\": a script has no \
             model to see them; remove `images`"
                .to_owned(),
        ));
    }
    let images = settings.images.unwrap_or(true);
    match kind {
        Kind::Anthropic => {
            let key_env = resolved.key_env.unwrap_or_default();
            let api_key = var(&key_env).ok_or_else(|| {
                ProviderError::NotConfigured(format!(
                    "the anthropic provider needs an API key: set {key_env}{}",
                    if settings.api_key_env.is_none() {
                        " (or name another variable with api_key_env in [provider])"
                    } else {
                        ""
                    }
                ))
            })?;
            let base_url = checked_url(resolved.base_url)?;
            let provider = AnthropicProvider::new(AnthropicOptions {
                model: resolved
                    .model
                    .map_or_else(|| DEFAULT_ANTHROPIC_MODEL.to_owned(), |m| m.value),
                base_url,
                api_key,
                api_key_env: key_env,
                max_tokens: settings.max_tokens,
                context_window: settings.context_window,
                thinking: settings.thinking,
                images,
                cache_ttl: settings.cache_ttl,
                http,
            })?;
            Ok(Arc::new(provider))
        }
        Kind::OpenAi => {
            if settings.cache_ttl.is_some() {
                return Err(ProviderError::NotConfigured(
                    "cache_ttl in [provider] sets how long Anthropic caches the prompt; an \
                     OpenAI-compatible server caches on its own terms, so remove the line"
                        .into(),
                ));
            }
            let key_env = resolved.key_env.unwrap_or_default();
            let api_key = var(&key_env);
            if api_key.is_none() && settings.api_key_env.is_some() {
                return Err(ProviderError::NotConfigured(format!(
                    "[provider] api_key_env names {key_env}, but it is not set; set it, or \
                     remove api_key_env for a server that needs no key"
                )));
            }
            let base_url = checked_url(resolved.base_url)?;
            if api_key.is_none() && base_url.trim_end_matches('/') == DEFAULT_OPENAI_BASE_URL {
                return Err(ProviderError::NotConfigured(format!(
                    "the openai provider needs an API key for {DEFAULT_OPENAI_BASE_URL}: set \
                     OPENAI_API_KEY, or set base_url in [provider] for a local server such as \
                     ollama (http://localhost:11434/v1)"
                )));
            }
            let model = resolved.model.map(|m| m.value).ok_or_else(|| {
                ProviderError::NotConfigured(format!(
                    "the openai provider needs a model: pass --model NAME, set OPENAI_MODEL, \
                     or set `model` in [provider] (e.g. model = \"gpt-4.1\", or the name \
                     your server lists at {}/models)",
                    base_url.trim_end_matches('/')
                ))
            })?;
            let provider = OpenAiProvider::new(OpenAiOptions {
                model,
                base_url,
                api_key,
                api_key_env: key_env,
                max_tokens: settings.max_tokens,
                max_tokens_field: settings.max_tokens_field,
                context_window: settings.context_window,
                images,
                http,
            })?;
            Ok(Arc::new(provider))
        }
        Kind::Scripted => {
            let path = settings.script.clone().ok_or_else(|| {
                ProviderError::NotConfigured(
                    "the scripted provider needs a script: set `script = \"turns.json\"` in \
                     [provider]"
                        .to_owned(),
                )
            })?;
            // A relative path is the config file's neighbour, wherever
            // mecha was started from.
            let path = match &settings.config_file {
                Some(file) if path.is_relative() => {
                    file.parent().unwrap_or(Path::new(".")).join(path)
                }
                _ => path,
            };
            let provider =
                ScriptedProvider::from_file(path)?.with_context_window(settings.context_window);
            Ok(Arc::new(provider))
        }
    }
}

/// The URL [`resolve`] picked (config, then environment, then the
/// default), checked to be an http(s) URL now rather than failing on the
/// first request.
fn checked_url(url: Option<Sourced<String>>) -> Result<String, ProviderError> {
    let url = url.map(|u| u.value).unwrap_or_default();
    match reqwest::Url::parse(&url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(url),
        Ok(_) => Err(ProviderError::NotConfigured(format!(
            "the provider base_url `{url}` must start with http:// or https://"
        ))),
        Err(e) => Err(ProviderError::NotConfigured(format!(
            "the provider base_url `{url}` is not a URL ({e}); e.g. http://localhost:11434/v1"
        ))),
    }
}

#[cfg(test)]
mod tests;

/// The key an idle timeout's message tells the user to raise, and where it
/// is set, or that the default applies and where to set it.
fn idle_timeout_hint(settings: &ProviderSettings, default: Duration) -> String {
    let file = settings
        .config_file
        .as_ref()
        .map_or_else(|| "config.toml".to_owned(), |f| f.display().to_string());
    match settings.idle_timeout_secs {
        Some(secs) => format!("[provider] idle_timeout_secs (set to {secs} in {file})"),
        None => format!(
            "[provider] idle_timeout_secs in {file} (unset: the default of {} applies)",
            crate::http::seconds(default)
        ),
    }
}

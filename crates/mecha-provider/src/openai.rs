//! OpenAI Chat Completions, streamed, and the servers that copy it
//! (ollama, vLLM, llama.cpp, LM Studio, ...).
//!
//! Tool results become `role: "tool"` messages; one that is an error has its
//! content prefixed with `"Error: "`, since the wire format has no flag for it.

mod calls;
mod memory;
mod request;
mod stream;
mod wire;

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};

use crate::http::{HttpCore, HttpOptions};
use crate::{Provider, ProviderError, Request, Response, StreamSink};
use memory::Memory;
pub use request::MaxTokensField;
use stream::StreamState;

/// What an [`OpenAiProvider`] needs. [`crate::build`] fills it from config
/// and environment.
#[derive(Debug, Clone)]
pub struct OpenAiOptions {
    pub model: String,
    /// Including `/v1`, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    /// Local servers usually need none.
    pub api_key: Option<String>,
    /// Where the key came from (or should), named when the API refuses it.
    pub api_key_env: String,
    /// Unset leaves the output limit to the server.
    pub max_tokens: Option<u32>,
    /// Unset chooses by host: `max_completion_tokens` for OpenAI's API and
    /// Azure OpenAI, `max_tokens` for every other server.
    pub max_tokens_field: Option<MaxTokensField>,
    pub context_window: Option<u64>,
    /// Whether the model reads images (`[provider] images`, default yes).
    pub images: bool,
    pub http: HttpOptions,
}

/// A model behind an OpenAI-compatible Chat Completions endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    http: HttpCore,
    model: String,
    max_tokens: Option<(MaxTokensField, u32)>,
    context_window: Option<u64>,
    memory: Arc<Memory>,
    images: bool,
    /// The history's chat messages as the last request sent them.
    sent: wire::ChatCache,
}

impl OpenAiProvider {
    pub fn new(options: OpenAiOptions) -> Result<Self, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &options.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ProviderError::NotConfigured(format!(
                    "the API key in {} contains characters that cannot go in an HTTP header; \
                     check its value",
                    options.api_key_env
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        let base = options.base_url.trim_end_matches('/');
        let field = options
            .max_tokens_field
            .unwrap_or_else(|| default_max_tokens_field(base));
        let key_hint = if options.api_key.is_some() {
            format!("the {} environment variable", options.api_key_env)
        } else {
            format!(
                "whether this endpoint needs a key: none was sent; set {} (or name another \
                 variable with api_key_env in [provider])",
                options.api_key_env
            )
        };
        let http = HttpCore::new(
            format!("{base}/chat/completions"),
            headers,
            "the OpenAI-compatible API",
            key_hint,
            options.http,
        )?;
        Ok(Self {
            http,
            model: options.model,
            max_tokens: options.max_tokens.map(|n| (field, n)),
            context_window: options.context_window,
            images: options.images,
            memory: Arc::default(),
            sent: wire::ChatCache::default(),
        })
    }
}

/// OpenAI's own API and Azure OpenAI (`*.openai.azure.com`) serve models
/// that refuse `max_tokens` and want `max_completion_tokens`; compatible
/// servers get the older `max_tokens`, which all of them understand. Other
/// hosts of OpenAI's models set `max_tokens_field` in `[provider]`.
fn default_max_tokens_field(base_url: &str) -> MaxTokensField {
    let host = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase));
    match host.as_deref() {
        Some(h) if h == "api.openai.com" || h.ends_with(".openai.azure.com") => {
            MaxTokensField::MaxCompletionTokens
        }
        _ => MaxTokensField::MaxTokens,
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn describe(&self) -> String {
        format!("openai {} at {}", self.model, self.http.url())
    }

    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn accepts_images(&self) -> bool {
        self.images
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    /// Only what `[provider] max_tokens` configured: without it the request
    /// carries no limit, and mecha cannot know the server's.
    fn max_output_tokens(&self) -> Option<u64> {
        self.max_tokens.map(|(_, n)| u64::from(n))
    }

    async fn complete(
        &self,
        request: Request<'_>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        let body = request::encoded(
            &self.model,
            self.max_tokens,
            &request,
            self.memory.reasoning_field(),
            &self.sent,
        )
        .map_err(|e| ProviderError::Api(format!("cannot encode the request: {e}")))?;
        self.http
            .exchange_with(body.into(), on_stream, || {
                StreamState::new(Arc::clone(&self.memory))
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_field_by_host() {
        let field = default_max_tokens_field;
        let newer = MaxTokensField::MaxCompletionTokens;
        assert_eq!(field("https://api.openai.com/v1"), newer);
        assert_eq!(field("https://API.OpenAI.com/v1"), newer);
        assert_eq!(
            field("https://my-res.openai.azure.com/openai/deployments/gpt-5"),
            newer
        );
        assert_eq!(
            field("http://localhost:11434/v1"),
            MaxTokensField::MaxTokens
        );
        // Only a real subdomain: a look-alike host is a compatible server.
        assert_eq!(
            field("https://openai.azure.com.example.org/v1"),
            MaxTokensField::MaxTokens
        );
        assert_eq!(field("not a url"), MaxTokensField::MaxTokens);
    }
}

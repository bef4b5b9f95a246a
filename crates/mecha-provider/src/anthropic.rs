//! The Anthropic Messages API, streamed.

mod request;
mod stream;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};

use crate::http::{HttpCore, HttpOptions};
use crate::{Provider, ProviderError, Request, Response, StreamSink};
use stream::StreamState;

/// The API version this client speaks; the wire format is pinned to it.
const API_VERSION: &str = "2023-06-01";

/// What an [`AnthropicProvider`] needs. [`crate::build`] fills it from
/// config and environment.
#[derive(Debug, Clone)]
pub struct AnthropicOptions {
    pub model: String,
    /// Without `/v1`, as `ANTHROPIC_BASE_URL` is conventionally given.
    pub base_url: String,
    pub api_key: String,
    /// Where the key came from, named when the API refuses it.
    pub api_key_env: String,
    pub max_tokens: u32,
    pub context_window: Option<u64>,
    pub http: HttpOptions,
}

/// Claude through the Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    http: HttpCore,
    model: String,
    max_tokens: u32,
    context_window: Option<u64>,
}

impl AnthropicProvider {
    pub fn new(options: AnthropicOptions) -> Result<Self, ProviderError> {
        let mut headers = HeaderMap::new();
        let mut key = HeaderValue::from_str(&options.api_key).map_err(|_| {
            ProviderError::NotConfigured(format!(
                "the API key in {} contains characters that cannot go in an HTTP header; \
                 check its value",
                options.api_key_env
            ))
        })?;
        key.set_sensitive(true);
        headers.insert("x-api-key", key);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        let url = format!("{}/v1/messages", options.base_url.trim_end_matches('/'));
        let http = HttpCore::new(
            url,
            headers,
            "the Anthropic API",
            format!("the {} environment variable", options.api_key_env),
            options.http,
        )?;
        Ok(Self {
            http,
            model: options.model,
            max_tokens: options.max_tokens,
            context_window: options.context_window,
        })
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn describe(&self) -> String {
        format!("anthropic {} at {}", self.model, self.http.url())
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    async fn complete(
        &self,
        request: Request<'_>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        let body = request::body(&self.model, self.max_tokens, &request);
        let body = serde_json::to_vec(&body)
            .map_err(|e| ProviderError::Api(format!("cannot encode the request: {e}")))?;
        self.http.exchange::<StreamState>(&body, on_stream).await
    }
}

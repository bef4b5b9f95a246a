//! The Anthropic Messages API, streamed.

mod models;
mod request;
mod stream;
mod thinking;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};

use crate::config::CacheTtl;
use crate::http::{HttpCore, HttpOptions};
use crate::wire_cache::WireCache;
use crate::{Provider, ProviderError, Request, Response, StreamSink};
use stream::StreamState;
pub use thinking::{MIN_THINKING_BUDGET, Thinking};

/// The API version this client speaks; the wire format is pinned to it.
const API_VERSION: &str = "2023-06-01";

/// `max_tokens` for a model mecha does not know: enough for a long file
/// write, and accepted by every current Claude model.
pub const DEFAULT_MAX_TOKENS: u32 = 32_000;

/// An unset `max_tokens`: the model's own limit, unless that would keep
/// more than half the window for the reply (a small window configured for
/// a local server, say); then a quarter of the window, which leaves the
/// rest for the conversation.
fn fitted(model_limit: u32, window: u64) -> u32 {
    if u64::from(model_limit) > window / 2 {
        u32::try_from(window / 4).unwrap_or(u32::MAX)
    } else {
        model_limit
    }
}

/// The context window of a model mecha does not know.
pub const ANTHROPIC_CONTEXT_WINDOW: u64 = 200_000;

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
    /// Unset: the model's own output limit where mecha knows it, else
    /// [`DEFAULT_MAX_TOKENS`]; a quarter of the window instead when that
    /// would keep more than half of it for the reply.
    pub max_tokens: Option<u32>,
    /// Unset: the model's where mecha knows it, else
    /// [`ANTHROPIC_CONTEXT_WINDOW`].
    pub context_window: Option<u64>,
    pub thinking: Option<Thinking>,
    /// Whether the model reads images (`[provider] images`, default yes).
    pub images: bool,
    /// `[provider] cache_ttl`: how long the stable prefix stays cached.
    pub cache_ttl: Option<CacheTtl>,
    pub http: HttpOptions,
}

/// Claude through the Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    http: HttpCore,
    model: String,
    max_tokens: u32,
    context_window: u64,
    thinking: Option<Thinking>,
    images: bool,
    /// The system prompt and the tools are cached for an hour.
    hour_cache: bool,
    /// The messages of the last request as sent, to reuse.
    sent: WireCache,
}

impl AnthropicProvider {
    pub fn new(options: AnthropicOptions) -> Result<Self, ProviderError> {
        let spec = models::lookup(&options.model);
        let context_window = options
            .context_window
            .or(spec.map(|s| s.context_window))
            .unwrap_or(ANTHROPIC_CONTEXT_WINDOW);
        let max_tokens = match options.max_tokens {
            Some(set) => set,
            // Unset, it must fit the window it is given: a 32K window with
            // the model's own 64K output limit kept for the reply leaves
            // no room for any prompt.
            None => fitted(
                spec.map_or(DEFAULT_MAX_TOKENS, |s| s.max_output),
                context_window,
            ),
        };
        // Only against a window someone knows: an unknown model's is a guess.
        let window_known = options.context_window.is_some() || spec.is_some();
        if window_known && u64::from(max_tokens) >= context_window {
            return Err(ProviderError::NotConfigured(format!(
                "max_tokens = {max_tokens} in [provider] keeps the whole context window \
                 ({context_window} tokens) for the reply, so no prompt fits: lower max_tokens \
                 (a quarter of the window is usual), or remove it and mecha picks one"
            )));
        }
        if let Some(spec) = spec.filter(|s| max_tokens > s.max_output) {
            // The API would refuse every request with a 400.
            return Err(ProviderError::NotConfigured(format!(
                "max_tokens = {max_tokens} in [provider] is more than {} writes (at most {}): \
                 lower it, or remove it to use {}",
                options.model, spec.max_output, spec.max_output
            )));
        }
        if let Some(thinking) = options.thinking {
            thinking.check(&options.model, spec, max_tokens)?;
        }
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
        let betas: Vec<&str> = [
            options.thinking.and_then(Thinking::beta),
            spec.filter(|s| s.needs_window_beta)
                .map(|_| "model-context-window-exceeded-2025-08-26"),
            (options.cache_ttl == Some(CacheTtl::OneHour))
                .then_some("extended-cache-ttl-2025-04-11"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !betas.is_empty() {
            // One comma-separated value, as the SDKs send it.
            let value = HeaderValue::from_str(&betas.join(",")).map_err(|e| {
                ProviderError::NotConfigured(format!("cannot build the anthropic-beta header: {e}"))
            })?;
            headers.insert("anthropic-beta", value);
        }
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
            context_window,
            model: options.model,
            max_tokens,
            thinking: options.thinking,
            images: options.images,
            hour_cache: options.cache_ttl == Some(CacheTtl::OneHour),
            sent: WireCache::default(),
        })
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn describe(&self) -> String {
        format!("anthropic {} at {}", self.model, self.http.url())
    }

    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    fn accepts_images(&self) -> bool {
        self.images
    }

    fn context_window(&self) -> Option<u64> {
        Some(self.context_window)
    }

    /// Always known: the API requires `max_tokens`, so mecha sends the
    /// configured one or the model's own limit.
    fn max_output_tokens(&self) -> Option<u64> {
        Some(u64::from(self.max_tokens))
    }

    async fn complete(
        &self,
        request: Request<'_>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<Response, ProviderError> {
        let body = request::encoded(
            &self.model,
            self.max_tokens,
            self.thinking,
            self.hour_cache,
            &request,
            &self.sent,
        )
        .map_err(|e| ProviderError::Api(format!("cannot encode the request: {e}")))?;
        self.http
            .exchange::<StreamState>(body.into(), on_stream)
            .await
    }
}

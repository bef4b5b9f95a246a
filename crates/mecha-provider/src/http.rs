//! What the two HTTP providers share: one reqwest client per provider, the
//! POST with its timeouts, turning an HTTP error into a [`ProviderError`] or a
//! retry, and the backoff between retries.

use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;

use mecha_core::error_chain;

use crate::{ProviderError, StreamSink, Streamed};

/// How an HTTP provider connects, waits and retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// Longest wait for the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Longest silence allowed, both while waiting for the response headers
    /// and between two pieces of the stream. Generous by default because a
    /// local model may think for a long time before its first token.
    pub idle_timeout: Duration,
    /// Retries after the first attempt, on 429, 5xx, 529, overloaded and
    /// connection failures.
    pub max_retries: u32,
    /// The first backoff; it doubles per retry, with jitter.
    pub backoff_base: Duration,
    /// The longest computed backoff (a server's `retry-after` may be longer).
    pub backoff_max: Duration,
    /// The most time spent waiting between attempts, all retries together.
    pub retry_budget: Duration,
    /// What an idle timeout's message tells the user to raise: the config
    /// key, and where it is set.
    pub idle_timeout_hint: String,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_retries: 4,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            retry_budget: Duration::from_secs(120),
            idle_timeout_hint: "[provider] idle_timeout_secs in config.toml".to_owned(),
        }
    }
}

/// How one attempt ended when it did not produce a response.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// Worth trying again: nothing reached the caller yet.
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    /// The connection was refused: nothing listens there. Worth one more
    /// try (a server starting up), not a round of backoff.
    Refused { reason: String },
    /// Final.
    Fatal(ProviderError),
}

impl From<ProviderError> for Attempt {
    fn from(e: ProviderError) -> Self {
        Attempt::Fatal(e)
    }
}

/// One endpoint of one provider, with the client that is reused for every
/// request of the run (so the connection is kept alive between turns).
#[derive(Debug)]
pub(crate) struct HttpCore {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    /// "the Anthropic API", for messages.
    pub api: &'static str,
    /// What to check when the credentials are refused.
    key_hint: String,
    pub options: HttpOptions,
}

impl HttpCore {
    pub fn new(
        url: String,
        mut headers: HeaderMap,
        api: &'static str,
        key_hint: String,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let not_configured = |why: String| {
            ProviderError::NotConfigured(format!("cannot set up the HTTP client for {api}: {why}"))
        };
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .user_agent(concat!("mecha/", env!("CARGO_PKG_VERSION")));
        // The roots `SSL_CERT_FILE` adds, as every TLS client of mecha's.
        for der in mecha_core::extra_roots().map_err(not_configured)? {
            let cert = reqwest::Certificate::from_der(der).map_err(|e| {
                not_configured(format!(
                    "a certificate in {} cannot be used: {}",
                    mecha_core::CERT_FILE_VAR,
                    error_chain(&e)
                ))
            })?;
            builder = builder.add_root_certificate(cert);
        }
        let client = builder
            .build()
            .map_err(|e| not_configured(error_chain(&e)))?;
        Ok(Self {
            client,
            url,
            headers,
            api,
            key_hint,
            options,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends the body once. `Ok` only for a 2xx response, whose body is then
    /// the caller's to stream.
    pub async fn post(&self, body: Bytes) -> Result<reqwest::Response, Attempt> {
        let send = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = match tokio::time::timeout(self.options.idle_timeout, send).await {
            Err(_) => {
                return Err(Attempt::Fatal(ProviderError::Transport(format!(
                    "{} at {} sent no response within {} (idle timeout); the server may be \
                     overloaded or stuck, try again or raise {}",
                    self.api,
                    self.url,
                    seconds(self.options.idle_timeout),
                    self.options.idle_timeout_hint
                ))));
            }
            Ok(Err(e)) if e.is_connect() && refused(&e) => {
                return Err(Attempt::Refused {
                    reason: format!("could not connect to {}: {}", self.url, error_chain(&e)),
                });
            }
            Ok(Err(e)) if e.is_connect() => {
                return Err(Attempt::Retry {
                    reason: format!("could not connect to {}: {}", self.url, error_chain(&e)),
                    after: None,
                });
            }
            Ok(Err(e)) => {
                return Err(Attempt::Fatal(ProviderError::Transport(format!(
                    "the request to {} failed: {}",
                    self.url,
                    error_chain(&e)
                ))));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let after = retry_after(response.headers());
        // The error body is short; a server that stalls on it gets the same
        // idle limit as everything else.
        let text = tokio::time::timeout(self.options.idle_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        Err(self.classify(status.as_u16(), after, &text))
    }

    fn classify(&self, status: u16, after: Option<Duration>, body: &str) -> Attempt {
        let message = error_message(body);
        match status {
            401 | 403 => Attempt::Fatal(ProviderError::Auth(format!(
                "{} refused the credentials ({status}: {message}); check {}",
                self.api, self.key_hint
            ))),
            429 | 500..=599 => Attempt::Retry {
                reason: format!("answered {status}: {message}"),
                after,
            },
            _ => Attempt::Fatal(ProviderError::Api(format!(
                "{} rejected the request ({status}): {message}",
                self.api
            ))),
        }
    }

    pub fn retries(&self) -> Retries<'_> {
        Retries {
            options: &self.options,
            api: self.api,
            retried: 0,
            waited: Duration::ZERO,
            refused_once: false,
        }
    }
}

/// Whether the connection was refused outright (nothing listens at the
/// address), as against a timeout or a name that did not resolve.
fn refused(e: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(cause) = source {
        if cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The retry bookkeeping of one `complete` call.
#[derive(Debug)]
pub(crate) struct Retries<'a> {
    options: &'a HttpOptions,
    api: &'static str,
    retried: u32,
    waited: Duration,
    /// Whether a refused connection was already tried again.
    refused_once: bool,
}

impl Retries<'_> {
    /// After a refused connection: one more try after a short pause (a
    /// local server may be starting), then the error that says nothing is
    /// listening, rather than a round of backoff that ends in "try again
    /// later" as if the server were overloaded.
    pub async fn wait_refused(
        &mut self,
        url: &str,
        reason: String,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<(), ProviderError> {
        if self.refused_once {
            return Err(ProviderError::Transport(format!(
                "nothing is listening at {url} ({reason}, also on a second try); is the \
                 server running? If it runs elsewhere, point [provider] base_url (or the \
                 API's *_BASE_URL variable) at it"
            )));
        }
        self.refused_once = true;
        let delay = self.options.backoff_base.min(Duration::from_millis(500));
        on_stream(Streamed::Retrying(&format!(
            "{} {reason}; trying once more in {}",
            self.api,
            seconds(delay)
        )));
        tokio::time::sleep(delay).await;
        Ok(())
    }

    /// Waits before the next attempt, or says why there will be none. The
    /// wait is announced through `on_stream`: the user may have seen part
    /// of the failed attempt (thinking), and a silent pause looks like a hang.
    pub async fn wait(
        &mut self,
        reason: String,
        after: Option<Duration>,
        on_stream: &mut StreamSink<'_>,
    ) -> Result<(), ProviderError> {
        let exhausted = |why: String| {
            ProviderError::Exhausted(format!(
                "{} kept failing (last: {reason}); {why}. Try again later",
                self.api
            ))
        };
        if self.retried >= self.options.max_retries {
            return Err(exhausted(format!(
                "gave up after {} retries",
                self.options.max_retries
            )));
        }
        let delay = after.unwrap_or_else(|| backoff(self.options, self.retried));
        if self.waited + delay > self.options.retry_budget {
            return Err(exhausted(format!(
                "the next wait ({}) would pass the retry budget of {}",
                seconds(delay),
                seconds(self.options.retry_budget)
            )));
        }
        self.retried += 1;
        self.waited += delay;
        tracing::warn!(
            retry = self.retried,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "{}: {reason}; retrying",
            self.api
        );
        on_stream(Streamed::Retrying(&format!(
            "{} {reason}; retrying in {} (retry {} of {})",
            self.api,
            seconds(delay),
            self.retried,
            self.options.max_retries
        )));
        tokio::time::sleep(delay).await;
        Ok(())
    }
}

/// Exponential backoff with "equal jitter": half fixed, half random, so
/// clients that failed together do not retry together.
fn backoff(options: &HttpOptions, retried: u32) -> Duration {
    let full = options
        .backoff_base
        .saturating_mul(2u32.saturating_pow(retried))
        .min(options.backoff_max);
    full / 2 + full.mul_f64(fastrand::f64() / 2.0)
}

/// The server's requested wait: OpenAI's `retry-after-ms`, else the standard
/// `retry-after` in seconds. An HTTP-date form is ignored (backoff applies).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

/// The human part of an API error body. Anthropic and OpenAI nest it as
/// `error.message`; some local servers send `error` as a plain string.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let found = value
            .pointer("/error/message")
            .or_else(|| value.get("error"))
            .or_else(|| value.get("message"))
            .and_then(Value::as_str);
        if let Some(message) = found {
            return message.to_owned();
        }
    }
    let body = body.trim();
    if body.is_empty() {
        "no error message".to_owned()
    } else {
        truncate(body, 500).to_owned()
    }
}

pub(crate) fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// At most `max` bytes, cut on a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn retry_after_seconds_and_ms() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0")])),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1.5")])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn retry_after_ignores_dates_and_garbage() {
        let date = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]);
        assert_eq!(retry_after(&date), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let options = HttpOptions {
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_millis(500),
            ..HttpOptions::default()
        };
        for _ in 0..50 {
            let first = backoff(&options, 0);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = backoff(&options, 2);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            let capped = backoff(&options, 10);
            assert!(capped <= Duration::from_millis(500));
        }
    }

    #[test]
    fn error_messages_from_each_shape() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}}"#;
        assert_eq!(error_message(anthropic), "max_tokens: too big");
        let openai = r#"{"error":{"message":"model not found","type":"invalid_request_error"}}"#;
        assert_eq!(error_message(openai), "model not found");
        assert_eq!(
            error_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(error_message("Bad Gateway"), "Bad Gateway");
        assert_eq!(error_message(""), "no error message");
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }
}

//! Remote MCP servers: an `[[mcp]]` entry with a `url` instead of a
//! `command`, reached over rmcp's streamable-HTTP client transport. The
//! endpoint is fixed by config; a bearer token and header values come from
//! mecha's environment when the server is reached, so no secret is written
//! in a config file. TLS trusts the webpki roots and `SSL_CERT_FILE`'s, as the
//! model providers do.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use rmcp::transport::auth::AuthClient;

use crate::SpawnOptions;
use crate::config::McpServerConfig;
use crate::connection::{Handshaken, Started, handshake, started};
use crate::error::{Failure, StartError};
use crate::handler::{Handler, ProgressRoutes, Signals, Watched};
use crate::oauth::CredentialFile;
use crate::sse::{self, Credential};

/// The remote transports. With none named, streamable HTTP is tried
/// first and SSE when the server refuses it.
const TRANSPORTS: [&str; 2] = ["streamable-http", "sse"];

/// What an entry with a `url` must hold, or why it cannot be used.
pub(crate) fn validate(config: &McpServerConfig) -> Result<(), String> {
    let url = config.url.as_deref().unwrap_or_default();
    if !config.command.trim().is_empty() {
        return Err(
            "sets both `command` and `url`; a server is a program mecha runs or a URL it \
             reaches: keep one"
                .into(),
        );
    }
    let parsed = url::Url::parse(url).map_err(|e| {
        format!("`url = \"{url}\"` is not a URL ({e}); write it as https://host/mcp")
    })?;
    if !matches!(parsed.scheme(), "https" | "http") {
        return Err(format!(
            "`url = \"{url}\"` is not http(s); a remote MCP server is reached over HTTP"
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "`url` carries a user name or password; put a token in bearer_token_env instead".into(),
        );
    }
    if let Some(transport) = &config.transport
        && !TRANSPORTS.contains(&transport.as_str())
    {
        return Err(format!(
            "`transport = \"{transport}\"` is no transport; use \"streamable-http\" or \"sse\", \
             or drop the line to try both"
        ));
    }
    let local = [
        ("args", !config.args.is_empty()),
        ("env", !config.env.is_empty()),
        ("env_passthrough", !config.env_passthrough.is_empty()),
        ("sandbox", config.sandbox),
        ("network", config.network.is_some()),
        ("allow_hosts", config.allow_hosts.is_some()),
    ];
    if let Some((field, _)) = local.iter().find(|(_, set)| *set) {
        return Err(format!(
            "sets `{field}`, which only means something for a server mecha runs; a `url` server \
             runs elsewhere: drop it"
        ));
    }
    if config.bearer_token_env.is_some() && config.client_id.is_some() {
        return Err(
            "sets both `bearer_token_env` and `client_id`; a server takes a fixed token or an \
             OAuth login: keep one"
                .into(),
        );
    }
    if let Some(var) = &config.bearer_token_env
        && (var.is_empty() || var.contains(['=', '\0']))
    {
        return Err(format!(
            "`bearer_token_env = \"{var}\"` is not a variable name"
        ));
    }
    for (name, value) in &config.headers {
        if reqwest013::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(format!(
                "`headers` has `{name}`, which is not a header name"
            ));
        }
        if value.contains(['\r', '\n', '\0']) {
            return Err(format!("`headers.{name}` holds a line break or NUL"));
        }
    }
    Ok(())
}

/// A server mecha runs (a `command`) with keys that only mean something
/// for one it reaches by `url`.
pub(crate) fn validate_local(config: &McpServerConfig) -> Result<(), String> {
    let remote_only = [
        ("transport", config.transport.is_some()),
        ("bearer_token_env", config.bearer_token_env.is_some()),
        ("headers", !config.headers.is_empty()),
        ("client_id", config.client_id.is_some()),
        ("callback_port", config.callback_port.is_some()),
    ];
    match remote_only.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(format!(
            "sets `{field}`, which only means something for a server reached by `url`; this one \
             is a command mecha runs: drop it"
        )),
        None => Ok(()),
    }
}

/// `${VAR}` in `value` read from mecha's environment; a variable that is not
/// set is an error naming it.
fn expanded(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`{value}` opens `${{` without closing it"))?;
        let name = &after[..end];
        let found = env(name).ok_or_else(|| {
            format!(
                "`${{{name}}}` is not set in mecha's environment; export it, or drop the header"
            )
        })?;
        out.push_str(&found);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The bearer token and the other headers, read from `env`.
pub(crate) fn credentials(
    config: &McpServerConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<
    (
        Option<String>,
        HashMap<reqwest013::header::HeaderName, reqwest013::header::HeaderValue>,
    ),
    String,
> {
    let auth = match &config.bearer_token_env {
        Some(var) => match env(var).filter(|t| !t.is_empty()) {
            // rmcp sends it as `Authorization: Bearer <token>`.
            Some(token) => Some(token),
            None => {
                return Err(format!(
                    "`bearer_token_env = \"{var}\"`, but {var} is not set in mecha's environment; \
                     export the token as {var}"
                ));
            }
        },
        None => None,
    };
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let value = expanded(value, env)?;
        let name = reqwest013::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header `{name}`: {e}"))?;
        let value = reqwest013::header::HeaderValue::from_str(&value)
            .map_err(|e| format!("header `{name}` cannot be sent: {e}"))?;
        headers.insert(name, value);
    }
    Ok((auth, headers))
}

/// The HTTP client: rustls on ring with the webpki roots, plus the ones
/// `SSL_CERT_FILE` adds (as the model providers' clients).
fn client(timeout: Duration) -> Result<reqwest013::Client, String> {
    let mut roots =
        rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for der in mecha_core::extra_roots()? {
        roots.add(der.clone()).map_err(|e| {
            format!(
                "a certificate in {} cannot be used: {e}",
                mecha_core::CERT_FILE_VAR
            )
        })?;
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    reqwest013::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(timeout)
        .build()
        .map_err(|e| e.to_string())
}

/// Reaches the server at `config.url`, shakes hands and lists its tools
/// within `startup_timeout_s`: over streamable HTTP, or over SSE when the
/// config says so or the server refuses streamable HTTP's first POST. A
/// server with an OAuth login kept for this URL gets its access token
/// (refreshed when it is due); one with `bearer_token_env` gets that
/// token; others get none.
pub(crate) async fn connect(
    config: &McpServerConfig,
    opts: &SpawnOptions,
    progress: Arc<ProgressRoutes>,
    signals: Arc<Signals>,
) -> Result<Started, Failure> {
    let fail = |detail| Failure::bare(StartError::Remote { detail });
    let url = config.url.clone().unwrap_or_default();
    let limit = Duration::from_secs(config.startup_timeout_s);
    let env = |name: &str| std::env::var(name).ok();
    let (token, headers) = credentials(config, &env).map_err(fail)?;
    let client = client(limit).map_err(fail)?;
    let login = match (&token, &opts.credentials) {
        (None, Some(dir)) => {
            crate::oauth_login::install_tls_provider();
            let file = CredentialFile::new(dir, config);
            crate::oauth::manager_from_login(config, file)
                .await
                .map_err(fail)?
                .map(|manager| AuthClient::new(client.clone(), manager))
        }
        _ => None,
    };
    let credential = match (token, &login) {
        (Some(token), _) => Credential::Bearer(token),
        (None, Some(login)) => Credential::OAuth(Arc::clone(&login.auth_manager)),
        (None, None) => Credential::None,
    };
    let handler = || Handler::new(config.name.clone(), Arc::clone(&progress));
    let mut transport = "streamable HTTP";
    let mut reached = Ok(Err((
        StartError::Remote {
            detail: String::new(),
        },
        false,
    )));
    if config.transport.as_deref() != Some("sse") {
        let mut http = StreamableHttpClientTransportConfig::with_uri(url.as_str())
            .custom_headers(headers.clone());
        if let Credential::Bearer(token) = &credential {
            http = http.auth_header(token.clone());
        }
        reached = match &login {
            Some(login) => {
                let streamable = StreamableHttpClientTransport::with_client(login.clone(), http);
                handshake_within(
                    limit,
                    handler(),
                    Watched::new(streamable, config.name.clone(), Arc::clone(&signals)),
                )
                .await
            }
            None => {
                let streamable = StreamableHttpClientTransport::with_client(client.clone(), http);
                handshake_within(
                    limit,
                    handler(),
                    Watched::new(streamable, config.name.clone(), Arc::clone(&signals)),
                )
                .await
            }
        };
    }
    let refused = matches!(&reached, Ok(Err((StartError::Handshake { detail }, _)))
        if config.transport.is_none() && refuses_streamable(detail));
    if config.transport.as_deref() == Some("sse") || refused {
        transport = "SSE";
        let headers = headers.into_iter().collect();
        reached = match sse::connect(client.clone(), &url, headers, credential, limit).await {
            Ok(sse) => {
                handshake_within(
                    limit,
                    handler(),
                    Watched::new(sse, config.name.clone(), Arc::clone(&signals)),
                )
                .await
            }
            Err(e) => Ok(Err((
                StartError::Handshake {
                    detail: e.to_string(),
                },
                true,
            ))),
        };
    }
    let error = match reached {
        Ok(Ok((service, tools))) => {
            return Ok(started(config, service, tools, None, progress, transport));
        }
        Ok(Err((StartError::Handshake { detail }, _))) => {
            let detail = with_cause(&client, &url, detail).await;
            StartError::Remote {
                detail: refused_handshake(config, &detail, login.is_some(), transport),
            }
        }
        Ok(Err((error, _))) => error,
        Err(_) => StartError::Timeout {
            secs: config.startup_timeout_s,
        },
    };
    Err(Failure::bare(error))
}

/// `detail` with why the request could not be sent, when that is what
/// happened: rmcp's error names the request but drops its cause (a
/// certificate no trusted authority signed, a refused connection), so one
/// plain request to the same URL, with the same client, asks again.
async fn with_cause(client: &reqwest013::Client, url: &str, detail: String) -> String {
    if !detail.contains("error sending request") {
        return detail;
    }
    match client.get(url).send().await {
        Err(e) => format!("{detail} ({})", mecha_core::error_chain(&e)),
        Ok(_) => detail,
    }
}

/// Whether a failed handshake was the server refusing streamable HTTP's
/// first POST (400, 404 or 405), as one that speaks only SSE does: then
/// the older transport is tried at the same URL.
fn refuses_streamable(detail: &str) -> bool {
    detail.contains("when send initialize request")
        && ["HTTP 400", "HTTP 404", "HTTP 405"]
            .iter()
            .any(|status| detail.contains(status))
}

async fn handshake_within<T>(
    limit: Duration,
    handler: Handler,
    transport: T,
) -> Result<Handshaken, tokio::time::error::Elapsed>
where
    T: rmcp::transport::Transport<rmcp::RoleClient> + Send + 'static,
    T::Error: std::error::Error + Send + Sync + 'static,
{
    tokio::time::timeout(limit, handshake(handler, transport)).await
}

/// A handshake rmcp could not complete, in words for the user: what went
/// wrong without the transport's type names, and for a server that wants
/// authorization, what to set.
fn refused_handshake(
    config: &McpServerConfig,
    detail: &str,
    logged_in: bool,
    transport: &str,
) -> String {
    let name = &config.name;
    if logged_in && (detail.contains("Auth required") || detail.contains("Auth error")) {
        let said = match detail.find("Auth error: ") {
            Some(at) => {
                let said = &detail[at + "Auth error: ".len()..];
                let said = said.split(", when send").next().unwrap_or(said);
                format!(" ({said})")
            }
            None => String::new(),
        };
        return format!(
            "the server no longer honours the OAuth login and it could not be refreshed{said}; \
             run `mecha mcp login {name}` again"
        );
    }
    if detail.contains("Auth required") {
        return match &config.bearer_token_env {
            Some(var) => format!(
                "the server refused the token in {var} (HTTP 401); check that it is current and \
                 meant for {}",
                config.url.as_deref().unwrap_or_default()
            ),
            None => format!(
                "the server asks for authorization (HTTP 401); run `mecha mcp login {name}`, or, \
                 if it takes a fixed token, put that in a variable and name it in \
                 bearer_token_env"
            ),
        };
    }
    // rmcp names the transport's whole type before what happened.
    let plain = match detail.find("] error: ") {
        Some(at) => &detail[at + "] error: ".len()..],
        None => detail,
    };
    let mut said = format!("the MCP handshake over {transport} failed: {plain}");
    if plain.contains("certificate") {
        said.push_str(&format!(
            "; if the server's certificate comes from an authority of your own (a company's, \
             a self-signed one), name a PEM file of it in {}",
            mecha_core::CERT_FILE_VAR
        ));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(url: &str) -> McpServerConfig {
        McpServerConfig {
            url: Some(url.into()),
            ..McpServerConfig::new("docs", "")
        }
    }

    #[test]
    fn a_url_entry_is_checked_with_the_fix_named() {
        assert!(validate(&remote("https://mcp.example.com/mcp")).is_ok());
        let both = McpServerConfig {
            command: "npx".into(),
            ..remote("https://mcp.example.com/mcp")
        };
        for (config, says) in [
            (both, "both `command` and `url`"),
            (remote("mcp.example.com"), "not a URL"),
            (remote("ftp://mcp.example.com/"), "not http(s)"),
            (remote("https://me:pw@mcp.example.com/"), "bearer_token_env"),
            (
                McpServerConfig {
                    transport: Some("websocket".into()),
                    ..remote("https://x.example/")
                },
                "\"streamable-http\" or \"sse\"",
            ),
            (
                McpServerConfig {
                    sandbox: true,
                    ..remote("https://x.example/")
                },
                "`sandbox`",
            ),
        ] {
            let err = validate(&config).unwrap_err();
            assert!(err.contains(says), "{says}: {err}");
        }
    }

    #[test]
    fn tokens_and_header_values_come_from_the_environment() {
        let mut config = remote("https://x.example/mcp");
        config.bearer_token_env = Some("DOCS_TOKEN".into());
        config
            .headers
            .insert("X-Team".into(), "infra-${TEAM}".into());
        let env = |name: &str| match name {
            "DOCS_TOKEN" => Some("s3cret".to_owned()),
            "TEAM" => Some("blue".to_owned()),
            _ => None,
        };
        let (auth, headers) = credentials(&config, &env).unwrap();
        assert_eq!(auth.as_deref(), Some("s3cret"));
        assert_eq!(
            headers[&reqwest013::header::HeaderName::from_static("x-team")],
            "infra-blue"
        );
        let unset = |_: &str| None;
        let err = credentials(&config, &unset).unwrap_err();
        assert!(err.contains("export the token as DOCS_TOKEN"), "{err}");
    }
}

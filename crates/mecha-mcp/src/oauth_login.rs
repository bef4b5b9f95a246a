//! `mecha mcp login NAME`: the authorization-code flow with PKCE, with the
//! browser sent back to a listener on loopback (RFC 8252), or, on a machine
//! with no browser, the address the browser ended on pasted in.

use std::path::Path;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::config::McpServerConfig;
use crate::oauth::{AuthState, CredentialFile, auth_state};

/// The page the browser shows once it is back.
const DONE_PAGE: &str = "<!doctype html><title>mecha</title><p>Logged in. You can close this tab \
                         and go back to the terminal.</p>";

/// A login under way: the address to open, and the listener waiting for
/// the browser to come back.
pub struct Login {
    session: AuthorizationSession,
    metadata: AuthorizationMetadata,
    listener: TcpListener,
    file: CredentialFile,
    config: McpServerConfig,
    dir: std::path::PathBuf,
}

/// rmcp's OAuth client is reqwest 0.13 built without a TLS provider of its
/// own: the process gets ring, as the streamable-HTTP client does.
pub(crate) fn install_tls_provider() {
    // An error only says a provider is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Login {
    /// Discovers the server's authorization server, registers mecha with
    /// it (or uses the configured `client_id`), and makes the address to
    /// open. Nothing is stored until the login completes.
    pub async fn start(config: &McpServerConfig, dir: &Path) -> Result<Self, String> {
        let Some(url) = config.url.as_deref() else {
            return Err(format!(
                "`{}` is a local server (a command); only a server reached by `url` is logged \
                 into",
                config.name
            ));
        };
        crate::remote::validate(config)?;
        install_tls_provider();
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| format!("OAuth for {url}: {e}"))?;
        let resolution = manager
            .resolve_metadata()
            .await
            .map_err(|e| format!("cannot find how {url} is logged into: {e}"))?;
        if !resolution.source.is_discovered() {
            return Err(format!(
                "{url} publishes no OAuth metadata, so it takes no login; if it wants a token, \
                 put it in a variable and name that in bearer_token_env"
            ));
        }
        manager.set_metadata(resolution.metadata.clone());
        let file = CredentialFile::new(dir, config);
        manager.set_credential_store(file.clone());
        let wanted = config.callback_port.unwrap_or(0);
        let listener =
            TcpListener::bind(("127.0.0.1", wanted))
                .await
                .map_err(|e| match wanted {
                    0 => format!("cannot listen on loopback for the browser: {e}"),
                    port => format!(
                        "cannot listen on 127.0.0.1:{port} (callback_port) for the browser: {e}; \
                     stop what holds it, or change the port here and with the authorization \
                     server"
                    ),
                })?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let mut request = AuthorizationRequest::new(format!("http://127.0.0.1:{port}/callback"))
            .with_client_name("mecha");
        if let Some(client_id) = &config.client_id {
            request = request.with_preregistered_client(client_id.clone());
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| match &config.client_id {
                None => format!(
                    "{url}'s authorization server did not register mecha ({e}); if it wants a \
                     client registered beforehand, set `client_id` in the [[mcp]] entry"
                ),
                Some(id) => format!("{url}'s authorization server refused client `{id}`: {e}"),
            })?;
        Ok(Self {
            session,
            metadata: resolution.metadata,
            listener,
            file,
            config: config.clone(),
            dir: dir.to_path_buf(),
        })
    }

    /// The address the user opens in a browser.
    pub fn authorization_url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// Where the browser comes back to.
    pub fn redirect_uri(&self) -> &str {
        &self.session.redirect_uri
    }

    /// Waits up to `limit` for the browser to come back, or for `pasted`
    /// (the address it ended on, typed in), exchanges the code for tokens
    /// and keeps them. What the server then holds for this login.
    pub async fn finish(
        self,
        pasted: impl Future<Output = Option<String>>,
        limit: Duration,
    ) -> Result<AuthState, String> {
        let callback = tokio::select! {
            url = callback(&self.listener) => url?,
            Some(url) = pasted => url.trim().to_owned(),
            () = tokio::time::sleep(limit) => {
                return Err(format!(
                    "no answer from the browser within {} s; run the login again",
                    limit.as_secs()
                ));
            }
        };
        refused(&callback)?;
        self.session
            .handle_callback_url(&callback)
            .await
            .map_err(|e| format!("the authorization server did not grant the login: {e}"))?;
        let mut saved = self.file.for_this_url()?.unwrap_or_default();
        saved.url = self.config.url.clone().unwrap_or_default();
        saved.metadata = Some(self.metadata);
        self.file.write(&saved)?;
        Ok(auth_state(&self.config, Some(&self.dir)))
    }
}

/// An error the authorization server sent back instead of a code, in words.
fn refused(callback: &str) -> Result<(), String> {
    let url = url::Url::parse(callback)
        .map_err(|e| format!("`{callback}` is not the address the browser ended on ({e})"))?;
    let param = |key: &str| {
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    match param("error") {
        Some(error) => Err(format!(
            "the authorization server refused the login: {error}{}",
            param("error_description")
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )),
        None => Ok(()),
    }
}

/// The first request to `/callback` on `listener`, as a full URL; other
/// paths (a browser's favicon) get a 404 and are waited past.
async fn callback(listener: &TcpListener) -> Result<String, String> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the loopback listener failed: {e}"))?;
        let mut head = Vec::new();
        let mut chunk = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
        let head = String::from_utf8_lossy(&head);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_default();
        if !target.starts_with("/callback?") {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let page = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: \
             {}\r\nconnection: close\r\n\r\n{DONE_PAGE}",
            DONE_PAGE.len()
        );
        let _ = stream.write_all(page.as_bytes()).await;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        return Ok(format!("http://127.0.0.1:{port}{target}"));
    }
}

/// `mecha mcp logout NAME`: forgets the server's tokens; whether there
/// were any.
pub fn logout(name: &str, dir: &Path) -> Result<bool, String> {
    let path = crate::oauth::credentials_file(dir, name);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
    }
}

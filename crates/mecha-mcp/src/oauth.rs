//! Logging in to a remote MCP server with OAuth, through rmcp's `auth`
//! module: discovery (protected-resource metadata, then the authorization
//! server's), dynamic client registration or a configured `client_id`, the
//! authorization-code flow with PKCE and the RFC 8707 `resource`, and
//! refresh before expiry. What mecha adds is where the tokens live and
//! who may use them.
//!
//! One file per server, `$MECHA_HOME/credentials/mcp-<name>.json`, mode
//! 0600 in a 0700 directory, holding the URL it was granted for: a config
//! that gives the same name to another URL (a project's `mecha.toml`
//! naming `docs` after the user's own `docs`) gets no token, only a line
//! saying to log in again. The file also keeps the discovered metadata, so
//! a start does not repeat discovery.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

use crate::config::McpServerConfig;

/// What the credentials file holds.
#[derive(Serialize, Deserialize, Default, Clone)]
pub(crate) struct Saved {
    /// The server URL the grant is for.
    pub url: String,
    #[serde(default)]
    pub metadata: Option<AuthorizationMetadata>,
    #[serde(default)]
    pub credentials: Option<StoredCredentials>,
}

/// The credentials file of one server, as rmcp's credential store.
#[derive(Clone)]
pub(crate) struct CredentialFile {
    path: PathBuf,
    url: String,
}

/// Where `name`'s tokens live under `dir` (`$MECHA_HOME/credentials`).
pub fn credentials_file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("mcp-{name}.json"))
}

impl CredentialFile {
    pub(crate) fn new(dir: &Path, config: &McpServerConfig) -> Self {
        Self {
            path: credentials_file(dir, &config.name),
            url: config.url.clone().unwrap_or_default(),
        }
    }

    /// What the file holds; `None` when there is no file.
    pub(crate) fn read(&self) -> Result<Option<Saved>, String> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                format!(
                    "{} is not a credentials file mecha wrote ({e}); remove it and log in again",
                    self.path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", self.path.display())),
        }
    }

    /// The saved login when it was made for this URL.
    pub(crate) fn for_this_url(&self) -> Result<Option<Saved>, String> {
        Ok(self.read()?.filter(|saved| saved.url == self.url))
    }

    /// Writes `saved` whole: a temporary file of mode 0600 beside it,
    /// renamed over it, in a directory of mode 0700.
    pub(crate) fn write(&self, saved: &Saved) -> Result<(), String> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", self.path.display());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(fail)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
        let bytes = serde_json::to_vec_pretty(saved).map_err(|e| e.to_string())?;
        let temporary = self.path.with_extension("json.tmp");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(fail)?;
        file.write_all(&bytes).map_err(fail)?;
        file.sync_all().map_err(fail)?;
        std::fs::rename(&temporary, &self.path).map_err(fail)
    }

    /// This file's saved state for this URL, or a fresh one.
    fn current(&self) -> Result<Saved, AuthError> {
        let saved = self
            .for_this_url()
            .map_err(AuthError::CredentialStoreError)?;
        Ok(saved.unwrap_or_else(|| Saved {
            url: self.url.clone(),
            ..Saved::default()
        }))
    }
}

#[async_trait::async_trait]
impl CredentialStore for CredentialFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.current()?.credentials)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let mut saved = self.current()?;
        saved.credentials = Some(credentials);
        self.write(&saved).map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let mut saved = self.current()?;
        saved.credentials = None;
        self.write(&saved).map_err(AuthError::CredentialStoreError)
    }
}

/// How a remote server is authorized, for `mecha mcp check` and the
/// start-up lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthState {
    /// A command, not a URL: nothing to authorize.
    Local,
    /// No token of any kind is sent.
    None,
    /// `bearer_token_env` names the variable.
    Bearer { var: String },
    /// An OAuth login, with how long its access token has left (`None`:
    /// the server gave no expiry) and whether it can be refreshed.
    LoggedIn {
        expires_in_s: Option<i64>,
        refreshable: bool,
    },
    /// A login kept for another URL under this name.
    OtherUrl { url: String },
    /// The credentials file cannot be read.
    Broken { reason: String },
}

impl std::fmt::Display for AuthState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local => f.write_str("none (a local server)"),
            Self::None => f.write_str("none sent"),
            Self::Bearer { var } => write!(f, "bearer token from ${var}"),
            Self::LoggedIn {
                expires_in_s,
                refreshable,
            } => {
                f.write_str("logged in with OAuth")?;
                match expires_in_s {
                    Some(s) if *s <= 0 => f.write_str(", access token expired")?,
                    Some(s) => write!(f, ", access token good for {}", human_secs(*s))?,
                    None => {}
                }
                match refreshable {
                    true => f.write_str(", refreshed when it runs out"),
                    false => f.write_str(", no refresh token (log in again when it runs out)"),
                }
            }
            Self::OtherUrl { url } => write!(
                f,
                "not logged in: the login under this name is for {url}; run `mecha mcp login` \
                 for this URL"
            ),
            Self::Broken { reason } => write!(f, "unusable credentials: {reason}"),
        }
    }
}

fn human_secs(s: i64) -> String {
    if s < 120 {
        format!("{s} s")
    } else if s < 7200 {
        format!("{} min", s / 60)
    } else {
        format!("{} h", s / 3600)
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How `config` is authorized, with its tokens under `dir`.
pub fn auth_state(config: &McpServerConfig, dir: Option<&Path>) -> AuthState {
    if config.url.is_none() {
        return AuthState::Local;
    }
    if let Some(var) = &config.bearer_token_env {
        return AuthState::Bearer { var: var.clone() };
    }
    let Some(dir) = dir else {
        return AuthState::None;
    };
    let file = CredentialFile::new(dir, config);
    match file.read() {
        Err(reason) => AuthState::Broken { reason },
        Ok(None) => AuthState::None,
        Ok(Some(saved)) if saved.url != file.url => AuthState::OtherUrl { url: saved.url },
        Ok(Some(Saved {
            credentials: None, ..
        })) => AuthState::None,
        Ok(Some(Saved {
            credentials: Some(stored),
            ..
        })) => logged_in(&stored),
    }
}

fn logged_in(stored: &StoredCredentials) -> AuthState {
    use oauth2::TokenResponse;
    let Some(token) = &stored.token_response else {
        return AuthState::None;
    };
    let expires_in_s = match (token.expires_in(), stored.token_received_at) {
        (Some(lasts), Some(at)) => {
            let end = at.saturating_add(lasts.as_secs());
            Some(i64::try_from(end).unwrap_or(i64::MAX) - i64::try_from(now_secs()).unwrap_or(0))
        }
        _ => None,
    };
    AuthState::LoggedIn {
        expires_in_s,
        refreshable: token.refresh_token().is_some(),
    }
}

/// An authorization manager for `config`'s URL with its tokens in `file`,
/// ready to hand out (and refresh) an access token; `None` when there is no
/// login for this URL.
pub(crate) async fn manager_from_login(
    config: &McpServerConfig,
    file: CredentialFile,
) -> Result<Option<AuthorizationManager>, String> {
    let Some(saved) = file.for_this_url()? else {
        return Ok(None);
    };
    if saved.credentials.is_none() {
        return Ok(None);
    }
    let url = config.url.as_deref().unwrap_or_default();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| format!("OAuth for {url}: {e}"))?;
    if let Some(metadata) = saved.metadata {
        manager.set_metadata(metadata);
    }
    manager.set_credential_store(file);
    match manager.initialize_from_store().await {
        Ok(true) => Ok(Some(manager)),
        Ok(false) => Ok(None),
        Err(e) => Err(format!(
            "the OAuth login for {url} cannot be used ({e}); run `mecha mcp login {}` again",
            config.name
        )),
    }
}

//! Turning a URL into the addresses `http_fetch` may connect to, and making
//! sure it connects to nothing else.
//!
//! The order matters: resolve once, vet every answer, then hand exactly the
//! vetted addresses to the HTTP client through [`Pinned`]. A second lookup at
//! connect time is what DNS rebinding (a TTL-0 answer that changes between
//! check and connect) exploits, so there is none.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use url::{Host, Url};

use mecha_core::net::{EgressGuard, Refused, Resolver};

/// Why a URL may not be fetched. `Display` is the model-facing reason, to
/// follow "refused: `<url>` ".
#[derive(Debug)]
pub enum Refusal {
    /// Not http or https.
    Scheme(String),
    /// `user:pass@` before the host. Carries the host it actually parses to.
    Credentials(String),
    /// No host at all (cannot happen for http(s) with the `url` crate, kept
    /// so nothing panics if it ever does).
    NoHost,
    /// The host is an IP literal that failed the check.
    Literal(Refused),
    /// The name resolved to at least one address that failed the check.
    Name { host: String, refused: Refused },
    /// The lookup itself failed or came back empty.
    Lookup { host: String, error: io::Error },
}

impl Refusal {
    /// Whether this is the guard saying no (as opposed to a lookup failure,
    /// which the model may retry).
    pub fn is_policy(&self) -> bool {
        !matches!(self, Refusal::Lookup { .. })
    }
}

impl Refusal {
    /// The model-facing reason, to follow "refused: `<url>` ", naming the
    /// tool whose guard said no.
    pub fn describe(&self, tool: &str) -> String {
        let public_only = format!("{tool} only reaches public internet addresses");
        match self {
            Refusal::Scheme(scheme) => format!(
                "uses the {scheme}: scheme; {tool} only fetches http:// and https:// URLs{}",
                if scheme == "file" {
                    " (read local files with fs_read)"
                } else {
                    ""
                }
            ),
            Refusal::Credentials(host) => format!(
                "carries a username or password before the host (the host it names is `{host}`); \
                 {tool} sends no credentials. Drop everything between `//` and the last `@`"
            ),
            Refusal::NoHost => "has no host".to_owned(),
            Refusal::Literal(refused) => format!("points at {refused}; {public_only}"),
            Refusal::Name { host, refused } => format!(
                "names `{host}`, which resolves to {refused}; {public_only}, \
                 and refuses a name if any one of its addresses is not public"
            ),
            Refusal::Lookup { host, error } => {
                format!("names `{host}`, which could not be resolved: {error}")
            }
        }
    }
}

/// As `http_fetch` says it.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe("http_fetch"))
    }
}

/// What may be connected to for one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vetted {
    /// The host as the HTTP client will see it (lowercase, punycode; an IP
    /// literal in its canonical spelling).
    pub host: String,
    /// Every address the host resolved to, all of which passed. For an IP
    /// literal, that one address.
    pub addrs: Vec<IpAddr>,
    /// The host was an IP literal: the client connects to it without any
    /// lookup, so there is nothing to pin.
    pub literal: bool,
}

/// Checks a parsed URL: scheme, credentials, and every address its host
/// stands for. Resolves a name exactly once, through `resolver`.
pub async fn vet(
    url: &Url,
    guard: &EgressGuard,
    resolver: &dyn Resolver,
) -> Result<Vetted, Refusal> {
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(Refusal::Scheme(scheme.to_owned()));
    }
    let host = url.host().ok_or(Refusal::NoHost)?;
    // `http://user@127.0.0.1:80@evil.com/` parses to host evil.com with the
    // rest as userinfo. Refusing userinfo outright means what a person
    // reading the call sees before the last `@` never has to be untangled,
    // and no Authorization header the model wrote is sent.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Credentials(host.to_string()));
    }
    // IP literals: reqwest skips the resolver for them, so this check is
    // the only one they get. `url` has already normalised every spelling
    // (2130706433, 0x7f.1, 127.1, 0177.0.0.1, %31%32%37...) to the address.
    let (name, literal) = match host {
        Host::Ipv4(v4) => return vet_literal(IpAddr::V4(v4), guard),
        Host::Ipv6(v6) => return vet_literal(IpAddr::V6(v6), guard),
        Host::Domain(name) => (name, false),
    };
    let addrs = resolver
        .lookup(name)
        .await
        .map_err(|error| Refusal::Lookup {
            host: name.to_owned(),
            error,
        })?;
    if addrs.is_empty() {
        return Err(Refusal::Lookup {
            host: name.to_owned(),
            error: io::Error::new(io::ErrorKind::NotFound, "no addresses in the answer"),
        });
    }
    // One bad answer refuses the whole name: a client free to pick among
    // the answers (or fall back from one to the next) would reach it.
    for &addr in &addrs {
        guard.check(addr).map_err(|refused| Refusal::Name {
            host: name.to_owned(),
            refused,
        })?;
    }
    Ok(Vetted {
        host: name.to_owned(),
        addrs,
        literal,
    })
}

fn vet_literal(addr: IpAddr, guard: &EgressGuard) -> Result<Vetted, Refusal> {
    guard.check(addr).map_err(Refusal::Literal)?;
    Ok(Vetted {
        host: addr.to_string(),
        addrs: vec![addr],
        literal: true,
    })
}

/// The HTTP client's resolver for one fetch: answers the vetted host with
/// the vetted addresses and refuses every other name, so the client can
/// never do a lookup of its own.
#[derive(Debug, Clone)]
pub struct Pinned {
    host: String,
    addrs: Arc<[SocketAddr]>,
}

impl Pinned {
    pub fn new(vetted: &Vetted) -> Self {
        // Port 0: the client substitutes the URL's port, or the scheme's.
        let addrs = vetted.addrs.iter().map(|&ip| SocketAddr::new(ip, 0));
        Self {
            host: vetted.host.clone(),
            addrs: addrs.collect(),
        }
    }
}

/// A client that can reach only what `vetted` allows: no redirect is
/// followed (a Location is a second destination nobody vetted; the caller
/// vets it as a hop of its own), no proxy is used (HTTP(S)_PROXY/ALL_PROXY
/// would hand the name to a proxy to resolve, voiding the pin, and could
/// point at an internal host), and the only resolver is the vetted host's
/// vetted addresses. IP literals never reach it; [`vet`] judged those.
pub fn pinned_client(vetted: &Vetted, user_agent: &str) -> Result<reqwest::Client, String> {
    let builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(Pinned::new(vetted)))
        .user_agent(user_agent);
    crate::trusting::trusting_extra_roots(builder)?
        .build()
        .map_err(|e| mecha_core::error_chain(&e))
}

impl reqwest::dns::Resolve for Pinned {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let result: Result<reqwest::dns::Addrs, Box<dyn std::error::Error + Send + Sync>> =
            if name.as_str().eq_ignore_ascii_case(&self.host) {
                let addrs = self.addrs.to_vec();
                Ok(Box::new(addrs.into_iter()))
            } else {
                Err(format!(
                    "`{}` was not vetted; mecha resolves only the host it checked",
                    name.as_str()
                )
                .into())
            };
        Box::pin(std::future::ready(result))
    }
}

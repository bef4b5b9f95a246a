//! Which addresses a connection made for the model may reach: the one
//! check `http_fetch` and the sandbox's host-allowlist proxy share, and the
//! resolver both look names up through.

use std::io;
use std::net::IpAddr;

use async_trait::async_trait;
use ipnet::IpNet;

use super::classify::{Refused, classify};

/// Looks a host name up. Injectable so tests can answer with what they like,
/// including an answer that changes between calls.
#[async_trait]
pub trait Resolver: Send + Sync {
    /// Every address `host` resolves to. Called once per fetch.
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>>;
}

/// The system resolver (`getaddrinfo`, via tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolver for SystemResolver {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        // The port is irrelevant to the answer; the URL's port is used later.
        let addrs = tokio::net::lookup_host((host, 0)).await?;
        Ok(addrs.map(|a| a.ip()).collect())
    }
}

/// The address check, plus the exemptions a test needs to reach its own
/// loopback servers.
#[derive(Debug, Clone, Default)]
pub struct EgressGuard {
    exempt: Vec<IpNet>,
}

impl EgressGuard {
    /// A guard that admits only public internet addresses.
    pub fn new() -> Self {
        Self::default()
    }

    /// Exempts one range from the check. The tests use it to reach loopback
    /// servers; nothing in config or the environment leads here. The range
    /// is matched against the address exactly as given, so exempting
    /// 127.0.0.2/32 does not admit `::ffff:127.0.0.2`.
    pub fn allowing(mut self, net: IpNet) -> Self {
        self.exempt.push(net);
        self
    }

    /// `Ok` for a public address or an exempted one.
    pub fn check(&self, addr: IpAddr) -> Result<(), Refused> {
        if self.exempt.iter().any(|net| net.contains(&addr)) {
            return Ok(());
        }
        classify(addr)
    }
}

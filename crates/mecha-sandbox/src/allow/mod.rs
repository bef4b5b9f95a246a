//! `allow_hosts`: network for a confined command that reaches only the
//! hosts the config lists, enforced by mecha rather than by the command.
//!
//! The command gets no network of its own. The bridge (bridge.rs), mecha's
//! own binary started as the first program inside, listens on the
//! sandbox's loopback where `HTTP_PROXY` and friends point, and carries
//! each connection over a UNIX socket bound in from the host to the proxy
//! (proxy.rs), which checks the destination against the list (hosts.rs)
//! and the address guard before it connects.

mod bridge;
mod hosts;
mod proxy;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Arc;

use mecha_core::net::{EgressGuard, SystemResolver};

pub use bridge::{BRIDGE_ARG, BRIDGE_LISTEN, run_bridge};
pub use hosts::Allowlist;
pub use proxy::{Policy, Proxy};

/// Where the bridge's program and the proxy's socket are inside.
pub(crate) const BRIDGE_INSIDE: &str = "/run/mecha/bridge";
pub(crate) const SOCKET_INSIDE: &str = "/run/mecha/proxy.sock";

/// The proxy variables a confined command gets, in both spellings tools
/// read: everything through the bridge, nothing for loopback.
pub(crate) fn proxy_env(env: &mut BTreeMap<OsString, OsString>) {
    let url = format!("http://{BRIDGE_LISTEN}");
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        env.insert(name.into(), url.clone().into());
        env.insert(name.to_ascii_lowercase().into(), url.clone().into());
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.insert(name.into(), "localhost,127.0.0.1,::1".into());
    }
}

/// A proxy for one job, judging by `list`, the address guard and the
/// system's resolver.
pub(crate) fn start_proxy(list: &Arc<Allowlist>) -> std::io::Result<Proxy> {
    Proxy::start(Policy {
        allow: Arc::clone(list),
        guard: EgressGuard::new(),
        resolver: Arc::new(SystemResolver),
    })
}

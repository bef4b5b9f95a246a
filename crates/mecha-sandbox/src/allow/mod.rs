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
use std::ffi::{OsStr, OsString};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::Arc;

use mecha_core::net::{EgressGuard, SystemResolver};

use crate::{HostEnv, Job, Lease, Network, SandboxError};

pub use bridge::{BRIDGE_ARG, BRIDGE_CHECK, BRIDGE_LISTEN, run_bridge};
pub use hosts::Allowlist;
pub use proxy::{Policy, Proxy};

/// Where the bridge's program and the proxy's socket are inside.
pub(crate) const BRIDGE_INSIDE: &str = "/run/mecha/bridge";
pub(crate) const SOCKET_INSIDE: &str = "/run/mecha/proxy.sock";

/// The proxy variables a confined command gets, in both spellings tools
/// read: everything through the bridge, except the sandbox's own loopback,
/// unless the list names a loopback address: then that address means the
/// host's (a registry mirror on the machine), reached through the proxy.
fn proxy_env(env: &mut BTreeMap<OsString, OsString>, list: &Allowlist) {
    let url = format!("http://{BRIDGE_LISTEN}");
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        env.insert(name.into(), url.clone().into());
        env.insert(name.to_ascii_lowercase().into(), url.clone().into());
    }
    let mut direct = vec!["localhost"];
    for (written, addr) in [
        ("127.0.0.1", IpAddr::V4(Ipv4Addr::LOCALHOST)),
        ("::1", IpAddr::V6(Ipv6Addr::LOCALHOST)),
    ] {
        if !list.lists_address(addr) {
            direct.push(written);
        }
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.insert(name.into(), direct.join(",").into());
    }
}

/// What a backend binds into an `allow_hosts` job: mecha's binary (at
/// [`BRIDGE_INSIDE`]) and the job's proxy socket (at [`SOCKET_INSIDE`]).
#[derive(Debug)]
pub(crate) struct Bridge {
    pub exe: PathBuf,
    pub socket: PathBuf,
}

/// For a job with `allow_hosts`: starts its proxy (held by `lease` for as
/// long as the job runs), adds the proxy variables to `env`, and returns
/// what to bind in. `None` for a job with all of the network or none.
pub(crate) fn route(
    job: &Job<'_>,
    host: &HostEnv,
    env: &mut BTreeMap<OsString, OsString>,
    lease: &mut Lease,
) -> Result<Option<Bridge>, SandboxError> {
    let Network::Hosts(list) = &job.network else {
        return Ok(None);
    };
    let fail = |reason: String| SandboxError::Confine {
        program: job.program.to_string_lossy().into_owned(),
        reason,
    };
    let exe = host
        .bridge
        .clone()
        .ok_or_else(|| fail("allow_hosts needs mecha's own executable as its bridge".into()))?;
    // The job does not run rather than run without the enforcement.
    let proxy = start_proxy(list)
        .map_err(|e| fail(format!("the allow_hosts proxy could not start: {e}")))?;
    proxy_env(env, list);
    let socket = proxy.socket().to_owned();
    lease.proxy = Some(proxy);
    Ok(Some(Bridge { exe, socket }))
}

/// The program line inside a bridged job: the bridge, then the job's own.
pub(crate) fn bridged(program: &OsStr, args: &[OsString]) -> Vec<OsString> {
    let mut line: Vec<OsString> = [BRIDGE_INSIDE, BRIDGE_ARG, SOCKET_INSIDE, "--"]
        .map(OsString::from)
        .into();
    line.push(program.to_owned());
    line.extend(args.iter().cloned());
    line
}

/// A proxy for one job, judging by `list`, the address guard and the
/// system's resolver.
fn start_proxy(list: &Arc<Allowlist>) -> std::io::Result<Proxy> {
    Proxy::start(Policy {
        allow: Arc::clone(list),
        guard: EgressGuard::new(),
        resolver: Arc::new(SystemResolver),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_proxy(entries: &[&str]) -> OsString {
        let written: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
        let mut env = BTreeMap::new();
        proxy_env(&mut env, &Allowlist::parse(&written).unwrap());
        assert_eq!(
            env.get(OsStr::new("no_proxy")),
            env.get(OsStr::new("NO_PROXY"))
        );
        env[OsStr::new("NO_PROXY")].clone()
    }

    #[test]
    fn the_sandboxs_loopback_stays_direct_unless_the_list_names_the_hosts() {
        assert_eq!(no_proxy(&["registry.example"]), "localhost,127.0.0.1,::1");
        assert_eq!(no_proxy(&["127.0.0.1:4873"]), "localhost,::1");
        assert_eq!(no_proxy(&["[::1]:8080", "127.0.0.1"]), "localhost");
    }
}

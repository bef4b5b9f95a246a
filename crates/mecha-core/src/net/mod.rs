//! Addresses and names: which IP addresses are public internet addresses
//! ([`classify`]), the guard built on it ([`EgressGuard`]) and the resolver
//! both `http_fetch` and the sandbox's allowlist proxy use.

mod classify;
mod guard;

pub use classify::{Blocked, Refused, classify, embedded_v4};
pub use guard::{EgressGuard, Resolver, SystemResolver};

//! The egress guard: which addresses `http_fetch` and `web_open` may
//! connect to.
//!
//! [`classify`] judges one address; [`vet`] judges a URL (scheme,
//! credentials, IP literal or every address its name resolves to);
//! [`Pinned`] (inside [`pinned_client`]) then makes the HTTP client connect
//! to the vetted addresses and nothing else.

mod resolve;

pub use mecha_core::net::{
    Blocked, EgressGuard, Refused, Resolver, SystemResolver, classify, embedded_v4,
};
pub use resolve::{Pinned, Refusal, Vetted, pinned_client, vet};

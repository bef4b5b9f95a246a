//! The egress guard: which addresses `http_fetch` may connect to.
//!
//! [`classify`] judges one address; [`vet`] judges a URL (scheme,
//! credentials, IP literal or every address its name resolves to);
//! [`Pinned`] then makes the HTTP client connect to the vetted addresses
//! and nothing else.

mod classify;
mod resolve;

pub use classify::{Blocked, Refused, classify, embedded_v4};
pub use resolve::{EgressGuard, Pinned, Refusal, Resolver, SystemResolver, Vetted, vet};

//! The egress guard: which addresses `http_fetch` may connect to.

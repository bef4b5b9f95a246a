//! Every HTTP client of the built-in tools trusts the same roots: rustls's
//! built-in ones plus what `SSL_CERT_FILE` adds ([`mecha_core::extra_roots`]).

/// `builder` with the user's extra roots added, or why they cannot be.
pub(crate) fn trusting_extra_roots(
    mut builder: reqwest::ClientBuilder,
) -> Result<reqwest::ClientBuilder, String> {
    for der in mecha_core::extra_roots()? {
        let cert = reqwest::Certificate::from_der(der).map_err(|e| {
            format!(
                "a certificate in {} cannot be used: {}",
                mecha_core::CERT_FILE_VAR,
                mecha_core::error_chain(&e)
            )
        })?;
        builder = builder.add_root_certificate(cert);
    }
    Ok(builder)
}

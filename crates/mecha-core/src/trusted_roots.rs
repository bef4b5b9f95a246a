//! The certificates a user asks mecha to trust beyond its built-in roots:
//! a PEM bundle named by `SSL_CERT_FILE`, the variable OpenSSL, curl and
//! Python read, so a company's inspecting proxy or a self-signed server
//! (a local vLLM behind TLS, an MCP server on the intranet) works with the
//! bundle the user already has. Every TLS client mecha builds (the model
//! providers, remote MCP servers, the search backends, `http_fetch`)
//! adds these, so one variable means the same thing everywhere.
//!
//! Read once per process. A variable that is set but names nothing usable
//! is an error for every client, never an empty list: a user who set it
//! expects those certificates to count, and a silent fallback to the
//! built-in roots would fail later with an unexplained certificate error.

use std::sync::OnceLock;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// The variable naming the PEM bundle.
pub const CERT_FILE_VAR: &str = "SSL_CERT_FILE";

/// The extra roots, as DER: empty when `SSL_CERT_FILE` is unset or empty,
/// an error naming the variable and the fix when it cannot be used.
pub fn extra_roots() -> Result<&'static [CertificateDer<'static>], String> {
    static ROOTS: OnceLock<Result<Vec<CertificateDer<'static>>, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| match std::env::var_os(CERT_FILE_VAR) {
            Some(path) if !path.is_empty() => read_bundle(std::path::Path::new(&path)),
            _ => Ok(Vec::new()),
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// The certificates of the PEM bundle at `path`; at least one.
fn read_bundle(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let fix = format!("point {CERT_FILE_VAR} at a PEM file of CA certificates, or unset it");
    let text = std::fs::read(path).map_err(|e| {
        format!(
            "{CERT_FILE_VAR} names {}, which cannot be read ({}); {fix}",
            path.display(),
            crate::system_words(&e)
        )
    })?;
    let certs = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            format!(
                "{CERT_FILE_VAR} names {}, which is not a readable PEM bundle ({e}); {fix}",
                path.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "{CERT_FILE_VAR} names {}, which holds no certificate; {fix}",
            path.display()
        ));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    // A real certificate (a throwaway self-signed one), so the parser is
    // exercised on what a bundle holds.
    const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBfzCCASWgAwIBAgIUDHhoylkwc6FCPoecrLCg2fx5/CkwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKbWVjaGEtdGVzdDAeFw0yNjEyMDcwMTA5MThaFw0zNjEyMDQw
MTA5MThaMBUxEzARBgNVBAMMCm1lY2hhLXRlc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATlJkz//nZEsU3fC8FN/PqzDuqf3Nqb9oMcpBT/1FisiV3KMs5KpNvE
rIo0fHGpBolLoJ3YY1t6k8SEeNPcP+IIo1MwUTAdBgNVHQ4EFgQUIYZ3OC+evzJA
cEtYtdgvbmOBe4QwHwYDVR0jBBgwFoAUIYZ3OC+evzJAcEtYtdgvbmOBe4QwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEA+Y3Y2FwqjB7xxSSp5RHx
A1MSAt14skFdruMb0VH2/KUCIBV34upQO8/eGsVr+VvjUJLEtw0ehQonpcMxsET+
+WWk
-----END CERTIFICATE-----
";

    #[test]
    fn a_bundle_gives_its_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, format!("# a comment\n{CERT}\n{CERT}")).unwrap();
        assert_eq!(read_bundle(&file).unwrap().len(), 2);
    }

    #[test]
    fn an_unusable_file_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let e = read_bundle(&missing).unwrap_err();
        assert!(
            e.contains("SSL_CERT_FILE names") && e.contains("cannot be read"),
            "{e}"
        );
        assert!(e.contains("unset it"), "{e}");

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = read_bundle(&empty).unwrap_err();
        assert!(e.contains("holds no certificate"), "{e}");
    }
}

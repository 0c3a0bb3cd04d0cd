//! HTTPS: the certificate chain and key (PEM) loaded into rustls (ring provider, TLS 1.2 and
//! 1.3). Connections are accepted and served by [`crate::conn`], as plain HTTP's are.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

use crate::ServerError;

/// The certificate chain and private key files.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

fn bad(path: &Path, what: &str, e: impl std::fmt::Display) -> ServerError {
    ServerError::config(
        format!("{}: cannot read the TLS {what}: {e}", path.display()),
        Some("--tls-cert takes a PEM certificate chain, --tls-key its PEM private key"),
    )
}

/// A TLS acceptor for the files, refusing what rustls would refuse at the first handshake.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, ServerError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| bad(&files.cert, "certificate", e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(&files.cert, "certificate", e))?;
    if certs.is_empty() {
        return Err(bad(&files.cert, "certificate", "no CERTIFICATE block"));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| bad(&files.key, "key", e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::config(format!("TLS: {e}"), None))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            ServerError::config(
                format!("TLS: the key does not fit the certificate: {e}"),
                Some("pass the key the certificate was issued for"),
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

//! HTTPS: the certificate chain and key (PEM) loaded into rustls (ring provider, TLS 1.2 and
//! 1.3), and the accept loop that serves the application over TLS connections with the same
//! graceful shutdown as plain HTTP.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::ServerError;

/// How long a client has to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long requests in flight may take to finish after shutdown is asked for.
pub(crate) const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

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

/// Serves `app` over TLS on `listener` until `shutdown` completes, then drains.
pub async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: TlsAcceptor,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // A failed accept (e.g. too many open files) must not end the server.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(app.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await
            else {
                return;
            };
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HANDSHAKE_TIMEOUT)
                .serve_connection(TokioIo::new(tls), service);
            let _ = watcher.watch(conn).await;
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown()).await;
    Ok(())
}

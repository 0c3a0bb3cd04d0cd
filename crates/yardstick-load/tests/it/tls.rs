//! HTTPS: the real client against a rustls server on loopback with a self-signed certificate
//! (tests/fixtures/tls). Trusted through `ca_cert`, the request succeeds; without it, the
//! certificate is refused and the request is a connect error, never a silent plain-text retry.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;
use yardstick_load::plan::{Lengths, PlannedRequest};
use yardstick_load::{Api, Client, ClientConfig, Clock, ErrorClass};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
}

/// Serves `n` connections over TLS, one request each, answering with a chat completion; each
/// request's head is sent on the returned channel.
async fn https_server(n: usize) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(fixture("cert.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(fixture("key.pem")).unwrap();
    let cfg = rustls::ServerConfig::builder_with_provider(
        rustls::crypto::ring::default_provider().into(),
    )
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        for _ in 0..n {
            let (tcp, _) = l.accept().await.unwrap();
            let Ok(mut s) = acceptor.accept(tcp).await else {
                continue; // the client refused our certificate
            };
            let mut buf = Vec::new();
            let mut b = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                let k = s.read(&mut b).await.unwrap();
                assert!(k > 0, "client closed early");
                buf.extend_from_slice(&b[..k]);
            }
            tx.send(String::from_utf8_lossy(&buf).into_owned()).unwrap();
            let body = r#"{"choices":[{"message":{"role":"assistant","content":"over tls"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#;
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            s.write_all(resp.as_bytes()).await.unwrap();
            s.flush().await.unwrap();
            let _ = s.shutdown().await;
        }
    });
    (format!("https://127.0.0.1:{port}"), rx)
}

fn plan() -> PlannedRequest {
    PlannedRequest {
        index: 0,
        lengths: Lengths {
            input: 3,
            output: Some(2),
        },
        body: bytes::Bytes::from_static(
            br#"{"model":"m","messages":[{"role":"user","content":"a b c"}]}"#,
        ),
        kind: None,
        image_bytes: None,
        class: None,
    }
}

fn config(url: &str, ca_cert: Option<PathBuf>) -> ClientConfig {
    ClientConfig {
        url: url.to_string(),
        api: Api::Chat,
        stream: false,
        request_timeout: Duration::from_secs(10),
        bearer_env: None,
        max_idle: 1,
        ca_cert,
        retry: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_trusted_certificate_and_a_refused_one() {
    let (url, mut heads) = https_server(2).await;

    let c = Client::new(&config(&url, Some(fixture("cert.pem"))), Clock::new(), "t").unwrap();
    let r = c.execute(&plan(), Instant::now(), false).await;
    assert!(r.ok(), "{:?} {:?}", r.error, r.error_message);
    assert_eq!(r.output_tokens, Some(2));
    assert_eq!(r.content_bytes, "over tls".len() as u64);
    let head = heads.recv().await.unwrap();
    assert!(
        head.starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{head}"
    );

    // The webpki roots alone do not know this certificate: refused, classified, explained.
    let c = Client::new(&config(&url, None), Clock::new(), "t").unwrap();
    let r = c.execute(&plan(), Instant::now(), false).await;
    assert_eq!(r.error, Some(ErrorClass::Connect), "{:?}", r.error_message);
    let msg = r.error_message.unwrap_or_default().to_lowercase();
    assert!(msg.contains("certificate"), "{msg}");
}

#[test]
fn a_ca_file_without_certificates_is_refused_when_the_client_is_built() {
    let dir = tempfile_dir();
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let err = Client::new(
        &config("https://127.0.0.1:9", Some(empty.clone())),
        Clock::new(),
        "t",
    )
    .err()
    .expect("an empty CA file is an error")
    .to_string();
    assert!(
        err.contains("empty.pem") && err.contains("no PEM certificate"),
        "{err}"
    );
    let missing = dir.join("missing.pem");
    let err = Client::new(
        &config("https://127.0.0.1:9", Some(missing)),
        Clock::new(),
        "t",
    )
    .err()
    .expect("a missing CA file is an error")
    .to_string();
    assert!(err.contains("missing.pem"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("ys-tls-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

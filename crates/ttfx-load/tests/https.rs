//! An https target: trusted through --ca-file the stream is read like any other;
//! without it the handshake fails and every request is a `connect` error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use ttfx_load::{CancellationToken, Mode};

/// A CA made here and a leaf it signed for `localhost`: the CA's PEM, the leaf, its key.
fn pki() -> (String, ServerConfig) {
    use rcgen::KeyUsagePurpose::{CrlSign, DigitalSignature, KeyCertSign};
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "ttfx load test CA");
    ca.key_usages = vec![KeyCertSign, CrlSign, DigitalSignature];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key: PrivateKeyDer = PrivatePkcs8KeyDer::from(leaf_key.serialize_der()).into();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    (ca.pem(), config)
}

/// A chat endpoint streaming two tokens, over TLS (HTTP/1.1) on a loopback port.
async fn tls_server(config: ServerConfig) -> u16 {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    let app = Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            support::sse_response(support::timed_body(vec![
                (Duration::from_millis(5), support::sse_text("a")),
                (Duration::from_millis(5), support::sse_text("b")),
                (Duration::ZERO, support::SSE_DONE.to_owned()),
            ]))
        }),
    );
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake here.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app))
                    .await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_target_is_read_when_its_ca_is_trusted_and_refused_when_not() {
    let (ca_pem, config) = pki();
    let port = tls_server(config).await;
    let ca_file =
        std::env::temp_dir().join(format!("ttfx-load-test-ca-{}.pem", std::process::id()));
    std::fs::write(&ca_file, ca_pem).unwrap();
    let url = format!("https://localhost:{port}/v1/chat/completions");

    let mut spec = support::spec(url.clone(), Mode::Rate(20.0), Duration::from_millis(500));
    spec.endpoint.ca_file = Some(ca_file.clone());
    let trusted = ttfx_load::run(spec, CancellationToken::new())
        .await
        .unwrap();
    let _ = std::fs::remove_file(&ca_file);
    assert!(trusted.requests.sent > 0);
    assert_eq!(
        trusted.requests.completed, trusted.requests.sent,
        "{:?}",
        trusted.errors
    );
    assert_eq!(trusted.metrics["output_tokens"].max, 2.0);

    let spec = support::spec(url, Mode::Rate(20.0), Duration::from_millis(300));
    let refused = ttfx_load::run(spec, CancellationToken::new())
        .await
        .unwrap();
    assert!(refused.requests.sent > 0);
    assert_eq!(
        refused.errors.by_class.get("connect"),
        Some(&refused.requests.sent),
        "{:?}",
        refused.errors
    );
}

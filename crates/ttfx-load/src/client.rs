//! The HTTP client every request of a load goes through: hyper's pooled client, keep-alive
//! (a connection is reused when idle, another opened when every one is busy, as the
//! benchmark clients do), TCP_NODELAY (a small request body must not wait for Nagle's
//! timer, which would be measured as the server's), http and https (rustls, ring, the
//! public roots compiled in plus an optional CA file).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};

pub type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Why the client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("--ca-file {}: cannot read: {cause}", path.display())]
    ReadCa {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error("--ca-file {}: no usable PEM certificate in it", path.display())]
    NoCa { path: std::path::PathBuf },
    #[error("TLS setup: {0}")]
    Tls(rustls::Error),
}

/// Idle connections are closed after this long: a load's connections are reused many
/// times a second, and a stopped one's should not linger.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// The client, trusting the public roots and the certificates of `ca_file`.
pub fn new(ca_file: Option<&Path>) -> Result<HttpClient, ClientError> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(path) = ca_file {
        add_ca_file(&mut roots, path)?;
    }
    // The ring provider named, not the process default: a build that unifies rustls'
    // features differently must not change (or break) which one is used.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(ClientError::Tls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    // The https connector below decides the scheme; this one only connects.
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE)
        .pool_max_idle_per_host(usize::MAX)
        .build(connector))
}

fn add_ca_file(roots: &mut RootCertStore, path: &Path) -> Result<(), ClientError> {
    let text = std::fs::read(path).map_err(|cause| ClientError::ReadCa {
        path: path.to_owned(),
        cause,
    })?;
    let mut added = 0;
    for cert in CertificateDer::pem_slice_iter(&text).flatten() {
        if roots.add(cert).is_ok() {
            added += 1;
        }
    }
    if added == 0 {
        return Err(ClientError::NoCa {
            path: path.to_owned(),
        });
    }
    Ok(())
}

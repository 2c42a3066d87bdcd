//! How an `https` upstream is reached: rustls with the ring provider, the public roots
//! compiled in (webpki-roots) plus an upstream's private CA (`ca_file`), and ALPN
//! offering HTTP/2 first. Read when the config is, so a bad CA file is a config error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};

/// ALPN: HTTP/2 first, so an upstream that speaks it is spoken to in it.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// How an `https` upstream is reached: the client config (trust, ALPN) and the name its
/// certificate must have.
#[derive(Debug)]
pub struct Tls {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) server_name: ServerName<'static>,
    /// Named in the hint when a certificate's issuer is not trusted.
    pub(crate) ca_file: Option<PathBuf>,
}

/// Why an upstream's TLS cannot be set up; the config names the upstream around it.
/// Each text carries its cause (no `source` chain, so a `{:#}` print says it once).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("host `{host}` is not a name TLS can check: {reason}")]
    HostName { host: String, reason: String },
    #[error("ca_file `{}`: {problem}", path.display())]
    CaFile {
        path: PathBuf,
        problem: CaFileProblem,
    },
    #[error("TLS setup: {0}")]
    Setup(rustls::Error),
}

/// What is wrong with a `ca_file`.
#[derive(Debug, thiserror::Error)]
pub enum CaFileProblem {
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    #[error("certificate {number}: not valid PEM: {reason}")]
    NotPem { number: usize, reason: String },
    #[error("certificate {number}: not a usable CA: {reason}")]
    NotCa { number: usize, reason: String },
    #[error("no PEM certificate (`-----BEGIN CERTIFICATE-----`) in it")]
    Empty,
}

impl Tls {
    /// For `host` (the base URL's host, an IPv6 address in brackets), trusting the
    /// bundled public roots and, when given, the certificates in the PEM file `ca_file`
    /// (read now: a missing or unusable file is a config error, not a failed request).
    pub fn new(host: &str, ca_file: Option<&Path>) -> Result<Tls, TlsError> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let server_name =
            ServerName::try_from(bare.to_owned()).map_err(|e| TlsError::HostName {
                host: host.into(),
                reason: e.to_string(),
            })?;
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(path) = ca_file {
            add_ca_file(&mut roots, path).map_err(|problem| TlsError::CaFile {
                path: path.to_path_buf(),
                problem,
            })?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Setup)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Tls {
            config: Arc::new(config),
            server_name,
            ca_file: ca_file.map(Path::to_path_buf),
        })
    }
}

fn add_ca_file(roots: &mut RootCertStore, path: &Path) -> Result<(), CaFileProblem> {
    let text = std::fs::read(path).map_err(CaFileProblem::Read)?;
    let mut added = 0;
    for (i, cert) in CertificateDer::pem_slice_iter(&text).enumerate() {
        let number = i + 1;
        let cert = cert.map_err(|e| CaFileProblem::NotPem {
            number,
            reason: e.to_string(),
        })?;
        roots.add(cert).map_err(|e| CaFileProblem::NotCa {
            number,
            reason: e.to_string(),
        })?;
        added += 1;
    }
    if added == 0 {
        return Err(CaFileProblem::Empty);
    }
    Ok(())
}

//! One upstream connection for one proxied request: TCP, then TLS for an `https`
//! upstream, then HTTP/2 when the upstream chose `h2` by ALPN, else HTTP/1.1.
//!
//! Every request gets a fresh connection, on purpose: a pool would hand most requests a
//! warm connection, and the record would show no connect and no TLS handshake where a
//! benchmark client's first request (and every request of a client that does not keep
//! its connections) pays both. The proxy pays them every time and times each.
//!
//! TLS is rustls with its ring provider ([`Tls`]). Trusted: the public roots compiled into the
//! binary (webpki-roots, Mozilla's list: no OS certificate store is read and nothing is
//! fetched at run time), plus the certificates of the upstream's `ca_file`, when it has
//! one, for a private CA. The server name checked (and sent as SNI) is the base URL's
//! host; an IP address is checked against the certificate's IP addresses.

use std::path::Path;

use axum::body::Bytes;
use axum::http::{Request, Response, Uri, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls;

pub use crate::tls::Tls;
use crate::upstream::Upstream;

/// The HTTP version spoken on the connection, named as ALPN names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http11,
    H2,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http11 => "http/1.1",
            Protocol::H2 => "h2",
        }
    }
}

/// How long making the connection took, in ms.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    /// From the start of the TCP connect to the connected socket.
    pub tcp_connect_ms: f64,
    /// From the connected socket to the finished TLS handshake (`None` for plain HTTP).
    pub tls_handshake_ms: Option<f64>,
    pub protocol: Protocol,
}

impl Timings {
    /// TCP connect and TLS handshake together: the record's `connect`.
    pub fn connect_ms(&self) -> f64 {
        self.tcp_connect_ms + self.tls_handshake_ms.unwrap_or(0.0)
    }
}

/// A request sender on one connection. The connection stays open while this lives.
pub enum Sender {
    Http1(http1::SendRequest<Full<Bytes>>),
    Http2 {
        sender: http2::SendRequest<Full<Bytes>>,
        /// `https://` + the base URL's authority: h2 takes `:scheme` and `:authority`
        /// from the request's URI.
        origin: String,
    },
}

impl Sender {
    /// Sends `request`, given in origin form with a `Host` header (what HTTP/1.1 sends).
    /// Over HTTP/2 it goes in absolute form instead, without `Host`: hyper's h2 client
    /// sends a relative URI with `:scheme` http and no `:authority`.
    pub async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, String> {
        match self {
            Sender::Http1(sender) => sender
                .send_request(request)
                .await
                .map_err(|e| e.to_string()),
            Sender::Http2 { sender, origin } => {
                let (mut parts, body) = request.into_parts();
                let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
                parts.uri = format!("{origin}{path}")
                    .parse::<Uri>()
                    .map_err(|e| format!("cannot make the HTTP/2 request URI: {e}"))?;
                parts.headers.remove(header::HOST);
                sender
                    .send_request(Request::from_parts(parts, body))
                    .await
                    .map_err(|e| e.to_string())
            }
        }
    }
}

pub struct Connection {
    pub sender: Sender,
    pub timings: Timings,
}

/// Why no connection was made; `message` names the upstream and says what went wrong.
#[derive(Debug)]
pub struct ConnectError {
    /// `connect_timeout_ms` ran out (504 and outcome `timeout`; else 502 and `failed`).
    pub timed_out: bool,
    pub message: String,
    /// Set when TCP connected and TLS then failed or timed out.
    pub tcp_connect_ms: Option<f64>,
}

fn ms(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64() * 1000.0
}

/// Opens a fresh connection to `upstream`. Its `connect_timeout_ms` covers the TCP
/// connect and the TLS handshake together (and HTTP/2's preface, which follows at once).
pub async fn connect(upstream: &Upstream) -> Result<Connection, ConnectError> {
    let (name, authority) = (&upstream.name, &upstream.authority);
    let limit_ms = upstream.timeouts.connect.as_millis();
    let start = Instant::now();
    let deadline = start + upstream.timeouts.connect;
    let failed = |message: String, tcp_connect_ms: Option<f64>| ConnectError {
        timed_out: false,
        message,
        tcp_connect_ms,
    };
    let timed_out = |message: String, tcp_connect_ms: Option<f64>| ConnectError {
        timed_out: true,
        message,
        tcp_connect_ms,
    };
    let tcp = match tokio::time::timeout_at(deadline, TcpStream::connect(authority)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let message = format!("upstream `{name}` ({authority}) unreachable: {e}");
            return Err(failed(message, None));
        }
        Err(_) => {
            let message = format!(
                "upstream `{name}` ({authority}): no connection within {limit_ms} ms \
                 (connect_timeout_ms)"
            );
            return Err(timed_out(message, None));
        }
    };
    // Small writes (one SSE event) must not wait for Nagle's algorithm.
    let _ = tcp.set_nodelay(true);
    let connected = Instant::now();
    let tcp_connect_ms = ms(start, connected);
    let Some(tls) = &upstream.tls else {
        let timings = Timings {
            tcp_connect_ms,
            tls_handshake_ms: None,
            protocol: Protocol::Http11,
        };
        return http(upstream, TokioIo::new(tcp), timings, deadline).await;
    };
    let connector = TlsConnector::from(tls.config.clone());
    let handshake = connector.connect(tls.server_name.clone(), tcp);
    let stream = match tokio::time::timeout_at(deadline, handshake).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let message = format!(
                "upstream `{name}` ({authority}): TLS handshake failed: {e}{}",
                tls_hint(&e, tls.ca_file.as_deref())
            );
            return Err(failed(message, Some(tcp_connect_ms)));
        }
        Err(_) => {
            let message = format!(
                "upstream `{name}` ({authority}): TLS handshake not done within {limit_ms} ms \
                 (connect_timeout_ms covers the TCP connect and the TLS handshake)"
            );
            return Err(timed_out(message, Some(tcp_connect_ms)));
        }
    };
    let protocol = match stream.get_ref().1.alpn_protocol() {
        Some(b"h2") => Protocol::H2,
        _ => Protocol::Http11,
    };
    let timings = Timings {
        tcp_connect_ms,
        tls_handshake_ms: Some(ms(connected, Instant::now())),
        protocol,
    };
    http(upstream, TokioIo::new(stream), timings, deadline).await
}

/// What the usual certificate failures mean here.
fn tls_hint(e: &std::io::Error, ca_file: Option<&Path>) -> String {
    let Some(rustls::Error::InvalidCertificate(why)) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return String::new();
    };
    match (why, ca_file) {
        (rustls::CertificateError::UnknownIssuer, None) => {
            " (the certificate's issuer is not a public root: for a private CA, give its PEM \
             as the upstream's ca_file)"
                .to_owned()
        }
        (rustls::CertificateError::UnknownIssuer, Some(file)) => format!(
            " (the certificate's issuer is neither a public root nor in ca_file `{}`)",
            file.display()
        ),
        (
            rustls::CertificateError::NotValidForName
            | rustls::CertificateError::NotValidForNameContext { .. },
            _,
        ) => " (the certificate does not name the base URL's host)".to_owned(),
        _ => String::new(),
    }
}

async fn http<I>(
    upstream: &Upstream,
    io: TokioIo<I>,
    timings: Timings,
    deadline: Instant,
) -> Result<Connection, ConnectError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let name = &upstream.name;
    let handshake = async {
        match timings.protocol {
            Protocol::Http11 => {
                let (sender, conn) = http1::handshake(io).await?;
                tokio::spawn(conn);
                Ok(Sender::Http1(sender))
            }
            Protocol::H2 => {
                // The executor runs the connection's own task.
                let (sender, conn) = http2::handshake(TokioExecutor::new(), io).await?;
                tokio::spawn(conn);
                Ok(Sender::Http2 {
                    sender,
                    origin: format!("https://{}", upstream.host),
                })
            }
        }
    };
    let error = |message: String, timed_out: bool| ConnectError {
        timed_out,
        message,
        tcp_connect_ms: Some(timings.tcp_connect_ms),
    };
    match tokio::time::timeout_at(deadline, handshake).await {
        Ok(Ok(sender)) => Ok(Connection { sender, timings }),
        Ok(Err::<_, hyper::Error>(e)) => Err(error(
            format!("upstream `{name}`: HTTP handshake failed: {e}"),
            false,
        )),
        Err(_) => Err(error(
            format!(
                "upstream `{name}`: HTTP/2 handshake not done within {} ms (connect_timeout_ms)",
                upstream.timeouts.connect.as_millis()
            ),
            true,
        )),
    }
}

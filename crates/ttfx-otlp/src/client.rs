//! Posting a batch: encode (protobuf or JSON), POST to the signal's URL, and retry
//! what the OTLP/HTTP specification calls retryable (429, 502, 503, 504 and network
//! errors), waiting as backoff.rs says; anything else not 2xx is a refusal, never
//! retried.

use std::time::{Duration, SystemTime};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceResponse;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER};

use crate::backoff;
use crate::config::{Compression, Config, Protocol, SignalConfig, redact};
use crate::error::{ConfigError, SendError};
use crate::run::StoredRun;
use crate::{metrics, trace};

/// What one POST came to.
#[derive(Debug)]
enum Attempt {
    /// 2xx; the items the receiver said it rejected (OTLP partial success).
    Accepted {
        rejected: u64,
    },
    Retry {
        after: Option<Duration>,
        reason: String,
    },
    Refused {
        status: u16,
        detail: String,
    },
}

/// What a delivered batch came to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// Data points and spans the receiver accepted the request with but rejected
    /// (`partial_success`).
    pub rejected: u64,
    /// Attempts that failed and were retried.
    pub retries: u32,
}

/// A retry about to wait, as the caller may log it (one line, no secret).
#[derive(Debug)]
pub struct Retrying<'a> {
    pub url: &'a str,
    pub attempt: u32,
    pub reason: &'a str,
    pub wait: Duration,
}

/// The client of one export configuration: a client per signal (each has its own
/// timeout, headers and TLS files).
#[derive(Debug, Clone)]
pub struct Exporter {
    metrics: reqwest::Client,
    traces: reqwest::Client,
    config: Config,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Metrics,
    Traces,
}

/// A transport error and its causes on one line (`error sending request: client error
/// (Connect): tcp connect error: Connection refused (os error 111)`), without the URL:
/// reqwest's text would repeat it whole, query included.
fn cause_of(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text.replace(['\n', '\r'], " ")
}

/// A signal's client: rustls with ring and webpki-roots (reqwest's
/// `rustls-tls-webpki-roots`), the configured roots added to them, and a client
/// certificate when one is configured.
fn client(config: &SignalConfig) -> Result<reqwest::Client, ConfigError> {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .timeout(config.timeout)
        .default_headers(config.headers.clone())
        .user_agent(concat!("ttfx/", env!("CARGO_PKG_VERSION")));
    for root in &config.tls.roots {
        builder = builder.add_root_certificate(root.clone());
    }
    if let Some(identity) = &config.tls.identity {
        builder = builder.identity(identity.clone());
    }
    builder
        .build()
        .map_err(|e| ConfigError::Client(e.without_url().to_string()))
}

/// `body` gzip-compressed (flate2's default level).
fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(body)?;
    encoder.finish()
}

/// The receiver's words, one short line (printable, no control characters).
fn detail_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    line.trim().to_owned()
}

impl Exporter {
    pub fn new(config: Config) -> Result<Exporter, ConfigError> {
        Ok(Exporter {
            metrics: client(&config.metrics)?,
            traces: client(&config.traces)?,
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    fn signal(&self, signal: Signal) -> (&reqwest::Client, &SignalConfig) {
        match signal {
            Signal::Metrics => (&self.metrics, &self.config.metrics),
            Signal::Traces => (&self.traces, &self.config.traces),
        }
    }

    /// The signal's request body: the message in its protocol, compressed as configured.
    fn encode<M: Message + serde::Serialize>(
        &self,
        signal: Signal,
        message: &M,
    ) -> Result<Vec<u8>, SendError> {
        let config = self.signal(signal).1;
        let body = match config.protocol {
            Protocol::HttpProtobuf => message.encode_to_vec(),
            Protocol::HttpJson => {
                serde_json::to_vec(message).map_err(|e| SendError::Encode(e.to_string()))?
            }
        };
        match config.compression {
            Compression::None => Ok(body),
            Compression::Gzip => gzip(&body).map_err(|e| SendError::Encode(e.to_string())),
        }
    }

    /// Rejected items of a 2xx answer's body (0 when it has none or it cannot be read:
    /// the request was accepted either way).
    fn rejected(&self, signal: Signal, body: &[u8]) -> u64 {
        if body.is_empty() {
            return 0;
        }
        match (self.signal(signal).1.protocol, signal) {
            (Protocol::HttpProtobuf, Signal::Metrics) => ExportMetricsServiceResponse::decode(body)
                .ok()
                .and_then(|r| r.partial_success)
                .map_or(0, |p| u64::try_from(p.rejected_data_points).unwrap_or(0)),
            (Protocol::HttpProtobuf, Signal::Traces) => ExportTraceServiceResponse::decode(body)
                .ok()
                .and_then(|r| r.partial_success)
                .map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0)),
            (Protocol::HttpJson, Signal::Metrics) => {
                serde_json::from_slice::<ExportMetricsServiceResponse>(body)
                    .ok()
                    .and_then(|r| r.partial_success)
                    .map_or(0, |p| u64::try_from(p.rejected_data_points).unwrap_or(0))
            }
            (Protocol::HttpJson, Signal::Traces) => {
                serde_json::from_slice::<ExportTraceServiceResponse>(body)
                    .ok()
                    .and_then(|r| r.partial_success)
                    .map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0))
            }
        }
    }

    async fn post(&self, signal: Signal, body: &[u8]) -> Attempt {
        let (http, config) = self.signal(signal);
        let mut request = http
            .post(config.url.clone())
            .header(CONTENT_TYPE, config.protocol.content_type());
        if config.compression == Compression::Gzip {
            request = request.header(CONTENT_ENCODING, "gzip");
        }
        let sent = request.body(body.to_vec()).send().await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                return Attempt::Retry {
                    after: None,
                    reason: cause_of(e),
                };
            }
        };
        let status = response.status();
        let after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| backoff::retry_after(v, SystemTime::now()));
        let body = response.bytes().await.unwrap_or_default();
        if status.is_success() {
            return Attempt::Accepted {
                rejected: self.rejected(signal, &body),
            };
        }
        match status {
            StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT => Attempt::Retry {
                after,
                reason: format!("HTTP {}", status.as_u16()),
            },
            _ => Attempt::Refused {
                status: status.as_u16(),
                detail: detail_of(&body),
            },
        }
    }

    /// Posts `body` until it is accepted, refused, or `max_attempts` (None: no bound)
    /// have failed; `retrying` hears of each wait.
    async fn deliver_one(
        &self,
        signal: Signal,
        body: &[u8],
        max_attempts: Option<u32>,
        retrying: &mut (dyn FnMut(Retrying<'_>) + Send),
    ) -> Result<Delivered, SendError> {
        let shown = redact(&self.signal(signal).1.url);
        let mut failed = 0u32;
        loop {
            match self.post(signal, body).await {
                Attempt::Accepted { rejected } => {
                    return Ok(Delivered {
                        rejected,
                        retries: failed,
                    });
                }
                Attempt::Refused { status, detail } => {
                    return Err(SendError::Refused {
                        url: shown,
                        status,
                        detail,
                    });
                }
                Attempt::Retry { after, reason } => {
                    failed += 1;
                    if max_attempts.is_some_and(|max| failed >= max) {
                        return Err(SendError::GaveUp {
                            url: shown,
                            attempts: failed,
                            last: reason,
                        });
                    }
                    let wait = after.unwrap_or_else(|| backoff::delay(failed - 1));
                    retrying(Retrying {
                        url: &shown,
                        attempt: failed,
                        reason: &reason,
                        wait,
                    });
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Exports `runs` (metrics, then spans whose ids come from `salt`), each signal
    /// retried on its own: a metrics request already accepted is not sent again while
    /// the spans wait.
    pub async fn deliver(
        &self,
        runs: &[StoredRun],
        salt: &[u8],
        max_attempts: Option<u32>,
        retrying: &mut (dyn FnMut(Retrying<'_>) + Send),
    ) -> Result<Delivered, SendError> {
        let m = self.encode(
            Signal::Metrics,
            &metrics::request(runs, &self.config.export),
        )?;
        let t = self.encode(
            Signal::Traces,
            &trace::request(runs, salt, &self.config.export),
        )?;
        let a = self
            .deliver_one(Signal::Metrics, &m, max_attempts, retrying)
            .await?;
        let b = self
            .deliver_one(Signal::Traces, &t, max_attempts, retrying)
            .await?;
        Ok(Delivered {
            rejected: a.rejected + b.rejected,
            retries: a.retries + b.retries,
        })
    }
}

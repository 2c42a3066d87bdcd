//! Why an export was not configured or a batch was not delivered. No text carries a
//! header value or a URL's userinfo or query.

/// A flag or variable the exporter cannot use.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{from} `{value}`: expected an http(s) URL, e.g. http://127.0.0.1:4318")]
    Endpoint { from: &'static str, value: String },
    #[error(
        "{from}: expected KEY=VALUE with a valid header name and value{}",
        if key.is_empty() { String::new() } else { format!(" (key `{key}`)") }
    )]
    Header { from: &'static str, key: String },
    #[error("{from} {value}: expected http/protobuf or http/json (gRPC is not offered)")]
    Protocol { from: &'static str, value: String },
    #[error("{from} `{value}`: expected a whole number of milliseconds above 0")]
    Timeout { from: &'static str, value: String },
    #[error("{from} `{value}`: expected gzip or none")]
    Compression { from: &'static str, value: String },
    #[error("{from}: {why}")]
    Tls { from: &'static str, why: String },
    #[error(
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: give \
         both, or OTEL_EXPORTER_OTLP_ENDPOINT (ttfx exports both signals)"
    )]
    OneSignal,
    #[error("--otlp-service-name: expected a non-empty name")]
    ServiceName,
    #[error("cannot build the OTLP client: {0}")]
    Client(String),
}

/// Why a batch was given up.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The receiver refused it for good (a 4xx other than 429, or a 5xx other than 502,
    /// 503, 504): sending it again would be refused again.
    #[error("{url} refused the batch: HTTP {status}{}", if detail.is_empty() { String::new() } else { format!(": {detail}") })]
    Refused {
        url: String,
        status: u16,
        detail: String,
    },
    /// Still failing after the attempts a bounded caller allowed (`ttfx field --export-otlp`).
    #[error("{url}: gave up after {attempts} attempts: {last}")]
    GaveUp {
        url: String,
        attempts: u32,
        last: String,
    },
    #[error("cannot encode the batch: {0}")]
    Encode(String),
}

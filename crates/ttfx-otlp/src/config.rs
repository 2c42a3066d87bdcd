//! Where and how to export: the command's flags over the standard `OTEL_EXPORTER_OTLP_*`
//! environment variables of the OTLP exporter specification (flags win; each signal's
//! own variable, `OTEL_EXPORTER_OTLP_METRICS_*` / `_TRACES_*`, wins over the general
//! one): endpoint, headers, protocol, timeout, compression (`gzip`, `none`), and the
//! TLS files (`CERTIFICATE`: the roots to trust; `CLIENT_KEY` and `CLIENT_CERTIFICATE`:
//! a client certificate). `INSECURE` is gRPC's and not read (gRPC is not offered).
//!
//! Header values are secrets (API keys): they are kept out of `Debug`, never printed,
//! and marked sensitive for the HTTP stack.

use std::time::Duration;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::ConfigError;
use crate::metrics::Export;
use crate::run::text;
use crate::semconv::{self, GenAiNames};

/// The body encoding (OTLP/HTTP); gRPC is not offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    HttpProtobuf,
    HttpJson,
}

impl Protocol {
    pub fn parse(s: &str, from: &'static str) -> Result<Protocol, ConfigError> {
        match s.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "http/json" => Ok(Protocol::HttpJson),
            other => Err(ConfigError::Protocol {
                from,
                value: other.to_owned(),
            }),
        }
    }

    /// The name the flag and the variable take.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::HttpJson => "http/json",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "application/x-protobuf",
            Protocol::HttpJson => "application/json",
        }
    }
}

/// A command's OTLP flags, as given (None: not given).
#[derive(Debug, Default, Clone)]
pub struct Flags {
    /// `--otlp-endpoint` / `--export-otlp`: the base URL (`/v1/metrics`, `/v1/traces` appended).
    pub endpoint: Option<String>,
    /// `--otlp-header K=V`, repeatable. Secrets.
    pub headers: Vec<String>,
    pub protocol: Option<String>,
    pub service_name: Option<String>,
}

/// How a request body is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    /// `Content-Encoding: gzip`.
    Gzip,
}

/// The TLS files a signal's client uses, read when the configuration is resolved (a
/// missing or bad file is a start-up error naming its variable).
#[derive(Clone, Default)]
pub struct Tls {
    /// PEM certificates to trust besides the public roots.
    pub roots: Vec<reqwest::Certificate>,
    /// The client certificate and its key, as one PEM.
    pub identity: Option<reqwest::Identity>,
}

/// One signal's export settings.
#[derive(Clone)]
pub struct SignalConfig {
    pub url: reqwest::Url,
    pub headers: HeaderMap,
    pub protocol: Protocol,
    pub timeout: Duration,
    pub compression: Compression,
    pub tls: Tls,
}

impl std::fmt::Debug for SignalConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalConfig")
            .field("url", &redact(&self.url))
            .field(
                "headers",
                &format!("{} header(s), values hidden", self.headers.len()),
            )
            .field("protocol", &self.protocol)
            .field("timeout", &self.timeout)
            .field("compression", &self.compression)
            .field("tls_roots", &self.tls.roots.len())
            .field("client_certificate", &self.tls.identity.is_some())
            .finish()
    }
}

/// A resolved export configuration.
#[derive(Clone)]
pub struct Config {
    pub metrics: SignalConfig,
    pub traces: SignalConfig,
    pub export: Export,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("metrics", &self.metrics)
            .field("traces", &self.traces)
            .finish_non_exhaustive()
    }
}

/// The names of one set of the specification's variables: the general ones or a
/// signal's own.
struct Vars {
    headers: &'static str,
    protocol: &'static str,
    timeout: &'static str,
    compression: &'static str,
    certificate: &'static str,
    client_key: &'static str,
    client_certificate: &'static str,
}

const GENERAL: Vars = Vars {
    headers: "OTEL_EXPORTER_OTLP_HEADERS",
    protocol: "OTEL_EXPORTER_OTLP_PROTOCOL",
    timeout: "OTEL_EXPORTER_OTLP_TIMEOUT",
    compression: "OTEL_EXPORTER_OTLP_COMPRESSION",
    certificate: "OTEL_EXPORTER_OTLP_CERTIFICATE",
    client_key: "OTEL_EXPORTER_OTLP_CLIENT_KEY",
    client_certificate: "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
};

const METRICS: Vars = Vars {
    headers: "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    protocol: "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    timeout: "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
    compression: "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
    certificate: "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE",
    client_key: "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY",
    client_certificate: "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
};

const TRACES: Vars = Vars {
    headers: "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    protocol: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    timeout: "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    compression: "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    certificate: "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    client_key: "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
    client_certificate: "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
};

/// A file a TLS variable names, read whole.
fn read_file(path: &str, from: &'static str) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path.trim()).map_err(|e| ConfigError::Tls {
        from,
        why: format!("cannot read {}: {e}", path.trim()),
    })
}

/// One signal's settings: its own variable, else the general one, under the flags.
fn signal_config(
    url: reqwest::Url,
    own: &Vars,
    flags: &Flags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SignalConfig, ConfigError> {
    // The signal's own variable if set, else the general one; with the name it came from.
    let pick = |own: &'static str, general: &'static str| {
        env(own)
            .map(|v| (v, own))
            .or_else(|| env(general).map(|v| (v, general)))
    };
    let mut headers = HeaderMap::new();
    if let Some((list, from)) = pick(own.headers, GENERAL.headers) {
        for (k, v) in pairs(&list, from)? {
            header(&mut headers, &k, &v, from)?;
        }
    }
    for h in &flags.headers {
        let Some((k, v)) = h.split_once('=') else {
            return Err(ConfigError::Header {
                from: "--otlp-header",
                key: String::new(),
            });
        };
        header(&mut headers, k, v, "--otlp-header")?;
    }
    let protocol = match (&flags.protocol, pick(own.protocol, GENERAL.protocol)) {
        (Some(p), _) => Protocol::parse(p, "--otlp-protocol")?,
        (None, Some((p, from))) => Protocol::parse(&p, from)?,
        (None, None) => Protocol::HttpProtobuf,
    };
    let timeout = match pick(own.timeout, GENERAL.timeout) {
        None => DEFAULT_TIMEOUT,
        Some((ms, from)) => match ms.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Duration::from_millis(ms),
            _ => return Err(ConfigError::Timeout { from, value: ms }),
        },
    };
    let compression = match pick(own.compression, GENERAL.compression) {
        None => Compression::None,
        Some((c, from)) => match c.trim() {
            "gzip" => Compression::Gzip,
            "none" => Compression::None,
            other => {
                return Err(ConfigError::Compression {
                    from,
                    value: other.to_owned(),
                });
            }
        },
    };
    let mut tls = Tls::default();
    if let Some((path, from)) = pick(own.certificate, GENERAL.certificate) {
        let pem = read_file(&path, from)?;
        tls.roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| ConfigError::Tls {
            from,
            why: format!("{}: not PEM certificates: {}", path.trim(), e.without_url()),
        })?;
        if tls.roots.is_empty() {
            return Err(ConfigError::Tls {
                from,
                why: format!("{}: no certificate in it", path.trim()),
            });
        }
    }
    match (
        pick(own.client_certificate, GENERAL.client_certificate),
        pick(own.client_key, GENERAL.client_key),
    ) {
        (None, None) => {}
        (Some((cert, from)), Some((key, key_from))) => {
            let mut pem = read_file(&cert, from)?;
            pem.push(b'\n');
            pem.extend(read_file(&key, key_from)?);
            // The key's bytes never reach a message: only the files' names do.
            let identity = reqwest::Identity::from_pem(&pem).map_err(|_| ConfigError::Tls {
                from,
                why: format!(
                    "{} and {}: not a PEM certificate and its private key",
                    cert.trim(),
                    key.trim()
                ),
            })?;
            tls.identity = Some(identity);
        }
        (Some((_, from)), None) | (None, Some((_, from))) => {
            return Err(ConfigError::Tls {
                from,
                why: "a client certificate needs both CLIENT_CERTIFICATE and CLIENT_KEY".to_owned(),
            });
        }
    }
    Ok(SignalConfig {
        url,
        headers,
        protocol,
        timeout,
        compression,
        tls,
    })
}

/// A URL as a message may show it: no userinfo, query or fragment.
pub fn redact(url: &reqwest::Url) -> String {
    ttfx_core::target::url_for_report(url.as_str())
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

fn url(value: &str, from: &'static str) -> Result<reqwest::Url, ConfigError> {
    let bad = || ConfigError::Endpoint {
        from,
        value: ttfx_core::target::url_for_report(value),
    };
    let u = reqwest::Url::parse(value.trim()).map_err(|_| bad())?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(bad());
    }
    Ok(u)
}

/// The base endpoint with the signal's path appended (`v1/metrics`), keeping its path.
fn with_signal(base: &str, path: &str, from: &'static str) -> Result<reqwest::Url, ConfigError> {
    let base = base.trim();
    let joined = if base.ends_with('/') {
        format!("{base}{path}")
    } else {
        format!("{base}/{path}")
    };
    url(&joined, from)
}

/// `%XX` decoding of a W3C-baggage-style value (OTEL_EXPORTER_OTLP_HEADERS,
/// OTEL_RESOURCE_ATTRIBUTES); a malformed escape is kept as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `k1=v1,k2=v2` (values percent-encoded) as pairs; an entry without `=` is an error
/// naming only its key part (values may be secrets).
fn pairs(list: &str, from: &'static str) -> Result<Vec<(String, String)>, ConfigError> {
    list.split(',')
        .filter(|e| !e.trim().is_empty())
        .map(|e| match e.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((percent_decode(k.trim()), percent_decode(v.trim())))
            }
            _ => Err(ConfigError::Header {
                from,
                key: String::new(),
            }),
        })
        .collect()
}

fn header(
    map: &mut HeaderMap,
    key: &str,
    value: &str,
    from: &'static str,
) -> Result<(), ConfigError> {
    let bad = || ConfigError::Header {
        from,
        key: key.chars().take(64).collect(),
    };
    let name = HeaderName::from_bytes(key.trim().as_bytes()).map_err(|_| bad())?;
    let mut value = HeaderValue::from_str(value).map_err(|_| bad())?;
    value.set_sensitive(true);
    map.insert(name, value);
    Ok(())
}

impl Config {
    /// The configuration from `flags` over the environment `env` (a lookup, so tests
    /// need not touch the process's). None: no endpoint anywhere, export is off.
    pub fn resolve(
        flags: &Flags,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Config>, ConfigError> {
        let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let (metrics_url, traces_url) = if let Some(base) = &flags.endpoint {
            let from = "--otlp-endpoint";
            (
                with_signal(base, "v1/metrics", from)?,
                with_signal(base, "v1/traces", from)?,
            )
        } else {
            let base = env("OTEL_EXPORTER_OTLP_ENDPOINT");
            let signal =
                |own: &'static str, path: &str| -> Result<Option<reqwest::Url>, ConfigError> {
                    match (env(own), &base) {
                        (Some(u), _) => url(&u, own).map(Some),
                        (None, Some(b)) => {
                            with_signal(b, path, "OTEL_EXPORTER_OTLP_ENDPOINT").map(Some)
                        }
                        (None, None) => Ok(None),
                    }
                };
            match (
                signal("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "v1/metrics")?,
                signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces")?,
            ) {
                (Some(m), Some(t)) => (m, t),
                (None, None) => return Ok(None),
                _ => return Err(ConfigError::OneSignal),
            }
        };
        let metrics = signal_config(metrics_url, &METRICS, flags, &env)?;
        let traces = signal_config(traces_url, &TRACES, flags, &env)?;
        let mut resource: Vec<(String, String)> = match env("OTEL_RESOURCE_ATTRIBUTES") {
            Some(list) => pairs(&list, "OTEL_RESOURCE_ATTRIBUTES")?,
            None => Vec::new(),
        };
        let service = flags
            .service_name
            .clone()
            .or_else(|| env("OTEL_SERVICE_NAME"))
            .or_else(|| {
                resource
                    .iter()
                    .find(|(k, _)| k == semconv::SERVICE_NAME)
                    .map(|(_, v)| v.clone())
            })
            .unwrap_or_else(|| "ttfx".to_owned());
        if service.trim().is_empty() {
            return Err(ConfigError::ServiceName);
        }
        resource.retain(|(k, _)| k != semconv::SERVICE_NAME);
        let mut attributes: Vec<KeyValue> = vec![
            text(semconv::SERVICE_NAME, &service),
            text("telemetry.sdk.name", "ttfx"),
            text("telemetry.sdk.language", "rust"),
            text("telemetry.sdk.version", env!("CARGO_PKG_VERSION")),
        ];
        attributes.extend(resource.iter().map(|(k, v)| text(k, v)));
        let names = GenAiNames::from_opt_in(env("OTEL_SEMCONV_STABILITY_OPT_IN").as_deref());
        Ok(Some(Config {
            metrics,
            traces,
            export: Export {
                resource: attributes,
                names,
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_flag_wins_and_signal_paths_are_appended_to_a_base() {
        let flags = Flags {
            endpoint: Some("http://127.0.0.1:4318".into()),
            ..Flags::default()
        };
        let env = env_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://other:4318")]);
        let c = Config::resolve(&flags, &env).unwrap().unwrap();
        assert_eq!(c.metrics.url.as_str(), "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(c.traces.url.as_str(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(c.metrics.protocol, Protocol::HttpProtobuf);
        assert_eq!(c.traces.compression, Compression::None);
    }

    #[test]
    fn a_signal_endpoint_is_used_as_it_is_and_headers_are_percent_decoded() {
        let env = env_of(&[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "https://otlp.example.com/base/",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://traces.example.com/t",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b%3D,x-team=ml"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_SERVICE_NAME", "chat-web"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment.name=prod",
            ),
        ]);
        let c = Config::resolve(&Flags::default(), &env).unwrap().unwrap();
        assert_eq!(
            c.metrics.url.as_str(),
            "https://otlp.example.com/base/v1/metrics"
        );
        assert_eq!(c.traces.url.as_str(), "https://traces.example.com/t");
        for signal in [&c.metrics, &c.traces] {
            assert_eq!(signal.headers["api-key"], "a b=");
            assert!(signal.headers["api-key"].is_sensitive());
            assert_eq!(signal.protocol, Protocol::HttpJson);
        }
        let debug = format!("{c:?}");
        assert!(!debug.contains("a b="), "{debug}");
        let service = c
            .export
            .resource
            .iter()
            .find(|kv| kv.key == "service.name")
            .unwrap();
        assert_eq!(
            format!("{:?}", service.value),
            format!("{:?}", text("x", "chat-web").value)
        );
    }

    /// A signal's own variable wins over the general one for headers, protocol, timeout
    /// and compression; the other signal keeps the general value.
    #[test]
    fn a_signals_own_variables_win_over_the_general_ones() {
        let env = env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=all"),
            ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x-team=metrics"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "none"),
        ]);
        let c = Config::resolve(&Flags::default(), &env).unwrap().unwrap();
        assert_eq!(c.metrics.headers["x-team"], "metrics");
        assert_eq!(c.traces.headers["x-team"], "all");
        assert_eq!(c.metrics.timeout, Duration::from_millis(2500));
        assert_eq!(c.traces.timeout, Duration::from_millis(700));
        assert_eq!(
            (c.metrics.protocol, c.traces.protocol),
            (Protocol::HttpProtobuf, Protocol::HttpJson)
        );
        assert_eq!(
            (c.metrics.compression, c.traces.compression),
            (Compression::None, Compression::Gzip)
        );
        // The flag wins over every variable, for both signals.
        let flags = Flags {
            protocol: Some("http/protobuf".into()),
            ..Flags::default()
        };
        let c = Config::resolve(&flags, &env).unwrap().unwrap();
        assert_eq!(c.traces.protocol, Protocol::HttpProtobuf);
    }

    /// Bad values of the other variables are one line naming the variable (and a TLS
    /// file's path, never its contents).
    #[test]
    fn bad_variables_name_themselves() {
        let bad = |vars: &'static [(&'static str, &'static str)]| {
            let mut all = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
            all.extend_from_slice(vars);
            let env = move |k: &str| {
                all.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            };
            Config::resolve(&Flags::default(), &env)
                .unwrap_err()
                .to_string()
        };
        let e = bad(&[("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd")]);
        assert!(
            e.starts_with("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION `zstd`"),
            "{e}"
        );
        let e = bad(&[("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "soon")]);
        assert!(
            e.starts_with("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT `soon`"),
            "{e}"
        );
        let e = bad(&[("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem")]);
        assert!(
            e.starts_with("OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read /nonexistent/ca.pem"),
            "{e}"
        );
        let e = bad(&[("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/nonexistent/key.pem")]);
        assert!(
            e.starts_with("OTEL_EXPORTER_OTLP_CLIENT_KEY: a client certificate needs both"),
            "{e}"
        );
        let e = bad(&[("OTEL_EXPORTER_OTLP_CERTIFICATE", "/proc/self/cmdline")]);
        assert!(
            e.contains("not PEM certificates") || e.contains("no certificate"),
            "{e}"
        );
    }

    #[test]
    fn bad_input_is_one_line_naming_the_flag_and_no_secret() {
        let flags = |f: Flags| Config::resolve(&f, &|_| None).unwrap_err().to_string();
        let e = flags(Flags {
            endpoint: Some("ftp://x".into()),
            ..Flags::default()
        });
        assert!(e.starts_with("--otlp-endpoint"), "{e}");
        let e = flags(Flags {
            endpoint: Some("http://x".into()),
            headers: vec!["no-equals-sign-secret".into()],
            ..Flags::default()
        });
        assert!(
            e.starts_with("--otlp-header") && !e.contains("secret"),
            "{e}"
        );
        let e = flags(Flags {
            endpoint: Some("http://x".into()),
            headers: vec!["bad key=s3cret".into()],
            ..Flags::default()
        });
        assert!(e.contains("bad key") && !e.contains("s3cret"), "{e}");
        let e = flags(Flags {
            endpoint: Some("http://x".into()),
            protocol: Some("grpc".into()),
            ..Flags::default()
        });
        assert!(e.starts_with("--otlp-protocol grpc"), "{e}");
        assert!(
            Config::resolve(&Flags::default(), &|_| None)
                .unwrap()
                .is_none()
        );
    }
}

//! Where and how to export: the command's flags over the standard `OTEL_EXPORTER_OTLP_*`
//! environment variables (flags win; a signal's own endpoint variable wins over the base
//! one, as the OTLP exporter specification says).
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

/// A resolved export configuration.
#[derive(Clone)]
pub struct Config {
    pub metrics_url: reqwest::Url,
    pub traces_url: reqwest::Url,
    pub headers: HeaderMap,
    pub protocol: Protocol,
    pub timeout: Duration,
    pub export: Export,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("metrics_url", &redact(&self.metrics_url))
            .field("traces_url", &redact(&self.traces_url))
            .field(
                "headers",
                &format!("{} header(s), values hidden", self.headers.len()),
            )
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
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
        let mut headers = HeaderMap::new();
        if let Some(list) = env("OTEL_EXPORTER_OTLP_HEADERS") {
            for (k, v) in pairs(&list, "OTEL_EXPORTER_OTLP_HEADERS")? {
                header(&mut headers, &k, &v, "OTEL_EXPORTER_OTLP_HEADERS")?;
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
        let protocol = match (&flags.protocol, env("OTEL_EXPORTER_OTLP_PROTOCOL")) {
            (Some(p), _) => Protocol::parse(p, "--otlp-protocol")?,
            (None, Some(p)) => Protocol::parse(&p, "OTEL_EXPORTER_OTLP_PROTOCOL")?,
            (None, None) => Protocol::HttpProtobuf,
        };
        let timeout = match env("OTEL_EXPORTER_OTLP_TIMEOUT") {
            None => DEFAULT_TIMEOUT,
            Some(ms) => match ms.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => return Err(ConfigError::Timeout(ms)),
            },
        };
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
            metrics_url,
            traces_url,
            headers,
            protocol,
            timeout,
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
        assert_eq!(c.metrics_url.as_str(), "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(c.traces_url.as_str(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(c.protocol, Protocol::HttpProtobuf);
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
            c.metrics_url.as_str(),
            "https://otlp.example.com/base/v1/metrics"
        );
        assert_eq!(c.traces_url.as_str(), "https://traces.example.com/t");
        assert_eq!(c.headers["api-key"], "a b=");
        assert!(c.headers["api-key"].is_sensitive());
        assert_eq!(c.protocol, Protocol::HttpJson);
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

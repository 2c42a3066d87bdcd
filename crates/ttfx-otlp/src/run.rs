//! One stored run as the exporter reads it, and the GenAI attributes derived from its
//! dimensions (provider, server address, error type).

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use ttfx_core::field::FieldReport;

use crate::semconv;

/// A run as the collector stored it: its row (the export's identity: span ids are
/// derived from it), its times and its field report.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub row_id: i64,
    /// The run's time (`runs.at_unix_ms`): the client's request start, never after arrival.
    pub at_unix_ms: f64,
    pub received_unix_ms: f64,
    /// `field`, `run` or `lab` (`runs.source`).
    pub source: String,
    pub report: FieldReport,
}

/// Unix milliseconds (f64) as OTLP's unix nanoseconds: whole milliseconds and the
/// fraction converted apart, the fraction to the nearest microsecond (a date's f64 holds
/// ~0.2 µs at today's dates, and browsers' clocks give 5–100 µs).
pub fn unix_nanos(ms: f64) -> u64 {
    if !ms.is_finite() || ms <= 0.0 {
        return 0;
    }
    let whole = ms.trunc();
    // Today's dates are ~1.7e12 ms, far inside u64 once in nanoseconds.
    let whole_ns = (whole as u64).saturating_mul(1_000_000);
    whole_ns.saturating_add(((ms - whole) * 1e3).round() as u64 * 1000)
}

pub fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

pub fn text(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.to_owned()))
}

pub fn int(key: &str, value: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(value))
}

pub fn double(key: &str, value: f64) -> KeyValue {
    kv(key, any_value::Value::DoubleValue(value))
}

pub fn boolean(key: &str, value: bool) -> KeyValue {
    kv(key, any_value::Value::BoolValue(value))
}

/// A serde enum's JSON name (`completed`, `http_status`).
pub fn name_of<T: serde::Serialize>(value: &T) -> Option<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
}

/// Host and explicit port of a target that is a URL (`https://host[:port]/…`); None for
/// `sim/…`, `proxy/…` and `page:…` targets.
pub fn server_of(target: &str) -> Option<(String, Option<u16>)> {
    let rest = target
        .strip_prefix("https://")
        .or_else(|| target.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // A stored target carries no userinfo (url_for_report), but be sure.
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.is_empty() {
        return None;
    }
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return Some((host.to_owned(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_owned(), port.parse().ok())),
        None => Some((authority.to_owned(), None)),
    }
}

/// Provider hosts the conventions name a `gen_ai.provider.name` value for.
const PROVIDERS: [(&str, &str); 9] = [
    ("api.openai.com", "openai"),
    ("api.anthropic.com", "anthropic"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
    ("api.mistral.ai", "mistral_ai"),
    ("api.groq.com", "groq"),
    ("api.deepseek.com", "deepseek"),
    ("api.x.ai", "x_ai"),
    ("api.perplexity.ai", "perplexity"),
    ("api.cohere.com", "cohere"),
];

/// `gen_ai.provider.name`: the well-known value of the target's host; `azure.ai.openai`
/// for Azure OpenAI hosts; `ttfx.sim` for the simulator; the preset for `proxy/NAME`;
/// else the API family the stream spoke (the dialect's first word: `openai`,
/// `anthropic`, `ollama`, `llamacpp`), else `_OTHER`.
pub fn provider(report: &FieldReport) -> String {
    let run = &report.run;
    let target = run.target.as_deref().unwrap_or("");
    if let Some((host, _)) = server_of(target) {
        let host = host.to_ascii_lowercase();
        if let Some((_, name)) = PROVIDERS.iter().find(|(h, _)| *h == host) {
            return (*name).to_owned();
        }
        if host.ends_with(".openai.azure.com") {
            return "azure.ai.openai".to_owned();
        }
    } else if target.starts_with("sim/") || target == "sim" {
        return "ttfx.sim".to_owned();
    } else if let Some(preset) = target.strip_prefix("proxy/") {
        let name = preset.split(['/', '?']).next().unwrap_or("");
        if !name.is_empty() {
            return name.to_owned();
        }
    }
    match run.dialect.as_deref() {
        Some(d) if !d.is_empty() => d.split(['-', '_']).next().unwrap_or(d).to_ascii_lowercase(),
        _ => "_OTHER".to_owned(),
    }
}

/// `error.type` of a run that did not complete: the HTTP status for an HTTP failure,
/// else the failure class (`network`, `in_band`, `decode`, `timeout`), else the outcome
/// (`aborted`, `incomplete`); None for a completed run.
pub fn error_type(report: &FieldReport) -> Option<String> {
    let run = &report.run;
    let outcome = name_of(&run.outcome).unwrap_or_default();
    if outcome == "completed" {
        return None;
    }
    if let Some(class) = &run.failure_class {
        let class = name_of(class).unwrap_or_else(|| "_OTHER".to_owned());
        if class == "http_status"
            && let Some(status) = run.http_status
        {
            return Some(status.to_string());
        }
        return Some(class);
    }
    Some(if outcome.is_empty() {
        "_OTHER".to_owned()
    } else {
        outcome
    })
}

/// The attributes every metric data point of a run carries: the GenAI ones, then the few
/// ttfx dimensions a dashboard groups by (low cardinality: no page path, no run id).
pub fn metric_attributes(run: &StoredRun) -> Vec<KeyValue> {
    let r = &run.report.run;
    let mut a = vec![
        text(semconv::OPERATION_NAME, semconv::OPERATION_CHAT),
        text(semconv::PROVIDER_NAME, &provider(&run.report)),
    ];
    if let Some(target) = r.target.as_deref()
        && let Some((host, port)) = server_of(target)
    {
        // The conventions want server.port whenever server.address is set: the scheme's
        // own port when the URL names none.
        let port = port.unwrap_or(if target.starts_with("https://") {
            443
        } else {
            80
        });
        a.push(text(semconv::SERVER_ADDRESS, &host));
        a.push(int(semconv::SERVER_PORT, i64::from(port)));
    }
    if let Some(e) = error_type(&run.report) {
        a.push(text(semconv::ERROR_TYPE, &e));
    }
    a.push(text("ttfx.source", &run.source));
    if let Some(label) = &r.label {
        a.push(text("ttfx.label", label));
    }
    if let Some(engine) = &r.engine {
        a.push(text("ttfx.engine", engine));
    }
    // A sampled run stands for 1/sample_rate runs: a backend weights by it.
    a.push(double("ttfx.sample_rate", r.sample_rate));
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_keep_every_microsecond_of_a_date() {
        assert_eq!(unix_nanos(1_700_000_000_123.456), 1_700_000_000_123_456_000);
        assert_eq!(unix_nanos(0.5), 500_000);
        assert_eq!(unix_nanos(f64::NAN), 0);
    }

    #[test]
    fn server_and_port_come_from_a_url_target_only() {
        assert_eq!(
            server_of("https://api.openai.com/v1/chat/completions"),
            Some(("api.openai.com".into(), None))
        );
        assert_eq!(
            server_of("http://127.0.0.1:8000/v1"),
            Some(("127.0.0.1".into(), Some(8000)))
        );
        assert_eq!(server_of("http://[::1]:9/x"), Some(("::1".into(), Some(9))));
        assert_eq!(server_of("sim/fast"), None);
    }
}

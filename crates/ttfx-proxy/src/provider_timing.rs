//! What an upstream says about its own time in its response headers, read by the vantage
//! proxy into its record.
//!
//! Only headers whose producer documents what they measure are read (docs/serve.md,
//! "Provider timing headers", names each source):
//! - `Server-Timing` (W3C Server Timing), from any upstream or CDN in front of it; parsed
//!   by the same code as the probe's, so the client's copy and the record's merge as one.
//! - `openai-processing-ms`: OpenAI, "time taken processing your API request".
//! - `x-envoy-upstream-service-time`: Envoy's router, the time the upstream host spent
//!   on the request plus the network between Envoy and it (gateways built on Envoy send
//!   it in front of many hosted models).
//!
//! The headers themselves still reach the page unchanged; `Server-Timing` is exposed to
//! cross-origin scripts by this server's CORS layer.

use axum::http::HeaderMap;
use ttfx_core::decode::server_timing_header;
use ttfx_core::server_timing::{ServerTiming, TimingSource};

/// A documented single-number timing header, in milliseconds.
struct MsHeader {
    name: &'static str,
    description: &'static str,
}

const MS_HEADERS: [MsHeader; 2] = [
    MsHeader {
        name: "openai-processing-ms",
        description: "OpenAI: time taken processing the API request",
    },
    MsHeader {
        name: "x-envoy-upstream-service-time",
        description: "Envoy: upstream host processing time plus the network to it",
    },
];

/// The timings in `headers`, and one line per value that could not be read (a header
/// that is present but malformed is worth saying, never worth guessing).
pub fn read(headers: &HeaderMap) -> (Vec<ServerTiming>, Vec<String>) {
    let mut problems = Vec::new();
    let values: Vec<&str> = headers
        .get_all("server-timing")
        .iter()
        .filter_map(|v| match v.to_str() {
            Ok(s) => Some(s),
            Err(_) => {
                problems.push("Server-Timing: not visible ASCII".to_owned());
                None
            }
        })
        .collect();
    let parsed = server_timing_header::parse_headers(values.iter().copied());
    problems.extend(
        parsed
            .junk
            .iter()
            .map(|j| format!("Server-Timing: cannot read `{j}`")),
    );
    let mut timings = parsed.timings;
    for h in &MS_HEADERS {
        let Some(value) = headers.get(h.name) else {
            continue;
        };
        let ms = value
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0);
        match ms {
            Some(ms) => timings.push(ServerTiming {
                name: h.name.to_owned(),
                duration_ms: Some(ms),
                description: Some(h.description.to_owned()),
                source: TimingSource::ResponseHeader,
            }),
            None => problems.push(format!(
                "{}: `{}` is not a duration in ms",
                h.name,
                String::from_utf8_lossy(value.as_bytes())
            )),
        }
    }
    (timings, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn documented_headers_are_read_with_their_source_and_junk_is_named() {
        let mut h = HeaderMap::new();
        h.append(
            "server-timing",
            HeaderValue::from_static("queue;dur=12.5, cfL4;desc=\"rtt\""),
        );
        h.append("server-timing", HeaderValue::from_static("prefill;dur=40"));
        h.insert("openai-processing-ms", HeaderValue::from_static("318"));
        h.insert(
            "x-envoy-upstream-service-time",
            HeaderValue::from_static("soon"),
        );
        // Not documented as a timing: ignored.
        h.insert("x-inference-time", HeaderValue::from_static("7"));
        let (timings, problems) = read(&h);
        let find = |n: &str| timings.iter().find(|t| t.name == n).unwrap();
        assert_eq!(find("queue").duration_ms, Some(12.5));
        assert_eq!(find("queue").source, TimingSource::ServerTimingHeader);
        assert_eq!(find("prefill").duration_ms, Some(40.0));
        assert_eq!(find("cfL4").duration_ms, None);
        let openai = find("openai-processing-ms");
        assert_eq!(openai.duration_ms, Some(318.0));
        assert_eq!(openai.source, TimingSource::ResponseHeader);
        assert!(timings.iter().all(|t| t.name != "x-inference-time"));
        assert!(
            timings
                .iter()
                .all(|t| t.name != "x-envoy-upstream-service-time")
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("x-envoy-upstream-service-time"));
    }
}

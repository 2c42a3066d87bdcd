//! The collector's `/field/…` answers (docs/field.md, "Queries") as the Field view reads
//! them, the query string it sends, and the fetch. Only the fields the view shows are
//! read; the rest of each document is ignored.

use serde::Deserialize;
use serde_json::Value;
use ttfx_core::field::FieldReport;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::Response;

/// What the view asks: one metric over the last `since`, optionally per dimension and
/// within one dimension's value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub metric: String,
    /// `1h`, `24h`, `7d`, `30d`.
    pub since: String,
    /// A dimension to slice by.
    pub by: Option<String>,
    /// `(dimension, value)`; an empty value means "absent", as the collector reads it.
    pub filter: Option<(String, String)>,
}

/// The periods the view offers, each with the series bucket that draws it in 24 to 60
/// points.
pub const PERIODS: [(&str, &str); 4] = [("1h", "1m"), ("24h", "30m"), ("7d", "6h"), ("30d", "1d")];

impl Query {
    /// The series bucket for this period.
    pub fn bucket(&self) -> &'static str {
        PERIODS
            .iter()
            .find(|(since, _)| *since == self.since)
            .map_or("1h", |(_, bucket)| bucket)
    }

    /// `endpoint?metric=…&since=…[&by=…][&DIM=VALUE]` plus `extra` parameters, each
    /// percent-encoded.
    pub fn url(&self, endpoint: &str, with_by: bool, extra: &[(&str, &str)]) -> String {
        let mut params: Vec<(&str, &str)> = vec![("metric", &self.metric), ("since", &self.since)];
        if with_by && let Some(by) = &self.by {
            params.push(("by", by));
        }
        if let Some((dim, value)) = &self.filter {
            params.push((dim, value));
        }
        params.extend_from_slice(extra);
        let query: Vec<String> = params
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        format!("{endpoint}?{}", query.join("&"))
    }
}

/// RFC 3986 percent-encoding of everything but the unreserved characters.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A dimension's value as text: what a table shows and what a filter sends (`null`,
/// "absent", is the empty string).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A group's name in a table or a legend.
pub fn group_name(key: &Value, by: Option<&str>) -> String {
    match (key, by) {
        (_, None) => "all runs".to_owned(),
        (Value::Null, Some(_)) => "(none)".to_owned(),
        (key, Some(_)) => value_text(key),
    }
}

/// `GET /field/dimensions`: the pickers' choices.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Dimensions {
    pub runs: u64,
    pub metrics: Vec<MetricCount>,
    pub dimensions: Vec<Dimension>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MetricCount {
    pub metric: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Dimension {
    pub name: String,
    pub values: Vec<DimensionValue>,
    #[serde(default)]
    pub values_left_off: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DimensionValue {
    pub value: Value,
    pub count: u64,
}

/// `GET /field/summary` for one metric.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Summary {
    pub by: Option<String>,
    pub runs: u64,
    pub metrics: Vec<SummaryMetric>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SummaryMetric {
    pub metric: String,
    pub groups: Vec<SummaryGroup>,
    #[serde(default)]
    pub groups_left_off: u64,
}

/// One group's weighted statistics.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SummaryGroup {
    pub key: Value,
    pub count: u64,
    pub weighted_count: f64,
    pub mean: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

/// `GET /field/series`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Series {
    pub metric: String,
    pub bucket_ms: f64,
    pub by: Option<String>,
    pub groups: Vec<SeriesGroup>,
    #[serde(default)]
    pub groups_left_off: u64,
    #[serde(default)]
    pub since_unix_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SeriesGroup {
    pub key: Value,
    pub count: u64,
    pub points: Vec<Point>,
}

/// One time bucket's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Point {
    pub start_unix_ms: f64,
    pub count: u64,
    pub p50: f64,
    pub p75: f64,
    pub p95: f64,
}

/// `GET /field/histogram`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Histogram {
    pub metric: String,
    pub by: Option<String>,
    pub edges: Vec<f64>,
    pub groups: Vec<HistogramGroup>,
    #[serde(default)]
    pub groups_left_off: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HistogramGroup {
    pub key: Value,
    pub count: u64,
    pub counts: Vec<u64>,
    pub weighted_counts: Vec<f64>,
}

/// `GET /field/slowest`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Slowest {
    pub metric: String,
    pub runs: Vec<SlowRun>,
}

/// One of the slowest runs: its value, dimensions and the stored field report. The
/// collector stores only reports that passed `FieldReport::validate` (a run report is
/// turned into one before it is stored), so each reads as a `FieldReport`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SlowRun {
    pub value: f64,
    pub at_unix_ms: f64,
    pub run_id: Option<String>,
    pub dimensions: serde_json::Map<String, Value>,
    pub report: FieldReport,
}

impl SlowRun {
    /// A dimension's value as text (empty when absent).
    pub fn dimension(&self, name: &str) -> String {
        self.dimensions
            .get(name)
            .map(value_text)
            .unwrap_or_default()
    }
}

/// Reads one endpoint's answer.
pub fn parse<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, FetchError> {
    serde_json::from_str(text)
        .map_err(|e| FetchError::Other(format!("the collector's {what} is unreadable: {e}")))
}

/// Why an answer is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// A 404: this server has no collector (`ttfx serve` without `--collect` answers
    /// the `/field/…` paths so, and a server that is not `ttfx serve` has none either).
    NoCollector,
    /// Anything else, as a sentence (the collector's own message for its 400s).
    Other(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::NoCollector => {
                f.write_str("no collector: start ttfx serve --collect FILE.db")
            }
            FetchError::Other(m) => f.write_str(m),
        }
    }
}

/// The message of a collector's JSON error (`{"error": {"message": …}}`), else the text.
pub fn error_message(status: u16, body: &str) -> FetchError {
    if status == 404 {
        return FetchError::NoCollector;
    }
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| body.chars().take(200).collect());
    FetchError::Other(format!("HTTP {status}: {message}"))
}

/// GET `url` on the serving origin: the body of a 2xx answer, else why not. One
/// function for every endpoint (parsed by the panel that shows it), so the page carries
/// one copy of the fetch and of the resource that holds its answer.
pub async fn get(url: String) -> Result<String, FetchError> {
    let network = |_| FetchError::Other(format!("{url} did not load"));
    let window = web_sys::window().ok_or(FetchError::Other("no window".into()))?;
    let response: Response = JsFuture::from(window.fetch_with_str(&url))
        .await
        .map_err(network)?
        .dyn_into()
        .map_err(network)?;
    let body = JsFuture::from(response.text().map_err(network)?)
        .await
        .ok()
        .and_then(|t| t.as_string())
        .unwrap_or_default();
    if !response.ok() {
        return Err(error_message(response.status(), &body));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// The documented answers (docs/field.md), trimmed where the docs elide with `…`.
    const SUMMARY: &str = r#"{
      "by": "label",
      "metrics": [{"metric": "ttft_visible_ms", "groups": [
        {"key": "prod-chat", "count": 7, "weighted_count": 28.0, "mean": 572.43,
         "min": 388.0, "max": 1210.0, "p50": 455.0, "p75": 570.0, "p90": 850.0,
         "p95": 1030.0, "p99": 1174.0},
        {"key": "canary", "count": 3, "weighted_count": 3.0, "mean": 516.67,
         "min": 300.0, "max": 900.0, "p50": 350.0, "p75": 625.0, "p90": 790.0,
         "p95": 845.0, "p99": 889.0}], "groups_left_off": 0}],
      "runs": 10, "since": "24h", "since_unix_ms": 1796036798658.5, "where": {}}"#;

    #[wasm_bindgen_test]
    fn the_summary_parses() {
        let s: Summary = parse("summary", SUMMARY).unwrap();
        assert_eq!(s.by.as_deref(), Some("label"));
        assert_eq!(s.runs, 10);
        let g = &s.metrics[0].groups;
        assert_eq!(s.metrics[0].metric, "ttft_visible_ms");
        assert_eq!(group_name(&g[1].key, s.by.as_deref()), "canary");
        assert_eq!(
            (g[0].count, g[0].weighted_count, g[0].p50),
            (7, 28.0, 455.0)
        );
        assert_eq!(g[1].p99, 889.0);
    }

    #[wasm_bindgen_test]
    fn the_series_parses() {
        let s: Series = parse(
            "series",
            r#"{"metric": "ttft_visible_ms", "bucket": "1h", "bucket_ms": 3600000.0, "by": null,
              "groups": [{"key": null, "count": 6, "points": [
                {"start_unix_ms": 1796104800000.0, "count": 1, "weighted_count": 4.0, "mean": 402.0,
                 "min": 402.0, "max": 402.0, "p50": 402.0, "p75": 402.0, "p90": 402.0, "p95": 402.0,
                 "p99": 402.0}]}],
              "groups_left_off": 0, "since": "6h", "since_unix_ms": 1796101202752.9,
              "where": {"label": "prod-chat"}}"#,
        )
        .unwrap();
        assert_eq!(s.bucket_ms, 3_600_000.0);
        assert_eq!(s.by, None);
        assert_eq!(s.since_unix_ms, Some(1796101202752.9));
        assert_eq!(group_name(&s.groups[0].key, None), "all runs");
        assert_eq!(s.groups[0].points[0].p95, 402.0);
    }

    #[wasm_bindgen_test]
    fn the_histogram_parses() {
        let h: Histogram = parse(
            "histogram",
            r#"{"metric": "ttft_visible_ms", "bins": 4, "by": "label",
              "edges": [300.0, 527.5, 755.0, 982.5, 1210.0],
              "groups": [
                {"key": "prod-chat", "count": 7, "weighted_count": 28.0,
                 "counts": [4, 2, 0, 1], "weighted_counts": [16.0, 8.0, 0.0, 4.0]},
                {"key": "canary", "count": 3, "weighted_count": 3.0,
                 "counts": [2, 0, 1, 0], "weighted_counts": [2.0, 0.0, 1.0, 0.0]}],
              "groups_left_off": 0, "since": "24h", "since_unix_ms": 1796036802752.9, "where": {}}"#,
        )
        .unwrap();
        assert_eq!(h.edges.len(), 5);
        assert_eq!(h.groups[0].counts, vec![4, 2, 0, 1]);
        assert_eq!(h.groups[1].weighted_counts[2], 1.0);
    }

    #[wasm_bindgen_test]
    fn the_slowest_runs_parse_with_their_reports() {
        let s: Slowest = parse(
            "slowest runs",
            r#"{"metric": "ttft_visible_ms", "limit": 1, "runs": [
              {"value": 1210.0, "at_unix_ms": 1796112398556.8, "received_unix_ms": 1796123198569.4,
               "run_id": "req-1210",
               "dimensions": {"label": "prod-chat", "engine": "chromium", "http_status": null,
                              "hidden": false, "sample_rate": 0.25, "source": "field"},
               "report": {"schema_version": 1, "kind": "field", "generator": "ttfx-core 0.1.0",
                          "run": {"outcome": "completed", "hidden": false, "sample_rate": 0.25,
                                  "milestones": {"request_start": 0.0, "first_token": 1190.0,
                                                 "first_visible_token": 1210.0},
                                  "chunks": {"count": 0, "bytes": 0, "visible_tokens": 0,
                                             "reasoning_tokens": 0}}}}],
              "since": "24h", "since_unix_ms": 1796036802771.1, "where": {}}"#,
        )
        .unwrap();
        let run = &s.runs[0];
        assert_eq!(run.run_id.as_deref(), Some("req-1210"));
        assert_eq!(run.dimension("label"), "prod-chat");
        assert_eq!(run.dimension("hidden"), "false");
        assert_eq!(run.dimension("http_status"), "");
        assert_eq!(run.dimension("sample_rate"), "0.25");
        assert_eq!(
            run.report
                .run
                .milestones
                .get(ttfx_core::Milestone::FirstToken),
            Some(1190.0)
        );
    }

    #[wasm_bindgen_test]
    fn the_dimensions_parse() {
        let d: Dimensions = parse(
            "dimensions",
            r#"{"runs": 10,
              "metrics": [{"metric": "ttft_ms", "count": 10}, {"metric": "gap.first_token_ms", "count": 10}],
              "dimensions": [
                {"name": "label", "values": [{"value": "prod-chat", "count": 7},
                                             {"value": "canary", "count": 3}], "values_left_off": 0},
                {"name": "http_status", "values": [{"value": null, "count": 9},
                                                   {"value": 429, "count": 1}], "values_left_off": 0}],
              "since": "7d", "since_unix_ms": 1795518402799.9, "where": {}}"#,
        )
        .unwrap();
        assert_eq!(d.runs, 10);
        assert_eq!(d.metrics[1].metric, "gap.first_token_ms");
        assert_eq!(d.dimensions[1].name, "http_status");
        assert_eq!(value_text(&d.dimensions[1].values[1].value), "429");
        assert_eq!(value_text(&d.dimensions[1].values[0].value), "");
    }

    #[wasm_bindgen_test]
    fn a_bad_answer_is_a_message_and_a_404_means_no_collector() {
        let e = parse::<Summary>("summary", "<html>").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the collector's summary is unreadable"),
            "{e}"
        );
        let disabled = r#"{"error": {"message": "this ttfx serve has no collector: start it with --collect FILE.db", "type": "ttfx_collect_error"}}"#;
        assert_eq!(error_message(404, disabled), FetchError::NoCollector);
        assert_eq!(
            FetchError::NoCollector.to_string(),
            "no collector: start ttfx serve --collect FILE.db"
        );
        let bad = r#"{"error": {"message": "unknown metric `ttft` (choices: ttft_ms)"}}"#;
        assert_eq!(
            error_message(400, bad).to_string(),
            "HTTP 400: unknown metric `ttft` (choices: ttft_ms)"
        );
    }

    #[wasm_bindgen_test]
    fn queries_are_encoded_and_the_bucket_follows_the_period() {
        let q = Query {
            metric: "gap.first_token_ms".into(),
            since: "7d".into(),
            by: Some("label".into()),
            filter: Some(("page_path".into(), "/chat/a b&c".into())),
        };
        assert_eq!(
            q.url("/field/series", true, &[("bucket", q.bucket())]),
            "/field/series?metric=gap.first_token_ms&since=7d&by=label&page_path=%2Fchat%2Fa%20b%26c&bucket=6h"
        );
        assert_eq!(
            q.url("/field/slowest", false, &[("limit", "10")]),
            "/field/slowest?metric=gap.first_token_ms&since=7d&page_path=%2Fchat%2Fa%20b%26c&limit=10"
        );
        assert_eq!(encode("é"), "%C3%A9");
    }
}

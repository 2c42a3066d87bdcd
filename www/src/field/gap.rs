//! The collector's benchmarks beside the field (`GET /field/benchmarks`, `GET
//! /field/gap`, docs/field.md) as the Field view reads them, and the marks the chart
//! and the histogram draw from a gap: the benchmark's p50/p90/p99 of the metric that
//! stands beside the one shown. Which benchmark metric stands beside which field metric
//! is the collector's rule (its gap rows), not the page's.

use serde::Deserialize;

use super::api::encode;

/// `GET /field/benchmarks`, newest import first.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Benchmarks {
    pub benchmarks: Vec<Benchmark>,
}

/// One stored benchmark run (what the picker and the head show of it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Benchmark {
    pub id: i64,
    pub name: String,
    pub tool: String,
    #[serde(default)]
    pub tool_version: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    pub load_text: String,
    pub completed: u64,
    pub failed: u64,
}

impl Benchmark {
    /// `bench.json · vllm · model m · concurrency 2`, the picker's option.
    pub fn option_text(&self) -> String {
        let model = self.model.as_deref().unwrap_or("(model not stated)");
        format!(
            "{} · {} · model {model} · {}",
            self.name, self.tool, self.load_text
        )
    }
}

/// `GET /field/gap`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Gap {
    pub sentence: String,
    pub runs: u64,
    pub benchmark: Benchmark,
    pub rows: Vec<GapRow>,
}

/// A benchmark metric beside a field metric.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GapRow {
    pub bench_metric: String,
    pub bench_title: String,
    pub field_metric: String,
    pub waits_for: String,
    pub field_count: u64,
    pub percentiles: Vec<GapAt>,
}

/// One percentile of a row; a side without a value is `null`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct GapAt {
    pub p: u8,
    pub bench: Option<f64>,
    pub field: Option<f64>,
    pub diff_ms: Option<f64>,
    pub ratio: Option<f64>,
}

/// `/field/gap?bench=…[&metric=…]&since=…[&DIM=VALUE]`: the benchmark `bench` (an id,
/// or `latest`) over the view's period and filter.
pub fn url(
    bench: &str,
    metric: Option<&str>,
    since: &str,
    filter: Option<&(String, String)>,
) -> String {
    let mut params = vec![("bench", bench)];
    if let Some(m) = metric {
        params.push(("metric", m));
    }
    params.push(("since", since));
    if let Some((dim, value)) = filter {
        params.push((dim, value));
    }
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    format!("/field/gap?{}", query.join("&"))
}

/// A benchmark percentile drawn across a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// 50, 90 or 99.
    pub p: u8,
    pub value_ms: f64,
    /// `bench p50 142 ms`.
    pub label: String,
}

/// The marks of a gap asked for one metric: its rows share one benchmark metric (the
/// collector keeps the rows that metric stands in), so the first row's benchmark side
/// is the marks. Percentiles the benchmark does not state are left out.
pub fn marks(gap: &Gap) -> Vec<Mark> {
    let Some(row) = gap.rows.first() else {
        return Vec::new();
    };
    row.percentiles
        .iter()
        .filter_map(|at| {
            let v = at.bench.filter(|v| v.is_finite())?;
            Some(Mark {
                p: at.p,
                value_ms: v,
                label: format!("bench p{} {} ms", at.p, ms(v)),
            })
        })
        .collect()
}

/// Whole ms from 10 ms up, one decimal below (the collector's sentence writes so).
pub fn ms(v: f64) -> String {
    if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A table cell: the value, or a dash.
pub fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), ms)
}

/// `+469 ms`, `−12 ms`.
pub fn signed_ms(v: Option<f64>) -> String {
    match v {
        Some(v) if v < 0.0 => format!("−{}", ms(-v)),
        Some(v) => format!("+{}", ms(v)),
        None => "–".to_owned(),
    }
}

/// `4.3x`.
pub fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |r| format!("{r:.1}x"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::field::api::parse;

    /// The collector's answer for `metric=ttft_visible_ms` (one row), as gap.rs writes it.
    const GAP: &str = r#"{
      "since": "24h", "since_unix_ms": 1.0, "where": {},
      "benchmark": {"id": 3, "name": "bench.json", "file_name": "bench.json", "sha256": "ab",
        "imported_unix_ms": 1.0, "label": null, "tool": "vllm", "tool_version": null,
        "model": "m", "load": {"kind": "concurrency", "value": 2.0},
        "load_text": "concurrency 2", "completed": 3, "failed": 0, "metrics": {}},
      "runs": 5,
      "sentence": "the benchmark says p50 TTFT 200 ms; your users wait 300 ms for the first visible token (+100 ms, 1.5x)",
      "rows": [{"bench_metric": "ttft_ms", "bench_title": "TTFT", "origin": "per_request",
        "field_metric": "ttft_visible_ms", "waits_for": "the first visible token",
        "field_count": 5, "field_weighted_count": 5.0,
        "percentiles": [{"p": 50, "bench": 200.0, "field": 300.0, "diff_ms": 100.0, "ratio": 1.5},
                        {"p": 90, "bench": 280.0, "field": null, "diff_ms": null, "ratio": null},
                        {"p": 99, "bench": null, "field": 640.0, "diff_ms": null, "ratio": null}]}]
    }"#;

    #[test]
    fn a_gaps_first_row_gives_the_marks() {
        let gap: Gap = parse("gap", GAP).unwrap();
        assert_eq!(
            gap.benchmark.option_text(),
            "bench.json · vllm · model m · concurrency 2"
        );
        let m = marks(&gap);
        assert_eq!(m.len(), 2, "p99 has no benchmark value");
        assert_eq!((m[0].p, m[0].value_ms), (50, 200.0));
        assert_eq!(m[1].label, "bench p90 280 ms");
        assert_eq!(ms(4.25), "4.2");
        assert_eq!(signed_ms(Some(-12.0)), "−12");
        assert_eq!(ratio(Some(4.26)), "4.3x");
    }

    #[test]
    fn gap_urls_are_encoded() {
        let filter = ("label".to_owned(), "a b&c".to_owned());
        assert_eq!(
            url("latest", Some("ttft_ms"), "24h", Some(&filter)),
            "/field/gap?bench=latest&metric=ttft_ms&since=24h&label=a%20b%26c"
        );
        assert_eq!(url("7", None, "1h", None), "/field/gap?bench=7&since=1h");
    }
}

//! GuideLLM's benchmarks report (`guidellm benchmark --output-path benchmarks.json`):
//! `{"benchmarks": [...]}` (0.2.x), with `args` before it (0.4.x) and `metadata` with
//! the version (0.5+). Each benchmark is one run: its strategy is the load, its
//! `requests.successful` the per-request values (TTFT and `inter_token_latency_ms` in
//! ms, `request_latency` in seconds), its `metrics` the summaries.
//!
//! The request lists are sampled unless the run was small (0.4 keeps 10 by default):
//! per-request percentiles are computed only when the list holds every successful
//! request, else the file's own summary is used. GuideLLM's `inter_token_latency_ms` is
//! the usual TPOT ((last token − first token) / (tokens − 1)); its
//! `time_per_output_token_ms` means something else in each version and is not read.
//! GuideLLM writes no per-gap ITL. Sources: docs/import.md.

use std::io::Read;

use serde::Deserialize;

use crate::number::{lenient, lenient_count};
use crate::sniff::Shape;
use crate::{BenchRun, Figures, Load, Metric, Percentiles, Tool};

pub fn recognise(shape: &Shape) -> bool {
    !shape.list && shape.has("benchmarks")
}

#[derive(Deserialize)]
struct Report {
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    args: Option<Args>,
    benchmarks: Vec<Benchmark>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    guidellm_version: Option<String>,
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct Benchmark {
    /// 0.2: the run's arguments, with the strategy.
    #[serde(default)]
    args: Option<BenchArgs>,
    /// 0.2: the backend, with the model.
    #[serde(default)]
    worker: Option<Worker>,
    /// 0.4+: strategy and backend.
    #[serde(default)]
    config: Option<Config>,
    /// 0.2: counts at the benchmark's top level.
    #[serde(default)]
    request_totals: Option<Totals>,
    #[serde(default)]
    metrics: Option<Metrics>,
    #[serde(default)]
    requests: Option<Requests>,
}

#[derive(Deserialize)]
struct BenchArgs {
    #[serde(default)]
    strategy: Option<Strategy>,
}

#[derive(Deserialize)]
struct Worker {
    #[serde(default)]
    backend_model: Option<String>,
}

#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    strategy: Option<Strategy>,
    #[serde(default)]
    backend: Option<Backend>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Backend {
    Object {
        #[serde(default)]
        model: Option<String>,
    },
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct Strategy {
    #[serde(rename = "type_", default)]
    kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    streams: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    rate: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    max_concurrency: Option<f64>,
}

#[derive(Deserialize)]
struct Totals {
    #[serde(default, deserialize_with = "lenient_count")]
    successful: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    errored: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    incomplete: Option<u64>,
}

#[derive(Deserialize)]
struct Metrics {
    /// 0.4+: counts inside the metrics.
    #[serde(default)]
    request_totals: Option<Totals>,
    #[serde(default)]
    time_to_first_token_ms: Option<ByStatus>,
    #[serde(default)]
    inter_token_latency_ms: Option<ByStatus>,
    /// Seconds.
    #[serde(default)]
    request_latency: Option<ByStatus>,
}

#[derive(Deserialize)]
struct ByStatus {
    #[serde(default)]
    successful: Option<Distribution>,
}

#[derive(Deserialize)]
struct Distribution {
    #[serde(default, deserialize_with = "lenient")]
    mean: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    median: Option<f64>,
    #[serde(default, deserialize_with = "lenient_count")]
    count: Option<u64>,
    #[serde(default)]
    percentiles: Option<Quantiles>,
}

#[derive(Deserialize)]
struct Quantiles {
    #[serde(default, deserialize_with = "lenient")]
    p50: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    p90: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    p95: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    p99: Option<f64>,
}

#[derive(Deserialize)]
struct Requests {
    #[serde(default)]
    successful: Option<Vec<Request>>,
}

/// One successful request: only the three values read.
#[derive(Deserialize)]
struct Request {
    #[serde(default, deserialize_with = "lenient")]
    time_to_first_token_ms: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    inter_token_latency_ms: Option<f64>,
    /// Seconds.
    #[serde(default, deserialize_with = "lenient")]
    request_latency: Option<f64>,
}

pub fn read<R: Read>(input: R) -> Result<Vec<BenchRun>, String> {
    let mut runs = Vec::new();
    for report in super::documents::<Report, R>(input) {
        let report = report?;
        let version = report.metadata.and_then(|m| m.guidellm_version);
        let model = report.args.and_then(|a| a.model);
        for b in report.benchmarks {
            runs.push(run(b, version.clone(), model.clone()));
        }
    }
    Ok(runs)
}

fn run(b: Benchmark, version: Option<String>, model: Option<String>) -> BenchRun {
    let mut run = BenchRun::new(Tool::Guidellm);
    run.tool_version = version;
    let strategy = b
        .config
        .as_ref()
        .and_then(|c| c.strategy.as_ref())
        .or_else(|| b.args.as_ref().and_then(|a| a.strategy.as_ref()));
    run.load = strategy.map_or(Load::Unknown, load);
    let backend_model = b.config.as_ref().and_then(|c| match &c.backend {
        Some(Backend::Object { model }) => model.clone(),
        _ => None,
    });
    run.model = backend_model
        .or_else(|| b.worker.and_then(|w| w.backend_model))
        .or(model);
    let totals = b
        .metrics
        .as_ref()
        .and_then(|m| m.request_totals.as_ref())
        .or(b.request_totals.as_ref());
    let successful = totals.and_then(|t| t.successful);
    if let Some(t) = totals {
        run.completed = t.successful.unwrap_or(0);
        run.failed = t.errored.unwrap_or(0) + t.incomplete.unwrap_or(0);
    }
    if let Some(m) = &b.metrics {
        run.set(
            Metric::Ttft,
            summary(m.time_to_first_token_ms.as_ref(), 1.0),
        );
        run.set(
            Metric::Tpot,
            summary(m.inter_token_latency_ms.as_ref(), 1.0),
        );
        run.set(Metric::E2e, summary(m.request_latency.as_ref(), 1000.0));
    }
    let requests = b.requests.and_then(|r| r.successful).unwrap_or_default();
    let whole = successful.is_none_or(|n| n as usize == requests.len());
    if whole && !requests.is_empty() {
        let values = |f: fn(&Request) -> Option<f64>, scale: f64| {
            requests
                .iter()
                .filter_map(f)
                .filter(|v| *v > 0.0)
                .map(|v| v * scale)
                .collect::<Vec<f64>>()
        };
        run.prefer(
            Metric::Ttft,
            Figures::from_values(values(|r| r.time_to_first_token_ms, 1.0)),
        );
        run.prefer(
            Metric::Tpot,
            Figures::from_values(values(|r| r.inter_token_latency_ms, 1.0)),
        );
        run.prefer(
            Metric::E2e,
            Figures::from_values(values(|r| r.request_latency, 1000.0)),
        );
    } else if !requests.is_empty() {
        run.notes.push(format!(
            "the file keeps a sample of {} of its {} successful requests: its own summaries are used",
            requests.len(),
            successful.unwrap_or(0)
        ));
    }
    run
}

fn load(s: &Strategy) -> Load {
    match s.kind.as_deref() {
        Some("synchronous") => Load::Sequential,
        Some("concurrent") => s.streams.map_or(Load::Unknown, Load::Concurrency),
        Some("constant" | "poisson") => s.rate.map_or(Load::Unknown, Load::RequestRate),
        Some("throughput") => s
            .max_concurrency
            .map_or(Load::RequestRate(f64::INFINITY), Load::Concurrency),
        _ => Load::Unknown,
    }
}

/// GuideLLM's own summary (its median and percentiles are sample values, not numpy's
/// interpolation), scaled to ms.
fn summary(by: Option<&ByStatus>, scale: f64) -> Option<Figures> {
    let d = by?.successful.as_ref()?;
    let q = d.percentiles.as_ref();
    let s = |v: Option<f64>| v.map(|v| v * scale);
    let percentiles = Percentiles {
        mean: s(d.mean),
        p50: s(d.median.or_else(|| q.and_then(|q| q.p50))),
        p90: s(q.and_then(|q| q.p90)),
        p95: s(q.and_then(|q| q.p95)),
        p99: s(q.and_then(|q| q.p99)),
    };
    Figures::from_summary(percentiles, d.count)
}

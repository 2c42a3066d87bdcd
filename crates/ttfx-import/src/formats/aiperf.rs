//! NVIDIA AIPerf: the summary `profile_export_aiperf.json` (metric objects at the top
//! level from 0.2, under `records` in 0.1; `aiperf_version` from 0.4) and the
//! per-request `profile_export.jsonl` (0.2+: one record per line, `metrics.<tag>.value`
//! in ms, `inter_chunk_latency` a list of gaps, `error` on a failed request).
//!
//! AIPerf's `inter_token_latency` is (e2e − TTFT) / (output tokens − 1): the usual TPOT,
//! and read as such; its per-gap `inter_chunk_latency` is the ITL. The records file
//! holds neither the model nor the load (they are in the summary beside it).
//! Sources: docs/import.md.

use std::io::Read;

use serde::Deserialize;

use super::stat_object::StatObject;
use crate::number::{Number, lenient};
use crate::sniff::Shape;
use crate::{BenchRun, Figures, Load, Metric, Tool};

/// Summary keys only AIPerf writes (GenAI-Perf's summary has the same metric objects).
const OWN_KEYS: [&str; 7] = [
    "aiperf_version",
    "telemetry_data",
    "was_cancelled",
    "error_summary",
    "error_request_count",
    "inter_chunk_latency",
    "benchmark_duration",
];

pub fn recognise(shape: &Shape) -> bool {
    if shape.list {
        return false;
    }
    let summary = shape.has_any(&OWN_KEYS) || (shape.has("records") && shape.has("input_config"));
    let record = shape.has("metadata") && shape.has("metrics") && !shape.has("benchmarks");
    summary || record
}

/// A summary, or a per-request record: told apart by their keys.
#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    aiperf_version: Option<String>,
    #[serde(default)]
    records: Option<OldRecords>,
    #[serde(default)]
    time_to_first_token: Option<StatObject>,
    #[serde(default)]
    inter_chunk_latency: Option<StatObject>,
    #[serde(default)]
    inter_token_latency: Option<StatObject>,
    #[serde(default)]
    request_latency: Option<StatObject>,
    #[serde(default)]
    request_count: Option<StatObject>,
    #[serde(default)]
    error_request_count: Option<StatObject>,
    #[serde(default)]
    input_config: Option<InputConfig>,
    // A per-request record's members.
    #[serde(default)]
    metadata: Option<RecordMeta>,
    #[serde(default)]
    metrics: Option<RecordMetrics>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// AIPerf 0.1: the metric objects under `records`, TTFT tagged `ttft`.
#[derive(Deserialize)]
struct OldRecords {
    #[serde(default, alias = "time_to_first_token")]
    ttft: Option<StatObject>,
    #[serde(default)]
    inter_token_latency: Option<StatObject>,
    #[serde(default)]
    request_latency: Option<StatObject>,
    #[serde(default)]
    request_count: Option<StatObject>,
    #[serde(default)]
    error_request_count: Option<StatObject>,
}

#[derive(Deserialize)]
struct InputConfig {
    #[serde(default)]
    endpoint: Option<Endpoint>,
    #[serde(default)]
    loadgen: Option<Loadgen>,
}

#[derive(Deserialize)]
struct Endpoint {
    #[serde(default)]
    model_names: Vec<String>,
}

#[derive(Deserialize)]
struct Loadgen {
    #[serde(default, deserialize_with = "lenient")]
    concurrency: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    request_rate: Option<f64>,
}

#[derive(Deserialize)]
struct RecordMeta {
    #[serde(default)]
    benchmark_phase: Option<String>,
}

#[derive(Deserialize)]
struct RecordMetrics {
    #[serde(default)]
    time_to_first_token: Option<Value>,
    #[serde(default)]
    inter_token_latency: Option<Value>,
    #[serde(default)]
    request_latency: Option<Value>,
    #[serde(default)]
    inter_chunk_latency: Option<Values>,
}

#[derive(Deserialize)]
struct Value {
    #[serde(default, deserialize_with = "lenient")]
    value: Option<f64>,
}

#[derive(Deserialize)]
struct Values {
    #[serde(default)]
    value: Vec<Number>,
}

pub fn read<R: Read>(input: R) -> Result<Vec<BenchRun>, String> {
    let mut runs = Vec::new();
    let mut records = Records::default();
    for doc in super::documents::<Doc, R>(input) {
        let doc = doc?;
        if doc.metadata.is_some() || doc.metrics.is_some() {
            records.add(doc);
        } else {
            runs.push(summary(doc));
        }
    }
    if records.seen > 0 {
        runs.push(records.into_run());
    }
    Ok(runs)
}

fn summary(doc: Doc) -> BenchRun {
    let mut run = BenchRun::new(Tool::Aiperf);
    run.tool_version = doc.aiperf_version;
    let config = doc.input_config;
    run.model = config
        .as_ref()
        .and_then(|c| c.endpoint.as_ref())
        .and_then(|e| e.model_names.first().cloned());
    let loadgen = config.as_ref().and_then(|c| c.loadgen.as_ref());
    run.load = match (
        loadgen.and_then(|l| l.concurrency),
        loadgen.and_then(|l| l.request_rate),
    ) {
        (_, Some(r)) => Load::RequestRate(r),
        (Some(c), None) => Load::Concurrency(c),
        (None, None) => {
            run.notes.push(
                "the file states no load: AIPerf's default, concurrency 1, is assumed".into(),
            );
            Load::Concurrency(1.0)
        }
    };
    let (ttft, tpot, e2e, count, errors) = match doc.records {
        Some(old) => (
            old.ttft,
            old.inter_token_latency,
            old.request_latency,
            old.request_count,
            old.error_request_count,
        ),
        None => (
            doc.time_to_first_token,
            doc.inter_token_latency,
            doc.request_latency,
            doc.request_count,
            doc.error_request_count,
        ),
    };
    run.completed = count
        .as_ref()
        .and_then(StatObject::count_value)
        .unwrap_or(0);
    run.failed = errors
        .as_ref()
        .and_then(StatObject::count_value)
        .unwrap_or(0);
    run.set(Metric::Ttft, ttft.and_then(|s| s.figures()));
    run.set(
        Metric::Itl,
        doc.inter_chunk_latency.and_then(|s| s.figures()),
    );
    run.set(Metric::Tpot, tpot.and_then(|s| s.figures()));
    run.set(Metric::E2e, e2e.and_then(|s| s.figures()));
    run
}

/// The per-request records, gathered into one run.
#[derive(Default)]
struct Records {
    seen: u64,
    completed: u64,
    failed: u64,
    warmup: u64,
    values: [Vec<f64>; 4],
}

impl Records {
    fn add(&mut self, doc: Doc) {
        self.seen += 1;
        let phase = doc
            .metadata
            .as_ref()
            .and_then(|m| m.benchmark_phase.as_deref());
        if phase.is_some_and(|p| p != "profiling") {
            self.warmup += 1;
            return;
        }
        if doc.error.is_some() {
            self.failed += 1;
            return;
        }
        self.completed += 1;
        let Some(m) = doc.metrics else { return };
        let one = |v: Option<Value>| v.and_then(|v| v.value);
        self.values[0].extend(one(m.time_to_first_token));
        if let Some(gaps) = m.inter_chunk_latency {
            for g in gaps.value {
                crate::number::push_value(&mut self.values[1], g.0);
            }
        }
        self.values[2].extend(one(m.inter_token_latency));
        self.values[3].extend(one(m.request_latency));
    }

    fn into_run(self) -> BenchRun {
        let mut run = BenchRun::new(Tool::Aiperf);
        run.completed = self.completed;
        run.failed = self.failed;
        run.notes.push(
            "per-request records carry neither model nor load (see profile_export_aiperf.json)"
                .into(),
        );
        if self.warmup > 0 {
            run.notes
                .push(format!("{} warm-up records left out", self.warmup));
        }
        for (metric, values) in Metric::ALL.into_iter().zip(self.values) {
            run.set(metric, Figures::from_values(values));
        }
        run
    }
}

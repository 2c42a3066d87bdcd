//! NVIDIA GenAI-Perf: its summary `profile_export_genai_perf.json` (metric objects in
//! ms, `input_config` nested from 0.0.13 and flat argparse keys before) and the raw
//! `profile_export.json` perf_analyzer writes beside it (`experiments[].requests[]`
//! with a send `timestamp` and `response_timestamps` in ns since the epoch, and each
//! response's raw body text).
//!
//! From the raw file, as GenAI-Perf itself does, a response whose text is empty (the
//! role-only first chunk of an OpenAI stream, a `finish_reason` chunk, usage, `[DONE]`)
//! is dropped before TTFT and latency are taken; the per-request TPOT counts one token
//! per non-empty response (GenAI-Perf counts with its tokenizer, which the file does not
//! hold). GenAI-Perf's `inter_token_latency` is the usual TPOT; it has no per-gap ITL
//! and no failed requests (perf_analyzer stops on an error). Sources: docs/import.md.

use std::fmt;
use std::io::Read;

use serde::Deserialize;
use serde::de::{self, SeqAccess, Visitor};

use super::stat_object::StatObject;
use crate::number::lenient;
use crate::sniff::Shape;
use crate::{BenchRun, Figures, Load, Metric, Tool};

pub fn recognise(shape: &Shape, whole: bool) -> bool {
    if shape.list {
        return false;
    }
    let raw =
        shape.has("experiments") && (shape.has("service_kind") || shape.has("version") || whole);
    let summary = whole
        && shape.has("input_config")
        && shape.has_any(&[
            "time_to_first_token",
            "request_latency",
            "inter_token_latency",
        ]);
    raw || summary
}

#[derive(Deserialize)]
struct Doc {
    // The summary's members.
    #[serde(default)]
    time_to_first_token: Option<StatObject>,
    #[serde(default)]
    inter_token_latency: Option<StatObject>,
    #[serde(default)]
    request_latency: Option<StatObject>,
    #[serde(default)]
    request_count: Option<StatObject>,
    #[serde(default)]
    input_config: Option<InputConfig>,
    // The raw export's members.
    #[serde(default)]
    experiments: Option<Vec<Experiment>>,
    #[serde(default)]
    version: Option<String>,
}

#[derive(Deserialize)]
struct InputConfig {
    /// 0.0.13+.
    #[serde(default)]
    model_names: Option<Vec<String>>,
    #[serde(default)]
    perf_analyzer: Option<PerfAnalyzer>,
    /// 0.0.12 and before: argparse's keys.
    #[serde(default)]
    model: Option<ModelList>,
    #[serde(default, deserialize_with = "lenient_or_blank")]
    concurrency: Option<f64>,
    #[serde(default, deserialize_with = "lenient_or_blank")]
    request_rate: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ModelList {
    Many(Vec<String>),
    One(String),
}

#[derive(Deserialize)]
struct PerfAnalyzer {
    #[serde(default)]
    stimulus: Option<Stimulus>,
}

#[derive(Deserialize)]
struct Stimulus {
    #[serde(default, deserialize_with = "lenient_or_blank")]
    concurrency: Option<f64>,
    #[serde(default, deserialize_with = "lenient_or_blank")]
    request_rate: Option<f64>,
}

/// GenAI-Perf writes an unset option as `""`.
fn lenient_or_blank<'de, D: de::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Blank {
        Num(#[serde(deserialize_with = "lenient")] Option<f64>),
        Text(String),
    }
    Ok(match Blank::deserialize(d)? {
        Blank::Num(v) => v,
        Blank::Text(t) => crate::number::parse_text(&t),
    })
}

#[derive(Deserialize)]
struct Experiment {
    #[serde(default)]
    experiment: Option<Stimulus2>,
    #[serde(default)]
    requests: Option<RequestStats>,
}

#[derive(Deserialize)]
struct Stimulus2 {
    #[serde(default)]
    mode: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    value: Option<f64>,
}

pub fn read<R: Read>(input: R) -> Result<Vec<BenchRun>, String> {
    let mut runs = Vec::new();
    for doc in super::documents::<Doc, R>(input) {
        let doc = doc?;
        match doc.experiments {
            Some(experiments) => {
                let version = doc.version.map(|v| format!("perf_analyzer {v}"));
                for e in experiments {
                    runs.push(raw_run(e, version.clone()));
                }
            }
            None => runs.push(summary(doc)),
        }
    }
    Ok(runs)
}

fn summary(doc: Doc) -> BenchRun {
    let mut run = BenchRun::new(Tool::GenaiPerf);
    if let Some(c) = &doc.input_config {
        run.model = c
            .model_names
            .as_ref()
            .and_then(|m| m.first().cloned())
            .or_else(|| match &c.model {
                Some(ModelList::Many(m)) => m.first().cloned(),
                Some(ModelList::One(m)) => Some(m.clone()),
                None => None,
            });
        let stimulus = c.perf_analyzer.as_ref().and_then(|p| p.stimulus.as_ref());
        let concurrency = stimulus.and_then(|s| s.concurrency).or(c.concurrency);
        let rate = stimulus.and_then(|s| s.request_rate).or(c.request_rate);
        run.load = match (concurrency, rate) {
            (_, Some(r)) if r > 0.0 => Load::RequestRate(r),
            (Some(c), _) if c > 0.0 => Load::Concurrency(c),
            _ => Load::Unknown,
        };
    }
    run.completed = doc
        .request_count
        .as_ref()
        .and_then(StatObject::count_value)
        .unwrap_or(0);
    run.notes
        .push("GenAI-Perf records no failed requests (perf_analyzer stops on an error)".into());
    run.set(
        Metric::Ttft,
        doc.time_to_first_token.and_then(|s| s.figures()),
    );
    run.set(
        Metric::Tpot,
        doc.inter_token_latency.and_then(|s| s.figures()),
    );
    run.set(Metric::E2e, doc.request_latency.and_then(|s| s.figures()));
    run
}

fn raw_run(e: Experiment, version: Option<String>) -> BenchRun {
    let mut run = BenchRun::new(Tool::GenaiPerf);
    run.tool_version = version;
    run.load = match e.experiment.as_ref().map(|x| (x.mode.as_deref(), x.value)) {
        Some((Some("concurrency"), Some(v))) if v > 0.0 => Load::Concurrency(v),
        Some((Some("request_rate"), Some(v))) if v > 0.0 => Load::RequestRate(v),
        _ => Load::Unknown,
    };
    let stats = e.requests.unwrap_or_default();
    run.model = stats.model;
    run.completed = stats.completed;
    if stats.empty > 0 {
        run.notes.push(format!(
            "{} requests had no non-empty response and are left out",
            stats.empty
        ));
    }
    run.notes.push(
        "TPOT counts one token per non-empty response (GenAI-Perf counts with its tokenizer)"
            .into(),
    );
    for (metric, values) in Metric::ALL.into_iter().zip(stats.values) {
        run.set(metric, Figures::from_values(values));
    }
    run
}

/// The requests of one experiment, reduced to their figures as they stream past: a
/// request's response texts are dropped once read.
#[derive(Default)]
struct RequestStats {
    completed: u64,
    empty: u64,
    model: Option<String>,
    /// TTFT, ITL, TPOT, E2E in ms.
    values: [Vec<f64>; 4],
}

impl<'de> Deserialize<'de> for RequestStats {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(RequestsVisitor)
    }
}

struct RequestsVisitor;

impl<'de> Visitor<'de> for RequestsVisitor {
    type Value = RequestStats;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of requests")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RequestStats, A::Error> {
        let mut stats = RequestStats::default();
        while let Some(r) = seq.next_element::<RawRequest>()? {
            stats.add(r);
        }
        Ok(stats)
    }
}

#[derive(Deserialize)]
struct RawRequest {
    /// ns since the epoch: kept whole (as f64 they would lose 256 ns).
    #[serde(default)]
    timestamp: Option<u64>,
    #[serde(default)]
    request_inputs: Option<Inputs>,
    #[serde(default)]
    response_timestamps: Vec<u64>,
    #[serde(default)]
    response_outputs: Vec<Output>,
}

#[derive(Deserialize)]
struct Inputs {
    #[serde(default)]
    payload: Option<String>,
}

/// One response: the raw body text (OpenAI service kind), or Triton's output tensor.
#[derive(Deserialize)]
struct Output {
    #[serde(default)]
    response: Option<String>,
    #[serde(default)]
    text_output: Option<serde_json::Value>,
}

impl Output {
    fn has_text(&self) -> bool {
        if let Some(body) = &self.response {
            return sse_has_text(body);
        }
        match &self.text_output {
            Some(serde_json::Value::String(s)) => !s.is_empty(),
            Some(serde_json::Value::Array(a)) => {
                a.iter().any(|v| v.as_str().is_some_and(|s| !s.is_empty()))
            }
            _ => false,
        }
    }
}

/// Does this raw body text carry generated text: an SSE `data:` event (or a bare JSON
/// body) with non-empty `choices[].delta.content`, `choices[].text` or
/// `choices[].message.content`?
fn sse_has_text(body: &str) -> bool {
    let events = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("data:").map(str::trim));
    let mut any = false;
    for data in events {
        any = true;
        if data != "[DONE]" && json_has_text(data) {
            return true;
        }
    }
    !any && json_has_text(body.trim())
}

fn json_has_text(text: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return false;
    };
    let non_empty = |v: &serde_json::Value| v.as_str().is_some_and(|s| !s.is_empty());
    v["choices"].as_array().is_some_and(|choices| {
        choices.iter().any(|c| {
            non_empty(&c["delta"]["content"])
                || non_empty(&c["text"])
                || non_empty(&c["message"]["content"])
        })
    })
}

impl RequestStats {
    fn add(&mut self, r: RawRequest) {
        if self.model.is_none() {
            self.model = r
                .request_inputs
                .as_ref()
                .and_then(|i| i.payload.as_deref())
                .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
                .and_then(|v| v["model"].as_str().map(str::to_owned));
        }
        let Some(sent) = r.timestamp else {
            self.empty += 1;
            return;
        };
        let times: Vec<f64> = r
            .response_timestamps
            .iter()
            .zip(&r.response_outputs)
            .filter(|(_, o)| o.has_text())
            .map(|(t, _)| (i128::from(*t) - i128::from(sent)) as f64 / 1e6)
            .collect();
        let (Some(&first), Some(&last)) = (times.first(), times.last()) else {
            self.empty += 1;
            return;
        };
        self.completed += 1;
        self.values[0].push(first);
        for w in times.windows(2) {
            crate::number::push_value(&mut self.values[1], w[1] - w[0]);
        }
        if times.len() > 1 {
            self.values[2].push((last - first) / (times.len() - 1) as f64);
        }
        self.values[3].push(last);
    }
}

//! LLMPerf (`token_benchmark_ray.py --results-dir`): `*_summary.json`, a flat object
//! whose `results_*` keys hold each metric's quantiles and mean in seconds, and
//! `*_individual_responses.json`, a list with one object per request (`ttft_s`,
//! `inter_token_latency_s`, `end_to_end_latency_s`, `error_code`, `error_msg`).
//!
//! LLMPerf's `inter_token_latency_s` is one figure per request (its decode time spread
//! over its output tokens): set beside TPOT, not the per-gap ITL, which it does not
//! write. The individual responses hold neither the model nor the load (they are in the
//! summary written beside). Sources: docs/import.md.

use std::fmt;
use std::io::Read;

use serde::Deserialize;
use serde::de::{MapAccess, SeqAccess, Visitor};

use super::serving::{FlatVisitor, ServingDoc};
use crate::number::lenient;
use crate::sniff::Shape;
use crate::{BenchRun, Figures, Load, Metric, Percentiles, Tool};

pub fn recognise(shape: &Shape) -> bool {
    if shape.list {
        shape.has("ttft_s") && shape.has("end_to_end_latency_s")
    } else {
        shape.keys.iter().any(|k| k.starts_with("results_ttft_s"))
    }
}

/// A summary (a flat object), or the list of individual responses.
enum Doc {
    Individual(Vec<Response>),
    // Boxed: the flat document is far larger than a Vec.
    Summary(Box<ServingDoc>),
}

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Doc;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LLMPerf's summary object or its list of responses")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Doc, A::Error> {
        FlatVisitor
            .visit_map(map)
            .map(|d| Doc::Summary(Box::new(d)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc, A::Error> {
        let mut rows = Vec::new();
        while let Some(r) = seq.next_element::<Response>()? {
            rows.push(r);
        }
        Ok(Doc::Individual(rows))
    }
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    error_code: Option<serde_json::Value>,
    #[serde(default)]
    error_msg: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    ttft_s: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    inter_token_latency_s: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    end_to_end_latency_s: Option<f64>,
}

impl Response {
    fn failed(&self) -> bool {
        let code = self.error_code.as_ref().is_some_and(|c| !c.is_null());
        code || self.error_msg.as_deref().is_some_and(|m| !m.is_empty())
    }
}

pub fn read<R: Read>(input: R) -> Result<Vec<BenchRun>, String> {
    super::documents::<Doc, R>(input)
        .map(|doc| {
            doc.map(|d| match d {
                Doc::Individual(rows) => individual(&rows),
                Doc::Summary(flat) => summary(&flat),
            })
        })
        .collect()
}

fn summary(doc: &ServingDoc) -> BenchRun {
    let mut run = BenchRun::new(Tool::Llmperf);
    run.model = doc.text(&["model"]).map(str::to_owned);
    run.tool_version = doc
        .text(&["version"])
        .map(|v| format!("results format {v}"));
    run.load = doc
        .number(&["num_concurrent_requests"])
        .filter(|c| c.is_finite() && *c > 0.0)
        .map_or(Load::Unknown, Load::Concurrency);
    let count = |keys: &[&str]| {
        doc.number(keys)
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map_or(0, |v| v as u64)
    };
    run.completed = count(&["results_num_completed_requests"]);
    run.failed = count(&["results_number_errors", "results_num_errors"]);
    for (metric, stem) in [
        (Metric::Ttft, "ttft_s"),
        (Metric::Tpot, "inter_token_latency_s"),
        (Metric::E2e, "end_to_end_latency_s"),
    ] {
        let at = |q: &str| {
            doc.number(&[&format!("results_{stem}_{q}")])
                .map(|s| s * 1000.0)
        };
        let p = Percentiles {
            mean: at("mean"),
            p50: at("quantiles_p50"),
            p90: at("quantiles_p90"),
            p95: at("quantiles_p95"),
            p99: at("quantiles_p99"),
        };
        run.set(metric, Figures::from_summary(p, None));
    }
    run
}

fn individual(rows: &[Response]) -> BenchRun {
    let mut run = BenchRun::new(Tool::Llmperf);
    run.notes.push(
        "individual responses carry neither model nor load (see the *_summary.json beside)".into(),
    );
    let mut values: [Vec<f64>; 3] = Default::default();
    for r in rows {
        if r.failed() {
            run.failed += 1;
            continue;
        }
        run.completed += 1;
        for (slot, v) in
            values
                .iter_mut()
                .zip([r.ttft_s, r.inter_token_latency_s, r.end_to_end_latency_s])
        {
            slot.extend(v.filter(|v| *v > 0.0).map(|v| v * 1000.0));
        }
    }
    let [ttft, tpot, e2e] = values;
    run.set(Metric::Ttft, Figures::from_values(ttft));
    run.set(Metric::Tpot, Figures::from_values(tpot));
    run.set(Metric::E2e, Figures::from_values(e2e));
    run
}

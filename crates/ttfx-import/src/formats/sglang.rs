//! SGLang's `python -m sglang.bench_serving --output-file`: one result per line (JSON
//! Lines), keys like vLLM's (its script began as a copy) with `e2e_latency` for vLLM's
//! `e2el`. Sources and versions: docs/import.md.

use std::io::Read;

use super::serving::ServingDoc;
use crate::sniff::Shape;
use crate::{BenchRun, Metric, Tool};

/// Keys only SGLang writes.
const OWN_KEYS: [&str; 10] = [
    "sharegpt_output_len",
    "random_range_ratio",
    "server_info",
    "accept_length",
    "total_output_tokens_retokenized",
    "total_output_retokenized",
    "mean_e2e_latency_ms",
    "median_e2e_latency_ms",
    "mean_e2e_latency",
    "median_e2e_latency",
];

pub fn recognise(shape: &Shape) -> bool {
    !shape.list && shape.has_any(&OWN_KEYS) && !shape.has_any(&["model_id", "tokenizer_id"])
}

pub fn read<R: Read>(input: R) -> Result<Vec<BenchRun>, String> {
    super::serving::read(input, run)
}

fn run(mut doc: ServingDoc) -> BenchRun {
    let mut run = BenchRun::new(Tool::Sglang);
    let served = doc
        .server_info
        .as_ref()
        .and_then(|i| i.served_model_name.clone().or_else(|| i.model_path.clone()));
    run.model = served.or_else(|| {
        doc.text(&["model_id", "model", "tokenizer_id", "tokenizer"])
            .map(str::to_owned)
    });
    run.tool_version = doc.server_info.as_ref().and_then(|i| i.version.clone());
    run.load = doc.load();
    (run.completed, run.failed) = doc.counts();
    if doc.failed.is_none() {
        run.notes.push(
            "SGLang states no failed count without --output-details: failed requests unknown"
                .into(),
        );
    }
    for (metric, stems) in [
        (Metric::Ttft, &["ttft"][..]),
        (Metric::Itl, &["itl"][..]),
        (Metric::Tpot, &["tpot"][..]),
        (Metric::E2e, &["e2e_latency", "e2el"][..]),
    ] {
        run.set(metric, doc.summary(stems));
    }
    doc.per_request(&mut run);
    run
}

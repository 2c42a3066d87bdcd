//! vLLM's serving benchmark: `benchmarks/benchmark_serving.py --save-result` (older
//! releases) and `vllm bench serve --save-result` (`vllm/benchmarks/serve.py`), with
//! `--save-detailed` for the per-request lists, `--append-result` (one result per line,
//! whatever the file is named), and the per-run result files of `vllm bench sweep`.
//! Sources and versions: docs/import.md.

use std::io::Read;

use super::serving::ServingDoc;
use crate::sniff::Shape;
use crate::{BenchRun, Metric, Tool};

/// Keys only vLLM writes.
const OWN_KEYS: [&str; 2] = ["model_id", "tokenizer_id"];
/// Summary keys vLLM and SGLang share: with the whole document read and no key of
/// SGLang's own, the file is vLLM's.
const SHARED_KEYS: [&str; 4] = ["median_ttft_ms", "mean_ttft_ms", "median_itl_ms", "ttfts"];

/// A result object, or a list of them (a sweep's `summary.json`: its first element's
/// keys stand for the list's).
pub fn recognise(shape: &Shape, whole: bool) -> bool {
    shape.has_any(&OWN_KEYS) || (whole && shape.has_any(&SHARED_KEYS) && shape.has("completed"))
}

pub fn read<R: Read>(input: R) -> Result<Vec<BenchRun>, String> {
    super::serving::read(input, run)
}

fn run(mut doc: ServingDoc) -> BenchRun {
    let mut run = BenchRun::new(Tool::Vllm);
    run.model = doc.text(&["model_id", "tokenizer_id"]).map(str::to_owned);
    // vLLM writes no version of its own.
    run.load = doc.load();
    (run.completed, run.failed) = doc.counts();
    for (metric, stems) in [
        (Metric::Ttft, &["ttft"][..]),
        (Metric::Itl, &["itl"][..]),
        (Metric::Tpot, &["tpot"][..]),
        (Metric::E2e, &["e2el"][..]),
    ] {
        run.set(metric, doc.summary(stems));
    }
    doc.per_request(&mut run);
    run
}

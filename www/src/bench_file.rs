//! A benchmark result file (vLLM, SGLang, … or a ttfx report) dropped on the lab page or
//! chosen with its picker, read in the browser by ttfx-import (the reader `ttfx import`
//! and the collector use, compiled to wasm) and shown beside the lab's runs: the tool,
//! model, load and counts of each run in it, and the p50/p90/p99 of its TTFT, ITL, TPOT
//! and E2E next to the lab runs' own first token, first visible token, inter-chunk gap,
//! TPOT and end to end. No collector is needed. A file the reader refuses is shown as
//! the reader's message (it names the file and the problem), never a panic; every string
//! from the file is a text node.

use leptos::prelude::*;
use leptos::task::spawn_local;
use ttfx_core::report::BatchReport;
use ttfx_import::{BenchRun, Imported, Metric};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{DragEvent, File, HtmlInputElement};

use crate::fmt::opt;
use crate::lab;

/// The percentiles shown, as the collector's gap shows them.
pub const PERCENTILES: [u8; 3] = [50, 90, 99];

/// The lab's own metrics set beside each benchmark metric (docs/lab.md): what a user of
/// the lab page waited for where the benchmark's client timed the model.
pub const BESIDE: [(Metric, &[(&str, &str)]); 4] = [
    (
        Metric::Ttft,
        &[
            ("ttft_ms", "first token"),
            ("ttft_visible_ms", "first visible token"),
        ],
    ),
    (Metric::Itl, &[("icl_ms", "gap between chunks")]),
    (Metric::Tpot, &[("tpot_ms", "time per output token")]),
    (Metric::E2e, &[("e2e_ms", "end to end")]),
];

/// One table row: who measured it, what, how many values, p50/p90/p99.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `bench` or `lab`.
    pub source: &'static str,
    /// The benchmark's metric name (`ttft_ms`) or the lab's (`ttft_visible_ms`).
    pub metric: String,
    pub title: String,
    pub count: Option<u64>,
    pub at: [Option<f64>; 3],
}

/// A benchmark run's rows, each benchmark metric followed by the lab's beside it.
pub fn rows(run: &BenchRun, batch: &BatchReport) -> Vec<Row> {
    let mut out = Vec::new();
    for (metric, lab_metrics) in BESIDE {
        let figures = run.metric(metric);
        out.push(Row {
            source: "bench",
            metric: metric.name().to_owned(),
            title: format!("benchmark {}", metric.title()),
            count: figures.and_then(|f| f.count),
            at: PERCENTILES.map(|p| figures.and_then(|f| f.percentile(f64::from(p)))),
        });
        for (name, title) in lab_metrics {
            let s = batch.statistics.get(*name);
            out.push(Row {
                source: "lab",
                metric: (*name).to_owned(),
                title: format!("lab {title}"),
                count: s.map(|s| s.count),
                at: [s.map(|s| s.p50), s.map(|s| s.p90), s.map(|s| s.p99)],
            });
        }
    }
    out
}

/// `vllm 0.9.1 · model m · concurrency 2 · 3 completed, 0 failed`.
pub fn describe(run: &BenchRun) -> String {
    let tool = match &run.tool_version {
        Some(v) => format!("{} {v}", run.tool.name()),
        None => run.tool.name().to_owned(),
    };
    let model = run.model.as_deref().unwrap_or("(model not stated)");
    format!(
        "{tool} · model {model} · {} · {} completed, {} failed",
        run.load.describe(),
        run.completed,
        run.failed
    )
}

/// Reads a file's bytes with the reader; its error is the message shown.
pub fn read(name: &str, bytes: &[u8]) -> Result<Imported, String> {
    ttfx_import::read_bytes(name, bytes, None).map_err(|e| e.to_string())
}

/// A picked or dropped file, read whole and then by the reader, into `shown`.
fn open(file: File, shown: RwSignal<Option<Result<Imported, String>>>) {
    let name = file.name();
    spawn_local(async move {
        let read_result = match JsFuture::from(file.array_buffer()).await {
            Ok(buffer) => read(&name, &js_sys::Uint8Array::new(&buffer).to_vec()),
            Err(_) => Err(format!("{name}: cannot be read")),
        };
        shown.set(Some(read_result));
    });
}

/// The picker and drop zone, and what the file holds beside the lab's runs.
#[component]
pub fn BenchFile() -> impl IntoView {
    let shown = RwSignal::new(None::<Result<Imported, String>>);
    let picked = move |ev: leptos::ev::Event| {
        let file = ev
            .target()
            .and_then(|t| t.dyn_into::<HtmlInputElement>().ok())
            .and_then(|input| input.files())
            .and_then(|files| files.get(0));
        if let Some(file) = file {
            open(file, shown);
        }
    };
    // A drop is only delivered where dragover was cancelled.
    let over = |ev: DragEvent| ev.prevent_default();
    let dropped = move |ev: DragEvent| {
        ev.prevent_default();
        let file = ev
            .data_transfer()
            .and_then(|d| d.files())
            .and_then(|files| files.get(0));
        if let Some(file) = file {
            open(file, shown);
        }
    };
    view! {
        <div class="bench-file" id="bench-drop" on:dragover=over on:drop=dropped>
            <label>"a benchmark's results (vLLM, SGLang, ttfx report …): drop the file here or "
                <input id="bench-file" type="file" accept=".json,.jsonl,application/json" on:change=picked/>
            </label>
            {move || shown.get().map(|read| match read {
                Ok(file) => view! { <BenchRuns file/> }.into_any(),
                Err(e) => view! { <p class="error" id="bench-file-error">{e}</p> }.into_any(),
            })}
        </div>
    }
}

/// Each run of the file with its table.
#[component]
fn BenchRuns(file: Imported) -> impl IntoView {
    let lab = lab();
    let name = file.file_name.clone();
    let runs = file
        .runs
        .into_iter()
        .enumerate()
        .map(|(i, run)| {
            let about = describe(&run);
            let table = move || view! { <BenchTable run=run.clone() batch=lab.batch.get()/> };
            view! {
                <div class="bench-run" data-run=i>
                    <p class="legend bench-about">{about}</p>
                    {table}
                </div>
            }
        })
        .collect_view();
    view! {
        <div id="bench-file-runs">
            <p class="ok" id="bench-file-name">{format!("{name}: beside the lab's runs (ms)")}</p>
            {runs}
        </div>
    }
}

#[component]
fn BenchTable(run: BenchRun, batch: BatchReport) -> impl IntoView {
    let rows = rows(&run, &batch)
        .into_iter()
        .map(|r| {
            let count = r.count.map_or_else(|| "–".to_owned(), |c| c.to_string());
            let cells =
                r.at.iter()
                    .map(|v| view! { <td class="num">{opt(*v)}</td> })
                    .collect_view();
            view! {
                <tr class=r.source data-source=r.source data-metric=r.metric.clone()>
                    <td>{r.title}</td><td class="num">{count}</td>{cells}
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="bench-table">
            <thead><tr><th>"who · what"</th><th>"n"</th><th>"p50"</th><th>"p90"</th><th>"p99"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const VLLM: &str = r#"{"model_id":"m","max_concurrency":2,"completed":3,
        "ttfts":[0.1,0.2,0.3],"itls":[[0.01],[0.02],[]],"median_ttft_ms":200,"p99_e2el_ms":900}"#;

    #[test]
    fn a_vllm_file_reads_into_rows_beside_the_lab() {
        let file = read("bench.json", VLLM.as_bytes()).unwrap();
        let run = &file.runs[0];
        assert_eq!(
            describe(run),
            "vllm · model m · concurrency 2 · 3 completed, 0 failed"
        );
        let rows = rows(run, &BatchReport::from_runs(Vec::new(), &[]));
        let ttft = &rows[0];
        assert_eq!((ttft.source, ttft.metric.as_str()), ("bench", "ttft_ms"));
        assert_eq!(ttft.at, [Some(200.0), Some(280.0), Some(298.0)]);
        assert_eq!(rows[1].metric, "ttft_ms");
        assert_eq!((rows[1].source, rows[1].at), ("lab", [None, None, None]));
        let e2e = rows
            .iter()
            .find(|r| r.metric == "e2e_ms" && r.source == "bench")
            .unwrap();
        assert_eq!(e2e.at, [None, None, Some(900.0)]);
    }

    #[test]
    fn a_bad_file_is_the_readers_message() {
        let e = read("notes.txt", b"hello").unwrap_err();
        assert!(e.starts_with("notes.txt: not JSON"), "{e}");
        let e = read("other.json", br#"{"a": 1}"#).unwrap_err();
        assert!(e.starts_with("other.json: not a benchmark file"), "{e}");
    }
}

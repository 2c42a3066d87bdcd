//! ttfx's own run and batch reports (`ttfx run --json`, `ttfx run --repeat N --json`).
//! Read by ttfx-core's report reader, which checks the schema version and every run's
//! timeline; a report is ttfx's own output, so it is read whole (bounded by
//! [`MAX_REPORT_BYTES`]), unlike the other tools' files.

use std::io::Read;

use ttfx_core::metrics::Outcome;
use ttfx_core::report::ReportFile;

use crate::sniff::Shape;
use crate::{BenchRun, Figures, Load, Metric, Tool};

/// Largest ttfx report read: a batch of 10,000 full runs is about 300 MB.
const MAX_REPORT_BYTES: u64 = 512 * 1024 * 1024;

pub fn recognise(shape: &Shape) -> bool {
    let generator = shape
        .text("generator")
        .is_some_and(|g| g.starts_with("ttfx"));
    let kind = matches!(shape.text("kind"), Some("run" | "batch"));
    generator && kind && shape.has("schema_version")
}

pub fn read<R: Read>(input: R) -> Result<Vec<BenchRun>, String> {
    let mut text = String::new();
    let read = input
        .take(MAX_REPORT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if read as u64 > MAX_REPORT_BYTES {
        return Err(format!("a report over {MAX_REPORT_BYTES} bytes"));
    }
    let file = ReportFile::from_json(&text).map_err(|e| e.to_string())?;
    let generator = match &file {
        ReportFile::Run(r) => r.generator.clone(),
        ReportFile::Batch(b) => b.generator.clone(),
    };
    let runs = file.into_runs();
    let mut bench = BenchRun::new(Tool::Ttfx);
    bench.tool_version = generator.split_whitespace().nth(1).map(str::to_owned);
    // A report does not record the concurrency it ran at.
    bench.load = Load::Unknown;
    let mut values: [Vec<f64>; 4] = Default::default();
    for run in &runs {
        if run.metrics.outcome != Outcome::Completed {
            bench.failed += 1;
            continue;
        }
        bench.completed += 1;
        let m = &run.metrics;
        let one = |v: Option<ttfx_core::metrics::Measured>| v.map(|v| v.value);
        values[0].extend(one(m.ttft_ms));
        values[1].extend(m.icl_ms.iter().copied());
        values[2].extend(one(m.tpot_ms));
        values[3].extend(one(m.e2e_ms));
    }
    for (metric, values) in Metric::ALL.into_iter().zip(values) {
        bench.set(metric, Figures::from_values(values));
    }
    if runs.iter().any(|r| r.timeline.chunk_summary.is_some()) {
        bench.notes.push(
            "some runs kept a summary of their chunks: their ITL values are the kept chunks' only"
                .into(),
        );
    }
    Ok(vec![bench])
}

//! The gap: a benchmark's figures beside what the field's users waited for, metric by
//! metric, at p50/p90/p99, with the difference (field − benchmark) and the ratio (field
//! / benchmark). Which field metric stands beside which benchmark metric, and why, is
//! docs/import.md's table.

use rusqlite::Connection;
use serde_json::json;
use ttfx_import::Metric as BenchMetric;

use crate::bench_store::StoredBench;
use crate::query::{self, Fail, Metric, Slice};

/// A benchmark metric and a field metric set beside it.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    pub bench: BenchMetric,
    /// The field metric's name (`query::Metric::parse`).
    pub field: &'static str,
    /// What the user waits for, as the sentence says it.
    pub waits_for: &'static str,
}

/// Every pair, in the order the table shows them.
pub const PAIRS: [Pair; 6] = [
    Pair {
        bench: BenchMetric::Ttft,
        field: "first_byte_ms",
        waits_for: "the first byte",
    },
    Pair {
        bench: BenchMetric::Ttft,
        field: "ttft_visible_ms",
        waits_for: "the first visible token",
    },
    Pair {
        bench: BenchMetric::Ttft,
        field: "first_paint_ms",
        waits_for: "the first painted token",
    },
    Pair {
        bench: BenchMetric::Itl,
        field: "chunk_gap_ms",
        waits_for: "each chunk",
    },
    Pair {
        bench: BenchMetric::Tpot,
        field: "tpot_ms",
        waits_for: "each token",
    },
    Pair {
        bench: BenchMetric::E2e,
        field: "e2e_ms",
        waits_for: "the whole answer",
    },
];

/// The percentiles the gap shows.
pub const PERCENTILES: [u8; 3] = [50, 90, 99];

/// The pairs a `metric` filter keeps: a benchmark metric (`ttft_ms`, `ttft`) keeps its
/// rows, a field metric (`ttft_visible_ms`) the rows it stands in.
pub fn pairs_for(metric: Option<&str>) -> Result<Vec<Pair>, Fail> {
    let Some(name) = metric else {
        return Ok(PAIRS.to_vec());
    };
    let kept: Vec<Pair> = PAIRS
        .iter()
        .copied()
        .filter(|p| p.field == name || BenchMetric::parse(name) == Some(p.bench))
        .collect();
    if kept.is_empty() {
        let mut choices: Vec<&str> = BenchMetric::ALL.iter().map(|m| m.name()).collect();
        choices.extend(PAIRS.iter().map(|p| p.field));
        return Err(Fail::Input(format!(
            "metric `{name}` has no benchmark beside it (choices: {})",
            choices.join(", ")
        )));
    }
    Ok(kept)
}

/// The gap document (`GET /field/gap`, `ttfx field --bench --json`).
pub fn gap(conn: &Connection, bench: &StoredBench, pairs: &[Pair], slice: &Slice) -> query::Answer {
    let mut rows = Vec::new();
    for pair in pairs {
        let field_metric = Metric::parse(pair.field)?;
        let samples: Vec<query::Sample> = query::samples(conn, field_metric, None, slice, false)?
            .into_iter()
            .flat_map(|g| g.1)
            .collect();
        let weighted = query::weighted(samples);
        let figures = bench.run.metric(pair.bench);
        let at: Vec<serde_json::Value> = PERCENTILES
            .iter()
            .map(|&p| {
                let b = figures.and_then(|f| f.percentile(f64::from(p)));
                let f = weighted.percentile(f64::from(p));
                let diff = b.zip(f).map(|(b, f)| f - b);
                let ratio = b.zip(f).filter(|(b, _)| *b > 0.0).map(|(b, f)| f / b);
                json!({ "p": p, "bench": b, "field": f, "diff_ms": diff, "ratio": ratio })
            })
            .collect();
        rows.push(json!({
            "bench_metric": pair.bench.name(),
            "bench_title": pair.bench.title(),
            "origin": figures.map(|f| f.origin),
            "field_metric": pair.field,
            "waits_for": pair.waits_for,
            "field_count": weighted.count(),
            "field_weighted_count": weighted.total_weight(),
            "percentiles": at,
        }));
    }
    let mut doc = slice.echo();
    doc.insert("benchmark".into(), bench.to_json());
    doc.insert("runs".into(), json!(query::runs_in(conn, slice)?));
    doc.insert("sentence".into(), json!(sentence(&rows)));
    doc.insert("rows".into(), json!(rows));
    Ok(serde_json::Value::Object(doc))
}

/// The opening sentence: the benchmark's p50 TTFT beside the users' p50 wait for the
/// first visible token (else first paint, else first byte).
pub fn sentence(rows: &[serde_json::Value]) -> String {
    let p50 = |row: &serde_json::Value, key: &str| row["percentiles"][0][key].as_f64();
    let ttft_rows: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["bench_metric"] == "ttft_ms")
        .collect();
    let bench = ttft_rows.iter().find_map(|r| p50(r, "bench"));
    let Some(bench) = bench else {
        return "the benchmark states no TTFT to set beside the field".into();
    };
    let order = ["ttft_visible_ms", "first_paint_ms", "first_byte_ms"];
    let found = order.iter().find_map(|name| {
        let row = ttft_rows.iter().find(|r| r["field_metric"] == *name)?;
        Some((p50(row, "field")?, row["waits_for"].as_str()?))
    });
    match found {
        Some((field, waits_for)) => {
            let diff = field - bench;
            let ratio = if bench > 0.0 {
                format!(", {:.1}x", field / bench)
            } else {
                String::new()
            };
            format!(
                "the benchmark says p50 TTFT {} ms; your users wait {} ms for {waits_for} ({}{} ms{ratio})",
                ms(bench),
                ms(field),
                if diff >= 0.0 { "+" } else { "−" },
                ms(diff.abs())
            )
        }
        None => format!(
            "the benchmark says p50 TTFT {} ms; no field run has a first byte, visible token or paint to set beside it yet",
            ms(bench)
        ),
    }
}

/// Whole ms from 10 ms up, one decimal below.
pub fn ms(v: f64) -> String {
    if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

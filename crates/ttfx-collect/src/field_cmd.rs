//! `ttfx field FILE.db`: percentiles of the runs a collector stored, per metric and
//! group, as a table or as the JSON document `GET /field/summary` answers.

use std::fmt::Write as _;
use std::time::SystemTime;

use comfy_table::{CellAlignment, Table, presets};

use crate::FieldArgs;
use crate::db::{self, DbError};
use crate::query::{self, Fail, Metric, Slice};
use crate::{bench_store, gap};
use ttfx_core::printable::{escape_controls, escape_json_controls};
use ttfx_edge::clock::unix_ms;

/// Why `ttfx field` printed nothing. The database's and the query's texts are printed
/// as they are: they already name the file or the option.
#[derive(Debug, thiserror::Error)]
pub enum FieldError {
    #[error(transparent)]
    Db(DbError),
    #[error("--where `{0}`: expected DIM=VALUE")]
    NotAFilter(String),
    #[error(transparent)]
    Query(Fail),
    #[error("cannot write the summary: {0}")]
    Write(serde_json::Error),
    #[error(transparent)]
    Otlp(ttfx_otlp::ConfigError),
    #[error("--export-otlp: no endpoint")]
    NoEndpoint,
    #[error(transparent)]
    Backfill(crate::export::BackfillError),
    #[error("--export-otlp: cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

pub fn run(args: FieldArgs) -> Result<(), FieldError> {
    let conn = db::open_read_only(&args.file).map_err(FieldError::Db)?;
    if args.health {
        return health(&conn, &args);
    }
    if args.export_otlp.is_some() {
        return export(&conn, &args);
    }
    let filters = args
        .filters
        .iter()
        .map(|f| {
            f.split_once('=')
                .map(|(d, v)| (d.trim().to_owned(), v.to_owned()))
                .ok_or_else(|| FieldError::NotAFilter(f.clone()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let now = unix_ms(SystemTime::now());
    let slice = Slice::new(args.since.as_deref(), &filters, now).map_err(FieldError::Query)?;
    let metric = args
        .metric
        .as_deref()
        .map(Metric::parse)
        .transpose()
        .map_err(FieldError::Query)?;
    let by = args
        .by
        .as_deref()
        .map(query::dimension)
        .transpose()
        .map_err(FieldError::Query)?;
    if let Some(which) = args.bench.as_deref() {
        let pairs = gap::pairs_for(args.metric.as_deref()).map_err(FieldError::Query)?;
        let doc = query::on_one_snapshot(&conn, |c| {
            let bench = bench_store::select(c, which)?;
            gap::gap(c, &bench, &pairs, &slice)
        })
        .map_err(FieldError::Query)?;
        if args.json {
            let text = serde_json::to_string_pretty(&doc).map_err(FieldError::Write)?;
            println!("{}", escape_json_controls(&text));
        } else {
            // Labels, models and targets come from pages and benchmark files.
            let table = gap_table(&doc, &args.file.display().to_string());
            print!("{}", escape_controls(&table));
        }
        return Ok(());
    }
    // Every metric reads two indexes: a second connection reads the other at once.
    let helper = metric
        .is_none()
        .then(|| {
            db::open_read_only(&args.file)
                .ok()
                .map(std::sync::Mutex::new)
        })
        .flatten();
    let doc = query::on_one_snapshot(&conn, |c| {
        query::summary_with(c, helper.as_ref(), metric, by, &slice)
    })
    .map_err(FieldError::Query)?;
    if args.json {
        let text = serde_json::to_string_pretty(&doc).map_err(FieldError::Write)?;
        println!("{}", escape_json_controls(&text));
    } else {
        // Group values (labels, targets, page paths) come from the pages that posted.
        print!(
            "{}",
            escape_controls(&table(&doc, &args.file.display().to_string()))
        );
    }
    Ok(())
}

/// `--health`: the store's counts and the OTLP export's state, from the file (the
/// serving process's in-memory counts, such as posts refused full, are
/// GET /field/health's).
fn health(conn: &rusqlite::Connection, args: &FieldArgs) -> Result<(), FieldError> {
    let doc = query::on_one_snapshot(conn, |c| {
        let runs: i64 = c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))?;
        let bytes = db::file_bytes(c).map_err(|e| Fail::Db(e.to_string()))?;
        Ok(serde_json::json!({
            "runs": runs,
            "file_bytes": bytes,
            "otlp": crate::outbox::health(c)?,
        }))
    })
    .map_err(FieldError::Query)?;
    if args.json {
        let text = serde_json::to_string_pretty(&doc).map_err(FieldError::Write)?;
        println!("{}", escape_json_controls(&text));
        return Ok(());
    }
    let o = &doc["otlp"];
    let mut out = format!(
        "ttfx field: {} run(s) in {}, {} bytes\nOTLP export: {} exported, {} pending, {} \
         dropped (backlog full), {} refused, {} rejected by the receiver\n",
        doc["runs"],
        args.file.display(),
        doc["file_bytes"],
        o["exported"],
        o["pending"],
        o["dropped"],
        o["refused"],
        o["rejected"],
    );
    if let Some(e) = o["last_error"].as_str() {
        let _ = writeln!(out, "last error: {e}");
    }
    // The error's text came from a receiver.
    print!("{}", escape_controls(&out));
    Ok(())
}

/// `--export-otlp URL`: every stored run (or --since) to the endpoint, in batches.
fn export(conn: &rusqlite::Connection, args: &FieldArgs) -> Result<(), FieldError> {
    let flags = ttfx_otlp::Flags {
        endpoint: args.export_otlp.clone(),
        headers: args.otlp_header.iter().map(|s| s.0.clone()).collect(),
        protocol: args.otlp_protocol.clone(),
        service_name: args.otlp_service_name.clone(),
    };
    let config = ttfx_otlp::Config::resolve(&flags, &|k| std::env::var(k).ok())
        .map_err(|e| FieldError::Otlp(rename_flag(e)))?
        .ok_or(FieldError::NoEndpoint)?;
    let since = args
        .since
        .as_deref()
        .map(|s| query::duration_ms(s).map(|ms| unix_ms(SystemTime::now()) - ms))
        .transpose()
        .map_err(FieldError::Query)?;
    let exporter = ttfx_otlp::Exporter::new(config).map_err(FieldError::Otlp)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(FieldError::Runtime)?;
    let done = runtime
        .block_on(crate::export::backfill(conn, &exporter, since, &mut |_| {}))
        .map_err(FieldError::Backfill)?;
    let mut line = format!(
        "ttfx field: exported {} run(s) to {}",
        done.exported,
        ttfx_otlp::config::redact(&exporter.config().metrics.url).trim_end_matches("v1/metrics")
    );
    if done.rejected > 0 {
        let _ = write!(line, "; the receiver rejected {} item(s)", done.rejected);
    }
    if done.unreadable > 0 {
        let _ = write!(
            line,
            "; {} stored run(s) could not be read",
            done.unreadable
        );
    }
    println!("{line}");
    Ok(())
}

/// This command's flag is --export-otlp, not serve's --otlp-endpoint.
fn rename_flag(e: ttfx_otlp::ConfigError) -> ttfx_otlp::ConfigError {
    match e {
        ttfx_otlp::ConfigError::Endpoint { value, .. } => ttfx_otlp::ConfigError::Endpoint {
            from: "--export-otlp",
            value,
        },
        other => other,
    }
}

/// The slice an answer repeats (`since`, `where`) as ` (since 24h, where label=a)`, or
/// nothing.
fn scope_text(doc: &serde_json::Value) -> String {
    let mut scope = Vec::new();
    if let Some(since) = doc["since"].as_str() {
        scope.push(format!("since {since}"));
    }
    if let Some(filters) = doc["where"].as_object() {
        for (k, v) in filters {
            scope.push(format!("where {k}={}", key_text(v)));
        }
    }
    if scope.is_empty() {
        String::new()
    } else {
        format!(" ({})", scope.join(", "))
    }
}

/// The summary document as a heading and one row per metric and group.
fn table(doc: &serde_json::Value, file: &str) -> String {
    let mut out = String::new();
    let scope = scope_text(doc);
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "ttfx field: {} run(s) in {file}{scope}; percentiles weighted by 1/sample_rate",
        doc["runs"]
    );
    let by = doc["by"].as_str();
    let mut header: Vec<&str> = by.into_iter().collect();
    header.extend([
        "metric", "count", "weighted", "p50", "p75", "p90", "p95", "p99",
    ]);
    let mut grid = Table::new();
    grid.load_style(presets::NOTHING).set_header(header);
    let empty = Vec::new();
    for m in doc["metrics"].as_array().unwrap_or(&empty) {
        for g in m["groups"].as_array().unwrap_or(&empty) {
            let mut row: Vec<String> = Vec::new();
            if by.is_some() {
                row.push(key_text(&g["key"]));
            }
            row.push(m["metric"].as_str().unwrap_or_default().to_owned());
            row.push(g["count"].to_string());
            let number = |k: &str, places: usize| {
                g[k].as_f64()
                    .map_or("-".to_owned(), |v| format!("{v:.places$}"))
            };
            row.push(number("weighted_count", 1));
            for p in ["p50", "p75", "p90", "p95", "p99"] {
                row.push(number(p, 2));
            }
            grid.add_row(row);
        }
        let left_off = m["groups_left_off"].as_u64().unwrap_or(0);
        if left_off > 0 {
            let _ = writeln!(
                out,
                "note: {}: {left_off} smaller group(s) not shown",
                m["metric"]
            );
        }
    }
    let first_number = usize::from(by.is_some()) + 1;
    for (i, column) in grid.column_iter_mut().enumerate() {
        let align = if i > first_number - 1 {
            CellAlignment::Right
        } else {
            CellAlignment::Left
        };
        column.set_padding((0, 2)).set_cell_alignment(align);
    }
    let mut text = grid.trim_fmt();
    text.push('\n');
    text.insert_str(0, &out);
    text
}

/// A group's key as the table shows it: the value, or `(none)` for an absent one.
fn key_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "(none)".to_owned(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The gap document as its sentence, what was compared, and one row per pair: each
/// percentile as `benchmark → field (difference, ratio)`.
fn gap_table(doc: &serde_json::Value, file: &str) -> String {
    let mut out = String::new();
    let b = &doc["benchmark"];
    let _ = writeln!(
        out,
        "{}
",
        doc["sentence"].as_str().unwrap_or_default()
    );
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let _ = writeln!(
        out,
        "benchmark {} (id {}): {}{}, model {}, {}; {} completed, {} failed",
        b["name"].as_str().unwrap_or_default(),
        b["id"],
        b["tool"].as_str().unwrap_or_default(),
        text(&b["tool_version"])
            .map(|v| format!(" {v}"))
            .unwrap_or_default(),
        text(&b["model"]).unwrap_or_else(|| "not stated".into()),
        b["load_text"].as_str().unwrap_or_default(),
        b["completed"],
        b["failed"],
    );
    let _ = writeln!(
        out,
        "field {file}: {} runs{}\n",
        doc["runs"],
        scope_text(doc)
    );
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    let mut header = vec![
        "benchmark".to_owned(),
        "beside the users'".to_owned(),
        "runs".to_owned(),
    ];
    header.extend(
        gap::PERCENTILES
            .iter()
            .map(|p| format!("p{p}: bench → field ms")),
    );
    table.set_header(header);
    for row in doc["rows"].as_array().into_iter().flatten() {
        let origin = match row["origin"].as_str() {
            Some("summary") => " (summary)",
            _ => "",
        };
        let mut cells = vec![
            format!(
                "{}{origin}",
                row["bench_title"].as_str().unwrap_or_default()
            ),
            row["field_metric"].as_str().unwrap_or_default().to_owned(),
            row["field_count"].to_string(),
        ];
        for p in row["percentiles"].as_array().into_iter().flatten() {
            cells.push(compare(p));
        }
        table.add_row(cells);
    }
    for i in 2..3 + gap::PERCENTILES.len() {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(out, "{table}");
    out
}

/// `142 → 611 (+469, 4.3x)`; a side without a value is `-`.
fn compare(p: &serde_json::Value) -> String {
    let side = |k: &str| p[k].as_f64().map_or("-".to_owned(), gap::ms);
    match (p["diff_ms"].as_f64(), p["ratio"].as_f64()) {
        (Some(d), ratio) => format!(
            "{} → {} ({}{}{})",
            side("bench"),
            side("field"),
            if d >= 0.0 { "+" } else { "−" },
            gap::ms(d.abs()),
            ratio.map_or(String::new(), |r| format!(", {r:.1}x"))
        ),
        (None, _) => format!("{} → {}", side("bench"), side("field")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_each_group_with_its_weighted_count() {
        let doc = serde_json::json!({
            "since": "24h", "since_unix_ms": 0.0, "where": {"engine": "chromium"},
            "by": "label", "runs": 3,
            "metrics": [{"metric": "ttft_ms", "groups_left_off": 0, "groups": [
                {"key": "prod", "count": 2, "weighted_count": 6.0, "mean": 1.0, "min": 1.0,
                 "max": 1.0, "p50": 100.0, "p75": 125.0, "p90": 140.0, "p95": 145.0, "p99": 149.0},
                {"key": null, "count": 1, "weighted_count": 1.0, "mean": 1.0, "min": 1.0,
                 "max": 1.0, "p50": 7.5, "p75": 7.5, "p90": 7.5, "p95": 7.5, "p99": 7.5}
            ]}]
        });
        let text = table(&doc, "f.db");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "ttfx field: 3 run(s) in f.db (since 24h, where engine=chromium); percentiles \
             weighted by 1/sample_rate"
        );
        assert!(lines[1].starts_with("label   metric"), "{text}");
        assert!(lines[2].starts_with("prod    ttft_ms"), "{text}");
        assert!(
            lines[2].contains("6.0") && lines[2].ends_with("149.00"),
            "{text}"
        );
        assert!(lines[3].starts_with("(none)  ttft_ms"), "{text}");
    }
}

//! `ttfx import FILE...`: read benchmark result files, print what each says, and with
//! `--into` store them beside the field. Every file is read before anything is stored:
//! one unknown or damaged file exits 2 and nothing is stored.

use std::fmt::Write as _;
use std::time::SystemTime;

use comfy_table::{CellAlignment, Table, presets};
use ttfx_edge::clock::unix_ms;
use ttfx_import::{Imported, Metric, Origin, Tool};

use crate::ImportArgs;
use crate::bench_store::{self, Stored};
use crate::db::{self, DbError};
use ttfx_core::printable::{escape_controls, escape_json_controls};

/// Why `ttfx import` stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportCmdError {
    #[error("--format `{0}`: expected one of {1}")]
    Format(String, String),
    /// Every file that could not be read, one per line.
    #[error("{}", .0.join("\n"))]
    Files(Vec<String>),
    #[error("--label: at most 128 bytes")]
    Label,
    #[error("--into {0}")]
    Db(DbError),
    #[error("cannot write the JSON: {0}")]
    Write(serde_json::Error),
}

pub fn run(args: ImportArgs) -> Result<(), ImportCmdError> {
    let format = args
        .format
        .as_deref()
        .map(|f| {
            Tool::parse(f).ok_or_else(|| {
                let names: Vec<&str> = Tool::ALL.iter().map(|t| t.name()).collect();
                ImportCmdError::Format(f.to_owned(), names.join(", "))
            })
        })
        .transpose()?;
    if args.label.as_ref().is_some_and(|l| l.len() > 128) {
        return Err(ImportCmdError::Label);
    }
    let mut read = Vec::new();
    let mut failures = Vec::new();
    for path in &args.files {
        match ttfx_import::read_path(path, format) {
            Ok(file) => read.push(file),
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !failures.is_empty() {
        return Err(ImportCmdError::Files(failures));
    }
    let stored = match &args.into {
        Some(path) => {
            let mut conn = db::open(path, true).map_err(ImportCmdError::Db)?;
            let now = unix_ms(SystemTime::now());
            read.iter()
                .map(|f| bench_store::store(&mut conn, f, args.label.as_deref(), now))
                .collect::<Result<Vec<_>, _>>()
                .map_err(ImportCmdError::Db)?
                .into_iter()
                .map(Some)
                .collect()
        }
        None => vec![None; read.len()],
    };
    if args.json {
        let docs: Vec<serde_json::Value> = read
            .iter()
            .zip(&stored)
            .map(|(f, s)| serde_json::json!({ "file": f, "stored": s }))
            .collect();
        let text = serde_json::to_string_pretty(&docs).map_err(ImportCmdError::Write)?;
        println!("{}", escape_json_controls(&text));
    } else {
        // Models, versions and labels come from the files.
        for (file, stored) in read.iter().zip(&stored) {
            let text = describe(file, stored.as_ref(), args.into.is_some());
            print!("{}", escape_controls(&text));
        }
    }
    Ok(())
}

/// One file: its tool, each run's load, counts and metrics, and where it was stored.
pub fn describe(file: &Imported, stored: Option<&Stored>, into: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} ({} run{}, {} bytes, sha256 {})",
        file.file_name,
        file.tool.name(),
        file.runs.len(),
        if file.runs.len() == 1 { "" } else { "s" },
        file.bytes,
        &file.sha256[..16.min(file.sha256.len())]
    );
    for (i, run) in file.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "\nrun {}: {}{}, model {}, {}; {} completed, {} failed",
            i + 1,
            run.tool.name(),
            run.tool_version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default(),
            run.model.as_deref().unwrap_or("not stated"),
            run.load.describe(),
            run.completed,
            run.failed
        );
        let mut table = Table::new();
        table.load_style(presets::NOTHING);
        table.set_header([
            "metric", "from", "n", "p50 ms", "p90 ms", "p95 ms", "p99 ms",
        ]);
        for metric in Metric::ALL {
            let Some(f) = run.metric(metric) else {
                table.add_row([metric.title(), "not in the file"]);
                continue;
            };
            let from = match f.origin {
                Origin::PerRequest => "per request",
                Origin::Summary => "summary",
            };
            let n = f.count.map_or("-".into(), |c| c.to_string());
            let mut row = vec![metric.title().to_owned(), from.to_owned(), n];
            for p in [50.0, 90.0, 95.0, 99.0] {
                row.push(f.percentile(p).map_or("-".into(), |v| format!("{v:.2}")));
            }
            table.add_row(row);
        }
        for i in 2..7 {
            if let Some(c) = table.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(out, "{table}");
        for note in &run.notes {
            let _ = writeln!(out, "note: {note}");
        }
    }
    match stored {
        Some(s) if s.new => {
            let _ = writeln!(out, "stored as benchmark id {}\n", ids(&s.ids));
        }
        Some(s) => {
            let _ = writeln!(
                out,
                "already stored (same SHA-256) as benchmark id {}: nothing written\n",
                ids(&s.ids)
            );
        }
        None if !into => {
            let _ = writeln!(out, "not stored (give --into FILE.db)\n");
        }
        None => {}
    }
    out
}

fn ids(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

//! Imported benchmark runs in the collector's database (`ttfx import --into`): store a
//! file's runs once, list them, and pick one by name for the gap.
//!
//! A benchmark is named by its label (`--label`), else its file's name; a file that
//! holds several runs names each `NAME#k` (k from 1). `--bench` takes a name, an id, or
//! `latest` (the last run of the newest import).

use rusqlite::{Connection, params};
use serde::Serialize;
use serde_json::json;
use ttfx_import::{BenchRun, Figures, Imported, Load, Metric, Origin, Percentiles, Tool};

use crate::db::{DbError, one_line};
use crate::query::Fail;

/// What storing a file did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stored {
    /// The ids of the file's runs, new or already there.
    pub ids: Vec<i64>,
    /// False when the same bytes were imported before: nothing was written.
    pub new: bool,
}

/// Stores every run of `file` in one transaction; a file already stored (same SHA-256)
/// is left as it is.
pub fn store(
    conn: &mut Connection,
    file: &Imported,
    label: Option<&str>,
    now_unix_ms: f64,
) -> Result<Stored, DbError> {
    let tx = conn.transaction().map_err(DbError::Sql)?;
    let existing: Vec<i64> = {
        let mut stmt = tx
            .prepare("SELECT id FROM benchmarks WHERE file_sha256 = ? ORDER BY part")
            .map_err(DbError::Sql)?;
        let ids = stmt
            .query_map([&file.sha256], |r| r.get(0))
            .map_err(DbError::Sql)?;
        ids.collect::<Result<_, _>>().map_err(DbError::Sql)?
    };
    if !existing.is_empty() {
        return Ok(Stored {
            ids: existing,
            new: false,
        });
    }
    let mut ids = Vec::new();
    for (part, run) in file.runs.iter().enumerate() {
        tx.execute(
            "INSERT INTO benchmarks (imported_unix_ms, file_name, file_sha256, file_bytes, \
             part, parts, tool, tool_version, model, load, label, completed, failed, notes) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            params![
                now_unix_ms,
                file.file_name,
                file.sha256,
                i64::try_from(file.bytes).unwrap_or(i64::MAX),
                part as i64 + 1,
                file.runs.len() as i64,
                run.tool.name(),
                run.tool_version,
                run.model,
                serde_json::to_string(&run.load).map_err(DbError::Encode)?,
                label,
                i64::try_from(run.completed).unwrap_or(i64::MAX),
                i64::try_from(run.failed).unwrap_or(i64::MAX),
                serde_json::to_string(&run.notes).map_err(DbError::Encode)?,
            ],
        )
        .map_err(DbError::Sql)?;
        let id = tx.last_insert_rowid();
        for metric in Metric::ALL {
            if let Some(f) = run.metric(metric) {
                store_metric(&tx, id, metric, f)?;
            }
        }
        ids.push(id);
    }
    tx.commit().map_err(DbError::Sql)?;
    Ok(Stored { ids, new: true })
}

fn store_metric(
    tx: &rusqlite::Transaction,
    id: i64,
    metric: Metric,
    f: &Figures,
) -> Result<(), DbError> {
    let values = (!f.values.is_empty()).then(|| {
        let mut blob = Vec::with_capacity(f.values.len() * 8);
        for v in &f.values {
            blob.extend_from_slice(&v.to_le_bytes());
        }
        blob
    });
    let p = &f.percentiles;
    tx.execute(
        "INSERT INTO benchmark_metrics (benchmark_id, metric, origin, count, mean, p50, p90, \
         p95, p99, ms_values) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        params![
            id,
            metric.name(),
            origin_name(f.origin),
            f.count.and_then(|c| i64::try_from(c).ok()),
            p.mean,
            p.p50,
            p.p90,
            p.p95,
            p.p99,
            values,
        ],
    )
    .map_err(DbError::Sql)?;
    Ok(())
}

fn origin_name(o: Origin) -> &'static str {
    match o {
        Origin::PerRequest => "per_request",
        Origin::Summary => "summary",
    }
}

/// One stored benchmark run, with its metrics (values included).
#[derive(Debug, Clone)]
pub struct StoredBench {
    pub id: i64,
    pub name: String,
    pub file_name: String,
    pub sha256: String,
    pub imported_unix_ms: f64,
    pub label: Option<String>,
    pub run: BenchRun,
}

impl StoredBench {
    /// The run as JSON (ids, file, tool, load, counts, each metric's percentiles).
    pub fn to_json(&self) -> serde_json::Value {
        let metrics: serde_json::Map<String, serde_json::Value> = Metric::ALL
            .iter()
            .filter_map(|m| {
                let f = self.run.metric(*m)?;
                Some((m.name().to_owned(), json!(f)))
            })
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "file_name": self.file_name,
            "sha256": self.sha256,
            "imported_unix_ms": self.imported_unix_ms,
            "label": self.label,
            "tool": self.run.tool.name(),
            "tool_version": self.run.tool_version,
            "model": self.run.model,
            "load": self.run.load,
            "load_text": self.run.load.describe(),
            "completed": self.run.completed,
            "failed": self.run.failed,
            "metrics": metrics,
        })
    }
}

const HEAD: &str = "SELECT id, file_name, file_sha256, imported_unix_ms, label, part, parts, \
                    tool, tool_version, model, load, completed, failed, notes FROM benchmarks";

fn name_of(label: Option<&str>, file_name: &str, part: i64, parts: i64) -> String {
    let base = label.unwrap_or(file_name);
    if parts > 1 {
        format!("{base}#{part}")
    } else {
        base.to_owned()
    }
}

fn head(r: &rusqlite::Row) -> rusqlite::Result<StoredBench> {
    let tool: String = r.get(7)?;
    let load: String = r.get(10)?;
    let notes: String = r.get(13)?;
    let label: Option<String> = r.get(4)?;
    let file_name: String = r.get(1)?;
    let mut run = BenchRun::new(Tool::parse(&tool).unwrap_or(Tool::Ttfx));
    run.tool_version = r.get(8)?;
    run.model = r.get(9)?;
    run.load = serde_json::from_str(&load).unwrap_or(Load::Unknown);
    run.completed = u64::try_from(r.get::<_, i64>(11)?).unwrap_or(0);
    run.failed = u64::try_from(r.get::<_, i64>(12)?).unwrap_or(0);
    run.notes = serde_json::from_str(&notes).unwrap_or_default();
    Ok(StoredBench {
        id: r.get(0)?,
        name: name_of(label.as_deref(), &file_name, r.get(5)?, r.get(6)?),
        file_name,
        sha256: r.get(2)?,
        imported_unix_ms: r.get(3)?,
        label,
        run,
    })
}

fn metrics(conn: &Connection, bench: &mut StoredBench, with_values: bool) -> Result<(), Fail> {
    let mut stmt = conn.prepare(
        "SELECT metric, origin, count, mean, p50, p90, p95, p99, ms_values \
         FROM benchmark_metrics WHERE benchmark_id = ?",
    )?;
    let mut rows = stmt.query([bench.id])?;
    while let Some(r) = rows.next()? {
        let name: String = r.get(0)?;
        let Some(metric) = Metric::parse(&name) else {
            continue;
        };
        let origin: String = r.get(1)?;
        let blob: Option<Vec<u8>> = if with_values { r.get(8)? } else { None };
        let values = blob
            .map(|b| {
                b.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect()
            })
            .unwrap_or_default();
        let figures = Figures {
            origin: if origin == "per_request" {
                Origin::PerRequest
            } else {
                Origin::Summary
            },
            count: r
                .get::<_, Option<i64>>(2)?
                .and_then(|c| u64::try_from(c).ok()),
            percentiles: Percentiles {
                mean: r.get(3)?,
                p50: r.get(4)?,
                p90: r.get(5)?,
                p95: r.get(6)?,
                p99: r.get(7)?,
            },
            values,
        };
        bench.run.set(metric, Some(figures));
    }
    Ok(())
}

/// Every stored benchmark run, newest import first (percentiles, no values).
pub fn list(conn: &Connection) -> Result<Vec<StoredBench>, Fail> {
    let mut stmt = conn.prepare(&format!("{HEAD} ORDER BY imported_unix_ms DESC, id DESC"))?;
    let mut out: Vec<StoredBench> = stmt
        .query_map([], head)?
        .collect::<Result<_, _>>()
        .map_err(|e| Fail::Db(one_line(&e)))?;
    for b in &mut out {
        metrics(conn, b, false)?;
    }
    Ok(out)
}

/// `GET /field/benchmarks`.
pub fn list_json(conn: &Connection) -> Result<serde_json::Value, Fail> {
    let benches: Vec<serde_json::Value> = list(conn)?.iter().map(StoredBench::to_json).collect();
    Ok(json!({ "benchmarks": benches }))
}

/// The run `--bench` / `?bench=` names (see the module doc), with its values.
pub fn select(conn: &Connection, which: &str) -> Result<StoredBench, Fail> {
    let all = list(conn)?;
    if all.is_empty() {
        return Err(Fail::Input(
            "no benchmark is stored: import one with `ttfx import FILE --into DB`".into(),
        ));
    }
    let chosen: Vec<&StoredBench> = if which == "latest" {
        // Newest import first; of its file, the last run.
        let newest = &all[0];
        let mut same_file: Vec<&StoredBench> =
            all.iter().filter(|b| b.sha256 == newest.sha256).collect();
        same_file.sort_by_key(|b| b.id);
        same_file.into_iter().last().into_iter().collect()
    } else if let Ok(id) = which.parse::<i64>() {
        all.iter().filter(|b| b.id == id).collect()
    } else {
        let named: Vec<&StoredBench> = all.iter().filter(|b| b.name == which).collect();
        if named.is_empty() {
            // A whole file's name when it holds one run under that name's parts.
            all.iter()
                .filter(|b| b.label.as_deref() == Some(which) || b.file_name == which)
                .collect()
        } else {
            named
        }
    };
    match chosen.as_slice() {
        [one] => {
            let mut bench = (*one).clone();
            metrics(conn, &mut bench, true)?;
            Ok(bench)
        }
        [] => Err(Fail::Input(format!(
            "no benchmark named `{which}` (stored: {})",
            names(&all)
        ))),
        many => Err(Fail::Input(format!(
            "`{which}` names {} benchmark runs: give one of {}",
            many.len(),
            many.iter()
                .map(|b| format!("{} (id {})", b.name, b.id))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn names(all: &[StoredBench]) -> String {
    let mut names: Vec<String> = all.iter().take(10).map(|b| b.name.clone()).collect();
    if all.len() > 10 {
        names.push(format!("and {} more", all.len() - 10));
    }
    names.join(", ")
}

/// For tests: how many benchmark rows there are.
pub fn count(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT COUNT(*) FROM benchmarks", [], |r| r.get(0))
}

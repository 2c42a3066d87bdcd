//! Queries over the stored runs: percentiles per group (summary), per time bucket
//! (series), the distribution (histogram), the slowest runs with their reports, and the
//! dimensions' values. `ttfx field` and the `/field/…` endpoints answer with these
//! same JSON documents (docs/field.md).
//!
//! Percentiles are exact, over the stored values, weighted by each run's inverse sample
//! rate with `ttfx_core::stats::Weighted` (numpy's linear rule over the values expanded
//! by weight; with equal weights exactly `stats::percentile`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use rusqlite::Connection;
use rusqlite::types::Value;
use serde::Serialize;
use serde_json::{Map, json};
use ttfx_core::Milestone;
use ttfx_core::stats::Weighted;

pub use super::db::Dimension;
use super::db::{ARRIVAL, DIMENSIONS, DimKind, METRIC_COLUMNS, one_line};

/// Groups listed at most; the rest are counted in `groups_left_off`.
pub const MAX_GROUPS: usize = 100;
/// Values listed per dimension by `/field/dimensions`.
pub const MAX_DIMENSION_VALUES: usize = 50;
/// Time buckets a series may span.
pub const MAX_BUCKETS: f64 = 5_000.0;
/// Histogram bins: default and most.
pub const DEFAULT_BINS: usize = 20;
pub const MAX_BINS: usize = 200;
/// Slowest runs: default and most.
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;
/// The deepest page of slowest runs (`offset`): SQLite walks the skipped rows, so the
/// depth bounds a read's cost; 10,000 is 100 pages of the most, far past what a person
/// pages through (the summary and histogram speak for the rest).
pub const MAX_OFFSET: usize = 10_000;

/// Why a query has no answer: the asker's mistake (HTTP 400, exit 2) or the database's.
/// `Input` is the 400's text as written where the input was read (it names the
/// parameter and what is allowed); `Db` is SQLite's error on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fail {
    #[error("{0}")]
    Input(String),
    #[error("database: {0}")]
    Db(String),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Fail {
        Fail::Db(one_line(&e))
    }
}

/// A query's JSON document, or why there is none.
pub type Answer = Result<serde_json::Value, Fail>;

/// Runs `query` on one snapshot of the database: inside one read transaction, so a
/// document built from several statements (a summary's metrics and its run count) never
/// mixes in rows the collector commits between them. (WAL lets the collector write while
/// this reads; each statement outside a transaction would see its own snapshot.)
pub fn on_one_snapshot(conn: &Connection, query: impl FnOnce(&Connection) -> Answer) -> Answer {
    let read = conn.unchecked_transaction()?;
    let answer = query(&read);
    // It changed nothing: ending it only lets the next snapshot see newer rows.
    read.finish()?;
    answer
}

/// A metric a query reads: a per-request metric's column, or a client − server gap
/// (`gap.first_token_ms`) read from the stored field report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Column(&'static str),
    Gap(Milestone),
    /// A milestone's time since `request_start` (`first_byte_ms`), from the report.
    At(Milestone),
    /// The run's mean gap between consecutive chunks (`chunk_gap_ms`): the span of its
    /// chunks over their count less one, from the report's chunk bins.
    ChunkGap,
}

impl Metric {
    /// Every metric, columns first, then the gaps in milestone order.
    pub fn all() -> Vec<Metric> {
        let columns = METRIC_COLUMNS.iter().map(|c| Metric::Column(c));
        columns
            .chain(Milestone::ALL.iter().map(|m| Metric::Gap(*m)))
            .collect()
    }

    pub fn name(&self) -> String {
        match self {
            Metric::Column(c) => (*c).to_owned(),
            Metric::Gap(m) => format!("gap.{}_ms", m.as_str()),
            Metric::At(m) => format!("{}_ms", m.as_str()),
            Metric::ChunkGap => "chunk_gap_ms".to_owned(),
        }
    }

    /// Metrics read from the stored report that summaries do not list by default: the
    /// gap to a benchmark sets them beside its TTFT and ITL.
    pub fn derived() -> [Metric; 3] {
        [
            Metric::At(Milestone::FirstByte),
            Metric::At(Milestone::FirstPaint),
            Metric::ChunkGap,
        ]
    }

    /// The metric called `name`; the error lists the choices.
    pub fn parse(name: &str) -> Result<Metric, Fail> {
        Metric::all()
            .into_iter()
            .chain(Metric::derived())
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                let choices: Vec<String> = Metric::all().iter().map(Metric::name).collect();
                Fail::Input(format!(
                    "unknown metric `{name}` (choices: {})",
                    choices.join(", ")
                ))
            })
    }

    /// The column that holds it, for the metrics that have one (`metrics_seen` names).
    fn column(&self) -> Option<String> {
        match self {
            Metric::Column(c) => Some((*c).to_owned()),
            Metric::Gap(m) => Some(super::db::gap_column(*m)),
            Metric::At(_) | Metric::ChunkGap => None,
        }
    }

    /// The SQL expression of its value (names from the fixed lists above, never input).
    fn sql(&self) -> String {
        match self {
            Metric::Column(c) => format!("\"{c}\""),
            Metric::Gap(m) => format!("\"{}\"", super::db::gap_column(*m)),
            Metric::At(m) => format!("json_extract(report, '$.run.milestones.{}')", m.as_str()),
            Metric::ChunkGap => "(CASE WHEN json_extract(report, '$.run.chunks.count') > 1 \
                 THEN (json_extract(report, '$.run.chunks.bins[#-1].to_ms') - \
                 json_extract(report, '$.run.chunks.bins[0].from_ms')) / \
                 (json_extract(report, '$.run.chunks.count') - 1) END)"
                .to_owned(),
        }
    }
}

/// The dimension called `name`; the error lists the choices.
pub fn dimension(name: &str) -> Result<Dimension, Fail> {
    DIMENSIONS
        .iter()
        .find(|d| d.name == name)
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = DIMENSIONS.iter().map(|d| d.name).collect();
            Fail::Input(format!(
                "unknown dimension `{name}` (choices: {})",
                names.join(", ")
            ))
        })
}

/// `30s`, `30m`, `24h`, `7d`, `2w` in ms.
pub fn duration_ms(text: &str) -> Result<f64, Fail> {
    let bad = || {
        Fail::Input(format!(
            "duration `{text}`: expected a whole number and a unit, s, m, h, d or w (e.g. 30m, \
             24h, 7d)"
        ))
    };
    let split = text.len().saturating_sub(1);
    let (number, unit) = (text.get(..split).ok_or_else(bad)?, text.get(split..));
    let n: u32 = number.parse().map_err(|_| bad())?;
    let unit_ms = match unit {
        Some("s") => 1_000.0,
        Some("m") => 60_000.0,
        Some("h") => 3_600_000.0,
        Some("d") => 86_400_000.0,
        Some("w") => 604_800_000.0,
        _ => return Err(bad()),
    };
    if n == 0 {
        return Err(bad());
    }
    Ok(f64::from(n) * unit_ms)
}

/// Which runs a query looks at: since when (by the run's arrival, `db::ARRIVAL`: a
/// client's clock that is off must not hide what arrived today) and which dimension
/// values.
#[derive(Debug, Clone, Default)]
pub struct Slice {
    since: Option<(String, f64)>,
    filters: Vec<(Dimension, Value)>,
}

impl Slice {
    /// `since` a duration before `now_unix_ms`; `filters` as `(dimension, value)`, an
    /// empty value meaning "absent".
    pub fn new(
        since: Option<&str>,
        filters: &[(String, String)],
        now_unix_ms: f64,
    ) -> Result<Slice, Fail> {
        let since = since
            .map(|s| duration_ms(s).map(|ms| (s.to_owned(), now_unix_ms - ms)))
            .transpose()?;
        let filters = filters
            .iter()
            .map(|(name, value)| {
                let d = dimension(name)?;
                Ok((d, filter_value(d, value)?))
            })
            .collect::<Result<_, Fail>>()?;
        Ok(Slice { since, filters })
    }

    fn cutoff(&self) -> Option<f64> {
        self.since.as_ref().map(|s| s.1)
    }

    /// `WHERE …` (always true when empty) and its parameters.
    fn where_sql(&self) -> (String, Vec<Value>) {
        let mut terms = vec!["1".to_owned()];
        let mut params = Vec::new();
        if let Some(cutoff) = self.cutoff() {
            terms.push(format!("{ARRIVAL} >= ?"));
            params.push(Value::Real(cutoff));
        }
        for (d, v) in &self.filters {
            if *v == Value::Null {
                terms.push(format!("\"{}\" IS NULL", d.name));
            } else {
                terms.push(format!("\"{}\" = ?", d.name));
                params.push(v.clone());
            }
        }
        (terms.join(" AND "), params)
    }

    /// The slice as the answers repeat it: `since`, `since_unix_ms`, `where`.
    pub(crate) fn echo(&self) -> Map<String, serde_json::Value> {
        let mut m = Map::new();
        m.insert("since".into(), json!(self.since.as_ref().map(|s| &s.0)));
        m.insert("since_unix_ms".into(), json!(self.cutoff()));
        let filters: Map<String, serde_json::Value> = self
            .filters
            .iter()
            .map(|(d, v)| (d.name.to_owned(), key_json(*d, v)))
            .collect();
        m.insert("where".into(), serde_json::Value::Object(filters));
        m
    }
}

fn filter_value(d: Dimension, text: &str) -> Result<Value, Fail> {
    if text.is_empty() {
        return Ok(Value::Null);
    }
    let bad = |want: &str| Fail::Input(format!("{}={text}: expected {want}", d.name));
    Ok(match d.kind {
        DimKind::Text => Value::Text(text.to_owned()),
        DimKind::Bool => match text {
            "true" | "1" => Value::Integer(1),
            "false" | "0" => Value::Integer(0),
            _ => return Err(bad("true or false")),
        },
        DimKind::Int => Value::Integer(text.parse().map_err(|_| bad("an integer"))?),
        DimKind::Real => Value::Real(text.parse().map_err(|_| bad("a number"))?),
    })
}

/// A stored dimension value as JSON (booleans as `true` / `false`).
fn key_json(d: Dimension, v: &Value) -> serde_json::Value {
    match (v, d.kind) {
        (Value::Integer(i), DimKind::Bool) => json!(*i != 0),
        (Value::Integer(i), _) => json!(i),
        (Value::Real(r), _) => json!(r),
        (Value::Text(t), _) => json!(t),
        (Value::Null | Value::Blob(_), _) => serde_json::Value::Null,
    }
}

/// Count, weighted count, mean, extremes and percentiles of weighted values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    pub count: u64,
    /// Σ 1/sample_rate: the runs these stand for.
    pub weighted_count: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Stats {
    /// Over `(value, weight)` pairs; `None` when there are none.
    pub fn of(pairs: Vec<(f64, f64)>) -> Option<Stats> {
        let w = weighted(pairs);
        Some(Stats {
            count: w.count(),
            weighted_count: w.total_weight(),
            mean: w.mean()?,
            min: w.min()?,
            max: w.max()?,
            p50: w.percentile(50.0)?,
            p75: w.percentile(75.0)?,
            p90: w.percentile(90.0)?,
            p95: w.percentile(95.0)?,
            p99: w.percentile(99.0)?,
        })
    }
}

/// The pairs as `Weighted`, sorted here by std's sort: ttfx-core's own sort is chosen
/// for the probe's wasm size and took most of a summary's time at a million runs (#31).
/// The key is the value's bits mapped so that integer order is `f64::total_cmp`'s (as
/// `total_cmp` itself does, once per value rather than twice per comparison). (A radix
/// sort, radsort, was slower on these 16-byte pairs: 24 % of a summary against 10 %.)
pub(crate) fn weighted(mut pairs: Vec<(f64, f64)>) -> Weighted {
    pairs.sort_unstable_by_key(|p| total_order_key(p.0));
    Weighted::from_ascending(pairs)
}

/// `v`'s bits as an integer in `f64::total_cmp`'s order: negatives flipped whole,
/// positives with the sign bit set.
fn total_order_key(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// One run's value of the metric and its weight: 16 bytes, as `Weighted` sorts them (a
/// query holds every value of its slice, the percentiles being exact, and sorts them in
/// place).
pub(crate) type Sample = (f64, f64);

/// The samples of one group under the group's key (`null` without `by`), and when asked
/// for (a series places runs by it, as `since` selects them) each one's arrival.
pub(crate) type Group = (serde_json::Value, Vec<Sample>, Vec<f64>);

/// The slice's values of `metric`, grouped by `by`, in the order groups first appear;
/// `with_arrival` as [`samples_of`]'.
pub(crate) fn samples(
    conn: &Connection,
    metric: Metric,
    by: Option<Dimension>,
    slice: &Slice,
    with_arrival: bool,
) -> Result<Vec<Group>, Fail> {
    let mut found = samples_of(conn, &[metric], by, slice, with_arrival)?;
    Ok(found.pop().unwrap_or_default())
}

/// Group keys (a value's bytes with its type) to their index. Linear while there are
/// few, as a summary by label or engine has: comparing a few short keys costs less than
/// hashing one, a million times.
#[derive(Default)]
struct GroupIndex {
    few: Vec<(Vec<u8>, usize)>,
    many: HashMap<Vec<u8>, usize>,
}

impl GroupIndex {
    const FEW: usize = 16;

    fn get(&self, key: &[u8]) -> Option<usize> {
        if self.many.is_empty() {
            self.few.iter().find(|(k, _)| k == key).map(|(_, i)| *i)
        } else {
            self.many.get(key).copied()
        }
    }

    fn insert(&mut self, key: &[u8], i: usize) {
        if self.many.is_empty() && self.few.len() < Self::FEW {
            self.few.push((key.to_vec(), i));
            return;
        }
        self.many.extend(self.few.drain(..));
        self.many.insert(key.to_vec(), i);
    }
}

/// The slice's values of each of `metrics`, grouped by `by`, read in one pass over the
/// rows (or over the index that holds them all: a summary of every column is one pass
/// over `runs_narrow`, not one per metric). Per metric, the groups that have values,
/// in the order they first appear.
/// `with_arrival`: read each run's arrival into its samples (a series places them by
/// it; the others leave it 0 and skip reading it).
pub(crate) fn samples_of(
    conn: &Connection,
    metrics: &[Metric],
    by: Option<Dimension>,
    slice: &Slice,
    with_arrival: bool,
) -> Result<Vec<Vec<Group>>, Fail> {
    let (filter, params) = slice.where_sql();
    let key = by.map_or("NULL".to_owned(), |d| format!("\"{}\"", d.name));
    let mut values: Vec<String> = metrics.iter().map(Metric::sql).collect();
    // One metric: its rows only. Several: every row of the slice, each metric taking
    // the values it has.
    let only = match values.as_slice() {
        [one] => format!(" AND {one} IS NOT NULL"),
        _ => String::new(),
    };
    let first = if with_arrival {
        values.insert(0, ARRIVAL.to_owned());
        3
    } else {
        2
    };
    let sql = format!(
        "SELECT {key}, sample_rate, {} FROM runs WHERE {filter}{only}",
        values.join(", ")
    );
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    // Keyed by the value's bytes with its type (rusqlite's Value holds f64 and so is
    // not Hash), written into one reused buffer: a million rows cost no allocation
    // each (a formatted key per row was a tenth of a summary's time, #31).
    let mut index = GroupIndex::default();
    let mut keys: Vec<serde_json::Value> = Vec::new();
    // [metric][group] → samples.
    let mut per_metric: Vec<Vec<(Vec<Sample>, Vec<f64>)>> =
        metrics.iter().map(|_| Vec::new()).collect();
    let mut key_bytes = Vec::new();
    while let Some(r) = rows.next()? {
        let rate: f64 = r.get(1)?;
        let at: f64 = if with_arrival { r.get(2)? } else { 0.0 };
        group_key(r.get_ref(0)?, &mut key_bytes);
        let group = match index.get(&key_bytes) {
            Some(i) => i,
            None => {
                let key: Value = r.get(0)?;
                keys.push(by.map_or(serde_json::Value::Null, |d| key_json(d, &key)));
                index.insert(&key_bytes, keys.len() - 1);
                keys.len() - 1
            }
        };
        for (m, groups) in per_metric.iter_mut().enumerate() {
            let value = match r.get_ref(first + m)? {
                rusqlite::types::ValueRef::Real(v) => v,
                rusqlite::types::ValueRef::Integer(i) => i as f64,
                _ => continue,
            };
            if groups.len() <= group {
                groups.resize_with(group + 1, Default::default);
            }
            let (samples, arrivals) = &mut groups[group];
            samples.push((value, 1.0 / rate));
            if with_arrival {
                arrivals.push(at);
            }
        }
    }
    Ok(per_metric
        .into_iter()
        .map(|groups| {
            groups
                .into_iter()
                .enumerate()
                .filter(|(_, (s, _))| !s.is_empty())
                .map(|(g, (s, at))| (keys[g].clone(), s, at))
                .collect()
        })
        .collect())
}

/// A group's key as bytes: its SQLite type, then its value's bytes (a REAL's bits).
fn group_key(key: rusqlite::types::ValueRef<'_>, out: &mut Vec<u8>) {
    use rusqlite::types::ValueRef;
    out.clear();
    match key {
        ValueRef::Null => out.push(0),
        ValueRef::Integer(i) => {
            out.push(1);
            out.extend_from_slice(&i.to_le_bytes());
        }
        ValueRef::Real(f) => {
            out.push(2);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        ValueRef::Text(t) => {
            out.push(3);
            out.extend_from_slice(t);
        }
        ValueRef::Blob(b) => {
            out.push(4);
            out.extend_from_slice(b);
        }
    }
}

/// The largest groups first (then by key), at most [`MAX_GROUPS`]; the number left off.
fn largest(mut groups: Vec<Group>) -> (Vec<Group>, usize) {
    groups.sort_by(|a, b| {
        b.1.len()
            .cmp(&a.1.len())
            .then_with(|| a.0.to_string().cmp(&b.0.to_string()))
    });
    let left_off = groups.len().saturating_sub(MAX_GROUPS);
    groups.truncate(MAX_GROUPS);
    (groups, left_off)
}

/// Every sample of every group.
fn all(groups: &[Group]) -> impl Iterator<Item = &Sample> {
    groups.iter().flat_map(|g| g.1.iter())
}

fn stats_json(samples: Vec<Sample>) -> serde_json::Value {
    Stats::of(samples).map_or(serde_json::Value::Null, |s| json!(s))
}

/// The stats of every group of every metric (`[metric][group]`, in that shape), on as
/// many threads as the machine has: sorting is most of a summary's time, and each group
/// sorts alone, in place.
fn stats_of_all(per_metric: Vec<Vec<Vec<Sample>>>) -> Vec<Vec<serde_json::Value>> {
    let mut out: Vec<Vec<serde_json::Value>> = per_metric
        .iter()
        .map(|groups| vec![serde_json::Value::Null; groups.len()])
        .collect();
    let mut jobs: Vec<(usize, usize, Vec<Sample>)> = per_metric
        .into_iter()
        .enumerate()
        .flat_map(|(m, groups)| groups.into_iter().enumerate().map(move |(g, s)| (m, g, s)))
        .collect();
    // Taken from the end: the largest first, so the threads finish together.
    jobs.sort_by_key(|job| job.2.len());
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let workers = threads.min(jobs.len()).max(1);
    let jobs = Mutex::new(jobs);
    let next = || {
        jobs.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
    };
    let done: Vec<Vec<(usize, usize, serde_json::Value)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    while let Some((m, g, samples)) = next() {
                        out.push((m, g, stats_json(samples)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect()
    });
    for (m, g, stats) in done.into_iter().flatten() {
        out[m][g] = stats;
    }
    out
}

pub(crate) fn runs_in(conn: &Connection, slice: &Slice) -> Result<u64, Fail> {
    let (filter, params) = slice.where_sql();
    let sql = format!("SELECT COUNT(*) FROM runs WHERE {filter}");
    let n: i64 = conn.query_row(&sql, rusqlite::params_from_iter(params), |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn with_group(key: serde_json::Value, rest: serde_json::Value) -> serde_json::Value {
    let mut m = Map::new();
    m.insert("key".into(), key);
    if let serde_json::Value::Object(rest) = rest {
        m.extend(rest);
    }
    serde_json::Value::Object(m)
}

/// Percentiles per group of `metric` (every metric with values when `None`).
pub fn summary(
    conn: &Connection,
    metric: Option<Metric>,
    by: Option<Dimension>,
    slice: &Slice,
) -> Answer {
    summary_with(conn, None, metric, by, slice)
}

/// [`summary`], with a second read connection on the same file to read with.
///
/// Every metric: the metric columns that have values (`metrics_seen`) in one pass, the
/// gap columns in a second (each an index of its own, migrations 7 and 8), not one pass
/// per metric. With `helper` (free, on the same file) the two passes read at once, one
/// per connection, when both connections' snapshots hold the same runs (checked: a
/// commit between the two read transactions' starts sends the second pass back to
/// `conn`, so the answer is still one snapshot). A pass's groups are summarised on
/// other threads (16 B per value held: 176 MB for eleven metrics of a million runs).
pub fn summary_with(
    conn: &Connection,
    helper: Option<&Mutex<Connection>>,
    metric: Option<Metric>,
    by: Option<Dimension>,
    slice: &Slice,
) -> Answer {
    let passes: Vec<Vec<Metric>> = match metric {
        Some(m) => vec![vec![m]],
        None => {
            let seen = super::db::metrics_seen(conn)?;
            let (columns, gaps): (Vec<Metric>, Vec<Metric>) = Metric::all()
                .into_iter()
                .filter(|m| m.column().is_some_and(|c| seen.contains(&c)))
                .partition(|m| matches!(m, Metric::Column(_)));
            vec![columns, gaps]
        }
    };
    let every = metric.is_none();
    let passes: Vec<Vec<Metric>> = passes.into_iter().filter(|p| !p.is_empty()).collect();
    let out = match (helper, passes.as_slice()) {
        (Some(helper), [first, second]) => {
            two_at_once(conn, helper, (first, second), by, slice, every)?
        }
        _ => {
            let mut out = Vec::new();
            for metrics in &passes {
                out.extend(one_pass(conn, metrics, by, slice, every)?);
            }
            out
        }
    };
    let mut doc = slice.echo();
    doc.insert("by".into(), json!(by.map(|d| d.name)));
    doc.insert("runs".into(), json!(runs_in(conn, slice)?));
    doc.insert("metrics".into(), json!(out));
    Ok(serde_json::Value::Object(doc))
}

/// One pass read on `conn` and summarised.
fn one_pass(
    conn: &Connection,
    metrics: &[Metric],
    by: Option<Dimension>,
    slice: &Slice,
    every: bool,
) -> Result<Vec<serde_json::Value>, Fail> {
    let found = samples_of(conn, metrics, by, slice, false)?;
    let (kept, left_off): (Vec<Vec<Group>>, Vec<usize>) = found.into_iter().map(largest).unzip();
    Ok(summarised(metrics, kept, left_off, every))
}

/// What a snapshot holds of the runs: their count and largest id. Every insert raises
/// the largest id (ids only grow while a run is stored after it) and every removal
/// lowers the count, so two snapshots with the same stamp hold the same runs.
fn stamp(conn: &Connection) -> Result<(i64, Option<i64>), Fail> {
    Ok(
        conn.query_row("SELECT COUNT(*), MAX(id) FROM runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?,
    )
}

/// The two passes at once: `first` on `conn` (inside its read transaction already),
/// `second` on `helper` in a read transaction of its own on another thread.
fn two_at_once(
    conn: &Connection,
    helper: &Mutex<Connection>,
    (first, second): (&[Metric], &[Metric]),
    by: Option<Dimension>,
    slice: &Slice,
    every: bool,
) -> Result<Vec<serde_json::Value>, Fail> {
    std::thread::scope(|scope| {
        let other = scope.spawn(move || -> Result<_, Fail> {
            // Busy with another summary: this one reads both passes itself.
            let helper = helper
                .try_lock()
                .map_err(|_| Fail::Db("the second reader is busy".to_owned()))?;
            let read = helper.unchecked_transaction()?;
            let theirs = stamp(&read)?;
            let out = one_pass(&read, second, by, slice, every)?;
            read.finish()?;
            Ok((theirs, out))
        });
        let mine = stamp(conn)?;
        let mut out = one_pass(conn, first, by, slice, every)?;
        match other.join() {
            Ok(Ok((theirs, rest))) if theirs == mine => out.extend(rest),
            // Another snapshot, a busy or failed helper: read the pass here.
            _ => out.extend(one_pass(conn, second, by, slice, every)?),
        }
        Ok(out)
    })
}

/// One pass's metrics as the summary lists them; with `every`, a metric without values
/// is left out.
fn summarised(
    metrics: &[Metric],
    kept: Vec<Vec<Group>>,
    left_off: Vec<usize>,
    every: bool,
) -> Vec<serde_json::Value> {
    let (keys, samples): (Vec<Vec<serde_json::Value>>, Vec<Vec<Vec<Sample>>>) = kept
        .into_iter()
        .map(|groups| groups.into_iter().map(|(key, s, _)| (key, s)).unzip())
        .unzip();
    let stats = stats_of_all(samples);
    let mut out = Vec::new();
    for ((m, keys), (stats, left_off)) in metrics
        .iter()
        .zip(keys)
        .zip(stats.into_iter().zip(left_off))
    {
        if keys.is_empty() && every {
            continue;
        }
        let groups: Vec<serde_json::Value> = keys
            .into_iter()
            .zip(stats)
            .map(|(key, s)| with_group(key, s))
            .collect();
        out.push(json!({ "metric": m.name(), "groups": groups, "groups_left_off": left_off }));
    }
    out
}

/// Percentiles of `metric` per time bucket of `bucket` (a duration), per group.
pub fn series(
    conn: &Connection,
    metric: Metric,
    bucket: &str,
    by: Option<Dimension>,
    slice: &Slice,
    now_unix_ms: f64,
) -> Answer {
    let bucket_ms = duration_ms(bucket)?;
    let found = samples(conn, metric, by, slice, true)?;
    let from = slice.cutoff().or_else(|| {
        found
            .iter()
            .flat_map(|g| g.2.iter())
            .copied()
            .reduce(f64::min)
    });
    if let Some(from) = from {
        let buckets = (now_unix_ms - from) / bucket_ms;
        if buckets > MAX_BUCKETS {
            return Err(Fail::Input(format!(
                "bucket {bucket} makes {} buckets (at most {MAX_BUCKETS}): take a larger bucket \
                 or a shorter since",
                buckets.ceil()
            )));
        }
    }
    let (groups, left_off) = largest(found);
    let groups: Vec<serde_json::Value> = groups
        .into_iter()
        .map(|(key, s, arrivals)| {
            let count = s.len();
            let mut by_bucket: BTreeMap<i64, Vec<Sample>> = BTreeMap::new();
            for (sample, at) in s.into_iter().zip(arrivals) {
                let index = (at / bucket_ms).floor() as i64;
                by_bucket.entry(index).or_default().push(sample);
            }
            let points: Vec<serde_json::Value> = by_bucket
                .into_iter()
                .map(|(index, s)| {
                    let mut point = Map::new();
                    point.insert("start_unix_ms".into(), json!(index as f64 * bucket_ms));
                    if let serde_json::Value::Object(stats) = stats_json(s) {
                        point.extend(stats);
                    }
                    serde_json::Value::Object(point)
                })
                .collect();
            json!({ "key": key, "count": count, "points": points })
        })
        .collect();
    let mut doc = slice.echo();
    doc.insert("by".into(), json!(by.map(|d| d.name)));
    doc.insert("metric".into(), json!(metric.name()));
    doc.insert("bucket".into(), json!(bucket));
    doc.insert("bucket_ms".into(), json!(bucket_ms));
    doc.insert("groups".into(), json!(groups));
    doc.insert("groups_left_off".into(), json!(left_off));
    Ok(serde_json::Value::Object(doc))
}

/// The distribution of `metric` in `bins` equal bins from its smallest to its largest
/// value in the slice (every group on the same edges).
pub fn histogram(
    conn: &Connection,
    metric: Metric,
    bins: usize,
    by: Option<Dimension>,
    slice: &Slice,
) -> Answer {
    if !(1..=MAX_BINS).contains(&bins) {
        return Err(Fail::Input(format!(
            "bins={bins}: expected 1 to {MAX_BINS}"
        )));
    }
    let found = samples(conn, metric, by, slice, false)?;
    let lo = all(&found).map(|s| s.0).reduce(f64::min);
    let hi = all(&found).map(|s| s.0).reduce(f64::max);
    let edges: Vec<f64> = match (lo, hi) {
        (Some(lo), Some(hi)) => (0..=bins)
            .map(|i| {
                if i == bins {
                    hi
                } else {
                    lo + (hi - lo) * i as f64 / bins as f64
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    let bin_of = |v: f64| match (lo, hi) {
        (Some(lo), Some(hi)) if hi > lo => {
            (((v - lo) / (hi - lo) * bins as f64).floor() as usize).min(bins - 1)
        }
        _ => 0,
    };
    let (groups, left_off) = largest(found);
    let groups: Vec<serde_json::Value> = groups
        .into_iter()
        .map(|(key, s, _)| {
            let mut counts = vec![0u64; bins];
            let mut weighted = vec![0.0f64; bins];
            for sample in &s {
                let b = bin_of(sample.0);
                counts[b] += 1;
                weighted[b] += sample.1;
            }
            json!({
                "key": key,
                "count": s.len(),
                "weighted_count": s.iter().map(|x| x.1).sum::<f64>(),
                "counts": counts,
                "weighted_counts": weighted,
            })
        })
        .collect();
    let mut doc = slice.echo();
    doc.insert("by".into(), json!(by.map(|d| d.name)));
    doc.insert("metric".into(), json!(metric.name()));
    doc.insert("bins".into(), json!(bins));
    doc.insert("edges".into(), json!(edges));
    doc.insert("groups".into(), json!(groups));
    doc.insert("groups_left_off".into(), json!(left_off));
    Ok(serde_json::Value::Object(doc))
}

/// The `limit` runs with the largest `metric`, with their dimensions and stored report.
pub fn slowest(
    conn: &Connection,
    metric: Metric,
    limit: usize,
    offset: usize,
    slice: &Slice,
) -> Answer {
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Fail::Input(format!(
            "limit={limit}: expected 1 to {MAX_LIMIT}"
        )));
    }
    if offset > MAX_OFFSET {
        return Err(Fail::Input(format!(
            "offset={offset}: expected 0 to {MAX_OFFSET} (narrow the slice with since or a \
             dimension instead)"
        )));
    }
    let (filter, mut params) = slice.where_sql();
    let dims: Vec<String> = DIMENSIONS
        .iter()
        .map(|d| format!("\"{}\"", d.name))
        .collect();
    let value = metric.sql();
    // The page's ids first, then their rows: sorting the whole rows carried every run's
    // report through the sort (a million reports read for ten, #31); the ids come from
    // the narrow index (MIGRATION_QUERY_INDEXES) when the metric is a column.
    let sql = format!(
        "SELECT {value}, at_unix_ms, received_unix_ms, run_id, report, {} FROM runs \
         WHERE id IN (SELECT id FROM runs WHERE {filter} AND {value} IS NOT NULL \
         ORDER BY {value} DESC, id LIMIT ? OFFSET ?) ORDER BY {value} DESC, id",
        dims.join(", ")
    );
    // One row past the page says whether another page follows.
    params.push(Value::Integer(i64::try_from(limit + 1).unwrap_or(i64::MAX)));
    params.push(Value::Integer(i64::try_from(offset).unwrap_or(i64::MAX)));
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
        let report: String = r.get(4)?;
        let mut dimensions = Map::new();
        for (i, d) in DIMENSIONS.iter().enumerate() {
            let v: Value = r.get(5 + i)?;
            dimensions.insert(d.name.to_owned(), key_json(*d, &v));
        }
        Ok(json!({
            "value": r.get::<_, f64>(0)?,
            "at_unix_ms": r.get::<_, f64>(1)?,
            "received_unix_ms": r.get::<_, f64>(2)?,
            "run_id": r.get::<_, Option<String>>(3)?,
            "dimensions": dimensions,
            "report": serde_json::from_str::<serde_json::Value>(&report)
                .unwrap_or(serde_json::Value::Null),
        }))
    })?;
    let mut runs: Vec<serde_json::Value> = rows.collect::<Result<_, _>>()?;
    let more = runs.len() > limit;
    runs.truncate(limit);
    let mut doc = slice.echo();
    doc.insert("metric".into(), json!(metric.name()));
    doc.insert("limit".into(), json!(limit));
    doc.insert("offset".into(), json!(offset));
    // The next page's offset, or null on the last page.
    let next = (more && offset + limit <= MAX_OFFSET).then_some(offset + limit);
    doc.insert("next_offset".into(), json!(next));
    doc.insert("runs".into(), json!(runs));
    Ok(serde_json::Value::Object(doc))
}

/// The metrics that have values, and each dimension's values with their run counts
/// (the most frequent first, at most [`MAX_DIMENSION_VALUES`]).
pub fn dimensions(conn: &Connection, slice: &Slice) -> Answer {
    let (filter, params) = slice.where_sql();
    let run = |sql: &str| -> Result<Vec<(Value, i64)>, Fail> {
        let mut stmt = conn.prepare(sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(params.clone()), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    };
    // The metric and gap columns that ever had a value (the others are known to be
    // empty), counted in one statement per index that holds them (runs_narrow,
    // runs_gaps): a statement reading both would read the table.
    let seen = super::db::metrics_seen(conn)?;
    let (columns, gaps): (Vec<Metric>, Vec<Metric>) = Metric::all()
        .into_iter()
        .filter(|m| m.column().is_some_and(|c| seen.contains(&c)))
        .partition(|m| matches!(m, Metric::Column(_)));
    let mut metrics = Vec::new();
    for present in [columns, gaps] {
        if present.is_empty() {
            continue;
        }
        let counts: Vec<String> = present
            .iter()
            .map(|m| format!("COUNT({})", m.sql()))
            .collect();
        let sql = format!("SELECT {} FROM runs WHERE {filter}", counts.join(", "));
        let counts: Vec<i64> =
            conn.query_row(&sql, rusqlite::params_from_iter(params.clone()), |r| {
                (0..present.len()).map(|i| r.get(i)).collect()
            })?;
        for (m, n) in present.iter().zip(counts) {
            if n > 0 {
                metrics.push(json!({ "metric": m.name(), "count": n }));
            }
        }
    }
    let mut dims = Vec::new();
    for d in DIMENSIONS {
        let col = format!("\"{}\"", d.name);
        let values = run(&format!(
            "SELECT {col}, COUNT(*) AS n FROM runs WHERE {filter} GROUP BY {col} \
             ORDER BY n DESC, {col} LIMIT {}",
            MAX_DIMENSION_VALUES + 1
        ))?;
        let distinct = run(&format!(
            "SELECT COUNT(DISTINCT {col}) + (COUNT(*) > COUNT({col})), 0 FROM runs \
             WHERE {filter}"
        ))?;
        let distinct = distinct.first().map_or(0, |(v, _)| match v {
            Value::Integer(i) => *i,
            _ => 0,
        });
        let shown: Vec<serde_json::Value> = values
            .iter()
            .take(MAX_DIMENSION_VALUES)
            .map(|(v, n)| json!({ "value": key_json(d, v), "count": n }))
            .collect();
        let left_off = usize::try_from(distinct)
            .unwrap_or(0)
            .saturating_sub(shown.len());
        dims.push(json!({ "name": d.name, "values": shown, "values_left_off": left_off }));
    }
    let mut doc = slice.echo();
    doc.insert("runs".into(), json!(runs_in(conn, slice)?));
    doc.insert("metrics".into(), json!(metrics));
    doc.insert("dimensions".into(), json!(dims));
    Ok(serde_json::Value::Object(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_metrics_and_dimensions_parse_or_name_the_choices() {
        assert_eq!(duration_ms("30m"), Ok(1_800_000.0));
        assert_eq!(duration_ms("24h"), Ok(86_400_000.0));
        assert_eq!(duration_ms("7d"), Ok(604_800_000.0));
        for bad in ["", "h", "24", "1.5h", "-1h", "0d", "3y", "24 h"] {
            assert!(duration_ms(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Metric::parse("gap.first_token_ms"),
            Ok(Metric::Gap(Milestone::FirstToken))
        );
        let Err(Fail::Input(e)) = Metric::parse("ttft") else {
            panic!("ttft parsed");
        };
        assert!(e.contains("unknown metric `ttft`") && e.contains("ttft_visible_ms"));
        let Err(Fail::Input(e)) = dimension("browser") else {
            panic!("browser parsed");
        };
        assert!(e.contains("unknown dimension `browser`") && e.contains("engine"));
        let slice = Slice::new(None, &[("hidden".into(), "maybe".into())], 0.0);
        assert!(matches!(slice, Err(Fail::Input(e)) if e.contains("true or false")));
    }

    /// A summary counts the rows it summarises, however the collector writes meanwhile:
    /// a second connection commits a row while the summary's first statement runs.
    #[test]
    fn a_summary_reads_one_snapshot_while_the_collector_commits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("field.db");
        let insert = "INSERT INTO runs (at_unix_ms, received_unix_ms, source, outcome, \
                      hidden, sample_rate, ttft_ms, label, report) \
                      VALUES (1, 1, 'field', 'completed', 0, 1, 412.5, 'chat', '{}')";
        crate::db::open(&path, true)
            .unwrap()
            .execute(insert, [])
            .unwrap();
        let reader = crate::db::open(&path, false).unwrap();
        let summarise = |conn: &Connection| {
            // Every few VM steps of a reading statement; the first call commits a row
            // through a connection of its own, as the collector's writer would.
            let mut writer = Some(crate::db::open(&path, false).unwrap());
            conn.progress_handler(
                10,
                Some(move || {
                    if let Some(w) = writer.take() {
                        w.execute(insert, []).unwrap();
                    }
                    false
                }),
            )
            .unwrap();
            let doc = summary(
                conn,
                Some(Metric::Column("ttft_ms")),
                None,
                &Slice::default(),
            );
            conn.progress_handler(10, None::<fn() -> bool>).unwrap();
            doc.unwrap()
        };
        let counts = |doc: &serde_json::Value| {
            (
                doc["runs"].clone(),
                doc["metrics"][0]["groups"][0]["count"].clone(),
            )
        };
        // Statement by statement, the run count sees the row the metrics did not.
        let torn = summarise(&reader);
        assert_eq!(counts(&torn), (2.into(), 1.into()), "{torn}");
        // On one snapshot: the rows at its start (its first statement takes it, before the
        // handler commits), in both.
        let whole = on_one_snapshot(&reader, |c| Ok(summarise(c))).unwrap();
        assert_eq!(counts(&whole), (2.into(), 2.into()), "{whole}");
    }

    /// A run with a metric and a gap, for the every-metric summary's two passes.
    fn run_with_gap(ttft: f64, gap: f64, sample_rate: f64) -> crate::db::Row {
        let report = serde_json::from_value(json!({
            "schema_version": 1, "kind": "field", "generator": "test",
            "run": {"outcome": "completed", "hidden": false, "sample_rate": sample_rate,
                    "label": if sample_rate < 1.0 { "sampled" } else { "all" },
                    "milestones": {"request_start": 0.0, "first_token": ttft},
                    "metrics": {"ttft_ms": ttft}, "gaps": {"first_token": gap},
                    "chunks": {"count": 0, "bytes": 0, "visible_tokens": 0,
                               "reasoning_tokens": 0}}
        }))
        .unwrap();
        crate::db::Row {
            report,
            source: crate::db::Source::Field,
            received_unix_ms: 1.0,
        }
    }

    /// With a second connection the two passes read at once and answer what one
    /// connection answers; when a run is committed between the two connections'
    /// snapshots, the gap pass is read again on the first, so the answer is still one
    /// snapshot's (every metric's count is the run count).
    #[test]
    fn every_metric_with_a_second_reader_is_one_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("field.db");
        let mut writer = crate::db::open(&path, true).unwrap();
        let rows: Vec<_> = (0..40)
            .map(|i| {
                run_with_gap(
                    300.0 + f64::from(i),
                    f64::from(i % 7),
                    [1.0, 0.25][i as usize % 2],
                )
            })
            .collect();
        crate::db::insert(&mut writer, &rows).unwrap();
        let reader = crate::db::open(&path, false).unwrap();
        let helper = Mutex::new(crate::db::open_read_only(&path).unwrap());
        let by = Some(dimension("label").unwrap());
        for by in [None, by] {
            let alone = on_one_snapshot(&reader, |c| summary(c, None, by, &Slice::default()));
            let paired = on_one_snapshot(&reader, |c| {
                summary_with(c, Some(&helper), None, by, &Slice::default())
            });
            assert_eq!(alone.unwrap(), paired.unwrap());
        }
        // The first connection's snapshot is taken; then a run is committed; the helper's
        // snapshot would hold 41 runs.
        let doc = on_one_snapshot(&reader, |c| {
            runs_in(c, &Slice::default())?;
            crate::db::insert(&mut writer, &[run_with_gap(999.0, 99.0, 1.0)]).unwrap();
            summary_with(c, Some(&helper), None, None, &Slice::default())
        })
        .unwrap();
        assert_eq!(doc["runs"], 40, "{doc}");
        let names: Vec<&str> = doc["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["metric"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ttft_ms", "gap.first_token_ms"]);
        for m in doc["metrics"].as_array().unwrap() {
            assert_eq!(m["groups"][0]["count"], 40, "{m}");
            assert!(m["groups"][0]["max"].as_f64().unwrap() < 99.0 || m["metric"] == "ttft_ms");
        }
        assert_eq!(doc["metrics"][1]["groups"][0]["max"], 6.0, "{doc}");
    }
}

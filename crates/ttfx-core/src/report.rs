//! The report: a versioned JSON schema for one run and for a batch of runs with their
//! statistics. Field names are snake_case and durations are milliseconds (`_ms`);
//! `docs/report.md` documents the schema with an example.
//!
//! A run keeps its timeline, the source of truth, beside the metrics derived from it, so
//! any consumer can read the metrics and any later ttfx can recompute them.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::metrics::{Outcome, RequestMetrics};
use crate::series::GapDigest;
use crate::stats::{Budget, Goodput, Summary, goodput};
use crate::timeline::{ServerData, Timeline, TimelineError};

/// The schema of every document without a summarized chunk series, and the oldest
/// this build reads. Bump it whenever a field changes meaning or disappears; adding an
/// optional field does not need a bump.
pub const SCHEMA_VERSION: u32 = 1;

/// The schema of a document holding a run whose chunk series was summarized
/// (`timeline.chunk_summary`): version 1 plus that
/// summary. In such a run `chunks[]` and `icl_ms` hold only the stream's beginning,
/// which a version-1 reader would take for the whole stream, so such a document says
/// 2. Every other document stays version 1, byte for byte what version 1 wrote, and
/// readers of version 1 keep reading it.
pub const SCHEMA_VERSION_SUMMARIZED: u32 = 2;

/// The schema of a document holding a voice turn (`timeline.turn`, the `speech_*` and
/// `stt_*` milestones), and the newest this build reads: version 2 plus the turn. Its
/// turn milestones are negative (they precede the request), which a reader of 1 or 2
/// would reject as a broken timeline, so such a document says 3.
pub const SCHEMA_VERSION_TURN: u32 = 3;

/// The version a document holding `runs` is written as.
fn schema_version(runs: &[Run]) -> u32 {
    if runs.iter().any(|r| {
        r.timeline.turn.is_some()
            || r.timeline
                .milestones
                .iter()
                .any(|(m, _)| m.precedes_request())
    }) {
        SCHEMA_VERSION_TURN
    } else if runs.iter().any(|r| r.timeline.chunk_summary.is_some()) {
        SCHEMA_VERSION_SUMMARIZED
    } else {
        SCHEMA_VERSION
    }
}

/// What wrote a report, for provenance.
pub const GENERATOR: &str = concat!("ttfx-core ", env!("CARGO_PKG_VERSION"));

/// Which of the two document shapes a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    Run,
    Batch,
}

/// One measured request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Caller's id for the request (e.g. the `x-request-id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What was measured (a deployment, a simulator profile): runs are compared by target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub timeline: Timeline,
    pub metrics: RequestMetrics,
}

impl Run {
    /// A run whose metrics are computed from its timeline.
    pub fn new(
        id: Option<String>,
        target: Option<String>,
        timeline: Timeline,
    ) -> Result<Run, TimelineError> {
        let metrics = RequestMetrics::compute(&timeline)?;
        Ok(Run {
            id,
            target,
            timeline,
            metrics,
        })
    }

    /// The run with a server's own account of the request joined to its timeline
    /// ([`ServerData::merge`]) and the metrics computed again, so the gaps pair each
    /// client milestone with the server's.
    pub fn with_server(self, server: &ServerData) -> Result<Run, TimelineError> {
        let mut timeline = self.timeline;
        timeline.server.merge(server);
        Run::new(self.id, self.target, timeline)
    }
}

/// A report file holding one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub kind: ReportKind,
    pub generator: String,
    pub run: Run,
}

impl RunReport {
    /// The report of a finished timeline. The page's observers take `first_dom`,
    /// `paint_time` and `first_paint` (and its Resource Timing `response_start`), and a
    /// misbehaving page can put them out of order: a timeline they
    /// make invalid is reported without them, with a `timeline_invalid` anomaly. Only a
    /// timeline that is invalid even so is an error. The probe and the analysis worker
    /// both finish runs here.
    pub fn of_timeline(
        id: Option<String>,
        target: Option<String>,
        mut timeline: Timeline,
    ) -> Result<RunReport, TimelineError> {
        match Run::new(id.clone(), target.clone(), timeline.clone()) {
            Ok(run) => Ok(RunReport::new(run)),
            Err(e) => {
                timeline.anomalies.push(crate::timeline::Anomaly {
                    at_ms: 0.0,
                    class: "timeline_invalid".into(),
                    detail: e.to_string(),
                });
                timeline.milestones.remove(crate::Milestone::ResponseStart);
                timeline.milestones.remove(crate::Milestone::FirstDom);
                timeline.milestones.remove(crate::Milestone::PaintTime);
                timeline.milestones.remove(crate::Milestone::FirstPaint);
                timeline.paint_method = None;
                Run::new(id, target, timeline).map(RunReport::new)
            }
        }
    }

    pub fn new(run: Run) -> RunReport {
        RunReport {
            schema_version: schema_version(std::slice::from_ref(&run)),
            kind: ReportKind::Run,
            generator: GENERATOR.to_owned(),
            run,
        }
    }
}

/// How the runs of a batch ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeCounts {
    pub total: u64,
    pub completed: u64,
    pub aborted: u64,
    pub failed: u64,
    pub incomplete: u64,
}

/// A report file holding many runs and their statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchReport {
    pub schema_version: u32,
    pub kind: ReportKind,
    pub generator: String,
    pub outcomes: OutcomeCounts,
    /// Per metric name: count, mean, min, max, p50/p90/p95/p99 (numpy linear). Each
    /// request's value counts once, except `icl_ms`, which pools every gap of every run
    /// (as vLLM pools ITL; see [`statistics`] for runs with a summarized series).
    pub statistics: BTreeMap<String, Summary>,
    /// Against the budgets given, when any were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    pub runs: Vec<Run>,
}

impl BatchReport {
    /// A batch over `runs`, its statistics computed from their metrics.
    pub fn from_runs(runs: Vec<Run>, budgets: &[Budget]) -> BatchReport {
        let metrics: Vec<RequestMetrics> = runs.iter().map(|r| r.metrics.clone()).collect();
        BatchReport {
            schema_version: schema_version(&runs),
            kind: ReportKind::Batch,
            generator: GENERATOR.to_owned(),
            outcomes: outcome_counts(&metrics),
            statistics: statistics(&runs),
            goodput: (!budgets.is_empty()).then(|| goodput(&metrics, budgets)),
            runs,
        }
    }
}

fn outcome_counts(metrics: &[RequestMetrics]) -> OutcomeCounts {
    let mut c = OutcomeCounts {
        total: metrics.len() as u64,
        ..OutcomeCounts::default()
    };
    for m in metrics {
        match m.outcome {
            Outcome::Completed => c.completed += 1,
            Outcome::Aborted => c.aborted += 1,
            Outcome::Failed => c.failed += 1,
            Outcome::Incomplete => c.incomplete += 1,
        }
    }
    c
}

/// Statistics of every metric that at least one run has.
///
/// `icl_ms` pools every gap of every run. While every run kept its whole series, that
/// is exact, over the gaps themselves. A run with a summarized series brings its gap
/// digest instead (its `icl_ms` lists only the first gaps), so the pool becomes a digest
/// too, with the other runs' gaps added to it: count, min and max stay exact, the mean
/// up to the order of its sum, the percentiles within
/// [`crate::series::GAP_RELATIVE_ERROR`].
pub fn statistics(runs: &[Run]) -> BTreeMap<String, Summary> {
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for m in runs.iter().map(|r| &r.metrics) {
        for (name, value) in m.scalars() {
            if let Some(v) = value {
                values.entry(name.to_owned()).or_default().push(v);
            }
        }
        for g in &m.gaps {
            values
                .entry(format!("gap.{}_ms", g.milestone))
                .or_default()
                .push(g.gap_ms);
        }
    }
    let mut statistics: BTreeMap<String, Summary> = values
        .into_iter()
        .filter_map(|(name, v)| Summary::of(&v).map(|s| (name, s)))
        .collect();
    if let Some(icl) = pooled_icl(runs) {
        statistics.insert("icl_ms".to_owned(), icl);
    }
    statistics
}

fn pooled_icl(runs: &[Run]) -> Option<Summary> {
    let digests: Vec<&GapDigest> = runs
        .iter()
        .filter_map(|r| r.timeline.chunk_summary.as_ref().map(|s| &s.gaps))
        .collect();
    if digests.is_empty() {
        let gaps: Vec<f64> = runs.iter().flat_map(|r| r.metrics.icl_ms.clone()).collect();
        return Summary::of(&gaps);
    }
    let mut pool = GapDigest::default();
    for digest in digests {
        pool.merge(digest);
    }
    for run in runs.iter().filter(|r| r.timeline.chunk_summary.is_none()) {
        for &gap in run.metrics.icl_ms.iter().filter(|g| g.is_finite()) {
            pool.insert(gap);
        }
    }
    pool.summary()
}

/// A parsed report file of either kind.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportFile {
    // Boxed: a run report carries a whole timeline, a batch only a Vec of them.
    Run(Box<RunReport>),
    Batch(BatchReport),
}

impl ReportFile {
    /// Parses a report, checking its schema version before anything else so that a file
    /// from another version gets that error rather than a confusing field error.
    pub fn from_json(text: &str) -> Result<ReportFile, ReportError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(ReportError::Json)?;
        let version = value
            .get("schema_version")
            .ok_or(ReportError::MissingVersion)?;
        match version.as_u64() {
            Some(v)
                if (u64::from(SCHEMA_VERSION)..=u64::from(SCHEMA_VERSION_TURN)).contains(&v) => {}
            _ => return Err(ReportError::UnsupportedVersion(version.to_string())),
        }
        let kind = value
            .get("kind")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let file = match serde_json::from_value::<ReportKind>(kind.clone()) {
            Ok(ReportKind::Run) => ReportFile::Run(Box::new(
                serde_json::from_value(value).map_err(ReportError::Json)?,
            )),
            Ok(ReportKind::Batch) => {
                ReportFile::Batch(serde_json::from_value(value).map_err(ReportError::Json)?)
            }
            Err(_) => return Err(ReportError::UnknownKind(kind.to_string())),
        };
        for (index, run) in file.runs().iter().enumerate() {
            run.timeline
                .validate()
                .map_err(|error| ReportError::InvalidRun { index, error })?;
        }
        Ok(file)
    }

    /// The runs the file holds.
    pub fn runs(&self) -> &[Run] {
        match self {
            ReportFile::Run(r) => std::slice::from_ref(&r.run),
            ReportFile::Batch(b) => &b.runs,
        }
    }

    /// The runs, taken out.
    pub fn into_runs(self) -> Vec<Run> {
        match self {
            ReportFile::Run(r) => vec![r.run],
            ReportFile::Batch(b) => b.runs,
        }
    }
}

/// A report that cannot be read.
#[derive(Debug)]
pub enum ReportError {
    Json(serde_json::Error),
    MissingVersion,
    UnsupportedVersion(String),
    UnknownKind(String),
    InvalidRun { index: usize, error: TimelineError },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Json(e) => write!(f, "not a ttfx report: {e}"),
            ReportError::MissingVersion => f.write_str("not a ttfx report: no schema_version"),
            ReportError::UnsupportedVersion(found) => write!(
                f,
                "unsupported schema_version {found} (this ttfx reads versions \
                 {SCHEMA_VERSION} to {SCHEMA_VERSION_TURN})"
            ),
            ReportError::UnknownKind(found) => {
                write!(
                    f,
                    "unknown report kind {found} (expected \"run\" or \"batch\")"
                )
            }
            ReportError::InvalidRun { index, error } => write!(f, "run {index}: {error}"),
        }
    }
}

impl std::error::Error for ReportError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::milestone::Milestone;
    use crate::server_timing::{ServerTiming, TimingSource, Usage};
    use crate::timeline::{Chunk, PaintMethod};

    #[test]
    fn a_bad_observer_time_is_dropped_with_an_anomaly_and_a_bad_stream_is_an_error() {
        let mut t = run(300.0).timeline;
        t.milestones.set(Milestone::FirstDom, -5.0);
        let report = RunReport::of_timeline(Some("r".into()), None, t).unwrap();
        let kept = &report.run.timeline;
        assert_eq!(kept.milestones.get(Milestone::FirstDom), None);
        assert_eq!(kept.milestones.get(Milestone::FirstPaint), None);
        assert_eq!(kept.paint_method, None);
        assert_eq!(kept.milestones.get(Milestone::FirstToken), Some(300.0));
        assert_eq!(kept.anomalies.last().unwrap().class, "timeline_invalid");

        let mut t = run(300.0).timeline;
        t.milestones.set(Milestone::FirstToken, f64::NAN);
        assert!(RunReport::of_timeline(None, None, t).is_err());
    }

    /// A completed run: first token at `ttft`, then one token every 25 ms, 4 tokens.
    fn run(ttft: f64) -> Run {
        let mut t = Timeline::default();
        for (m, at) in [
            (Milestone::RequestStart, 0.0),
            (Milestone::FirstToken, ttft),
            (Milestone::FirstVisibleToken, ttft),
            (Milestone::FirstPaint, ttft + 12.5),
            (Milestone::LastToken, ttft + 75.0),
            (Milestone::Done, ttft + 80.0),
        ] {
            t.milestones.set(m, at);
        }
        t.chunks = (0..4)
            .map(|i| Chunk {
                at_ms: ttft + 25.0 * f64::from(i),
                bytes: 90,
                events: 1,
                visible_tokens: 1,
                reasoning_tokens: 0,
            })
            .collect();
        t.paint_method = Some(PaintMethod::ElementTiming);
        t.server.usage = Some(Usage {
            completion_tokens: Some(4),
            ..Usage::default()
        });
        t.server.timings = vec![ServerTiming {
            name: "first_token".into(),
            duration_ms: Some(ttft - 40.0),
            description: None,
            source: TimingSource::VantageProxy,
        }];
        t.environment.engine = Some("chromium".into());
        Run::new(Some(format!("req-{ttft}")), Some("sim".into()), t).unwrap()
    }

    #[test]
    fn run_report_round_trips() {
        let report = RunReport::new(run(300.0));
        let json = serde_json::to_string_pretty(&report).unwrap();
        assert!(json.contains("\"schema_version\": 1"), "{json}");
        assert!(json.contains("\"kind\": \"run\""), "{json}");
        assert!(json.contains("\"first_token\": 300.0"), "{json}");
        match ReportFile::from_json(&json).unwrap() {
            ReportFile::Run(back) => assert_eq!(*back, report),
            other => panic!("read back as {other:?}"),
        }
    }

    #[test]
    fn batch_report_round_trips_with_statistics_and_goodput() {
        let budgets = [Budget::parse("ttft_ms=350").unwrap()];
        let batch = BatchReport::from_runs(vec![run(300.0), run(200.0), run(400.0)], &budgets);
        // ttft 200, 300, 400: mean 300, p50 300, p90 → h = 1.8 → 380, p99 → h = 1.98 → 398.
        let ttft = batch.statistics["ttft_ms"];
        assert_eq!(
            (ttft.count, ttft.mean, ttft.p50, ttft.min, ttft.max),
            (3, 300.0, 300.0, 200.0, 400.0)
        );
        assert!((ttft.p90 - 380.0).abs() < 1e-9 && (ttft.p99 - 398.0).abs() < 1e-9);
        // icl pools every gap of every run: 3 runs × 3 gaps of 25 ms.
        assert_eq!(batch.statistics["icl_ms"].count, 9);
        // Every run's gap is 40 ms.
        assert_eq!(batch.statistics["gap.first_token_ms"].p50, 40.0);
        // No run has audio, so there is no audio row at all.
        assert!(!batch.statistics.contains_key("ttfa_ms"));
        assert_eq!(
            batch.outcomes,
            OutcomeCounts {
                total: 3,
                completed: 3,
                ..OutcomeCounts::default()
            }
        );
        assert_eq!(
            batch.goodput.as_ref().map(|g| (g.good, g.total)),
            Some((2, 3))
        );

        let json = serde_json::to_string(&batch).unwrap();
        match ReportFile::from_json(&json).unwrap() {
            ReportFile::Batch(back) => assert_eq!(back, batch),
            other => panic!("read back as {other:?}"),
        }
    }

    #[test]
    fn unreadable_files_are_clear_errors() {
        let err = |text: &str| ReportFile::from_json(text).unwrap_err().to_string();
        assert!(err("{").starts_with("not a ttfx report: "), "{}", err("{"));
        assert_eq!(
            err(r#"{"kind":"run"}"#),
            "not a ttfx report: no schema_version"
        );
        assert_eq!(
            err(r#"{"schema_version":4,"kind":"run"}"#),
            "unsupported schema_version 4 (this ttfx reads versions 1 to 3)"
        );
        assert_eq!(
            err(r#"{"schema_version":"1"}"#),
            "unsupported schema_version \"1\" (this ttfx reads versions 1 to 3)"
        );
        assert_eq!(
            err(r#"{"schema_version":1,"kind":"trace"}"#),
            "unknown report kind \"trace\" (expected \"run\" or \"batch\")"
        );
        // Right version, wrong shape: serde names the missing field.
        assert!(err(r#"{"schema_version":1,"kind":"run"}"#).contains("missing field"));

        // A run whose timeline is impossible is refused with its index.
        let mut bad = RunReport::new(run(300.0));
        bad.run.timeline.milestones.set(Milestone::LastToken, 10.0);
        let json = serde_json::to_string(&bad).unwrap();
        assert_eq!(
            err(&json),
            "run 0: last_token is recorded before first_token"
        );
    }

    #[test]
    fn the_documented_example_is_a_valid_report_with_true_metrics() {
        let doc = include_str!("../../../docs/report.md");
        let json = doc
            .split("```json\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("docs/report.md has a ```json example");
        let ReportFile::Run(report) = ReportFile::from_json(json).unwrap() else {
            panic!("the example is a run report");
        };
        // The documented metrics are exactly what this code derives from the timeline.
        assert_eq!(
            report.run.metrics,
            RequestMetrics::compute(&report.run.timeline).unwrap()
        );
    }
}

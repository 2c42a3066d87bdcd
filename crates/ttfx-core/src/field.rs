//! The field report: what a production page's probe sends to a collector for one run.
//!
//! A run report holds every chunk and can be hundreds of KiB; `navigator.sendBeacon`
//! takes 64 KiB per call (Chromium), and a collector stores millions of runs. So a
//! beacon carries a [`FieldReport`]: the dimensions a team slices by, the milestones,
//! the per-request metrics (the [`SCALARS`] by name), the client/server gaps, and the
//! chunk series merged into at most [`FIELD_BINS`] bins. Its JSON is at most
//! [`MAX_FIELD_REPORT_BYTES`] whatever the stream's length: strings are cut to fixed
//! lengths and every list is bounded.
//!
//! It never holds a header value, a query string or a URL's fragment: `page_path` and
//! `target` are paths without them (checked again by [`FieldReport::validate`], which a
//! collector runs on every report it is sent).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Milestone;
use crate::metrics::{Buffered, BufferedVerdict, Outcome, RequestMetrics, SCALAR_NAMES, SCALARS};
use crate::report::Run;
use crate::series::{ChunkBin, ChunkSummary};
use crate::timeline::{
    Environment, Failure, FailureClass, Milestones, PaintMethod, RequestInfo, Timeline,
    TimelineError, Visibility,
};

/// The field report's own schema version (independent of the run report's).
pub const FIELD_SCHEMA_VERSION: u32 = 1;
/// Most bins of the chunk series.
pub const FIELD_BINS: usize = 32;
/// Longest JSON of one field report. The parts' own bounds add up to about 9 KiB
/// (17 milestones, 18 metrics, 17 gaps, 32 bins, six cut strings); 16 KiB leaves room
/// for optional fields a later version adds, and four reports still fit one beacon.
pub const MAX_FIELD_REPORT_BYTES: usize = 16 * 1024;
/// Longest `label`, `id`, `engine_version` (characters).
pub const SHORT_TEXT: usize = 128;
/// Longest `target` and `page_path` (characters).
pub const PATH_TEXT: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    Field,
}

/// One run, as a beacon carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldReport {
    pub schema_version: u32,
    pub kind: FieldKind,
    pub generator: String,
    pub run: FieldRun,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldRun {
    /// The run's id (its `x-request-id`), when the page set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The probe's label (what the team named this measurement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The endpoint measured: origin and path, without query or fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The page's path (`location.pathname`), without query or fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<FailureClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paint_method: Option<PaintMethod>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_origin_isolated: Option<bool>,
    /// The page was hidden at some time during the run (its timers were throttled).
    pub hidden: bool,
    /// The share of runs this page sends (0 < rate ≤ 1): a collector weights each run
    /// by its inverse.
    pub sample_rate: f64,
    /// Client wall clock at `request_start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_start_unix_ms: Option<f64>,
    /// The stream's dialect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    /// Milestone name → ms since `request_start`.
    pub milestones: Milestones,
    /// Metric name ([`SCALARS`]) → value; absent metrics are left out.
    #[serde(default)]
    pub metrics: BTreeMap<String, f64>,
    /// Client milestone minus the server's report of it, by milestone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gaps: BTreeMap<String, f64>,
    /// The chunk series: totals and at most [`FIELD_BINS`] bins.
    pub chunks: FieldChunks,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FieldChunks {
    pub count: u64,
    pub bytes: u64,
    pub visible_tokens: u64,
    pub reasoning_tokens: u64,
    /// Consecutive chunks merged in windows of about equal chunk count, in order.
    #[serde(default)]
    pub bins: Vec<ChunkBin>,
}

/// What the page knows and the run report does not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldContext {
    /// `location.pathname`; a query or fragment is cut off here.
    pub page_path: Option<String>,
    pub sample_rate: f64,
}

/// Why a field report was refused; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError(pub String);

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FieldError {}

/// `text` without its query or fragment, cut to `max` characters.
fn path_only(text: &str, max: usize) -> String {
    let path = text.split(['?', '#']).next().unwrap_or_default();
    cut(path, max)
}

fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

impl FieldReport {
    /// The field report of a finished run.
    pub fn of_run(run: &Run, context: &FieldContext) -> FieldReport {
        let t = &run.timeline;
        let m = &run.metrics;
        let metrics = SCALARS
            .iter()
            .filter_map(|s| (s.value)(m).map(|v| (s.name.to_owned(), v)))
            .filter(|(_, v)| v.is_finite())
            .collect();
        let gaps = m
            .gaps
            .iter()
            .map(|g| (g.milestone.as_str().to_owned(), g.gap_ms))
            .filter(|(_, v)| v.is_finite())
            .collect();
        FieldReport {
            schema_version: FIELD_SCHEMA_VERSION,
            kind: FieldKind::Field,
            generator: crate::report::GENERATOR.to_owned(),
            run: FieldRun {
                id: run.id.as_deref().map(|s| cut(s, SHORT_TEXT)),
                label: run.target.as_deref().map(|s| cut(s, SHORT_TEXT)),
                target: t.request.url.as_deref().map(|u| path_only(u, PATH_TEXT)),
                page_path: context
                    .page_path
                    .as_deref()
                    .map(|p| path_only(p, PATH_TEXT)),
                engine: t.environment.engine.as_deref().map(|s| cut(s, 32)),
                engine_version: t
                    .environment
                    .engine_version
                    .as_deref()
                    .map(|s| cut(s, SHORT_TEXT)),
                outcome: m.outcome,
                failure_class: t.failure.as_ref().map(|f| f.class),
                http_status: t.request.status,
                paint_method: t.paint_method,
                cross_origin_isolated: t.environment.cross_origin_isolated,
                hidden: t
                    .environment
                    .visibility_changes
                    .iter()
                    .any(|c| c.state == Visibility::Hidden),
                sample_rate: context.sample_rate,
                request_start_unix_ms: t.request_start_unix_ms,
                dialect: t.request.dialect.as_deref().map(|s| cut(s, 32)),
                milestones: t.milestones.clone(),
                metrics,
                gaps,
                chunks: chunks(t),
            },
        }
    }

    /// Checks a report a collector was sent: the schema version, the kind, every
    /// milestone's time and order (the timeline's own rules), metric names and values,
    /// the sample rate, and that no path carries a query. The error names the field.
    pub fn validate(&self) -> Result<(), FieldError> {
        let bad = |s: String| Err(FieldError(s));
        if self.schema_version != FIELD_SCHEMA_VERSION {
            return bad(format!(
                "unsupported field report schema_version {} (this collector reads {FIELD_SCHEMA_VERSION})",
                self.schema_version
            ));
        }
        let r = &self.run;
        if !(r.sample_rate > 0.0 && r.sample_rate <= 1.0) {
            return bad(format!(
                "run.sample_rate {}: expected 0 < rate ≤ 1",
                r.sample_rate
            ));
        }
        let timeline = Timeline {
            milestones: r.milestones.clone(),
            ..Timeline::default()
        };
        timeline
            .validate()
            .map_err(|e| FieldError(format!("run.milestones: {e}")))?;
        for (name, value) in &r.metrics {
            if !SCALAR_NAMES.contains(&name.as_str()) {
                return bad(format!("run.metrics.{name}: unknown metric"));
            }
            if !value.is_finite() {
                return bad(format!("run.metrics.{name}: not a finite number"));
            }
        }
        for (name, value) in &r.gaps {
            if name.parse::<Milestone>().is_err() {
                return bad(format!("run.gaps.{name}: unknown milestone"));
            }
            if !value.is_finite() {
                return bad(format!("run.gaps.{name}: not a finite number"));
            }
        }
        for (field, value) in [("target", &r.target), ("page_path", &r.page_path)] {
            if let Some(v) = value {
                if v.contains(['?', '#']) {
                    return bad(format!("run.{field}: a query or fragment is not accepted"));
                }
                if v.chars().count() > PATH_TEXT {
                    return bad(format!("run.{field}: longer than {PATH_TEXT} characters"));
                }
            }
        }
        for (field, value) in [("id", &r.id), ("label", &r.label)] {
            if value
                .as_ref()
                .is_some_and(|v| v.chars().count() > SHORT_TEXT)
            {
                return bad(format!("run.{field}: longer than {SHORT_TEXT} characters"));
            }
        }
        if r.chunks.bins.len() > FIELD_BINS {
            return bad(format!("run.chunks.bins: more than {FIELD_BINS}"));
        }
        for (i, b) in r.chunks.bins.iter().enumerate() {
            let ok = b.from_ms.is_finite() && b.to_ms.is_finite() && 0.0 <= b.from_ms;
            if !ok || b.from_ms > b.to_ms {
                return bad(format!("run.chunks.bins[{i}]: impossible times"));
            }
        }
        Ok(())
    }
}

impl FieldReport {
    /// The run a waterfall can draw from this report (the lab page's Field view opens a
    /// collector's slowest runs with it).
    ///
    /// The timeline holds what the report holds: the milestones, the request (its
    /// `target` as the URL, status, dialect), the engine, the paint method and the
    /// failure's class. A field report has no chunk one by one, so `chunks` is empty and
    /// the series is a `chunk_summary` with the report's bins and totals: a summary of
    /// the stream, not every chunk. The run's `target` is the report's `label`.
    ///
    /// The metrics are computed from that timeline, so those read from milestones
    /// (`ttft_ms`, `e2e_ms`, …) are the page's; those that need the chunks one by one or
    /// the server's side are absent (`stalls`, `icl_ms`, `gaps`) or estimated from the
    /// bins' token counts (`output_tokens`, `tpot_ms`). The buffered verdict is
    /// `undetermined` (the burst window is not in a field report) and the outcome is the
    /// report's. The page's own values of every metric, and its gaps, stay in
    /// `self.run.metrics` and `self.run.gaps`.
    pub fn to_run(&self) -> Result<Run, TimelineError> {
        let r = &self.run;
        let c = &r.chunks;
        let chunk_summary = (c.count > 0 || !c.bins.is_empty()).then(|| ChunkSummary {
            chunks: c.count,
            bytes: c.bytes,
            events: c.bins.iter().map(|b| b.events).sum(),
            visible_tokens: c.visible_tokens,
            reasoning_tokens: c.reasoning_tokens,
            bins: c.bins.clone(),
            ..ChunkSummary::default()
        });
        let timeline = Timeline {
            milestones: r.milestones.clone(),
            chunk_summary,
            paint_method: r.paint_method,
            failure: r.failure_class.map(|class| Failure {
                class,
                http_status: r.http_status.filter(|_| class == FailureClass::HttpStatus),
                detail: None,
            }),
            environment: Environment {
                engine: r.engine.clone(),
                engine_version: r.engine_version.clone(),
                cross_origin_isolated: r.cross_origin_isolated,
                ..Environment::default()
            },
            request: RequestInfo {
                url: r.target.clone(),
                status: r.http_status,
                dialect: r.dialect.clone(),
                ..RequestInfo::default()
            },
            request_start_unix_ms: r.request_start_unix_ms,
            ..Timeline::default()
        };
        let mut metrics = RequestMetrics::compute(&timeline)?;
        metrics.outcome = r.outcome;
        metrics.buffered = Buffered {
            verdict: BufferedVerdict::Undetermined,
            visible_tokens: c.visible_tokens,
            burst_share: None,
        };
        metrics.notes.push(format!(
            "rebuilt from a field report: the chunk series is its {} bin(s) of {} chunk(s), \
             not every chunk",
            c.bins.len(),
            c.count
        ));
        if r.hidden {
            metrics.notes.push(
                "page was hidden at some time during the run (the field report does not say \
                 when)"
                    .into(),
            );
        }
        Ok(Run {
            id: r.id.clone(),
            target: r.label.clone(),
            timeline,
            metrics,
        })
    }
}

/// Every chunk of the timeline (kept ones and summarized bins) merged into at most
/// [`FIELD_BINS`] bins of about equal chunk count.
fn chunks(t: &Timeline) -> FieldChunks {
    let units: Vec<ChunkBin> = t
        .chunks
        .iter()
        .map(ChunkBin::of)
        .chain(t.chunk_summary.iter().flat_map(|s| s.bins.iter().copied()))
        .collect();
    let total: u64 = units.iter().map(|u| u.chunks).sum();
    let per_bin = total.div_ceil(FIELD_BINS as u64).max(1);
    let mut bins: Vec<ChunkBin> = Vec::new();
    for unit in units {
        match bins.last_mut() {
            Some(last) if last.chunks < per_bin => last.add(&unit),
            _ => bins.push(unit),
        }
    }
    // A summarized bin can be larger than `per_bin`: merge neighbours until it fits.
    while bins.len() > FIELD_BINS {
        let mut merged = Vec::with_capacity(bins.len().div_ceil(2));
        for pair in bins.chunks(2) {
            let mut b = pair[0];
            if let Some(next) = pair.get(1) {
                b.add(next);
            }
            merged.push(b);
        }
        bins = merged;
    }
    FieldChunks {
        count: total,
        bytes: bins.iter().map(|b| b.bytes).sum(),
        visible_tokens: bins.iter().map(|b| b.visible_tokens).sum(),
        reasoning_tokens: bins.iter().map(|b| b.reasoning_tokens).sum(),
        bins,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recorder;
    use crate::decode::Limits;
    use crate::timeline::{Visibility, VisibilityChange};

    fn sse(text: &str) -> String {
        format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{text:?}}}}}]}}\n\n")
    }

    fn long_run(chunks: usize) -> Run {
        let mut r = Recorder::new(None, Limits::DEFAULT);
        r.headers(100.0, 200, Some("text/event-stream"), &[]);
        for i in 0..chunks {
            r.chunk(120.0 + i as f64 * 20.0, sse("word ").as_bytes());
        }
        r.end(121.0 + chunks as f64 * 20.0);
        let mut t = r.finish();
        t.request.url = Some("https://api.example.com/v1/chat/completions".into());
        t.environment.engine = Some("chromium".into());
        t.environment.visibility_changes.push(VisibilityChange {
            at_ms: 500.0,
            state: Visibility::Hidden,
        });
        Run::new(Some("req-1".into()), Some("prod-chat".into()), t).unwrap()
    }

    #[test]
    fn a_two_thousand_chunk_run_fits_the_bound_with_its_totals_exact() {
        let run = long_run(2_000);
        let context = FieldContext {
            page_path: Some("/chat/42?token=secret#frag".into()),
            sample_rate: 0.25,
        };
        let field = FieldReport::of_run(&run, &context);
        let json = serde_json::to_string(&field).unwrap();
        assert!(json.len() <= MAX_FIELD_REPORT_BYTES, "{} bytes", json.len());
        assert!(!json.contains("secret") && !json.contains("frag"), "{json}");
        let r = &field.run;
        assert_eq!(r.page_path.as_deref(), Some("/chat/42"));
        assert_eq!(r.label.as_deref(), Some("prod-chat"));
        assert!(r.hidden);
        assert_eq!(r.chunks.count, 2_000);
        assert_eq!(r.chunks.visible_tokens, 2_000);
        assert!(r.chunks.bins.len() <= FIELD_BINS);
        assert_eq!(r.metrics["ttft_ms"], run.metrics.ttft_ms.unwrap().value);
        field.validate().unwrap();
        // What a collector reads back is the same report.
        let back: FieldReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, field);
    }

    #[test]
    fn a_field_report_becomes_a_run_with_its_milestones_and_bins() {
        let original = long_run(2_000);
        let field = FieldReport::of_run(
            &original,
            &FieldContext {
                page_path: Some("/chat".into()),
                sample_rate: 0.5,
            },
        );
        // Through JSON, as a collector's /field/slowest hands it back.
        let field: FieldReport =
            serde_json::from_str(&serde_json::to_string(&field).unwrap()).unwrap();
        let run = field.to_run().unwrap();
        let t = &run.timeline;
        assert_eq!(t.milestones, original.timeline.milestones);
        assert_eq!(run.id.as_deref(), Some("req-1"));
        assert_eq!(run.target.as_deref(), Some("prod-chat"));
        assert_eq!(
            t.request.url.as_deref(),
            Some("https://api.example.com/v1/chat/completions")
        );
        assert_eq!(t.environment.engine.as_deref(), Some("chromium"));
        // No chunk one by one: the report's bins and totals as the summary.
        assert!(t.chunks.is_empty());
        let summary = t.chunk_summary.as_ref().unwrap();
        assert_eq!(summary.bins, field.run.chunks.bins);
        assert!(!summary.bins.is_empty() && summary.bins.len() <= FIELD_BINS);
        assert_eq!(summary.chunks, 2_000);
        assert_eq!(summary.visible_tokens, 2_000);
        assert_eq!(
            summary.bytes,
            original
                .timeline
                .chunks
                .iter()
                .map(|c| c.bytes)
                .sum::<u64>()
        );
        assert_eq!(
            summary.bins.iter().map(|b| b.chunks).sum::<u64>(),
            summary.chunks
        );
        // Milestone metrics are the page's; what needs every chunk is not claimed.
        let m = &run.metrics;
        assert_eq!(m.outcome, original.metrics.outcome);
        assert_eq!(m.ttft_ms, original.metrics.ttft_ms);
        assert_eq!(m.e2e_ms, original.metrics.e2e_ms);
        assert_eq!(m.buffered.verdict, BufferedVerdict::Undetermined);
        assert_eq!(m.buffered.visible_tokens, 2_000);
        assert!(m.stalls.is_none() && m.icl_ms.is_empty() && m.gaps.is_empty());
        assert!(
            m.notes.iter().any(|n| n.contains("not every chunk")),
            "{:?}",
            m.notes
        );
        assert!(
            m.notes.iter().any(|n| n.contains("hidden")),
            "{:?}",
            m.notes
        );

        // A failure keeps its class and status; the outcome is the report's.
        let mut failed = field.clone();
        failed.run.outcome = Outcome::Failed;
        failed.run.failure_class = Some(FailureClass::HttpStatus);
        failed.run.http_status = Some(503);
        failed.run.chunks = FieldChunks::default();
        let run = failed.to_run().unwrap();
        assert_eq!(run.metrics.outcome, Outcome::Failed);
        let failure = run.timeline.failure.unwrap();
        assert_eq!(
            (failure.class, failure.http_status),
            (FailureClass::HttpStatus, Some(503))
        );
        assert!(run.timeline.chunk_summary.is_none());
    }

    #[test]
    fn impossible_or_foreign_reports_are_refused_naming_the_field() {
        let good = FieldReport::of_run(
            &long_run(5),
            &FieldContext {
                page_path: Some("/".into()),
                sample_rate: 1.0,
            },
        );
        type Break = fn(&mut FieldReport);
        let cases: [(&str, Break); 6] = [
            ("schema_version 9", |f| f.schema_version = 9),
            ("run.sample_rate 0", |f| f.run.sample_rate = 0.0),
            ("run.metrics.made_up_ms", |f| {
                f.run.metrics.insert("made_up_ms".into(), 1.0);
            }),
            ("run.page_path", |f| f.run.page_path = Some("/a?k=v".into())),
            ("run.milestones", |f| {
                f.run.milestones.set(Milestone::Done, -5.0);
            }),
            ("run.chunks.bins[0]", |f| f.run.chunks.bins[0].to_ms = -1.0),
        ];
        for (want, break_it) in cases {
            let mut f = good.clone();
            break_it(&mut f);
            let e = f.validate().unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        good.validate().unwrap();
    }
}

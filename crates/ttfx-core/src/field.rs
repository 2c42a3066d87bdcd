//! The field report: what a production page's probe sends to a collector for one run.
//!
//! A run report holds every chunk and can be hundreds of KiB; `navigator.sendBeacon`
//! takes 64 KiB per call (Chromium), and a collector stores millions of runs. So a
//! beacon carries a [`FieldReport`]: the dimensions a team slices by, the milestones,
//! the per-request metrics (the [`SCALARS`] by name), the client/server gaps, and the
//! chunk series merged into at most [`FIELD_BINS`] bins. Its JSON is at most
//! [`MAX_FIELD_REPORT_BYTES`] whatever the stream and the page's strings: each string is
//! cut to a fixed number of bytes of its JSON text (escapes counted), and every list is
//! bounded. A report [`FieldReport::validate`] accepts is within the bound (tested on the
//! largest one the rules allow: 12,502 bytes).
//!
//! It never holds a header value, a query string or a URL's fragment: `page_path` and
//! `target` are paths without them (checked again by [`FieldReport::validate`], which a
//! collector runs on every report it is sent).

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Milestone;
use crate::chunk_summary::{ChunkBin, ChunkSummary};
use crate::metrics::{Buffered, BufferedVerdict, Outcome, RequestMetrics, SCALAR_NAMES, SCALARS};
use crate::recorder::url_without_query;
use crate::report::Run;
use crate::timeline::{
    Chunk, Environment, Failure, FailureClass, Milestones, PaintMethod, RequestInfo, Timeline,
    TimelineError, Visibility,
};

/// The field report's own schema version (independent of the run report's).
pub const FIELD_SCHEMA_VERSION: u32 = 1;
/// Most bins of the chunk series.
pub const FIELD_BINS: usize = 32;
/// Longest JSON of one field report. The largest report the rules allow is 12,502
/// bytes (21 milestones, 27 metrics, 21 gaps and 32 bins with every number at its
/// longest, seven strings at their limits); 16 KiB leaves room for optional fields a
/// later version adds, and four reports in flight still fit a page's 64 KiB keepalive
/// budget.
pub const MAX_FIELD_REPORT_BYTES: usize = 16 * 1024;
/// Longest `label`, `id`, `engine_version`: bytes of JSON text between the quotes.
pub const SHORT_TEXT: usize = 128;
/// Longest `target` and `page_path`: bytes of JSON text between the quotes.
pub const PATH_TEXT: usize = 512;
/// Longest `engine` and `dialect`: bytes of JSON text between the quotes.
pub const NAME_TEXT: usize = 32;

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
    /// How the probe received the stream (`fetch`, `eventsource`, `xhr`, `websocket`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Milestone name → ms since `request_start`.
    pub milestones: Milestones,
    /// Metric name ([`SCALARS`]) → value, in [`SCALARS`]' order; absent metrics are left
    /// out.
    #[serde(default)]
    pub metrics: NamedValues,
    /// Client milestone minus the server's report of it, by milestone.
    #[serde(default, skip_serializing_if = "NamedValues::is_empty")]
    pub gaps: NamedValues,
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

/// Numbers by name, in the order they were made: a JSON object. A list rather than a
/// `BTreeMap`: collecting into a map linked std's stable sort and the B-tree's bulk
/// build into the analysis wasm (about 2.4 KB gzip, measured), for at most 18 entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamedValues(pub Vec<(String, f64)>);

impl NamedValues {
    /// The value named `name`, the first if a (foreign) report repeats it.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(n, v)| (n.as_str(), *v))
    }
}

impl FromIterator<(String, f64)> for NamedValues {
    fn from_iter<I: IntoIterator<Item = (String, f64)>>(iter: I) -> Self {
        NamedValues(iter.into_iter().collect())
    }
}

impl Serialize for NamedValues {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(n, v)| (n, v)))
    }
}

impl<'de> Deserialize<'de> for NamedValues {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = NamedValues;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of numbers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NamedValues, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, f64>()? {
                    entries.push(entry);
                }
                Ok(NamedValues(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
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

/// Bytes `c` takes in a JSON string, as serde_json (and the analysis) write it.
fn json_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        '\0'..='\u{1f}' => 6,
        _ => c.len_utf8(),
    }
}

/// Bytes `text` takes in a JSON string, between the quotes.
pub fn json_text_len(text: &str) -> usize {
    text.chars().map(json_len).sum()
}

/// `text`, whole characters of it while its JSON takes at most `max` bytes; `path`:
/// without its query or fragment first. (Written for the analysis wasm's size: loops and
/// one helper rather than iterator chains and a closure per field.)
fn cut(text: &Option<String>, max: usize, path: bool) -> Option<String> {
    let text = text.as_deref()?;
    let text = if path { url_without_query(text) } else { text };
    let mut used = 0;
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        used += json_len(c);
        if used > max {
            end = i;
            break;
        }
    }
    Some(text[..end].to_owned())
}

impl FieldReport {
    /// The field report of a finished run.
    pub fn of_run(run: &Run, context: &FieldContext) -> FieldReport {
        let t = &run.timeline;
        let m = &run.metrics;
        let env = &t.environment;
        let mut metrics = NamedValues::default();
        for s in &SCALARS {
            if let Some(v) = (s.value)(m).filter(|v| v.is_finite()) {
                metrics.0.push((s.name.to_owned(), v));
            }
        }
        let mut gaps = NamedValues::default();
        for g in &m.gaps {
            if g.gap_ms.is_finite() {
                gaps.0.push((g.milestone.as_str().to_owned(), g.gap_ms));
            }
        }
        FieldReport {
            schema_version: FIELD_SCHEMA_VERSION,
            kind: FieldKind::Field,
            generator: crate::report::GENERATOR.to_owned(),
            run: FieldRun {
                id: cut(&run.id, SHORT_TEXT, false),
                label: cut(&run.target, SHORT_TEXT, false),
                target: cut(&t.request.url, PATH_TEXT, true),
                page_path: cut(&context.page_path, PATH_TEXT, true),
                engine: cut(&env.engine, NAME_TEXT, false),
                engine_version: cut(&env.engine_version, SHORT_TEXT, false),
                outcome: m.outcome,
                failure_class: t.failure.as_ref().map(|f| f.class),
                http_status: t.request.status,
                paint_method: t.paint_method,
                cross_origin_isolated: env.cross_origin_isolated,
                hidden: env
                    .visibility_changes
                    .iter()
                    .any(|c| c.state == Visibility::Hidden),
                sample_rate: context.sample_rate,
                request_start_unix_ms: t.request_start_unix_ms,
                dialect: cut(&t.request.dialect, NAME_TEXT, false),
                transport: cut(&t.request.transport, NAME_TEXT, false),
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
        for (field, values) in [("metrics", &r.metrics), ("gaps", &r.gaps)] {
            for (i, (name, value)) in values.iter().enumerate() {
                let known = if field == "metrics" {
                    SCALAR_NAMES.contains(&name)
                } else {
                    name.parse::<Milestone>().is_ok()
                };
                if !known {
                    let what = if field == "metrics" {
                        "metric"
                    } else {
                        "milestone"
                    };
                    return bad(format!("run.{field}.{name}: unknown {what}"));
                }
                if !value.is_finite() {
                    return bad(format!("run.{field}.{name}: not a finite number"));
                }
                if values.iter().take(i).any(|(earlier, _)| earlier == name) {
                    return bad(format!("run.{field}.{name}: given twice"));
                }
            }
        }
        for (field, value) in [("target", &r.target), ("page_path", &r.page_path)] {
            if value.as_ref().is_some_and(|v| v.contains(['?', '#'])) {
                return bad(format!("run.{field}: a query or fragment is not accepted"));
            }
        }
        let strings = [
            ("id", &r.id, SHORT_TEXT),
            ("label", &r.label, SHORT_TEXT),
            ("target", &r.target, PATH_TEXT),
            ("page_path", &r.page_path, PATH_TEXT),
            ("engine", &r.engine, NAME_TEXT),
            ("engine_version", &r.engine_version, SHORT_TEXT),
            ("dialect", &r.dialect, NAME_TEXT),
            ("transport", &r.transport, NAME_TEXT),
        ];
        for (field, value, max) in strings {
            if value.as_deref().is_some_and(|v| json_text_len(v) > max) {
                return bad(format!("run.{field}: longer than {max} bytes of JSON"));
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
                transport: r.transport.clone(),
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
    let mut units: Vec<ChunkBin> = t.chunks.iter().map(Chunk::as_bin).collect();
    if let Some(summary) = &t.chunk_summary {
        units.extend_from_slice(&summary.bins);
    }
    let mut all = ChunkBin::default();
    for unit in &units {
        all.add(unit);
    }
    let per_bin = all.chunks.div_ceil(FIELD_BINS as u64).max(1);
    let mut bins: Vec<ChunkBin> = Vec::new();
    for unit in &units {
        match bins.last_mut() {
            Some(last) if last.chunks < per_bin => last.add(unit),
            _ => bins.push(*unit),
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
        count: all.chunks,
        bytes: all.bytes,
        visible_tokens: all.visible_tokens,
        reasoning_tokens: all.reasoning_tokens,
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
        assert_eq!(
            r.metrics.get("ttft_ms"),
            Some(run.metrics.ttft_ms.unwrap().value)
        );
        field.validate().unwrap();
        // What a collector reads back is the same report.
        let back: FieldReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, field);
    }

    /// docs/report.md's field report example is what this code makes of its run example.
    #[test]
    fn the_documented_example_is_the_field_report_of_the_documented_run() {
        let doc = include_str!("../../../docs/report.md");
        let block = |text: &str| {
            text.split("```json\n")
                .nth(1)
                .and_then(|rest| rest.split("```").next())
                .map(str::to_owned)
        };
        let run = block(doc).expect("docs/report.md has a run example");
        let field = doc
            .split_once("## Field report")
            .and_then(|(_, rest)| block(rest))
            .expect("docs/report.md has a field report example");
        let crate::ReportFile::Run(report) = crate::ReportFile::from_json(&run).unwrap() else {
            panic!("the first example is a run report");
        };
        let context = FieldContext {
            page_path: Some("/chat/7?share=sk-abc#top".into()),
            sample_rate: 0.1,
        };
        let made = FieldReport::of_run(&report.run, &context);
        let documented: FieldReport = serde_json::from_str(&field).unwrap();
        assert_eq!(documented, made);
        documented.validate().unwrap();
        assert_eq!(serde_json::to_string(&made).unwrap().len(), 1_691);
    }

    #[test]
    fn strings_are_cut_to_bytes_of_json_on_character_boundaries() {
        let cut_to = |text: &str, max| cut(&Some(text.to_owned()), max, false).unwrap();
        assert_eq!(cut_to(&"é".repeat(100), 5), "éé");
        assert_eq!(cut_to(&"\"".repeat(100), 5), "\"\"");
        assert_eq!(cut_to("a\u{1}b", 6), "a");
        assert_eq!(cut_to("a\u{1}b", 7), "a\u{1}");
        assert_eq!(cut_to("😀😀", 7), "😀");
        assert_eq!(cut_to("short", 128), "short");
        let path = cut(&Some("/p\u{1}?q=\u{1}".into()), PATH_TEXT, true).unwrap();
        assert_eq!(path, "/p\u{1}");
        for text in ["é😀\"\\\n\u{1}\u{7f}x", "plain"] {
            assert_eq!(
                json_text_len(text) + 2,
                serde_json::to_string(text).unwrap().len(),
                "{text:?}"
            );
        }
    }

    /// The bound holds for the largest report the rules allow, not only for typical
    /// ones: every string at its limit in the characters JSON writes longest, every
    /// number at its longest, every milestone, metric and gap present, every bin full.
    #[test]
    fn the_largest_report_the_rules_allow_fits_the_bound() {
        let longest = -2.2250738585072014e-308_f64; // 24 characters
        // `\u{1}` is written `\u0001`: the most JSON per character. A string at its limit
        // is as many of them as fit, then plain characters up to the limit.
        let text = |n: usize| Some("\u{1}".repeat(n / 6) + &"x".repeat(n % 6));
        let mut milestones = Milestones::default();
        for m in Milestone::ALL {
            milestones.set(m, longest);
        }
        let bin = ChunkBin {
            from_ms: longest,
            to_ms: longest,
            chunks: u64::MAX,
            bytes: u64::MAX,
            events: u64::MAX,
            visible_tokens: u64::MAX,
            reasoning_tokens: u64::MAX,
        };
        let field = FieldReport {
            schema_version: u32::MAX,
            kind: FieldKind::Field,
            generator: crate::report::GENERATOR.to_owned(),
            run: FieldRun {
                id: text(SHORT_TEXT),
                label: text(SHORT_TEXT),
                target: text(PATH_TEXT),
                page_path: text(PATH_TEXT),
                engine: text(NAME_TEXT),
                engine_version: text(SHORT_TEXT),
                outcome: Outcome::Incomplete,
                failure_class: Some(FailureClass::HttpStatus),
                http_status: Some(u16::MAX),
                paint_method: Some(PaintMethod::InteractionContentfulPaint),
                cross_origin_isolated: Some(false),
                hidden: false,
                sample_rate: 1.2345678901234567e-300,
                request_start_unix_ms: Some(longest),
                dialect: text(NAME_TEXT),
                transport: text(NAME_TEXT),
                milestones,
                metrics: SCALAR_NAMES
                    .iter()
                    .map(|n| ((*n).to_owned(), longest))
                    .collect(),
                gaps: Milestone::ALL
                    .iter()
                    .map(|m| (m.as_str().to_owned(), longest))
                    .collect(),
                chunks: FieldChunks {
                    count: u64::MAX,
                    bytes: u64::MAX,
                    visible_tokens: u64::MAX,
                    reasoning_tokens: u64::MAX,
                    bins: vec![bin; FIELD_BINS],
                },
            },
        };
        // Every string at its limit: one more byte of JSON would not be accepted.
        for (value, max) in [
            (&field.run.id, SHORT_TEXT),
            (&field.run.page_path, PATH_TEXT),
        ] {
            let len = json_text_len(value.as_deref().unwrap());
            assert_eq!(len, max);
        }
        let json = serde_json::to_string(&field).unwrap();
        println!("largest field report: {} bytes", json.len());
        assert!(json.len() <= MAX_FIELD_REPORT_BYTES, "{} bytes", json.len());
    }

    #[test]
    fn a_field_report_becomes_a_run_with_its_milestones_and_bins() {
        let mut original = long_run(2_000);
        original.timeline.request.transport = Some("eventsource".into());
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
        assert_eq!(field.run.transport.as_deref(), Some("eventsource"));
        assert_eq!(t.request.transport.as_deref(), Some("eventsource"));
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
        let cases: [(&str, Break); 10] = [
            ("schema_version 9", |f| f.schema_version = 9),
            ("run.sample_rate 0", |f| f.run.sample_rate = 0.0),
            ("run.metrics.made_up_ms", |f| {
                f.run.metrics.0.push(("made_up_ms".into(), 1.0));
            }),
            ("run.metrics.ttft_ms: given twice", |f| {
                f.run.metrics.0.push(("ttft_ms".into(), 1.0));
            }),
            ("run.gaps.first_glance: unknown milestone", |f| {
                f.run.gaps.0.push(("first_glance".into(), 1.0));
            }),
            ("run.page_path", |f| f.run.page_path = Some("/a?k=v".into())),
            ("run.label: longer than 128 bytes of JSON", |f| {
                f.run.label = Some("\"".repeat(65));
            }),
            ("run.engine: longer than 32", |f| {
                f.run.engine = Some("x".repeat(33))
            }),
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

//! The probe's analysis as its own wasm module, for a module Web Worker (`worker.js`):
//! what the page observed goes in, message by message, and the run report comes out.
//!
//! The page keeps only clocks and bytes; everything that decodes, derives milestones,
//! computes metrics and writes the report is here, in ttfx-core, loaded after the page's
//! first measured request and run off its main thread. Every milestone keeps the arrival
//! time the page took, so where and when this runs changes no figure.
//!
//! One `Analysis` holds the runs in progress, keyed by the page's run number; the calls
//! mirror `ttfx_core::Recorder`. A run the page will beacon also gets its field report
//! (`ttfx_core::field`, docs/report.md), made here from the finished run: the page never
//! builds one itself.
//!
//! It depends on ttfx-core only (and the wasm-bindgen family): never on web-sys (a
//! Worker has no DOM), the probe, or any native crate; the runner links it natively to
//! replay inject mode's calls.

use ttfx_core::Milestone;
use ttfx_core::decode::dialect::UnknownDialect;
use ttfx_core::decode::{DialectKind, Limits};
use ttfx_core::field::{FieldContext, FieldReport};
use ttfx_core::milestone::UnknownMilestone;
use ttfx_core::recorder::Recorder;
use ttfx_core::report::RunReport;
use ttfx_core::server_timing::{ServerTiming, TimingSource};
use ttfx_core::target::url_for_report;
use ttfx_core::timeline::{
    AnalysisSite, Environment, Milestones, PaintMethod, RequestInfo, ResourceTiming, Timeline,
    TimelineError, Visibility, VisibilityChange,
};
use ttfx_core::voice_result::VoiceResult;
use wasm_bindgen::prelude::*;

mod fault;
mod prime;
#[cfg(not(target_family = "wasm"))]
pub mod replay;
mod report_json;
mod staged;
#[cfg(feature = "voice")]
mod voice;
mod warm_up;

pub use fault::last_panic;

/// The worker's allocator (feature `worker`, which the package's worker build turns on):
/// 2.6 KB gzip less than dlmalloc, Rust's default (measured). Builds that link this crate
/// into something else (the voice probe) keep their own allocator.
#[cfg(all(
    feature = "worker",
    not(target_feature = "atomics"),
    target_family = "wasm"
))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// What the page observed itself, beside the stream.
#[derive(Debug, Default)]
pub struct PageObservations {
    pub id: Option<String>,
    pub label: Option<String>,
    pub request: RequestInfo,
    /// `request_start` on the wall clock (`performance.timeOrigin` + its page time).
    pub request_start_unix_ms: Option<f64>,
    /// Milestones only the page sees (`first_dom`, `first_paint`, `aborted`), ms since
    /// `request_start`.
    pub milestones: Milestones,
    pub paint_method: Option<PaintMethod>,
    pub environment: Environment,
    pub resource_timing: Option<ResourceTiming>,
    /// The Resource Timing entry's `serverTiming`.
    pub server_timings: Vec<ServerTiming>,
    /// Voice results the page included (voice builds).
    pub voice: Vec<VoiceResult>,
    /// Set when the page will beacon this run: what its field report needs beside the
    /// run (the page's path, the sample rate).
    pub field: Option<FieldContext>,
}

impl PageObservations {
    /// Adds what the page observed to the stream's timeline.
    pub fn apply_to(self, timeline: &mut Timeline) {
        if self.request.method.is_some() {
            timeline.request.method = self.request.method;
        }
        if self.request.transport.is_some() {
            timeline.request.transport = self.request.transport;
        }
        if let Some(url) = self.request.url {
            // The query may hold a key: it never reaches a report.
            timeline.request.url = Some(url_for_report(&url));
        }
        if self.request_start_unix_ms.is_some() {
            timeline.request_start_unix_ms = self.request_start_unix_ms;
        }
        for (m, at) in self.milestones.iter() {
            timeline.milestones.set(m, at);
        }
        timeline.paint_method = self.paint_method.or(timeline.paint_method);
        timeline.environment = self.environment;
        // A page that stayed visible throughout has nothing to say about visibility.
        let changes = &mut timeline.environment.visibility_changes;
        if changes.iter().all(|c| c.state == Visibility::Visible) {
            changes.clear();
        }
        timeline.resource_timing = self.resource_timing.or(timeline.resource_timing.take());
        timeline.server.timings.extend(self.server_timings);
        // Only a voice build fills `voice` in the browser: the text Worker leaves the merge
        // code out, and with it core's float formatter (one message writes an f64 with
        // `{}`): 9.6 KB gzip.
        #[cfg(any(feature = "voice", not(target_family = "wasm")))]
        for result in self.voice {
            result.apply_to(timeline);
        }
    }
}

/// One run in progress: the stream's recorder and what the page saw beside it.
struct RunInProgress {
    recorder: Recorder,
    page: PageObservations,
    /// Testing only: fail inside on the first chunk, as a decoder bug would.
    fault: Option<fault::Injected>,
}

/// The runs in progress, in plain Rust (tested natively); [`Analysis`] is its JS face.
/// A page has a few runs in progress at once, so a list is searched: a map's code cost
/// this wasm about 2 KB gzip (measured).
#[derive(Default)]
pub struct Runs {
    runs: Vec<(u32, RunInProgress)>,
    /// Runs ended by [`Runs::finish_begin`] whose JSON is not written yet.
    ended: Vec<(u32, staged::Ended)>,
}

/// Why a call on [`Runs`] failed; [`Analysis`] hands JS the same text.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("ttfx analysis: no run {0} in progress (begin it first)")]
    NoRun(u32),
    #[error("ttfx analysis: run {0} was not ended (call finishBegin first)")]
    NotEnded(u32),
    #[error(transparent)]
    UnknownDialect(#[from] UnknownDialect),
    #[error("unknown fault `{0}` (known: decoder-panic)")]
    UnknownFault(String),
    #[error(transparent)]
    UnknownMilestone(#[from] UnknownMilestone),
    #[error("unknown paint method `{0}`")]
    UnknownPaintMethod(String),
    #[error("unknown analysis site `{0}` (worker, main_thread)")]
    UnknownAnalysisSite(String),
    /// The run's timeline cannot make a report (the text names why; no source, so a
    /// printed chain says it once).
    #[error("ttfx analysis: {0}")]
    Report(TimelineError),
    #[error("ttfx analysis: {0}")]
    Json(report_json::Error),
}

impl Runs {
    /// Runs begun and not yet finished.
    pub fn in_progress(&self) -> usize {
        self.runs.len()
    }

    /// Whether `run` is begun and not yet finished.
    pub fn has(&self, run: u32) -> bool {
        self.runs.iter().any(|(key, _)| *key == run)
    }

    fn run(&mut self, run: u32) -> Result<&mut RunInProgress, AnalysisError> {
        self.runs
            .iter_mut()
            .find(|(key, _)| *key == run)
            .map(|(_, in_progress)| in_progress)
            .ok_or(AnalysisError::NoRun(run))
    }

    /// The run's recorder, for the stream's moments (headers, chunks, end, …).
    pub fn recorder(&mut self, run: u32) -> Result<&mut Recorder, AnalysisError> {
        Ok(&mut self.run(run)?.recorder)
    }

    /// What the page observed beside the stream, filled in before [`Runs::finish`].
    pub fn page(&mut self, run: u32) -> Result<&mut PageObservations, AnalysisError> {
        Ok(&mut self.run(run)?.page)
    }

    /// See [`Analysis::begin`].
    pub fn begin(&mut self, run: u32, dialect: Option<&str>) -> Result<(), AnalysisError> {
        self.begin_with_fault(run, dialect, None)
    }

    /// [`Runs::begin`] with a fault to inject (`"decoder-panic"`), for containment tests.
    pub fn begin_with_fault(
        &mut self,
        run: u32,
        dialect: Option<&str>,
        fault: Option<&str>,
    ) -> Result<(), AnalysisError> {
        let dialect = match dialect {
            None | Some("auto") => None,
            Some(name) => Some(name.parse::<DialectKind>()?),
        };
        let fault = fault.map(fault::Injected::from_name).transpose()?;
        let recorder = Recorder::new(dialect, Limits::DEFAULT);
        let page = PageObservations::default();
        let in_progress = RunInProgress {
            recorder,
            page,
            fault,
        };
        // A run number begun again starts over, as a map's insert would.
        match self.runs.iter_mut().find(|(key, _)| *key == run) {
            Some((_, old)) => *old = in_progress,
            None => self.runs.push((run, in_progress)),
        }
        Ok(())
    }

    /// See [`Analysis::chunks`].
    pub fn chunks(&mut self, run: u32, meta: &[f64], bytes: &[u8]) -> Result<(), AnalysisError> {
        let state = self.run(run)?;
        if let Some(fault) = state.fault {
            fault.trigger();
        }
        let recorder = &mut state.recorder;
        let (pairs, _) = meta.as_chunks::<2>();
        let mut rest = bytes;
        for [at_ms, len] in pairs {
            // A length the bytes cannot hold is the page's bug; what is there is used.
            let n = (len.max(0.0) as usize).min(rest.len());
            let (piece, tail) = rest.split_at(n);
            recorder.chunk(*at_ms, piece);
            rest = tail;
        }
        Ok(())
    }

    /// [`Runs::begin_with_fault`], with the run's id and label for its report.
    pub fn begin_page(
        &mut self,
        run: u32,
        dialect: Option<&str>,
        id: Option<String>,
        label: Option<String>,
        fault: Option<&str>,
    ) -> Result<(), AnalysisError> {
        self.begin_with_fault(run, dialect, fault)?;
        let page = self.page(run)?;
        page.id = id;
        page.label = label;
        Ok(())
    }

    /// See [`Analysis::request`].
    pub fn request(
        &mut self,
        run: u32,
        method: Option<String>,
        url: Option<String>,
        start_unix_ms: Option<f64>,
        transport: Option<String>,
    ) -> Result<(), AnalysisError> {
        let page = self.page(run)?;
        page.request.method = method;
        page.request.transport = transport;
        page.request.url = url.map(|u| url_for_report(&u));
        page.request_start_unix_ms = start_unix_ms;
        Ok(())
    }

    /// See [`Analysis::headers`].
    pub fn headers(
        &mut self,
        run: u32,
        at_ms: f64,
        status: u16,
        content_type: Option<&str>,
        server_timing: Option<&str>,
    ) -> Result<(), AnalysisError> {
        let values: Vec<&str> = server_timing.into_iter().collect();
        self.recorder(run)?
            .headers(at_ms, status, content_type, &values);
        Ok(())
    }

    /// See [`Analysis::anomaly`].
    pub fn anomaly(
        &mut self,
        run: u32,
        at_ms: f64,
        class: &str,
        detail: String,
    ) -> Result<(), AnalysisError> {
        self.recorder(run)?.anomaly(at_ms, class, detail);
        Ok(())
    }

    /// See [`Analysis::end`].
    pub fn end(&mut self, run: u32, at_ms: f64) -> Result<(), AnalysisError> {
        self.recorder(run)?.end(at_ms);
        Ok(())
    }

    /// See [`Analysis::abort`].
    pub fn abort(&mut self, run: u32, at_ms: f64) -> Result<(), AnalysisError> {
        self.recorder(run)?.abort(at_ms);
        Ok(())
    }

    /// See [`Analysis::network_error`].
    pub fn network_error(
        &mut self,
        run: u32,
        at_ms: f64,
        detail: String,
    ) -> Result<(), AnalysisError> {
        self.recorder(run)?.network_error(at_ms, detail);
        Ok(())
    }

    /// See [`Analysis::observed`].
    pub fn observed(
        &mut self,
        run: u32,
        milestone: &str,
        at_ms: f64,
        paint_method: Option<&str>,
    ) -> Result<(), AnalysisError> {
        let m = milestone.parse::<Milestone>()?;
        let method = match paint_method {
            None => None,
            Some("presentation_time") => Some(PaintMethod::PresentationTime),
            Some("element_timing") => Some(PaintMethod::ElementTiming),
            Some("interaction_contentful_paint") => Some(PaintMethod::InteractionContentfulPaint),
            Some("raf_next_frame") => Some(PaintMethod::RafNextFrame),
            Some("raf_estimate") => Some(PaintMethod::RafEstimate),
            Some(other) => return Err(AnalysisError::UnknownPaintMethod(other.to_owned())),
        };
        let page = self.page(run)?;
        page.milestones.set(m, at_ms);
        if method.is_some() {
            page.paint_method = method;
        }
        Ok(())
    }

    /// See [`Analysis::environment`]: `environment` without `analysis` and visibility
    /// changes, which are named by `analysis` and [`Runs::visibility`].
    pub fn environment(
        &mut self,
        run: u32,
        environment: Environment,
        analysis: Option<&str>,
    ) -> Result<(), AnalysisError> {
        let site = match analysis {
            None => None,
            Some(name) => Some(
                AnalysisSite::from_name(name)
                    .ok_or_else(|| AnalysisError::UnknownAnalysisSite(name.to_owned()))?,
            ),
        };
        let env = &mut self.page(run)?.environment;
        let changes = std::mem::take(&mut env.visibility_changes);
        *env = Environment {
            analysis: site,
            visibility_changes: changes,
            ..environment
        };
        Ok(())
    }

    /// See [`Analysis::visibility`].
    pub fn visibility(&mut self, run: u32, at_ms: f64, hidden: bool) -> Result<(), AnalysisError> {
        let state = if hidden {
            Visibility::Hidden
        } else {
            Visibility::Visible
        };
        let env = &mut self.page(run)?.environment;
        env.visibility_changes
            .push(VisibilityChange { at_ms, state });
        Ok(())
    }

    /// See [`Analysis::resource_timing`].
    pub fn resource_timing(
        &mut self,
        run: u32,
        entry: ResourceTiming,
    ) -> Result<(), AnalysisError> {
        let page = self.page(run)?;
        // The entry's responseStart is the network boundary, a milestone of its own
        // (absent without Timing-Allow-Origin on a cross-origin response).
        if let Some(at) = entry.response_start_ms {
            page.milestones.set(Milestone::ResponseStart, at);
        }
        // The page chose the string: only an ALPN id is kept.
        let next_hop_protocol = ResourceTiming::protocol(entry.next_hop_protocol);
        page.resource_timing = Some(ResourceTiming {
            next_hop_protocol,
            ..entry
        });
        Ok(())
    }

    /// See [`Analysis::resource_server_timing`].
    pub fn resource_server_timing(
        &mut self,
        run: u32,
        name: String,
        duration_ms: Option<f64>,
        description: Option<String>,
    ) -> Result<(), AnalysisError> {
        // `ttfx serve`'s record id never enters a report (ServerData::record_id): the
        // header's copy is kept apart by the recorder, this one is dropped.
        if name == ttfx_core::recorder::RECORD_TIMING {
            return Ok(());
        }
        self.page(run)?.server_timings.push(ServerTiming {
            name,
            duration_ms,
            description: description.filter(|d| !d.is_empty()),
            source: TimingSource::ResourceTiming,
        });
        Ok(())
    }

    /// See [`Analysis::finish`]: the report, and after a newline the field report when
    /// `sample_rate` is given.
    pub fn finish_page(
        &mut self,
        run: u32,
        page_path: Option<String>,
        sample_rate: Option<f64>,
    ) -> Result<String, AnalysisError> {
        self.finish_begin(run, page_path, sample_rate)?;
        self.finish_write(run)
    }

    /// The only run in progress, when there is exactly one.
    pub fn only_run(&self) -> Option<u32> {
        match self.runs.as_slice() {
            [(run, _)] => Some(*run),
            _ => None,
        }
    }

    /// Ends the run: its report's JSON and, when the page set [`PageObservations::field`],
    /// its field report's. The run is forgotten either way.
    pub fn finish(&mut self, run: u32) -> Result<Finished, AnalysisError> {
        let (report, field) = self.end_run(run)?;
        write_finished(&report, field.as_ref())
    }

    /// The run's report (its metrics computed), taken out of the runs in progress, and
    /// the page's field context when it will beacon the run.
    fn end_run(&mut self, run: u32) -> Result<(RunReport, Option<FieldContext>), AnalysisError> {
        let index = self
            .runs
            .iter()
            .position(|(key, _)| *key == run)
            .ok_or(AnalysisError::NoRun(run))?;
        let (
            _,
            RunInProgress {
                recorder, mut page, ..
            },
        ) = self.runs.swap_remove(index);
        let (id, label, field) = (page.id.clone(), page.label.clone(), page.field.take());
        let mut timeline = recorder.finish();
        page.apply_to(&mut timeline);
        let report = RunReport::of_timeline(id, label, timeline).map_err(AnalysisError::Report)?;
        Ok((report, field))
    }
}

/// A finished run's JSON texts, from its report.
fn write_finished(
    report: &RunReport,
    field: Option<&FieldContext>,
) -> Result<Finished, AnalysisError> {
    let field = match field {
        Some(context) => Some(json(&FieldReport::of_run(&report.run, context))?),
        None => None,
    };
    Ok(Finished {
        report: json(report)?,
        field,
    })
}

/// Writing derived Serialize types to a String does not fail (string keys, no custom
/// errors); the error keeps a fixed message.
fn json<T: serde::Serialize>(value: &T) -> Result<String, AnalysisError> {
    report_json::to_string(value).map_err(AnalysisError::Json)
}

/// A finished run's JSON texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The run report (docs/report.md).
    pub report: String,
    /// The field report a beacon carries, when the page asked for it.
    pub field: Option<String>,
}

/// Runs in progress, for JS. Every value crosses as a scalar or a typed array: the
/// page's observations are few, and reading them from a JS object with serde's derives
/// cost this wasm 26 KB gzip (measured), a third of its budget.
#[wasm_bindgen]
#[derive(Default)]
pub struct Analysis {
    runs: Runs,
}

fn js(e: AnalysisError) -> JsError {
    JsError::new(&e.to_string())
}

#[wasm_bindgen]
impl Analysis {
    /// Also installs the panic hook that keeps a fault's message for [`last_panic`].
    #[wasm_bindgen(constructor)]
    pub fn new() -> Analysis {
        fault::install_hook();
        Analysis::default()
    }

    /// A run starts: `request_start` is 0 on its clock. `dialect` is a dialect name, or
    /// `undefined` / `"auto"` to detect it from the content type and the first frames.
    /// `id` and `label` go into the report. `fault` (testing only): `"decoder-panic"`
    /// makes the first chunk batch panic, as a decoder bug would.
    pub fn begin(
        &mut self,
        run: u32,
        dialect: Option<String>,
        id: Option<String>,
        label: Option<String>,
        fault: Option<String>,
    ) -> Result<(), JsError> {
        self.runs
            .begin_page(run, dialect.as_deref(), id, label, fault.as_deref())
            .map_err(js)
    }

    /// The request as sent: its method, its URL (the report keeps it without the query,
    /// which may hold a key), `request_start` on the wall clock, and the transport the
    /// probe measured (`fetch`, `eventsource`, `xhr`, `websocket`; none from older fronts).
    pub fn request(
        &mut self,
        run: u32,
        method: Option<String>,
        url: Option<String>,
        start_unix_ms: Option<f64>,
        transport: Option<String>,
    ) -> Result<(), JsError> {
        self.runs
            .request(run, method, url, start_unix_ms, transport)
            .map_err(js)
    }

    /// The response headers arrived at `at_ms`; `server_timing` holds the page-readable
    /// `Server-Timing` header values joined with `, ` (one header's list syntax).
    pub fn headers(
        &mut self,
        run: u32,
        at_ms: f64,
        status: u16,
        content_type: Option<String>,
        server_timing: Option<String>,
    ) -> Result<(), JsError> {
        self.runs
            .headers(
                run,
                at_ms,
                status,
                content_type.as_deref(),
                server_timing.as_deref(),
            )
            .map_err(js)
    }

    /// A batch of body chunks: `meta` is [arrival ms, length] per chunk, in order, and
    /// `bytes` their bytes back to back (the page's batch, as it flushed it).
    pub fn chunks(&mut self, run: u32, meta: &[f64], bytes: &[u8]) -> Result<(), JsError> {
        self.runs.chunks(run, meta, bytes).map_err(js)
    }

    /// Something the page noticed that does not fail the request (`chunk_detached`, …).
    pub fn anomaly(
        &mut self,
        run: u32,
        at_ms: f64,
        class: String,
        detail: String,
    ) -> Result<(), JsError> {
        self.runs.anomaly(run, at_ms, &class, detail).map_err(js)
    }

    /// The body ended normally.
    pub fn end(&mut self, run: u32, at_ms: f64) -> Result<(), JsError> {
        self.runs.end(run, at_ms).map_err(js)
    }

    /// The user gave up (the signal fired or the app cancelled the body).
    pub fn abort(&mut self, run: u32, at_ms: f64) -> Result<(), JsError> {
        self.runs.abort(run, at_ms).map_err(js)
    }

    /// The fetch rejected or the body errored.
    #[wasm_bindgen(js_name = networkError)]
    pub fn network_error(&mut self, run: u32, at_ms: f64, detail: String) -> Result<(), JsError> {
        self.runs.network_error(run, at_ms, detail).map_err(js)
    }

    /// A milestone only the page sees (`first_dom`, `first_paint`), ms since
    /// `request_start`; `paint_method` (`element_timing`, `raf_estimate`, …) with
    /// `first_paint`.
    pub fn observed(
        &mut self,
        run: u32,
        milestone: String,
        at_ms: f64,
        paint_method: Option<String>,
    ) -> Result<(), JsError> {
        self.runs
            .observed(run, &milestone, at_ms, paint_method.as_deref())
            .map_err(js)
    }

    /// Where the run was measured (docs/report.md's `environment`); `analysis` is where
    /// this analysis runs (`"worker"`, `"main_thread"`).
    #[allow(clippy::too_many_arguments)]
    pub fn environment(
        &mut self,
        run: u32,
        engine: Option<String>,
        engine_version: Option<String>,
        user_agent: Option<String>,
        cross_origin_isolated: Option<bool>,
        timer_resolution_ms: Option<f64>,
        concurrency: Option<u32>,
        analysis: Option<String>,
    ) -> Result<(), JsError> {
        let env = Environment {
            engine,
            engine_version,
            user_agent,
            cross_origin_isolated,
            timer_resolution_ms,
            concurrency,
            ..Environment::default()
        };
        self.runs
            .environment(run, env, analysis.as_deref())
            .map_err(js)
    }

    /// The page turned `hidden` or `visible` at `at_ms`.
    pub fn visibility(&mut self, run: u32, at_ms: f64, hidden: bool) -> Result<(), JsError> {
        self.runs.visibility(run, at_ms, hidden).map_err(js)
    }

    /// The request's Resource Timing entry, its times in ms since `request_start` (a
    /// time the engine gave as 0, hidden cross-origin, comes as `undefined`). The page
    /// sends the entry's times as they are; what they mean (`request_queued_ms`) is
    /// worked out here, in ttfx-core.
    #[wasm_bindgen(js_name = resourceTiming)]
    #[allow(clippy::too_many_arguments)]
    pub fn resource_timing(
        &mut self,
        run: u32,
        request_start_ms: Option<f64>,
        response_start_ms: Option<f64>,
        response_end_ms: Option<f64>,
        encoded_body_size: Option<f64>,
        fetch_start_ms: Option<f64>,
        domain_lookup_start_ms: Option<f64>,
        domain_lookup_end_ms: Option<f64>,
        connect_start_ms: Option<f64>,
        connect_end_ms: Option<f64>,
        next_hop_protocol: Option<String>,
    ) -> Result<(), JsError> {
        let entry = ResourceTiming {
            request_start_ms,
            response_start_ms,
            response_end_ms,
            encoded_body_size: encoded_body_size.map(|v| v as u64),
            fetch_start_ms,
            domain_lookup_start_ms,
            domain_lookup_end_ms,
            connect_start_ms,
            connect_end_ms,
            next_hop_protocol,
        };
        self.runs.resource_timing(run, entry).map_err(js)
    }

    /// One `serverTiming` entry of the request's Resource Timing entry.
    #[wasm_bindgen(js_name = resourceServerTiming)]
    pub fn resource_server_timing(
        &mut self,
        run: u32,
        name: String,
        duration_ms: Option<f64>,
        description: Option<String>,
    ) -> Result<(), JsError> {
        self.runs
            .resource_server_timing(run, name, duration_ms, description)
            .map_err(js)
    }

    /// Ends the run and returns its report as JSON (docs/report.md). The run is
    /// forgotten either way.
    ///
    /// A run the page will beacon passes `sample_rate` (the share of runs it beacons) and
    /// `page_path` (`location.pathname`; a query or fragment is cut off here too): a
    /// newline and the run's field report (docs/report.md, "Field report") follow the
    /// report. JSON text has no raw newline, so the first one splits them.
    pub fn finish(
        &mut self,
        run: u32,
        page_path: Option<String>,
        sample_rate: Option<f64>,
    ) -> Result<String, JsError> {
        self.runs
            .finish_page(run, page_path, sample_rate)
            .map_err(js)
    }

    /// Runs still in progress (a page that never ends its runs shows here).
    #[wasm_bindgen(getter, js_name = inProgress)]
    pub fn in_progress(&self) -> usize {
        self.runs.runs.len()
    }

    /// Runs a few synthetic replies through a private set of runs, so the engine's
    /// optimizing tier compiles the decoders before the page's first reply reaches them
    /// (warm_up.rs). The Worker calls it once after loading; it takes tens of ms there.
    /// Static: it touches no `Analysis`, so even a trap inside leaves none borrowed.
    #[wasm_bindgen(js_name = warmUp)]
    pub fn warm_up() {
        warm_up::warm_up(warm_up::TOKENS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(content: &str) -> String {
        format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{content:?}}}}}]}}\n\n")
    }

    #[test]
    fn ttfx_serves_record_id_never_enters_the_report_from_either_copy() {
        let chunk = sse("Hi");
        let mut runs = Runs::default();
        runs.begin_page(4, None, None, None, None).unwrap();
        runs.recorder(4).unwrap().headers(
            30.0,
            200,
            Some("text/event-stream"),
            &["queue;dur=1, ttfx-record;desc=ttfx-secretish"],
        );
        runs.chunks(4, &[80.0, chunk.len() as f64], chunk.as_bytes())
            .unwrap();
        runs.recorder(4).unwrap().end(100.0);
        // Resource Timing's serverTiming holds the same entries.
        for (name, desc) in [("queue", ""), ("ttfx-record", "ttfx-secretish")] {
            runs.resource_server_timing(4, name.into(), Some(0.0), Some(desc.into()))
                .unwrap();
        }
        let report = runs.finish(4).unwrap().report;
        assert!(!report.contains("ttfx-secretish") && !report.contains("ttfx-record"));
        assert_eq!(report.matches("\"queue\"").count(), 2, "{report}");
    }

    #[test]
    fn the_resource_timing_entry_gives_response_start_and_the_paint_its_two_times() {
        let chunk = sse("Hi");
        let mut runs = Runs::default();
        runs.begin_page(3, None, None, None, None).unwrap();
        runs.recorder(3)
            .unwrap()
            .headers(30.0, 200, Some("text/event-stream"), &[]);
        runs.chunks(3, &[80.0, chunk.len() as f64], chunk.as_bytes())
            .unwrap();
        runs.recorder(3).unwrap().end(100.0);
        runs.observed(3, "first_dom", 82.0, None).unwrap();
        runs.observed(3, "paint_time", 88.5, None).unwrap();
        runs.observed(3, "first_paint", 95.0, Some("presentation_time"))
            .unwrap();
        let entry = ResourceTiming {
            request_start_ms: Some(2.5),
            response_start_ms: Some(76.25),
            response_end_ms: Some(101.0),
            encoded_body_size: Some(chunk.len() as u64),
            ..ResourceTiming::default()
        };
        runs.resource_timing(3, entry).unwrap();
        let report: serde_json::Value =
            serde_json::from_str(&runs.finish(3).unwrap().report).unwrap();
        let t = &report["run"]["timeline"];
        assert_eq!(t["milestones"]["response_start"], 76.25);
        assert_eq!(t["milestones"]["paint_time"], 88.5);
        assert_eq!(t["milestones"]["first_paint"], 95.0);
        assert_eq!(t["paint_method"], "presentation_time");
        let m = &report["run"]["metrics"];
        assert_eq!(m["engine_hop_ms"]["value"], 80.0 - 76.25);
        assert_eq!(m["render_lag_ms"]["source"], "presentation_time");
        // A method this build does not know is refused by name, not guessed.
        let err = runs.observed(3, "first_paint", 1.0, Some("vsync_guess"));
        assert!(matches!(err, Err(AnalysisError::UnknownPaintMethod(m)) if m == "vsync_guess"));
    }

    #[test]
    fn batches_and_page_observations_make_the_recorders_report() {
        let (a, b) = (sse("Hel"), sse("lo"));
        let mut runs = Runs::default();
        runs.begin(7, None).unwrap();
        runs.recorder(7)
            .unwrap()
            .headers(30.0, 200, Some("text/event-stream"), &[]);
        let bytes = [a.as_bytes(), b.as_bytes()].concat();
        runs.chunks(7, &[80.0, a.len() as f64, 95.0, b.len() as f64], &bytes)
            .unwrap();
        runs.recorder(7).unwrap().end(100.0);
        let page = runs.page(7).unwrap();
        page.id = Some("r7".into());
        page.label = Some("chat".into());
        page.request.url = Some("https://h/v1".into());
        page.milestones.set(Milestone::FirstDom, 82.5);
        page.milestones.set(Milestone::FirstPaint, 90.0);
        page.paint_method = Some(PaintMethod::ElementTiming);
        page.environment.engine = Some("chromium".into());
        let finished = runs.finish(7).unwrap();
        assert_eq!(
            finished.field, None,
            "only a beaconed run has a field report"
        );
        let report: serde_json::Value = serde_json::from_str(&finished.report).unwrap();
        let t = &report["run"]["timeline"];
        assert_eq!(report["run"]["id"], "r7");
        assert_eq!(report["run"]["target"], "chat");
        assert_eq!(t["milestones"]["first_visible_token"], 80.0);
        assert_eq!(t["milestones"]["last_token"], 95.0);
        assert_eq!(t["milestones"]["first_dom"], 82.5);
        assert_eq!(t["paint_method"], "element_timing");
        assert_eq!(t["request"]["url"], "https://h/v1");
        assert_eq!(t["request"]["dialect"], "openai-chat");
        assert_eq!(t["environment"]["engine"], "chromium");
        assert_eq!(t["chunks"].as_array().unwrap().len(), 2);
        assert_eq!(report["run"]["metrics"]["render_lag_ms"]["value"], 10.0);

        // The same series through a Recorder directly: the same stream milestones.
        let mut direct = Recorder::new(None, Limits::DEFAULT);
        direct.headers(30.0, 200, Some("text/event-stream"), &[]);
        direct.chunk(80.0, a.as_bytes());
        direct.chunk(95.0, b.as_bytes());
        direct.end(100.0);
        let direct = direct.finish();
        for m in [Milestone::FirstByte, Milestone::FirstToken, Milestone::Done] {
            assert_eq!(
                t["milestones"][m.as_str()].as_f64(),
                direct.milestones.get(m)
            );
        }
        assert_eq!(runs.runs.len(), 0, "a finished run is forgotten");
    }

    /// A beaconed run of 2,000 chunks, fed in the page's 16 KiB batches: its field report
    /// fits the bound, validates, keeps no query, and is the text serde_json writes for
    /// ttfx-core's field report of the same run.
    #[test]
    fn a_beaconed_two_thousand_chunk_run_gets_a_bounded_field_report() {
        use ttfx_core::field::{FieldReport, MAX_FIELD_REPORT_BYTES};
        let chunk = sse("word ");
        let context = FieldContext {
            page_path: Some("/chat/42?token=sk-secret#frag".into()),
            sample_rate: 0.25,
        };
        let mut runs = Runs::default();
        runs.begin(1, None).unwrap();
        let page = runs.page(1).unwrap();
        page.id = Some("ttfx-1".into());
        page.label = Some("prod-chat".into());
        page.request.url = Some("https://api.example.com/v1/chat/completions".into());
        page.environment.engine = Some("chromium".into());
        page.field = Some(context.clone());
        runs.recorder(1)
            .unwrap()
            .headers(100.0, 200, Some("text/event-stream"), &[]);
        let mut direct = Recorder::new(None, Limits::DEFAULT);
        direct.headers(100.0, 200, Some("text/event-stream"), &[]);
        let per_batch = 16 * 1024 / chunk.len();
        let times: Vec<f64> = (0..2_000).map(|i| 120.0 + f64::from(i) * 20.0).collect();
        for batch in times.chunks(per_batch) {
            let meta: Vec<f64> = batch
                .iter()
                .flat_map(|t| [*t, chunk.len() as f64])
                .collect();
            runs.chunks(1, &meta, chunk.repeat(batch.len()).as_bytes())
                .unwrap();
            for t in batch {
                direct.chunk(*t, chunk.as_bytes());
            }
        }
        runs.recorder(1).unwrap().end(40_200.0);
        direct.end(40_200.0);
        let finished = runs.finish(1).unwrap();
        let field = finished.field.expect("a field report");
        println!("field report of 2,000 chunks: {} bytes", field.len());
        assert!(
            field.len() <= MAX_FIELD_REPORT_BYTES,
            "{} bytes",
            field.len()
        );
        assert!(
            !field.contains("secret") && !field.contains("frag"),
            "{field}"
        );
        assert!(
            !field.contains('\n'),
            "one line: the page splits on the newline"
        );
        let read: FieldReport = serde_json::from_str(&field).unwrap();
        read.validate().unwrap();
        assert_eq!(read.run.page_path.as_deref(), Some("/chat/42"));
        assert_eq!(read.run.chunks.count, 2_000);
        assert_eq!(read.run.chunks.visible_tokens, 2_000);

        // ttfx-core's field report of the same run, as serde_json writes it.
        let mut timeline = direct.finish();
        timeline.request.url = Some("https://api.example.com/v1/chat/completions".into());
        timeline.environment.engine = Some("chromium".into());
        let report =
            RunReport::of_timeline(Some("ttfx-1".into()), Some("prod-chat".into()), timeline)
                .unwrap();
        let native = FieldReport::of_run(&report.run, &context);
        assert_eq!(field, serde_json::to_string(&native).unwrap());
        assert_eq!(finished.report, serde_json::to_string(&report).unwrap());
    }

    #[test]
    fn misuse_is_a_clear_error() {
        let mut runs = Runs::default();
        let no_run = "ttfx analysis: no run 1 in progress (begin it first)";
        assert_eq!(runs.chunks(1, &[], &[]).unwrap_err().to_string(), no_run);
        assert_eq!(runs.finish(1).unwrap_err().to_string(), no_run);
        let klingon = runs.begin(1, Some("klingon")).unwrap_err().to_string();
        assert!(klingon.contains("klingon"), "{klingon}");
        runs.begin(2, None).unwrap();
        assert_eq!(
            runs.begin_with_fault(2, None, Some("flood"))
                .unwrap_err()
                .to_string(),
            "unknown fault `flood` (known: decoder-panic)"
        );
        assert_eq!(
            runs.observed(2, "first_token", 1.0, Some("guess"))
                .unwrap_err()
                .to_string(),
            "unknown paint method `guess`"
        );
        assert_eq!(
            runs.environment(2, Environment::default(), Some("gpu"))
                .unwrap_err()
                .to_string(),
            "unknown analysis site `gpu` (worker, main_thread)"
        );
        // A batch whose lengths overrun its bytes uses what is there.
        runs.begin(3, None).unwrap();
        runs.chunks(3, &[1.0, 1000.0], b"data: x").unwrap();
        let report = runs.finish(3).unwrap().report;
        assert!(report.contains("\"bytes\":7"), "{report}");
    }
}

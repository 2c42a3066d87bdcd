//! The probe's analysis as its own wasm module, for a module Web Worker (`worker.js`):
//! what the page observed goes in, message by message, and the run report comes out.
//!
//! The page keeps only clocks and bytes; everything that decodes, derives milestones,
//! computes metrics and writes the report is here, in ttfx-core, loaded after the page's
//! first measured request and run off its main thread. Every milestone keeps the arrival
//! time the page took, so where and when this runs changes no figure.
//!
//! One `Analysis` holds the runs in progress, keyed by the page's run number; the calls
//! mirror `ttfx_core::Recorder`.

use std::collections::BTreeMap;

use serde::Deserialize;
use ttfx_core::decode::{DialectKind, Limits};
use ttfx_core::recorder::Recorder;
use ttfx_core::report::RunReport;
use ttfx_core::server_timing::ServerTiming;
use ttfx_core::timeline::{
    Anomaly, Environment, Milestones, PaintMethod, RequestInfo, ResourceTiming, Timeline,
};
use wasm_bindgen::prelude::*;

/// What the page observed itself, beside the stream, in the report's own field names
/// (docs/report.md), handed over when the run ends.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageObservations {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub request: RequestInfo,
    /// Milestones only the page sees (`first_dom`, `first_paint`, `aborted`), ms since
    /// `request_start`.
    #[serde(default)]
    pub milestones: Milestones,
    #[serde(default)]
    pub paint_method: Option<PaintMethod>,
    #[serde(default)]
    pub environment: Environment,
    #[serde(default)]
    pub resource_timing: Option<ResourceTiming>,
    /// The Resource Timing entry's `serverTiming`.
    #[serde(default)]
    pub server_timings: Vec<ServerTiming>,
    #[serde(default)]
    pub anomalies: Vec<Anomaly>,
}

impl PageObservations {
    /// Adds what the page observed to the stream's timeline.
    pub fn apply_to(self, timeline: &mut Timeline) {
        if self.request.method.is_some() {
            timeline.request.method = self.request.method;
        }
        if self.request.url.is_some() {
            timeline.request.url = self.request.url;
        }
        for (m, at) in self.milestones.iter() {
            timeline.milestones.set(m, at);
        }
        timeline.paint_method = self.paint_method.or(timeline.paint_method);
        timeline.environment = self.environment;
        timeline.resource_timing = self.resource_timing.or(timeline.resource_timing.take());
        timeline.server.timings.extend(self.server_timings);
        timeline.anomalies.extend(self.anomalies);
    }
}

/// The runs in progress, in plain Rust (tested natively); [`Analysis`] is its JS face.
#[derive(Default)]
pub struct Runs {
    runs: BTreeMap<u32, Recorder>,
}

impl Runs {
    fn recorder(&mut self, run: u32) -> Result<&mut Recorder, String> {
        self.runs
            .get_mut(&run)
            .ok_or_else(|| format!("ttfx analysis: no run {run} in progress (begin it first)"))
    }

    /// See [`Analysis::begin`].
    pub fn begin(&mut self, run: u32, dialect: Option<&str>) -> Result<(), String> {
        let dialect = match dialect {
            None | Some("auto") => None,
            Some(name) => Some(name.parse::<DialectKind>().map_err(|e| e.to_string())?),
        };
        self.runs
            .insert(run, Recorder::new(dialect, Limits::DEFAULT));
        Ok(())
    }

    /// See [`Analysis::headers`].
    pub fn headers(
        &mut self,
        run: u32,
        at_ms: f64,
        status: u16,
        content_type: Option<&str>,
        server_timing: &[&str],
    ) -> Result<(), String> {
        self.recorder(run)?
            .headers(at_ms, status, content_type, server_timing);
        Ok(())
    }

    /// See [`Analysis::end`].
    pub fn end(&mut self, run: u32, at_ms: f64) -> Result<(), String> {
        self.recorder(run)?.end(at_ms);
        Ok(())
    }

    /// The run in progress, when there is exactly one.
    pub fn only_run(&self) -> Option<u32> {
        let mut keys = self.runs.keys();
        match (keys.next(), keys.next()) {
            (Some(run), None) => Some(*run),
            _ => None,
        }
    }

    /// See [`Analysis::chunks`].
    pub fn chunks(&mut self, run: u32, meta: &[f64], bytes: &[u8]) -> Result<(), String> {
        let recorder = self.recorder(run)?;
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

    /// See [`Analysis::finish`].
    pub fn finish(&mut self, run: u32, page: PageObservations) -> Result<String, String> {
        let recorder = self
            .runs
            .remove(&run)
            .ok_or_else(|| format!("ttfx analysis: no run {run} in progress (begin it first)"))?;
        let (id, label) = (page.id.clone(), page.label.clone());
        let mut timeline = recorder.finish();
        page.apply_to(&mut timeline);
        let report = RunReport::of_timeline(id, label, timeline)
            .map_err(|e| format!("ttfx analysis: {e}"))?;
        serde_json::to_string(&report).map_err(|e| e.to_string())
    }
}

/// Runs in progress, for JS.
#[wasm_bindgen]
#[derive(Default)]
pub struct Analysis {
    runs: Runs,
}

fn js(e: String) -> JsError {
    JsError::new(&e)
}

#[wasm_bindgen]
impl Analysis {
    #[wasm_bindgen(constructor)]
    pub fn new() -> Analysis {
        Analysis::default()
    }

    /// A run starts: `request_start` is 0 on its clock. `dialect` is a dialect name, or
    /// `undefined` / `"auto"` to detect it from the content type and the first frames.
    pub fn begin(&mut self, run: u32, dialect: Option<String>) -> Result<(), JsError> {
        self.runs.begin(run, dialect.as_deref()).map_err(js)
    }

    /// The response headers arrived at `at_ms`; `server_timing` holds the page-readable
    /// `Server-Timing` header values.
    pub fn headers(
        &mut self,
        run: u32,
        at_ms: f64,
        status: u16,
        content_type: Option<String>,
        server_timing: Vec<String>,
    ) -> Result<(), JsError> {
        let values: Vec<&str> = server_timing.iter().map(String::as_str).collect();
        self.runs.recorder(run).map_err(js)?.headers(
            at_ms,
            status,
            content_type.as_deref(),
            &values,
        );
        Ok(())
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
        self.runs
            .recorder(run)
            .map_err(js)?
            .anomaly(at_ms, &class, detail);
        Ok(())
    }

    /// The body ended normally.
    pub fn end(&mut self, run: u32, at_ms: f64) -> Result<(), JsError> {
        self.runs.end(run, at_ms).map_err(js)
    }

    /// The user gave up (the signal fired or the app cancelled the body).
    pub fn abort(&mut self, run: u32, at_ms: f64) -> Result<(), JsError> {
        self.runs.recorder(run).map_err(js)?.abort(at_ms);
        Ok(())
    }

    /// The fetch rejected or the body errored.
    #[wasm_bindgen(js_name = networkError)]
    pub fn network_error(&mut self, run: u32, at_ms: f64, detail: String) -> Result<(), JsError> {
        self.runs
            .recorder(run)
            .map_err(js)?
            .network_error(at_ms, detail);
        Ok(())
    }

    /// Ends the run: adds `page` (an object of [`PageObservations`], read directly from
    /// JS: parsing JSON text would bring a float parser into this wasm) and returns the
    /// report as JSON (docs/report.md). The run is forgotten either way.
    pub fn finish(&mut self, run: u32, page: JsValue) -> Result<String, JsError> {
        let page: PageObservations = serde_wasm_bindgen::from_value(page)
            .map_err(|e| JsError::new(&format!("ttfx analysis: page observations: {e}")))?;
        self.runs.finish(run, page).map_err(js)
    }

    /// Runs still in progress (a page that never ends its runs shows here).
    #[wasm_bindgen(getter, js_name = inProgress)]
    pub fn in_progress(&self) -> usize {
        self.runs.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use ttfx_core::Milestone;

    use super::*;

    fn sse(content: &str) -> String {
        format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{content:?}}}}}]}}\n\n")
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
        let page = r#"{"id":"r7","label":"chat","request":{"method":"POST","url":"https://h/v1"},
            "milestones":{"first_dom":82.5,"first_paint":90.0},"paint_method":"element_timing",
            "environment":{"engine":"chromium"}}"#;
        let page = serde_json::from_str(page).unwrap();
        let report: serde_json::Value =
            serde_json::from_str(&runs.finish(7, page).unwrap()).unwrap();
        let t = &report["run"]["timeline"];
        assert_eq!(report["run"]["id"], "r7");
        assert_eq!(report["run"]["target"], "chat");
        assert_eq!(t["milestones"]["first_visible_token"], 80.0);
        assert_eq!(t["milestones"]["last_token"], 95.0);
        assert_eq!(t["milestones"]["first_dom"], 82.5);
        assert_eq!(t["paint_method"], "element_timing");
        assert_eq!(t["request"]["url"], "https://h/v1");
        assert_eq!(t["request"]["dialect"], "openai-chat");
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

    #[test]
    fn misuse_is_a_clear_error() {
        let mut runs = Runs::default();
        assert!(runs.chunks(1, &[], &[]).unwrap_err().contains("no run 1"));
        assert!(
            runs.begin(1, Some("klingon"))
                .unwrap_err()
                .contains("klingon")
        );
        let odd = serde_json::from_str::<PageObservations>(r#"{"colour":"red"}"#);
        assert!(odd.unwrap_err().to_string().contains("colour"));
        // A batch whose lengths overrun its bytes uses what is there.
        runs.begin(3, None).unwrap();
        runs.chunks(3, &[1.0, 1000.0], b"data: x").unwrap();
        let report = runs.finish(3, PageObservations::default()).unwrap();
        assert!(report.contains("\"bytes\":7"), "{report}");
    }
}

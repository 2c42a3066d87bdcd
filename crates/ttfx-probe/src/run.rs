//! A probe and its runs: one run measures one request.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Float64Array, Function, Object, Promise, Reflect, Uint8Array};
use ttfx_core::decode::Limits;
use ttfx_core::milestone::Milestone;
use ttfx_core::recorder::{Recorder, url_without_query};
use ttfx_core::report::{Run as RunRecord, RunReport};
use ttfx_core::server_timing::{ServerTiming, TimingSource};
use ttfx_core::timeline::{Anomaly, Environment, ResourceTiming, Timeline};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Element, ReadableStream, Response};

use crate::options::{Fault, ProbeOptions};
use crate::render::RenderWatch;
use crate::visibility::VisibilityLog;
#[cfg(feature = "voice")]
use crate::voice::VoicePart;
use crate::{ProbeError, clock, env, glue, guard, output};

/// Creates runs that share options, the page's original `fetch` and the environment.
#[derive(Clone)]
pub struct Probe {
    shared: Rc<ProbeShared>,
}

struct ProbeShared {
    options: ProbeOptions,
    /// The page's fetch when the probe was made: runs call this, so a probe that also
    /// instruments `window.fetch` never measures itself.
    original_fetch: Function,
    environment: Environment,
    in_flight: Cell<u32>,
    next_id: Cell<u64>,
}

impl Probe {
    /// A probe with these options. Installs the panic hook that contains probe faults.
    pub fn new(options: ProbeOptions) -> Result<Probe, ProbeError> {
        guard::install();
        clock::now_ms()?;
        let original_fetch = glue::current_fetch()
            .dyn_into::<Function>()
            .map_err(|_| ProbeError::Browser("this global scope has no fetch()".into()))?;
        Ok(Probe {
            shared: Rc::new(ProbeShared {
                options,
                original_fetch,
                environment: env::detect(),
                in_flight: Cell::new(0),
                next_id: Cell::new(1),
            }),
        })
    }

    /// The options the probe was made with.
    pub fn options(&self) -> &ProbeOptions {
        &self.shared.options
    }

    /// Starts a run; `label` overrides the probe's label for this run.
    pub fn start(&self, label: Option<String>) -> Run {
        let n = self.shared.next_id.get();
        self.shared.next_id.set(n + 1);
        let origin = env::time_origin().unwrap_or(0.0);
        let (promise, resolve) = deferred();
        Run {
            inner: Rc::new(RunInner {
                probe: self.shared.clone(),
                id: format!("ttfx-{:x}-{n}", origin as u64),
                label: label.or_else(|| self.shared.options.label.clone()),
                state: RefCell::new(RunState::default()),
                render: RefCell::new(None),
                done: promise,
                resolve: RefCell::new(resolve),
                report: RefCell::new(None),
                #[cfg(feature = "voice")]
                voice: RefCell::new(Vec::new()),
                hooks: RefCell::new(Vec::new()),
            }),
        }
    }
}

/// A callback `tapBody` calls with (time, value).
type Hook = Closure<dyn FnMut(JsValue, JsValue)>;

/// What a hook does with the run: the method behind one of `tapBody`'s callbacks.
type HookCall = fn(&Run, JsValue, JsValue);

/// One measured request.
#[derive(Clone)]
pub struct Run {
    inner: Rc<RunInner>,
}

struct RunInner {
    probe: Rc<ProbeShared>,
    id: String,
    label: Option<String>,
    state: RefCell<RunState>,
    render: RefCell<Option<RenderWatch>>,
    /// Resolves with the report (a plain JS object); kept apart from `state` so a fault
    /// that leaves `state` borrowed can still settle it.
    done: Promise,
    resolve: RefCell<Option<Function>>,
    report: RefCell<Option<RunReport>>,
    /// Voice results the app asked the report to include (see `include_voice`).
    #[cfg(feature = "voice")]
    voice: RefCell<Vec<(VoicePart, JsValue)>>,
    /// JS callbacks handed to the page; they live as long as the run.
    hooks: RefCell<Vec<Hook>>,
}

#[derive(Default)]
struct RunState {
    recorder: Option<Recorder>,
    start_abs: f64,
    /// The full URL, only to find the Resource Timing entry; never reported.
    url: String,
    fetched: bool,
    finishing: bool,
    visibility: Option<VisibilityLog>,
    abort_listener: Option<(web_sys::AbortSignal, Closure<dyn FnMut()>)>,
}

impl Run {
    /// The run's id (also the report's `id`).
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Measures `fetch(input, init)` and returns a `Response` whose body yields exactly
    /// the bytes the server sent. Errors are the page's own fetch errors, unchanged.
    pub async fn fetch(&self, input: &JsValue, init: &JsValue) -> Result<Response, JsValue> {
        let original = self.inner.probe.original_fetch.clone();
        if guard::is_disabled() {
            // Settle `finished()` at once: a switched-off probe must not leave callers
            // waiting forever.
            self.fault(&guard::reason().unwrap_or_default());
        }
        if guard::is_disabled() || !self.begin(input, init) {
            let response = JsFuture::from(glue::call_fetch(&original, input, init)?).await?;
            return response.dyn_into::<Response>();
        }
        let promise = match glue::call_fetch(&original, input, init) {
            Ok(p) => p,
            Err(e) => {
                self.failed(&e);
                return Err(e);
            }
        };
        let response = match JsFuture::from(promise).await {
            Ok(r) => r,
            Err(e) => {
                self.failed(&e);
                return Err(e);
            }
        };
        let Ok(response) = response.dyn_into::<Response>() else {
            self.fault("fetch resolved to something that is not a Response");
            return Err(JsValue::from_str("fetch resolved to a non-Response"));
        };
        Ok(self.observe(response))
    }

    /// Times the reply's render in `element` (call before the first token lands).
    pub fn watch(&self, element: &Element) -> Result<(), ProbeError> {
        if guard::is_disabled() {
            return Err(ProbeError::Disabled(guard::reason().unwrap_or_default()));
        }
        let watch = RenderWatch::start(element)?;
        if let Ok(state) = self.inner.state.try_borrow()
            && state.fetched
            && let Ok(mut t) = watch.times.try_borrow_mut()
        {
            t.not_before = Some(state.start_abs);
        }
        if let Ok(mut render) = self.inner.render.try_borrow_mut() {
            *render = Some(watch);
        }
        Ok(())
    }

    /// `request_start` on the page clock, once the fetch started: give it to a TTS player
    /// or handoff recorder so their times share this run's origin.
    pub fn request_start(&self) -> Option<f64> {
        let state = self.inner.state.try_borrow().ok()?;
        state.fetched.then_some(state.start_abs)
    }

    /// Makes the report wait (at most 15 s after the stream ends) for a voice result, a
    /// promise or a value, and merge it. Call before the stream ends.
    #[cfg(feature = "voice")]
    pub fn include_voice(&self, part: VoicePart, result: JsValue) {
        if let Ok(mut voice) = self.inner.voice.try_borrow_mut() {
            voice.push((part, result));
        }
    }

    /// A promise of the report (a plain object, as pushed to `window.__ttfx`).
    pub fn finished_promise(&self) -> Promise {
        self.inner.done.clone()
    }

    /// The report, once the run is finished.
    pub async fn finished(&self) -> Option<RunReport> {
        let _ = JsFuture::from(self.inner.done.clone()).await;
        self.inner.report.try_borrow().ok().and_then(|r| r.clone())
    }

    /// Records `request_start` and hooks the abort signal. False when the probe cannot
    /// measure (already used, or a fault): the fetch then runs unmeasured.
    fn begin(&self, input: &JsValue, init: &JsValue) -> bool {
        let Ok(start) = clock::now_ms() else {
            return false;
        };
        let Ok(mut state) = self.inner.state.try_borrow_mut() else {
            return false;
        };
        if state.fetched {
            return false;
        }
        state.fetched = true;
        state.start_abs = start;
        state.url = glue::input_url(input);
        let mut recorder = Recorder::new(self.inner.probe.options.dialect, Limits::DEFAULT);
        let t = recorder.timeline_mut();
        t.request.method = Some(glue::input_method(input, init));
        t.request.url = Some(url_without_query(&state.url).to_owned());
        t.request_start_unix_ms = env::time_origin().map(|o| o + start);
        state.recorder = Some(recorder);
        state.visibility = VisibilityLog::start().ok();
        let in_flight = self.inner.probe.in_flight.get();
        self.inner.probe.in_flight.set(in_flight + 1);
        if let Some(t) = state.recorder.as_mut().map(Recorder::timeline_mut) {
            t.environment = self.inner.probe.environment.clone();
            t.environment.concurrency = Some(in_flight + 1);
        }
        if let Ok(signal) = glue::input_signal(input, init).dyn_into::<web_sys::AbortSignal>() {
            let run = self.clone();
            let on_abort = Closure::<dyn FnMut()>::new(move || run.aborted());
            if signal.aborted() {
                if let Some(r) = state.recorder.as_mut() {
                    r.abort(0.0);
                }
            } else if signal
                .add_event_listener_with_callback("abort", on_abort.as_ref().unchecked_ref())
                .is_ok()
            {
                state.abort_listener = Some((signal, on_abort));
            }
        }
        if let Ok(render) = self.inner.render.try_borrow()
            && let Some(watch) = render.as_ref()
            && let Ok(mut t) = watch.times.try_borrow_mut()
        {
            t.not_before = Some(start);
        }
        true
    }

    fn aborted(&self) {
        let at = clock::now_ms().unwrap_or(f64::NAN);
        self.recording(|r, start| r.abort(at - start));
    }

    /// The fetch itself rejected: network failure, CORS, or an abort.
    fn failed(&self, error: &JsValue) {
        let at = clock::now_ms().unwrap_or(f64::NAN);
        self.recording(|r, start| {
            // A rejected fetch cannot say whether the network or CORS refused it.
            let detail = format!(
                "fetch rejected (network or CORS): {}",
                crate::error::describe_js(error)
            );
            r.network_error(at - start, detail);
        });
        self.finish();
    }

    /// Headers are in: record them and splice the probe into the body.
    fn observe(&self, response: Response) -> Response {
        let at = clock::now_ms().unwrap_or(f64::NAN);
        let headers = response.headers();
        let content_type = headers.get("content-type").ok().flatten();
        let server_timing = headers.get("server-timing").ok().flatten();
        let wrappable = glue::can_wrap(&response);
        self.recording(|r, start| {
            let timing: Vec<&str> = server_timing.as_deref().into_iter().collect();
            r.headers(
                at - start,
                response.status(),
                content_type.as_deref(),
                &timing,
            );
            if response.type_() == web_sys::ResponseType::Opaque {
                r.anomaly(
                    at - start,
                    "opaque_response",
                    "no-cors response: status and body are hidden from the page",
                );
            }
        });
        let Some(body) = response.body().filter(|_| wrappable) else {
            self.recording(|r, start| r.end(at - start));
            self.finish();
            return response;
        };
        let hooks = self.hooks();
        let tapped = match glue::tap_body(&body, &hooks) {
            Ok(stream) => stream,
            Err(e) => {
                // tapBody fails only before it takes the reader, so the body is intact.
                self.fault(&format!(
                    "could not tap the body: {}",
                    crate::error::describe_js(&e)
                ));
                return response;
            }
        };
        match glue::wrap_response(&response, &tapped) {
            Ok(wrapped) => wrapped,
            Err(e) => {
                self.note("wrap_failed", &crate::error::describe_js(&e));
                plain_response(&tapped).unwrap_or(response)
            }
        }
    }

    /// The callbacks `tapBody` calls, each a task after the app got the chunk.
    fn hooks(&self) -> Object {
        let table: [(&str, HookCall); 6] = [
            ("onChunks", |run, meta, bytes| run.on_chunks(meta, bytes)),
            ("onOddChunk", |run, at, kind| run.on_odd_chunk(at, kind)),
            ("onEnd", |run, at, _| run.on_end(at)),
            ("onError", |run, at, detail| run.on_error(at, detail)),
            ("onCancel", |run, at, _| run.on_cancel(at)),
            ("onFault", |run, message, _| {
                run.fault(&message.as_string().unwrap_or_default());
            }),
        ];
        let hooks = Object::new();
        let mut keep = Vec::with_capacity(table.len());
        for (name, call) in table {
            let run = self.clone();
            let hook: Hook = Closure::new(move |a: JsValue, b: JsValue| call(&run, a, b));
            let _ = Reflect::set(&hooks, &JsValue::from_str(name), hook.as_ref());
            keep.push(hook);
        }
        if let Ok(mut h) = self.inner.hooks.try_borrow_mut() {
            h.extend(keep);
        }
        hooks
    }

    /// A batch of body chunks from `glue.js`: `meta` holds [arrival time, length] per
    /// chunk, `bytes` their bytes end to end.
    fn on_chunks(&self, meta: JsValue, bytes: JsValue) {
        if guard::is_disabled() {
            return;
        }
        let (Ok(meta), Ok(bytes)) = (
            meta.dyn_into::<Float64Array>(),
            bytes.dyn_into::<Uint8Array>(),
        ) else {
            self.note(
                "chunk_batch_invalid",
                "glue.js passed a chunk batch of the wrong types",
            );
            return;
        };
        let meta = meta.to_vec();
        let bytes = bytes.to_vec();
        let fault = self.inner.probe.options.fault;
        self.recording(|recorder, start| {
            if fault == Some(Fault::DecoderPanic) {
                panic!("ttfx fault injection: decoder forced to fail");
            }
            let mut rest = bytes.as_slice();
            for &[at, len] in meta.as_chunks::<2>().0 {
                let Some((chunk, after)) = rest.split_at_checked(len as usize) else {
                    recorder.anomaly(
                        at - start,
                        "chunk_batch_invalid",
                        "a chunk batch held fewer bytes than its lengths say",
                    );
                    return;
                };
                recorder.chunk(at - start, chunk);
                rest = after;
            }
        });
    }

    /// A chunk the probe could not read: not bytes, or its buffer was transferred away
    /// before the probe's task ran.
    fn on_odd_chunk(&self, at: JsValue, kind: JsValue) {
        if guard::is_disabled() {
            return;
        }
        let (class, detail) = match kind.as_string().as_deref() {
            Some("detached") => (
                "chunk_detached",
                "a chunk's buffer was detached before the probe read it",
            ),
            _ => ("non_byte_chunk", "a body chunk was not a Uint8Array"),
        };
        self.with_recorder(at, |r, t| r.anomaly(t, class, detail));
    }

    fn on_end(&self, at: JsValue) {
        self.with_recorder(at, |r, t| r.end(t));
        self.finish();
    }

    fn on_error(&self, at: JsValue, detail: JsValue) {
        let detail = detail.as_string().unwrap_or_default();
        self.with_recorder(at, |r, t| {
            r.network_error(t, format!("body stream errored: {detail}"))
        });
        self.finish();
    }

    fn on_cancel(&self, at: JsValue) {
        self.with_recorder(at, |r, t| r.abort(t));
        self.finish();
    }

    /// Runs `f` on the run's recorder with the run's start (absolute page ms); does
    /// nothing once the run stopped recording, or while its state is borrowed.
    fn recording(&self, f: impl FnOnce(&mut Recorder, f64)) {
        if let Ok(mut state) = self.inner.state.try_borrow_mut() {
            let start = state.start_abs;
            if let Some(r) = state.recorder.as_mut() {
                f(r, start);
            }
        }
    }

    /// `recording` with `at`, a page time from JS, made relative to the run's start.
    fn with_recorder(&self, at: JsValue, f: impl FnOnce(&mut Recorder, f64)) {
        let at = at.as_f64().unwrap_or(f64::NAN);
        self.recording(|r, start| f(r, at - start));
    }

    fn note(&self, class: &str, detail: &str) {
        let at = clock::now_ms().unwrap_or(f64::NAN);
        self.recording(|r, start| r.anomaly(at - start, class, detail));
    }

    /// The probe failed inside: switch it off and settle the run with what is known,
    /// without touching state a panic may have left half-updated.
    fn fault(&self, message: &str) {
        guard::disable(message);
        let reason = guard::reason().unwrap_or_else(|| message.to_owned());
        let mut timeline = Timeline::default();
        timeline.milestones.set(Milestone::RequestStart, 0.0);
        timeline.anomalies.push(Anomaly {
            at_ms: 0.0,
            class: "probe_fault".into(),
            detail: format!(
                "the probe stopped itself; the app's request was not affected: {reason}"
            ),
        });
        if let Ok(record) = RunRecord::new(
            Some(self.inner.id.clone()),
            self.inner.label.clone(),
            timeline,
        ) {
            self.settle(RunReport::new(record));
        }
    }

    /// Once the stream is over: wait (bounded) for the paint and the Resource Timing
    /// entry, then build and deliver the report.
    fn finish(&self) {
        let Ok(mut state) = self.inner.state.try_borrow_mut() else {
            return;
        };
        if state.finishing {
            return;
        }
        state.finishing = true;
        drop(state);
        let run = self.clone();
        wasm_bindgen_futures::spawn_local(async move {
            run.wait_for_paint().await;
            let resource = run.wait_for_resource_timing().await;
            #[cfg(feature = "voice")]
            let voice = run.wait_for_voice().await;
            // From here to the end is one main-thread task: the report's cost.
            let began = clock::now_ms().ok();
            let timeline = run.timeline(resource);
            #[cfg(feature = "voice")]
            let timeline = timeline.map(|mut timeline| {
                for (part, value) in voice {
                    crate::voice::merge(&mut timeline, part, &value);
                }
                timeline
            });
            if let Some(report) = timeline.and_then(|t| run.report(t)) {
                run.settle(report);
            }
            if let (Some(began), Ok(ended)) = (began, clock::now_ms()) {
                crate::glue::cost_sample("report", ended - began);
            }
        });
    }

    async fn wait_for_paint(&self) {
        let deadline = clock::now_ms().unwrap_or(0.0) + self.inner.probe.options.paint_timeout_ms;
        loop {
            let settled = match self.inner.render.try_borrow() {
                Ok(render) => match render.as_ref() {
                    None => true,
                    Some(watch) => watch
                        .times
                        .try_borrow()
                        .map(|t| t.settled())
                        .unwrap_or(true),
                },
                Err(_) => true,
            };
            if settled || clock::now_ms().unwrap_or(f64::INFINITY) >= deadline {
                return;
            }
            gloo_timers::future::TimeoutFuture::new(16).await;
        }
    }

    #[cfg(feature = "voice")]
    async fn wait_for_voice(&self) -> Vec<(VoicePart, JsValue)> {
        let parts = self
            .inner
            .voice
            .try_borrow_mut()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        let mut out = Vec::new();
        for (part, value) in parts {
            let settled =
                JsFuture::from(glue::settle_within(&value, crate::voice::TIMEOUT_MS)).await;
            out.push((part, settled.unwrap_or(JsValue::NULL)));
        }
        out
    }

    /// The browser adds the entry only after the body ends, sometimes a task later.
    async fn wait_for_resource_timing(&self) -> JsValue {
        let (url, start) = match self.inner.state.try_borrow() {
            Ok(s) => (s.url.clone(), s.start_abs),
            Err(_) => return JsValue::NULL,
        };
        for _ in 0..5 {
            let entry = glue::find_resource_timing(&url, start);
            if !entry.is_null() {
                return entry;
            }
            gloo_timers::future::TimeoutFuture::new(20).await;
        }
        JsValue::NULL
    }

    /// The run's timeline: the recorder's, with render times, visibility and Resource
    /// Timing added.
    fn timeline(&self, resource: JsValue) -> Option<Timeline> {
        let mut state = self.inner.state.try_borrow_mut().ok()?;
        let start = state.start_abs;
        let recorder = state.recorder.take()?;
        if let Some((signal, listener)) = state.abort_listener.take() {
            let _ = signal
                .remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
        let visibility = state.visibility.take();
        drop(state);
        let in_flight = self.inner.probe.in_flight.get();
        self.inner.probe.in_flight.set(in_flight.saturating_sub(1));

        let mut timeline = recorder.finish();
        if let Some(log) = visibility {
            timeline.environment.visibility_changes = log.changes(start);
        }
        let render = self
            .inner
            .render
            .try_borrow_mut()
            .ok()
            .and_then(|mut r| r.take());
        if let Some(watch) = render
            && let Ok(times) = watch.times.try_borrow()
        {
            if let Some(dom) = times.first_dom {
                timeline.milestones.set(Milestone::FirstDom, dom - start);
            }
            if let Some((paint, method)) = times.first_paint() {
                timeline
                    .milestones
                    .set(Milestone::FirstPaint, paint - start);
                timeline.paint_method = Some(method);
            }
        }
        attach_resource_timing(&mut timeline, &resource, start);
        Some(timeline)
    }

    /// The report of `timeline`, with its metrics.
    fn report(&self, mut timeline: Timeline) -> Option<RunReport> {
        let id = Some(self.inner.id.clone());
        let label = self.inner.label.clone();
        match RunRecord::new(id.clone(), label.clone(), timeline.clone()) {
            Ok(record) => Some(RunReport::new(record)),
            Err(e) => {
                // Keep what the decoder saw; drop the observer milestones that broke it.
                timeline.anomalies.push(Anomaly {
                    at_ms: 0.0,
                    class: "timeline_invalid".into(),
                    detail: e.to_string(),
                });
                timeline.milestones.remove(Milestone::FirstDom);
                timeline.milestones.remove(Milestone::FirstPaint);
                timeline.paint_method = None;
                match RunRecord::new(id, label, timeline) {
                    Ok(record) => Some(RunReport::new(record)),
                    Err(e) => {
                        self.fault(&format!("could not build the report: {e}"));
                        None
                    }
                }
            }
        }
    }

    /// Delivers the report and resolves `finished()`; only the first call counts.
    fn settle(&self, report: RunReport) {
        let Some(resolve) = self
            .inner
            .resolve
            .try_borrow_mut()
            .ok()
            .and_then(|mut r| r.take())
        else {
            return;
        };
        let (value, report) = output::deliver(&self.inner.probe.options, report);
        if let Ok(mut slot) = self.inner.report.try_borrow_mut() {
            *slot = Some(report);
        }
        let _ = resolve.call1(&JsValue::NULL, &value);
        // The body hooks and the abort listener hold clones of this run, and the run holds
        // them: a cycle that would keep every finished run (its timeline, its closures)
        // alive for the life of the host page. The stream is over, so let them go; a late
        // call from JS finds no closure and is caught in glue.js.
        if let Ok(mut hooks) = self.inner.hooks.try_borrow_mut() {
            hooks.clear();
        }
        if let Ok(mut state) = self.inner.state.try_borrow_mut()
            && let Some((signal, listener)) = state.abort_listener.take()
        {
            let _ = signal
                .remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
    }
}

fn plain_response(body: &ReadableStream) -> Option<Response> {
    Response::new_with_opt_readable_stream(Some(body)).ok()
}

/// A promise and its resolve function. The executor runs synchronously, so the function
/// is always there; `None` is kept rather than faking one (a `new Function` would also
/// break pages with a strict Content-Security-Policy).
fn deferred() -> (Promise, Option<Function>) {
    let mut resolve = None;
    let promise = Promise::new(&mut |res, _reject| resolve = Some(res));
    (promise, resolve)
}

fn attach_resource_timing(timeline: &mut Timeline, entry: &JsValue, start: f64) {
    if entry.is_null() || entry.is_undefined() {
        return;
    }
    let num = |key: &str| {
        Reflect::get(entry, &JsValue::from_str(key))
            .ok()
            .and_then(|v| v.as_f64())
    };
    let rel = |key: &str| num(key).filter(|v| *v > 0.0).map(|v| v - start);
    timeline.resource_timing = Some(ResourceTiming {
        request_start_ms: rel("requestStart"),
        response_start_ms: rel("responseStart"),
        response_end_ms: rel("responseEnd"),
        encoded_body_size: num("encodedBodySize").map(|v| v as u64),
    });
    let Ok(list) = Reflect::get(entry, &JsValue::from_str("serverTiming")) else {
        return;
    };
    let Ok(list) = list.dyn_into::<js_sys::Array>() else {
        return;
    };
    for item in list.iter() {
        let text = |key: &str| {
            Reflect::get(&item, &JsValue::from_str(key))
                .ok()
                .and_then(|v| v.as_string())
        };
        let Some(name) = text("name") else { continue };
        let duration = Reflect::get(&item, &JsValue::from_str("duration"))
            .ok()
            .and_then(|v| v.as_f64());
        timeline.server.timings.push(ServerTiming {
            name,
            duration_ms: duration,
            description: text("description").filter(|d| !d.is_empty()),
            source: TimingSource::ResourceTiming,
        });
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    /// A host page makes a run per request for as long as it lives: a finished run must
    /// be freed once the page lets go of it.
    #[wasm_bindgen_test]
    async fn a_finished_run_is_freed() {
        let probe = Probe::new(ProbeOptions::default()).unwrap();
        let run = probe.start(None);
        let weak = Rc::downgrade(&run.inner);
        // A data: URL is a real fetch with a streamed body, and needs no server.
        let url = "data:text/event-stream,data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}%0A%0Adata: [DONE]%0A%0A";
        let response = run
            .fetch(&JsValue::from_str(url), &JsValue::UNDEFINED)
            .await
            .unwrap();
        let text = JsFuture::from(response.text().unwrap()).await.unwrap();
        assert!(text.as_string().unwrap().contains("Hi"));
        let report = run.finished().await.unwrap();
        let first = report
            .run
            .timeline
            .milestones
            .get(Milestone::FirstVisibleToken);
        assert!(first.is_some(), "{:?}", report.run.timeline);
        drop(run);
        // The settle path runs inside a task the run spawned; let it unwind.
        gloo_timers::future::TimeoutFuture::new(50).await;
        assert!(
            weak.upgrade().is_none(),
            "the run is still alive after it finished"
        );
    }
}

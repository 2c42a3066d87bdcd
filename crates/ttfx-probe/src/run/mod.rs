//! A probe and its runs: one run measures one request.
//!
//! This file holds [`Probe`], [`ProbeRun`] and the measured fetch up to the body tap; the
//! body hooks `glue.js` calls are in `body.rs`, the end of a run (bounded waits, the
//! report, settling) in `settle.rs`, the Resource Timing entry in `resource_timing.rs`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Function, Promise};
use ttfx_core::decode::Limits;
use ttfx_core::recorder::{Recorder, url_without_query};
use ttfx_core::report::RunReport;
use ttfx_core::timeline::Environment;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Element, ReadableStream, Response};

use crate::options::ProbeOptions;
use crate::render::RenderWatch;
use crate::visibility::VisibilityLog;
#[cfg(feature = "voice")]
use crate::voice::VoicePart;
use crate::{ProbeError, clock, env, glue, guard};

mod body;
mod resource_timing;
mod settle;

use body::Hook;

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
    pub fn start(&self, label: Option<String>) -> ProbeRun {
        let n = self.shared.next_id.get();
        self.shared.next_id.set(n + 1);
        let origin = env::time_origin().unwrap_or(0.0);
        let (promise, resolve) = deferred();
        ProbeRun {
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

/// One measured request.
#[derive(Clone)]
pub struct ProbeRun {
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

impl ProbeRun {
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

    fn note(&self, class: &str, detail: &str) {
        let at = clock::now_ms().unwrap_or(f64::NAN);
        self.recording(|r, start| r.anomaly(at - start, class, detail));
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

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use ttfx_core::milestone::Milestone;
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

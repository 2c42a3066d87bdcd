//! The end of a run: bounded waits for the paint (and voice), the timeline, the report,
//! and settling `finished()`; also the fault path that settles a run at once.

use ttfx_core::milestone::Milestone;
use ttfx_core::report::{Run as RunRecord, RunReport};
use ttfx_core::timeline::{Anomaly, Timeline};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
#[cfg(feature = "voice")]
use wasm_bindgen_futures::JsFuture;

use super::ProbeRun;
use super::resource_timing::attach_resource_timing;
#[cfg(feature = "voice")]
use crate::voice::VoicePart;
use crate::{clock, glue, guard, output};

impl ProbeRun {
    /// The probe failed inside: switch it off and settle the run with what is known,
    /// without touching state a panic may have left half-updated.
    pub(super) fn fault(&self, message: &str) {
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
    pub(super) fn finish(&self) {
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
                glue::cost_sample("report", ended - began);
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
    fn report(&self, timeline: Timeline) -> Option<RunReport> {
        let id = Some(self.inner.id.clone());
        match RunReport::of_timeline(id, self.inner.label.clone(), timeline) {
            Ok(report) => Some(report),
            Err(e) => {
                self.fault(&format!("could not build the report: {e}"));
                None
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

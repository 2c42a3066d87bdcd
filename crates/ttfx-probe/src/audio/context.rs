//! What an `AudioContext` says about its clock and its device, read defensively, and
//! the clock mappings built from it (output: [`Reading`]; input: [`input_mapping`]).
//!
//! `outputLatency`, `baseLatency` and `getOutputTimestamp()` are missing from some
//! engines (and from web-sys), so they are looked up by name: a missing member is `None`,
//! never a thrown TypeError.

use js_sys::{Function, Reflect};
use ttfx_core::playback::{InputMapping, OutputMapping, OutputTimestamp};
use ttfx_core::timeline::ContextState;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{AudioContext, AudioContextState};

use crate::ProbeError;
use crate::clock::now_ms;

/// The context's state in the report's vocabulary. Safari's `interrupted` is not in
/// web-sys's enum, so the raw string is read.
pub fn state(ctx: &AudioContext) -> ContextState {
    let raw = Reflect::get(ctx, &JsValue::from_str("state"))
        .ok()
        .and_then(|v| v.as_string());
    match raw.as_deref() {
        Some("running") => ContextState::Running,
        Some("closed") => ContextState::Closed,
        Some("interrupted") => ContextState::Interrupted,
        // `suspended`, and anything unknown: not rendering.
        _ => ContextState::Suspended,
    }
}

/// Whether the context is rendering.
pub fn running(ctx: &AudioContext) -> bool {
    ctx.state() == AudioContextState::Running
}

fn number(ctx: &AudioContext, name: &str) -> Option<f64> {
    Reflect::get(ctx, &JsValue::from_str(name))
        .ok()
        .and_then(|v| v.as_f64())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// `outputLatency` in seconds, when the engine has it.
pub fn output_latency_s(ctx: &AudioContext) -> Option<f64> {
    number(ctx, "outputLatency")
}

/// `baseLatency` in seconds, when the engine has it.
pub fn base_latency_s(ctx: &AudioContext) -> Option<f64> {
    number(ctx, "baseLatency")
}

/// `getOutputTimestamp()`, when the engine has it and it returned numbers.
pub fn output_timestamp(ctx: &AudioContext) -> Option<OutputTimestamp> {
    let method = Reflect::get(ctx, &JsValue::from_str("getOutputTimestamp"))
        .ok()?
        .dyn_into::<Function>()
        .ok()?;
    let ts = method.call0(ctx).ok()?;
    let field = |name: &str| Reflect::get(&ts, &JsValue::from_str(name)).ok()?.as_f64();
    Some(OutputTimestamp {
        context_time_s: field("contextTime")?,
        performance_time_ms: field("performanceTime")?,
    })
}

/// `currentTime` and `performance.now()` read together: the render position now.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RenderClockRead {
    context_time_s: f64,
    performance_now_ms: f64,
}

impl RenderClockRead {
    /// How much output delay an output timestamp carries, in s: how far its frame lags
    /// the render position, less how old it is. The spec's pair names the frame at the
    /// output, so it lags by the device's latency more than its age (Chromium: 45.0 ms
    /// behind, 5.7 ms old, 39.3 ms ≈ `baseLatency` + `outputLatency`); Firefox's lags by
    /// exactly its age (both = `outputLatency`), so it carries none, and mapping through
    /// it alone came ~30 ms early against the sound server (docs/fidelity.md).
    fn output_delay_in(&self, ts: OutputTimestamp) -> f64 {
        (self.context_time_s - ts.context_time_s)
            - (self.performance_now_ms - ts.performance_time_ms) / 1000.0
    }
}

/// One render quantum at 44.1 kHz (128 frames), the step in which both clocks move.
const QUANTUM_S: f64 = 128.0 / 44_100.0;

/// Whether a pair read just before `now_ms` can be on the page's clock: its
/// `performanceTime` may lie ahead of now by at most the latency the context reports
/// (Chromium's estimate of when the frame reaches the output) and a render quantum.
/// Further ahead it is not: WebKitGTK 2.50's runs ahead of `performance.now()` by about
/// `contextTime` (seconds, with a reported latency of 2.9 ms), and would read as that
/// much output delay.
fn on_page_clock(ts: OutputTimestamp, now_ms: f64, latency_s: f64) -> bool {
    ts.performance_time_ms - now_ms <= 1000.0 * (latency_s + QUANTUM_S)
}

/// Below this delay an output timestamp is taken to be on the render clock: half the
/// latency the context reports (the two cases differ by all of it), and at least one
/// render quantum at 44.1 kHz (2.9 ms), the step in which both clocks move, so a
/// context that reports no latency yet is not misread by one step's noise.
fn on_render_clock_below_s(latency_s: f64) -> f64 {
    (latency_s / 2.0).max(QUANTUM_S)
}

/// The render clock read now, for input frames (a microphone's): `currentTime` with
/// `performance.now()`, less the track's capture latency, and no output latency (the
/// mapping itself is ttfx-core's [`InputMapping`]).
pub fn input_mapping(ctx: &AudioContext, input_latency_s: f64) -> Result<InputMapping, ProbeError> {
    Ok(InputMapping {
        context_time_s: ctx.current_time(),
        performance_now_ms: now_ms()?,
        input_latency_s,
    })
}

/// Latencies as read now, and how a frame time would be mapped with them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub mapping: OutputMapping,
    pub output_latency_s: Option<f64>,
    pub base_latency_s: Option<f64>,
}

impl Reading {
    /// Reads the clocks now: the output timestamp when `use_timestamp` and it is usable,
    /// else `currentTime` with `performance.now()` plus the latencies.
    pub fn now(ctx: &AudioContext, use_timestamp: bool) -> Result<Reading, ProbeError> {
        let output_latency_s = output_latency_s(ctx);
        let base_latency_s = base_latency_s(ctx);
        let timestamp = use_timestamp
            .then(|| output_timestamp(ctx))
            .flatten()
            .filter(OutputTimestamp::usable);
        let latency_s = base_latency_s.unwrap_or(0.0) + output_latency_s.unwrap_or(0.0);
        let render_clock = RenderClockRead {
            context_time_s: ctx.current_time(),
            performance_now_ms: now_ms()?,
        };
        let timestamp =
            timestamp.filter(|ts| on_page_clock(*ts, render_clock.performance_now_ms, latency_s));
        let mapping = match timestamp {
            Some(ts) if render_clock.output_delay_in(ts) >= on_render_clock_below_s(latency_s) => {
                OutputMapping::Timestamp(ts)
            }
            // A pair with no output delay in it (Firefox's) lies on the render clock: its
            // frames are heard the device's latency after it, as with `currentTime`.
            _ => OutputMapping::RenderClock {
                context_time_s: render_clock.context_time_s,
                performance_now_ms: render_clock.performance_now_ms,
                latency_s,
            },
        };
        Ok(Reading {
            mapping,
            output_latency_s,
            base_latency_s,
        })
    }

    /// The latency the mapping adds on top of the clock (0 for the output timestamp).
    pub fn latency_added_s(&self) -> f64 {
        match self.mapping {
            OutputMapping::Timestamp(_) => 0.0,
            OutputMapping::RenderClock { latency_s, .. } => latency_s,
        }
    }

    /// With `outputLatency` read again now, if it was 0 or missing when this reading was
    /// taken and the device has started reporting since (engines read 0 until it runs).
    pub fn with_late_latency(mut self, ctx: &AudioContext) -> Reading {
        if let OutputMapping::RenderClock { latency_s, .. } = &mut self.mapping
            && self.output_latency_s.unwrap_or(0.0) == 0.0
            && let Some(late) = output_latency_s(ctx).filter(|l| *l > 0.0)
        {
            *latency_s += late;
            self.output_latency_s = Some(late);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(context_time_s: f64, performance_time_ms: f64) -> OutputTimestamp {
        OutputTimestamp {
            context_time_s,
            performance_time_ms,
        }
    }

    #[test]
    fn a_pair_stamped_far_ahead_of_now_is_not_on_the_page_clock() {
        // Chromium: a pair a few ms ahead, inside its 43.6 ms of reported latency.
        assert!(on_page_clock(ts(1.0, 1005.0), 1000.0, 0.0116 + 0.032));
        assert!(on_page_clock(ts(1.0, 990.0), 1000.0, 0.0));
        // WebKitGTK: 2.55 s of context time, the pair 2,551 ms ahead of now.
        assert!(!on_page_clock(ts(2.5513, 5235.0), 2684.0, 0.0029));
        // About the limit: latency plus one quantum.
        let limit = 1000.0 * (0.01 + QUANTUM_S);
        assert!(on_page_clock(ts(1.0, 1000.0 + limit - 0.01), 1000.0, 0.01));
        assert!(!on_page_clock(ts(1.0, 1000.0 + limit + 0.01), 1000.0, 0.01));
    }

    #[test]
    fn a_pair_that_lags_by_more_than_its_age_carries_the_output_delay() {
        let now = RenderClockRead {
            context_time_s: 10.0,
            performance_now_ms: 5000.0,
        };
        // Chromium, as measured: 45.0 ms behind the render position, 5.7 ms old.
        let chromium = now.output_delay_in(ts(10.0 - 0.045, 5000.0 - 5.7));
        assert!((chromium - 0.0393).abs() < 1e-9, "{chromium}");
        assert!(chromium >= on_render_clock_below_s(0.0116 + 0.032));
        // Firefox, as measured: behind by exactly its age (its outputLatency).
        let firefox = now.output_delay_in(ts(10.0 - 0.03084, 5000.0 - 30.84));
        assert!(firefox.abs() < 1e-9, "{firefox}");
        assert!(firefox < on_render_clock_below_s(0.03084));
        // A context that reports no latency yet: one quantum's noise is not a delay.
        assert!(0.0029 < on_render_clock_below_s(0.0));
    }
}

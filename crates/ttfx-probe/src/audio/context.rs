//! What an `AudioContext` says about its clock and its device, read defensively.
//!
//! `outputLatency`, `baseLatency` and `getOutputTimestamp()` are missing from some
//! engines (and from web-sys), so they are looked up by name: a missing member is `None`,
//! never a thrown TypeError.

use js_sys::{Function, Reflect};
use ttfx_core::playback::{OutputMapping, OutputTimestamp};
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
        let mapping = match timestamp {
            Some(ts) => OutputMapping::Timestamp(ts),
            None => OutputMapping::RenderClock {
                context_time_s: ctx.current_time(),
                performance_now_ms: now_ms()?,
                latency_s: base_latency_s.unwrap_or(0.0) + output_latency_s.unwrap_or(0.0),
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

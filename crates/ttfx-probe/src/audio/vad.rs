//! The voice-activity detector's node: an AudioWorklet processor (`vad_processor.js`,
//! loaded from a Blob URL) that posts where speech starts and ends, as frame numbers on
//! the context's `currentFrame` clock. Its frame counts come from ttfx-core
//! ([`VadSettings::at_rate`](ttfx_core::turn::VadSettings::at_rate)). The rule
//! (docs/probe.md, "Voice turns"):
//!
//! - The input, channels mixed (their mean), is cut into frames of `frame_samples`
//!   (10 ms) across render quanta; an input with no channels is a quantum of silence.
//! - A frame is speech when its mean square is at or above 10^(threshold_dbfs / 10)
//!   (its RMS level in dBFS at or above the threshold).
//! - `speech_start` is the first frame of a run of `min_speech_frames` consecutive speech
//!   frames, decided when that run completes.
//! - `speech_end` is the end of the last speech frame, decided once `hangover_frames`
//!   non-speech frames have followed it; a speech frame inside the hangover continues
//!   the utterance.
//!
//! The rule runs in JS on the audio thread because that is where the samples are: a
//! wasm module there would need its own compile, memory and a second copy of the
//! allocator, for a loop of a few lines.
//!
//! Graph: source → detector → zero gain → destination. The processor writes no output.
//! Chromium 156 runs an AudioWorkletNode that reaches no destination (measured: every
//! quantum, with 0 or 1 outputs, connected or not), but engines that pull the graph
//! from the destination need the path; a zero gain keeps it silent whatever a processor
//! writes.

use js_sys::{Object, Reflect};
use ttfx_core::turn::VadFrames;
use wasm_bindgen::prelude::*;
use web_sys::{
    AudioNode, AudioWorkletNode, AudioWorkletNodeOptions, BaseAudioContext, GainNode, MessageEvent,
};

use super::worklet;
use crate::ProbeError;
use crate::clock::now_ms;

const PROCESSOR_JS: &str = include_str!("vad_processor.js");
const PROCESSOR_NAME: &str = "ttfx-vad";

/// A decision, in input frame numbers (divide by the sample rate for context time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VadEvent {
    /// Speech started at frame `start`; decided at frame `at`, the end of the frame
    /// that completed the run.
    Start { start: f64, at: f64 },
    /// The utterance that started at `start` ended at `end` (the end of its last speech
    /// frame); decided at frame `at` (`end` + the hangover).
    End { start: f64, end: f64, at: f64 },
}

/// The detector on one context, fed by one node.
pub struct Vad {
    node: AudioWorkletNode,
    mute: GainNode,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
}

impl std::fmt::Debug for Vad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vad").finish_non_exhaustive()
    }
}

impl Vad {
    /// Loads the processor into `ctx` and feeds it `source`. `on_event` gets each
    /// decision with the page time (`performance.now()`) its message arrived, taken
    /// before anything else is done with it.
    pub async fn attach(
        ctx: &BaseAudioContext,
        source: &AudioNode,
        rule: VadFrames,
        mut on_event: impl FnMut(VadEvent, f64) + 'static,
    ) -> Result<Vad, ProbeError> {
        worklet::load(ctx, PROCESSOR_JS, "voice-activity detector").await?;
        let processor_options = Object::new();
        for (key, value) in [
            ("frameSamples", f64::from(rule.frame_samples)),
            ("minSpeechFrames", f64::from(rule.min_speech_frames)),
            ("hangoverFrames", f64::from(rule.hangover_frames)),
            ("thresholdDbfs", rule.threshold_dbfs),
        ] {
            Reflect::set(&processor_options, &key.into(), &value.into())
                .map_err(|e| ProbeError::browser("detector options", &e))?;
        }
        let options = AudioWorkletNodeOptions::new();
        options.set_processor_options(Some(&processor_options));
        options.set_number_of_inputs(1);
        options.set_number_of_outputs(1);
        let node = AudioWorkletNode::new_with_options(ctx, PROCESSOR_NAME, &options)
            .map_err(|e| ProbeError::browser("new AudioWorkletNode (detector)", &e))?;
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let Ok(arrived) = now_ms() else { return };
            if let Some(decision) = read(&event.data()) {
                on_event(decision, arrived);
            }
        });
        node.port()
            .map_err(|e| ProbeError::browser("AudioWorkletNode.port", &e))?
            .set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        let mute = ctx
            .create_gain()
            .map_err(|e| ProbeError::browser("createGain", &e))?;
        mute.gain().set_value(0.0);
        source
            .connect_with_audio_node(&node)
            .map_err(|e| ProbeError::browser("connect the detector", &e))?;
        node.connect_with_audio_node(&mute)
            .and_then(|_| mute.connect_with_audio_node(&ctx.destination()))
            .map_err(|e| ProbeError::browser("connect the detector's mute", &e))?;
        Ok(Vad {
            node,
            mute,
            _on_message: on_message,
        })
    }

    /// Stops the processor and takes the detector out of the graph (idempotent).
    pub fn detach(&self) {
        if let Ok(port) = self.node.port() {
            port.post_message(&JsValue::from_str("stop")).ok();
            port.set_onmessage(None);
        }
        self.node.disconnect().ok();
        self.mute.disconnect().ok();
    }
}

/// A processor message → a decision; anything else (never sent) → `None`.
fn read(data: &JsValue) -> Option<VadEvent> {
    let number = |k: &str| Reflect::get(data, &JsValue::from_str(k)).ok()?.as_f64();
    let kind = Reflect::get(data, &JsValue::from_str("kind"))
        .ok()?
        .as_string()?;
    let (start, at) = (number("start")?, number("at")?);
    match kind.as_str() {
        "start" => Some(VadEvent::Start { start, at }),
        "end" => Some(VadEvent::End {
            start,
            end: number("end")?,
            at,
        }),
        _ => None,
    }
}

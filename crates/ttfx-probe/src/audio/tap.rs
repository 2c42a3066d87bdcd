//! The AudioWorklet tap: finds the exact first audible frame of whatever feeds it and
//! maps it to `performance.now()`.
//!
//! The processor (`processor.js`) is loaded from a Blob URL (`worklet.rs`), so no `eval`
//! and no file to serve. The node sits beside the audio path (source → tap → destination, writing
//! silence), so it changes nothing the user hears. When the engine has no AudioWorklet or
//! a Content-Security-Policy blocks Blob modules, `attach` fails with a clear error and
//! the player falls back to the scheduled time of the first audible decoded sample.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Reflect};
use ttfx_core::playback::AUDIBLE_THRESHOLD;
use wasm_bindgen::prelude::*;
use web_sys::{AudioContext, AudioNode, AudioWorkletNode, AudioWorkletNodeOptions, MessageEvent};

use super::context::Reading;
use super::worklet;
use crate::ProbeError;

const PROCESSOR_JS: &str = include_str!("processor.js");
const PROCESSOR_NAME: &str = "ttfx-tap";

/// The first audible frame, as the tap saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TapHit {
    /// Audio-clock time of the frame (s).
    pub context_s: f64,
    /// The clocks and latencies read when the hit was reported.
    pub reading: Reading,
}

/// A tap on one node of one context.
pub struct AudioTap {
    ctx: AudioContext,
    node: AudioWorkletNode,
    hit: Rc<RefCell<Option<TapHit>>>,
    /// Kept alive as long as the tap: the port calls it.
    _on_message: Closure<dyn FnMut(MessageEvent)>,
}

impl std::fmt::Debug for AudioTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AudioTap")
            .field("hit", &self.hit.borrow())
            .finish()
    }
}

impl AudioTap {
    /// Loads the processor into `ctx` (once per context is enough; again is harmless)
    /// and taps `source`. The tap starts armed. `use_timestamp` chooses whether hits are
    /// mapped through `getOutputTimestamp()` when it is usable.
    pub async fn attach(
        ctx: &AudioContext,
        source: &AudioNode,
        use_timestamp: bool,
    ) -> Result<AudioTap, ProbeError> {
        worklet::load(ctx, PROCESSOR_JS, "tap").await?;
        let options = AudioWorkletNodeOptions::new();
        let processor_options = Object::new();
        set(
            &processor_options,
            "threshold",
            &JsValue::from(AUDIBLE_THRESHOLD),
        )?;
        set(&processor_options, "armed", &JsValue::TRUE)?;
        options.set_processor_options(Some(&processor_options));
        options.set_number_of_inputs(1);
        options.set_number_of_outputs(1);
        let node = AudioWorkletNode::new_with_options(ctx, PROCESSOR_NAME, &options)
            .map_err(|e| ProbeError::browser("new AudioWorkletNode", &e))?;

        let hit = Rc::new(RefCell::new(None));
        let on_message = {
            let hit = Rc::clone(&hit);
            let ctx = ctx.clone();
            Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                let data = event.data();
                let number = |k: &str| Reflect::get(&data, &JsValue::from_str(k)).ok()?.as_f64();
                let (Some(frame), Some(rate)) = (number("frame"), number("sampleRate")) else {
                    return;
                };
                // The clocks are read as soon as the hit arrives: the mapping is
                // freshest, and a worklet message takes well under a quantum to arrive.
                if let (Ok(reading), Ok(mut slot)) =
                    (Reading::now(&ctx, use_timestamp), hit.try_borrow_mut())
                    && slot.is_none()
                    && rate > 0.0
                {
                    *slot = Some(TapHit {
                        context_s: frame / rate,
                        reading,
                    });
                }
            })
        };
        let port = node
            .port()
            .map_err(|e| ProbeError::browser("AudioWorkletNode.port", &e))?;
        port.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        source
            .connect_with_audio_node(&node)
            .map_err(|e| ProbeError::browser("connect to the tap", &e))?;
        node.connect_with_audio_node(&ctx.destination())
            .map_err(|e| ProbeError::browser("connect the tap", &e))?;
        Ok(AudioTap {
            ctx: ctx.clone(),
            node,
            hit,
            _on_message: on_message,
        })
    }

    /// Forgets the last hit and reports the next audible frame.
    pub fn arm(&self) -> Result<(), ProbeError> {
        if let Ok(mut slot) = self.hit.try_borrow_mut() {
            *slot = None;
        }
        self.post("arm")
    }

    /// The first audible frame since the tap was armed, if it has been heard.
    pub fn hit(&self) -> Option<TapHit> {
        self.hit.try_borrow().ok().and_then(|h| *h)
    }

    /// The context the tap lives in.
    pub fn context(&self) -> &AudioContext {
        &self.ctx
    }

    /// Stops the processor and takes the node out of the graph.
    pub fn detach(&self) {
        let _ = self.post("stop");
        self.node.disconnect().ok();
    }

    fn post(&self, message: &str) -> Result<(), ProbeError> {
        self.node
            .port()
            .and_then(|port| port.post_message(&JsValue::from_str(message)))
            .map_err(|e| ProbeError::browser("AudioWorklet port", &e))
    }
}

fn set(target: &Object, key: &str, value: &JsValue) -> Result<(), ProbeError> {
    Reflect::set(target, &JsValue::from_str(key), value)
        .map(drop)
        .map_err(|e| ProbeError::browser("tap options", &e))
}

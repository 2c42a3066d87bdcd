//! Voice results (voice builds): the page hands over what `TtsPlayer`/`AudioTap` and
//! `VoiceHandoff` returned, as plain JS objects, and they are read back into ttfx-core
//! types with serde-wasm-bindgen (no JSON text in between).

use ttfx_core::voice_result::{
    AudioMeasurement, HandoffResult, TurnMeasurement, VoicePart, VoiceResult,
};
use wasm_bindgen::prelude::*;

use crate::{Analysis, js};

/// Reads one voice result; `null`/`undefined` means it did not arrive in time.
pub fn read(part: VoicePart, value: JsValue) -> VoiceResult {
    if value.is_null() || value.is_undefined() {
        return VoiceResult::Missing(part);
    }
    let read = match part {
        VoicePart::Audio => {
            serde_wasm_bindgen::from_value::<AudioMeasurement>(value).map(VoiceResult::Audio)
        }
        VoicePart::Handoff => {
            serde_wasm_bindgen::from_value::<HandoffResult>(value).map(VoiceResult::Handoff)
        }
        VoicePart::Turn => {
            serde_wasm_bindgen::from_value::<TurnMeasurement>(value).map(VoiceResult::Turn)
        }
    };
    read.unwrap_or_else(|e| VoiceResult::Unreadable(part, e.to_string()))
}

#[wasm_bindgen]
impl Analysis {
    /// A voice result the run included (`part`: `"audio"`, `"handoff"` or `"turn"`), merged before
    /// the metrics; `null` when it did not arrive in time.
    pub fn voice(&mut self, run: u32, part: String, value: JsValue) -> Result<(), JsError> {
        let part = VoicePart::from_name(&part).map_err(|e| JsError::new(&e))?;
        let result = read(part, value);
        self.runs.page(run).map_err(js)?.voice.push(result);
        Ok(())
    }
}

//! A voice turn from the browser's own microphone, as a voice product makes one: the
//! probe's `VoiceTurn` waits for the end of the user's speech, the speech goes to the
//! simulator's STT (streamed), and the transcript is the prompt of the measured request
//! (`request::measure`, which speaks the reply). The turn's result joins the run, so the
//! waterfall shows the turn from `speech_start` and `voice_to_voice_ms` with its stages.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Promise, Reflect};
use serde::Serialize;
use ttfx_probe::ProbeRun;
use ttfx_probe::VoicePart;
use ttfx_probe::audio::{TurnOptions, VoiceTurn};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{JsFuture, future_to_promise};
use web_sys::{AudioContext, Blob, BlobPropertyBag, FormData, MediaStream, RequestInit, Response};

use crate::js::text;

/// How long a turn waits for the user to speak.
const LISTEN_TIMEOUT_MS: f64 = 30_000.0;
/// How long the run waits for the turn's result (it is ended with the reply's stream).
const RESULT_TIMEOUT_MS: f64 = 15_000.0;
/// An utterance that began this soon after the detector started was under way already
/// (its true start is lost): the turn waits for the next one.
const UNDER_WAY_MS: f64 = 100.0;

thread_local! {
    static MICROPHONE: RefCell<Option<MediaStream>> = const { RefCell::new(None) };
}

/// The page's microphone, asked for once (the browser's permission prompt). Raw capture:
/// echo cancellation, noise suppression and gain control would reshape the speech the
/// detector times.
pub async fn microphone() -> Result<MediaStream, String> {
    if let Some(stream) = MICROPHONE.with(|m| m.borrow().clone()) {
        return Ok(stream);
    }
    let devices = web_sys::window()
        .ok_or("no window")?
        .navigator()
        .media_devices()
        .map_err(|_| "voice turn: this browser has no microphone API".to_owned())?;
    let audio = js_sys::Object::new();
    for key in ["echoCancellation", "noiseSuppression", "autoGainControl"] {
        let _ = Reflect::set(&audio, &key.into(), &JsValue::FALSE);
    }
    let constraints = web_sys::MediaStreamConstraints::new();
    constraints.set_audio(&audio);
    let promise = devices
        .get_user_media_with_constraints(&constraints)
        .map_err(|e| format!("voice turn: getUserMedia: {}", text(&e)))?;
    let stream: MediaStream = JsFuture::from(promise)
        .await
        .map_err(|e| format!("voice turn: no microphone: {}", text(&e)))?
        .dyn_into()
        .map_err(|_| "voice turn: getUserMedia gave no MediaStream".to_owned())?;
    MICROPHONE.with(|m| *m.borrow_mut() = Some(stream.clone()));
    Ok(stream)
}

/// A turn that has heard the user and has their transcript.
pub struct Heard {
    pub turn: Rc<VoiceTurn>,
    pub transcript: String,
}

/// Waits for the user to speak and stop, then transcribes the speech at `stt_url`.
pub async fn listen(ctx: &AudioContext, stt_url: &str) -> Result<Heard, String> {
    let stream = microphone().await?;
    let turn = loop {
        let turn = VoiceTurn::new(&stream, Some(ctx.clone()), TurnOptions::default())
            .await
            .map_err(|e| format!("voice turn: {e}"))?;
        let started = now();
        let utterance = turn
            .next_utterance(LISTEN_TIMEOUT_MS)
            .await
            .map_err(|e| format!("voice turn: {e}"))?;
        if utterance.speech_start_ms - started >= UNDER_WAY_MS {
            break turn;
        }
        turn.close();
    };
    let response = turn
        .fetch_transcription(&JsValue::from_str(stt_url), &upload()?.into())
        .await
        .map_err(|e| format!("voice turn: transcription failed: {}", text(&e)))?;
    let response: Response = response;
    if !response.ok() {
        return Err(format!(
            "voice turn: transcription HTTP {}",
            response.status()
        ));
    }
    let body = JsFuture::from(response.text().map_err(|e| text(&e))?)
        .await
        .map_err(|e| format!("voice turn: transcription body: {}", text(&e)))?
        .as_string()
        .unwrap_or_default();
    Ok(Heard {
        turn: Rc::new(turn),
        transcript: transcript_of(&body),
    })
}

/// Includes the turn's result in `run` (whose fetch has resolved).
pub fn include(run: &ProbeRun, turn: &Rc<VoiceTurn>) {
    let Some(start) = run.request_start() else {
        return;
    };
    let turn = Rc::clone(turn);
    let result: Promise = future_to_promise(async move {
        let m = turn
            .result(start, RESULT_TIMEOUT_MS)
            .await
            .map_err(|e| JsValue::from_str(&e.to_string()))?;
        m.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
            .map_err(JsValue::from)
    });
    run.include_voice(VoicePart::Turn, result.into());
}

/// The upload: a real product sends the recorded speech; the simulator does not listen,
/// so a tenth of a second of silence stands in (docs/voice.md, "Limits").
fn upload() -> Result<RequestInit, String> {
    let form = FormData::new().map_err(|e| text(&e))?;
    let bag = BlobPropertyBag::new();
    bag.set_type("audio/wav");
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(&silent_wav(8_000, 800)[..]));
    let blob = Blob::new_with_u8_array_sequence_and_options(&parts, &bag).map_err(|e| text(&e))?;
    form.append_with_blob_and_filename("file", &blob, "speech.wav")
        .map_err(|e| text(&e))?;
    for (k, v) in [("model", "ttfx-lab"), ("stream", "true")] {
        form.append_with_str(k, v).map_err(|e| text(&e))?;
    }
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_body(&form);
    Ok(init)
}

/// A 16-bit mono PCM WAV of `frames` silent frames at `rate`.
fn silent_wav(rate: u32, frames: u32) -> Vec<u8> {
    let mut wav = ttfx_core::decode::wav::pcm16_mono_header(rate, u64::from(frames));
    wav.resize(wav.len() + frames as usize * 2, 0);
    wav
}

/// The final text of a transcription: a streamed one's `transcript.text.done`, else a
/// JSON reply's `text`, else the body as it is (`response_format=text`).
pub fn transcript_of(body: &str) -> String {
    let done = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .filter(|v| v["type"] == "transcript.text.done")
        .find_map(|v| v["text"].as_str().map(str::to_owned));
    if let Some(text) = done {
        return text;
    }
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(v) => v["text"].as_str().unwrap_or_default().to_owned(),
        Err(_) => body.trim().to_owned(),
    }
}

fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transcript_is_the_done_events_text_or_the_json_text() {
        let sse = "event: transcript.text.delta\ndata: {\"type\":\"transcript.text.delta\",\"delta\":\"Hi\"}\n\n\
                   event: transcript.text.done\ndata: {\"type\":\"transcript.text.done\",\"text\":\"Hi there\"}\n\n";
        assert_eq!(transcript_of(sse), "Hi there");
        assert_eq!(transcript_of("{\"text\":\"Hello\"}"), "Hello");
        assert_eq!(transcript_of("plain words\n"), "plain words");
    }

    #[test]
    fn the_stand_in_upload_is_a_valid_silent_wav() {
        let wav = silent_wav(8_000, 800);
        assert_eq!(wav.len(), 44 + 1600);
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), 8_000);
        assert!(wav[44..].iter().all(|b| *b == 0));
    }
}

//! Voice: streaming TTS playback, the first audible sample, and the LLM → TTS handoff.
//!
//! - [`TtsPlayer`] plays a TTS body (PCM16 at a given rate, WAV, OpenAI speech SSE) as it
//!   arrives, gaplessly, on the app's `AudioContext` or its own, and measures
//!   `tts_request`, `first_audio_byte`, `first_audio_scheduled`, `first_audio_out`, the
//!   arrival series and underruns.
//! - [`AudioTap`] is the tap mode: the app keeps its own player and hands over the node
//!   that feeds the destination.
//! - [`HandoffRecorder`] segments the visible text and records each segment's handoff.
//! - [`VoiceTurn`] measures what comes before the LLM request in a voice turn: the
//!   user's speech (a voice-activity detector on the microphone stream, [`Vad`]), the
//!   app's transcription request, and a barge-in.
//!
//! Results are ttfx-core types relative to the request's `request_start`
//! ([`AudioMeasurement::apply_to`], [`HandoffRecorder::apply_to`] merge them into a
//! timeline). `js.rs` is the JS face.

mod context;
mod format;
mod handoff;
mod js;
mod js_turn;
mod measurement;
mod player;
mod tap;
mod transcription;
mod turn;
mod vad;
mod worklet;

pub use context::Reading;
pub use format::{TtsDecoder, TtsFormat};
pub use handoff::HandoffRecorder;
pub use js::{JsAudioTap, JsTtsPlayer, JsVoiceHandoff};
pub use js_turn::JsVoiceTurn;
pub use measurement::AudioMeasurement;
pub use player::{PlayerOptions, TtsPlayer};
pub use tap::{AudioTap, TapHit};
pub use turn::{TurnOptions, Utterance, VoiceTurn};
pub use vad::{Vad, VadEvent};

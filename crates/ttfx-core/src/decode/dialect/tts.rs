//! OpenAI speech with `stream_format: "sse"`: `speech.audio.delta` events carry base64
//! audio in the requested format; `speech.audio.done` carries usage and ends the stream.
//!
//! The audio is decoded by what its first bytes say (WAV header, compressed signature,
//! else OpenAI's `pcm`: 24 kHz mono 16-bit), so the samples come out whichever
//! `response_format` was asked for, when it is PCM or WAV.

use crate::decode::audio::{AudioKind, AudioStream};
use crate::decode::base64;
use crate::decode::dialect::{
    Progress, SseDialect, server_error, str_field, typed_payload, u64_field, unknown_event,
};
use crate::decode::event::{ErrorClass, Event};
use crate::decode::json::JsonExt;
use crate::decode::sse::SseEvent;
use crate::server_timing::Usage;

pub struct OpenAiSpeech {
    progress: Progress,
    audio: AudioStream,
}

impl Default for OpenAiSpeech {
    fn default() -> Self {
        OpenAiSpeech {
            progress: Progress::default(),
            audio: AudioStream::new(AudioKind::Sniff {
                sample_rate: 24_000,
                channels: 1,
            }),
        }
    }
}

impl SseDialect for OpenAiSpeech {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Event>) {
        let Some((payload, kind)) = typed_payload(self.progress, event, out) else {
            return;
        };
        match kind.as_str() {
            "speech.audio.delta" => {
                let audio = str_field(&payload, "audio").unwrap_or("");
                match base64::decode(audio) {
                    Ok(bytes) => self.audio.push(&bytes, out),
                    Err(e) => out.push(Event::error(
                        ErrorClass::InvalidAudio,
                        format!("openai-speech: audio delta skipped: {e}"),
                    )),
                }
            }
            "speech.audio.done" => {
                self.audio.finish(out);
                if let Some(usage) = payload.get("usage").filter(|u| u.is_object()) {
                    out.push(Event::Usage {
                        usage: Usage {
                            prompt_tokens: u64_field(usage, "input_tokens"),
                            completion_tokens: u64_field(usage, "output_tokens"),
                            ..Usage::default()
                        },
                    });
                }
                self.progress = Progress::Done;
                out.push(Event::Done { reason: None });
            }
            "error" => {
                self.progress = Progress::Failed;
                out.push(server_error(payload.get("error").unwrap_or(&payload)));
            }
            other => out.push(unknown_event("openai-speech", other)),
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        if !self.progress.is_over() {
            self.audio.finish(out);
        }
        self.progress.finish("`speech.audio.done`", out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dialect::test_support::{classes, run_sse};

    #[test]
    fn base64_pcm_deltas_become_samples_then_usage_and_done() {
        // [1, -1] and [256] as 16-bit little-endian, split mid-sample across deltas.
        let events = run_sse(
            &mut OpenAiSpeech::default(),
            &[
                (
                    "message",
                    r#"{"type":"speech.audio.delta","audio":"AQD//w=="}"#,
                ),
                ("message", r#"{"type":"speech.audio.delta","audio":"AA=="}"#),
                ("message", r#"{"type":"speech.audio.delta","audio":"AQ=="}"#),
                (
                    "message",
                    r#"{"type":"speech.audio.done","usage":{"input_tokens":4,"output_tokens":9,"total_tokens":13}}"#,
                ),
            ],
        );
        assert_eq!(
            events,
            [
                Event::AudioFormat {
                    sample_rate: 24_000,
                    channels: 1,
                    bits_per_sample: 16
                },
                Event::AudioSamples {
                    samples: vec![1, -1]
                },
                Event::AudioSamples { samples: vec![256] },
                Event::Usage {
                    usage: Usage {
                        prompt_tokens: Some(4),
                        completion_tokens: Some(9),
                        ..Usage::default()
                    }
                },
                Event::Done { reason: None },
            ]
        );
    }

    #[test]
    fn bad_base64_is_skipped_and_missing_done_is_truncation() {
        let events = run_sse(
            &mut OpenAiSpeech::default(),
            &[("message", r#"{"type":"speech.audio.delta","audio":"@@@@"}"#)],
        );
        assert_eq!(
            classes(&events),
            [ErrorClass::InvalidAudio, ErrorClass::Truncated]
        );
    }
}

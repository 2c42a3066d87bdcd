//! The TTS wire formats the player reads, decoded incrementally by ttfx-core.

use std::str::FromStr;

use ttfx_core::decode::audio::{AudioKind, AudioStream};
use ttfx_core::decode::{Decoder, DialectKind, Event, Limits};

/// What the TTS response body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtsFormat {
    /// Headerless little-endian 16-bit PCM at this rate and channel count.
    Pcm16 { sample_rate: u32, channels: u16 },
    /// A WAV body (the header says the rest).
    Wav,
    /// OpenAI speech with `stream_format: "sse"`: base64 audio deltas.
    OpenAiSpeech,
}

impl TtsFormat {
    /// OpenAI's `pcm`: 24 kHz mono.
    pub const OPENAI_PCM: TtsFormat = TtsFormat::Pcm16 {
        sample_rate: 24_000,
        channels: 1,
    };

    /// A format from its name (`pcm16`, `wav`, `openai-speech`) and, for PCM, its rate
    /// and channel count (default 24 kHz mono).
    pub fn parse(
        name: &str,
        sample_rate: Option<u32>,
        channels: Option<u16>,
    ) -> Result<TtsFormat, String> {
        match DialectKind::from_str(name) {
            Ok(DialectKind::Pcm16) => {
                let sample_rate = sample_rate.unwrap_or(24_000);
                let channels = channels.unwrap_or(1);
                if !(3_000..=768_000).contains(&sample_rate) {
                    return Err(format!(
                        "sampleRate {sample_rate} is outside 3000..=768000 Hz"
                    ));
                }
                if !(1..=32).contains(&channels) {
                    return Err(format!("channels {channels} is outside 1..=32"));
                }
                Ok(TtsFormat::Pcm16 {
                    sample_rate,
                    channels,
                })
            }
            Ok(DialectKind::Wav) => Ok(TtsFormat::Wav),
            Ok(DialectKind::OpenAiSpeech) => Ok(TtsFormat::OpenAiSpeech),
            _ => Err(format!(
                "unknown TTS format `{name}` (known: pcm16, wav, openai-speech)"
            )),
        }
    }
}

/// An incremental decoder for one TTS body.
pub enum TtsDecoder {
    /// Raw audio: PCM at the caller's rate, or WAV.
    Raw(AudioStream, Vec<Event>),
    /// Framed audio (SSE).
    Framed(Box<Decoder>),
}

impl std::fmt::Debug for TtsDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TtsDecoder::Raw(..) => "TtsDecoder::Raw",
            TtsDecoder::Framed(_) => "TtsDecoder::Framed",
        })
    }
}

impl TtsDecoder {
    pub fn new(format: TtsFormat) -> TtsDecoder {
        match format {
            TtsFormat::Pcm16 {
                sample_rate,
                channels,
            } => {
                let mut held = Vec::new();
                let kind = AudioKind::Pcm16 {
                    sample_rate,
                    channels,
                };
                let stream = AudioStream::start(kind, &mut held);
                TtsDecoder::Raw(stream, held)
            }
            TtsFormat::Wav => TtsDecoder::Raw(AudioStream::new(AudioKind::Wav), Vec::new()),
            TtsFormat::OpenAiSpeech => TtsDecoder::Framed(Box::new(Decoder::new(
                DialectKind::OpenAiSpeech,
                Limits::DEFAULT,
            ))),
        }
    }

    /// The events one body chunk completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        match self {
            TtsDecoder::Raw(stream, held) => {
                let mut out = std::mem::take(held);
                stream.push(bytes, &mut out);
                out
            }
            TtsDecoder::Framed(decoder) => decoder.push(bytes),
        }
    }

    /// The events the end of the body completed or revealed.
    pub fn finish(&mut self) -> Vec<Event> {
        match self {
            TtsDecoder::Raw(stream, held) => {
                let mut out = std::mem::take(held);
                stream.finish(&mut out);
                out
            }
            TtsDecoder::Framed(decoder) => decoder.finish(),
        }
    }
}

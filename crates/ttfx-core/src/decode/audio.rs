//! Audio payloads whose encoding is known only from their first bytes (TTS deltas,
//! raw audio bodies): WAV is parsed, 16-bit PCM decoded, compressed audio counted.

use crate::decode::event::Event;
use crate::decode::wav::{Pcm16Stream, WavStream};

/// What an audio stream is known to be, or how to find out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioKind {
    Wav,
    /// Headerless little-endian 16-bit PCM.
    Pcm16 {
        sample_rate: u32,
        channels: u16,
    },
    /// Look at the first bytes: RIFF → WAV; MP3/Ogg/FLAC/AAC signatures → counted as
    /// encoded; anything else → PCM16 with this rate and channel count.
    Sniff {
        sample_rate: u32,
        channels: u16,
    },
}

/// OpenAI's `pcm` speech format: 24 kHz, mono, 16-bit little-endian.
pub const OPENAI_PCM: AudioKind = AudioKind::Pcm16 {
    sample_rate: 24_000,
    channels: 1,
};

enum State {
    Sniffing {
        prefix: Vec<u8>,
        sample_rate: u32,
        channels: u16,
    },
    Wav(WavStream),
    Pcm(Pcm16Stream),
    Encoded,
}

/// Incremental audio decoder.
pub struct AudioStream {
    state: State,
}

impl AudioStream {
    pub fn new(kind: AudioKind) -> Self {
        let state = match kind {
            AudioKind::Wav => State::Wav(WavStream::new()),
            AudioKind::Pcm16 { .. } => State::Pcm(Pcm16Stream::default()),
            AudioKind::Sniff {
                sample_rate,
                channels,
            } => State::Sniffing {
                prefix: Vec::new(),
                sample_rate,
                channels,
            },
        };
        AudioStream { state }
    }

    /// The format event a headerless PCM stream starts with (WAV streams emit their own).
    pub fn start(kind: AudioKind, out: &mut Vec<Event>) -> Self {
        if let AudioKind::Pcm16 {
            sample_rate,
            channels,
        } = kind
        {
            out.push(pcm_format(sample_rate, channels));
        }
        Self::new(kind)
    }

    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        if let State::Sniffing {
            prefix,
            sample_rate,
            channels,
        } = &mut self.state
        {
            prefix.extend_from_slice(bytes);
            if prefix.len() < 4 {
                return;
            }
            let prefix = std::mem::take(prefix);
            self.state = sniff(&prefix, *sample_rate, *channels, out);
            self.feed(&prefix, out);
            return;
        }
        self.feed(bytes, out);
    }

    pub fn finish(&mut self, out: &mut Vec<Event>) {
        if let State::Sniffing {
            prefix,
            sample_rate,
            channels,
        } = &mut self.state
        {
            if prefix.is_empty() {
                return;
            }
            let prefix = std::mem::take(prefix);
            self.state = sniff(&prefix, *sample_rate, *channels, out);
            self.feed(&prefix, out);
        }
        match &mut self.state {
            State::Wav(wav) => wav.finish(out),
            State::Pcm(pcm) => {
                if pcm.finish() {
                    out.push(Event::error(
                        crate::decode::event::ErrorClass::Truncated,
                        "stream ended in the middle of a 16-bit sample",
                    ));
                }
            }
            State::Sniffing { .. } | State::Encoded => {}
        }
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        match &mut self.state {
            State::Wav(wav) => wav.push(bytes, out),
            State::Pcm(pcm) => {
                let samples = pcm.push(bytes);
                if !samples.is_empty() {
                    out.push(Event::AudioSamples { samples });
                }
            }
            State::Encoded => {
                if !bytes.is_empty() {
                    out.push(Event::AudioEncoded { bytes: bytes.len() });
                }
            }
            State::Sniffing { .. } => {}
        }
    }
}

fn pcm_format(sample_rate: u32, channels: u16) -> Event {
    Event::AudioFormat {
        sample_rate,
        channels,
        bits_per_sample: 16,
    }
}

fn sniff(prefix: &[u8], sample_rate: u32, channels: u16, out: &mut Vec<Event>) -> State {
    if prefix.starts_with(b"RIFF") {
        return State::Wav(WavStream::new());
    }
    let compressed = prefix.starts_with(b"ID3")
        || prefix.starts_with(b"OggS")
        || prefix.starts_with(b"fLaC")
        // MPEG audio and ADTS AAC frames open with an 11/12-bit sync word of ones.
        || matches!(prefix, [0xFF, second, ..] if second & 0xE0 == 0xE0);
    if compressed {
        return State::Encoded;
    }
    out.push(pcm_format(sample_rate, channels));
    State::Pcm(Pcm16Stream::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kind: AudioKind, chunks: &[&[u8]]) -> Vec<Event> {
        let mut out = Vec::new();
        let mut stream = AudioStream::start(kind, &mut out);
        for c in chunks {
            stream.push(c, &mut out);
        }
        stream.finish(&mut out);
        out
    }

    #[test]
    fn sniffing_tells_pcm_from_compressed() {
        let sniff = AudioKind::Sniff {
            sample_rate: 24_000,
            channels: 1,
        };
        let out = run(sniff, &[b"\x01\x00", b"\x02\x00"]);
        assert_eq!(
            out,
            [
                pcm_format(24_000, 1),
                Event::AudioSamples {
                    samples: vec![1, 2]
                }
            ]
        );
        let out = run(sniff, &[b"ID3\x04", b"xyz"]);
        assert_eq!(
            out,
            [
                Event::AudioEncoded { bytes: 4 },
                Event::AudioEncoded { bytes: 3 }
            ]
        );
        // Too short to sniff: decided at the end.
        assert_eq!(run(sniff, &[b"\x07\x00"]).len(), 2);
    }

    #[test]
    fn declared_pcm_announces_its_format_first() {
        let out = run(OPENAI_PCM, &[b"\x01"]);
        assert_eq!(out[0], pcm_format(24_000, 1));
        assert!(matches!(out[1], Event::Error { .. }));
    }
}

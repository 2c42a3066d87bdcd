//! WAV (RIFF) streams, parsed incrementally: the header may arrive one byte at a time.
//!
//! Only 16-bit PCM is decoded (format 1, or WAVE_FORMAT_EXTENSIBLE with the PCM
//! sub-format): it is what TTS servers stream. Chunks other than `fmt ` and `data` are
//! skipped by counting, never buffered. A `data` size of 0 or 0xFFFFFFFF is the
//! streaming convention for "unknown": the data then runs to the end of the stream.

use crate::decode::event::{ErrorClass, Event};

/// A `fmt ` chunk longer than this is not a real one; refusing it bounds memory.
const MAX_FMT_BYTES: u32 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the 12-byte `RIFF....WAVE` preamble.
    Riff,
    /// Reading an 8-byte chunk header.
    ChunkHeader,
    Fmt {
        size: u32,
    },
    Skip {
        remaining: u64,
    },
    Data {
        remaining: Option<u64>,
        pad: bool,
    },
    /// Data in an encoding this decoder does not read: dropped.
    Unsupported,
    /// Not a WAV stream: everything after the error is dropped.
    Invalid,
}

/// The 44-byte header of a mono 16-bit PCM WAV holding `samples` samples at
/// `sample_rate`: what the simulator's TTS sends before its samples, and what the lab
/// uploads for a voice turn. The size is written exactly (a reader need not rely on the
/// streaming 0xFFFFFFFF rule); past 4 GiB of data it saturates.
pub fn pcm16_mono_header(sample_rate: u32, samples: u64) -> Vec<u8> {
    let data = u32::try_from(samples.saturating_mul(2)).unwrap_or(u32::MAX);
    let mut h = Vec::with_capacity(44);
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&data.saturating_add(36).to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes()); // PCM
    h.extend_from_slice(&1u16.to_le_bytes()); // mono
    h.extend_from_slice(&sample_rate.to_le_bytes());
    h.extend_from_slice(&sample_rate.saturating_mul(2).to_le_bytes()); // byte rate
    h.extend_from_slice(&2u16.to_le_bytes()); // block align
    h.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    h.extend_from_slice(b"data");
    h.extend_from_slice(&data.to_le_bytes());
    h
}

/// Incremental WAV decoder.
pub struct WavStream {
    state: State,
    header: Vec<u8>,
    format: Option<(u32, u16)>,
    format_unsupported: bool,
    pcm: Pcm16Stream,
}

impl Default for WavStream {
    fn default() -> Self {
        Self::new()
    }
}

impl WavStream {
    pub fn new() -> Self {
        WavStream {
            state: State::Riff,
            header: Vec::new(),
            format: None,
            format_unsupported: false,
            pcm: Pcm16Stream::default(),
        }
    }

    /// Sample rate and channel count, once the `fmt ` chunk has been read.
    pub fn format(&self) -> Option<(u32, u16)> {
        self.format
    }

    /// Feeds one chunk; appends format, samples and errors to `out`.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<Event>) {
        while !input.is_empty() {
            match self.state {
                State::Riff => {
                    if !fill(&mut self.header, 12, &mut input) {
                        return;
                    }
                    if !(self.header.starts_with(b"RIFF") && self.header.ends_with(b"WAVE")) {
                        self.fail("not a WAV stream (no RIFF/WAVE preamble)", out);
                        return;
                    }
                    self.header.clear();
                    self.state = State::ChunkHeader;
                }
                State::ChunkHeader => {
                    if !fill(&mut self.header, 8, &mut input) {
                        return;
                    }
                    let size = u32_le(&self.header, 4);
                    let id = self.header.get(..4).unwrap_or_default().to_vec();
                    self.header.clear();
                    self.chunk_started(&id, size, out);
                }
                State::Fmt { size } => {
                    if !fill(&mut self.header, size as usize, &mut input) {
                        return;
                    }
                    self.read_fmt(out);
                    self.header.clear();
                    self.state = if size % 2 == 1 {
                        State::Skip { remaining: 1 }
                    } else {
                        State::ChunkHeader
                    };
                }
                State::Skip { remaining } => {
                    let take = remaining.min(input.len() as u64);
                    input = input.get(take as usize..).unwrap_or_default();
                    self.state = match remaining - take {
                        0 => State::ChunkHeader,
                        left => State::Skip { remaining: left },
                    };
                }
                State::Data { remaining, pad } => {
                    let take =
                        remaining.map_or(input.len(), |r| r.min(input.len() as u64) as usize);
                    let (data, rest) = input.split_at(take);
                    input = rest;
                    let samples = self.pcm.push(data);
                    if !samples.is_empty() {
                        out.push(Event::AudioSamples { samples });
                    }
                    if let Some(r) = remaining {
                        let left = r - take as u64;
                        self.state = match (left, pad) {
                            (0, true) => State::Skip { remaining: 1 },
                            (0, false) => State::ChunkHeader,
                            (left, pad) => State::Data {
                                remaining: Some(left),
                                pad,
                            },
                        };
                    }
                }
                State::Unsupported | State::Invalid => return,
            }
        }
    }

    /// Ends the stream: a header or a declared data chunk cut short is reported.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        let problem = match self.state {
            State::Riff => Some("stream ended before the WAV header was complete".to_owned()),
            State::ChunkHeader | State::Fmt { .. } if !self.header.is_empty() => {
                Some("stream ended inside a WAV chunk header".to_owned())
            }
            State::Fmt { .. } => Some("stream ended inside the WAV fmt chunk".to_owned()),
            State::ChunkHeader if self.format.is_none() && !self.format_unsupported => {
                Some("stream ended before the WAV data chunk".to_owned())
            }
            State::Data {
                remaining: Some(left),
                ..
            } if left > 0 => Some(format!(
                "stream ended {left} bytes short of the WAV data chunk's size"
            )),
            _ => None,
        };
        if let Some(message) = problem {
            out.push(Event::error(ErrorClass::Truncated, message));
        }
        if self.pcm.finish() {
            out.push(Event::error(
                ErrorClass::Truncated,
                "stream ended in the middle of a 16-bit sample",
            ));
        }
        self.header.clear();
    }

    fn chunk_started(&mut self, id: &[u8], size: u32, out: &mut Vec<Event>) {
        match id {
            b"fmt " if (16..=MAX_FMT_BYTES).contains(&size) => self.state = State::Fmt { size },
            b"fmt " => self.fail(&format!("WAV fmt chunk of {size} bytes is not valid"), out),
            b"data" if self.format_unsupported => self.state = State::Unsupported,
            b"data" => {
                let Some((sample_rate, channels)) = self.format else {
                    self.fail("WAV data chunk before its fmt chunk", out);
                    return;
                };
                out.push(Event::AudioFormat {
                    sample_rate,
                    channels,
                    bits_per_sample: 16,
                });
                let remaining = (size != 0 && size != u32::MAX).then_some(u64::from(size));
                self.state = State::Data {
                    remaining,
                    pad: size % 2 == 1 && remaining.is_some(),
                };
            }
            _ => {
                self.state = State::Skip {
                    remaining: u64::from(size) + u64::from(size % 2),
                }
            }
        }
    }

    fn read_fmt(&mut self, out: &mut Vec<Event>) {
        let h = &self.header;
        let tag = u16_le(h, 0);
        let channels = u16_le(h, 2);
        let sample_rate = u32_le(h, 4);
        let bits = u16_le(h, 14);
        // WAVE_FORMAT_EXTENSIBLE names the real encoding in its sub-format GUID.
        let encoding = if tag == 0xFFFE { u16_le(h, 24) } else { tag };
        if encoding == 1 && bits == 16 && channels > 0 && sample_rate > 0 {
            self.format = Some((sample_rate, channels));
        } else {
            self.format_unsupported = true;
            out.push(Event::error(
                ErrorClass::InvalidAudio,
                format!(
                    "unsupported WAV encoding (format {encoding:#06x}, {bits} bits, {channels} channels, {sample_rate} Hz); only 16-bit PCM is decoded"
                ),
            ));
        }
    }

    fn fail(&mut self, message: &str, out: &mut Vec<Event>) {
        out.push(Event::error(ErrorClass::InvalidAudio, message));
        self.state = State::Invalid;
        self.header = Vec::new();
    }
}

/// Tops `buf` up to `need` bytes from `input`; true once it holds them.
fn fill(buf: &mut Vec<u8>, need: usize, input: &mut &[u8]) -> bool {
    let take = need.saturating_sub(buf.len()).min(input.len());
    let (head, rest) = input.split_at(take);
    buf.extend_from_slice(head);
    *input = rest;
    buf.len() >= need
}

fn u16_le(bytes: &[u8], at: usize) -> u16 {
    match bytes.get(at..at + 2) {
        Some(&[a, b]) => u16::from_le_bytes([a, b]),
        _ => 0,
    }
}

fn u32_le(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// Little-endian 16-bit PCM, with a sample cut by a chunk boundary held over.
#[derive(Debug, Default)]
pub struct Pcm16Stream {
    carry: Option<u8>,
}

impl Pcm16Stream {
    /// Decodes the whole samples available after this chunk.
    pub fn push(&mut self, mut bytes: &[u8]) -> Vec<i16> {
        let mut samples = Vec::with_capacity(bytes.len() / 2 + 1);
        if let Some(low) = self.carry.take() {
            match bytes.split_first() {
                Some((high, rest)) => {
                    samples.push(i16::from_le_bytes([low, *high]));
                    bytes = rest;
                }
                None => {
                    self.carry = Some(low);
                    return samples;
                }
            }
        }
        let mut pairs = bytes.chunks_exact(2);
        samples.extend(pairs.by_ref().map(|p| match p {
            &[low, high] => i16::from_le_bytes([low, high]),
            _ => 0,
        }));
        self.carry = pairs.remainder().first().copied();
        samples
    }

    /// Ends the stream; true when half a sample was left over.
    pub fn finish(&mut self) -> bool {
        self.carry.take().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A canonical 44-byte-header WAV with an extra LIST chunk before the data.
    fn wav_bytes(samples: &[i16], data_size: Option<u32>) -> Vec<u8> {
        let data: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        let mut out = Vec::new();
        out.extend_from_slice(b"RIFF");
        out.extend_from_slice(&u32::MAX.to_le_bytes());
        out.extend_from_slice(b"WAVE");
        out.extend_from_slice(b"fmt ");
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes()); // PCM
        out.extend_from_slice(&1u16.to_le_bytes()); // mono
        out.extend_from_slice(&24_000u32.to_le_bytes());
        out.extend_from_slice(&48_000u32.to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(b"LIST");
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(b"abc\0"); // 3 bytes + pad
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data_size.unwrap_or(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&data);
        out
    }

    type Decoded = (Option<(u32, u16, u16)>, Vec<i16>, Vec<Event>);

    fn decode(bytes: &[u8], chunk: usize) -> Decoded {
        let mut wav = WavStream::new();
        let mut out = Vec::new();
        for piece in bytes.chunks(chunk) {
            wav.push(piece, &mut out);
        }
        wav.finish(&mut out);
        let mut format = None;
        let mut samples = Vec::new();
        let mut others = Vec::new();
        for e in out {
            match e {
                Event::AudioFormat {
                    sample_rate,
                    channels,
                    bits_per_sample,
                } => format = Some((sample_rate, channels, bits_per_sample)),
                Event::AudioSamples { samples: s } => samples.extend(s),
                other => others.push(other),
            }
        }
        (format, samples, others)
    }

    #[test]
    fn the_written_header_reads_back_with_its_rate_and_exact_size() {
        let samples = [7i16, -7, 300];
        let mut bytes = pcm16_mono_header(8_000, samples.len() as u64);
        assert_eq!(bytes.len(), 44);
        bytes.extend(samples.iter().flat_map(|s| s.to_le_bytes()));
        // A trailing byte past the declared data is not a sample: the size is exact.
        bytes.push(0);
        let (format, decoded, _) = decode(&bytes, 5);
        assert_eq!(format, Some((8_000, 1, 16)));
        assert_eq!(decoded, samples);
    }

    #[test]
    fn header_and_samples_survive_any_chunking() {
        let samples = [0, 1, -1, i16::MAX, i16::MIN, 1234];
        let bytes = wav_bytes(&samples, None);
        for chunk in [1, 2, 3, 7, 44, 1000] {
            let (format, decoded, others) = decode(&bytes, chunk);
            assert_eq!(format, Some((24_000, 1, 16)), "chunk {chunk}");
            assert_eq!(decoded, samples, "chunk {chunk}");
            assert!(others.is_empty(), "chunk {chunk}: {others:?}");
        }
    }

    #[test]
    fn streaming_size_runs_to_the_end_and_a_half_sample_is_reported() {
        let mut bytes = wav_bytes(&[5, 6], Some(u32::MAX));
        bytes.push(7);
        let (_, decoded, others) = decode(&bytes, 5);
        assert_eq!(decoded, [5, 6]);
        assert!(matches!(
            &others[..],
            [Event::Error {
                class: ErrorClass::Truncated,
                ..
            }]
        ));
    }

    #[test]
    fn not_riff_unsupported_and_cut_headers_are_errors() {
        let (_, _, others) = decode(b"ID3\x04 and then mp3 frames", 4);
        assert!(matches!(
            &others[..],
            [Event::Error {
                class: ErrorClass::InvalidAudio,
                ..
            }]
        ));

        let mut float = wav_bytes(&[1], None);
        float[20] = 3; // IEEE float
        let (format, samples, others) = decode(&float, 3);
        assert_eq!((format, samples.len()), (None, 0));
        assert!(matches!(
            &others[..],
            [Event::Error {
                class: ErrorClass::InvalidAudio,
                ..
            }]
        ));

        let (_, _, others) = decode(&wav_bytes(&[1], None)[..30], 3);
        assert!(matches!(
            &others[..],
            [Event::Error {
                class: ErrorClass::Truncated,
                ..
            }]
        ));
    }
}

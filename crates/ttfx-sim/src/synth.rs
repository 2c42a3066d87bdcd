//! Real, audible audio for the simulated TTS: a voiced buzz (a 150 Hz fundamental with
//! vibrato and four harmonics) shaped into ~4 syllables a second, as 24 kHz mono PCM16
//! (OpenAI's `pcm`). Each sample is a function of its index, so any chunk can be made on
//! its own and the chunks join without clicks.

use std::f64::consts::TAU;

pub const SAMPLE_RATE: u32 = 24_000;

/// Sample `n` of a clip `total` samples long.
pub fn sample(n: u64, total: u64) -> i16 {
    let t = n as f64 / f64::from(SAMPLE_RATE);
    // Vibrato: ±3 % at 5 Hz; the phase is the integral of the frequency, so no jumps.
    let f0 = 150.0;
    let phase = TAU * f0 * (t + 0.03 / (TAU * 5.0) * (1.0 - (TAU * 5.0 * t).cos()));
    let voiced: f64 = (1..=5)
        .map(|k| (k as f64 * phase).sin() / k as f64)
        .sum::<f64>()
        / 2.3; // the harmonic sum peaks near 2.3 (sawtooth-like), keep it in [-1, 1]
    // Syllables: a raised-sine envelope at 4 Hz that never quite reaches silence.
    let syllable = 0.25 + 0.75 * (std::f64::consts::PI * 4.0 * t).sin().powi(2);
    // 10 ms fades at both ends avoid clicks.
    let fade = f64::from(SAMPLE_RATE) * 0.010;
    let edge = (n as f64 / fade)
        .min(total.saturating_sub(n) as f64 / fade)
        .min(1.0);
    let v = 0.4 * voiced * syllable * edge;
    (v.clamp(-1.0, 1.0) * f64::from(i16::MAX)) as i16
}

/// Samples [from, to) as little-endian PCM16 bytes.
pub fn pcm16(from: u64, to: u64, total: u64) -> Vec<u8> {
    (from..to)
        .flat_map(|n| sample(n, total).to_le_bytes())
        .collect()
}

/// The WAV header for `samples` mono PCM16 samples at [`SAMPLE_RATE`].
pub fn wav_header(samples: u64) -> Vec<u8> {
    ttfx_core::decode::wav::pcm16_mono_header(SAMPLE_RATE, samples)
}

/// Standard base64 with padding (RFC 4648 §4), as OpenAI's SSE audio deltas carry it.
/// Natively the `base64` crate does it; ttfx-core keeps its own small decoder because
/// that one ships in the probe's wasm.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors_and_round_trips() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(
            ttfx_core::decode::base64::decode(&base64(&bytes)).unwrap(),
            bytes
        );
    }

    #[test]
    fn audio_is_loud_enough_and_joins_across_chunks() {
        let total = u64::from(SAMPLE_RATE); // one second
        let all = pcm16(0, total, total);
        let mut split = pcm16(0, 1000, total);
        split.extend(pcm16(1000, total, total));
        assert_eq!(all, split);
        let samples: Vec<f64> = all
            .chunks(2)
            .map(|b| f64::from(i16::from_le_bytes([b[0], b[1]])))
            .collect();
        let rms = (samples.iter().map(|s| s * s).sum::<f64>() / samples.len() as f64).sqrt();
        // Well above silence (a 16-bit noise floor is ~1) and below clipping.
        assert!(rms > 2000.0 && rms < 20_000.0, "rms {rms}");
        assert_eq!(samples[0], 0.0, "faded in");
    }

    #[test]
    fn wav_header_decodes_with_ttfx_core() {
        use ttfx_core::decode::{Decoder, DialectKind, Event, Limits};
        let mut bytes = wav_header(480);
        bytes.extend(pcm16(0, 480, 480));
        let mut d = Decoder::new(DialectKind::Wav, Limits::DEFAULT);
        let mut events = d.push(&bytes);
        events.extend(d.finish());
        assert!(events.contains(&Event::AudioFormat {
            sample_rate: 24_000,
            channels: 1,
            bits_per_sample: 16
        }));
        let n: usize = events
            .iter()
            .map(|e| match e {
                Event::AudioSamples { samples } => samples.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(n, 480);
    }
}

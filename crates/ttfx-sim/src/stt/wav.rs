//! The length of an uploaded WAV file, read from its header: the record says how much
//! audio the client sent (`audio`), so a page can set its upload time beside the audio's
//! length. Only the file's head is kept (`limits::WAV_PREFIX_BYTES`); the data chunk's
//! size comes from its header, or, for a streaming writer's placeholder size, from the
//! bytes that actually arrived.

/// What the head of an uploaded file says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Audio {
    /// A linear PCM (or IEEE float) WAV file of this many ms.
    Wav { ms: f64 },
    /// Not a RIFF/WAVE file (webm, mp3, ogg, …), or a WAV of a compressed format: its
    /// length is not read (that would need a decoder).
    Unknown,
}

impl Audio {
    /// The length in ms, when the file says it.
    pub fn ms(self) -> Option<f64> {
        match self {
            Audio::Wav { ms } => Some(ms),
            Audio::Unknown => None,
        }
    }
}

/// WAVE_FORMAT_PCM, WAVE_FORMAT_IEEE_FLOAT and WAVE_FORMAT_EXTENSIBLE (whose subformat
/// is in practice PCM or float): formats whose bytes per second are the block alignment
/// times the rate.
const LINEAR_FORMATS: [u16; 3] = [1, 3, 0xFFFE];

/// Reads `head`, the first bytes of a file of `total` bytes. A file that says it is
/// RIFF/WAVE but whose header is broken is an error for a person (the client sent a
/// broken file and should hear so), never a panic.
pub fn read(head: &[u8], total: u64) -> Result<Audio, String> {
    if head.len() < 12 || &head[0..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return Ok(Audio::Unknown);
    }
    let mut at = 12usize;
    let mut format: Option<(u16, u32, u16)> = None;
    loop {
        let Some(chunk) = at.checked_add(8).and_then(|end| head.get(at..end)) else {
            return Err(format!(
                "file: a RIFF/WAVE file whose header ends after {} bytes without a `data` chunk",
                total.min(head.len() as u64)
            ));
        };
        let id = &chunk[0..4];
        let size = u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]);
        let body = at + 8;
        if id == b"fmt " {
            let fmt = head
                .get(body..body + 16)
                .filter(|_| size >= 16)
                .ok_or("file: a RIFF/WAVE file with a `fmt ` chunk shorter than 16 bytes")?;
            let tag = u16::from_le_bytes([fmt[0], fmt[1]]);
            let rate = u32::from_le_bytes([fmt[4], fmt[5], fmt[6], fmt[7]]);
            let align = u16::from_le_bytes([fmt[12], fmt[13]]);
            format = Some((tag, rate, align));
        } else if id == b"data" {
            let Some((tag, rate, align)) = format else {
                return Err(
                    "file: a RIFF/WAVE file whose `data` chunk comes before its \
                            `fmt ` chunk"
                        .into(),
                );
            };
            if !LINEAR_FORMATS.contains(&tag) {
                return Ok(Audio::Unknown);
            }
            if rate == 0 || align == 0 {
                return Err(format!(
                    "file: a RIFF/WAVE file with sample rate {rate} and block alignment \
                     {align}: neither may be 0"
                ));
            }
            let arrived = total.saturating_sub(body as u64);
            // 0 and 0xFFFFFFFF are what streaming writers leave before they know the
            // length; a declared size past the file is a cut file. Either way the bytes
            // that came are the audio there is.
            let declared = u64::from(size);
            let bytes = if size == 0 || size == u32::MAX {
                arrived
            } else {
                declared.min(arrived)
            };
            let frames = bytes / u64::from(align);
            return Ok(Audio::Wav {
                ms: frames as f64 * 1000.0 / f64::from(rate),
            });
        }
        // Chunks are padded to an even size.
        let next = body as u64 + u64::from(size) + u64::from(size & 1);
        at = usize::try_from(next).map_err(|_| "file: a RIFF/WAVE chunk size overflows")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PCM16 WAV header for `frames` frames of `channels` channels at `rate`.
    fn header(rate: u32, channels: u16, frames: u32) -> Vec<u8> {
        let align = channels * 2;
        let data = frames * u32::from(align);
        let mut h = Vec::new();
        h.extend(b"RIFF");
        h.extend((36 + data).to_le_bytes());
        h.extend(b"WAVEfmt ");
        h.extend(16u32.to_le_bytes());
        h.extend(1u16.to_le_bytes());
        h.extend(channels.to_le_bytes());
        h.extend(rate.to_le_bytes());
        h.extend((rate * u32::from(align)).to_le_bytes());
        h.extend(align.to_le_bytes());
        h.extend(16u16.to_le_bytes());
        h.extend(b"data");
        h.extend(data.to_le_bytes());
        h
    }

    #[test]
    fn a_pcm_wav_says_its_length() {
        // 1.5 s of 16 kHz mono, 0.25 s of 48 kHz stereo.
        let h = header(16_000, 1, 24_000);
        let total = h.len() as u64 + 48_000;
        assert_eq!(read(&h, total), Ok(Audio::Wav { ms: 1500.0 }));
        let h = header(48_000, 2, 12_000);
        let total = h.len() as u64 + 48_000;
        assert_eq!(read(&h, total), Ok(Audio::Wav { ms: 250.0 }));
    }

    #[test]
    fn a_list_chunk_before_the_data_is_skipped_with_its_padding() {
        let mut h = header(8_000, 1, 800);
        let data = h.split_off(36);
        h.extend(b"LIST");
        h.extend(3u32.to_le_bytes());
        h.extend(b"abc\0"); // 3 bytes and a pad byte
        h.extend(&data);
        let total = h.len() as u64 + 1_600;
        assert_eq!(read(&h, total), Ok(Audio::Wav { ms: 100.0 }));
    }

    #[test]
    fn a_streaming_or_cut_file_counts_the_bytes_that_came() {
        let mut h = header(16_000, 1, 0);
        let n = h.len();
        h[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(read(&h, n as u64 + 3_200), Ok(Audio::Wav { ms: 100.0 }));
        // Says 1 s, holds 0.5 s.
        let h = header(16_000, 1, 16_000);
        assert_eq!(
            read(&h, h.len() as u64 + 16_000),
            Ok(Audio::Wav { ms: 500.0 })
        );
    }

    #[test]
    fn other_files_are_unknown_and_broken_wavs_are_errors_not_panics() {
        assert_eq!(read(b"\x1aE\xdf\xa3webm...", 1_000), Ok(Audio::Unknown));
        assert_eq!(read(b"ID3\x04mp3", 5), Ok(Audio::Unknown));
        assert_eq!(read(b"", 0), Ok(Audio::Unknown));
        let h = header(16_000, 1, 100);
        // Every cut of a valid header, and a few corruptions, give an answer, never a
        // panic; a cut before `data` is an error naming the file.
        for cut in 12..h.len() - 8 {
            let e = read(&h[..cut], cut as u64).unwrap_err();
            assert!(e.starts_with("file: "), "{cut}: {e}");
        }
        let mut zero_rate = h.clone();
        zero_rate[24..28].copy_from_slice(&0u32.to_le_bytes());
        assert!(read(&zero_rate, 300).unwrap_err().contains("sample rate 0"));
        let mut huge = h.clone();
        huge[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(read(&huge, 300).is_err());
        let mut mp3 = h.clone();
        mp3[20..22].copy_from_slice(&0x55u16.to_le_bytes());
        assert_eq!(read(&mp3, 300), Ok(Audio::Unknown));
    }
}

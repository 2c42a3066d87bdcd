//! A fake microphone that speaks: espeak-ng says a sentence at run time, the result is
//! padded with known silence so its true start and end are known to the sample, and
//! Chromium's fake capture device plays the file (looping it). The page's voice-activity
//! detector hears a real speech signal whose end the caller knows (`ttfx run
//! --voice-turn`, the voice-turn tests).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the speech could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum SpeechError {
    #[error("cannot run espeak-ng (installed by `cargo xtask setup`)")]
    RunEspeak(#[source] std::io::Error),
    #[error("espeak-ng failed: {0}")]
    EspeakFailed(String),
    #[error("espeak-ng's WAV")]
    EspeakWav(#[source] hound::Error),
    #[error("espeak-ng wrote {0:?}, expected 16-bit mono")]
    EspeakFormat(hound::WavSpec),
    #[error("espeak-ng's speech for {0:?} is silent")]
    Silent(String),
    #[error("the speech file")]
    SpeechFile(#[source] hound::Error),
    /// Reading or writing samples.
    #[error(transparent)]
    Wav(#[from] hound::Error),
}

/// The level above which a sample counts as speech for the truth: −50 dBFS peak, far
/// below espeak-ng's voiced level (about −10 dBFS) and above its digital silence (0).
/// The page's detector uses an RMS rule with its own threshold; the truth is the first
/// and last sample the listener could hear at all.
pub const TRUTH_THRESHOLD_DBFS: f64 = -50.0;

/// A WAV file of silence, speech, silence, with where the speech lies.
#[derive(Debug, Clone)]
pub struct SpeechFile {
    pub path: PathBuf,
    pub sample_rate: u32,
    /// First and last sample above [`TRUTH_THRESHOLD_DBFS`], in seconds from the file's
    /// start.
    pub speech_start_s: f64,
    pub speech_end_s: f64,
    /// The whole file (Chromium loops it: the next speech starts one period later).
    pub period_s: f64,
}

impl SpeechFile {
    /// The speech's length.
    pub fn speech_s(&self) -> f64 {
        self.speech_end_s - self.speech_start_s
    }

    /// Says `text` with espeak-ng into `dir/name.wav`, with `lead_s` of silence before
    /// the speech and `tail_s` after it.
    pub fn say(
        dir: &Path,
        name: &str,
        text: &str,
        lead_s: f64,
        tail_s: f64,
    ) -> Result<Self, SpeechError> {
        let raw = dir.join(format!("{name}-espeak.wav"));
        let out = Command::new(espeak_ng())
            .arg("-w")
            .arg(&raw)
            .arg(text)
            .output()
            .map_err(SpeechError::RunEspeak)?;
        if !out.status.success() {
            return Err(SpeechError::EspeakFailed(
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ));
        }
        let mut reader = hound::WavReader::open(&raw).map_err(SpeechError::EspeakWav)?;
        let spec = reader.spec();
        if spec.channels != 1 || spec.bits_per_sample != 16 {
            return Err(SpeechError::EspeakFormat(spec));
        }
        let samples: Vec<i16> = reader.samples::<i16>().collect::<Result<_, _>>()?;
        let _ = std::fs::remove_file(&raw);
        let limit = 32768.0 * 10f64.powf(TRUTH_THRESHOLD_DBFS / 20.0);
        let loud = |s: &i16| f64::from(*s).abs() > limit;
        let (Some(first), Some(last)) = (
            samples.iter().position(loud),
            samples.iter().rposition(loud),
        ) else {
            return Err(SpeechError::Silent(text.to_owned()));
        };
        let rate = f64::from(spec.sample_rate);
        let speech = &samples[first..=last];
        let lead = (lead_s * rate).round() as usize;
        let tail = (tail_s * rate).round() as usize;
        let path = dir.join(format!("{name}.wav"));
        let mut writer = hound::WavWriter::create(&path, spec)?;
        for s in std::iter::repeat_n(0, lead)
            .chain(speech.iter().copied())
            .chain(std::iter::repeat_n(0, tail))
        {
            writer.write_sample(s)?;
        }
        writer.finalize()?;
        let total = lead + speech.len() + tail;
        Ok(SpeechFile {
            path,
            sample_rate: spec.sample_rate,
            speech_start_s: lead as f64 / rate,
            // The end of the last loud sample.
            speech_end_s: (lead + speech.len()) as f64 / rate,
            period_s: total as f64 / rate,
        })
    }

    /// The file's samples as raw 16-bit little-endian PCM (what `pacat --raw` plays).
    pub fn pcm_bytes(&self) -> Result<Vec<u8>, SpeechError> {
        let mut reader = hound::WavReader::open(&self.path).map_err(SpeechError::SpeechFile)?;
        let mut bytes = Vec::with_capacity(reader.len() as usize * 2);
        for s in reader.samples::<i16>() {
            bytes.extend_from_slice(&s?.to_le_bytes());
        }
        Ok(bytes)
    }

    /// Firefox's preferences for a microphone granted without a prompt, and a real
    /// capture device rather than its fake one (a tone): with a [`PulseMicrophone`]
    /// running, the device plays this file.
    ///
    /// [`PulseMicrophone`]: crate::pulse::PulseMicrophone
    pub fn firefox_prefs() -> [(&'static str, bool); 2] {
        [
            ("media.navigator.permission.disabled", true),
            ("media.navigator.streams.fake", false),
        ]
    }

    /// Chromium's flags for a fake microphone that plays this file, granted without a
    /// prompt.
    pub fn chromium_args(&self) -> Vec<String> {
        vec![
            "--use-fake-device-for-media-stream".into(),
            "--use-fake-ui-for-media-stream".into(),
            format!("--use-file-for-fake-audio-capture={}", self.path.display()),
        ]
    }
}

fn espeak_ng() -> PathBuf {
    std::env::var_os("ESPEAK_NG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("espeak-ng"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_holds_the_speech_between_known_silences() {
        let dir = tempfile::tempdir().unwrap();
        let f = SpeechFile::say(dir.path(), "t", "How long is the silence", 0.5, 1.0).unwrap();
        assert!((f.speech_start_s - 0.5).abs() < 1e-9, "{f:?}");
        assert!(f.speech_s() > 0.5 && f.speech_s() < 3.0, "{f:?}");
        assert!(
            (f.period_s - (f.speech_end_s + 1.0)).abs() < 1.0 / 22050.0 + 1e-9,
            "{f:?}"
        );
        let samples: Vec<i16> = hound::WavReader::open(&f.path)
            .unwrap()
            .samples::<i16>()
            .map(Result::unwrap)
            .collect();
        let rate = f64::from(f.sample_rate);
        let at = |s: f64| (s * rate).round() as usize;
        assert!(samples[..at(f.speech_start_s)].iter().all(|s| *s == 0));
        assert!(samples[at(f.speech_end_s)..].iter().all(|s| *s == 0));
        assert!(samples[at(f.speech_start_s)] != 0 && samples[at(f.speech_end_s) - 1] != 0);
    }
}

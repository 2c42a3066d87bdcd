//! The microphone Firefox hears a [`SpeechFile`] from (its own fake device plays a tone).

use std::io::Write as _;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};

use ttfx_webdriver::kill_group;

use super::{NullSink, PulseError, PulseServer, SampleFormat};
use crate::SpeechFile;

/// A microphone that says a [`SpeechFile`] over and over: a null sink the speech is
/// played into (`pacat`, fed in a loop), whose monitor is made the default source, so a
/// browser's `getUserMedia` hears it. A second null sink becomes the default output when
/// this process started the server, so the browser's own playback (the reply) does not
/// reach the microphone.
#[must_use = "the microphone stops, and the server's defaults come back, when dropped"]
pub struct PulseMicrophone {
    player: Child,
    /// Dropped after the player is stopped (fields drop in order): the sinks, then the
    /// server.
    _mic: NullSink,
    _speaker: Option<NullSink>,
    _server: PulseServer,
}

impl PulseMicrophone {
    pub fn start(speech: &SpeechFile) -> Result<PulseMicrophone, PulseError> {
        let server = PulseServer::start_or_join()?;
        let pid = std::process::id();
        // Each guard undoes its step if a later one fails.
        let mut mic = NullSink::load(
            &server,
            &format!("ttfx_mic_{pid}"),
            "ttfx-microphone",
            Some(SampleFormat {
                rate: speech.sample_rate,
                channels: 1,
            }),
        )?;
        let speaker = if server.is_own() {
            let mut speaker = NullSink::load(
                &server,
                &format!("ttfx_speaker_{pid}"),
                "ttfx-speaker",
                None,
            )?;
            speaker.make_default_sink()?;
            Some(speaker)
        } else {
            None
        };
        mic.make_monitor_default_source()?;
        let mut player = Command::new("pacat")
            .process_group(0)
            .args([
                "--playback",
                "--raw",
                "--format=s16le",
                "--channels=1",
                &format!("--rate={}", speech.sample_rate),
                &format!("--device={}", mic.name()),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(PulseError::RunPacat)?;
        let Some(stdin) = player.stdin.take() else {
            kill_group(&mut player);
            return Err(PulseError::PacatStdin);
        };
        let pcm = match speech.pcm_bytes() {
            Ok(pcm) => pcm,
            Err(e) => {
                kill_group(&mut player);
                return Err(e.into());
            }
        };
        std::thread::spawn(move || feed(stdin, &pcm));
        Ok(PulseMicrophone {
            player,
            _mic: mic,
            _speaker: speaker,
            _server: server,
        })
    }
}

/// Writes the speech again and again; pacat takes it at the sink's pace. Ends when pacat
/// is stopped (the pipe breaks).
fn feed(mut stdin: ChildStdin, pcm: &[u8]) {
    while stdin.write_all(pcm).is_ok() {}
}

impl Drop for PulseMicrophone {
    fn drop(&mut self) {
        kill_group(&mut self.player);
    }
}

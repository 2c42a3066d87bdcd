//! The sound server the audio truth listens at: PulseAudio with a null sink made the
//! default output, so every browser's audio goes there and its monitor can be recorded.
//!
//! The server is ttfx-hostaudio's ([`PulseServer`]: started when none answers, else the
//! one running). Only the null sink ([`NullSink`]) is added and made the default, and
//! both are undone on drop. Users are serialized within the process ([`SoundServer::acquire`]): two
//! browsers playing to one default sink at once would mix in its monitor.

use std::sync::{Arc, OnceLock};

use anyhow::Context;
use tokio::sync::{Mutex, OwnedMutexGuard};
use ttfx_hostaudio::pulse::{NullSink, PulseServer, SampleFormat, pactl};

/// The null sink's sample rate: PulseAudio's default rate, which Chromium's
/// AudioContext takes (Firefox's takes the sink's), so both engines' output reaches the
/// sink without the server resampling it (at 48 kHz Chromium's stream was resampled).
pub const SINK_RATE: u32 = 44_100;

/// A PulseAudio server with the truth's null sink as its default sink, held by one user
/// at a time.
pub struct SoundServer {
    /// Before the server: a server this process started stops last.
    sink: NullSink,
    _server: PulseServer,
    _turn: OwnedMutexGuard<()>,
}

fn turn() -> Arc<Mutex<()>> {
    static TURN: OnceLock<Arc<Mutex<()>>> = OnceLock::new();
    TURN.get_or_init(|| Arc::new(Mutex::new(()))).clone()
}

impl SoundServer {
    /// Waits for this process's other users to finish, then starts (or joins) the server
    /// and makes the null sink the default output.
    pub async fn acquire() -> anyhow::Result<SoundServer> {
        let guard = turn().lock_owned().await;
        tokio::task::spawn_blocking(move || SoundServer::start(guard)).await?
    }

    fn start(turn: OwnedMutexGuard<()>) -> anyhow::Result<SoundServer> {
        let server = PulseServer::start_or_join()?;
        let mut sink = NullSink::load(
            &server,
            &format!("ttfx_truth_{}", std::process::id()),
            "ttfx-audio-truth",
            Some(SampleFormat {
                rate: SINK_RATE,
                channels: 2,
            }),
        )
        .context("cannot add a null sink to the PulseAudio server")?;
        sink.make_default_sink()
            .context("cannot make the null sink the default")?;
        Ok(SoundServer {
            sink,
            _server: server,
            _turn: turn,
        })
    }

    /// The null sink's name (its monitor is `NAME.monitor`).
    pub fn sink(&self) -> &str {
        self.sink.name()
    }

    /// The monitor source that records what the sink plays.
    pub fn monitor(&self) -> String {
        self.sink.monitor()
    }

    /// The server's own description of the monitor's latency (`pactl list sources`),
    /// for the record.
    pub fn monitor_latency(&self) -> Option<String> {
        let all = pactl(&["list", "sources"]).ok()?;
        let monitor = self.monitor();
        let block = all
            .split("\n\n")
            .find(|b| b.contains(&format!("Name: {monitor}")))?;
        block
            .lines()
            .find(|l| l.trim_start().starts_with("Latency:"))
            .map(|l| l.trim().to_owned())
    }
}

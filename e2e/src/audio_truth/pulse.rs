//! The sound server the audio truth listens at: PulseAudio with a null sink made the
//! default output, so every browser's audio goes there and its monitor can be recorded.
//!
//! The server is ttfx-hostaudio's ([`PulseServer`]: started when none answers, else the
//! one running). Only the null sink is added and made the default, and both are undone
//! on drop. Users are serialized within the process ([`SoundServer::acquire`]): two
//! browsers playing to one default sink at once would mix in its monitor.

use std::sync::{Arc, OnceLock};

use anyhow::Context;
use tokio::sync::{Mutex, OwnedMutexGuard};
use ttfx_hostaudio::pulse::{PulseServer, load_module, pactl};

/// The null sink's sample rate: PulseAudio's default rate, which Chromium's
/// AudioContext takes (Firefox's takes the sink's), so both engines' output reaches the
/// sink without the server resampling it (at 48 kHz Chromium's stream was resampled).
pub const SINK_RATE: u32 = 44_100;

/// A PulseAudio server with the truth's null sink as its default sink, held by one user
/// at a time.
pub struct SoundServer {
    /// The null sink module's index.
    module: Option<String>,
    /// The default sink before ours, restored on drop.
    previous_default: Option<String>,
    sink: String,
    /// After the sink: a server this process started stops last.
    server: PulseServer,
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
        let sink = format!("ttfx_truth_{}", std::process::id());
        let spec = format!(
            "module-null-sink sink_name={sink} rate={SINK_RATE} channels=2 \
             sink_properties=device.description=ttfx-audio-truth"
        );
        let mut server = SoundServer {
            module: None,
            previous_default: pactl(&["get-default-sink"]).ok(),
            sink: sink.clone(),
            server: PulseServer::start_or_join()?,
            _turn: turn,
        };
        server.module =
            Some(load_module(&spec).context("cannot add a null sink to the PulseAudio server")?);
        pactl(&["set-default-sink", &sink]).context("cannot make the null sink the default")?;
        Ok(server)
    }

    /// The null sink's name (its monitor is `NAME.monitor`).
    pub fn sink(&self) -> &str {
        &self.sink
    }

    /// The monitor source that records what the sink plays.
    pub fn monitor(&self) -> String {
        format!("{}.monitor", self.sink)
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

impl Drop for SoundServer {
    fn drop(&mut self) {
        // A server this process started goes with everything in it.
        if self.server.is_own() {
            return;
        }
        if let Some(previous) = self.previous_default.as_deref() {
            let _ = pactl(&["set-default-sink", previous]);
        }
        if let Some(module) = self.module.as_deref() {
            let _ = pactl(&["unload-module", module]);
        }
    }
}

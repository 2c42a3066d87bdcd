//! First audio against the sound server: a TTS reply from `ttfx serve`'s simulator played
//! by the probe's `TtsPlayer` in a real browser whose output is a PulseAudio null sink
//! ([`pulse`]); the sink's monitor is recorded with system-clock times ([`capture`]), and
//! the first non-silent sample recorded is the truth for the probe's `first_audio_out`.
//! The capture path's own latency is measured with a tone of known time ([`calibrate`]).
//! Shared by the e2e test and the audio bench.

pub mod calibrate;
pub mod capture;
pub mod pulse;

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use ttfx_core::playback::AUDIBLE_THRESHOLD;
use ttfx_webdriver::Engine;

use crate::site::{self, Site};
use crate::{Browser, ServeProcess, page, paths};
use capture::{Capture, Recording, unix_ms_now};
use pulse::SoundServer;

/// How far the page's time, placed on the system clock, can be off for want of clock
/// resolution: the page ties its clock to the system clock at a step of `Date.now()`,
/// which steps 1 ms (as for first paint, `paint_truth::CLOCK_RESOLUTION_MS`).
pub const CLOCK_RESOLUTION_MS: f64 = 1.0;

/// Quiet before each run: the last run's audio, stopped, may still be in the browser's
/// and the server's buffers (Chromium's output latency here is ~30 ms).
const QUIET_MS: u64 = 150;

/// What the page's `audioStart` saw: how long after `new AudioContext()` the context was
/// running, its clock moving and its output timestamp usable (ms), and how its
/// `outputLatency` moved afterwards.
#[derive(Debug, Clone)]
pub struct DeviceStart {
    pub state: String,
    pub running_ms: Option<f64>,
    pub rendering_ms: Option<f64>,
    pub output_ms: Option<f64>,
    /// `outputLatency` when the output timestamp became usable, and its range and
    /// number of changes over the next 2 s (Chromium's keeps moving).
    pub first_output_latency_ms: Option<f64>,
    pub min_output_latency_ms: Option<f64>,
    pub max_output_latency_ms: Option<f64>,
    pub latency_changes: u64,
    /// Its last change in those 2 s (ms since `new AudioContext()`).
    pub last_latency_change_ms: Option<f64>,
    /// Medians of `currentTime − getOutputTimestamp().contextTime` and of
    /// `performance.now() − performanceTime` (ms): what frame the timestamp names,
    /// against the render position.
    pub timestamp_lag_ms: Option<f64>,
    pub timestamp_age_ms: Option<f64>,
    pub sample_rate: f64,
    pub base_latency_ms: Option<f64>,
    pub output_latency_ms: Option<f64>,
    pub has_output_timestamp: bool,
}

/// One run's figures on the system clock (epoch ms).
#[derive(Debug, Clone)]
pub struct AudioSample {
    /// The probe's `first_audio_out`.
    pub probe_unix_ms: f64,
    /// The first recorded sample at or above the probe's audibility threshold.
    pub truth_unix_ms: f64,
    /// `first_audio_out` − truth.
    pub probe_minus_truth_ms: f64,
    /// What `first_audio_out` would have been with `outputLatency` added to it, − truth.
    pub with_output_latency_minus_truth_ms: Option<f64>,
    /// truth − `first_audio_scheduled`.
    pub truth_minus_scheduled_ms: Option<f64>,
    /// truth − the read that delivered the truth's frame (how far the line lies before
    /// this one read; ≤ 0).
    pub line_minus_read_ms: f64,
    pub method: String,
    pub output_latency_ms: Option<f64>,
    /// How far the probe's mapping reached from its `getOutputTimestamp()` pair to the
    /// first audible frame, on the audio clock (ms): a stale pair shows here.
    pub extrapolated_ms: Option<f64>,
    /// The recording's line at the truth against its line at the start (ms; see
    /// `Recording::line_shift_ms`).
    pub line_shift_ms: Option<f64>,
    pub skew_ms: f64,
}

/// A served `audio.html` in one engine, its output on the sound server's null sink, the
/// sink's monitor being recorded.
pub struct AudioLab {
    // Dropped in this order: the browser before the recording, the recording before
    // the sound server it records.
    client: fantoccini::Client,
    serve: ServeProcess,
    _driver: Browser,
    _site: Site,
    recording: Recording,
    _capture: Capture,
    server: SoundServer,
    engine: Engine,
}

impl AudioLab {
    /// The sound server (started or joined, see [`pulse`]), the recording, `ttfx serve`,
    /// the engine's driver and a session. The sound server comes first: a browser opens
    /// its audio device when a page first plays.
    pub async fn start(engine: Engine) -> anyhow::Result<AudioLab> {
        let server = SoundServer::acquire().await?;
        let monitor = server.monitor();
        let capture = tokio::task::spawn_blocking(move || Capture::start(&monitor)).await??;
        let site = site::assemble()?;
        let serve = ServeProcess::start(&paths::ttfx_bin()?, &["--dist", site.dist_arg()])?;
        let driver = Browser::start(engine)?;
        let client = driver.session().await?;
        Ok(AudioLab {
            recording: capture.recording(),
            _capture: capture,
            server,
            client,
            serve,
            engine,
            _driver: driver,
            _site: site,
        })
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The capture path's latency, `count` tones (see [`calibrate`]); run it while no
    /// page plays.
    pub async fn capture_latency(&self, count: usize) -> anyhow::Result<Vec<f64>> {
        let (sink, recording) = (self.server.sink().to_owned(), self.recording.clone());
        // Blocking sleeps and writes, off the test's runtime thread.
        tokio::task::spawn_blocking(move || calibrate::capture_latency(&sink, &recording, count))
            .await?
    }

    /// The server's own figure for the monitor's latency.
    pub fn monitor_latency(&self) -> Option<String> {
        self.server.monitor_latency()
    }

    /// Opens `audio.html` and starts its AudioContext (see [`DeviceStart`]).
    pub async fn open(&self) -> anyhow::Result<DeviceStart> {
        page::open_harness(&self.client, &format!("{}audio.html", self.serve.url)).await?;
        let out = page::call(&self.client, "audioStart", json!({})).await?;
        let ms = |k: &str| out[k].as_f64();
        Ok(DeviceStart {
            state: out["state"].as_str().unwrap_or("?").to_owned(),
            running_ms: ms("runningMs"),
            rendering_ms: ms("renderingMs"),
            output_ms: ms("outputMs"),
            first_output_latency_ms: ms("firstLatencyMs"),
            min_output_latency_ms: ms("minLatencyMs"),
            max_output_latency_ms: ms("maxLatencyMs"),
            latency_changes: out["changes"].as_u64().unwrap_or(0),
            last_latency_change_ms: ms("lastChangeMs"),
            timestamp_lag_ms: ms("timestampLagMs"),
            timestamp_age_ms: ms("timestampAgeMs"),
            sample_rate: ms("sampleRate").unwrap_or(f64::NAN),
            base_latency_ms: ms("baseLatencyMs"),
            output_latency_ms: ms("outputLatencyMs"),
            has_output_timestamp: out["hasOutputTimestamp"].as_bool().unwrap_or(false),
        })
    }

    /// One TTS reply with the injected `ttfa_ms`, measured against the recording.
    /// An error when the probe has no `first_audio_out` or nothing audible was recorded.
    pub async fn run(&self, ttfa_ms: u32) -> anyhow::Result<AudioSample> {
        tokio::time::sleep(Duration::from_millis(QUIET_MS)).await;
        let from = self
            .recording
            .frame_at(unix_ms_now())
            .context("the recording has no reads")?;
        let url = format!(
            "{}sim/default/v1/audio/speech?ttfa_ms={ttfa_ms}&rtf=0.25",
            self.serve.url
        );
        let out = page::call(&self.client, "audioRun", json!({ "ttsUrl": url })).await?;
        // The recording reads past the first sample, so its line is closed on both sides.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let number = |v: &Value, what: &str| {
            v.as_f64()
                .with_context(|| format!("no {what} in the page's answer: {out}"))
        };
        let m = &out["measurement"];
        let start = number(&out["requestStartUnixMs"], "requestStartUnixMs")?;
        let first_out = number(&m["milestones"]["first_audio_out"], "first_audio_out")?;
        let probe = start + first_out;
        let Some(frame) = self.recording.first_audible(from, AUDIBLE_THRESHOLD) else {
            bail!(
                "nothing audible recorded since the run began ({} frames): {out}",
                self.recording.frames()?.saturating_sub(from)
            );
        };
        let truth = self
            .recording
            .frame_unix_ms(frame)
            .context("the truth's frame has no time")?;
        let read = self
            .recording
            .delivered_unix_ms(frame)
            .context("the truth's frame has no read")?;
        let output = &m["audio"]["output"];
        let output_latency = output["output_latency_ms"].as_f64();
        Ok(AudioSample {
            probe_unix_ms: probe,
            truth_unix_ms: truth,
            probe_minus_truth_ms: probe - truth,
            with_output_latency_minus_truth_ms: output_latency.map(|l| probe + l - truth),
            truth_minus_scheduled_ms: m["milestones"]["first_audio_scheduled"]
                .as_f64()
                .map(|s| truth - (start + s)),
            line_minus_read_ms: truth - read,
            method: m["audio_out_method"].as_str().unwrap_or("?").to_owned(),
            output_latency_ms: output_latency,
            line_shift_ms: self.recording.line_shift_ms(frame),
            extrapolated_ms: output["first_audible_context_s"]
                .as_f64()
                .zip(output["output_timestamp"]["context_time_s"].as_f64())
                .map(|(frame, ts)| (frame - ts) * 1000.0),
            skew_ms: out["skewMs"].as_f64().unwrap_or(f64::NAN),
        })
    }

    /// Closes the session (the driver, server, recording and sound server go on drop,
    /// in that order of fields: the recording before the sound server).
    pub async fn close(self) -> anyhow::Result<()> {
        self.client.clone().close().await?;
        Ok(())
    }
}

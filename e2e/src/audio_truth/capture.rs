//! The sink's monitor recorded with timestamps: `parec` at 2 ms latency in its own
//! process group, read by a thread that stamps every read with the system clock
//! (CLOCK_REALTIME, the clock `Date.now()` and the page's `performance.timeOrigin`
//! follow).
//!
//! When a frame reached the sink is read off the stream, not off one read: the monitor
//! runs on the sound server's clock, so frame `i` of the recording is `i / rate` after
//! frame 0, and the stream delivers a frame no earlier than the sink renders it. Every
//! read at time `w` that brings the total to `F` frames says frame `F − 1` had arrived
//! by `w`; the lowest of these lines, `min_k (w_k − (F_k − 1 − i) / rate)`, is the frame's
//! time at the smallest delivery delay seen. Scheduling noise and parec's buffering
//! only ever make a read later, so the lowest line keeps none of it. How far that line
//! lies behind the moment a sample enters the sink is measured by
//! [`super::calibrate`].

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use ttfx_webdriver::kill_group;

use super::pulse::SINK_RATE;

/// parec's requested latency. 2 ms: the monitor then hands over ~88 frames at a time,
/// and the null sink takes it as its configured latency (the smallest requested one),
/// the time it says it plays a sample after taking it in.
pub const LATENCY_MS: u32 = 2;

/// Reads before and after a frame's delivery that fix its line: 300 ms either way is
/// ~300 reads. Not longer: the recording's line moves against the system clock by about
/// 0.5 ms a second here (`line_shift_ms`; the system's clocks agree within 3 ppm, so it
/// is the null sink's pace: parec alone reads +380 ppm), which over ±300 ms tilts the
/// lowest line by 0.17 ms at most.
const WINDOW_MS: f64 = 300.0;

/// The recording so far.
#[derive(Default)]
struct Recorded {
    samples: Vec<i16>,
    /// (system clock in epoch ms, frames recorded after the read).
    reads: Vec<(f64, usize)>,
    error: Option<String>,
}

/// A running recording of one source, mono PCM16 at [`SINK_RATE`]; parec is killed
/// with its group on drop.
pub struct Capture {
    child: Child,
    recording: Recording,
}

/// The recording's data, shared with the thread that reads parec (a handle: clones see
/// the same recording).
#[derive(Clone)]
pub struct Recording {
    recorded: Arc<Mutex<Recorded>>,
}

/// Now on the system clock, in epoch milliseconds.
pub fn unix_ms_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl Capture {
    /// Starts recording `source` and waits until the first frames arrive.
    pub fn start(source: &str) -> anyhow::Result<Capture> {
        let mut child = Command::new("parec")
            .process_group(0)
            .args([
                &format!("--device={source}"),
                "--raw",
                "--format=s16le",
                &format!("--rate={SINK_RATE}"),
                "--channels=1",
                &format!("--latency-msec={LATENCY_MS}"),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start parec (`cargo xtask setup` installs pulseaudio-utils)")?;
        let Some(stdout) = child.stdout.take() else {
            kill_group(&mut child);
            bail!("parec has no stdout");
        };
        let recorded = Arc::new(Mutex::new(Recorded::default()));
        let sink = Arc::clone(&recorded);
        std::thread::spawn(move || read_loop(stdout, &sink));
        let capture = Capture {
            child,
            recording: Recording { recorded },
        };
        let started = std::time::Instant::now();
        // About 10 ms of frames: the stream is flowing.
        while capture.recording.frames()? < 480 {
            if started.elapsed() > Duration::from_secs(10) {
                bail!("parec on {source} delivered no audio within 10 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(capture)
    }

    /// A handle on the recording.
    pub fn recording(&self) -> Recording {
        self.recording.clone()
    }
}

impl Recording {
    /// Frames recorded so far (an error if the recording broke).
    pub fn frames(&self) -> anyhow::Result<usize> {
        let r = self.lock();
        if let Some(e) = &r.error {
            bail!("the recording stopped: {e}");
        }
        Ok(r.samples.len())
    }

    /// The first frame at or after `from` whose magnitude reaches `threshold` (full
    /// scale 1.0).
    pub fn first_audible(&self, from: usize, threshold: f32) -> Option<usize> {
        let level = (threshold * 32768.0).ceil() as i32;
        let r = self.lock();
        r.samples
            .get(from..)?
            .iter()
            .position(|s| i32::from(*s).abs() >= level)
            .map(|p| from + p)
    }

    /// The frame's time on the system clock (epoch ms): the lowest delivery line through
    /// the reads around it. `None` until a read has delivered it.
    pub fn frame_unix_ms(&self, frame: usize) -> Option<f64> {
        let r = self.lock();
        let per_frame = 1000.0 / f64::from(SINK_RATE);
        let arrived = r.reads.iter().find(|(_, f)| *f > frame)?.0;
        r.reads
            .iter()
            .filter(|(w, _)| (w - arrived).abs() <= WINDOW_MS)
            .map(|(w, f)| w - (*f as f64 - 1.0 - frame as f64) * per_frame)
            .reduce(f64::min)
    }

    /// How far the recording's line at `frame` has moved from its line at the start
    /// (ms): the server's clock against the system clock, plus any frames the recording
    /// lost (each lost millisecond moves it 1 ms later). Near 0 on a healthy recording.
    pub fn line_shift_ms(&self, frame: usize) -> Option<f64> {
        let per_frame = 1000.0 / f64::from(SINK_RATE);
        let start = self.frame_unix_ms(0)?;
        Some(self.frame_unix_ms(frame)? - frame as f64 * per_frame - start)
    }

    /// The time the read that delivered `frame` returned (epoch ms).
    pub fn delivered_unix_ms(&self, frame: usize) -> Option<f64> {
        let r = self.lock();
        r.reads.iter().find(|(_, f)| *f > frame).map(|(w, _)| *w)
    }

    /// The first frame delivered by a read that returned at or after `unix_ms`.
    pub fn frame_at(&self, unix_ms: f64) -> Option<usize> {
        let r = self.lock();
        let i = r.reads.partition_point(|(w, _)| *w < unix_ms);
        match i {
            0 => Some(0),
            i => r.reads.get(i - 1).map(|(_, f)| *f),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        // A panic in the reader cannot leave the data half-written (plain pushes).
        self.recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

fn read_loop(mut stdout: ChildStdout, recorded: &Mutex<Recorded>) {
    // 1 KiB: a 2 ms fragment is 192 bytes, so each read returns as soon as one is in.
    let mut buf = [0u8; 1024];
    let mut odd: Option<u8> = None;
    loop {
        let n = match stdout.read(&mut buf) {
            Ok(0) => {
                set_error(recorded, "parec ended".into());
                return;
            }
            Ok(n) => n,
            Err(e) => {
                set_error(recorded, format!("reading parec: {e}"));
                return;
            }
        };
        let at = unix_ms_now();
        let mut bytes = buf[..n].iter().copied();
        let mut samples = Vec::with_capacity(n / 2 + 1);
        if let Some(low) = odd.take()
            && let Some(high) = bytes.next()
        {
            samples.push(i16::from_le_bytes([low, high]));
        }
        let rest: Vec<u8> = bytes.collect();
        let mut pairs = rest.chunks_exact(2);
        samples.extend(pairs.by_ref().map(|p| i16::from_le_bytes([p[0], p[1]])));
        odd = pairs.remainder().first().copied();
        let mut r = recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        r.samples.extend(samples);
        let total = r.samples.len();
        r.reads.push((at, total));
    }
}

fn set_error(recorded: &Mutex<Recorded>, error: String) {
    recorded
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .error = Some(error);
}

//! The capture path's own latency, measured: a tone written to the null sink through
//! `pacat` (2 ms latency, the stream idle before each tone, so the server plays it as
//! soon as it has it) at a known system-clock time, and the time [`Recording`] assigns to
//! the tone's first sample. The difference covers pipe → pacat → server → sink render →
//! monitor → parec → the lowest delivery line: an upper bound on how late the truth's
//! line lies behind the moment a sample enters the sound server.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use ttfx_webdriver::kill_group;

use super::capture::{Recording, unix_ms_now};
use super::pulse::SINK_RATE;

/// The tone: 20 ms at half scale from its first sample (no fade, so its first sample is
/// audible), 1 kHz.
fn tone() -> Vec<u8> {
    let frames = SINK_RATE as usize / 50;
    (0..frames)
        .flat_map(|n| {
            let phase = std::f64::consts::TAU * 1000.0 * n as f64 / f64::from(SINK_RATE);
            // cos: the first sample is the peak.
            let v = (0.5 * phase.cos() * f64::from(i16::MAX)) as i16;
            v.to_le_bytes()
        })
        .collect()
}

struct Pacat {
    child: Child,
    stdin: ChildStdin,
}

impl Pacat {
    fn start(sink: &str) -> anyhow::Result<Pacat> {
        let mut child = Command::new("pacat")
            .process_group(0)
            .args([
                "--playback",
                &format!("--device={sink}"),
                "--raw",
                "--format=s16le",
                &format!("--rate={SINK_RATE}"),
                "--channels=1",
                "--latency-msec=2",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start pacat (`cargo xtask setup` installs pulseaudio-utils)")?;
        let Some(stdin) = child.stdin.take() else {
            kill_group(&mut child);
            bail!("pacat has no stdin");
        };
        Ok(Pacat { child, stdin })
    }
}

impl Drop for Pacat {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// `count` tones, each: the capture's time for its first sample minus the system-clock
/// time its write began (ms).
/// `sink` is the null sink, `capture` the recording of its monitor. Blocks for about
/// 0.2 s per tone.
pub fn capture_latency(sink: &str, capture: &Recording, count: usize) -> anyhow::Result<Vec<f64>> {
    let mut pacat = Pacat::start(sink)?;
    let tone = tone();
    let tone_frames = tone.len() / 2;
    let mut latencies = Vec::with_capacity(count);
    // The frame after the last tone: a tone the server played late must not be taken for
    // the next one.
    let mut after_last = 0;
    // pacat connects before its first tone can play; the first write waits for that.
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..count {
        // Long enough after the last tone for the stream to have run dry, at varied
        // phases of the sink's 2 ms render cycle.
        std::thread::sleep(Duration::from_millis(150 + (i as u64 * 7) % 20));
        let from = capture
            .frame_at(unix_ms_now())
            .context("the recording has no reads")?
            .max(after_last);
        let written = unix_ms_now();
        pacat
            .stdin
            .write_all(&tone)
            .and_then(|()| pacat.stdin.flush())
            .context("writing the tone to pacat")?;
        let deadline = written + 2000.0;
        let frame = loop {
            if let Some(f) = capture.first_audible(from, 0.1) {
                break f;
            }
            if unix_ms_now() > deadline {
                bail!("tone {i}: not recorded within 2 s");
            }
            capture.frames()?;
            std::thread::sleep(Duration::from_millis(2));
        };
        after_last = frame + tone_frames;
        // The whole tone recorded, and reads after it to close its line from both sides.
        while capture.frames()? < after_last + SINK_RATE as usize / 100 {
            if unix_ms_now() > deadline {
                bail!("tone {i}: its end not recorded within 2 s");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let at = capture
            .frame_unix_ms(frame)
            .context("the tone's frame has no time")?;
        latencies.push(at - written);
    }
    Ok(latencies)
}

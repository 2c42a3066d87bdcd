//! The sound server the audio truth listens at: PulseAudio with a null sink made the
//! default output, so every browser's audio goes there and its monitor can be recorded.
//!
//! Where no server answers, one is started as a child in its own process group (as root
//! in per-user mode: `--system` would need the `pulse` user's socket rights for no
//! gain), at libpulse's default socket for this environment, so the browsers the
//! drivers start (which inherit this process's HOME and XDG_RUNTIME_DIR) find it with no
//! variable set. A server already running is used as it is: only the null sink is added
//! and made the default, and both are undone on drop. Users are serialized within the
//! process ([`SoundServer::acquire`]): two browsers playing to one default sink at once
//! would mix in its monitor.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::sync::{Mutex, OwnedMutexGuard};
use ttfx_webdriver::kill_group;

/// The null sink's sample rate: PulseAudio's default rate, which Chromium's
/// AudioContext takes (Firefox's takes the sink's), so both engines' output reaches the
/// sink without the server resampling it (at 48 kHz Chromium's stream was resampled).
pub const SINK_RATE: u32 = 44_100;

/// A PulseAudio server with the truth's null sink as its default sink, held by one user
/// at a time.
pub struct SoundServer {
    /// The daemon, when this process started it (killed with its group on drop).
    daemon: Option<Child>,
    /// The null sink module's index, when it was loaded into a server already running.
    module: Option<String>,
    /// The default sink before ours, restored on drop.
    previous_default: Option<String>,
    sink: String,
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
            daemon: None,
            module: None,
            previous_default: None,
            sink: sink.clone(),
            _turn: turn,
        };
        if answers() {
            server.previous_default = pactl(&["get-default-sink"]).ok();
            let module = pactl(
                &["load-module"]
                    .into_iter()
                    .chain(spec.split(' '))
                    .collect::<Vec<_>>(),
            )
            .context("cannot add a null sink to the running PulseAudio server")?;
            server.module = Some(module);
        } else {
            let daemon = Command::new("pulseaudio")
                .process_group(0)
                .args([
                    // No default.pa: only what the truth needs, no hardware probing.
                    "-n",
                    "--daemonize=no",
                    // Stay up between browsers (idle exit would drop the sink).
                    "--exit-idle-time=-1",
                    "--use-pid-file=no",
                    "--log-target=stderr",
                    "--log-level=error",
                    "-L",
                    "module-native-protocol-unix",
                    "-L",
                    &spec,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context(
                    "cannot start pulseaudio (`cargo xtask setup` installs Debian's \
                     pulseaudio and pulseaudio-utils)",
                )?;
            server.daemon = Some(daemon);
            let deadline = Instant::now() + Duration::from_secs(10);
            while !answers() {
                if let Some(child) = server.daemon.as_mut()
                    && let Ok(Some(status)) = child.try_wait()
                {
                    bail!("pulseaudio exited at start ({status}); is another one running?");
                }
                if Instant::now() > deadline {
                    bail!("pulseaudio did not answer `pactl info` within 10 s");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
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
        if let Some(daemon) = self.daemon.as_mut() {
            kill_group(daemon);
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

/// Whether a PulseAudio server answers at this environment's default socket.
fn answers() -> bool {
    pactl(&["info"]).is_ok()
}

/// Runs `pactl ARGS` and returns its trimmed output.
fn pactl(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("pactl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run pactl (`cargo xtask setup` installs pulseaudio-utils)")?;
    if !out.status.success() {
        bail!(
            "pactl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

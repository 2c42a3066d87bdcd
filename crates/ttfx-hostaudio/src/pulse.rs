//! PulseAudio for the browsers: the sound server Firefox and WebKitGTK need before their
//! `AudioContext` runs, and the microphone Firefox hears. Firefox's fake microphone plays
//! a tone, not a file, so Firefox's voice turns take their speech from a real capture
//! device instead: a null sink the speech is played into, in a loop, whose monitor is the
//! default source ([`PulseMicrophone`]). [`NullSink`] is that device, and the one the
//! e2e audio truth records the browsers' output from.
//!
//! Where no server answers, one is started as a child in its own process group, at
//! libpulse's default socket for this environment, so the browsers the drivers start
//! (which inherit this process's HOME and XDG_RUNTIME_DIR) find it with no variable set.
//! A server already running is used as it is: what is added to it is undone on drop.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ttfx_webdriver::kill_group;

use crate::SpeechError;

mod microphone;
mod null_sink;

pub use microphone::PulseMicrophone;
pub use null_sink::{NullSink, SampleFormat};

/// Why the sound server or the microphone could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum PulseError {
    #[error(
        "cannot start pulseaudio (`cargo xtask setup` installs Debian's pulseaudio \
         and pulseaudio-utils)"
    )]
    StartServer(#[source] std::io::Error),
    #[error("pulseaudio exited at start ({0}); is another one running?")]
    ServerExited(ExitStatus),
    #[error("pulseaudio did not answer `pactl info` within 10 s")]
    ServerSilent,
    #[error("cannot run pactl (`cargo xtask setup` installs pulseaudio-utils)")]
    RunPactl(#[source] std::io::Error),
    /// `pactl ARGS` failed, with what it said.
    #[error("pactl {args}: {said}")]
    Pactl { args: String, said: String },
    #[error("cannot run pacat (`cargo xtask setup` installs pulseaudio-utils)")]
    RunPacat(#[source] std::io::Error),
    #[error("pacat has no stdin")]
    PacatStdin,
    #[error(transparent)]
    Speech(#[from] SpeechError),
}

/// A PulseAudio server: one this process started (stopped on drop), or the one that was
/// already running.
#[must_use = "a server this process started is stopped when the handle is dropped"]
pub struct PulseServer {
    daemon: Option<Child>,
}

impl PulseServer {
    /// Joins the server that answers, else starts one with no modules but its socket
    /// (no default.pa: no hardware probing) and waits until it answers.
    pub fn start_or_join() -> Result<PulseServer, PulseError> {
        if answers() {
            return Ok(PulseServer { daemon: None });
        }
        let daemon = Command::new("pulseaudio")
            .process_group(0)
            .args([
                "-n",
                "--daemonize=no",
                // Stay up between browsers (an idle exit would drop the sinks).
                "--exit-idle-time=-1",
                "--use-pid-file=no",
                "--log-target=stderr",
                "--log-level=error",
                "-L",
                "module-native-protocol-unix",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(PulseError::StartServer)?;
        let mut server = PulseServer {
            daemon: Some(daemon),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !answers() {
            if let Some(child) = server.daemon.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(PulseError::ServerExited(status));
            }
            if Instant::now() > deadline {
                return Err(PulseError::ServerSilent);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }

    /// Whether this process started the server (so nothing added to it needs undoing).
    pub fn is_own(&self) -> bool {
        self.daemon.is_some()
    }
}

impl Drop for PulseServer {
    fn drop(&mut self) {
        if let Some(daemon) = self.daemon.as_mut() {
            kill_group(daemon);
        }
    }
}

/// Whether a PulseAudio server answers at this environment's default socket.
pub fn answers() -> bool {
    pactl(&["info"]).is_ok()
}

/// Runs `pactl ARGS` and returns its trimmed output.
pub fn pactl(args: &[&str]) -> Result<String, PulseError> {
    let out = Command::new("pactl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(PulseError::RunPactl)?;
    if !out.status.success() {
        return Err(PulseError::Pactl {
            args: args.join(" "),
            said: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Loads a module (`pactl load-module NAME ARGS…`) and returns its index.
fn load_module(spec: &str) -> Result<String, PulseError> {
    let args: Vec<&str> = ["load-module"].into_iter().chain(spec.split(' ')).collect();
    pactl(&args)
}

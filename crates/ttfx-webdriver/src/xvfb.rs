//! A virtual X display for browsers that need one (WebKitGTK's MiniBrowser has no
//! headless mode): when `DISPLAY` is unset, [`Driver::start`](crate::Driver::start) starts
//! `Xvfb` on a free display number, and the guard kills it after the driver.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why no display could be started.
#[derive(Debug, thiserror::Error)]
pub enum XvfbError {
    #[error(
        "WebKitGTK needs an X display: DISPLAY is unset and Xvfb is not installed \
         (`cargo xtask setup` or `apt-get install -y xvfb` installs it)"
    )]
    NotInstalled,
    #[error("cannot start {}", .bin.display())]
    Spawn {
        bin: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("Xvfb :{number} did not create {} within {} s", .socket.display(), READY_LIMIT.as_secs())]
    NoSocket { number: u32, socket: PathBuf },
    #[error("no free X display number in :{}..:{} for Xvfb", NUMBERS.start, NUMBERS.end - 1)]
    NoFreeNumber,
    /// Waiting on the Xvfb process.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A running `Xvfb`, killed when dropped.
#[must_use = "Xvfb is stopped when the guard is dropped"]
pub struct Xvfb {
    child: Child,
    /// `:N`, for the driver's `DISPLAY`.
    display: String,
}

/// The display numbers tried (`:0`… are the usual real ones).
const NUMBERS: std::ops::Range<u32> = 99..160;

/// How long one Xvfb may take to create its socket.
const READY_LIMIT: Duration = Duration::from_secs(10);

impl Xvfb {
    /// `Xvfb :N -screen 0 1280x800x24 -nolisten tcp` on the first N with neither a socket
    /// (`/tmp/.X11-unix/XN`) nor a lock file (`/tmp/.XN-lock`); a number another process
    /// takes meanwhile makes this Xvfb exit, and the next one is tried.
    pub fn start() -> Result<Xvfb, XvfbError> {
        let bin = find_xvfb().ok_or(XvfbError::NotInstalled)?;
        for n in NUMBERS {
            let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
            if socket.exists() || Path::new(&format!("/tmp/.X{n}-lock")).exists() {
                continue;
            }
            let mut child = Command::new(&bin)
                .arg(format!(":{n}"))
                .args(["-screen", "0", "1280x800x24", "-nolisten", "tcp"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|source| XvfbError::Spawn {
                    bin: bin.clone(),
                    source,
                })?;
            let deadline = Instant::now() + READY_LIMIT;
            loop {
                if child.try_wait()?.is_some() {
                    // Lost the race for this number (or Xvfb refused it): try the next.
                    break;
                }
                if socket.exists() {
                    return Ok(Xvfb {
                        child,
                        display: format!(":{n}"),
                    });
                }
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(XvfbError::NoSocket { number: n, socket });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(XvfbError::NoFreeNumber)
    }
}

impl Xvfb {
    /// `:N`, the `DISPLAY` for processes that should draw on it.
    pub fn display(&self) -> &str {
        &self.display
    }
}

impl Drop for Xvfb {
    /// SIGTERM first (Xvfb then removes its socket and lock file), SIGKILL after 2 s, and
    /// then its files are removed by hand (the number was ours).
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let n = self.display.trim_start_matches(':');
            let _ = std::fs::remove_file(format!("/tmp/.X11-unix/X{n}"));
            let _ = std::fs::remove_file(format!("/tmp/.X{n}-lock"));
        }
    }
}

/// Whether a process started now would have an X display.
pub fn has_display() -> bool {
    std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty())
}

/// `Xvfb` on the PATH, else where Debian puts it.
fn find_xvfb() -> Option<PathBuf> {
    which::which("Xvfb")
        .ok()
        .or_else(|| Some(PathBuf::from("/usr/bin/Xvfb")).filter(|p| p.is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real Xvfb when installed: its socket exists while the guard lives and is gone
    /// after the drop (Xvfb removes it when killed).
    #[test]
    fn the_guard_starts_xvfb_on_a_free_display_and_kills_it_on_drop() {
        if find_xvfb().is_none() {
            eprintln!("skipped: Xvfb is not installed");
            return;
        }
        let x = Xvfb::start().unwrap();
        let n = x.display.trim_start_matches(':').to_owned();
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        assert!(socket.exists());
        drop(x);
        let deadline = Instant::now() + Duration::from_secs(5);
        while socket.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!socket.exists(), "{} is left behind", socket.display());
    }
}

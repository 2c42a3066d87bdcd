//! A `ttfx serve` child process on an ephemeral loopback port.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};

/// The line `ttfx serve` prints once it listens; the URL follows it.
const LISTENING: &str = "ttfx serve: listening on ";

/// A running `ttfx serve`; killed when dropped.
pub struct ServeProcess {
    child: Child,
    /// Base URL, ending in `/`.
    pub url: String,
}

impl ServeProcess {
    /// Starts `bin serve --addr 127.0.0.1:0 <extra>` and waits for its listening line.
    pub fn start(bin: &Path, extra: &[&str]) -> anyhow::Result<Self> {
        let mut child = Command::new(bin)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let stdout = child.stdout.take().context("child has no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix(LISTENING) {
                    let _ = tx.send(url.to_owned());
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => Ok(ServeProcess { child, url }),
            Err(_) => {
                let _ = child.kill();
                let output = child.wait_with_output()?;
                bail!(
                    "ttfx serve did not start listening within 30 s: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                )
            }
        }
    }
}

impl ServeProcess {
    /// The process id (tests read its CPU time and memory from /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

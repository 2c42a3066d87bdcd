//! Headless Chromium through chromedriver, driven over W3C WebDriver with fantoccini.
//!
//! fantoccini speaks plain W3C WebDriver, so the same code later drives geckodriver and
//! WebKitWebDriver; a CDP-only client would tie the tests to Chromium.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

/// The flags Chromium needs on these machines: headless, no sandbox as root, no GPU, no
/// background traffic to hosts the closed network refuses, and audio allowed without a
/// gesture. Every `webdriver.json` in the workspace carries the same list (a test checks).
pub const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
];

/// A chromedriver child process on a free loopback port; killed when dropped.
pub struct Chromedriver {
    child: Child,
    url: String,
}

impl Chromedriver {
    /// Starts `$CHROMEDRIVER` (default `/usr/bin/chromedriver`) on a port it picks itself
    /// and waits until it says which. Picking a free port first and passing it raced
    /// with the other tests' servers: one could take the port in between, chromedriver
    /// then exited, and the readiness check had connected to that other server.
    pub fn start() -> anyhow::Result<Self> {
        let bin = std::env::var_os("CHROMEDRIVER")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/chromedriver"));
        if !bin.is_file() {
            bail!(
                "no chromedriver at {} (run `cargo xtask setup`)",
                bin.display()
            );
        }
        let mut child = Command::new(&bin)
            // Its own process group, so dropping it also ends the browsers it started
            // (killing chromedriver alone orphans them).
            .process_group(0)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let Some(stdout) = child.stdout.take() else {
            kill_group(&mut child);
            bail!("chromedriver's stdout was not captured");
        };
        let port = announced_port(stdout, Duration::from_secs(20));
        let mut driver = Chromedriver {
            child,
            url: String::new(),
        };
        match port {
            Some(port) => driver.url = format!("http://127.0.0.1:{port}"),
            None => match driver.child.try_wait()? {
                Some(status) => bail!("chromedriver exited with {status} before listening"),
                None => bail!("chromedriver did not say its port within 20 s"),
            },
        }
        Ok(driver)
    }

    /// The driver's base URL (`http://127.0.0.1:PORT`), for clients that connect themselves.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Opens a new headless Chromium session.
    pub async fn session(&self) -> anyhow::Result<Client> {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "args": CHROMIUM_ARGS }),
        );
        ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .context("cannot open a Chromium session through chromedriver")
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// Kills a child started with `process_group(0)` and everything in its group.
pub fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill")
        .args(["-KILL", "--", &group])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// The port in chromedriver's "ChromeDriver was started successfully on port N." line;
/// `None` if the line does not come within `limit`. The rest of its output is drained on
/// a thread: a full pipe would block chromedriver.
fn announced_port(stdout: ChildStdout, limit: Duration) -> Option<u16> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            let Ok(line) = line else { return };
            if let Some(port) = port_of(&line) {
                let _ = tx.send(port);
                break;
            }
        }
        lines.for_each(drop);
    });
    rx.recv_timeout(limit).ok()
}

fn port_of(line: &str) -> Option<u16> {
    let (_, rest) = line.split_once("started successfully on port ")?;
    rest.trim_end().trim_end_matches('.').parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_port_chromedriver_announces() {
        assert_eq!(
            port_of("ChromeDriver was started successfully on port 33493."),
            Some(33493)
        );
        assert_eq!(
            port_of("Starting ChromeDriver 156.0.8078.108 (…) on port 0"),
            None
        );
        assert_eq!(
            port_of("ChromeDriver was started successfully on port x."),
            None
        );
    }

    /// wasm-bindgen-test-runner reads Chromium's flags from a `webdriver.json` beside each
    /// wasm test crate; they must not drift from the flags the e2e sessions use.
    #[test]
    fn every_webdriver_json_carries_the_chromium_args() {
        let root = crate::paths::workspace_root();
        let files = ["crates/ttfx-probe/webdriver.json", "www/webdriver.json"];
        for file in files {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            let args: Vec<&str> = json["goog:chromeOptions"]["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert_eq!(args, CHROMIUM_ARGS, "{file}");
        }
    }
}

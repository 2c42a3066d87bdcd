//! Headless Chromium through chromedriver, driven over W3C WebDriver with fantoccini.
//!
//! fantoccini speaks plain W3C WebDriver, so the same code later drives geckodriver and
//! WebKitWebDriver; a CDP-only client would tie the tests to Chromium.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    /// Starts `$CHROMEDRIVER` (default `/usr/bin/chromedriver`) and waits until it answers.
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
        let port = free_port()?;
        let child = Command::new(&bin)
            // Its own process group, so dropping it also ends the browsers it started
            // (killing chromedriver alone orphans them).
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let mut driver = Chromedriver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        driver.wait_ready(Duration::from_secs(20))?;
        Ok(driver)
    }

    fn wait_ready(&mut self, limit: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + limit;
        let addr = self.url.trim_start_matches("http://").to_owned();
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                bail!("chromedriver exited with {status} before listening on {addr}");
            }
            if std::net::TcpStream::connect(&addr).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("chromedriver did not listen on {addr} within {limit:?}")
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

/// A port the OS says is free now. Chromedriver cannot report a port it chose itself, so
/// there is a short window in which another process could take it; loopback tests on one
/// machine make that rare enough, and a clash makes chromedriver exit, which `wait_ready` reports.
fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

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

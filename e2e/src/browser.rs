//! Headless Chromium through chromedriver, driven over W3C WebDriver with fantoccini.
//!
//! The driver itself (its lookup, a free port, readiness, process-group cleanup, the
//! flags) is `ttfx-webdriver`'s, shared with `ttfx run`; this adds the session.
//! fantoccini speaks plain W3C WebDriver, so the same code can drive geckodriver and
//! WebKitWebDriver; a CDP-only client would tie the tests to Chromium.

use anyhow::Context;
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use ttfx_webdriver::{Driver, Engine};

pub use ttfx_webdriver::{CHROMIUM_ARGS, kill_group};

/// A chromedriver child process on a free loopback port; killed with its browsers when
/// dropped.
#[must_use = "chromedriver is killed when the handle is dropped"]
#[derive(Debug)]
pub struct Chromedriver {
    driver: Driver,
}

impl Chromedriver {
    /// Starts `$CHROMEDRIVER` (else chromedriver on the PATH, else `/usr/bin/chromedriver`)
    /// on a port it picks itself.
    pub fn start() -> anyhow::Result<Self> {
        let driver = Driver::start(Engine::Chromium)?;
        Ok(Chromedriver { driver })
    }

    /// The driver's base URL (`http://127.0.0.1:PORT`), for clients that connect themselves.
    pub fn url(&self) -> &str {
        self.driver.url()
    }

    /// Opens a new headless Chromium session.
    pub async fn session(&self) -> anyhow::Result<Client> {
        ClientBuilder::new(HttpConnector::new())
            .capabilities(Engine::Chromium.capabilities(&[]))
            .connect(self.url())
            .await
            .context("cannot open a Chromium session through chromedriver")
    }
}

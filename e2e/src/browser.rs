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
        self.session_with(&[]).await
    }

    /// A session whose Chromium also gets `extra` flags (a fake microphone, …).
    pub async fn session_with(&self, extra: &[String]) -> anyhow::Result<Client> {
        ClientBuilder::new(HttpConnector::new())
            .capabilities(Engine::Chromium.capabilities(extra))
            .connect(self.url())
            .await
            .context("cannot open a Chromium session through chromedriver")
    }
}

/// Any engine's driver (chromedriver, geckodriver or WebKitWebDriver, the latter on an
/// Xvfb display when `DISPLAY` is unset) on a free loopback port; killed with its
/// browsers (and its Xvfb) when dropped. A driver missing on the machine is an error
/// naming it and the setup that installs it: the e2e tests fail, they do not skip.
#[must_use = "the driver is killed when the handle is dropped"]
#[derive(Debug)]
pub struct Browser {
    driver: Driver,
}

impl Browser {
    /// Starts the engine's driver, found as `ttfx run` finds it (`$CHROMEDRIVER`,
    /// `$GECKODRIVER`, `$WEBKITWEBDRIVER`, else the PATH, else where setup installs it).
    pub fn start(engine: Engine) -> anyhow::Result<Self> {
        let driver =
            Driver::start(engine).with_context(|| format!("cannot start {}", engine.name()))?;
        Ok(Browser { driver })
    }

    /// The engine this browser is.
    pub fn engine(&self) -> Engine {
        self.driver.engine()
    }

    /// Opens a new session with the engine's capabilities (`Engine::capabilities`, the
    /// ones `ttfx run` sends).
    pub async fn session(&self) -> anyhow::Result<Client> {
        self.session_with(&[]).await
    }

    /// A session whose browser also gets `extra` flags (a fake microphone, …).
    pub async fn session_with(&self, extra: &[String]) -> anyhow::Result<Client> {
        let engine = self.engine();
        ClientBuilder::new(HttpConnector::new())
            .capabilities(engine.capabilities(extra))
            .connect(self.driver.url())
            .await
            .with_context(|| {
                format!(
                    "cannot open a {} session through {}",
                    engine.name(),
                    engine.driver_name()
                )
            })
    }
}

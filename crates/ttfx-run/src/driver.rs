//! The browser side: a WebDriver endpoint (a local driver started by `ttfx-webdriver`,
//! or a remote one such as a Selenium Grid) and headless sessions on it; Chromium's with
//! chromedriver's performance log (DevTools Network events) switched on.

use std::path::PathBuf;
use std::time::Duration;

use fantoccini::wd::{TimeoutConfiguration, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use ttfx_webdriver::devtools::{Event, network};
use ttfx_webdriver::{Driver, Engine};

pub use crate::args::Browser;
use crate::chain::Chain;
// A Grid's URL may carry its basic-auth password: errors show it without.
use ttfx_core::target::without_userinfo;
use ttfx_webdriver::sandbox::{self, RunAs, Sandbox};

/// Why the WebDriver endpoint or a session on it could not be had. Each text carries
/// its cause whole (no `source` chain, so a `{:#}` print says it once).
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("--webdriver {url}: expected an http(s):// WebDriver URL")]
    NotHttp { url: String },
    #[error("--webdriver {url}: https is not supported; use a plain http:// endpoint")]
    Https { url: String },
    #[error(
        "no {driver} {place}: --browser {browser} is not installed (`cargo xtask setup \
         --browsers all` installs it; or set {env} or --driver, or use --webdriver URL)"
    )]
    NotInstalled {
        driver: &'static str,
        /// `at PATH` or `on the PATH`.
        place: String,
        browser: &'static str,
        env: &'static str,
    },
    #[error("--browser {browser}: {}", Chain(cause))]
    DriverStart {
        browser: &'static str,
        cause: ttfx_webdriver::DriverError,
    },
    #[error("cannot open a headless {browser} session at {url}: {}", Chain(&**cause))]
    Session {
        browser: &'static str,
        url: String,
        /// Boxed: fantoccini's error is large, and most runs never make one.
        cause: Box<fantoccini::error::NewSessionError>,
    },
    #[error("no browser session within {seconds} s at {url} (--browser {browser})")]
    NoSession {
        seconds: u64,
        url: String,
        browser: &'static str,
    },
    #[error("cannot set the session's timeouts: {}", Chain(cause))]
    Timeouts { cause: fantoccini::error::CmdError },
}

impl Browser {
    pub fn engine(self) -> Engine {
        match self {
            Browser::Chromium => Engine::Chromium,
            Browser::Firefox => Engine::Firefox,
            Browser::Webkit => Engine::WebKit,
        }
    }

    /// The name `--browser` takes.
    pub fn name(self) -> &'static str {
        self.engine().name()
    }

    /// Capabilities for a headless session; `extra` are the user's browser flags (and a
    /// fake microphone's), `firefox_prefs` more Firefox preferences (a microphone's).
    fn capabilities(
        self,
        extra: &[String],
        firefox_prefs: &[(&str, bool)],
        bidi: bool,
    ) -> serde_json::Map<String, Value> {
        let mut caps = self.engine().capabilities(extra);
        if bidi {
            // A WebDriver BiDi socket for the session (inject mode's preload script).
            caps.insert(ttfx_webdriver::bidi::WEB_SOCKET_URL.into(), json!(true));
        }
        if self == Browser::Chromium {
            // DevTools Network events, read after each run (ground truth).
            caps.insert("goog:loggingPrefs".into(), json!({ "performance": "ALL" }));
        }
        if let Some(prefs) = caps
            .get_mut("moz:firefoxOptions")
            .and_then(|o| o.get_mut("prefs"))
            .and_then(Value::as_object_mut)
        {
            for (k, v) in firefox_prefs {
                prefs.insert((*k).to_owned(), json!(v));
            }
        }
        caps
    }
}

/// Where sessions come from.
pub struct Endpoint {
    pub url: String,
    pub browser: Browser,
    /// Whether Chromium's sandbox is on for this endpoint's browsers (`None`: another
    /// browser).
    pub sandbox: Option<Sandbox>,
    /// The driver this run started (with its Xvfb for WebKitGTK when DISPLAY is unset),
    /// killed with its browsers when dropped; `None` for `--webdriver`.
    _driver: Option<Driver>,
    /// The account the driver runs as (root's runs), its home removed after the driver.
    run_as: Option<RunAs>,
}

impl Endpoint {
    pub fn remote(url: &str, browser: Browser) -> Result<Endpoint, EndpointError> {
        if !ttfx_core::target::is_http(url) {
            return Err(EndpointError::NotHttp {
                url: without_userinfo(url).into_owned(),
            });
        }
        if url.starts_with("https://") {
            // The client has a plain-HTTP connector only (no TLS stack in the binary).
            return Err(EndpointError::Https {
                url: without_userinfo(url).into_owned(),
            });
        }
        Ok(Endpoint {
            url: url.trim_end_matches('/').to_owned(),
            browser,
            sandbox: (browser == Browser::Chromium).then_some(Sandbox::Remote),
            _driver: None,
            run_as: None,
        })
    }

    /// Starts the browser's driver (`--driver`, else its environment variable, else on
    /// the PATH, else where setup installs it) on a free loopback port. Chromium's runs
    /// in its sandbox whenever it can ([`ttfx_webdriver::sandbox::plan_chromium`]; root
    /// runs the driver as an unprivileged user); `browser_args` are the session's flags.
    pub fn local(
        browser: Browser,
        bin: Option<PathBuf>,
        browser_args: &[String],
    ) -> Result<Endpoint, EndpointError> {
        let engine = browser.engine();
        let name = engine.driver_name();
        let bin = match bin.or_else(|| engine.driver_path()) {
            Some(bin) if bin.is_file() => bin,
            missing => {
                let place = match missing {
                    Some(bin) => format!("at {}", bin.display()),
                    None => "on the PATH".to_owned(),
                };
                return Err(EndpointError::NotInstalled {
                    driver: name,
                    place,
                    browser: browser.name(),
                    env: engine.driver_env(),
                });
            }
        };
        let (sandbox, run_as) = match browser {
            Browser::Chromium => {
                let (sandbox, run_as) = sandbox::plan_chromium(browser_args);
                (Some(sandbox), run_as)
            }
            _ => (None, None),
        };
        let driver = Driver::start_as(engine, &bin, run_as.as_ref()).map_err(|cause| {
            EndpointError::DriverStart {
                browser: browser.name(),
                cause,
            }
        })?;
        Ok(Endpoint {
            url: driver.url().to_owned(),
            browser,
            sandbox,
            _driver: Some(driver),
            run_as,
        })
    }

    /// The account the local driver runs as, when it is not ours.
    pub fn run_as(&self) -> Option<&RunAs> {
        self.run_as.as_ref()
    }

    /// A new headless session (Chromium: with the performance log on; `bidi`: with a
    /// WebDriver BiDi socket).
    pub async fn session(
        &self,
        extra_args: &[String],
        firefox_prefs: &[(&str, bool)],
        bidi: bool,
        timeout: Duration,
    ) -> Result<Client, EndpointError> {
        let mut caps = self.browser.capabilities(extra_args, firefox_prefs, bidi);
        if self.sandbox.as_ref().is_some_and(Sandbox::is_on) {
            without_no_sandbox(&mut caps);
        }
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .map_err(|cause| EndpointError::Session {
                browser: self.browser.name(),
                url: without_userinfo(&self.url).into_owned(),
                cause: Box::new(cause),
            })?;
        // A run's script waits for the whole stream; page loads get the same bound.
        client
            .update_timeouts(TimeoutConfiguration::new(
                Some(timeout + Duration::from_secs(10)),
                Some(timeout),
                Some(Duration::ZERO),
            ))
            .await
            .map_err(|cause| EndpointError::Timeouts { cause })?;
        Ok(client)
    }
}

/// Chromium's flags without `--no-sandbox` (the shared list has it: the e2e harness and
/// the wasm tests run Chromium as root).
fn without_no_sandbox(caps: &mut serde_json::Map<String, Value>) {
    if let Some(args) = caps
        .get_mut("goog:chromeOptions")
        .and_then(|o| o.get_mut("args"))
        .and_then(Value::as_array_mut)
    {
        args.retain(|a| a != "--no-sandbox");
    }
}

/// chromedriver's `GET log` extension (`POST /session/{id}/se/log`): it returns the
/// entries gathered since the last call and clears them.
#[derive(Debug)]
struct GetLog;

impl WebDriverCompatibleCommand for GetLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({ "type": "performance" }).to_string()),
        )
    }
}

/// The DevTools Network events of the performance log since the last read. An endpoint
/// without the log (another browser, a grid node that drops the capability) gives an
/// empty list: ground truth is then simply absent.
pub async fn network_events(client: &Client) -> Vec<Event> {
    let Ok(Value::Array(entries)) = client.issue_cmd(GetLog).await else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| {
            let message: Value = serde_json::from_str(e.get("message")?.as_str()?).ok()?;
            let inner = message.get("message")?;
            let method = inner.get("method")?.as_str()?;
            method.starts_with("Network.").then(|| Event {
                method: method.to_owned(),
                params: inner.get("params").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// The browser's own network timeline for one request, on DevTools' monotonic clock
/// (seconds), anchored at `Network.requestWillBeSent`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkTimes {
    /// `responseReceived` − `requestWillBeSent`, ms.
    pub response_ms: Option<f64>,
    /// First `dataReceived` − `requestWillBeSent`, ms.
    pub first_data_ms: f64,
}

/// Finds the request that carried `x-request-id: request_id` and its first data; else,
/// for a page's own request (which carries no id of the runner's), the request to `url`
/// with `method` sent nearest `started_unix_ms` (`network::find_request_by`).
pub fn network_times(
    events: &[Event],
    request_id: &str,
    page_request: Option<(&str, &str, f64)>,
) -> Option<NetworkTimes> {
    let record = network::find_request(events, request_id).or_else(|| {
        let (url, method, started_unix_ms) = page_request?;
        network::find_request_by(events, url, method, started_unix_ms)
    })?;
    Some(NetworkTimes {
        response_ms: record.response_s.map(|t| (t - record.sent_s) * 1000.0),
        first_data_ms: (record.first_data_s - record.sent_s) * 1000.0,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_endpoint_that_cannot_be_had_is_one_line() {
        let missing = PathBuf::from("/nonexistent/chromedriver");
        let e = Endpoint::local(Browser::Chromium, Some(missing), &[])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "no chromedriver at /nonexistent/chromedriver: --browser chromium is not \
                 installed (`cargo xtask setup --browsers all` installs it; or set CHROMEDRIVER \
                 or --driver, or use --webdriver URL)"
            )
        );
        let e = Endpoint::remote("https://grid:4444", Browser::Firefox)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "--webdriver https://grid:4444: https is not supported; use a plain http:// endpoint"
            )
        );
    }

    use super::*;

    /// The lookup itself is ttfx-webdriver's (`devtools::network`); here its seconds
    /// become ms after the request, with no need of the request's wallTime.
    #[test]
    fn network_times_are_ms_after_the_request() {
        let ev = |method: &str, params: Value| Event {
            method: method.to_owned(),
            params,
        };
        let events = vec![
            ev(
                "Network.requestWillBeSent",
                json!({"requestId": "9", "timestamp": 100.0,
                "request": {"headers": {"x-request-id": "run-1"}}}),
            ),
            ev(
                "Network.responseReceived",
                json!({"requestId": "9", "timestamp": 100.25}),
            ),
            ev(
                "Network.dataReceived",
                json!({"requestId": "9", "timestamp": 100.3}),
            ),
        ];
        let t = network_times(&events, "run-1", None).unwrap();
        assert!((t.first_data_ms - 300.0).abs() < 1e-6, "{t:?}");
        assert!((t.response_ms.unwrap() - 250.0).abs() < 1e-6, "{t:?}");
        assert!(network_times(&events, "absent", None).is_none());
    }
}

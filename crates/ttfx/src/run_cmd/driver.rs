//! The browser side: a WebDriver endpoint (a local chromedriver on a free port, or a
//! remote one such as a Selenium Grid) and headless Chromium sessions on it, with
//! chromedriver's performance log (DevTools Network events) switched on.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fantoccini::wd::{TimeoutConfiguration, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use super::display::{self, Xvfb};

/// Chromium's flags: headless, no sandbox (CI runs as root), no GPU, no background
/// traffic, audio without a gesture. The same list as `e2e::CHROMIUM_ARGS` (a test in
/// this crate checks they agree).
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

/// The browser engines `ttfx run` drives, each through its own WebDriver server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Browser {
    /// Headless Chromium through chromedriver (with DevTools ground truth).
    Chromium,
    /// Headless Firefox through geckodriver.
    Firefox,
    /// WebKitGTK's MiniBrowser through WebKitWebDriver.
    Webkit,
}

impl Browser {
    /// The driver's name, the environment variable that may name its path, and where
    /// `cargo xtask setup --browsers all` (or Debian) puts it.
    fn driver(self) -> (&'static str, &'static str, &'static [&'static str]) {
        match self {
            Browser::Chromium => ("chromedriver", "CHROMEDRIVER", &["/usr/bin/chromedriver"]),
            Browser::Firefox => (
                "geckodriver",
                "GECKODRIVER",
                &["/root/.cargo/bin/geckodriver"],
            ),
            Browser::Webkit => (
                "WebKitWebDriver",
                "WEBKITWEBDRIVER",
                &["/usr/bin/WebKitWebDriver"],
            ),
        }
    }

    /// Whether the browser needs an X display (no headless mode).
    fn needs_display(self) -> bool {
        self == Browser::Webkit
    }

    /// Capabilities for a headless session; `extra` are the user's browser flags.
    fn capabilities(self, extra: &[String]) -> serde_json::Map<String, Value> {
        let mut caps = serde_json::Map::new();
        match self {
            Browser::Chromium => {
                let args: Vec<&str> = CHROMIUM_ARGS
                    .iter()
                    .copied()
                    .chain(extra.iter().map(String::as_str))
                    .collect();
                caps.insert("browserName".into(), json!("chrome"));
                caps.insert("goog:chromeOptions".into(), json!({ "args": args }));
                // DevTools Network events, read after each run (ground truth).
                caps.insert("goog:loggingPrefs".into(), json!({ "performance": "ALL" }));
            }
            Browser::Firefox => {
                let mut args = vec!["-headless".to_owned()];
                args.extend(extra.iter().cloned());
                caps.insert("browserName".into(), json!("firefox"));
                caps.insert(
                    "moz:firefoxOptions".into(),
                    // Autoplay allowed, as Chromium's flag does, for voice pages.
                    json!({ "args": args, "prefs": { "media.autoplay.default": 0 } }),
                );
            }
            Browser::Webkit => {
                // MiniBrowser has no headless mode (2.50 refuses `--headless`): it needs a
                // display, which `Endpoint::local` provides with Xvfb when DISPLAY is unset.
                let mut args = vec!["--automation".to_owned()];
                args.extend(extra.iter().cloned());
                caps.insert("browserName".into(), json!("MiniBrowser"));
                let mut options = json!({ "args": args });
                if let Some(binary) = minibrowser() {
                    options["binary"] = json!(binary);
                }
                caps.insert("webkitgtk:browserOptions".into(), options);
            }
        }
        caps
    }
}

/// Debian ships WebKitGTK's MiniBrowser outside the PATH.
fn minibrowser() -> Option<String> {
    [
        "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser",
        "/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1/MiniBrowser",
    ]
    .iter()
    .find(|p| std::path::Path::new(p).is_file())
    .map(|p| (*p).to_owned())
}

/// Where sessions come from.
pub struct Endpoint {
    pub url: String,
    pub browser: Browser,
    /// The driver this run started, killed when dropped; `None` for `--webdriver`.
    child: Option<Child>,
    /// The virtual display the driver's browser uses, killed after the driver (fields
    /// drop after `Drop::drop`).
    _display: Option<Xvfb>,
}

impl Endpoint {
    pub fn remote(url: &str, browser: Browser) -> anyhow::Result<Endpoint> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("--webdriver {url}: expected an http(s):// WebDriver URL");
        }
        if url.starts_with("https://") {
            // The client has a plain-HTTP connector only (no TLS stack in the binary).
            bail!("--webdriver {url}: https is not supported; use a plain http:// endpoint");
        }
        Ok(Endpoint {
            url: url.trim_end_matches('/').to_owned(),
            browser,
            child: None,
            _display: None,
        })
    }

    /// Starts the browser's driver (`--driver`, else its environment variable, else on
    /// the PATH, else where setup installs it) on a free loopback port.
    pub fn local(browser: Browser, bin: Option<PathBuf>) -> anyhow::Result<Endpoint> {
        let (name, env, installed) = browser.driver();
        let bin = bin
            .or_else(|| std::env::var_os(env).map(PathBuf::from))
            .or_else(|| find_on_path(name))
            .or_else(|| installed.iter().map(PathBuf::from).find(|p| p.is_file()))
            // `cargo install` (how setup gets geckodriver) puts it here.
            .or_else(|| Some(cargo_bin()?.join(name)).filter(|p| p.is_file()))
            .unwrap_or_else(|| PathBuf::from(name));
        if !bin.is_file() {
            let place = if bin.as_os_str() == name {
                "on the PATH".to_owned()
            } else {
                format!("at {}", bin.display())
            };
            bail!(
                "no {name} {place}: --browser {} is not installed (`cargo xtask setup \
                 --browsers all` installs it; or set {env} or --driver, or use --webdriver URL)",
                browser_name(browser)
            );
        }
        // WebKitGTK's MiniBrowser needs an X display; without one it never opens a session.
        let display = if browser.needs_display() && !display::has_display() {
            Some(Xvfb::start()?)
        } else {
            None
        };
        // The driver is given a port that was free a moment ago; another process can take
        // it in between, and then the driver exits. A fresh port next time.
        let mut last_error = None;
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .with_context(|| format!("cannot find a free port for {name}"))?
                .port();
            let mut command = Command::new(&bin);
            if let Some(x) = &display {
                command.env("DISPLAY", &x.display);
            }
            let child = command
                // Its own process group, so stopping the run also ends the browsers the
                // driver started even if a session was not closed (killing the driver
                // alone orphans them).
                .process_group(0)
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("cannot start {}", bin.display()))?;
            let mut endpoint = Endpoint {
                url: format!("http://127.0.0.1:{port}"),
                browser,
                child: Some(child),
                _display: None,
            };
            match endpoint.wait_ready(name, Duration::from_secs(20)) {
                Ok(()) => {
                    endpoint._display = display;
                    return Ok(endpoint);
                }
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("{name} did not start")))
    }

    /// Waits until the driver answers WebDriver's `GET /status` on its port. A bare TCP
    /// connect is not enough: it also succeeds when another process holds the port.
    fn wait_ready(&mut self, name: &str, limit: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + limit;
        let addr = self.url.trim_start_matches("http://").to_owned();
        while Instant::now() < deadline {
            if let Some(child) = &mut self.child
                && let Some(status) = child.try_wait()?
            {
                bail!("{name} exited with {status} before listening on {addr}");
            }
            if answers_webdriver_status(&addr) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("{name} did not answer WebDriver's /status on {addr} within {limit:?}")
    }

    /// A new headless session (Chromium: with the performance log on).
    pub async fn session(
        &self,
        extra_args: &[String],
        timeout: Duration,
    ) -> anyhow::Result<Client> {
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(self.browser.capabilities(extra_args))
            .connect(&self.url)
            .await
            .with_context(|| {
                format!(
                    "cannot open a headless {} session at {}",
                    browser_name(self.browser),
                    self.url
                )
            })?;
        // A run's script waits for the whole stream; page loads get the same bound.
        client
            .update_timeouts(TimeoutConfiguration::new(
                Some(timeout + Duration::from_secs(10)),
                Some(timeout),
                Some(Duration::ZERO),
            ))
            .await
            .context("cannot set the session's timeouts")?;
        Ok(client)
    }
}

pub fn browser_name(browser: Browser) -> &'static str {
    match browser {
        Browser::Chromium => "chromium",
        Browser::Firefox => "firefox",
        Browser::Webkit => "webkit",
    }
}

/// Whether a WebDriver server answers `GET /status` at `addr`: its W3C body names
/// `ready`. Plain HTTP/1.1 over a short-lived connection; loopback only.
fn answers_webdriver_status(addr: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut response);
    is_webdriver_status(&String::from_utf8_lossy(&response))
}

/// A 200 response whose JSON body has `value.ready` (any driver, ready or busy).
fn is_webdriver_status(response: &str) -> bool {
    let Some((head, body)) = response.split_once("\r\n\r\n") else {
        return false;
    };
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return false;
    }
    // Drivers answer with Content-Length; a chunked body would start with its size line.
    let json = body.find('{').map_or("", |start| &body[start..]);
    let json = json.rfind('}').map_or("", |end| &json[..=end]);
    serde_json::from_str::<Value>(json)
        .is_ok_and(|v| v.get("value").and_then(|v| v.get("ready")).is_some())
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill")
                .args(["-KILL", "--", &group])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn cargo_bin() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|c| c.join("bin"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
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

/// The DevTools Network events of the performance log since the last read, as
/// `(method, params)`. An endpoint without the log (another browser, a grid node that
/// drops the capability) gives an empty list: ground truth is then simply absent.
pub async fn network_events(client: &Client) -> Vec<(String, Value)> {
    let Ok(Value::Array(entries)) = client.issue_cmd(GetLog).await else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| {
            let message: Value = serde_json::from_str(e.get("message")?.as_str()?).ok()?;
            let inner = message.get("message")?;
            let method = inner.get("method")?.as_str()?;
            method.starts_with("Network.").then(|| {
                (
                    method.to_owned(),
                    inner.get("params").cloned().unwrap_or(Value::Null),
                )
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

/// Finds the request that carried `x-request-id: request_id` and its first data.
pub fn network_times(events: &[(String, Value)], request_id: &str) -> Option<NetworkTimes> {
    let (devtools_id, sent) = events.iter().find_map(|(method, p)| {
        if method != "Network.requestWillBeSent" {
            return None;
        }
        let headers = p.get("request")?.get("headers")?.as_object()?;
        let ours = headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("x-request-id") && v.as_str() == Some(request_id));
        ours.then(|| {
            Some((
                p.get("requestId")?.as_str()?.to_owned(),
                p.get("timestamp")?.as_f64()?,
            ))
        })?
    })?;
    let at = |wanted: &str| {
        events
            .iter()
            .filter(|(m, p)| {
                m == wanted && p.get("requestId").and_then(Value::as_str) == Some(&devtools_id)
            })
            .filter_map(|(_, p)| p.get("timestamp")?.as_f64())
            .min_by(f64::total_cmp)
    };
    let first_data = at("Network.dataReceived")?;
    Some(NetworkTimes {
        response_ms: at("Network.responseReceived").map(|t| (t - sent) * 1000.0),
        first_data_ms: (first_data - sent) * 1000.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback server that answers every connection with `response`.
    fn answering(response: &'static str) -> String {
        use std::io::{Read, Write};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(response.as_bytes());
            }
        });
        addr
    }

    #[test]
    fn readiness_needs_a_webdriver_status_not_just_a_listener() {
        let driver = answering(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 61\r\n\r\n\
             {\"value\":{\"message\":\"ready for new sessions\",\"ready\":true}}",
        );
        assert!(answers_webdriver_status(&driver));
        let busy = answering("HTTP/1.1 200 OK\r\n\r\n{\"value\":{\"ready\":false}}");
        assert!(
            answers_webdriver_status(&busy),
            "a busy driver is still ours"
        );
        let other = answering("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
        assert!(!answers_webdriver_status(&other));
        let html = answering("HTTP/1.1 200 OK\r\n\r\n<html>{\"ready\": 1}</html>");
        assert!(!answers_webdriver_status(&html));
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap().to_string();
        drop(closed);
        assert!(!answers_webdriver_status(&addr));
    }

    #[test]
    fn the_chromium_args_are_the_e2e_harness_s() {
        assert_eq!(CHROMIUM_ARGS, ttfx_e2e::CHROMIUM_ARGS);
    }

    #[test]
    fn network_times_pick_our_request_and_its_first_data() {
        let ev = |m: &str, p: Value| (m.to_owned(), p);
        let events = vec![
            ev(
                "Network.requestWillBeSent",
                json!({"requestId": "7", "timestamp": 10.0,
                "request": {"headers": {"x-request-id": "other"}}}),
            ),
            ev(
                "Network.requestWillBeSent",
                json!({"requestId": "9", "timestamp": 100.0,
                "request": {"headers": {"X-Request-Id": "run-1"}}}),
            ),
            ev(
                "Network.dataReceived",
                json!({"requestId": "7", "timestamp": 100.1}),
            ),
            ev(
                "Network.responseReceived",
                json!({"requestId": "9", "timestamp": 100.25}),
            ),
            ev(
                "Network.dataReceived",
                json!({"requestId": "9", "timestamp": 100.5}),
            ),
            ev(
                "Network.dataReceived",
                json!({"requestId": "9", "timestamp": 100.3}),
            ),
        ];
        let t = network_times(&events, "run-1").unwrap();
        assert!((t.first_data_ms - 300.0).abs() < 1e-6, "{t:?}");
        assert!((t.response_ms.unwrap() - 250.0).abs() < 1e-6, "{t:?}");
        assert!(network_times(&events, "absent").is_none());
    }
}

//! The browser engines, their WebDriver servers and the capabilities of a headless session.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// W3C capabilities, the map a WebDriver client sends in `alwaysMatch` (fantoccini's
/// `ClientBuilder::capabilities` takes this type).
pub type Capabilities = serde_json::Map<String, Value>;

/// The flags Chromium needs on these machines: headless, no sandbox (CI runs as root), no
/// GPU, no small `/dev/shm`, no background traffic to hosts the closed network refuses,
/// and audio without a gesture. The one list: `ttfx run`, the e2e harness and (through
/// the `webdriver.json` files `cargo xtask` writes from it) the wasm tests all use it.
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

/// Firefox's flags: headless.
pub const FIREFOX_ARGS: &[&str] = &["-headless"];

/// Firefox's preferences: autoplay allowed, as Chromium's `--autoplay-policy` flag does.
const FIREFOX_PREFS: &[(&str, i64)] = &[("media.autoplay.default", 0)];

/// MiniBrowser's flags: driven by WebDriver, audio allowed to start without a user gesture
/// (as Chromium's `--autoplay-policy` flag does). WebKitGTK's default policy, "allow
/// without sound", keeps every script-made `AudioContext` suspended (its `resume()` never
/// settles): its pipeline reaches PulseAudio and stops there (GST_DEBUG; a WebDriver click
/// that calls `resume()` starts it too). It has no headless mode (2.50 refuses
/// `--headless`), so it needs an X display (`Driver::start` gives it Xvfb when DISPLAY is unset).
pub const WEBKIT_ARGS: &[&str] = &["--automation", "--autoplay-policy=allow"];

/// Where Debian ships WebKitGTK's MiniBrowser (outside the PATH).
const MINIBROWSER: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser",
    "/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1/MiniBrowser",
];

/// A browser engine, each driven through its own WebDriver server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// Headless Chromium through chromedriver.
    Chromium,
    /// Headless Firefox through geckodriver.
    Firefox,
    /// WebKitGTK's MiniBrowser through WebKitWebDriver (on an X display).
    WebKit,
}

impl Engine {
    pub const ALL: [Engine; 3] = [Engine::Chromium, Engine::Firefox, Engine::WebKit];

    /// The engine's short name: `chromium`, `firefox`, `webkit`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Chromium => "chromium",
            Engine::Firefox => "firefox",
            Engine::WebKit => "webkit",
        }
    }

    /// The WebDriver server's executable name.
    pub fn driver_name(self) -> &'static str {
        match self {
            Engine::Chromium => "chromedriver",
            Engine::Firefox => "geckodriver",
            Engine::WebKit => "WebKitWebDriver",
        }
    }

    /// The environment variable that may name the driver's path.
    pub fn driver_env(self) -> &'static str {
        match self {
            Engine::Chromium => "CHROMEDRIVER",
            Engine::Firefox => "GECKODRIVER",
            Engine::WebKit => "WEBKITWEBDRIVER",
        }
    }

    /// Where `cargo xtask setup` (Debian's packages) puts the driver; geckodriver comes
    /// from `cargo install`, so cargo's bin folder is searched too.
    fn installed_paths(self) -> &'static [&'static str] {
        match self {
            Engine::Chromium => &["/usr/bin/chromedriver"],
            Engine::Firefox => &[],
            Engine::WebKit => &["/usr/bin/WebKitWebDriver"],
        }
    }

    /// The driver to start: `$`[`driver_env`](Self::driver_env) when set (as given, even
    /// when nothing is there, so the caller's error names it), else the first on the PATH,
    /// else where setup installs it, else in cargo's bin folder. `None` when nowhere.
    pub fn driver_path(self) -> Option<PathBuf> {
        if let Some(path) = std::env::var_os(self.driver_env()).filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(path));
        }
        let name = self.driver_name();
        which::which(name)
            .ok()
            .or_else(|| {
                self.installed_paths()
                    .iter()
                    .map(PathBuf::from)
                    .find(|p| p.is_file())
            })
            .or_else(|| Some(cargo_bin()?.join(name)).filter(|p| p.is_file()))
    }

    /// Whether the browser needs an X display (it has no headless mode).
    pub fn needs_display(self) -> bool {
        self == Engine::WebKit
    }

    /// Whether the driver prints the port it listens on (given `--port=0`).
    /// WebKitWebDriver prints nothing; its port is read from `/proc`.
    pub(crate) fn announces_port(self) -> bool {
        matches!(self, Engine::Chromium | Engine::Firefox)
    }

    /// The engine's browser flags (the fixed ones; a session may add more).
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Engine::Chromium => CHROMIUM_ARGS,
            Engine::Firefox => FIREFOX_ARGS,
            Engine::WebKit => WEBKIT_ARGS,
        }
    }

    /// Capabilities for a headless session: the browser's name and its options with
    /// [`args`](Self::args) followed by `extra` (the user's flags).
    pub fn capabilities(self, extra: &[String]) -> Capabilities {
        let args: Vec<&str> = self
            .args()
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
            .collect();
        let mut caps = Capabilities::new();
        match self {
            Engine::Chromium => {
                caps.insert("browserName".into(), json!("chrome"));
                caps.insert("goog:chromeOptions".into(), json!({ "args": args }));
            }
            Engine::Firefox => {
                let prefs: serde_json::Map<String, Value> = FIREFOX_PREFS
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), json!(v)))
                    .collect();
                caps.insert("browserName".into(), json!("firefox"));
                caps.insert(
                    "moz:firefoxOptions".into(),
                    json!({ "args": args, "prefs": prefs }),
                );
            }
            Engine::WebKit => {
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

/// The `webdriver.json` that `wasm-bindgen-test-runner` reads beside a wasm test crate:
/// Chromium's options from [`Engine::capabilities`], so its flags are
/// [`CHROMIUM_ARGS`]. (The runner names the browser itself.)
pub fn wasm_test_webdriver_json() -> String {
    let caps = Engine::Chromium.capabilities(&[]);
    let options = caps.get("goog:chromeOptions").cloned().unwrap_or_default();
    let mut text =
        serde_json::to_string_pretty(&json!({ "goog:chromeOptions": options })).unwrap_or_default();
    text.push('\n');
    text
}

/// WebKitGTK's MiniBrowser where Debian puts it.
fn minibrowser() -> Option<&'static str> {
    MINIBROWSER.iter().copied().find(|p| Path::new(p).is_file())
}

/// Where `cargo install` puts binaries.
fn cargo_bin() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|c| c.join("bin"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_of(caps: &Capabilities, key: &str) -> Vec<String> {
        caps[key]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn each_engine_s_flags_come_first_and_the_user_s_after() {
        let extra = vec!["--lang=de".to_owned()];
        let chromium = Engine::Chromium.capabilities(&extra);
        let mut want: Vec<String> = CHROMIUM_ARGS.iter().map(|a| (*a).to_owned()).collect();
        want.push("--lang=de".into());
        assert_eq!(args_of(&chromium, "goog:chromeOptions"), want);
        assert_eq!(chromium["browserName"], "chrome");

        let firefox = Engine::Firefox.capabilities(&extra);
        assert_eq!(
            args_of(&firefox, "moz:firefoxOptions"),
            ["-headless", "--lang=de"]
        );
        assert_eq!(
            firefox["moz:firefoxOptions"]["prefs"]["media.autoplay.default"],
            0
        );

        let webkit = Engine::WebKit.capabilities(&[]);
        assert_eq!(
            args_of(&webkit, "webkitgtk:browserOptions"),
            ["--automation", "--autoplay-policy=allow"]
        );
        assert_eq!(webkit["browserName"], "MiniBrowser");
    }

    /// The wasm tests' `webdriver.json` is generated from the one list, not a copy of it.
    #[test]
    fn the_wasm_tests_webdriver_json_carries_the_chromium_args() {
        let json: Value = serde_json::from_str(&wasm_test_webdriver_json()).unwrap();
        let object = json.as_object().unwrap();
        assert_eq!(object.len(), 1, "{json}");
        let args: Vec<&str> = json["goog:chromeOptions"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args, CHROMIUM_ARGS);
    }

    #[test]
    fn names_are_distinct_and_stable() {
        let names: Vec<_> = Engine::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(names, ["chromium", "firefox", "webkit"]);
        let envs: Vec<_> = Engine::ALL.iter().map(|e| e.driver_env()).collect();
        assert_eq!(envs, ["CHROMEDRIVER", "GECKODRIVER", "WEBKITWEBDRIVER"]);
    }
}

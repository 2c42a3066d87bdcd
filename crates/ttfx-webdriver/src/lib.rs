//! One WebDriver launcher for ttfx: `ttfx run`, the e2e harness and `cargo xtask` use it.
//!
//! - [`Engine`]: Chromium, Firefox, WebKit; each one's driver (`$CHROMEDRIVER`,
//!   `$GECKODRIVER`, `$WEBKITWEBDRIVER`, else the PATH, else where setup installs it) and
//!   the capabilities of a headless session, with the one flag list per engine
//!   ([`CHROMIUM_ARGS`] for Chromium).
//! - [`Driver`]: a driver started on a free loopback port without a port race, ready
//!   when it answers `GET /status`, and killed with its whole process group (the browsers
//!   it started) when the handle is dropped.
//! - [`Xvfb`]: a virtual X display for WebKitGTK's MiniBrowser, which has no headless
//!   mode; `Driver::start` starts one when `DISPLAY` is unset.
//! - [`sandbox`]: whether Chromium's sandbox can be on, and the unprivileged account a
//!   root process runs chromedriver as ([`Driver::start_as`]).
//!
//! - [`devtools::Cdp`] and [`bidi::Bidi`] (feature `devtools`): the DevTools protocol
//!   and WebDriver BiDi over a session's WebSocket, for what classic WebDriver cannot
//!   do (preload scripts, network events); [`devtools::network`] finds one request in
//!   the DevTools `Network` events, for the runner's ground truth and the e2e harness,
//!   and [`bidi::network`] in WebDriver BiDi's `network` events (Firefox's).
//!
//! Native and Unix only (process groups, `/proc`). It opens no sessions itself: callers
//! pass [`Engine::capabilities`] to their WebDriver client. It must not depend on the
//! runner, the e2e harness or the host's audio (`ttfx-hostaudio` uses it, not the other
//! way round); its errors are its own enums ([`DriverError`], [`XvfbError`],
//! `devtools::DevToolsError`), not `anyhow`.

#[cfg(feature = "devtools")]
pub mod bidi;
#[cfg(feature = "devtools")]
pub mod devtools;
mod driver;
mod engine;
pub mod sandbox;
mod status;
pub mod xvfb;

pub use driver::{Driver, DriverError, kill_all, kill_group};
pub use engine::{
    CHROMIUM_ARGS, Capabilities, Engine, FIREFOX_ARGS, WEBKIT_ARGS, wasm_test_webdriver_json,
};
pub use status::answers_webdriver_status;
pub use xvfb::{Xvfb, XvfbError};

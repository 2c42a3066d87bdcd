//! The harness shared by the end-to-end tests (and by `ttfx`'s own process tests):
//! real `ttfx serve` processes on ephemeral loopback ports and real browser sessions
//! (headless Chromium and Firefox, WebKitGTK on Xvfb) over W3C WebDriver.
//!
//! It drives `ttfx` as a process; it must not depend on the `ttfx` binary crate (whose
//! tests use this harness), only on the libraries a test needs to state what is true
//! (ttfx-core, ttfx-webdriver, ttfx-hostaudio, ttfx-run's Site).

pub mod audio_truth;
pub mod bench;
pub mod bounds;

pub mod browser;
pub mod byte_server;
pub mod chat_uis;
pub mod driver_tap;

pub mod engines;
pub mod load;
pub mod load_report;
pub mod machine;
pub mod net_truth;
pub mod page;
pub mod paint_truth;
pub mod paths;
pub mod process;
pub mod qa_runners;
pub mod screencast;
pub mod serve;
pub mod site;
pub mod ws_server;

pub use browser::{Browser, CHROMIUM_ARGS, Chromedriver};
pub use serve::ServeProcess;

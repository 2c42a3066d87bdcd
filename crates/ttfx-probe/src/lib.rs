//! ttfx-probe: the browser side of ttfx.
//!
//! The probe's front, `js/probe.js`, takes the clocks and keeps the bytes; it is what the
//! npm package ships at its root, a few KB a page loads before it measures. The analysis
//! (ttfx-core through ttfx-analysis) is loaded lazily: in a Worker for JS pages, linked in
//! here for Rust front ends. This crate is the Rust API over the front, plus the voice
//! API (`TtsPlayer`, `AudioTap`, `VoiceHandoff`), which the package ships as `voice/`.
//! It depends on ttfx-core and ttfx-analysis (and the web-sys family); it must never
//! depend on Leptos or any native crate: it ships inside other people's pages.
//!
//! ```ignore
//! let probe = Probe::new(ProbeOptions::default())?;
//! let run = probe.start(Some("my-model".into()));
//! run.watch(&message_element)?;
//! let response = run.fetch(&url.into(), &init).await?;   // read it as usual
//! let report = run.finished().await?;
//! ```

#[cfg(feature = "voice")]
pub mod audio;
pub mod clock;
mod error;
mod front;
pub mod options;
pub mod run;

pub use error::ProbeError;
pub use options::ProbeOptions;
pub use run::{Probe, ProbeRun};
#[cfg(feature = "voice")]
pub use ttfx_core::voice_result::VoicePart;

/// The probe's version, as reported in every report it writes.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

//! The host's audio for browsers under test, for `ttfx run --voice-turn` and the e2e
//! harness:
//!
//! - [`SpeechFile`]: the speech a fake microphone plays (espeak-ng's, padded with known
//!   silence), with its true start and end, and the browser flags that play it.
//! - [`pulse`]: the PulseAudio server the browsers' audio needs ([`pulse::PulseServer`]),
//!   `pactl`, and the microphone Firefox hears that speech from
//!   ([`pulse::PulseMicrophone`]).
//!
//! Native and Unix only (process groups). It must not depend on the runner or the e2e
//! harness, nor drive a browser: it uses `ttfx-webdriver` only to end the process
//! groups it starts, the way a driver's are ended.

pub mod pulse;
mod speech;

pub use pulse::PulseError;
pub use speech::{SpeechError, SpeechFile, TRUTH_THRESHOLD_DBFS};

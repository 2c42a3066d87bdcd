//! Why what the browsers are given (the fake microphone, inject mode's preload script)
//! could not be prepared: below the modules that prepare it and the crate's `RunError`.

use std::path::PathBuf;

use ttfx_hostaudio::{PulseError, SpeechError};

use crate::chain::Chain;

/// What the browsers are given that could not be prepared. Another crate's error is
/// said whole in the text (no `source` chain).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("the fake microphone's speech: {}", Chain(cause))]
    Speech { cause: SpeechError },
    #[error("Firefox's microphone (PulseAudio): {}", Chain(cause))]
    Microphone { cause: PulseError },
    #[error(
        "no inject bundle at {} (--probe-pkg DIR must hold a probe package's inject.js, as \
         `cargo xtask probe-pkg` builds it; without --probe-pkg the bundle built into ttfx \
         is used): {cause}",
        path.display()
    )]
    NoInjectBundle {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot give the runner's folder to the browser's account: {cause}")]
    SiteOwner { cause: std::io::Error },
}

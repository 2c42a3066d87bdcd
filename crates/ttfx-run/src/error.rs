//! Why `ttfx run` could not be made (exit 2): the failure classes at the crate's boundary.

use std::fmt;
use std::path::PathBuf;

use crate::driver::EndpointError;
use crate::scenario::ScenarioError;
use crate::setup_error::SetupError;
use crate::site::SiteError;

/// Why `ttfx run` could not be made. Each text carries its cause (no `source` chain, so
/// a `{:#}` print says it once).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario (flags, scenario file, flows, budgets) was refused before a browser
    /// started.
    #[error(transparent)]
    Refused(#[from] ScenarioError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The runner's own site could not be made or served (boxed: it is the largest).
    #[error(transparent)]
    Site(Box<SiteError>),
    /// What the browsers are given (the fake microphone, inject mode's preload script)
    /// could not be prepared.
    #[error(transparent)]
    BrowserSetup(#[from] SetupError),
    /// The WebDriver endpoint (a local driver, a grid) or a browser session on it could
    /// not start.
    #[error(transparent)]
    Browser(#[from] EndpointError),
    /// A run failed; the others stop with it.
    #[error("{0}")]
    RunFailed(Cause),
    /// `--under-load` / `--sweep`: the background load could not start or failed.
    #[error("the load (--under-load / --sweep): {0}")]
    Load(String),
    /// `--json` or `--junit` could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// An output file that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot write the {what}: {cause}")]
    Encode {
        what: &'static str,
        cause: serde_json::Error,
    },
    #[error("cannot write {}: {cause}", path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// Why a run failed, as the run's steps (measure, inject) said it: its causes joined with
/// ": " on one line as `ttfx` prints them. Those steps still build their errors with
/// anyhow (a context per step: the run, the page, the WebDriver command); this keeps
/// anyhow out of the crate's API.
#[derive(Debug)]
pub struct Cause(anyhow::Error);

impl Cause {
    pub(crate) fn of(e: anyhow::Error) -> Cause {
        Cause(e)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl From<SiteError> for RunError {
    fn from(e: SiteError) -> RunError {
        RunError::Site(Box::new(e))
    }
}

impl RunError {
    pub(crate) fn run_failed(e: anyhow::Error) -> RunError {
        RunError::RunFailed(Cause::of(e))
    }

    pub(crate) fn load(why: impl Into<String>) -> RunError {
        RunError::Load(why.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_error_says_its_causes_once_on_one_line() {
        use std::error::Error;
        let inner = anyhow::anyhow!("the page failed: boom").context("run 1 against sim/default");
        let e = RunError::run_failed(inner);
        assert_eq!(
            e.to_string(),
            "run 1 against sim/default: the page failed: boom"
        );
        assert!(e.source().is_none(), "{e:?}");
        // As `ttfx` prints it.
        let printed = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(printed, "run 1 against sim/default: the page failed: boom");
        let site = RunError::from(SiteError::NotAFolder {
            path: PathBuf::from("/p"),
        });
        assert_eq!(
            format!("{:#}", anyhow::Error::from(site)),
            "/p is not a folder"
        );
    }
}

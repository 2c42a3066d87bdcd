//! One e2e test body, run in every engine: [`engines!`](crate::engines) makes
//! `NAME::chromium`, `NAME::firefox` and `NAME::webkit` tests of `async fn NAME(Engine)`,
//! so a failure names its engine. Where a check cannot hold in an engine for a reason
//! of the engine (a missing Web API, say), the test calls [`missing`], which says why in
//! one line and records it; docs/fidelity.md's engine matrix shows the cell as missing.

use std::io::Write;

pub use ttfx_webdriver::Engine;

/// Wraps each `async fn NAME(engine: Engine) -> anyhow::Result<()>` in a module `NAME`
/// of three `#[tokio::test]`s, `chromium`, `firefox` and `webkit`. An engine's test may
/// be given attributes after the name, for a cell that is known to fail and why:
/// `engines!(name, webkit = #[ignore = "FAILS in WebKit: …"])` (run it with
/// `-- --ignored`; docs/fidelity.md's matrix says the same).
///
/// Every test holds the machine ([`crate::machine`], a lock every e2e process shares)
/// while it runs; one written `engines!(alone NAME)` holds it alone, so a test that keeps
/// both cores busy (a 500 MB body) never runs beside one whose timing bounds assume a
/// machine that is not saturated, in this binary or another run beside it.
#[macro_export]
macro_rules! engines {
    (alone $name:ident $($rest:tt)*) => {
        $crate::engines!(@tests true, $name $($rest)*);
    };
    (@tests $alone:literal, $name:ident
     $(, chromium = #[$chromium:meta])?
     $(, firefox = #[$firefox:meta])?
     $(, webkit = #[$webkit:meta])? $(,)?) => {
        mod $name {
            use $crate::engines::Engine;

            $(#[$chromium])?
            #[tokio::test]
            async fn chromium() -> anyhow::Result<()> {
                let _machine = $crate::machine::Machine::take($alone).await?;
                super::$name(Engine::Chromium).await
            }

            $(#[$firefox])?
            #[tokio::test]
            async fn firefox() -> anyhow::Result<()> {
                let _machine = $crate::machine::Machine::take($alone).await?;
                super::$name(Engine::Firefox).await
            }

            $(#[$webkit])?
            #[tokio::test]
            async fn webkit() -> anyhow::Result<()> {
                let _machine = $crate::machine::Machine::take($alone).await?;
                super::$name(Engine::WebKit).await
            }
        }
    };
    ($name:ident $($rest:tt)*) => {
        $crate::engines!(@tests false, $name $($rest)*);
    };
}

/// The file [`missing`] appends its lines to: `$TTFX_E2E_MISSING` (`cargo xtask test`
/// sets it and prints the lines in its summary).
pub const MISSING_ENV: &str = "TTFX_E2E_MISSING";

/// Says, in one line, that `what` of test `test` cannot hold in `engine` and why, on
/// stderr and appended to `$TTFX_E2E_MISSING` when set. The test then checks what the
/// engine does instead (or returns), never passing silently.
pub fn missing(engine: Engine, test: &str, what: &str, why: &str) {
    let line = format!("MISSING {test}::{} — {what}: {why}", engine.name());
    eprintln!("{line}");
    if let Some(path) = std::env::var_os(MISSING_ENV) {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = appended {
            eprintln!("cannot record it in {}: {e}", path.to_string_lossy());
        }
    }
}

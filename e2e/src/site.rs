//! A throwaway site for the probe tests: the harness page, the plain example page and
//! the built probe package, in one folder that `ttfx serve --dist` serves next to its
//! simulated endpoints (same origin, as an app would have it).

use anyhow::Context;

use crate::paths;

pub use ttfx_run::site::{Site, copy_dir};

/// Copies `e2e/pages/*`, the example chat page (as `example.html`) and the probe package
/// (as `pkg/`) into a new [`Site`].
pub fn assemble() -> anyhow::Result<Site> {
    let site = Site::empty("ttfx-e2e-site")?;
    let root = paths::workspace_root();
    copy_dir(&root.join("e2e/pages"), &site.dir)?;
    std::fs::copy(
        root.join("crates/ttfx-probe/examples/chat/index.html"),
        site.dir.join("example.html"),
    )
    .context("cannot copy the example page")?;
    copy_dir(&paths::probe_pkg()?, &site.dir.join("pkg"))?;
    // `ttfx serve --dist` wants an index.html.
    std::fs::copy(site.dir.join("harness.html"), site.dir.join("index.html"))?;
    Ok(site)
}

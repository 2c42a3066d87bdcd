//! A throwaway site for the probe tests: the harness page, the plain example page and
//! the built probe package, in one folder that `ttfx serve --dist` serves next to its
//! simulated endpoints (same origin, as an app would have it).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context, bail};

use crate::paths;

/// A folder removed when dropped.
pub struct Site {
    pub dir: PathBuf,
}

impl Site {
    /// Copies `e2e/pages/*`, the example chat page (as `example.html`) and the probe
    /// package (as `pkg/`).
    pub fn assemble() -> anyhow::Result<Site> {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("ttfx-e2e-site-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let site = Site { dir };
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

    pub fn dist_arg(&self) -> &str {
        self.dir.to_str().unwrap_or_default()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Copies the folder `from` (recursively) to `to`.
pub fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    if !from.is_dir() {
        bail!("{} is not a folder", from.display());
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

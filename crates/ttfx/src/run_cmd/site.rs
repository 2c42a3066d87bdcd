//! The runner's own site: a temporary folder with the runner page and the probe package,
//! served by an in-process `ttfx serve` router on an ephemeral loopback port, so the page
//! and the simulated endpoints share an origin as an app's would.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// A temporary folder, removed when dropped.
pub struct Site {
    pub dir: PathBuf,
}

impl Site {
    pub fn assemble(probe_pkg: &Path) -> anyhow::Result<Site> {
        if !probe_pkg.join("probe.js").is_file() || !probe_pkg.join("voice/index.js").is_file() {
            bail!(
                "no probe package (front and voice build) at {} (build it with `cargo xtask probe-pkg`, or pass \
                 --probe-pkg DIR)",
                probe_pkg.display()
            );
        }
        let dir = std::env::temp_dir().join(format!("ttfx-run-site-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let site = Site { dir };
        std::fs::write(site.dir.join("index.html"), include_str!("page.html"))
            .context("cannot write the runner page")?;
        copy_dir(probe_pkg, &site.dir.join("pkg"))?;
        Ok(site)
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))?
    {
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

/// Starts the server on 127.0.0.1 (ephemeral port) and returns its base URL
/// (`http://127.0.0.1:PORT`). It runs until the runtime stops.
pub async fn serve(site: &Site, config: Option<&Path>) -> anyhow::Result<String> {
    let config = match config {
        Some(path) => crate::serve::config::load(path)?,
        None => crate::serve::config::Config::default(),
    };
    let app = crate::serve::router(
        Some(&site.dir),
        config,
        crate::serve::inflight::DEFAULT_MAX_CONCURRENT,
    )?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen on a loopback port")?;
    let addr = listener
        .local_addr()
        .context("cannot read the bound address")?;
    tokio::spawn(async move {
        // The server lives as long as the run; an error here shows as failed runs.
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{addr}"))
}

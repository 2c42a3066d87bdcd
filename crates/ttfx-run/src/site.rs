//! The runner's own site: a temporary folder with the runner page and the probe package,
//! served by an in-process `ttfx serve` router on an ephemeral loopback port, so the page
//! and the simulated endpoints share an origin as an app's would.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context, bail};

/// A temporary folder of files to serve, removed when dropped: the runner's own site,
/// and the e2e suite's (which builds its pages on this one).
pub struct Site {
    pub dir: PathBuf,
}

impl Site {
    /// An empty folder named `{prefix}-{process id}-{n}` in the system's temp folder.
    pub fn empty(prefix: &str) -> anyhow::Result<Site> {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Site { dir })
    }

    /// The runner's own: its page and the probe package (as `pkg/`).
    pub fn runner(probe_pkg: &Path) -> anyhow::Result<Site> {
        if !probe_pkg.join("probe.js").is_file() || !probe_pkg.join("voice/index.js").is_file() {
            bail!(
                "no probe package (front and voice build) at {} (build it with `cargo xtask probe-pkg`, or pass \
                 --probe-pkg DIR)",
                probe_pkg.display()
            );
        }
        let site = Site::empty("ttfx-run-site")?;
        std::fs::write(site.dir.join("index.html"), include_str!("page.html"))
            .context("cannot write the runner page")?;
        copy_dir(probe_pkg, &site.dir.join("pkg"))?;
        Ok(site)
    }

    /// The folder as a `ttfx serve --dist` argument.
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

/// Where the runner's server listens and the URL the browser loads it by.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposure {
    pub listen: SocketAddr,
    /// `scheme://host[:port]`, no path; `None`: the address listened on.
    pub public_url: Option<String>,
}

impl Exposure {
    /// `--listen` and `--public-url`, checked before any browser starts.
    pub fn from_args(listen: Option<SocketAddr>, public_url: Option<&str>) -> anyhow::Result<Self> {
        let listen = listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let public_url = match public_url {
            Some(text) => Some(public_base(text)?),
            None if listen.ip().is_unspecified() => bail!(
                "--listen {listen}: a browser cannot load an unspecified address; give \
                 --public-url with the name or address it reaches this machine by"
            ),
            None => None,
        };
        Ok(Exposure { listen, public_url })
    }
}

/// `text` as a base URL: http(s), a host, no path, query or fragment (a trailing `/` is
/// dropped).
fn public_base(text: &str) -> anyhow::Result<String> {
    let url = url::Url::parse(text).with_context(|| format!("--public-url {text}: not a URL"))?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    if !plain {
        bail!("--public-url {text}: expected http(s)://HOST[:PORT] with no path");
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// Starts the server at `exposure.listen` and returns the base URL the browser loads
/// (`--public-url`, else `http://ADDR:PORT`). A public host that is not loopback is
/// added to the proxy's allowed `Host` values, so `/proxy` targets answer it. It runs
/// until the runtime stops.
pub async fn serve(
    site: &Site,
    config: Option<&Path>,
    exposure: &Exposure,
) -> anyhow::Result<String> {
    let mut config = match config {
        Some(path) => ttfx_serve::config::load(path)?,
        None => ttfx_serve::config::Config::default(),
    };
    if let Some(host) = exposure
        .public_url
        .as_deref()
        .and_then(|u| url::Url::parse(u).ok())
        .and_then(|u| u.host_str().map(str::to_owned))
    {
        config.proxy_access.allowed_hosts.push(host);
    }
    let app = ttfx_serve::router(
        Some(&site.dir),
        config,
        ttfx_edge::inflight::DEFAULT_MAX_CONCURRENT,
    )?;
    let listener = tokio::net::TcpListener::bind(exposure.listen)
        .await
        .with_context(|| format!("cannot listen on {}", exposure.listen))?;
    let addr = listener
        .local_addr()
        .context("cannot read the bound address")?;
    tokio::spawn(async move {
        // The server lives as long as the run; an error here shows as failed runs.
        let _ = axum::serve(listener, app).await;
    });
    Ok(exposure
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listen_address_and_public_url_are_checked() {
        let default = Exposure::from_args(None, None).unwrap();
        assert_eq!(default.listen, SocketAddr::from(([127, 0, 0, 1], 0)));
        assert_eq!(default.public_url, None);
        let grid = Exposure::from_args(
            Some("0.0.0.0:8765".parse().unwrap()),
            Some("http://runner.internal:8765/"),
        )
        .unwrap();
        assert_eq!(
            grid.public_url.as_deref(),
            Some("http://runner.internal:8765")
        );
        let e = Exposure::from_args(Some("0.0.0.0:0".parse().unwrap()), None).unwrap_err();
        assert!(e.to_string().contains("--public-url"), "{e}");
        for bad in [
            "ftp://h",
            "http://h/app",
            "http://h/?q=1",
            "not a url",
            "http://u:p@h",
        ] {
            assert!(Exposure::from_args(None, Some(bad)).is_err(), "{bad}");
        }
    }
}

//! The runner's own site: a temporary folder with the runner page and the probe package,
//! served by an in-process `ttfx serve` router on an ephemeral loopback port, so the page
//! and the simulated endpoints share an origin as an app's would.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use ttfx_serve::{ConfigError, ServeError};

/// At most this many connections to the runner's server are open at once (a socket
/// upgraded to a WebSocket included): its page, the probe's files and the simulated
/// streams of up to 32 sessions (`--concurrency`) need a few each. More wait in the
/// kernel's backlog.
pub const MAX_CONNECTIONS: u32 = 256;

/// Why the runner's site could not be made or served. Each text carries its cause (no
/// `source` chain, so a `{:#}` print says it once).
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("cannot create {}: {cause}", path.display())]
    Create {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "no probe package (front and voice build) at {} (build it with `cargo xtask probe-pkg`, or pass \
         --probe-pkg DIR)",
        dir.display()
    )]
    NoProbePackage { dir: PathBuf },
    #[error("cannot write the runner page: {0}")]
    WritePage(std::io::Error),
    #[error("{} is not a folder", path.display())]
    NotAFolder { path: PathBuf },
    #[error("cannot read {}: {cause}", path.display())]
    ReadFolder {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// An entry of a folder being copied could not be read (the bare I/O error, as before).
    #[error("{0}")]
    ReadEntry(std::io::Error),
    #[error("cannot copy {}: {cause}", path.display())]
    Copy {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "--listen {listen}: a browser cannot load an unspecified address; give \
             --public-url with the name or address it reaches this machine by"
    )]
    UnspecifiedListen { listen: SocketAddr },
    /// The runner's page sends no proxy token, so its server must not offer keys to the
    /// network.
    #[error(
        "--listen {listen}: the config's upstreams hold keys ({upstreams}), and a runner \
         listening beyond loopback would let anyone on the network spend them (its page \
         carries no proxy token); listen on loopback, or run `ttfx serve` with its proxy \
         token and point --url at it"
    )]
    KeysOffLoopback {
        listen: SocketAddr,
        upstreams: String,
    },
    #[error("--public-url {text}: not a URL: {cause}")]
    NotAUrl {
        text: String,
        cause: url::ParseError,
    },
    #[error("--public-url {text}: expected http(s)://HOST[:PORT] with no path")]
    NotABaseUrl { text: String },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error("cannot listen on {addr}: {cause}")]
    Listen {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error("cannot read the bound address: {0}")]
    BoundAddress(std::io::Error),
}

/// A temporary folder of files to serve, removed when dropped: the runner's own site,
/// and the e2e suite's (which builds its pages on this one).
pub struct Site {
    pub dir: PathBuf,
    /// Removes the folder when the site is dropped.
    _temp: tempfile::TempDir,
}

/// The site folder's mode: its owner alone may list, read or write it, so no other user
/// of the machine swaps the page or the probe the browser loads.
pub const SITE_DIR_MODE: u32 = 0o700;

impl Site {
    /// An empty folder named `{prefix}-` and random characters in the system's temp
    /// folder, created anew (never one already there) with mode [`SITE_DIR_MODE`].
    pub fn empty(prefix: &str) -> Result<Site, SiteError> {
        use std::os::unix::fs::PermissionsExt as _;
        let temp = tempfile::Builder::new()
            .prefix(&format!("{prefix}-"))
            .permissions(std::fs::Permissions::from_mode(SITE_DIR_MODE))
            .tempdir()
            .map_err(|cause| SiteError::Create {
                path: std::env::temp_dir().join(format!("{prefix}-*")),
                cause,
            })?;
        Ok(Site {
            dir: temp.path().to_owned(),
            _temp: temp,
        })
    }

    /// The runner's own: its page and the probe package (as `pkg/`).
    pub fn runner(probe_pkg: &Path) -> Result<Site, SiteError> {
        if !probe_pkg.join("probe.js").is_file() || !probe_pkg.join("voice/index.js").is_file() {
            return Err(SiteError::NoProbePackage {
                dir: probe_pkg.to_owned(),
            });
        }
        let site = Site::empty("ttfx-run-site")?;
        std::fs::write(site.dir.join("index.html"), include_str!("page.html"))
            .map_err(SiteError::WritePage)?;
        copy_dir(probe_pkg, &site.dir.join("pkg"))?;
        Ok(site)
    }

    /// The folder as a `ttfx serve --dist` argument.
    pub fn dist_arg(&self) -> &str {
        self.dir.to_str().unwrap_or_default()
    }
}

/// Copies the folder `from` (recursively) to `to`.
pub fn copy_dir(from: &Path, to: &Path) -> Result<(), SiteError> {
    if !from.is_dir() {
        return Err(SiteError::NotAFolder {
            path: from.to_owned(),
        });
    }
    std::fs::create_dir_all(to).map_err(|cause| SiteError::Create {
        path: to.to_owned(),
        cause,
    })?;
    let entries = std::fs::read_dir(from).map_err(|cause| SiteError::ReadFolder {
        path: from.to_owned(),
        cause,
    })?;
    for entry in entries {
        let entry = entry.map_err(SiteError::ReadEntry)?;
        let target = to.join(entry.file_name());
        if entry.file_type().map_err(SiteError::ReadEntry)?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|cause| SiteError::Copy {
                path: entry.path(),
                cause,
            })?;
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
    pub fn from_args(
        listen: Option<SocketAddr>,
        public_url: Option<&str>,
    ) -> Result<Self, SiteError> {
        let listen = listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let public_url = match public_url {
            Some(text) => Some(public_base(text)?),
            None if listen.ip().is_unspecified() => {
                return Err(SiteError::UnspecifiedListen { listen });
            }
            None => None,
        };
        Ok(Exposure { listen, public_url })
    }
}

/// `text` as a base URL: http(s), a host, no path, query or fragment (a trailing `/` is
/// dropped).
fn public_base(text: &str) -> Result<String, SiteError> {
    let url = url::Url::parse(text).map_err(|cause| SiteError::NotAUrl {
        text: text.to_owned(),
        cause,
    })?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    if !plain {
        return Err(SiteError::NotABaseUrl {
            text: text.to_owned(),
        });
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// Refuses a listen address beyond loopback when an upstream holds a key.
fn keys_stay_on_loopback(
    config: &ttfx_serve::config::Config,
    listen: SocketAddr,
) -> Result<(), SiteError> {
    let holding: Vec<&str> = config
        .upstreams
        .0
        .iter()
        .filter(|u| u.key.is_some())
        .map(|u| u.name.as_str())
        .collect();
    if listen.ip().is_loopback() || holding.is_empty() {
        return Ok(());
    }
    Err(SiteError::KeysOffLoopback {
        listen,
        upstreams: holding.join(", "),
    })
}

/// Starts the server at `exposure.listen` and returns the base URL the browser loads
/// (`--public-url`, else `http://ADDR:PORT`). A public host that is not loopback is
/// added to the proxy's allowed `Host` values, so `/proxy` targets answer it. It runs
/// until the runtime stops.
pub async fn serve(
    site: &Site,
    config: Option<&Path>,
    exposure: &Exposure,
) -> Result<String, SiteError> {
    let mut config = match config {
        Some(path) => ttfx_serve::config::load(path)?,
        None => ttfx_serve::config::Config::default(),
    };
    keys_stay_on_loopback(&config, exposure.listen)?;
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
        .map_err(|cause| SiteError::Listen {
            addr: exposure.listen,
            cause,
        })?;
    let addr = listener.local_addr().map_err(SiteError::BoundAddress)?;
    // The page under test talks to this server: its bodies, heads and connections are
    // bounded as `ttfx serve`'s are (the same defaults).
    let app = ttfx_serve::with_body_timeout(
        app,
        std::time::Duration::from_millis(ttfx_serve::connections::DEFAULT_BODY_TIMEOUT_MS),
    );
    tokio::spawn(async move {
        // The server lives as long as the run; an error here shows as failed runs. The
        // accept loop gives each request its peer's address, which lets the proxy refuse
        // a loopback Host from off this machine.
        let _ = ttfx_serve::connections::serve(
            listener,
            app,
            ttfx_serve::connections::ConnectionLimits {
                max_connections: MAX_CONNECTIONS,
                head_timeout: std::time::Duration::from_millis(
                    ttfx_serve::connections::DEFAULT_HEAD_TIMEOUT_MS,
                ),
            },
        )
        .await;
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

    #[tokio::test]
    async fn the_runners_page_server_closes_a_half_sent_head_like_ttfx_serve() {
        use std::io::{Read, Write};
        let site = Site::empty("ttfx-run-site-test").unwrap();
        std::fs::write(site.dir.join("index.html"), "<p>hi</p>").unwrap();
        let exposure = Exposure::from_args(None, None).unwrap();
        let base = serve(&site, None, &exposure).await.unwrap();
        let addr = base.trim_start_matches("http://").to_owned();
        let start = std::time::Instant::now();
        let closed = tokio::task::spawn_blocking(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
                .unwrap();
            let mut sink = Vec::new();
            // End of stream or a reset: either way the server let go.
            let _ = s.read_to_end(&mut sink);
        });
        closed.await.unwrap();
        let took = start.elapsed();
        let timeout =
            std::time::Duration::from_millis(ttfx_serve::connections::DEFAULT_HEAD_TIMEOUT_MS);
        // Not before the head timeout; well before the 20 s read timeout (slack for a
        // loaded machine, and the proof the connection was not held for ever).
        assert!(took >= timeout, "closed after {took:?}");
        assert!(
            took < std::time::Duration::from_secs(18),
            "held for {took:?}"
        );
    }

    #[test]
    fn another_user_can_neither_predict_nor_enter_the_site_folder() {
        use std::os::unix::fs::PermissionsExt as _;
        let (a, b) = (
            Site::empty("ttfx-run-site").unwrap(),
            Site::empty("ttfx-run-site").unwrap(),
        );
        assert_ne!(a.dir, b.dir);
        for site in [&a, &b] {
            let name = site.dir.file_name().unwrap().to_str().unwrap();
            let random = name.strip_prefix("ttfx-run-site-").unwrap();
            // tempfile's default: 6 random alphanumerics, not the process id.
            assert_eq!(random.len(), 6, "{name}");
            assert!(!random.contains(&std::process::id().to_string()), "{name}");
            let mode = std::fs::metadata(&site.dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, SITE_DIR_MODE, "{mode:o}");
        }
        let dir = a.dir.clone();
        std::fs::write(dir.join("index.html"), "x").unwrap();
        drop(a);
        assert!(!dir.exists(), "removed with the site");
    }

    #[test]
    fn a_runner_listening_beyond_loopback_never_offers_keys_to_the_network() {
        let keyed = ttfx_serve::config::parse(
            "[upstreams.openai]\npreset = \"openai\"\napi_key = \"sk-test-not-real\"\n",
            Path::new("."),
            |_| None,
        )
        .unwrap();
        let open: SocketAddr = "0.0.0.0:8765".parse().unwrap();
        let e = keys_stay_on_loopback(&keyed, open).unwrap_err().to_string();
        assert!(e.contains("openai") && e.contains("spend them"), "{e}");
        assert!(
            !e.contains("sk-test-not-real"),
            "the key is in the error: {e}"
        );
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(keys_stay_on_loopback(&keyed, loopback).is_ok());
        let keyless = ttfx_serve::config::Config::default();
        assert!(keys_stay_on_loopback(&keyless, open).is_ok());
    }

    #[test]
    fn a_site_error_says_its_cause_once() {
        use std::error::Error;
        let e = Exposure::from_args(Some("0.0.0.0:0".parse().unwrap()), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--listen 0.0.0.0:0: a browser cannot load an unspecified address; give \
             --public-url with the name or address it reaches this machine by"
        );
        let e = Exposure::from_args(None, Some("not a url")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--public-url not a url: not a URL: relative URL without a base"
        );
        assert!(e.source().is_none(), "{e:?}");
        let e = copy_dir(Path::new("/nonexistent/ttfx"), Path::new("/nonexistent/to")).unwrap_err();
        assert_eq!(e.to_string(), "/nonexistent/ttfx is not a folder");
    }
}

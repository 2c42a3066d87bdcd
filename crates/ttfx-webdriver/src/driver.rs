//! Starting a WebDriver server on a free loopback port, waiting until it is ready, and
//! killing it with everything it started.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::engine::Engine;
use crate::status::answers_webdriver_status;
use crate::xvfb::{self, Xvfb};

/// How long a driver may take to say its port, and then to answer `/status`.
const START_LIMIT: Duration = Duration::from_secs(20);

/// Attempts for a driver given a port picked beforehand (another process may take it).
const PICKED_PORT_ATTEMPTS: usize = 3;

/// A running WebDriver server on `127.0.0.1`, in its own process group. Dropping the
/// handle kills the whole group (the driver and the browsers it started, even those of
/// sessions nobody closed), then the Xvfb it was given, if any.
#[must_use = "the driver is killed when the handle is dropped"]
pub struct Driver {
    child: Child,
    engine: Engine,
    url: String,
    /// Dropped after `Drop::drop` killed the driver: the display outlives its browsers.
    xvfb: Option<Xvfb>,
}

impl Driver {
    /// Starts the engine's driver from [`Engine::driver_path`].
    pub fn start(engine: Engine) -> anyhow::Result<Driver> {
        let Some(bin) = engine.driver_path() else {
            bail!(
                "no {} on the PATH and ${} is unset (`cargo xtask setup{}` installs it)",
                engine.driver_name(),
                engine.driver_env(),
                if engine == Engine::Chromium {
                    ""
                } else {
                    " --browsers all"
                }
            );
        };
        Driver::start_at(engine, &bin)
    }

    /// Starts `bin` as the engine's driver on a free loopback port and waits until it
    /// answers `GET /status`. An engine that needs a display gets a new [`Xvfb`] when
    /// `DISPLAY` is unset.
    ///
    /// chromedriver and geckodriver are given `--port=0` and say which port they took.
    /// Picking a free port first and passing it raced with other processes: one could
    /// take the port in between, the driver then exited, and a readiness check could
    /// reach that other process. WebKitWebDriver refuses port 0; it gets a picked port,
    /// is retried on a fresh one when it exits, and is ready only when the socket that
    /// answers `/status` is its own.
    pub fn start_at(engine: Engine, bin: &Path) -> anyhow::Result<Driver> {
        let name = engine.driver_name();
        if !bin.is_file() {
            bail!("no {name} at {}", bin.display());
        }
        let xvfb = if engine.needs_display() && !xvfb::has_display() {
            Some(Xvfb::start()?)
        } else {
            None
        };
        if engine.announces_port() {
            return Driver::start_announced(engine, bin, xvfb);
        }
        let mut last_error = None;
        for _ in 0..PICKED_PORT_ATTEMPTS {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .with_context(|| format!("cannot find a free port for {name}"))?
                .port();
            let child = spawn(engine, bin, port, xvfb.as_ref(), false)?;
            let mut driver = Driver {
                child,
                engine,
                url: format!("http://127.0.0.1:{port}"),
                xvfb: None,
            };
            match driver.wait_ready(true) {
                Ok(()) => {
                    driver.xvfb = xvfb;
                    return Ok(driver);
                }
                // The failed driver is killed here; the display stays for the next one.
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("{name} did not start")))
    }

    fn start_announced(engine: Engine, bin: &Path, xvfb: Option<Xvfb>) -> anyhow::Result<Driver> {
        let name = engine.driver_name();
        let mut child = spawn(engine, bin, 0, xvfb.as_ref(), true)?;
        let outputs: [Option<Box<dyn Read + Send>>; 2] = [
            child.stdout.take().map(|s| Box::new(s) as _),
            child.stderr.take().map(|s| Box::new(s) as _),
        ];
        // From here on a failure kills the driver (its handle is dropped).
        let mut driver = Driver {
            child,
            engine,
            url: String::new(),
            xvfb,
        };
        let Some(port) = announced_port(outputs, START_LIMIT) else {
            match driver.child.try_wait()? {
                Some(status) => bail!("{name} exited with {status} before listening"),
                None => bail!(
                    "{name} did not say its port within {} s",
                    START_LIMIT.as_secs()
                ),
            }
        };
        driver.url = format!("http://127.0.0.1:{port}");
        driver.wait_ready(false)?;
        Ok(driver)
    }

    /// Waits until the driver answers WebDriver's `GET /status` on its port; with
    /// `check_owner`, the listening socket must also be the driver's own.
    fn wait_ready(&mut self, check_owner: bool) -> anyhow::Result<()> {
        let name = self.engine.driver_name();
        let deadline = Instant::now() + START_LIMIT;
        let addr = self.url.trim_start_matches("http://").to_owned();
        let port: u16 = addr
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_default();
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                bail!("{name} exited with {status} before listening on {addr}");
            }
            if answers_webdriver_status(&addr)
                && (!check_owner || listens_on(self.child.id(), port).unwrap_or(true))
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!(
            "{name} did not answer WebDriver's /status on {addr} within {} s",
            START_LIMIT.as_secs()
        )
    }

    /// The driver's base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The engine this driver serves.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The driver's process id, which is also its process group's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The Xvfb display (`:N`) the driver's browsers draw on, when this handle started one.
    pub fn xvfb_display(&self) -> Option<&str> {
        self.xvfb.as_ref().map(Xvfb::display)
    }
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("engine", &self.engine)
            .field("url", &self.url)
            .field("pid", &self.child.id())
            .field("xvfb", &self.xvfb_display())
            .finish()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// The driver as a child in its own process group, so killing the group also ends the
/// browsers it started (killing the driver alone orphans them). `announce`: its output
/// is piped to read the port it says; otherwise it goes nowhere.
fn spawn(
    engine: Engine,
    bin: &Path,
    port: u16,
    xvfb: Option<&Xvfb>,
    announce: bool,
) -> anyhow::Result<Child> {
    let mut command = Command::new(bin);
    command.process_group(0).arg(format!("--port={port}"));
    if engine == Engine::Firefox {
        // geckodriver's WebDriver BiDi port defaults to 9222 for every Firefox it starts;
        // two at once would collide.
        command.arg("--websocket-port=0");
    }
    if let Some(x) = xvfb {
        command.env("DISPLAY", x.display());
    }
    let output = || {
        if announce {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    command
        .stdin(Stdio::null())
        .stdout(output())
        .stderr(output())
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))
}

/// Kills a child started with `process_group(0)` and everything in its group, and
/// reaps it.
pub fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill")
        .args(["-KILL", "--", &group])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// The first port a driver announces on any of its outputs; `None` if none comes within
/// `limit`. The outputs are drained on threads until they close: a full pipe would block
/// the driver.
fn announced_port(outputs: [Option<Box<dyn Read + Send>>; 2], limit: Duration) -> Option<u16> {
    let (tx, rx) = mpsc::channel();
    for output in outputs.into_iter().flatten() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(output).lines();
            for line in lines.by_ref() {
                let Ok(line) = line else { return };
                if let Some(port) = port_of(&line) {
                    let _ = tx.send(port);
                    break;
                }
            }
            lines.for_each(drop);
        });
    }
    drop(tx);
    rx.recv_timeout(limit).ok()
}

/// The port in chromedriver's "ChromeDriver was started successfully on port N." or
/// geckodriver's "… INFO Listening on 127.0.0.1:N" line.
fn port_of(line: &str) -> Option<u16> {
    if let Some((_, rest)) = line.split_once("started successfully on port ") {
        return rest.trim_end().trim_end_matches('.').parse().ok();
    }
    let (_, rest) = line.split_once("Listening on ")?;
    let (_, port) = rest.trim_end().rsplit_once(':')?;
    port.parse().ok().filter(|&p| p != 0)
}

/// Whether process `pid` holds the socket listening on TCP `port` (IPv4 or IPv6), from
/// `/proc`; `None` when `/proc` cannot tell (then the caller trusts `/status` alone).
fn listens_on(pid: u32, port: u16) -> Option<bool> {
    let mut inodes = Vec::new();
    let mut readable = false;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            readable = true;
            inodes.extend(listening_inodes(&text, port));
        }
    }
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    if !readable {
        return None;
    }
    Some(fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let target = target.to_string_lossy();
            inodes
                .iter()
                .any(|inode| target == format!("socket:[{inode}]"))
        })
    }))
}

/// The inodes of the sockets in LISTEN state on `port` in a `/proc/net/tcp{,6}` table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (_, local_port) = fields.get(1)?.rsplit_once(':')?;
            let listening =
                u16::from_str_radix(local_port, 16).ok() == Some(port) && *fields.get(3)? == LISTEN;
            listening.then(|| fields.get(9)?.parse().ok())?
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_port_chromedriver_announces() {
        assert_eq!(
            port_of("ChromeDriver was started successfully on port 33493."),
            Some(33493)
        );
        assert_eq!(
            port_of("Starting ChromeDriver 156.0.8078.108 (…) on port 0"),
            None
        );
        assert_eq!(
            port_of("ChromeDriver was started successfully on port x."),
            None
        );
    }

    #[test]
    fn reads_the_port_geckodriver_announces() {
        assert_eq!(
            port_of("1764562800000\tgeckodriver\tINFO\tListening on 127.0.0.1:41235"),
            Some(41235)
        );
        assert_eq!(
            port_of("1764562800000\tgeckodriver\tINFO\tListening on [::1]:41235"),
            Some(41235)
        );
        assert_eq!(port_of("Listening on 127.0.0.1:0"), None);
        assert_eq!(port_of("geckodriver INFO Listening on nothing"), None);
    }

    #[test]
    fn the_owner_check_finds_this_process_s_listener_and_no_other() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let Some(ours) = listens_on(std::process::id(), port) else {
            eprintln!("skipped: no /proc");
            return;
        };
        assert!(ours, "our own listener on {port}");
        // PID 1 (init) does not hold this test's socket.
        assert!(!listens_on(1, port).unwrap_or(false));
        drop(listener);
        assert_eq!(listens_on(std::process::id(), port), Some(false));
    }

    #[test]
    fn listening_inodes_keep_the_listen_state_on_the_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1\n\
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(listening_inodes(table, 0x1F90), [4242]);
        assert_eq!(listening_inodes(table, 0x1F91), [4444]);
        assert!(listening_inodes(table, 80).is_empty());
    }
}

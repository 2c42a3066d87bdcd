//! Starting a WebDriver server on a free loopback port, waiting until it is ready, and
//! killing it with everything it started.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use crate::engine::Engine;
use crate::sandbox::RunAs;
use crate::status::answers_webdriver_status;
use crate::xvfb::{self, Xvfb, XvfbError};

/// Why a driver could not be started.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("no {name} on the PATH and ${env} is unset (`cargo xtask setup` installs it)")]
    NotFound {
        name: &'static str,
        env: &'static str,
    },
    #[error("no {name} at {}", .bin.display())]
    NoBinary { name: &'static str, bin: PathBuf },
    #[error("cannot start {}", .bin.display())]
    Spawn {
        bin: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The driver exited before it listened: worth one more start (see
    /// [`Driver::start_at`]).
    #[error("{name} exited with {status} before listening; it printed: {printed}")]
    ExitedEarly {
        name: &'static str,
        status: ExitStatus,
        printed: String,
    },
    #[error("{name} did not listen on a port within {} s", START_LIMIT.as_secs())]
    NoPort { name: &'static str },
    #[error("cannot read {name}'s listening port: /proc is not readable")]
    ProcUnreadable { name: &'static str },
    #[error("{name} exited with {status} before listening on {addr}")]
    ExitedBeforeReady {
        name: &'static str,
        status: ExitStatus,
        addr: String,
    },
    #[error("{name} did not answer WebDriver's /status on {addr} within {} s", START_LIMIT.as_secs())]
    NotReady { name: &'static str, addr: String },
    #[error(transparent)]
    Xvfb(#[from] XvfbError),
    /// Waiting on the driver process.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Process groups of the drivers this process started and has not killed yet: what
/// [`kill_all`] ends when the process must stop before its handles are dropped (a signal,
/// a panic under `panic = "abort"`).
static LIVE_GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn live_groups() -> std::sync::MutexGuard<'static, Vec<u32>> {
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills every driver this process started that is still running, with its browsers.
/// For signal handlers and panic hooks: their handles may never be dropped. Xvfb
/// displays are left to their own handles (a killed X server leaves its lock file).
pub fn kill_all() {
    let groups: Vec<u32> = std::mem::take(&mut *live_groups());
    for group in groups {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{group}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// How long a driver may take to listen on a port, and then to answer `/status`.
const START_LIMIT: Duration = Duration::from_secs(20);

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
    /// The driver's and its browsers' `TMPDIR`, removed after they are killed: a browser
    /// killed with its session still open leaves its profile behind (geckodriver's
    /// `rust_mozprofile*`, about 40 MB each; Chromium's `org.chromium.Chromium.*`), and
    /// one full `cargo xtask test` left 1.3 GB of them in /tmp.
    scratch: tempfile::TempDir,
}

impl Driver {
    /// Starts the engine's driver from [`Engine::driver_path`].
    pub fn start(engine: Engine) -> Result<Driver, DriverError> {
        let Some(bin) = engine.driver_path() else {
            return Err(DriverError::NotFound {
                name: engine.driver_name(),
                env: engine.driver_env(),
            });
        };
        Driver::start_at(engine, &bin)
    }

    /// Starts `bin` as the engine's driver on a free loopback port and waits until it
    /// answers `GET /status`. An engine that needs a display gets a new [`Xvfb`] when
    /// `DISPLAY` is unset.
    ///
    /// Every driver is given `--port=0`, so the system picks a free port as it binds.
    /// chromedriver and geckodriver print the port they took; WebKitWebDriver prints
    /// nothing, so its port is read from its own listening socket in `/proc`. (Picking a
    /// free port first and passing it raced with other processes: one could take the
    /// port in between, the driver then exited, and a readiness check could reach that
    /// other process.)
    ///
    /// A driver that exits before it listens is started again, up to [`START_ATTEMPTS`]
    /// times: chromedriver did so once in a full e2e run beside other test runs on a busy
    /// machine, and a test should not fail for it. Each error quotes the first lines the
    /// driver printed, so a cause that repeats shows itself.
    pub fn start_at(engine: Engine, bin: &Path) -> Result<Driver, DriverError> {
        Driver::start_as(engine, bin, None)
    }

    /// [`Driver::start_at`], the driver (and so its browsers) running as `run_as` when
    /// given: a root process's way to keep Chromium's sandbox on.
    pub fn start_as(
        engine: Engine,
        bin: &Path,
        run_as: Option<&RunAs>,
    ) -> Result<Driver, DriverError> {
        let mut attempt = 1;
        loop {
            match Driver::try_start(engine, bin, run_as) {
                Err(e @ DriverError::ExitedEarly { .. }) if attempt < START_ATTEMPTS => {
                    eprintln!("ttfx-webdriver: {e}; starting it again");
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                result => return result,
            }
        }
    }

    fn try_start(
        engine: Engine,
        bin: &Path,
        run_as: Option<&RunAs>,
    ) -> Result<Driver, DriverError> {
        let name = engine.driver_name();
        if !bin.is_file() {
            return Err(DriverError::NoBinary {
                name,
                bin: bin.to_owned(),
            });
        }
        let xvfb = if engine.needs_display() && !xvfb::has_display() {
            Some(Xvfb::start()?)
        } else {
            None
        };
        let scratch = scratch_dir(run_as)?;
        let announces = engine.announces_port();
        let mut child = spawn(
            engine,
            bin,
            xvfb.as_ref(),
            announces,
            run_as,
            scratch.path(),
        )?;
        live_groups().push(child.id());
        let outputs: [Option<Box<dyn Read + Send>>; 2] = [
            child.stdout.take().map(|s| Box::new(s) as _),
            child.stderr.take().map(|s| Box::new(s) as _),
        ];
        // From here on a failure kills the driver (its handle is dropped), then the Xvfb.
        let mut driver = Driver {
            child,
            engine,
            url: String::new(),
            xvfb,
            scratch,
        };
        let printed = Arc::new(Mutex::new(Vec::new()));
        let port = if announces {
            announced_port(outputs, START_LIMIT, &printed)
        } else {
            driver.port_from_proc(START_LIMIT)?
        };
        let Some(port) = port else {
            match driver.child.try_wait()? {
                Some(status) => {
                    let printed = printed.lock().map(|l| l.join(" | ")).unwrap_or_default();
                    return Err(DriverError::ExitedEarly {
                        name,
                        status,
                        printed,
                    });
                }
                None => return Err(DriverError::NoPort { name }),
            }
        };
        driver.url = format!("http://127.0.0.1:{port}");
        driver.wait_ready()?;
        Ok(driver)
    }

    /// The port the driver process listens on, from `/proc`, once it does; `None` if it
    /// exits first or does not listen within `limit`.
    fn port_from_proc(&mut self, limit: Duration) -> Result<Option<u16>, DriverError> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(None);
            }
            let Some(ports) = listening_ports(self.child.id()) else {
                return Err(DriverError::ProcUnreadable {
                    name: self.engine.driver_name(),
                });
            };
            // One port, bound on 127.0.0.1 and ::1 alike.
            if let Some(port) = ports.into_iter().min() {
                return Ok(Some(port));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(None)
    }

    /// Waits until the driver answers WebDriver's `GET /status` on its port.
    fn wait_ready(&mut self) -> Result<(), DriverError> {
        let name = self.engine.driver_name();
        let deadline = Instant::now() + START_LIMIT;
        let addr = self.url.trim_start_matches("http://").to_owned();
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Err(DriverError::ExitedBeforeReady { name, status, addr });
            }
            if answers_webdriver_status(&addr) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(DriverError::NotReady { name, addr })
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

    /// The folder the driver and its browsers get as `TMPDIR` (their profiles go there);
    /// removed when the handle is dropped.
    pub fn scratch_dir(&self) -> &Path {
        self.scratch.path()
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
        let pid = self.child.id();
        live_groups().retain(|&g| g != pid);
        kill_group(&mut self.child);
    }
}

/// The driver as a child in its own process group, so killing the group also ends the
/// browsers it started (killing the driver alone orphans them). `announce`: its output
/// is piped to read the port it says; otherwise it goes nowhere.
fn spawn(
    engine: Engine,
    bin: &Path,
    xvfb: Option<&Xvfb>,
    announce: bool,
    run_as: Option<&RunAs>,
    scratch: &Path,
) -> Result<Child, DriverError> {
    let mut command = Command::new(bin);
    command.process_group(0).arg("--port=0");
    // Every temporary file of the driver and its browsers lands in the handle's folder.
    for var in ["TMPDIR", "TMP", "TEMP"] {
        command.env(var, scratch);
    }
    if let Some(user) = run_as {
        use std::os::unix::process::CommandExt as _;
        // std drops root's supplementary groups with the switch.
        command
            .uid(user.uid)
            .gid(user.gid)
            .env("HOME", user.home())
            .env("USER", &user.name)
            .env("LOGNAME", &user.name)
            .current_dir(user.home());
    }
    if engine == Engine::Firefox {
        // geckodriver's WebDriver BiDi port defaults to 9222 for every Firefox it starts;
        // two at once would collide.
        command.arg("--websocket-port=0");
    }
    if let Some(x) = xvfb {
        command.env("DISPLAY", x.display());
        command.env("XAUTHORITY", x.authority());
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
        .map_err(|source| DriverError::Spawn {
            bin: bin.to_owned(),
            source,
        })
}

/// A new folder for the driver's temporary files, mode 0700, owned by the account the
/// driver runs as.
fn scratch_dir(run_as: Option<&RunAs>) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::Builder::new()
        .prefix("ttfx-driver-tmp-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    if let Some(user) = run_as {
        std::os::unix::fs::chown(dir.path(), Some(user.uid), Some(user.gid))?;
    }
    Ok(dir)
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
/// Lines a driver printed before it announced its port (the first few), for the error
/// when it exits instead.
const PRINTED_LINES: usize = 8;

fn announced_port(
    outputs: [Option<Box<dyn Read + Send>>; 2],
    limit: Duration,
    printed: &Arc<Mutex<Vec<String>>>,
) -> Option<u16> {
    let (tx, rx) = mpsc::channel();
    for output in outputs.into_iter().flatten() {
        let tx = tx.clone();
        let printed = printed.clone();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(output).lines();
            for line in lines.by_ref() {
                let Ok(line) = line else { return };
                if let Ok(mut p) = printed.lock()
                    && p.len() < PRINTED_LINES
                {
                    p.push(line.clone());
                }
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

/// Starts of a driver that exits before it listens.
const START_ATTEMPTS: u32 = 3;

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

/// The TCP ports process `pid` listens on (IPv4 and IPv6), from its socket inodes in
/// `/proc/PID/fd` and the LISTEN rows of `/proc/net/tcp{,6}`; `None` when `/proc` cannot
/// tell.
fn listening_ports(pid: u32) -> Option<Vec<u16>> {
    let inodes: Vec<u64> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .flatten()
        .filter_map(|fd| {
            let target = std::fs::read_link(fd.path()).ok()?;
            let target = target.to_str()?;
            target
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect();
    let tables: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(t).ok())
        .collect();
    if tables.is_empty() {
        return None;
    }
    let mut ports: Vec<u16> = tables
        .iter()
        .flat_map(|table| listening_sockets(table))
        .filter(|(_, inode)| inodes.contains(inode))
        .map(|(port, _)| port)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    Some(ports)
}

/// The (port, inode) of each socket in LISTEN state in a `/proc/net/tcp{,6}` table.
fn listening_sockets(table: &str) -> Vec<(u16, u64)> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if *fields.get(3)? != LISTEN {
                return None;
            }
            let (_, port) = fields.get(1)?.rsplit_once(':')?;
            Some((
                u16::from_str_radix(port, 16).ok()?,
                fields.get(9)?.parse().ok()?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

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
    fn the_listening_ports_of_this_process_come_from_proc() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let Some(ours) = listening_ports(std::process::id()) else {
            eprintln!("skipped: no /proc");
            return;
        };
        assert!(ours.contains(&port), "{port} not in {ours:?}");
        // A connected socket is not a listener.
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        drop(listener);
        let after = listening_ports(std::process::id()).unwrap();
        assert!(!after.contains(&port), "{port} still in {after:?}");
    }

    #[test]
    fn listening_sockets_keep_the_listen_state() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1\n\
   2: 00000000000000000000000001000000:855F 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(listening_sockets(table), [(0x1F90, 4242), (0x855F, 4444)]);
    }
}

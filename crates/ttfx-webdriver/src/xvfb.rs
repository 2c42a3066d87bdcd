//! A virtual X display for browsers that need one (WebKitGTK's MiniBrowser has no
//! headless mode): when `DISPLAY` is unset, [`Driver::start`](crate::Driver::start) starts
//! `Xvfb` on a free display number, and the guard kills it after the driver.
//!
//! The display takes no TCP connections (`-nolisten tcp`) and only clients holding its
//! random cookie (`-auth FILE`): without one, any local user could connect to the
//! display, read the page's pixels and type into the browser.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why no display could be started.
#[derive(Debug, thiserror::Error)]
pub enum XvfbError {
    #[error(
        "WebKitGTK needs an X display: DISPLAY is unset and Xvfb is not installed \
         (`cargo xtask setup` or `apt-get install -y xvfb` installs it)"
    )]
    NotInstalled,
    #[error("cannot start {}", .bin.display())]
    Spawn {
        bin: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("Xvfb :{number} did not create {} within {} s", .socket.display(), READY_LIMIT.as_secs())]
    NoSocket { number: u32, socket: PathBuf },
    #[error("no free X display number in :{}..:{} for Xvfb", NUMBERS.start, NUMBERS.end - 1)]
    NoFreeNumber,
    #[error("cannot write Xvfb's auth file: {0}")]
    Auth(std::io::Error),
    #[error("no random cookie for Xvfb: {0}")]
    Random(getrandom::Error),
    /// Waiting on the Xvfb process.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A running `Xvfb`, killed when dropped.
#[must_use = "Xvfb is stopped when the guard is dropped"]
pub struct Xvfb {
    child: Child,
    /// `:N`, for the driver's `DISPLAY`.
    display: String,
    /// The folder (mode 0700) holding the auth file, removed when dropped.
    auth_dir: tempfile::TempDir,
}

/// The auth file's name in its folder; its mode is [`AUTH_FILE_MODE`].
const AUTH_FILE: &str = "Xauthority";

/// The auth file's mode: only its owner reads the cookie.
pub const AUTH_FILE_MODE: u32 = 0o600;

/// Bytes of the MIT-MAGIC-COOKIE-1 (its fixed size).
pub const COOKIE_BYTES: usize = 16;

/// The display numbers tried (`:0`… are the usual real ones).
const NUMBERS: std::ops::Range<u32> = 99..160;

/// How long one Xvfb may take to create its socket.
const READY_LIMIT: Duration = Duration::from_secs(10);

impl Xvfb {
    /// `Xvfb :N -screen 0 1280x800x24 -nolisten tcp -auth FILE` on the first N with
    /// neither a socket (`/tmp/.X11-unix/XN`) nor a lock file (`/tmp/.XN-lock`); a number
    /// another process takes meanwhile makes this Xvfb exit, and the next one is tried.
    /// FILE holds a random cookie for `:N` ([`Xvfb::authority`]).
    pub fn start() -> Result<Xvfb, XvfbError> {
        let bin = find_xvfb().ok_or(XvfbError::NotInstalled)?;
        use std::os::unix::fs::PermissionsExt as _;
        // tempfile's folders follow the umask (0755 here): the mode is asked for.
        let auth_dir = tempfile::Builder::new()
            .prefix("ttfx-xvfb-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(XvfbError::Auth)?;
        let auth = auth_dir.path().join(AUTH_FILE);
        let mut cookie = [0; COOKIE_BYTES];
        getrandom::fill(&mut cookie).map_err(XvfbError::Random)?;
        for n in NUMBERS {
            let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
            if socket.exists() || Path::new(&format!("/tmp/.X{n}-lock")).exists() {
                continue;
            }
            write_authority(&auth, n, &cookie).map_err(XvfbError::Auth)?;
            let mut child = Command::new(&bin)
                .args(arguments(n, &auth))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|source| XvfbError::Spawn {
                    bin: bin.clone(),
                    source,
                })?;
            let deadline = Instant::now() + READY_LIMIT;
            loop {
                if child.try_wait()?.is_some() {
                    // Lost the race for this number (or Xvfb refused it): try the next.
                    break;
                }
                if socket.exists() {
                    return Ok(Xvfb {
                        child,
                        display: format!(":{n}"),
                        auth_dir,
                    });
                }
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(XvfbError::NoSocket { number: n, socket });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(XvfbError::NoFreeNumber)
    }
}

impl Xvfb {
    /// `:N`, the `DISPLAY` for processes that should draw on it.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The auth file with the display's cookie, for the driver's `XAUTHORITY`.
    pub fn authority(&self) -> PathBuf {
        self.auth_dir.path().join(AUTH_FILE)
    }
}

/// Xvfb's command line for display `:n` with the cookies in `auth`.
fn arguments(n: u32, auth: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = [
        format!(":{n}").as_str(),
        "-screen",
        "0",
        "1280x800x24",
        "-nolisten",
        "tcp",
        "-auth",
    ]
    .map(Into::into)
    .into();
    args.push(auth.as_os_str().to_owned());
    args
}

/// Writes `path` (mode [`AUTH_FILE_MODE`], created anew) in the Xauthority format: one
/// entry, family FamilyWild (any address), display number `n`, MIT-MAGIC-COOKIE-1 with
/// `cookie`. Each field is a big-endian u16 length and its bytes (the family a bare u16);
/// written here rather than by `xauth`, so no other program sees the cookie on its
/// command line.
fn write_authority(path: &Path, n: u32, cookie: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    const FAMILY_WILD: u16 = 0xffff;
    let mut entry = FAMILY_WILD.to_be_bytes().to_vec();
    let number = n.to_string();
    for field in [&b""[..], number.as_bytes(), b"MIT-MAGIC-COOKIE-1", cookie] {
        let len = u16::try_from(field.len()).map_err(std::io::Error::other)?;
        entry.extend(len.to_be_bytes());
        entry.extend(field);
    }
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(AUTH_FILE_MODE)
        .open(path)?;
    file.write_all(&entry)
}

impl Drop for Xvfb {
    /// SIGTERM first (Xvfb then removes its socket and lock file), SIGKILL after 2 s, and
    /// then its files are removed by hand (the number was ours).
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let n = self.display.trim_start_matches(':');
            let _ = std::fs::remove_file(format!("/tmp/.X11-unix/X{n}"));
            let _ = std::fs::remove_file(format!("/tmp/.X{n}-lock"));
        }
    }
}

/// Whether a process started now would have an X display.
pub fn has_display() -> bool {
    std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty())
}

/// `Xvfb` on the PATH, else where Debian puts it.
fn find_xvfb() -> Option<PathBuf> {
    which::which("Xvfb")
        .ok()
        .or_else(|| Some(PathBuf::from("/usr/bin/Xvfb")).filter(|p| p.is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_local_user_cannot_connect_to_the_display_over_tcp_or_without_the_cookie() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let auth = dir.path().join(AUTH_FILE);
        let args = arguments(99, &auth);
        let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args,
            [
                ":99",
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
                "-auth",
                auth.to_str().unwrap()
            ]
        );
        let cookie = [0xab; COOKIE_BYTES];
        write_authority(&auth, 99, &cookie).unwrap();
        let mode = std::fs::metadata(&auth).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, AUTH_FILE_MODE, "{mode:o}");
        let mut want = vec![0xff, 0xff, 0, 0, 0, 2, b'9', b'9', 0, 18];
        want.extend(b"MIT-MAGIC-COOKIE-1");
        want.extend([0, 16]);
        want.extend(cookie);
        assert_eq!(std::fs::read(&auth).unwrap(), want);
        // xauth, when installed, reads it as the one entry it is.
        if let Ok(out) = Command::new("xauth")
            .args(["-f", auth.to_str().unwrap(), "list"])
            .output()
        {
            let listed = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                listed.contains(":99  MIT-MAGIC-COOKIE-1  abababab"),
                "{listed}"
            );
        }
    }

    /// A real Xvfb when installed: its socket exists while the guard lives and is gone
    /// after the drop (Xvfb removes it when killed).
    #[test]
    fn the_guard_starts_xvfb_on_a_free_display_and_kills_it_on_drop() {
        if find_xvfb().is_none() {
            eprintln!("skipped: Xvfb is not installed");
            return;
        }
        use std::os::unix::fs::PermissionsExt as _;
        let x = Xvfb::start().unwrap();
        let n = x.display.trim_start_matches(':').to_owned();
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        assert!(socket.exists());
        let auth = x.authority();
        let mode = std::fs::metadata(&auth).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, AUTH_FILE_MODE, "{mode:o}");
        let dir_mode = std::fs::metadata(auth.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700, "{dir_mode:o}");
        // The running server's command line, as the system shows it.
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", x.child.id())).unwrap();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(
            cmdline.ends_with(&format!("-nolisten tcp -auth {} ", auth.display())),
            "{cmdline}"
        );
        // A client without the cookie is refused; with it, it connects (xdpyinfo, when
        // installed, is such a client).
        if let Ok(out) = Command::new("xdpyinfo")
            .args(["-display", &x.display])
            .env_remove("XAUTHORITY")
            .env("HOME", "/nonexistent")
            .output()
        {
            assert!(!out.status.success(), "a client without the cookie got in");
            let with = Command::new("xdpyinfo")
                .args(["-display", &x.display])
                .env("XAUTHORITY", &auth)
                .output()
                .unwrap();
            assert!(
                with.status.success(),
                "{}",
                String::from_utf8_lossy(&with.stderr)
            );
        }
        drop(x);
        assert!(!auth.exists(), "the cookie is left behind");
        let deadline = Instant::now() + Duration::from_secs(5);
        while socket.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!socket.exists(), "{} is left behind", socket.display());
    }
}

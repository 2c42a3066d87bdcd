//! Chromium's sandbox, on whenever it can be: `ttfx run --url` opens pages nobody here
//! wrote, and the sandbox is what stands between such a page's exploit and the machine.
//!
//! Chromium refuses to run its sandbox as root, and it needs unprivileged user
//! namespaces. So a local chromedriver started by root runs as the unprivileged user
//! `nobody` (its browsers with it), with a fresh home folder; where that or the
//! namespaces are not to be had, the sandbox is off and [`Sandbox::Off`] says why, for
//! the run to print in its report and on stderr.

use std::path::Path;

/// Whether the browsers a driver starts run in Chromium's sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandbox {
    /// On; `user` is the account the driver and browsers run as when it is not ours.
    On { user: Option<String> },
    /// Off, and why.
    Off { why: String },
    /// A remote WebDriver server (`--webdriver`) decides; nothing is known here.
    Remote,
}

impl Sandbox {
    /// One line for the report and stderr.
    pub fn describe(&self) -> String {
        match self {
            Sandbox::On { user: Some(user) } => {
                format!("Chromium's sandbox is on (the driver and its browsers run as {user})")
            }
            Sandbox::On { user: None } => "Chromium's sandbox is on".to_owned(),
            Sandbox::Off { why } => format!("Chromium's sandbox is OFF: {why}"),
            Sandbox::Remote => {
                "Chromium's sandbox is decided by the remote WebDriver server (--webdriver)"
                    .to_owned()
            }
        }
    }

    pub fn is_on(&self) -> bool {
        matches!(self, Sandbox::On { .. })
    }

    /// For a report's JSON: `{"state": "on" | "off" | "remote", "user"?, "why"?}`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Sandbox::On { user } => serde_json::json!({ "state": "on", "user": user }),
            Sandbox::Off { why } => serde_json::json!({ "state": "off", "why": why }),
            Sandbox::Remote => serde_json::json!({ "state": "remote" }),
        }
    }
}

/// The unprivileged account a root process runs chromedriver as, with a home folder
/// (mode 0700, owned by it) removed when dropped.
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    home: tempfile::TempDir,
}

impl RunAs {
    /// The account's home for this run (`HOME`: Chromium keeps its crash and key
    /// databases there).
    pub fn home(&self) -> &Path {
        self.home.path()
    }
}

/// The account root runs browsers as.
pub const UNPRIVILEGED_USER: &str = "nobody";

/// How a local Chromium driver starts: with the sandbox (as [`RunAs`] when we are root)
/// or without it, and why. `browser_args` are the user's flags (`--browser-arg`): a
/// `--no-sandbox` among them turns it off.
pub fn plan_chromium(browser_args: &[String]) -> (Sandbox, Option<RunAs>) {
    if browser_args.iter().any(|a| a == "--no-sandbox") {
        let why = "--browser-arg --no-sandbox asked for it".to_owned();
        return (Sandbox::Off { why }, None);
    }
    if let Some(why) = user_namespaces_blocked() {
        let why = format!("{why}, and Chromium's sandbox needs unprivileged user namespaces");
        return (Sandbox::Off { why }, None);
    }
    if effective_uid() != Some(0) {
        return (Sandbox::On { user: None }, None);
    }
    match run_as(UNPRIVILEGED_USER) {
        Ok(run_as) => {
            let user = Some(run_as.name.clone());
            (Sandbox::On { user }, Some(run_as))
        }
        Err(cause) => {
            let why = format!(
                "ttfx run runs as root, where Chromium cannot sandbox itself, and cannot run \
                 it as `{UNPRIVILEGED_USER}` ({cause}); run ttfx as another user"
            );
            (Sandbox::Off { why }, None)
        }
    }
}

/// This process's effective user id (`/proc/self/status`, `Uid:` real effective …).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Why unprivileged user namespaces cannot be made here, if a setting says so.
fn user_namespaces_blocked() -> Option<String> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_owned())
    };
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some("user.max_user_namespaces is 0".to_owned());
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some("kernel.unprivileged_userns_clone is 0".to_owned());
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Some("AppArmor restricts unprivileged user namespaces".to_owned());
    }
    None
}

/// `name`'s ids from `/etc/passwd`, and a fresh home owned by it.
fn run_as(name: &str) -> std::io::Result<RunAs> {
    use std::os::unix::fs::PermissionsExt as _;
    let passwd = std::fs::read_to_string("/etc/passwd")?;
    let (uid, gid) = passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            if fields.first() != Some(&name) {
                return None;
            }
            Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?))
        })
        .ok_or_else(|| std::io::Error::other(format!("no user `{name}` in /etc/passwd")))?;
    if uid == 0 {
        return Err(std::io::Error::other(format!("`{name}` is root")));
    }
    let home = tempfile::Builder::new()
        .prefix("ttfx-browser-home-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    std::os::unix::fs::chown(home.path(), Some(uid), Some(gid))?;
    Ok(RunAs {
        uid,
        gid,
        name: name.to_owned(),
        home,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_never_meets_chromium_without_its_sandbox_unless_the_report_says_why() {
        let (sandbox, run_as) = plan_chromium(&["--no-sandbox".to_owned()]);
        assert_eq!(
            sandbox.describe(),
            "Chromium's sandbox is OFF: --browser-arg --no-sandbox asked for it"
        );
        assert!(run_as.is_none());
        let (sandbox, run_as) = plan_chromium(&[]);
        match (&sandbox, effective_uid(), user_namespaces_blocked()) {
            (Sandbox::Off { why }, _, Some(blocked)) => assert!(why.contains(&blocked), "{why}"),
            (Sandbox::On { user: Some(user) }, Some(0), None) => {
                let run_as = run_as.expect("root runs the driver as another user");
                assert_eq!(user, UNPRIVILEGED_USER);
                assert_ne!(run_as.uid, 0);
                use std::os::unix::fs::MetadataExt as _;
                let home = std::fs::metadata(run_as.home()).unwrap();
                assert_eq!((home.uid(), home.mode() & 0o777), (run_as.uid, 0o700));
            }
            (Sandbox::Off { why }, Some(0), None) => assert!(why.contains("root"), "{why}"),
            (Sandbox::On { user: None }, Some(uid), None) => {
                assert_ne!(uid, 0);
                assert!(run_as.is_none());
            }
            other => panic!("{other:?}"),
        }
    }
}

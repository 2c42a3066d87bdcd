//! Real drivers, where installed: each engine's driver starts on its own port, opens a
//! browser, and dropping the handle leaves no process of its group behind.
//!
//! An engine whose driver or browser is missing is skipped with a line on stderr
//! (`cargo xtask setup` installs all three; `--browsers chromium` Chromium alone).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use ttfx_webdriver::{Driver, Engine, answers_webdriver_status};

/// Whether the engine's driver and browser are installed here.
fn installed(engine: Engine) -> bool {
    let browser = match engine {
        Engine::Chromium => ["/usr/bin/chromium", "/usr/bin/chromium-browser"].as_slice(),
        Engine::Firefox => ["/usr/bin/firefox-esr", "/usr/bin/firefox"].as_slice(),
        // MiniBrowser sits outside the PATH; the driver package pulls it in.
        Engine::WebKit => ["/usr/bin/WebKitWebDriver"].as_slice(),
    };
    let driver = engine.driver_path().is_some_and(|p| p.is_file());
    let display = !engine.needs_display()
        || std::env::var_os("DISPLAY").is_some()
        || which::which("Xvfb").is_ok()
        || Path::new("/usr/bin/Xvfb").is_file();
    let ok = driver && display && browser.iter().any(|p| Path::new(p).is_file());
    if !ok {
        eprintln!("skipped {}: not installed", engine.name());
    }
    ok
}

/// The live (not zombie) processes whose process group is `group`.
fn group_members(group: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
            let (_, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let pgrp: u32 = fields.nth(1)?.parse().ok()?;
            (pgrp == group && state != "Z" && state != "X").then_some(pid)
        })
        .collect()
}

/// `POST /session` with the engine's headless capabilities, over plain HTTP/1.1.
fn new_session(driver: &Driver) -> anyhow::Result<Value> {
    let addr = driver.url().trim_start_matches("http://");
    let body = json!({
        "capabilities": { "alwaysMatch": driver.engine().capabilities(&[]) }
    })
    .to_string();
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(90)))?;
    write!(
        stream,
        "POST /session HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    // Drivers keep the connection open despite `Connection: close`: read the head, then
    // exactly Content-Length bytes.
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    serde_json::from_slice(&body)
        .with_context(|| format!("not JSON: {}", String::from_utf8_lossy(&body)))
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// Two drivers of one engine started at the same moment: different ports, both answer
/// `/status`, each is its own process group.
#[test]
fn drivers_started_at_once_get_their_own_ports() {
    for engine in Engine::ALL {
        if !installed(engine) {
            continue;
        }
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| Driver::start(engine));
            let b = s.spawn(|| Driver::start(engine));
            (a.join().unwrap(), b.join().unwrap())
        });
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_ne!(a.url(), b.url(), "{engine:?}");
        for d in [&a, &b] {
            assert!(
                answers_webdriver_status(d.url().trim_start_matches("http://")),
                "{d:?}"
            );
            assert_eq!(group_members(d.pid()), [d.pid()], "{d:?}");
        }
    }
}

/// A session starts a browser in the driver's group; dropping the handle ends them all,
/// though the session was never closed, and removes the profile the browser left in the
/// driver's scratch folder.
#[test]
fn dropping_the_driver_ends_its_browsers() {
    for engine in Engine::ALL {
        if !installed(engine) {
            continue;
        }
        let driver = Driver::start(engine).unwrap();
        let group = driver.pid();
        let session = new_session(&driver).unwrap();
        assert!(
            session["value"]["sessionId"].is_string(),
            "{engine:?}: {session}"
        );
        let members = group_members(group);
        assert!(
            members.len() > 1,
            "{engine:?}: no browser in the driver's group: {members:?}"
        );
        let scratch = driver.scratch_dir().to_owned();
        // chromedriver and geckodriver make a new profile there for each session;
        // WebKitWebDriver's MiniBrowser writes none.
        let left = std::fs::read_dir(&scratch).unwrap().count();
        assert!(
            left > 0 || engine == Engine::WebKit,
            "{engine:?}: the browser wrote nothing to its TMPDIR"
        );
        drop(driver);
        assert!(
            !scratch.exists(),
            "{engine:?}: {} outlived the driver",
            scratch.display()
        );
        assert!(
            wait_until(Duration::from_secs(5), || group_members(group).is_empty()),
            "{engine:?}: left behind: {:?}",
            group_members(group)
        );
    }
}

/// WebKitGTK gets a display of its own when there is none, and it goes with the driver.
#[test]
fn webkit_without_a_display_gets_xvfb_for_as_long_as_the_driver_lives() {
    if std::env::var_os("DISPLAY").is_some() || !installed(Engine::WebKit) {
        eprintln!("skipped: DISPLAY is set or WebKit is not installed");
        return;
    }
    let driver = Driver::start(Engine::WebKit).unwrap();
    let display = driver.xvfb_display().expect("an Xvfb display").to_owned();
    let socket = format!("/tmp/.X11-unix/X{}", display.trim_start_matches(':'));
    assert!(Path::new(&socket).exists(), "{socket}");
    drop(driver);
    assert!(
        wait_until(Duration::from_secs(5), || !Path::new(&socket).exists()),
        "{socket} is left behind"
    );
}

/// A path with no driver is an error naming it; nothing is started.
#[test]
fn a_missing_driver_is_named() {
    let err = Driver::start_at(Engine::Chromium, Path::new("/nonexistent/chromedriver"))
        .unwrap_err()
        .to_string();
    assert_eq!(err, "no chromedriver at /nonexistent/chromedriver");
}

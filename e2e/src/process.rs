//! A child process with a time limit: `ttfx run` and its browsers must end, or the test
//! fails with what the run printed so far (a test that hangs says nothing until CI's own
//! limit kills everything).

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `command`'s output, as [`Command::output`], or an error with its output so far when it
/// has not ended within `limit`. On time it gets SIGTERM (`ttfx run` then stops every
/// browser it started), and SIGKILL 10 s later.
pub fn output_within(command: &mut Command, limit: Duration) -> anyhow::Result<Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Read on threads: a full pipe would block the child.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out = child.stdout.take().map(|r| drain(Box::new(r)));
    let err = child.stderr.take().map(|r| drain(Box::new(r)));
    let deadline = Instant::now() + limit;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let now = Instant::now();
        if now >= deadline + Duration::from_secs(10) {
            let _ = child.kill();
        } else if now >= deadline && !timed_out {
            timed_out = true;
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    let output = Output {
        status,
        stdout: join(out),
        stderr: join(err),
    };
    if timed_out {
        anyhow::bail!(
            "{:?} still running after {} s: stopped\n--- stdout\n{}\n--- stderr\n{}",
            command.get_program(),
            limit.as_secs(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output)
}

//! `ttfx serve` as a real process on a real loopback port.

use std::time::{Duration, Instant};

use ttfx_e2e::ServeProcess;

fn ttfx() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_ttfx"))
}

#[tokio::test]
async fn simulated_chat_stream_honours_the_injected_first_token_delay() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let url = format!(
        "{}sim/default/v1/chat/completions?ttft_ms=200&tokens_per_second=100&output_tokens=5",
        server.url
    );
    let client = reqwest::Client::new();
    let start = Instant::now();
    let mut response = client.post(&url).body("{}").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");

    let mut first_chunk_at = None;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        first_chunk_at.get_or_insert_with(|| start.elapsed());
        body.extend_from_slice(&chunk);
    }
    let first = first_chunk_at.unwrap();
    let total = start.elapsed();
    // Never early; late by less than 150 ms on loopback (a tokio timer wakes within
    // ~1 ms; the rest is scheduling slack on a loaded 2-core machine).
    assert!(
        first >= Duration::from_millis(200),
        "first chunk after {first:?}"
    );
    assert!(
        first < Duration::from_millis(350),
        "first chunk after {first:?}"
    );
    // 5 tokens at 100/s: the last token is due 200 + 40 ms after the request.
    assert!(total >= Duration::from_millis(240), "stream took {total:?}");

    let body = String::from_utf8(body).unwrap();
    let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events.len(), 7, "5 tokens, a closing chunk, [DONE]: {body}");
    assert_eq!(events[6], "data: [DONE]");
    let text: String = events[..5]
        .iter()
        .map(|e| {
            let v: serde_json::Value =
                serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap();
            v["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(text, "Streaming feels fast when the");
}

#[tokio::test]
async fn unknown_profile_is_a_clear_404() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let url = format!("{}sim/nope/v1/chat/completions", server.url);
    let response = reqwest::Client::new().post(&url).send().await.unwrap();
    assert_eq!(response.status(), 404);
    let body: serde_json::Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("unknown profile `nope`"), "{message}");
    assert!(message.contains("default"), "{message}");
}

#[test]
fn taken_port_is_a_one_line_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let output = std::process::Command::new(ttfx())
        .args(["serve", "--addr", &addr])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")),
        "{stderr}"
    );
    assert!(stderr.contains("port taken"), "{stderr}");
}

#[test]
fn dist_without_index_is_a_clear_error() {
    let empty = std::env::temp_dir().join(format!("ttfx-empty-dist-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let output = std::process::Command::new(ttfx())
        .args(["serve", "--addr", "127.0.0.1:0", "--dist"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("no index.html"), "{stderr}");
}

#[tokio::test]
async fn the_simulator_lists_its_profiles_built_in_first_then_the_configs() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ttfx.toml");
    // One new profile and one that replaces a built-in one (listed once, in its place).
    std::fs::write(
        &config,
        "[profiles.my-model]\nttft_ms = 450\n[profiles.default]\nttft_ms = 10\n",
    )
    .unwrap();
    let server = ServeProcess::start(ttfx(), &["--config", config.to_str().unwrap()]).unwrap();
    let list: serde_json::Value = reqwest::get(format!("{}sim", server.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut expected: Vec<&str> = ttfx_sim::profile::builtin()
        .iter()
        .map(|(name, _)| *name)
        .collect();
    expected.push("my-model");
    assert_eq!(list, serde_json::json!({ "profiles": expected }));
}

/// Sends `bytes` on a new connection and returns it.
fn open_with(addr: &str, bytes: &[u8]) -> std::io::Result<std::net::TcpStream> {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr)?;
    s.write_all(bytes)?;
    Ok(s)
}

/// How long until the server closes `s` (reads until end of stream), at most `limit`.
fn closed_after(s: &mut std::net::TcpStream, start: Instant, limit: Duration) -> Option<Duration> {
    use std::io::Read;
    s.set_read_timeout(Some(limit)).ok()?;
    let mut sink = Vec::new();
    match s.read_to_end(&mut sink) {
        Ok(_) => Some(start.elapsed()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Some(start.elapsed()),
        Err(_) => None,
    }
}

#[test]
fn a_half_sent_request_head_is_closed_after_the_head_timeout_and_frees_its_place() {
    // Two places, and a 1 s head timeout: two slow-loris clients fill the server.
    let server = ServeProcess::start(
        ttfx(),
        &["--max-connections", "2", "--head-timeout-ms", "1000"],
    )
    .unwrap();
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let start = Instant::now();
    let mut slow: Vec<_> = (0..2)
        .map(|_| open_with(&addr, b"GET /sim/ HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    // A third client sends a whole request; it waits for a place.
    let mut third = open_with(
        &addr,
        b"GET /no-such-page HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    // The upper bound is the proof that nothing holds a connection for ever; 4 s above
    // the timeout is slack for a loaded 2-core machine running a debug build, not tuning.
    let limit = Duration::from_secs(5);
    for s in &mut slow {
        let closed = closed_after(s, start, limit).expect("a half-sent head held its connection");
        // Never before the timeout (the clock here started before the connect).
        assert!(
            closed >= Duration::from_millis(1000),
            "closed after {closed:?}"
        );
    }
    let answered =
        closed_after(&mut third, start, limit).expect("the third client never got a place");
    assert!(
        answered >= Duration::from_millis(1000),
        "the cap let a third in at {answered:?}"
    );
    eprintln!("slow heads closed and the third client answered after {answered:?}");
}

//! The vantage proxy in front of real loopback upstreams: a fixture server with a known
//! byte stream and schedule, and another `ttfx serve`. Bytes and chunk timing pass
//! through, the key is added server-side and never leaks, and only configured upstreams
//! are reachable.

// The fixture server and process helpers are test code outside #[test] functions: a
// failure there is a failed test.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::HeaderMap;
use axum::routing::{get, post as post_route};
use common::{answer, decode, ms, post, post_with, record, ttfx};
use ttfx_e2e::ServeProcess;

const SECRET: &str = "sk-proxy-secret-42";
/// Chunks of the fixture stream, sent 40 ms apart.
const GAP_MS: u64 = 40;

/// The fixture's body: SSE-looking text, a UTF-8 character split across two chunks, a
/// bare CR and raw non-UTF-8 bytes — none of it may be touched.
fn fixture_chunks() -> Vec<Vec<u8>> {
    let mut chunks: Vec<Vec<u8>> = (0..8)
        .map(|i| {
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"w{i} \"}}}}]}}\n\n")
                .into_bytes()
        })
        .collect();
    chunks.push(vec![b'd', b'a', 0xC3]);
    chunks.push(vec![0xA9, b'\r', 0xFF, 0x00, b'\n', b'\n']);
    chunks
}

async fn fixture() -> (String, Arc<Mutex<Vec<HeaderMap>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_echo = seen.clone();
    let app = Router::new()
        .route(
            "/v1/stream",
            get(|| async {
                let body = futures_util::stream::unfold(0usize, |i| async move {
                    let chunks = fixture_chunks();
                    let chunk = chunks.get(i)?.clone();
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(GAP_MS)).await;
                    }
                    Some((Ok::<_, std::io::Error>(chunk), i + 1))
                });
                axum::response::Response::builder()
                    .header("content-type", "text/event-stream")
                    .header("x-request-id", "upstream-own-id")
                    .body(Body::from_stream(body))
                    .unwrap()
            }),
        )
        // Headers only after 3 s; and a stream that stops after its first chunk.
        .route(
            "/v1/slow-headers",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                "late"
            }),
        )
        .route(
            "/v1/stall",
            get(|| async {
                let body = futures_util::stream::unfold(0usize, |i| async move {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_secs(3)).await;
                    }
                    (i < 2).then(|| (Ok::<_, std::io::Error>(format!("data: {i}\n\n")), i + 1))
                });
                axum::response::Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from_stream(body))
                    .unwrap()
            }),
        )
        .route(
            "/v1/echo",
            post_route(move |headers: HeaderMap| {
                let seen = seen_echo.clone();
                async move {
                    // Answer with facts about the headers, never their values: the
                    // fixture must not leak the key itself.
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    let reply = serde_json::json!({
                        "authorized": auth == format!("Bearer {SECRET}"),
                        "client_key_seen": auth.contains("client-key"),
                        "host": headers.get("host").and_then(|v| v.to_str().ok()),
                        "x_request_id": headers.get("x-request-id").and_then(|v| v.to_str().ok()),
                        "x_request_ids": headers.get_all("x-request-id").iter().count(),
                        "accept_encoding": headers.get("accept-encoding").is_some(),
                        "origin": headers.get("origin").is_some(),
                    });
                    seen.lock().unwrap().push(headers);
                    reply.to_string()
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

fn write_config(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("ttfx-proxy-{}-{name}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// `ttfx serve` spawned here (not through ServeProcess) so its stdout and stderr can be
/// searched for the key afterwards.
struct Logged {
    child: Child,
    url: String,
    stdout: Arc<Mutex<String>>,
}

impl Logged {
    fn start(config: &std::path::Path) -> Logged {
        let mut child = Command::new(ttfx())
            .args(["serve", "--addr", "127.0.0.1:0", "--config"])
            .arg(config)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = BufReader::new(child.stdout.take().unwrap());
        let sink = stdout.clone();
        std::thread::spawn(move || {
            for line in lines.lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("ttfx serve: listening on ") {
                    let _ = tx.send(url.to_owned());
                }
                sink.lock().unwrap().push_str(&line);
            }
        });
        let url = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        Logged { child, url, stdout }
    }

    /// Stops the server; returns everything it printed.
    fn stop(mut self) -> String {
        self.child.kill().unwrap();
        let output = std::mem::replace(&mut self.child, Command::new("true").spawn().unwrap())
            .wait_with_output()
            .unwrap();
        format!(
            "{}{}",
            self.stdout.lock().unwrap(),
            String::from_utf8_lossy(&output.stderr)
        )
    }
}

/// A test that fails before `stop` must not leave the server running.
impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn proxy_preserves_bytes_and_chunk_timing_and_keeps_the_key_secret() {
    let (upstream, seen) = fixture().await;
    let config = write_config(
        "fixture",
        &format!("[upstreams.fix]\nbase_url = \"{upstream}/v1\"\napi_key = \"{SECRET}\"\n"),
    );
    let proxy = Logged::start(&config);

    let url = format!("{}proxy/fix/stream", proxy.url);
    let client = reqwest::Client::new();
    let start = std::time::Instant::now();
    let mut response = client
        .get(&url)
        .header("x-request-id", "fix-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-request-id"], "fix-1");
    assert_eq!(
        response.headers()["x-upstream-request-id"],
        "upstream-own-id"
    );
    let mut arrivals = Vec::new();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        arrivals.push(ms(start.elapsed()));
        body.extend_from_slice(&chunk);
    }
    let want: Vec<u8> = fixture_chunks().concat();
    assert_eq!(body, want, "bytes pass through unchanged");
    // Unbuffered: every 40 ms chunk arrives on its own, 40 ms after the one before.
    assert_eq!(
        arrivals.len(),
        fixture_chunks().len(),
        "arrivals {arrivals:?}"
    );

    // Timing preserved: compare when the proxy got each chunk from the upstream (its
    // record) with when the client got it from the proxy. Both spacings are measured on
    // one host; the difference is what the proxy added. On loopback a pass-through is
    // one read and one write (well under 1 ms); 15 ms leaves room for a loaded 2-core
    // machine running the tests in parallel, and is still far below the 40 ms spacing
    // that buffering would erase.
    let r = record(&proxy.url, "fix-1").await;
    let proxy_at: Vec<f64> = r["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["at_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(proxy_at.len(), arrivals.len());
    let added: Vec<f64> = (0..arrivals.len())
        .map(|i| (arrivals[i] - arrivals[0]) - (proxy_at[i] - proxy_at[0]))
        .collect();
    let worst = added.iter().map(|a| a.abs()).fold(0.0, f64::max);
    println!("proxy-added timing error per chunk (ms): {added:.2?}, worst {worst:.2}");
    assert!(worst < 15.0, "{added:?}");
    assert_eq!(r["kind"], "proxy");
    assert_eq!(r["upstream"], "fix");
    assert_eq!(r["outcome"], "completed");
    // The fixture's body is not a complete OpenAI stream: noted, not a failure.
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("stream ended before `data: [DONE]`"),
        "{r}"
    );
    assert_eq!(r["bytes"].as_u64(), Some(want.len() as u64));
    let m = &r["milestones"];
    let (connect, headers, first_byte) = (
        r["durations"]["connect"].as_f64().unwrap(),
        m["headers"].as_f64().unwrap(),
        m["first_byte"].as_f64().unwrap(),
    );
    assert!(connect <= headers && headers <= first_byte, "{m}");
    assert!(m["first_token"].as_f64().unwrap() >= first_byte);
    assert_eq!(r["server"]["timings"][0]["source"], "vantage_proxy");

    // The key: added server-side, replacing the client's; never in a response. The page
    // is the proxy's own (other origins are refused), and its Origin is not forwarded.
    let own = proxy.url.trim_end_matches('/').to_owned();
    let echo = post_with(
        &format!("{}proxy/fix/echo", proxy.url),
        "{}",
        &[
            ("authorization", "Bearer client-key"),
            ("origin", own.as_str()),
            ("x-request-id", "fix-2"),
        ],
    )
    .await;
    let v: serde_json::Value = serde_json::from_slice(&echo.body()).unwrap();
    assert_eq!(v["authorized"], true, "{v}");
    assert_eq!(v["client_key_seen"], false);
    assert_eq!(v["x_request_id"], "fix-2");
    assert_eq!(v["accept_encoding"], false);
    assert_eq!(v["origin"], false);
    assert!(v["host"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(seen.lock().unwrap().len(), 1);
    let headers_text = format!("{:?}", echo.headers);
    assert!(!headers_text.contains(SECRET) && !echo.text().contains(SECRET));
    let records = format!(
        "{}{}",
        record(&proxy.url, "fix-1").await,
        record(&proxy.url, "fix-2").await
    );
    assert!(!records.contains(SECRET));
    assert!(
        !proxy.stop().contains(SECRET),
        "the key reached the server's output"
    );
}

#[tokio::test]
async fn proxy_in_front_of_a_simulated_upstream_keeps_its_timing() {
    let upstream = ServeProcess::start(ttfx(), &[]).unwrap();
    let config = write_config(
        "sim",
        &format!("[upstreams.sim]\nbase_url = \"{}sim\"\n", upstream.url),
    );
    let proxy = ServeProcess::start(ttfx(), &["--config", config.to_str().unwrap()]).unwrap();

    let url = format!(
        "{}proxy/sim/default/v1/chat/completions?ttft_ms=200&tokens_per_second=50&output_tokens=8",
        proxy.url
    );
    let c = post_with(
        &url,
        r#"{"stream_options":{"include_usage":true}}"#,
        &[("x-request-id", "via-1")],
    )
    .await;
    assert_eq!(c.status, 200);
    let d = decode(&c, None);
    assert_eq!(d.summary.visible_text, answer(8));
    assert_eq!(d.summary.usage.as_ref().unwrap().completion_tokens, Some(8));
    // The upstream kept its own record under the same id.
    let theirs = record(&upstream.url, "via-1").await;
    let ours = record(&proxy.url, "via-1").await;
    assert_eq!(ours["bytes"], theirs["bytes"]);
    assert_eq!(ours["usage"]["completion_tokens"], 8);
    // Chunk by chunk, the proxy saw the upstream's spacing: the upstream's send times and
    // the proxy's receive times differ by a constant (the proxy's request arrived first)
    // plus what loopback and scheduling add.
    let at = |r: &serde_json::Value| -> Vec<f64> {
        r["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["at_ms"].as_f64().unwrap())
            .collect()
    };
    let (sent, got) = (at(&theirs), at(&ours));
    assert_eq!(sent.len(), got.len());
    // The constant is the median difference, so one late chunk cannot shift the rest.
    // Bound: two ttfx processes and the test share 2 cores with parallel tests (load
    // average ~9 when measured); 25 ms still tells a passed-through chunk from one held
    // for the next 20 ms token.
    let mut diffs: Vec<f64> = sent.iter().zip(&got).map(|(s, g)| g - s).collect();
    diffs.sort_by(f64::total_cmp);
    let offset = diffs[diffs.len() / 2];
    assert!((0.0..50.0).contains(&offset), "offset {offset}");
    for (s, g) in sent.iter().zip(&got) {
        assert!((g - s - offset).abs() < 25.0, "sent {sent:?} got {got:?}");
    }
    let first = |r: &serde_json::Value| r["milestones"]["first_token"].as_f64().unwrap();
    assert!((first(&ours) - first(&theirs) - offset).abs() < 25.0);
    // The proxy's first_token is the benchmark clock for this request: ≥ the injected
    // 200 ms (it includes connecting), and the client's own clock sees it no earlier.
    assert!(first(&ours) >= 200.0);
    assert!(ms(d.first_token.unwrap()) >= first(&ours));
}

#[tokio::test]
async fn only_configured_upstreams_are_reachable() {
    let bare = ServeProcess::start(ttfx(), &[]).unwrap();
    let c = post(
        &format!("{}proxy/openai/v1/chat/completions", bare.url),
        "{}",
    )
    .await;
    assert_eq!(c.status, 404);
    assert!(
        c.text()
            .contains("unknown upstream `openai`: no upstreams are configured"),
        "{}",
        c.text()
    );

    // A closed port: bind, note the port, release it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = write_config(
        "down",
        &format!("[upstreams.down]\nbase_url = \"http://127.0.0.1:{port}\"\n"),
    );
    let server = ServeProcess::start(ttfx(), &["--config", config.to_str().unwrap()]).unwrap();
    let c = post(&format!("{}proxy/elsewhere/x", server.url), "{}").await;
    assert_eq!(c.status, 404);
    assert!(
        c.text()
            .contains("unknown upstream `elsewhere`; configured: down"),
        "{}",
        c.text()
    );
    let c = post_with(
        &format!("{}proxy/down/v1/x", server.url),
        "{}",
        &[("x-request-id", "down-1")],
    )
    .await;
    assert_eq!(c.status, 502);
    assert!(
        c.text()
            .contains(&format!("upstream `down` (127.0.0.1:{port}) unreachable")),
        "{}",
        c.text()
    );
    assert_eq!(record(&server.url, "down-1").await["outcome"], "failed");
}

#[test]
fn bad_config_is_a_one_line_error_with_exit_status_2() {
    let cases = [
        (
            "[upstreams.x]\nbase_url = \"https://api.example\"\n",
            "upstream `x`: base_url `https://api.example`: https upstreams are not supported",
        ),
        (
            "[upstreams.x]\nbase_url = \"http://h\"\napi_key_env = \"TTFX_TEST_SURELY_UNSET\"\n",
            "environment variable `TTFX_TEST_SURELY_UNSET` is not set",
        ),
        ("[upstreams]\nx = 1\n", "line 2"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let path = write_config(&format!("bad{i}"), text);
        let out = Command::new(ttfx())
            .args(["serve", "--addr", "127.0.0.1:0", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("ttfx: config {}: ", path.display())),
            "{stderr}"
        );
        assert!(stderr.contains(want), "{stderr}");
    }
    let out = Command::new(ttfx())
        .args(["serve", "--config", "/nonexistent/ttfx.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("config /nonexistent/ttfx.toml: cannot read"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// Another site cannot spend the key: a cross-origin request (the simple `text/plain`
/// POST a page can send without a preflight included), a cross-site one without an
/// Origin, and one with a DNS-rebound Host are refused with 403 before anything reaches
/// the upstream; the server's own origin and a configured one are served.
#[tokio::test]
async fn only_allowed_origins_and_hosts_can_use_the_key() {
    let (upstream, seen) = fixture().await;
    let config = write_config(
        "access",
        &format!(
            "[upstreams.fix]\nbase_url = \"{upstream}/v1\"\napi_key = \"{SECRET}\"\n\
             [proxy]\nallowed_origins = [\"http://localhost:5173\"]\n"
        ),
    );
    let proxy = Logged::start(&config);
    let url = format!("{}proxy/fix/echo", proxy.url);
    let own = proxy.url.trim_end_matches('/').to_owned();
    let refused: [&[(&str, &str)]; 4] = [
        &[
            ("origin", "http://127.0.0.1:1"),
            ("content-type", "text/plain"),
        ],
        &[("origin", "https://evil.example")],
        &[("sec-fetch-site", "cross-site")],
        &[("host", "rebound.evil.example")],
    ];
    for headers in refused {
        let c = post_with(&url, "{}", headers).await;
        assert_eq!(c.status, 403, "{headers:?}");
        let body = c.text();
        assert!(body.contains("ttfx_proxy_error"), "{headers:?}: {body}");
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        0,
        "a refused request reached the upstream"
    );
    for headers in [
        vec![("origin", own.as_str())],
        vec![("origin", "http://localhost:5173")],
        vec![],
    ] {
        let c = post_with(&url, "{}", &headers).await;
        assert_eq!(c.status, 200, "{headers:?}");
        let reply: serde_json::Value = serde_json::from_slice(&c.body()).unwrap();
        assert_eq!(reply["authorized"], true, "{headers:?}: {reply}");
    }
    assert_eq!(seen.lock().unwrap().len(), 3);
}

/// The upstream gets the path the client sent, as sent, and one `x-request-id`; a path
/// that would reach elsewhere after normalising or decoding is refused.
#[tokio::test]
async fn the_raw_path_is_forwarded_and_dot_segments_and_encoded_separators_are_refused() {
    let (upstream, seen) = fixture().await;
    let config = write_config(
        "paths",
        &format!("[upstreams.fix]\nbase_url = \"{upstream}/v1\"\napi_key = \"{SECRET}\"\n"),
    );
    let proxy = Logged::start(&config);
    let c = post_with(
        &format!("{}proxy/fix/echo", proxy.url),
        "{}",
        &[("x-request-id", "one-id")],
    )
    .await;
    let reply: serde_json::Value = serde_json::from_slice(&c.body()).unwrap();
    assert_eq!(reply["x_request_ids"], 1, "{reply}");
    assert_eq!(reply["x_request_id"], "one-id", "{reply}");
    // Sent on a raw socket: HTTP clients normalise dot segments before sending.
    let addr = proxy
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    for path in [
        "/proxy/fix/../v1/echo",
        "/proxy/fix/%2e%2E/echo",
        "/proxy/fix/a/%2Fetc",
        "/proxy/fix/echo%3Fx=1",
        "/proxy/fix/echo%23frag",
    ] {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{path}: {answer}");
        assert!(answer.contains("refused"), "{path}: {answer}");
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "a refused path reached the upstream"
    );
}

/// An upstream that sends no headers, or stops sending body bytes, for longer than its
/// configured timeout: 504 or a broken stream for the client, `timeout` in the record.
#[tokio::test]
async fn header_and_idle_timeouts_end_the_request_as_a_timeout() {
    let (upstream, _seen) = fixture().await;
    let config = write_config(
        "timeouts",
        &format!(
            "[upstreams.fix]\nbase_url = \"{upstream}/v1\"\n\
             header_timeout_ms = 300\nidle_timeout_ms = 300\n"
        ),
    );
    let proxy = Logged::start(&config);
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    let slow = client
        .get(format!("{}proxy/fix/slow-headers", proxy.url))
        .header("x-request-id", "slow-1")
        .send()
        .await
        .unwrap();
    assert_eq!(slow.status(), 504);
    // Well before the upstream's 3 s: the 300 ms timeout ended it.
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    assert!(slow.text().await.unwrap().contains("header_timeout_ms"));
    assert_eq!(record(&proxy.url, "slow-1").await["outcome"], "timeout");

    let mut stall = client
        .get(format!("{}proxy/fix/stall", proxy.url))
        .header("x-request-id", "stall-1")
        .send()
        .await
        .unwrap();
    assert_eq!(stall.status(), 200);
    let mut body = Vec::new();
    let broken = loop {
        match stall.chunk().await {
            Ok(Some(c)) => body.extend_from_slice(&c),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    // The first chunk came through, then the stream broke.
    assert!(body.starts_with(b"data: 0"), "{body:?}");
    assert!(broken, "the stream should end broken");
    let r = record(&proxy.url, "stall-1").await;
    assert_eq!(r["outcome"], "timeout", "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("idle_timeout_ms"),
        "{r}"
    );
}

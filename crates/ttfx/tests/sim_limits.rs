//! The simulator's limits (#16 point 6) on a real `ttfx serve` process: absurd overrides
//! are refused at once with 400 naming the cap; a request at the caps costs CPU time in
//! proportion to its tokens and holds memory in proportion to the held-bytes cap; past
//! `--max-concurrent` a request gets 503 with `Retry-After` until a stream ends.
//!
//! CPU time and memory are the server process's own, read from /proc (Linux): utime +
//! stime of /proc/PID/stat, and the peak resident set (VmHWM of /proc/PID/status, reset
//! before each request through /proc/PID/clear_refs). The bounds are derived from the
//! caps, in units measured on the same process: what a plain 20,000-token reply costs
//! (so they hold on a slow debug build as on a fast release one).

// Test helpers: a failure here is a failed test, so unwrapping is the point.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use ttfx_e2e::ServeProcess;

fn ttfx() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_ttfx"))
}

// The simulator's own caps; the refusal messages below are checked to name them.
use ttfx_sim::limits::{MAX_BODY_BYTES, MAX_HELD_BYTES, MAX_STALL_AT, MAX_TOKENS};

/// USER_HZ: /proc's CPU times are in these ticks; 100 on every Linux architecture.
const TICKS_PER_S: f64 = 100.0;
/// One tick each side of a measurement.
const TICK_MS: f64 = 1000.0 / TICKS_PER_S;

/// The tokens of the calibration reply, the unit of the CPU bounds.
const CAL_TOKENS: usize = 20_000;

#[derive(Clone, Copy)]
struct Proc(u32);

impl Proc {
    fn cpu_ms(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.0)).unwrap();
        // Fields after the command name (which may hold spaces): state is field 3,
        // utime field 14, stime field 15.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        ticks as f64 * 1000.0 / TICKS_PER_S
    }

    fn status_kib(&self, key: &str) -> usize {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.0)).unwrap();
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Resets the peak resident set to the current one (Linux ≥ 4.0); returns it, bytes.
    fn reset_peak(&self) -> usize {
        std::fs::write(format!("/proc/{}/clear_refs", self.0), "5").unwrap();
        self.status_kib("VmHWM:") * 1024
    }

    fn peak(&self) -> usize {
        self.status_kib("VmHWM:") * 1024
    }
}

/// What one request cost the server.
#[derive(Debug, Clone, Copy)]
struct Cost {
    cpu_ms: f64,
    /// Growth of the peak resident set over the resident set before the request.
    peak_growth: usize,
    wall: Duration,
}

struct Reply {
    status: u16,
    body: Vec<u8>,
}

impl Reply {
    fn message(&self) -> String {
        let v: Value = serde_json::from_slice(&self.body).unwrap();
        v["error"]["message"].as_str().unwrap().to_owned()
    }
}

/// Sends one request, reads its whole body, and measures what the server spent on it.
async fn measured(p: &Proc, url: &str, body: impl Into<reqwest::Body>) -> (Reply, Cost) {
    let rss_before = p.reset_peak();
    let cpu_before = p.cpu_ms();
    let start = Instant::now();
    let mut response = reqwest::Client::new()
        .post(url)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        bytes.extend_from_slice(&chunk);
    }
    let wall = start.elapsed();
    // The record is closed just after the last byte is handed over.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cost = Cost {
        cpu_ms: p.cpu_ms() - cpu_before,
        peak_growth: p.peak().saturating_sub(rss_before),
        wall,
    };
    let reply = Reply {
        status,
        body: bytes,
    };
    (reply, cost)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// Warms the server up (first requests size its allocator arenas and thread pools),
/// then measures a plain streamed 20,000-token reply: the unit of the bounds.
async fn calibrate(server: &ServeProcess, p: &Proc) -> Cost {
    let url = |q: &str| format!("{}sim/default/v1/chat/completions?{q}", server.url);
    for q in [
        "ttft_ms=0&tokens_per_second=100000&output_tokens=2000",
        "ttft_ms=0&tokens_per_second=100000&output_tokens=2000&buffered=true",
    ] {
        let (reply, _) = measured(p, &url(q), "{}").await;
        assert_eq!(reply.status, 200);
    }
    let (reply, cost) = measured(
        p,
        &url(&format!(
            "ttft_ms=0&tokens_per_second=100000&output_tokens={CAL_TOKENS}"
        )),
        "{}",
    )
    .await;
    assert_eq!(reply.status, 200);
    println!(
        "calibration: {CAL_TOKENS} streamed tokens cost {:.0} ms CPU, peak +{:.1} MiB, {:?}",
        cost.cpu_ms,
        mib(cost.peak_growth),
        cost.wall
    );
    cost
}

#[tokio::test]
async fn absurd_overrides_are_refused_at_once_naming_the_cap() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let p = Proc(server.pid());
    let cal = calibrate(&server, &p).await;
    let chat = |q: &str| format!("{}sim/default/v1/chat/completions?{q}", server.url);
    let speech = |q: &str| format!("{}sim/default/v1/audio/speech?{q}", server.url);

    // A million `stall_at` entries as a JSON array fill the 2 MiB body limit.
    let million = format!("{{\"ttfx\":{{\"stall_at\":[{}0]}}}}", "0,".repeat(999_999));
    assert!(million.len() < MAX_BODY_BYTES);
    // The longest query a client sends (http's URI limit is 64 KiB): 20,000 entries.
    let twenty_thousand = vec!["7"; 20_000].join(",");
    let every_token: Vec<usize> = (0..MAX_STALL_AT).collect();
    let long_stalls = json!({ "ttfx": { "stall_at": every_token, "stall_ms": 600_000 } });
    let long_input = json!({ "input": "a".repeat(MAX_BODY_BYTES - 100) }).to_string();
    let many_pairs = vec!["seed=1"; 100].join("&");
    // (url, body, what the message must say)
    let cases: Vec<(String, String, Vec<&str>)> = vec![
        (
            chat(""),
            million,
            vec!["ttfx.stall_at", "1000000 entries", "cap of 1000"],
        ),
        (
            chat(&format!("stall_at={twenty_thousand}")),
            String::new(),
            vec![
                "stall_at=7,7,7",
                "(39999 bytes)",
                "20000 entries",
                "cap of 1000",
            ],
        ),
        (
            chat("ttft_ms=1e12"),
            String::new(),
            vec!["ttft_ms=1e12", "[0, 600000]"],
        ),
        (
            chat("output_tokens=1000000000000"),
            String::new(),
            vec!["output_tokens=1000000000000", "[1, 100000]"],
        ),
        (
            chat("output_tokens=100000&tokens_per_second=0.001"),
            String::new(),
            vec!["lasts 99999", "cap of 600000 ms", "tokens_per_second=0.001"],
        ),
        (
            chat("output_tokens=1000"),
            long_stalls.to_string(),
            vec!["1000 stalls of stall_ms=600000", "cap of 600000 ms"],
        ),
        (
            chat("flush_bytes=1000000000000"),
            String::new(),
            vec!["flush_bytes=1000000000000", "[0, 262144]"],
        ),
        (
            chat("buffered=true&output_tokens=100000&tokens_per_second=100000"),
            String::new(),
            vec!["buffered=true", "cap", "4194304 bytes"],
        ),
        (
            chat("tokens_per_chunk=100000"),
            String::new(),
            vec!["tokens_per_chunk=100000", "[1, 1000]"],
        ),
        (
            chat(&many_pairs),
            String::new(),
            vec!["100 query parameters", "cap of 64"],
        ),
        (
            speech("audio_ms=1000000000"),
            String::new(),
            vec!["audio_ms=1000000000", "[1, 600000]"],
        ),
        (
            speech("audio_ms=600000&buffered=true"),
            String::new(),
            vec!["buffered=true", "28800000 bytes", "cap of 4194304 bytes"],
        ),
        (
            speech("audio_ms=600000&rtf=100"),
            String::new(),
            vec!["lasts", "cap of 600000 ms", "rtf=100"],
        ),
        (
            speech(""),
            long_input,
            vec!["input of 2097052 characters", "cap of 600000 ms"],
        ),
    ];
    // The most a refusal does is parse a body of at most MAX_BODY_BYTES once, walk the
    // timing of at most 2 × MAX_TOKENS tokens, and count a buffered body by encoding
    // it until it passes MAX_HELD_BYTES: about 20,000 OpenAI chat events, which is less
    // than the calibration reply encodes, sends and records. So: one calibration reply,
    // and a tick each side of both measurements.
    let cpu_bound = cal.cpu_ms + 4.0 * TICK_MS;
    // Memory: the body as received (hyper's buffers and axum's collected copy), one
    // string copied out of it at most (a long override or input), and what the
    // calibration reply itself grew by (allocator and runtime overhead of a request).
    let mem_bound = 4 * MAX_BODY_BYTES + cal.peak_growth + (1 << 20);
    for (url, body, says) in cases {
        let shown_url = &url[..url.len().min(120)];
        let (reply, cost) = measured(&p, &url, body).await;
        assert_eq!(
            reply.status,
            400,
            "{shown_url}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let message = reply.message();
        for part in says {
            assert!(
                message.contains(part),
                "{shown_url}: `{part}` not in: {message}"
            );
        }
        assert!(
            message.len() < 600,
            "the value is not sent back whole: {message}"
        );
        println!(
            "{shown_url}: {:.0} ms CPU, peak +{:.1} MiB, {:?}\n  {message}",
            cost.cpu_ms,
            mib(cost.peak_growth),
            cost.wall
        );
        // At once: none of the asked-for delays (up to days) is waited for.
        assert!(
            cost.wall < Duration::from_secs(5),
            "{shown_url}: {:?}",
            cost.wall
        );
        assert!(
            cost.cpu_ms <= cpu_bound,
            "{shown_url}: {} ms CPU, bound {cpu_bound}",
            cost.cpu_ms
        );
        assert!(
            cost.peak_growth <= mem_bound,
            "{shown_url}: peak grew {:.1} MiB, bound {:.1}",
            mib(cost.peak_growth),
            mib(mem_bound)
        );
    }
}

#[tokio::test]
async fn a_request_at_the_caps_costs_cpu_by_its_tokens_and_memory_by_the_held_bytes_cap() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let p = Proc(server.pid());
    let cal = calibrate(&server, &p).await;
    let chat = |q: &str| format!("{}sim/default/v1/chat/completions?{q}", server.url);

    // Streamed, at the caps: MAX_TOKENS tokens at the fastest rate with the widest
    // jitter, a stall before each of the first MAX_STALL_AT tokens (1 ms each), one token
    // per event. Its work is per token (the stall lookup a binary search), so it costs
    // what MAX_TOKENS / CAL_TOKENS calibration replies cost; twice that, for noise.
    let stalls: Vec<usize> = (0..MAX_STALL_AT).collect();
    let body = json!({ "ttfx": { "stall_at": stalls, "stall_ms": 1, "jitter": 1, "seed": 1 } });
    let (reply, cost) = measured(
        &p,
        &chat(&format!(
            "ttft_ms=0&tokens_per_second=100000&output_tokens={MAX_TOKENS}"
        )),
        body.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200);
    let events = reply.body.windows(6).filter(|w| w == b"data: ").count();
    assert_eq!(
        events,
        MAX_TOKENS + 2,
        "every token, the closing chunk, [DONE]"
    );
    let scale = MAX_TOKENS as f64 / CAL_TOKENS as f64;
    let cpu_bound = 2.0 * scale * cal.cpu_ms + 4.0 * TICK_MS;
    // A streamed reply holds one event at a time (8 in the body channel): its memory does
    // not grow with its length, only its record does (at most ~170 KiB).
    let mem_bound = cal.peak_growth + (1 << 20);
    println!(
        "streamed at the caps ({MAX_TOKENS} tokens, {MAX_STALL_AT} stalls): {:.0} ms CPU \
         (bound {cpu_bound:.0}), peak +{:.1} MiB (bound {:.1}), {:?}",
        cost.cpu_ms,
        mib(cost.peak_growth),
        mib(mem_bound),
        cost.wall
    );
    assert!(cost.cpu_ms <= cpu_bound);
    assert!(cost.peak_growth <= mem_bound);

    // Buffered, at the held-bytes cap: the longest reply whose body fits in
    // MAX_HELD_BYTES (found from two small buffered replies' sizes: the events of this
    // dialect grow by a byte per decimal digit at most, so 2 % below the linear estimate
    // fits).
    let size = |n: usize| {
        let url = chat(&format!(
            "ttft_ms=0&tokens_per_second=100000&buffered=true&output_tokens={n}"
        ));
        async move {
            let (reply, _) = measured(&p, &url, "{}").await;
            assert_eq!(reply.status, 200);
            reply.body.len()
        }
    };
    let (small, large) = (size(1_000).await, size(2_000).await);
    let per_token = (large - small) as f64 / 1_000.0;
    let n = ((MAX_HELD_BYTES - small) as f64 / per_token * 0.98) as usize + 1_000;
    let (reply, cost) = measured(
        &p,
        &chat(&format!(
            "ttft_ms=0&tokens_per_second=100000&buffered=true&output_tokens={n}"
        )),
        "{}",
    )
    .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let held = reply.body.len();
    assert!(
        held <= MAX_HELD_BYTES && held > MAX_HELD_BYTES * 9 / 10,
        "{held}"
    );
    // CPU: the reply's tokens counted once at planning (encoding, up to the cap) and
    // served once: twice the tokens' share of a calibration reply, twice again for noise.
    let cpu_bound = 4.0 * (n as f64 / CAL_TOKENS as f64) * cal.cpu_ms + 4.0 * TICK_MS;
    // Memory: the body once (the sink reserves its planned size, then hands it to the
    // connection without a copy; the record decodes it 64 KiB at a time), plus what a
    // request grows by anyway (the calibration's growth) and 1 MiB for the connection's
    // and the decoder's buffers.
    let mem_bound = MAX_HELD_BYTES + cal.peak_growth + (1 << 20);
    println!(
        "buffered at the held-bytes cap ({n} tokens, {held} bytes): {:.0} ms CPU (bound \
         {cpu_bound:.0}), peak +{:.1} MiB (bound {:.1}), {:?}",
        cost.cpu_ms,
        mib(cost.peak_growth),
        mib(mem_bound),
        cost.wall
    );
    assert!(cost.cpu_ms <= cpu_bound);
    assert!(cost.peak_growth <= mem_bound);
    // One more token's worth past the cap is refused.
    let over = n * (MAX_HELD_BYTES + MAX_HELD_BYTES / 20) / held;
    let (reply, _) = measured(
        &p,
        &chat(&format!(
            "ttft_ms=0&tokens_per_second=100000&buffered=true&output_tokens={over}"
        )),
        "{}",
    )
    .await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.message().contains("4194304 bytes"),
        "{}",
        reply.message()
    );
}

#[tokio::test]
async fn past_max_concurrent_requests_get_503_with_retry_after_until_a_stream_ends() {
    let server = ServeProcess::start(ttfx(), &["--max-concurrent", "2"]).unwrap();
    // Two streams of 60 s that have sent their headers and a first token: in flight for
    // their whole body, not only until their headers.
    let long = format!(
        "{}sim/default/v1/chat/completions?ttft_ms=0&tokens_per_second=10&output_tokens=600",
        server.url
    );
    let client = reqwest::Client::new();
    let mut streams = Vec::new();
    for _ in 0..2 {
        let mut response = client.post(&long).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.chunk().await.unwrap().is_some());
        streams.push(response);
    }
    let refused = client
        .post(format!("{}sim/default/v1/chat/completions", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert!(refused.headers().contains_key("x-request-id"));
    let body: Value = refused.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("2 requests in flight") && message.contains("--max-concurrent"),
        "{message}"
    );
    // The proxy shares the limit (an unknown upstream would be 404: it is not reached).
    let proxied = client
        .post(format!("{}proxy/nowhere/v1/chat/completions", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(proxied.status(), 503);
    // The record API does not count.
    let record = client
        .get(format!("{}records/nope", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(record.status(), 404);

    // A client that goes away gives its place back.
    drop(streams.pop());
    let short = format!(
        "{}sim/default/v1/chat/completions?ttft_ms=0&output_tokens=2",
        server.url
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let response = client.post(&short).send().await.unwrap();
        if response.status() == 200 {
            assert!(response.text().await.unwrap().contains("[DONE]"));
            break;
        }
        assert_eq!(response.status(), 503);
        assert!(Instant::now() < deadline, "the place was not given back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A stream that ends gives it back too: the short one above ended, so another fits.
    let response = client.post(&short).send().await.unwrap();
    assert_eq!(response.status(), 200);
    drop(streams);
}

/// A client that stops sending its body mid-way holds its place at /sim until
/// `--body-timeout-ms` after its last byte; then it gets 400 naming the timeout, and the
/// place is free again.
#[tokio::test]
async fn a_request_body_that_stops_is_refused_after_the_body_timeout_and_frees_its_place() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let timeout_ms = 400;
    let server = ServeProcess::start(
        ttfx(),
        &[
            "--max-concurrent",
            "1",
            "--body-timeout-ms",
            &timeout_ms.to_string(),
        ],
    )
    .unwrap();
    let url = url::Url::parse(&server.url).unwrap();
    let addr = format!(
        "{}:{}",
        url.host_str().unwrap(),
        url.port_or_known_default().unwrap()
    );
    // 10 bytes of a 100-byte body, in the same write as the headers; then nothing.
    let mut stalled = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stalled
        .write_all(
            format!(
                "POST /sim/default/v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\n\
                 Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"model\":"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let sent = Instant::now();
    let client = reqwest::Client::new();
    let short = format!(
        "{}sim/default/v1/chat/completions?ttft_ms=0&output_tokens=2",
        server.url
    );
    // While it waits for the rest, the stalled request holds the only place.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = client.post(&short).send().await.unwrap();
    assert_eq!(refused.status(), 503, "the stalled request holds its place");

    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stalled.read_to_end(&mut answer))
        .await
        .expect("no answer to the stalled request within 30 s")
        .unwrap();
    let waited = sent.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("timeout"), "names the timeout: {answer}");
    // The server's timer starts after it has read the first 10 bytes, so after `sent`;
    // tokio's timers never fire early.
    assert!(
        waited >= Duration::from_millis(timeout_ms),
        "answered {waited:?} after the last byte, before the {timeout_ms} ms timeout"
    );
    let response = client.post(&short).send().await.unwrap();
    assert_eq!(response.status(), 200, "the place is free again");
    assert!(response.text().await.unwrap().contains("[DONE]"));
}

/// A multipart/form-data body with one `file` part of `file` bytes and a `model` field.
fn upload_form(boundary: &str, file: usize) -> Vec<u8> {
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.raw\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.resize(body.len() + file, 7);
    body.extend(
        format!(
            "\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n\
             --{boundary}--\r\n"
        )
        .as_bytes(),
    );
    body
}

#[tokio::test]
async fn an_upload_over_the_file_cap_is_413_and_an_upload_is_never_held() {
    const MAX_UPLOAD_BYTES: usize = 25 << 20;
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let p = Proc(server.pid());
    let url = format!(
        "{}sim/default/v1/audio/transcriptions?stt_first_partial_ms=0&stt_final_ms=0",
        server.url
    );
    let boundary = "ttfx-limits-boundary";
    let send = |file: usize| {
        let request = reqwest::Client::new()
            .post(&url)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(upload_form(boundary, file));
        async move {
            let rss_before = p.reset_peak();
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body = response.bytes().await.unwrap().to_vec();
            (Reply { status, body }, p.peak().saturating_sub(rss_before))
        }
    };
    // One byte over: refused as that byte arrives, naming the cap.
    let (reply, _) = send(MAX_UPLOAD_BYTES + 1).await;
    assert_eq!(reply.status, 413);
    let message = reply.message();
    assert!(
        message.contains(&format!(
            "above the cap of {MAX_UPLOAD_BYTES} bytes per audio file"
        )),
        "{message}"
    );
    // At the cap: answered, and the file is counted as it streams, never held: the peak
    // grows by far less than the file (1.1 MiB measured on the development machine, debug
    // build: hyper's and multer's buffers, the 64 KiB head). Half the file still tells
    // "not held" (holding it adds at least all of it) and leaves room for a busy
    // allocator.
    let (reply, growth) = send(MAX_UPLOAD_BYTES).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    println!(
        "a {MAX_UPLOAD_BYTES}-byte upload: peak +{:.1} MiB",
        mib(growth)
    );
    assert!(
        growth < MAX_UPLOAD_BYTES / 2,
        "peak grew {:.1} MiB for a {:.0} MiB upload",
        mib(growth),
        mib(MAX_UPLOAD_BYTES)
    );
}

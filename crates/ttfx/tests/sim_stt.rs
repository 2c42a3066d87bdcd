//! The simulated transcription endpoint over real loopback HTTP: a WAV written here is
//! uploaded as multipart/form-data to a `ttfx serve` process, and the reply (OpenAI's
//! JSON, text, or `transcript.text.*` events), its timing and the server's record are
//! checked; every bad upload is a clear 4xx.

// Test helpers: a failure here is a failed test, so unwrapping is the point.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Capture, capture, ms, record, ttfx};
use serde_json::{Value, json};
use ttfx_e2e::ServeProcess;

/// Lateness allowed against an injected deadline, as in sim_dialects.rs and sim_tts.rs:
/// the server's timerfd wakes within tens of µs and a reply measures 1–3 ms late at an
/// idle client on loopback, but `cargo test` runs these tests in parallel with a debug
/// server and client on 2 cores, which can add tens of ms of scheduling. 80 ms still
/// tells every injected delay here (≥ 100 ms apart) from one not applied.
const LATE_MS: f64 = 80.0;

/// What the simulator says when no transcript is given (sim/stt/events.rs).
const DEFAULT_TRANSCRIPT: &str =
    "Could you tell me how long the first words of the answer take to arrive?";

const BOUNDARY: &str = "ttfx-test-boundary-7MA4YWxkTrZu0gW";

/// A mono PCM16 WAV of `ms` ms at `rate` Hz: a 220 Hz tone, so it is audio, not zeros.
fn wav(rate: u32, ms: u32) -> Vec<u8> {
    let frames = rate * ms / 1000;
    let data = frames * 2;
    let mut w = Vec::new();
    w.extend(b"RIFF");
    w.extend((36 + data).to_le_bytes());
    w.extend(b"WAVEfmt ");
    w.extend(16u32.to_le_bytes());
    w.extend(1u16.to_le_bytes()); // PCM
    w.extend(1u16.to_le_bytes()); // mono
    w.extend(rate.to_le_bytes());
    w.extend((rate * 2).to_le_bytes());
    w.extend(2u16.to_le_bytes());
    w.extend(16u16.to_le_bytes());
    w.extend(b"data");
    w.extend(data.to_le_bytes());
    for n in 0..frames {
        let t = f64::from(n) / f64::from(rate);
        let s = (8_000.0 * (2.0 * std::f64::consts::PI * 220.0 * t).sin()) as i16;
        w.extend(s.to_le_bytes());
    }
    w
}

/// A multipart/form-data body: `(name, file name, bytes)` per part.
fn form(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file, bytes) in parts {
        body.extend(format!("--{BOUNDARY}\r\n").as_bytes());
        match file {
            Some(f) => body.extend(
                format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n\
                     Content-Type: audio/wav\r\n\r\n"
                )
                .as_bytes(),
            ),
            None => body.extend(
                format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
            ),
        }
        body.extend(*bytes);
        body.extend(b"\r\n");
    }
    body.extend(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

fn multipart() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}

/// Posts `body`, timing each chunk of the reply from just before the request is sent.
async fn send(url: &str, body: Vec<u8>, content_type: &str, id: &str) -> Capture {
    let request = reqwest::Client::new()
        .post(url)
        .header("content-type", content_type)
        .header("x-request-id", id)
        .header("origin", "http://page.example")
        .body(body);
    capture(request).await
}

/// A WAV upload of 1.5 s at 16 kHz with `fields` beside the file.
async fn upload(url: &str, fields: &[(&str, &str)], id: &str) -> Capture {
    let audio = wav(16_000, 1_500);
    let mut parts: Vec<(&str, Option<&str>, &[u8])> = vec![
        ("file", Some("speech.wav"), &audio),
        ("model", None, b"gpt-4o-transcribe"),
    ];
    parts.extend(fields.iter().map(|(k, v)| (*k, None, v.as_bytes())));
    send(url, form(&parts), &multipart(), id).await
}

/// The `data:` payloads of an event stream, parsed.
fn events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The record's moment `name` minus its `upload_complete`.
fn after_upload(record: &Value, name: &str) -> f64 {
    let m = &record["moments"];
    m[name].as_f64().unwrap() - m["upload_complete"].as_f64().unwrap()
}

#[tokio::test]
async fn a_wav_upload_is_answered_in_openais_json_at_the_final_time_and_recorded() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let url = format!(
        "{}sim/default/v1/audio/transcriptions?stt_first_partial_ms=100&stt_final_ms=400",
        server.url
    );
    let c = upload(
        &url,
        &[("language", "en"), ("prompt", "12345678")],
        "stt-json",
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.text());
    assert_eq!(c.header("content-type"), Some("application/json"));
    assert_eq!(c.header("access-control-allow-origin"), Some("*"));
    assert_eq!(c.header("x-request-id"), Some("stt-json"));
    let timing = c.header("server-timing").unwrap();
    assert!(
        timing.contains("received_unix_ms") && timing.contains("sent_unix_ms"),
        "{timing}"
    );
    let reply: Value = serde_json::from_slice(&c.body()).unwrap();
    // 1.5 s of audio at 10 audio tokens a second; an 8-character prompt is 2 text tokens;
    // 15 words out.
    assert_eq!(
        reply,
        json!({
            "text": DEFAULT_TRANSCRIPT,
            "usage": {
                "type": "tokens", "input_tokens": 17,
                "input_token_details": { "text_tokens": 2, "audio_tokens": 15 },
                "output_tokens": 15, "total_tokens": 32,
            },
        })
    );
    // The whole reply, headers included, waits for the final text: 400 ms after the
    // upload, which ended after the client's clock started.
    let headers = ms(c.headers_at);
    assert!(
        (400.0..400.0 + LATE_MS).contains(&headers),
        "headers at {headers} ms"
    );

    let r = record(&server.url, "stt-json").await;
    assert_eq!(r["outcome"], "completed");
    assert_eq!(r["status"], 200);
    assert_eq!(r["durations"]["audio"], 1500.0);
    let upload_done = r["moments"]["upload_complete"].as_f64().unwrap();
    assert!((0.0..LATE_MS).contains(&upload_done), "{upload_done}");
    let fin = after_upload(&r, "stt_final");
    assert!(
        (400.0..400.0 + LATE_MS).contains(&fin),
        "stt_final {fin} ms after the upload"
    );
    assert!(
        r["moments"].get("stt_first_partial").is_none(),
        "no partial without stream"
    );
    assert!(r["received_unix_ms"].as_f64().unwrap() > 1.6e12);
    assert_eq!(r["usage"]["prompt_tokens"], 17);
    // Clients read it as ttfx-core's ServerRecord, the moments among the timings.
    let read = ttfx_core::ServerRecord::from_json(&r.to_string()).unwrap();
    let final_timing = read
        .server
        .timings
        .iter()
        .find(|t| t.name == "stt_final")
        .unwrap();
    assert_eq!(final_timing.duration_ms, r["moments"]["stt_final"].as_f64());
    let wall = read.server.wall_clock.unwrap();
    assert!(wall.sent_unix_ms - wall.received_unix_ms >= 400.0);

    // `text`, and a transcript of the caller's.
    let url = format!(
        "{}sim/default/v1/audio/transcriptions?stt_first_partial_ms=0&stt_final_ms=0&transcript=Hello%2C%20there.",
        server.url
    );
    let c = upload(&url, &[("response_format", "text")], "stt-text").await;
    assert_eq!(c.status, 200, "{}", c.text());
    assert_eq!(c.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(c.text(), "Hello, there.\n");
}

#[tokio::test]
async fn stream_true_sends_deltas_then_done_at_the_injected_times() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    // Four one-word deltas at 200, 300, 400, 500 ms after the upload; done at 600.
    let url = format!(
        "{}sim/default/v1/audio/transcriptions?stt_first_partial_ms=200&stt_final_ms=600\
         &transcript=one%20two%20three%20four",
        server.url
    );
    for run in 0..3 {
        let id = format!("stt-stream-{run}");
        let c = upload(&url, &[("stream", "true")], &id).await;
        assert_eq!(c.status, 200, "{}", c.text());
        assert_eq!(c.header("content-type"), Some("text/event-stream"));
        let ev = events(&c.text());
        let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "transcript.text.delta",
                "transcript.text.delta",
                "transcript.text.delta",
                "transcript.text.delta",
                "transcript.text.done"
            ]
        );
        let deltas: Vec<&str> = ev[..4]
            .iter()
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, ["one", " two", " three", " four"]);
        assert_eq!(ev[4]["text"], "one two three four");
        assert_eq!(ev[4]["usage"]["type"], "tokens");
        assert_eq!(ev[4]["usage"]["output_tokens"], 4);
        // Each event is its own chunk when streamed; time them at the client.
        let at = |needle: &str| {
            let chunk = c
                .chunks
                .iter()
                .find(|(_, b)| String::from_utf8_lossy(b).contains(needle))
                .unwrap();
            ms(chunk.0)
        };
        let first = at("\"one\"");
        let done = at("transcript.text.done");
        assert!(
            (200.0..200.0 + LATE_MS).contains(&first),
            "first delta at {first} ms"
        );
        assert!(
            (600.0..600.0 + LATE_MS).contains(&done),
            "done at {done} ms"
        );

        let r = record(&server.url, &id).await;
        assert_eq!(r["outcome"], "completed");
        let partial = after_upload(&r, "stt_first_partial");
        let fin = after_upload(&r, "stt_final");
        assert!(
            (200.0..200.0 + LATE_MS).contains(&partial),
            "record: first partial {partial}"
        );
        assert!(
            (600.0..600.0 + LATE_MS).contains(&fin),
            "record: final {fin}"
        );
        // The bytes' own milestones agree with the moments (the body is recorded as
        // text): the first text is the first delta, the last the final event.
        let m = &r["milestones"];
        let moment = |n: &str| r["moments"][n].as_f64().unwrap();
        let first_token = m["first_token"].as_f64().unwrap();
        assert!(
            (first_token - moment("stt_first_partial")).abs() < 1.0,
            "{r}"
        );
        let last_token = m["last_token"].as_f64().unwrap();
        assert!((last_token - moment("stt_final")).abs() < 1.0, "{r}");
        assert!(m.get("error").is_none() && r.get("error").is_none(), "{r}");
        // The queue starts when the upload is complete (0 here), and the headers' wall
        // clock is when they left.
        let timing = c.header("server-timing").unwrap();
        assert!(timing.starts_with("queue;dur=0."), "{timing}");
        // The figures a report quotes (run with --nocapture to see them).
        eprintln!(
            "stt stream run {run}: client first delta {first:.2} ms (injected 200), done \
             {done:.2} ms (600); server after upload: first partial {partial:.3}, final {fin:.3}"
        );
    }
}

#[tokio::test]
async fn injected_failures_reach_the_client_in_openais_shapes() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let base = format!("{}sim/default/v1/audio/transcriptions", server.url);
    let c = upload(&format!("{base}?fail=429"), &[], "stt-429").await;
    assert_eq!(c.status, 429);
    assert_eq!(c.header("retry-after"), Some("1"));
    let body: Value = serde_json::from_slice(&c.body()).unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_exceeded");

    let url = format!("{base}?stt_first_partial_ms=0&stt_final_ms=100&fail=error&fail_after=2");
    let c = upload(&url, &[("stream", "true")], "stt-error").await;
    let ev = events(&c.text());
    let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["transcript.text.delta", "transcript.text.delta", "error"]
    );
    let r = record(&server.url, "stt-error").await;
    assert_eq!(r["outcome"], "failed");

    let c = upload(
        &format!("{base}?stt_first_partial_ms=0&stt_final_ms=0&fail=drop"),
        &[],
        "stt-drop",
    )
    .await;
    assert!(c.broken.is_some() || c.body().is_empty(), "{:?}", c.text());
    assert_eq!(record(&server.url, "stt-drop").await["outcome"], "dropped");
}

#[tokio::test]
async fn every_bad_upload_is_a_clear_4xx() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let base = format!("{}sim/default/v1/audio/transcriptions", server.url);
    let audio = wav(8_000, 100);
    let file: (&str, Option<&str>, &[u8]) = ("file", Some("a.wav"), &audio);
    let mut cut_wav = wav(8_000, 100);
    cut_wav.truncate(30);
    let big_field = "x".repeat((64 << 10) + 1);
    let long_transcript = "a".repeat((16 << 10) + 1);

    // (what, URL, body, content type, status, what the message says)
    type Case<'a> = (&'a str, String, Vec<u8>, String, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "no file",
            base.clone(),
            form(&[("model", None, b"m")]),
            multipart(),
            400,
            "no `file` field",
        ),
        (
            "not multipart",
            base.clone(),
            br#"{"model":"m"}"#.to_vec(),
            "application/json".into(),
            400,
            "expected a multipart/form-data body",
        ),
        (
            "no boundary",
            base.clone(),
            form(&[file]),
            "multipart/form-data".into(),
            400,
            "expected a multipart/form-data body",
        ),
        (
            "cut multipart",
            base.clone(),
            form(&[file])[..60].to_vec(),
            multipart(),
            400,
            "not a readable multipart/form-data upload",
        ),
        (
            "two files",
            base.clone(),
            form(&[file, file]),
            multipart(),
            400,
            "two `file` fields",
        ),
        (
            "broken wav",
            base.clone(),
            form(&[("file", Some("a.wav"), &cut_wav)]),
            multipart(),
            400,
            "file: a RIFF/WAVE file",
        ),
        (
            "unsupported response_format",
            base.clone(),
            form(&[file, ("response_format", None, b"verbose_json")]),
            multipart(),
            400,
            "response_format `verbose_json`",
        ),
        (
            "bad stream",
            base.clone(),
            form(&[file, ("stream", None, b"maybe")]),
            multipart(),
            400,
            "stream `maybe`",
        ),
        (
            "stream as text",
            base.clone(),
            form(&[
                file,
                ("stream", None, b"true"),
                ("response_format", None, b"text"),
            ]),
            multipart(),
            400,
            "stream=true answers with transcript.text.* events",
        ),
        (
            "field too large",
            base.clone(),
            form(&[file, ("prompt", None, big_field.as_bytes())]),
            multipart(),
            413,
            "form field `prompt`: more than 65536 bytes",
        ),
        (
            "bad override",
            format!("{base}?stt_first_partial_ms=-5"),
            form(&[file]),
            multipart(),
            400,
            "override stt_first_partial_ms=-5: expected a number in [0, 600000]",
        ),
        (
            "final before first",
            format!("{base}?stt_first_partial_ms=500&stt_final_ms=100"),
            form(&[file]),
            multipart(),
            400,
            "override stt_final_ms=100: the final text cannot come before",
        ),
        (
            "words per delta",
            format!("{base}?stt_words_per_delta=0"),
            form(&[file]),
            multipart(),
            400,
            "override stt_words_per_delta=0: expected an integer in [1, 1000]",
        ),
        (
            "long transcript",
            format!("{base}?transcript={long_transcript}"),
            form(&[file]),
            multipart(),
            400,
            "above the cap of 16384 bytes per transcript",
        ),
        (
            "unknown profile",
            format!("{}sim/nope/v1/audio/transcriptions", server.url),
            form(&[file]),
            multipart(),
            404,
            "unknown profile `nope`",
        ),
    ];
    for (what, url, body, content_type, status, says) in cases {
        let c = send(&url, body, &content_type, "bad").await;
        assert_eq!(c.status, status, "{what}: {}", c.text());
        let e: Value = serde_json::from_slice(&c.body())
            .unwrap_or_else(|_| panic!("{what}: not JSON: {}", c.text()));
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{what}: {message}");
        assert_eq!(e["error"]["type"], "invalid_request_error", "{what}");
    }

    // A file over the 25 MiB cap: crates/ttfx/tests/sim_limits.rs (a separate binary, so
    // its 25 MiB of CPU work does not run beside this file's timing tests).

    // The server is still well: a good upload is answered.
    let c = upload(
        &format!("{base}?stt_first_partial_ms=0&stt_final_ms=0"),
        &[],
        "after",
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.text());

    // A browser's preflight for the upload is allowed from any origin.
    let pre = common::preflight(
        &base,
        "http://page.example",
        Some("content-type,x-request-id"),
    )
    .await;
    assert!(pre.status().is_success(), "{}", pre.status());
    assert_eq!(
        pre.headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("*")
    );
}

#[tokio::test]
async fn a_file_that_is_not_wav_is_accepted_without_a_length() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let url = format!(
        "{}sim/default/v1/audio/transcriptions?stt_first_partial_ms=0&stt_final_ms=0",
        server.url
    );
    // A WebM's EBML magic and some bytes: what a browser's MediaRecorder uploads.
    let webm = [&b"\x1a\x45\xdf\xa3"[..], &[7u8; 4_000]].concat();
    let body = form(&[
        ("file", Some("speech.webm"), &webm),
        ("model", None, b"gpt-4o-transcribe"),
    ]);
    let c = send(&url, body, &multipart(), "stt-webm").await;
    assert_eq!(c.status, 200, "{}", c.text());
    let reply: Value = serde_json::from_slice(&c.body()).unwrap();
    assert_eq!(reply["text"], DEFAULT_TRANSCRIPT);
    assert_eq!(reply["usage"]["input_token_details"]["audio_tokens"], 0);
    let r = record(&server.url, "stt-webm").await;
    assert_eq!(r["outcome"], "completed");
    assert!(r["durations"].get("audio").is_none(), "{r}");
}

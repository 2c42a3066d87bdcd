//! The simulated endpoints' answers for fixed requests: status, headers and the whole
//! streamed body per dialect. The seed, the request id (`x-request-id`) and the
//! overrides are fixed; the timing overrides only make the test quick (0 ms to the first
//! token, 100,000 tok/s), since a body's bytes do not depend on when they leave.

use std::fmt::Write as _;

use ttfx_e2e::ServeProcess;

use crate::check;
use crate::common::{capture, ttfx};
use crate::mask;

/// Fast, seeded, short: the query every request below starts with.
const FAST: &str = "ttft_ms=0&tokens_per_second=100000&seed=7";

const CHAT_BODY: &str = r#"{"model":"golden","messages":[{"role":"user","content":"How fast?"}],"stream_options":{"include_usage":true}}"#;

/// (golden file, method, path and query after `/sim/`, request body).
const REQUESTS: [(&str, &str, &str, &str); 9] = [
    (
        "sim_http.openai_chat.txt",
        "POST",
        "default/v1/chat/completions?output_tokens=6",
        CHAT_BODY,
    ),
    (
        "sim_http.openai_chat_seeded_length_jitter.txt",
        "POST",
        "default/v1/chat/completions?output_tokens=lognormal:6:0.5&jitter=0.5&tokens_per_chunk=2",
        CHAT_BODY,
    ),
    (
        "sim_http.openai_chat_in_band_error.txt",
        "POST",
        "default/v1/chat/completions?output_tokens=6&fail=error&fail_after=2",
        CHAT_BODY,
    ),
    (
        "sim_http.openai_chat_bad_override.txt",
        "POST",
        "default/v1/chat/completions?output_tokens=lots",
        CHAT_BODY,
    ),
    (
        "sim_http.openai_chat_get.txt",
        "GET",
        "default/v1/chat/completions?prompt=How%20fast%3F&output_tokens=4",
        "",
    ),
    (
        "sim_http.openai_responses_reasoning.txt",
        "POST",
        "reasoning/v1/responses?output_tokens=4&reasoning_tokens=3",
        r#"{"model":"golden","input":"How fast?"}"#,
    ),
    (
        "sim_http.anthropic_reasoning.txt",
        "POST",
        "reasoning/v1/messages?output_tokens=4&reasoning_tokens=3",
        r#"{"model":"golden","max_tokens":64,"messages":[{"role":"user","content":"How fast?"}]}"#,
    ),
    (
        "sim_http.ollama_chat.txt",
        "POST",
        "default/api/chat?output_tokens=4",
        r#"{"model":"golden","messages":[{"role":"user","content":"How fast?"}]}"#,
    ),
    (
        "sim_http.llamacpp_completion.txt",
        "POST",
        "default/completion?output_tokens=4",
        r#"{"prompt":"How fast?","n_predict":16}"#,
    ),
];

/// Values that are clocks by construction, masked: OpenAI's `created` / `created_at`
/// (Unix seconds at the request; Ollama's RFC 3339 `created_at`), Ollama's `*_duration`
/// and llama.cpp's `timings` in ms (measured by the server, not configured: docs/serve.md
/// "What the server reports").
const CLOCK_FIELDS: [&str; 10] = [
    "created",
    "created_at",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
    "prompt_ms",
    "prompt_per_token_ms",
    "prompt_per_second",
    "predicted_ms",
];

/// More of llama.cpp's measured `timings`.
const MORE_CLOCK_FIELDS: [&str; 2] = ["predicted_per_token_ms", "predicted_per_second"];

/// A request's body and its content type (none: reqwest sends none).
struct Body<'a> {
    bytes: Vec<u8>,
    content_type: Option<&'a str>,
    /// What the golden file shows for it: the text, or where the bytes came from.
    shown: String,
}

impl Body<'_> {
    fn text(text: &str) -> Body<'static> {
        Body {
            bytes: text.as_bytes().to_vec(),
            content_type: None,
            shown: text.to_owned(),
        }
    }
}

/// The status, the headers by name (the `date` header, a clock, masked; `Server-Timing`
/// with its durations and wall-clock readings masked), a blank line, the body.
async fn answer(
    server: &ServeProcess,
    method: &str,
    path: &str,
    body: Body<'_>,
    id: &str,
) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    let url = format!("{}sim/{path}{sep}{FAST}", server.url);
    let client = reqwest::Client::new();
    let mut request = match method {
        "GET" => client.get(url),
        _ => client.post(url).body(body.bytes),
    };
    if let Some(content_type) = body.content_type {
        request = request.header("content-type", content_type);
    }
    let got = capture(request.header("x-request-id", id)).await;
    assert!(got.broken.is_none(), "{path}: {:?}", got.broken);
    let mut headers: Vec<(String, String)> = got
        .headers
        .iter()
        .map(|(k, v)| {
            let value = v.to_str().unwrap();
            let value = match k.as_str() {
                "date" => "<masked>".to_owned(),
                "server-timing" => mask::server_timing(value),
                _ => value.to_owned(),
            };
            (k.as_str().to_owned(), value)
        })
        .collect();
    headers.sort();
    let shown = body.shown;
    let mut out = format!(
        "{method} /sim/{path}{sep}{FAST}\n{shown}\n\n{}\n",
        got.status
    );
    for (k, v) in headers {
        let _ = writeln!(out, "{k}: {v}");
    }
    let text = mask::json_values(&got.text(), &CLOCK_FIELDS);
    let text = mask::json_values(&text, &MORE_CLOCK_FIELDS);
    let _ = write!(out, "\n{text}");
    out
}

/// A streamed transcription of a 0.2 s WAV (`inputs/stt_upload.multipart`: the file,
/// `model`, `stream=true`; boundary `golden-boundary`).
fn stt_upload() -> Body<'static> {
    let name = "stt_upload.multipart";
    Body {
        bytes: std::fs::read(check::input(name)).unwrap(),
        content_type: Some("multipart/form-data; boundary=golden-boundary"),
        shown: format!("(inputs/{name})"),
    }
}

/// In a record, what the server's clock measured: each milestone (any of ttfx-core's)
/// and duration (ms since arrival), the chunks (how its writes fell depends on
/// scheduling), the Server-Timing entries' durations and the wall-clock readings.
/// Outcome, sizes, usage, seed, names and the document's shape stay.
fn record_clock_fields() -> Vec<&'static str> {
    let measured = [
        "chunks",
        "queue",
        "prefill",
        "decode",
        "duration_ms",
        "received_unix_ms",
        "sent_unix_ms",
    ];
    let milestones = ttfx_core::Milestone::ALL.map(ttfx_core::Milestone::as_str);
    measured.into_iter().chain(milestones).collect()
}

/// `GET /records/{id}` once the record is finished (its task writes `done` just after
/// the last byte is handed over).
async fn record(server: &ServeProcess, id: &str) -> String {
    for _ in 0..100 {
        let text = reqwest::get(format!("{}records/{id}", server.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if !text.contains(r#""outcome":"in_progress""#) {
            return mask::json_values(&text, &record_clock_fields()) + "\n";
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("record {id} still in progress");
}

#[tokio::test]
async fn the_simulated_bodies_are_unchanged() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    for (i, (golden, method, path, body)) in REQUESTS.into_iter().enumerate() {
        let id = format!("golden-{i}");
        check::golden(
            golden,
            &answer(&server, method, path, Body::text(body), &id).await,
        );
    }
    let chat_record = record(&server, "golden-0").await;
    check::golden("sim_http.record_of_openai_chat.json", &chat_record);
    let speech = r#"{"model":"tts","input":"Hi.","voice":"alloy","stream_format":"sse"}"#;
    let tts = "default/v1/audio/speech?ttfa_ms=0&rtf=0&audio_ms=40&audio_chunk_ms=20";
    let got = answer(&server, "POST", tts, Body::text(speech), "golden-tts").await;
    check::golden("sim_http.tts_speech_sse.txt", &got);
    let stt = "default/v1/audio/transcriptions?stt_first_partial_ms=0&stt_final_ms=0&stt_words_per_delta=4";
    let got = answer(&server, "POST", stt, stt_upload(), "golden-stt").await;
    check::golden("sim_http.stt_transcription_stream.txt", &got);
}

//! Simulated speech-to-text at `/sim/{profile}/v1/audio/transcriptions` (OpenAI's
//! request: a multipart/form-data upload with `file`, `model`, `response_format`,
//! `stream`, …). A simulator cannot recognise speech: the text is the `transcript`
//! override or a fixed sentence. What it simulates is the time: counted from the moment
//! the upload is complete, the first `transcript.text.delta` is due after
//! `stt_first_partial_ms` and the final text after `stt_final_ms`, the deltas between
//! them evenly; the record says when each really left, on the server's clock.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use tokio::time::Instant;
use ttfx_core::decode::DialectKind;
use ttfx_core::server_timing::Usage;

use self::events::DEFAULT_TRANSCRIPT;
use self::upload::{Refused, Upload};
use self::wav::Audio;
use super::front::Front;
use super::limits::MAX_REPLY_MS;
use super::profile::{Delivery, Failure, Profile};
use super::sink::{Gone, Sink, body_channel};
use super::tts::{openai_error, refuse};
use super::{Call, Refusal};
use super::{deadline, front};
use crate::SimState;
use ttfx_records::{RecordHandle, RecordOutcome, lock};

mod events;
mod upload;
mod wav;

/// What an injected mid-stream failure says.
const INJECTED: &str = "ttfx sim: injected failure mid-stream";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Text,
}

pub async fn handle(State(state): State<Arc<SimState>>, req: Request) -> Response {
    let (mut parts, body) = req.into_parts();
    let mut call = match Call::head(&mut parts, &state).await {
        Ok(call) => call,
        Err(res) => return res,
    };
    // The overrides first: a bad one is refused before a 25 MB upload is read.
    let parsed = match call.parse() {
        Ok(p) => p,
        Err(Refusal(status, message)) => return refuse(status, &message),
    };
    let upload = match upload::receive(Request::from_parts(parts, body)).await {
        Ok(upload) => upload,
        Err(Refused(status, message)) => return refuse(status, &message),
    };
    let uploaded = Instant::now();
    let format = match Format::of(&upload) {
        Ok(format) => format,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };
    let p = &parsed.profile;
    let text = p
        .transcript
        .clone()
        .unwrap_or_else(|| DEFAULT_TRANSCRIPT.to_owned());
    let plan = match Plan::new(p, &text) {
        Ok(plan) => plan,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };

    // ttfx-core has no transcription dialect yet (the probe's milestones for it are
    // later work): the record reads the body as text, so its `first_token` is the first
    // delta's bytes and `last_token` the final event's, and no dialect reports the
    // `transcript.text.*` events as unknown. The moments below name them exactly.
    let front = match front::hold(&call, &parsed, uploaded, DialectKind::Text, openai_error).await {
        Ok(front) => front,
        Err(res) => return res,
    };
    let usage = events::usage(
        upload.audio.ms(),
        upload.prompt_chars,
        text.split_whitespace().count(),
    );
    record_upload(&front.record, uploaded, upload.audio, &usage);
    let job = Transcription {
        fail_after: p.fail_after.unwrap_or(plan.deltas.len() / 2),
        failure: p.failure,
        plan,
        text,
        usage,
        upload,
        format,
        uploaded,
        record: front.record.clone(),
    };
    job.answer(front, p.delivery).await
}

impl Format {
    /// The reply's format from the upload's `response_format` and `stream`.
    fn of(upload: &Upload) -> Result<Format, String> {
        let format = match upload.response_format.as_deref() {
            None | Some("json") => Format::Json,
            Some("text") => Format::Text,
            Some(other) => {
                return Err(format!(
                    "response_format `{}`: ttfx sim answers `json` and `text` only \
                     (verbose_json, srt, vtt and diarized_json carry segment timestamps \
                     it does not simulate)",
                    super::limits::shown(other)
                ));
            }
        };
        if upload.stream && format == Format::Text {
            return Err("stream=true answers with transcript.text.* events: leave \
                        response_format out or set it to `json`"
                .into());
        }
        Ok(format)
    }
}

/// When the upload was complete, the audio's length when its file says it, and the
/// usage the reply will report.
fn record_upload(record: &RecordHandle, uploaded: Instant, audio: Audio, usage: &Value) {
    let mut r = lock(record);
    r.moment("upload_complete", uploaded);
    if let Some(ms) = audio.ms() {
        r.duration("audio", ms);
    }
    r.usage = Some(Usage {
        prompt_tokens: usage["input_tokens"].as_u64(),
        completion_tokens: usage["output_tokens"].as_u64(),
        ..Usage::default()
    });
}

/// When each delta and the final text are due, after the upload is complete.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    /// The deltas' byte ranges in the text, and their deadlines.
    deltas: Vec<(std::ops::Range<usize>, Duration)>,
    done: Duration,
}

impl Plan {
    /// Delta k of n is due at first + (final − first) · k / n (+ the stalls before it),
    /// the final text at `final` (+ every stall): the last delta leaves one interval
    /// before the text is final, as a recogniser's last partial does.
    fn new(p: &Profile, text: &str) -> Result<Plan, String> {
        let (first, last) = (p.stt_first_partial, p.stt_final);
        if last < first {
            return Err(format!(
                "override stt_final_ms={}: the final text cannot come before the first \
                 partial (stt_first_partial_ms={})",
                last.as_secs_f64() * 1000.0,
                first.as_secs_f64() * 1000.0
            ));
        }
        let parts = events::deltas(text, p.stt_words_per_delta);
        let n = parts.len() as u32;
        let step = (last - first) / n.max(1);
        let mut stall = Duration::ZERO;
        let mut offset = 0;
        let deltas = parts
            .iter()
            .enumerate()
            .map(|(k, part)| {
                if p.stall_at.binary_search(&k).is_ok() {
                    stall += p.stall;
                }
                let range = offset..offset + part.len();
                offset = range.end;
                (range, first + step * k as u32 + stall)
            })
            .collect();
        let stalls = p.stall_at.partition_point(|&k| k < parts.len()) as u32;
        let done = last + p.stall * stalls;
        let end_ms = done.as_secs_f64() * 1000.0;
        if end_ms > MAX_REPLY_MS {
            return Err(format!(
                "the planned reply lasts {end_ms:.0} ms from the end of the upload, above \
                 the cap of {MAX_REPLY_MS:.0} ms per reply (stt_final_ms={:.0}, {stalls} \
                 stalls of stall_ms={:.0}): lower them",
                last.as_secs_f64() * 1000.0,
                p.stall.as_secs_f64() * 1000.0
            ));
        }
        Ok(Plan { deltas, done })
    }
}

struct Transcription {
    plan: Plan,
    text: String,
    usage: Value,
    upload: Upload,
    format: Format,
    uploaded: Instant,
    failure: Option<Failure>,
    /// Deltas sent before an injected failure.
    fail_after: usize,
    record: RecordHandle,
}

impl Transcription {
    /// Starts the reply. A stream's headers leave now; a non-streamed reply leaves whole,
    /// headers and all, when the text is final.
    async fn answer(self, front: Front, delivery: Delivery) -> Response {
        let (tx, body) = body_channel();
        let sink = Sink::new(tx, delivery, front.record.clone());
        let content_type = match (self.upload.stream, self.format) {
            (true, _) => "text/event-stream",
            (false, Format::Json) => "application/json",
            (false, Format::Text) => "text/plain; charset=utf-8",
        };
        if !self.upload.stream {
            deadline::until(self.uploaded + self.plan.done).await;
        }
        let res = front.stream(content_type, body);
        tokio::spawn(self.run(sink));
        res
    }

    async fn run(self, mut sink: Sink) {
        let produced = if self.upload.stream {
            self.stream(&mut sink).await
        } else {
            self.whole(&mut sink).await
        };
        match produced {
            Ok(RecordOutcome::Dropped) => sink.drop_connection().await,
            Ok(outcome) => sink.finish(outcome).await,
            Err(Gone) => sink.gone(),
        }
    }

    fn cut(&self) -> Option<Failure> {
        self.failure
            .filter(|f| matches!(f, Failure::InBand | Failure::Drop))
    }

    /// Sends `bytes` and records the moment they were handed to the connection.
    async fn send(&self, sink: &mut Sink, bytes: &str, moment: &str) -> Result<(), Gone> {
        sink.emit(bytes.as_bytes()).await?;
        lock(&self.record).moment(moment, Instant::now());
        Ok(())
    }

    async fn stream(&self, sink: &mut Sink) -> Result<RecordOutcome, Gone> {
        let cut = self.cut();
        for (k, (range, at)) in self.plan.deltas.iter().enumerate() {
            deadline::until(self.uploaded + *at).await;
            if cut.is_some() && k == self.fail_after {
                return self.fail(sink, cut).await;
            }
            let event = events::delta_event(&self.text[range.clone()]);
            if k == 0 {
                self.send(sink, &event, "stt_first_partial").await?;
            } else {
                sink.emit(event.as_bytes()).await?;
            }
        }
        deadline::until(self.uploaded + self.plan.done).await;
        let done = events::done_event(&self.text, &self.usage);
        self.send(sink, &done, "stt_final").await?;
        Ok(RecordOutcome::Completed)
    }

    /// The non-streamed reply (its deadline has passed: the headers waited for it).
    async fn whole(&self, sink: &mut Sink) -> Result<RecordOutcome, Gone> {
        if self.cut().is_some() {
            // No events to carry an error in: the connection breaks before the body.
            lock(&self.record).error = Some(INJECTED.into());
            return Ok(RecordOutcome::Dropped);
        }
        let body = match self.format {
            Format::Json => events::json_reply(&self.text, &self.usage),
            Format::Text => format!("{}\n", self.text),
        };
        self.send(sink, &body, "stt_final").await?;
        Ok(RecordOutcome::Completed)
    }

    /// An OpenAI-style error event, or (`drop`) a broken connection.
    async fn fail(&self, sink: &mut Sink, failure: Option<Failure>) -> Result<RecordOutcome, Gone> {
        lock(&self.record).error = Some(INJECTED.into());
        if failure == Some(Failure::InBand) {
            let event = serde_json::json!({
                "type": "error",
                "error": { "message": INJECTED, "type": "server_error" },
            });
            sink.emit(format!("data: {event}\n\n").as_bytes()).await?;
            return Ok(RecordOutcome::Failed);
        }
        Ok(RecordOutcome::Dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::builtin;

    fn profile(pairs: &[(&str, &str)]) -> Profile {
        let mut p = builtin()[0].1.clone();
        p.apply(pairs.iter().copied()).unwrap();
        p
    }

    fn ms(d: Duration) -> u128 {
        d.as_millis()
    }

    #[test]
    fn deltas_spread_from_the_first_partial_to_the_final_text() {
        let p = profile(&[("stt_first_partial_ms", "100"), ("stt_final_ms", "500")]);
        let plan = Plan::new(&p, "one two three four").unwrap();
        let at: Vec<u128> = plan.deltas.iter().map(|(_, d)| ms(*d)).collect();
        assert_eq!(at, [100, 200, 300, 400]);
        assert_eq!(ms(plan.done), 500);
        let text = "one two three four";
        let parts: Vec<&str> = plan.deltas.iter().map(|(r, _)| &text[r.clone()]).collect();
        assert_eq!(parts, ["one", " two", " three", " four"]);
    }

    #[test]
    fn stalls_delay_their_delta_and_everything_after() {
        let p = profile(&[
            ("stt_first_partial_ms", "100"),
            ("stt_final_ms", "300"),
            ("stt_words_per_delta", "2"),
            ("stall_at", "1"),
            ("stall_ms", "1000"),
        ]);
        let plan = Plan::new(&p, "a b c d").unwrap();
        let at: Vec<u128> = plan.deltas.iter().map(|(_, d)| ms(*d)).collect();
        assert_eq!(at, [100, 1200]);
        assert_eq!(ms(plan.done), 1300);
    }

    #[test]
    fn a_final_before_the_first_partial_or_past_the_cap_is_refused() {
        let p = profile(&[("stt_first_partial_ms", "500"), ("stt_final_ms", "400")]);
        let e = Plan::new(&p, "a").unwrap_err();
        assert!(
            e.contains("stt_final_ms=400") && e.contains("stt_first_partial_ms=500"),
            "{e}"
        );
        let p = profile(&[
            ("stall_at", "0,1,2"),
            ("stall_ms", "300000"),
            ("stt_words_per_delta", "1"),
        ]);
        let e = Plan::new(&p, "a b c").unwrap_err();
        assert!(e.contains("above the cap of 600000 ms"), "{e}");
    }
}

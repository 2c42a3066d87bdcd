//! Simulated TTS at `/sim/{profile}/v1/audio/speech` (OpenAI's request shape): PCM16,
//! WAV, or OpenAI-style SSE (`speech.audio.delta` with base64 audio, then
//! `speech.audio.done`). The first chunk is due `ttfa_ms` after arrival; each later
//! chunk of `audio_chunk_ms` audio takes `rtf` × that long to "synthesize".

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use tokio::time::Instant;
use ttfx_core::decode::DialectKind;

use super::deadline;
use super::profile::{Failure, Profile};
use super::sink::{Gone, Sink, body_channel};
use super::synth::{SAMPLE_RATE, base64, pcm16, wav_header};
use super::{Call, Refusal, json_error};
use crate::serve::records::{RecordHandle, RecordOutcome, lock};

/// Speech length per input character when the clip length is not given (≈ 14 chars/s).
const MS_PER_CHAR: u32 = 70;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Pcm,
    Wav,
}

fn openai_error(status: u16, message: &str) -> Value {
    let kind = if status == 429 {
        "rate_limit_exceeded"
    } else if status < 500 {
        "invalid_request_error"
    } else {
        "server_error"
    };
    json!({ "error": { "message": message, "type": kind, "param": null, "code": null } })
}

fn refuse(status: StatusCode, message: &str) -> Response {
    json_error(status, &openai_error(status.as_u16(), message))
}

pub async fn handle(call: Call) -> Response {
    let parsed = match call.parse() {
        Ok(p) => p,
        Err(Refusal(status, message)) => return refuse(status, &message),
    };
    let format = match parsed.body.get("response_format").and_then(Value::as_str) {
        None | Some("pcm") => Format::Pcm,
        Some("wav") => Format::Wav,
        Some(other) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                &format!("response_format `{other}`: ttfx sim synthesizes `pcm` and `wav` only"),
            );
        }
    };
    let sse = match parsed.body.get("stream_format").and_then(Value::as_str) {
        None | Some("audio") => false,
        Some("sse") => true,
        Some(other) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                &format!("stream_format `{other}`: expected `audio` or `sse`"),
            );
        }
    };
    let input = parsed
        .body
        .get("input")
        .and_then(Value::as_str)
        .unwrap_or("");
    let p = &parsed.profile;
    let audio_ms = p.audio_ms.unwrap_or_else(|| {
        (input.chars().count() as u32)
            .saturating_mul(MS_PER_CHAR)
            .clamp(300, 600_000)
    });

    let dialect = match (sse, format) {
        (true, _) => DialectKind::OpenAiSpeech,
        (false, Format::Pcm) => DialectKind::Pcm16,
        (false, Format::Wav) => DialectKind::Wav,
    };
    let front = match call.hold(&parsed, dialect, openai_error).await {
        Ok(front) => front,
        Err(res) => return res,
    };
    let content_type = match (sse, format) {
        (true, _) => "text/event-stream",
        (false, Format::Pcm) => "audio/pcm",
        (false, Format::Wav) => "audio/wav",
    };
    let (tx, body) = body_channel();
    let res = front.stream(content_type, body);
    let sink = Sink::new(tx, p.delivery, front.record.clone());
    let chunks = chunk_plan(p, audio_ms);
    let job = Speech {
        fail_after: p.fail_after.unwrap_or(chunks.len() / 2),
        chunks,
        total_samples: u64::from(audio_ms) * u64::from(SAMPLE_RATE) / 1000,
        format,
        sse,
        input_tokens: input.chars().count().div_ceil(4),
        arrival: call.arrival.at,
        failure: p.failure,
        record: front.record,
    };
    tokio::spawn(job.run(sink));
    res
}

/// One audio chunk: samples [from, to), due `at` after arrival.
#[derive(Debug, Clone, PartialEq)]
struct AudioChunk {
    at: Duration,
    from_ms: u32,
    to_ms: u32,
}

/// Chunk k is due at ttfa + k·chunk·rtf (+ stalls before it), on absolute deadlines.
fn chunk_plan(p: &Profile, audio_ms: u32) -> Vec<AudioChunk> {
    let chunk = p.audio_chunk_ms;
    let first = p.ttfa.max(p.queue).as_secs_f64();
    let mut stall = 0.0;
    (0..audio_ms.div_ceil(chunk))
        .map(|k| {
            if p.stall_at.contains(&(k as usize)) {
                stall += p.stall.as_secs_f64();
            }
            let synth = f64::from(k * chunk) / 1000.0 * p.rtf;
            AudioChunk {
                at: Duration::from_secs_f64(first + synth + stall),
                from_ms: k * chunk,
                to_ms: ((k + 1) * chunk).min(audio_ms),
            }
        })
        .collect()
}

struct Speech {
    chunks: Vec<AudioChunk>,
    total_samples: u64,
    format: Format,
    sse: bool,
    input_tokens: usize,
    arrival: Instant,
    failure: Option<Failure>,
    /// Chunks sent before an injected failure.
    fail_after: usize,
    record: RecordHandle,
}

impl Speech {
    async fn run(self, mut sink: Sink) {
        match self.produce(&mut sink).await {
            Ok(RecordOutcome::Dropped) => sink.drop_connection().await,
            Ok(outcome) => sink.finish(outcome).await,
            Err(Gone) => sink.gone(),
        }
    }

    fn samples_at(&self, ms: u32) -> u64 {
        (u64::from(ms) * u64::from(SAMPLE_RATE) / 1000).min(self.total_samples)
    }

    async fn produce(&self, sink: &mut Sink) -> Result<RecordOutcome, Gone> {
        let cut = self
            .failure
            .filter(|f| matches!(f, Failure::InBand | Failure::Drop));
        for (k, chunk) in self.chunks.iter().enumerate() {
            deadline::until(self.arrival + chunk.at).await;
            if cut.is_some() && k == self.fail_after {
                return self.fail(sink, cut).await;
            }
            let mut audio = Vec::new();
            if k == 0 && self.format == Format::Wav {
                audio = wav_header(self.total_samples);
            }
            let (from, to) = (self.samples_at(chunk.from_ms), self.samples_at(chunk.to_ms));
            audio.extend(pcm16(from, to, self.total_samples));
            let bytes = if self.sse {
                format!(
                    "data: {}\n\n",
                    json!({ "type": "speech.audio.delta", "audio": base64(&audio) })
                )
                .into_bytes()
            } else {
                audio
            };
            sink.emit(&bytes).await?;
        }
        if self.sse {
            let usage = json!({
                "input_tokens": self.input_tokens,
                "output_tokens": self.chunks.len(),
                "total_tokens": self.input_tokens + self.chunks.len(),
            });
            let done = json!({ "type": "speech.audio.done", "usage": usage });
            sink.emit(format!("data: {done}\n\n").as_bytes()).await?;
        }
        let mut r = lock(&self.record);
        r.duration(
            "audio",
            self.total_samples as f64 * 1000.0 / f64::from(SAMPLE_RATE),
        );
        Ok(RecordOutcome::Completed)
    }

    /// Half way through: an SSE error event, or (raw audio has no in-band errors) a drop.
    async fn fail(&self, sink: &mut Sink, failure: Option<Failure>) -> Result<RecordOutcome, Gone> {
        let message = "ttfx sim: injected failure mid-stream";
        lock(&self.record).error = Some(message.into());
        if failure == Some(Failure::InBand) && self.sse {
            let event =
                json!({ "type": "error", "error": { "message": message, "type": "server_error" } });
            sink.emit(format!("data: {event}\n\n").as_bytes()).await?;
            return Ok(RecordOutcome::Failed);
        }
        Ok(RecordOutcome::Dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::sim::profile::builtin;

    #[test]
    fn chunks_follow_ttfa_and_rtf_and_cover_the_clip() {
        let mut p = builtin()[0].1.clone();
        p.apply([
            ("ttfa_ms", "200"),
            ("rtf", "0.5"),
            ("audio_chunk_ms", "100"),
            ("stall_at", "2"),
            ("stall_ms", "300"),
        ])
        .unwrap();
        let plan = chunk_plan(&p, 250);
        let at: Vec<u128> = plan.iter().map(|c| c.at.as_millis()).collect();
        assert_eq!(at, [200, 250, 600]);
        assert_eq!((plan[2].from_ms, plan[2].to_ms), (200, 250));
    }
}

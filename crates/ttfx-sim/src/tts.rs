//! Simulated TTS at `/sim/{profile}/v1/audio/speech` (OpenAI's request shape): PCM16,
//! WAV, or OpenAI-style SSE (`speech.audio.delta` with base64 audio, then
//! `speech.audio.done`). The first chunk is due `ttfa_ms` after arrival; each later
//! chunk of `audio_chunk_ms` audio takes `rtf` × that long to "synthesize", × `1 +
//! load_rtf_slope × others` under load (load.rs).

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use tokio::time::Instant;
use ttfx_core::decode::DialectKind;

use super::body::Body;
use super::limits::{MAX_AUDIO_MS, MAX_HELD_BYTES, MAX_REPLY_MS};
use super::load::{self, Synthesis};
use super::profile::{Delivery, Failure, Profile};
use super::sink::{Gone, Sink, body_channel};
use super::synth::{SAMPLE_RATE, base64, pcm16, wav_header};
use super::{Call, Refusal, json_error};
use ttfx_core::server_timing::{ServerTiming, TimingSource};
use ttfx_records::{RecordHandle, RecordOutcome, lock};

/// Speech length per input character when the clip length is not given (≈ 14 chars/s).
const MS_PER_CHAR: u32 = 70;
/// The shortest clip made from input text (a word or two still makes a sound).
const MIN_INPUT_AUDIO_MS: u32 = 300;
/// What an injected mid-stream failure says.
const INJECTED: &str = "ttfx sim: injected failure mid-stream";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Pcm,
    Wav,
}

pub fn openai_error(status: u16, message: &str) -> Value {
    let kind = if status == 429 {
        "rate_limit_exceeded"
    } else if status < 500 {
        "invalid_request_error"
    } else {
        "server_error"
    };
    json!({ "error": { "message": message, "type": kind, "param": null, "code": null } })
}

pub fn refuse(status: StatusCode, message: &str) -> Response {
    json_error(status, &openai_error(status.as_u16(), message))
}

pub async fn handle(mut call: Call) -> Response {
    let parsed = match call.parse() {
        Ok(p) => p,
        Err(Refusal(status, message)) => return refuse(status, &message),
    };
    let format = match Format::of(&parsed.body) {
        Ok(format) => format,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };
    let sse = match sse(&parsed.body) {
        Ok(sse) => sse,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };
    let input_chars = parsed.body.input_chars.unwrap_or(0);
    let p = &parsed.profile;
    let audio_ms = match audio_ms(p, input_chars) {
        Ok(ms) => ms,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };
    let chunks = chunk_plan(p, audio_ms);
    let shape = Shape {
        format,
        sse,
        total_samples: u64::from(audio_ms) * u64::from(SAMPLE_RATE) / 1000,
        input_tokens: input_chars.div_ceil(4),
    };
    let held = match check(p, &chunks, &shape) {
        Ok(held) => held,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };

    let front = match call.hold(&parsed, shape.dialect(), openai_error).await {
        Ok(front) => front,
        Err(res) => return res,
    };
    let (tx, body) = body_channel();
    let res = front.stream(shape.content_type(), body);
    let mut sink = Sink::new(tx, p.delivery, front.record.clone());
    if let Some(bytes) = held {
        sink.reserve(bytes);
    }
    // In flight from its headers until the job ends (its last byte, or its client gone).
    let synthesis = parsed.deployment.synthesis(p);
    if p.load_rtf_slope > 0.0 {
        lock(&front.record).header_timings.push(ServerTiming {
            name: "batch".into(),
            duration_ms: None,
            description: Some((synthesis.others_at_start + 1).to_string()),
            source: TimingSource::InBand,
        });
    }
    let job = Speech {
        fail_after: p.fail_after.unwrap_or(chunks.len() / 2),
        chunks,
        shape,
        arrival: call.arrival.at,
        failure: p.failure,
        record: front.record,
        synthesis,
    };
    tokio::spawn(job.run(sink));
    res
}

impl Format {
    /// The audio format the request's `response_format` asks for.
    fn of(body: &Body) -> Result<Format, String> {
        match body.response_format.as_deref() {
            None | Some("pcm") => Ok(Format::Pcm),
            Some("wav") => Ok(Format::Wav),
            Some(other) => Err(format!(
                "response_format `{other}`: ttfx sim synthesizes `pcm` and `wav` only"
            )),
        }
    }
}

/// Whether the request's `stream_format` asks for SSE events rather than bare audio.
fn sse(body: &Body) -> Result<bool, String> {
    match body.stream_format.as_deref() {
        None | Some("audio") => Ok(false),
        Some("sse") => Ok(true),
        Some(other) => Err(format!(
            "stream_format `{other}`: expected `audio` or `sse`"
        )),
    }
}

/// The clip's length: `audio_ms`, else as long as the input text takes to say.
fn audio_ms(p: &Profile, input_chars: usize) -> Result<u32, String> {
    if let Some(ms) = p.audio_ms {
        return Ok(ms);
    }
    let ms = (input_chars as u64).saturating_mul(u64::from(MS_PER_CHAR));
    if ms > u64::from(MAX_AUDIO_MS) {
        return Err(format!(
            "input of {input_chars} characters makes a clip of {ms} ms \
             ({MS_PER_CHAR} ms per character), above the cap of {MAX_AUDIO_MS} ms \
             per clip: send shorter input, or set audio_ms"
        ));
    }
    Ok((ms as u32).max(MIN_INPUT_AUDIO_MS))
}

/// One audio chunk: samples [from, to), due `at` after arrival.
#[derive(Debug, Clone, PartialEq)]
struct AudioChunk {
    at: Duration,
    /// The synthesis in the interval before it (`audio_chunk_ms × rtf`; none before the
    /// first): the part load slows.
    synth: Duration,
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
            // `stall_at` is sorted by the parser.
            if p.stall_at.binary_search(&(k as usize)).is_ok() {
                stall += p.stall.as_secs_f64();
            }
            let synth = f64::from(k * chunk) / 1000.0 * p.rtf;
            AudioChunk {
                at: Duration::from_secs_f64(first + synth + stall),
                synth: if k == 0 {
                    Duration::ZERO
                } else {
                    Duration::from_secs_f64(f64::from(chunk) / 1000.0 * p.rtf)
                },
                from_ms: k * chunk,
                to_ms: ((k + 1) * chunk).min(audio_ms),
            }
        })
        .collect()
}

/// The caps on the planned reply (`limits`): its length (the last chunk's deadline;
/// an injected failure only ends it sooner) and, when it is buffered, its bytes
/// (returned).
fn check(p: &Profile, chunks: &[AudioChunk], shape: &Shape) -> Result<Option<usize>, String> {
    let end_ms = chunks
        .last()
        .map_or(p.ttfa.max(p.queue), |c| c.at)
        .as_secs_f64()
        * 1000.0;
    if end_ms > MAX_REPLY_MS {
        let stalls = p.stall_at.partition_point(|&k| k < chunks.len());
        return Err(format!(
            "the planned reply lasts {end_ms:.0} ms from arrival, above the cap of \
             {MAX_REPLY_MS:.0} ms per reply (first chunk at {:.0} ms, then {} chunks of \
             audio_chunk_ms={} at rtf={}, {stalls} stalls of stall_ms={:.0}): lower the \
             delays, rtf, the clip's length or stall_ms",
            p.ttfa.max(p.queue).as_secs_f64() * 1000.0,
            chunks.len(),
            p.audio_chunk_ms,
            p.rtf,
            p.stall.as_secs_f64() * 1000.0,
        ));
    }
    if p.delivery == Delivery::Buffered {
        let bytes = shape.body_bytes(chunks);
        if bytes > MAX_HELD_BYTES {
            return Err(format!(
                "buffered=true: the planned body is {bytes} bytes, above the cap of \
                 {MAX_HELD_BYTES} bytes a buffered reply may hold ({} ms of audio): shorten \
                 the clip, or stream it",
                shape.total_samples * 1000 / u64::from(SAMPLE_RATE)
            ));
        }
        return Ok(Some(bytes));
    }
    Ok(None)
}

/// What the body is made of.
struct Shape {
    format: Format,
    sse: bool,
    total_samples: u64,
    input_tokens: usize,
}

impl Shape {
    /// How the record decodes the body.
    fn dialect(&self) -> DialectKind {
        match (self.sse, self.format) {
            (true, _) => DialectKind::OpenAiSpeech,
            (false, Format::Pcm) => DialectKind::Pcm16,
            (false, Format::Wav) => DialectKind::Wav,
        }
    }

    fn content_type(&self) -> &'static str {
        match (self.sse, self.format) {
            (true, _) => "text/event-stream",
            (false, Format::Pcm) => "audio/pcm",
            (false, Format::Wav) => "audio/wav",
        }
    }

    fn samples_at(&self, ms: u32) -> u64 {
        (u64::from(ms) * u64::from(SAMPLE_RATE) / 1000).min(self.total_samples)
    }

    /// Audio bytes of chunk `k` (the WAV header rides on the first).
    fn audio_len(&self, k: usize, chunk: &AudioChunk) -> usize {
        let header = if k == 0 && self.format == Format::Wav {
            44
        } else {
            0
        };
        let samples = self.samples_at(chunk.to_ms) - self.samples_at(chunk.from_ms);
        header + samples as usize * 2
    }

    fn audio(&self, k: usize, chunk: &AudioChunk) -> Vec<u8> {
        let mut audio = if k == 0 && self.format == Format::Wav {
            wav_header(self.total_samples)
        } else {
            Vec::with_capacity(self.audio_len(k, chunk))
        };
        let (from, to) = (self.samples_at(chunk.from_ms), self.samples_at(chunk.to_ms));
        audio.extend(pcm16(from, to, self.total_samples));
        audio
    }

    /// One SSE audio event.
    fn delta(audio: &[u8]) -> String {
        format!(
            "data: {}\n\n",
            json!({ "type": "speech.audio.delta", "audio": base64(audio) })
        )
    }

    fn done(&self, chunks: usize) -> String {
        let usage = json!({
            "input_tokens": self.input_tokens,
            "output_tokens": chunks,
            "total_tokens": self.input_tokens + chunks,
        });
        let done = json!({ "type": "speech.audio.done", "usage": usage });
        format!("data: {done}\n\n")
    }

    /// Bytes of the whole planned body, as `Speech::produce` makes it (base64 needs no
    /// JSON escaping, so an event is its framing plus 4 characters per 3 bytes).
    fn body_bytes(&self, chunks: &[AudioChunk]) -> usize {
        let framing = Shape::delta(&[]).len();
        let audio = chunks.iter().enumerate().map(|(k, c)| self.audio_len(k, c));
        if self.sse {
            audio.map(|n| framing + n.div_ceil(3) * 4).sum::<usize>()
                + self.done(chunks.len()).len()
        } else {
            audio.sum()
        }
    }
}

struct Speech {
    chunks: Vec<AudioChunk>,
    shape: Shape,
    arrival: Instant,
    failure: Option<Failure>,
    /// Chunks sent before an injected failure.
    fail_after: usize,
    record: RecordHandle,
    /// Counted among the profile's syntheses while the job lives.
    synthesis: Synthesis,
}

impl Speech {
    async fn run(self, mut sink: Sink) {
        match self.produce(&mut sink).await {
            Ok(RecordOutcome::Dropped) => sink.drop_connection().await,
            Ok(outcome) => sink.finish(outcome).await,
            Err(Gone) => sink.gone(),
        }
    }

    async fn produce(&self, sink: &mut Sink) -> Result<RecordOutcome, Gone> {
        let cut = self
            .failure
            .filter(|f| matches!(f, Failure::InBand | Failure::Drop));
        // Seconds load has added so far: each chunk's synthesis × (slowdown − 1), the
        // slowdown read as the chunk before it has left (exactly 0 without load, so the
        // plan's deadlines hold to the bit).
        let mut extra = 0.0;
        for (k, chunk) in self.chunks.iter().enumerate() {
            extra += chunk.synth.as_secs_f64() * (self.synthesis.slowdown() - 1.0);
            sink.until(load::later(self.arrival + chunk.at, extra))
                .await?;
            if cut.is_some() && k == self.fail_after {
                return self.fail(sink, cut).await;
            }
            let audio = self.shape.audio(k, chunk);
            if self.shape.sse {
                sink.emit(Shape::delta(&audio).as_bytes()).await?;
            } else {
                sink.emit(&audio).await?;
            }
        }
        if self.shape.sse {
            sink.emit(self.shape.done(self.chunks.len()).as_bytes())
                .await?;
        }
        let mut r = lock(&self.record);
        r.duration(
            "audio",
            self.shape.total_samples as f64 * 1000.0 / f64::from(SAMPLE_RATE),
        );
        Ok(RecordOutcome::Completed)
    }

    /// Half way through: an SSE error event, or (raw audio has no in-band errors) a drop.
    async fn fail(&self, sink: &mut Sink, failure: Option<Failure>) -> Result<RecordOutcome, Gone> {
        lock(&self.record).error = Some(INJECTED.into());
        if failure == Some(Failure::InBand) && self.shape.sse {
            let event = json!({ "type": "error", "error": { "message": INJECTED, "type": "server_error" } });
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

    #[test]
    fn the_planned_body_size_is_the_bytes_sent() {
        let mut p = builtin()[0].1.clone();
        p.apply([("audio_chunk_ms", "70")]).unwrap();
        let chunks = chunk_plan(&p, 1_234);
        for (format, sse) in [
            (Format::Pcm, false),
            (Format::Wav, false),
            (Format::Pcm, true),
            (Format::Wav, true),
        ] {
            let shape = Shape {
                format,
                sse,
                total_samples: 1_234 * u64::from(SAMPLE_RATE) / 1000,
                input_tokens: 3,
            };
            let mut sent = 0;
            for (k, c) in chunks.iter().enumerate() {
                let audio = shape.audio(k, c);
                assert_eq!(audio.len(), shape.audio_len(k, c));
                sent += if sse {
                    Shape::delta(&audio).len()
                } else {
                    audio.len()
                };
            }
            if sse {
                sent += shape.done(chunks.len()).len();
            }
            assert_eq!(shape.body_bytes(&chunks), sent, "{format:?} sse={sse}");
        }
    }

    #[test]
    fn a_reply_over_a_cap_is_refused_with_the_cap() {
        let mut p = builtin()[0].1.clone();
        p.apply([("rtf", "2"), ("audio_ms", "400000")]).unwrap();
        let shape = |ms: u32| Shape {
            format: Format::Pcm,
            sse: false,
            total_samples: u64::from(ms) * u64::from(SAMPLE_RATE) / 1000,
            input_tokens: 0,
        };
        let e = check(&p, &chunk_plan(&p, 400_000), &shape(400_000)).unwrap_err();
        assert!(e.contains("above the cap of 600000 ms"), "{e}");
        p.apply([("rtf", "0.25"), ("buffered", "true")]).unwrap();
        // 100 s of PCM16 is 4.8 MB, above 4 MiB; 80 s (3.84 MB) is held.
        let e = check(&p, &chunk_plan(&p, 100_000), &shape(100_000)).unwrap_err();
        assert!(
            e.contains("buffered=true") && e.contains("cap of 4194304 bytes"),
            "{e}"
        );
        assert!(check(&p, &chunk_plan(&p, 80_000), &shape(80_000)).is_ok());
    }
}

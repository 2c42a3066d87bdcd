//! `ttfx decode FILE`: decode a captured response body and print what it said, as JSON.
//!
//! The file is fed in chunks of `--chunk-bytes` (the decoder must not care), through the
//! chosen dialect or `auto`. `--dialect sse` and `--dialect ndjson` print the frames
//! instead, so the framing layer can be checked on its own. Problems *in* the stream are
//! part of the output (`errors`); only problems running the command fail it.

use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;
use serde_json::{Value, json};
use ttfx_core::decode::{Decoder, DialectKind, Event, Limits, NdjsonFramer, SseFramer, Transcript};

/// What `--dialect` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeMode {
    Auto,
    SseFrames,
    NdjsonFrames,
    Dialect(DialectKind),
}

/// The `--dialect` value is none of the known ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMode(String);

impl fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dialects: Vec<&str> = DialectKind::ALL.iter().map(|d| d.as_str()).collect();
        write!(
            f,
            "unknown dialect `{}` (known: auto, sse, ndjson, {})",
            self.0,
            dialects.join(", ")
        )
    }
}

impl std::error::Error for UnknownMode {}

impl FromStr for DecodeMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(DecodeMode::Auto),
            "sse" => Ok(DecodeMode::SseFrames),
            "ndjson" => Ok(DecodeMode::NdjsonFrames),
            other => other
                .parse()
                .map(DecodeMode::Dialect)
                .map_err(|_| UnknownMode(other.to_owned())),
        }
    }
}

// `ttfx decode`'s options (the binary's command line embeds them).
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// The captured response body (raw bytes as they came over the wire).
    pub file: PathBuf,

    /// auto, a dialect (openai-chat, openai-responses, openai-realtime, anthropic, ollama,
    /// llamacpp, openai-speech, wav, pcm16, text), or sse / ndjson to print the raw frames.
    #[arg(long, default_value = "auto")]
    pub dialect: DecodeMode,

    /// Feed the decoder this many bytes at a time (the result must not depend on it).
    #[arg(long, default_value_t = 65536)]
    pub chunk_bytes: usize,

    /// The response's Content-Type, to help `auto`.
    #[arg(long)]
    pub content_type: Option<String>,

    /// Longest line (and SSE event) kept; longer ones are dropped and reported.
    #[arg(long, default_value_t = ttfx_core::decode::Limits::DEFAULT.max_line_bytes)]
    pub max_line_bytes: usize,
}

/// Why `ttfx decode` printed nothing (or stopped printing). Each text names the option
/// or the file and carries its cause (no `source` chain).
#[derive(Debug, thiserror::Error)]
pub enum DecodeCmdError {
    #[error("--chunk-bytes must be at least 1")]
    NoChunkBytes,
    #[error("--max-line-bytes must be at least 1")]
    NoMaxLineBytes,
    #[error("cannot open {}: {cause}", path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot read {}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot write the result: {0}")]
    Write(std::io::Error),
}

pub fn run(args: DecodeArgs) -> Result<(), DecodeCmdError> {
    let output = decode_file(&args)?;
    let mut stdout = std::io::stdout().lock();
    let written = serde_json::to_writer_pretty(&mut stdout, &output)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(stdout));
    match written {
        // A reader that stopped early (`| head`) wanted no more: not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(DecodeCmdError::Write),
    }
}

fn decode_file(args: &DecodeArgs) -> Result<Value, DecodeCmdError> {
    if args.chunk_bytes == 0 {
        return Err(DecodeCmdError::NoChunkBytes);
    }
    if args.max_line_bytes == 0 {
        return Err(DecodeCmdError::NoMaxLineBytes);
    }
    let limits = Limits {
        max_line_bytes: args.max_line_bytes,
        max_event_bytes: args.max_line_bytes,
    };
    let mut file = File::open(&args.file).map_err(|cause| DecodeCmdError::Open {
        path: args.file.clone(),
        cause,
    })?;
    let mut sink = Sink::new(args.dialect, args.content_type.as_deref(), limits);
    let mut buffer = vec![0; args.chunk_bytes];
    let mut chunks = 0u64;
    loop {
        let n = read_full(&mut file, &mut buffer).map_err(|cause| DecodeCmdError::Read {
            path: args.file.clone(),
            cause,
        })?;
        if n == 0 {
            break;
        }
        chunks += 1;
        sink.push(buffer.get(..n).unwrap_or_default());
    }
    let mut output = sink.finish();
    if let Value::Object(map) = &mut output {
        map.insert("chunks".into(), json!(chunks));
        map.insert("chunk_bytes".into(), json!(args.chunk_bytes));
    }
    Ok(output)
}

/// Fills `buffer` unless the file ends first, so every chunk but the last has the
/// asked-for size (a plain `read` may return less).
fn read_full(file: &mut File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(buffer.get_mut(filled..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

enum Sink {
    Sse(SseFramer, Vec<ttfx_core::decode::SseItem>),
    Ndjson(NdjsonFramer, Vec<ttfx_core::decode::NdjsonItem>),
    Events(Decoder, Vec<Event>),
}

impl Sink {
    fn new(mode: DecodeMode, content_type: Option<&str>, limits: Limits) -> Sink {
        match mode {
            DecodeMode::SseFrames => Sink::Sse(SseFramer::new(limits), Vec::new()),
            DecodeMode::NdjsonFrames => Sink::Ndjson(NdjsonFramer::new(limits), Vec::new()),
            DecodeMode::Auto => Sink::Events(Decoder::auto(content_type, limits), Vec::new()),
            DecodeMode::Dialect(kind) => Sink::Events(Decoder::new(kind, limits), Vec::new()),
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        match self {
            Sink::Sse(framer, items) => framer.push(chunk, items),
            Sink::Ndjson(framer, items) => framer.push(chunk, items),
            Sink::Events(decoder, events) => decoder.push_into(chunk, events),
        }
    }

    fn finish(self) -> Value {
        match self {
            Sink::Sse(mut framer, mut items) => {
                framer.finish(&mut items);
                frames_output("sse", items.iter().map(|i| i.to_json()))
            }
            Sink::Ndjson(mut framer, mut items) => {
                framer.finish(&mut items);
                frames_output("ndjson", items.iter().map(|i| i.to_json()))
            }
            Sink::Events(mut decoder, mut events) => {
                events.extend(decoder.finish());
                events_output(&decoder, &events)
            }
        }
    }
}

fn frames_output(framing: &str, frames: impl Iterator<Item = Value>) -> Value {
    let frames: Vec<Value> = frames.collect();
    let errors: Vec<&Value> = frames.iter().filter(|f| f["kind"] == "error").collect();
    json!({
        "dialect": framing,
        "frames": frames,
        "errors": errors,
    })
}

fn events_output(decoder: &Decoder, events: &[Event]) -> Value {
    let summary = Transcript::from_events(events);
    let mut output = json!({
        "dialect": decoder.dialect().map(DialectKind::as_str),
        "frames": decoder.frames(),
        "events": events.iter().map(event_json).collect::<Vec<_>>(),
    });
    if let (Value::Object(map), Ok(Value::Object(summary))) =
        (&mut output, serde_json::to_value(&summary))
    {
        map.extend(summary);
    }
    output
}

/// An event as printed: audio samples are counted, not listed (a second of speech is
/// tens of thousands of them).
fn event_json(event: &Event) -> Value {
    match event {
        Event::AudioSamples { samples } => {
            json!({"kind": "audio_samples", "count": samples.len()})
        }
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_unknown_ones_list_the_choices() {
        assert_eq!("auto".parse(), Ok(DecodeMode::Auto));
        assert_eq!("sse".parse(), Ok(DecodeMode::SseFrames));
        assert_eq!(
            "anthropic".parse(),
            Ok(DecodeMode::Dialect(DialectKind::Anthropic))
        );
        let err = "grpc".parse::<DecodeMode>().unwrap_err().to_string();
        assert!(
            err.contains("`grpc`") && err.contains("auto, sse, ndjson, openai-chat"),
            "{err}"
        );
    }

    #[test]
    fn audio_samples_print_as_a_count() {
        let json = event_json(&Event::AudioSamples {
            samples: vec![0; 5],
        });
        assert_eq!(json, json!({"kind": "audio_samples", "count": 5}));
    }
}

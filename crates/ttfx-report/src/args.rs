//! `ttfx report`'s and `ttfx decode`'s options (the binary's command line embeds them).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Report files (single runs or batches), merged into one batch.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    /// Print the merged batch as JSON instead of the table.
    #[arg(long)]
    pub json: bool,

    /// An SLO budget for goodput, METRIC=LIMIT (e.g. ttft_ms=500); repeat for several.
    /// Metrics ending in _per_s are floors, the rest ceilings.
    #[arg(long = "slo", value_name = "METRIC=LIMIT")]
    pub slo: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// The captured response body (raw bytes as they came over the wire).
    pub file: PathBuf,

    /// auto, a dialect (openai-chat, openai-responses, openai-realtime, anthropic, ollama,
    /// llamacpp, openai-speech, wav, pcm16, text), or sse / ndjson to print the raw frames.
    #[arg(long, default_value = "auto")]
    pub dialect: crate::decode_cmd::DecodeMode,

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

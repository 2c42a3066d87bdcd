//! The command line of `ttfx`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// ttfx: time to first everything, measured where users wait.
#[derive(Debug, Parser)]
#[command(name = "ttfx", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the lab page, the simulated LLM/TTS endpoints, the vantage proxy and records.
    Serve(ServeArgs),
    /// Decode a captured response body and print its events and summary as JSON.
    Decode(DecodeArgs),
    /// Print percentiles per metric from report files (runs or batches), or merge them.
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Folder holding the built lab page (Trunk's dist, with index.html).
    #[arg(long)]
    pub dist: Option<PathBuf>,

    /// TOML file naming the proxy's upstreams and extra simulator profiles
    /// (see docs/serve.md).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

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

    /// auto, a dialect (openai-chat, openai-responses, anthropic, ollama, llamacpp,
    /// openai-speech, wav, pcm16, text), or sse / ndjson to print the raw frames.
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

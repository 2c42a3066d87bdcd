//! `ttfx import`'s options (the binary's command line embeds them).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Benchmark result files: vLLM (bench serve, benchmark_serving.py, --append-result,
    /// bench sweep), SGLang bench_serving, AIPerf, GenAI-Perf, GuideLLM, LLMPerf, ttfx
    /// run reports. The tool is recognised from the content. docs/import.md.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Store the runs in this collector database (created if missing) beside the field.
    #[arg(long, value_name = "FILE.db")]
    pub into: Option<PathBuf>,

    /// Name the stored runs (default: the file's name); `ttfx field --bench` takes it.
    #[arg(long, value_name = "L")]
    pub label: Option<String>,

    /// Read every file as this tool's, instead of recognising it: vllm, sglang, aiperf,
    /// genai-perf, guidellm, llmperf, ttfx.
    #[arg(long, value_name = "F")]
    pub format: Option<String>,

    /// Print what was read as JSON.
    #[arg(long)]
    pub json: bool,
}

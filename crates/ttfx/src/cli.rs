//! The command line of `ttfx`.

use clap::{Parser, Subcommand};
use ttfx_collect::{FieldArgs, ImportArgs};
use ttfx_load::LoadArgs;
use ttfx_report::{DecodeArgs, ReportArgs};
use ttfx_run::RunArgs;
use ttfx_serve::ServeArgs;

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
    /// Percentiles of the runs a collector stored (`ttfx serve --collect FILE.db`),
    /// weighted by inverse sample rate, per metric and group. docs/field.md.
    Field(FieldArgs),
    /// Read benchmark result files (vLLM, SGLang, AIPerf, GenAI-Perf, GuideLLM, LLMPerf,
    /// ttfx), print their figures, and store them beside the field. docs/import.md.
    Import(ImportArgs),
    /// Measure in headless Chromium over WebDriver, print percentiles, judge budgets
    /// (exit 0: met, 1: a budget failed, 2: the run could not be made). docs/run.md.
    // Boxed: its many options would make every Command as large.
    Run(Box<RunArgs>),
    /// Drive a chat endpoint or the simulator with load from native code, open loop
    /// (Poisson arrivals at --rate) or closed loop (--concurrency streams), and print
    /// TTFT, gaps, TPOT, e2e, throughput, goodput, errors and the generator's own
    /// lateness. docs/load.md.
    Load(Box<LoadArgs>),
}

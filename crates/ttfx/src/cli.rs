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
    /// Percentiles of the runs a collector stored (`ttfx serve --collect FILE.db`),
    /// weighted by inverse sample rate, per metric and group. docs/field.md.
    Field(FieldArgs),
    /// Measure in headless Chromium over WebDriver, print percentiles, judge budgets
    /// (exit 0: met, 1: a budget failed, 2: the run could not be made). docs/run.md.
    // Boxed: its many options would make every Command as large.
    Run(Box<RunArgs>),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// TOML scenario file (keys as the flags; flags win, budgets add up).
    #[arg(long)]
    pub scenario: Option<PathBuf>,

    /// What to measure: sim/PROFILE[?key=value&…] (overrides as in docs/serve.md),
    /// proxy/UPSTREAM (with --config), http://ENDPOINT, or page:http://PAGE.
    /// Default sim/default.
    #[arg(long)]
    pub target: Option<String>,

    /// Your own page embedding the probe (same as --target page:URL).
    #[arg(long)]
    pub url: Option<String>,

    /// A second target, measured interleaved (A B A B …), with the crossover comparison.
    #[arg(long)]
    pub against: Option<String>,

    /// The API the requests speak: openai-chat, openai-responses, anthropic, ollama-chat,
    /// ollama-generate or llamacpp (its body, its reply's dialect and its default path).
    /// Default: the API whose path the endpoint has, else openai-chat.
    #[arg(long, value_name = "API")]
    pub api: Option<String>,

    /// API path appended to sim/ and proxy/ targets (default: the API's own path; the
    /// API follows from it when --api is not given).
    #[arg(long, value_name = "PATH")]
    pub api_path: Option<String>,

    /// A prompt (repeat for several; runs cycle through them).
    #[arg(long)]
    pub prompt: Vec<String>,

    /// Measured runs per target (default 10).
    #[arg(long)]
    pub runs: Option<usize>,

    /// Browser sessions running at once (default 1).
    #[arg(long)]
    pub concurrency: Option<usize>,

    /// Warm-up runs per session and target, excluded from the results (default 1).
    #[arg(long)]
    pub warmup: Option<usize>,

    /// A budget, METRIC.STAT<=LIMIT or >=, e.g. ttft_visible.p90<=800ms (repeatable).
    #[arg(long, value_name = "BUDGET")]
    pub budget: Vec<String>,

    /// Write the batch report (docs/report.md) here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write JUnit XML here, one test case per budget.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// A remote WebDriver endpoint (e.g. a Selenium Grid) instead of a local chromedriver.
    #[arg(long, value_name = "URL")]
    pub webdriver: Option<String>,

    /// Where the runner's own page and simulated endpoints listen (default 127.0.0.1:0,
    /// a free loopback port): an address a remote browser can reach.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,

    /// The base URL the browser loads the runner's page from (default: the address
    /// listened on), e.g. the name a Grid's nodes know this machine by.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,

    /// The browser: chromium (chromedriver), firefox (geckodriver) or webkit
    /// (WebKitWebDriver).
    #[arg(long, value_enum, default_value = "chromium")]
    pub browser: crate::run_cmd::Browser,

    /// The WebDriver server to start (default $CHROMEDRIVER / $GECKODRIVER /
    /// $WEBKITWEBDRIVER, else the driver on the PATH).
    #[arg(long, alias = "chromedriver", value_name = "PATH")]
    pub driver: Option<PathBuf>,

    /// The built probe package (default target/probe-pkg, from `cargo xtask probe-pkg`).
    #[arg(long, value_name = "DIR")]
    pub probe_pkg: Option<PathBuf>,

    /// An extra Chromium flag (repeatable).
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    pub browser_arg: Vec<String>,

    /// Seconds one run may take before it is aborted (default 60).
    #[arg(long)]
    pub timeout_s: Option<f64>,

    /// `ttfx serve --config` file for the runner's server (proxy upstreams, profiles).
    #[arg(long)]
    pub config: Option<PathBuf>,

    /// Voice turns: the reply's first sentence goes to the simulator's TTS
    /// (`/sim/PROFILE/v1/audio/speech`) and plays; the table adds ttfa_ms, rtf, …
    /// (sim/ targets only).
    #[arg(long)]
    pub voice: bool,

    /// Voice-to-voice turns (implies --voice): a fake microphone speaks (espeak-ng says
    /// --speech), the page's detector finds the end of speech, the speech goes to the
    /// simulator's STT (`/sim/PROFILE/v1/audio/transcriptions`, streamed), its
    /// transcript to the LLM and the reply to TTS; the table adds voice_to_voice_ms and
    /// its stages (Chromium, sim/ targets only).
    #[arg(long)]
    pub voice_turn: bool,

    /// What the fake microphone says in --voice-turn (espeak-ng, English).
    #[arg(long, value_name = "TEXT", requires = "voice_turn")]
    pub speech: Option<String>,

    /// With --voice-turn: the user speaks again over the reply (the microphone repeats
    /// itself) and the page stops the reply; the table adds interrupt_ms.
    #[arg(long, requires = "voice_turn")]
    pub barge_in: bool,

    /// With --url: add the probe to the page before its own scripts (WebDriver BiDi
    /// `script.addPreloadScript`, else the DevTools protocol), so a page that does not
    /// embed it is measured as shipped, whatever its stream's transport. The runner
    /// types the prompt, submits it and finds the stream and the reply (docs/run.md).
    #[arg(long)]
    pub inject: bool,

    /// With --inject: how the probe is added: bidi (WebDriver BiDi
    /// `script.addPreloadScript`), devtools (Chromium's
    /// `Page.addScriptToEvaluateOnNewDocument`), or auto (BiDi where the session has it,
    /// else the DevTools protocol).
    #[arg(long, value_enum, default_value = "auto", requires = "inject")]
    pub inject_via: crate::run_cmd::InjectVia,

    /// With --inject: measure only requests whose URL contains this text (or matches
    /// /a regular expression/), and take the first one after the submit as the stream.
    #[arg(long = "match", value_name = "URL_PATTERN", requires = "inject")]
    pub match_url: Option<String>,

    /// With --inject: the reply is the element matching this CSS selector (nearest
    /// ancestor-or-self of the text that grows), not the one found by its growth.
    #[arg(long, value_name = "CSS", requires = "inject")]
    pub reply: Option<String>,

    /// With --inject: type the prompt into this element (default: the first visible
    /// textarea, text input or contenteditable element).
    #[arg(long = "type", value_name = "CSS", requires = "inject")]
    pub type_into: Option<String>,

    /// With --inject: click this element to send (default: press Enter in the prompt's
    /// element).
    #[arg(long, value_name = "CSS", requires = "inject")]
    pub submit: Option<String>,

    /// With --inject: a TOML flow file, the steps of a conversation (open, type, submit,
    /// wait for the reply, type the next prompt, …); every turn is measured.
    #[arg(long, value_name = "FILE", requires = "inject")]
    pub flow: Option<PathBuf>,
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

    /// Serve every response with COOP same-origin and COEP require-corp, so the lab page
    /// is cross-origin isolated and its clock steps 5 µs instead of 100 µs (Chromium).
    #[arg(long)]
    pub cross_origin_isolated: bool,

    /// Requests in flight at /sim and /proxy (a stream counts until its body ends); more
    /// get 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = crate::serve::inflight::DEFAULT_MAX_CONCURRENT,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_concurrent: u32,

    /// How long a request body may go without a byte, from its headers to its first byte
    /// and between two, before the request fails (400): a client that stops mid-body
    /// would otherwise hold its connection, and at /sim and /proxy one of the
    /// --max-concurrent places, for as long as it stays connected.
    #[arg(long, value_name = "MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub body_timeout_ms: u64,

    /// Collect the probe's beacons and run reports at POST /collect into this SQLite
    /// file (created if missing), and answer /field/… queries over it (docs/field.md).
    #[arg(long, value_name = "FILE.db")]
    pub collect: Option<PathBuf>,

    /// An origin besides this server's own that may post to /collect and read /field/…,
    /// e.g. https://app.example.com (repeatable).
    #[arg(long, value_name = "ORIGIN", requires = "collect")]
    pub collect_origin: Vec<String>,

    /// A host name the collector answers besides loopback names and IP addresses, e.g.
    /// collector.example.com (repeatable; a guard against DNS rebinding).
    #[arg(long, value_name = "HOST", requires = "collect")]
    pub collect_host: Vec<String>,

    /// Remove collected runs older than this many days, at startup and hourly (0 keeps
    /// them).
    #[arg(long, value_name = "DAYS", default_value_t = 30, requires = "collect")]
    pub collect_retention_days: u32,

    /// POST /collect requests per second per client address, after the burst.
    #[arg(
        long,
        value_name = "PER_S",
        default_value_t = 10.0,
        requires = "collect"
    )]
    pub collect_rate: f64,

    /// POST /collect requests a client may send at once before the rate applies.
    #[arg(long, value_name = "N", default_value_t = 60, requires = "collect")]
    pub collect_burst: u32,
}

#[derive(Debug, Args)]
pub struct FieldArgs {
    /// The collector's SQLite file.
    pub file: PathBuf,

    /// One metric (e.g. ttft_visible_ms, gap.first_token_ms); default: every metric with
    /// values.
    #[arg(long)]
    pub metric: Option<String>,

    /// Group by a dimension: label, target, page_path, engine, engine_version, outcome,
    /// failure_class, http_status, paint_method, cross_origin_isolated, hidden, dialect,
    /// sample_rate, source.
    #[arg(long, value_name = "DIM")]
    pub by: Option<String>,

    /// Only runs of the last DURATION (30m, 24h, 7d, 2w), by the run's time.
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,

    /// Only runs whose dimension has this value, DIM=VALUE (empty: absent); repeatable.
    #[arg(long = "where", value_name = "DIM=VALUE")]
    pub filters: Vec<String>,

    /// Print the summary as JSON (the document GET /field/summary answers).
    #[arg(long)]
    pub json: bool,
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

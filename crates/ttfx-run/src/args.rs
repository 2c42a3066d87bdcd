//! `ttfx run`'s options (the binary's command line embeds them) and the value types of
//! its choices; they depend on no other module of the runner.

use std::path::PathBuf;

use clap::Args;

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

    /// Streams one page opens at once, 1..=16 (default 1): the runner page's request is
    /// sent N times together, each its own run, so the browser's own limits (HTTP/1.1's
    /// six connections per host) show in `request_queued_ms` (docs/run.md).
    #[arg(long, value_name = "N")]
    pub page_streams: Option<usize>,

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

    /// Write the report as one self-contained HTML page here (no network: styles and
    /// charts inline): waterfalls, percentiles with the budgets, the client/server gap.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write a Markdown summary here (budgets, outcomes, p50/p90/p99; no links), e.g.
    /// $GITHUB_STEP_SUMMARY.
    #[arg(long, value_name = "FILE")]
    pub summary_md: Option<PathBuf>,

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
    pub browser: Browser,

    /// The WebDriver server to start (default $CHROMEDRIVER / $GECKODRIVER /
    /// $WEBKITWEBDRIVER, else the driver on the PATH).
    #[arg(long, alias = "chromedriver", value_name = "PATH")]
    pub driver: Option<PathBuf>,

    /// The built probe package (default target/probe-pkg, from `cargo xtask probe-pkg`);
    /// with --inject, its inject.js replaces the bundle built into ttfx.
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
    pub inject_via: InjectVia,

    /// With --inject: measure only requests whose URL contains this text (a path as
    /// typed: /v1/chat/completions), or with re: matches an EcmaScript pattern
    /// (re:/v1/(chat|responses) or re:/completions$/i); take the first one after the
    /// submit as the stream.
    #[arg(long = "match", value_name = "TEXT|re:PATTERN", requires = "inject")]
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

    /// Measure while `ttfx load` drives every endpoint target in the background:
    /// rate=R (Poisson arrivals, requests per second) or concurrency=C (streams at
    /// once). The browsers' runs are not counted as load; the load is not counted as the
    /// user's wait (docs/load.md).
    #[arg(long, value_name = "rate=R|concurrency=C", conflicts_with = "sweep")]
    pub under_load: Option<String>,

    /// Step through load levels, e.g. concurrency=1,2,4,8,16 or rate=1,5,10,20: at each
    /// step the load warms up, then the browsers make their --runs while it goes on;
    /// the table prints per step the load's figures beside the browsers'.
    #[arg(long, value_name = "rate=R1,R2,…|concurrency=C1,C2,…")]
    pub sweep: Option<String>,

    /// Seconds of load before each step's browser runs (default 3).
    #[arg(long, value_name = "SECONDS")]
    pub step_warmup_s: Option<f64>,

    /// Seconds each step's load runs after its warm-up, at least (default 15); it goes
    /// on until the step's browser runs end.
    #[arg(long, value_name = "SECONDS")]
    pub step_duration_s: Option<f64>,
}

/// The browser engines `ttfx run` drives, each through its own WebDriver server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Browser {
    /// Headless Chromium through chromedriver (with DevTools ground truth).
    Chromium,
    /// Headless Firefox through geckodriver.
    Firefox,
    /// WebKitGTK's MiniBrowser through WebKitWebDriver.
    Webkit,
}

/// How the preload script is registered (`--inject-via`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InjectVia {
    /// WebDriver BiDi where the session has a socket, else the DevTools protocol.
    Auto,
    /// WebDriver BiDi `script.addPreloadScript` (Chromium, Firefox).
    Bidi,
    /// The DevTools protocol's `Page.addScriptToEvaluateOnNewDocument` (Chromium).
    Devtools,
}

//! What `ttfx run` measures: targets, prompts, counts, budgets and browser flags, from
//! the command line and an optional TOML scenario file (flags win over the file).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use ttfx_core::ChatApi;
use ttfx_core::chat_api::UnknownChatApi;
use ttfx_core::decode::DialectKind;
use ttfx_core::target::{Target, TargetError, is_http};

use super::budget::{BudgetError, RunBudget};
use super::flow::FlowError;
use super::site::SiteError;
use crate::RunArgs;
use ttfx_proxy::upstream::Upstreams;
use ttfx_serve::ConfigError;

/// Why the command line and scenario file make no scenario: found before a browser
/// starts. Each text carries its cause (no `source` chain, so a `{:#}` print says it
/// once); another crate's or module's error is wrapped whole.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario {}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// Not TOML, or not a scenario's keys: toml's message.
    #[error("scenario {}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("--api: {0}")]
    Api(UnknownChatApi),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("target `{text}`: no upstream `{name}` in the config (configured: {configured})")]
    UnknownUpstream {
        text: String,
        name: String,
        /// The configured upstreams' names, or `none`.
        configured: String,
    },
    #[error("give --url or --target, not both")]
    UrlAndTarget,
    #[error("--against names the same target as --target (`{0}`)")]
    SameTarget(String),
    #[error("--runs must be at least 1")]
    NoRuns,
    #[error("--concurrency must be 1..=32 (one browser session each)")]
    Concurrency,
    #[error("--page-streams must be 1..={MAX_PAGE_STREAMS} (streams one page opens at once)")]
    PageStreams,
    #[error(
        "--page-streams drives the runner's page: not with {0} (a page's own requests, \
         inject mode and voice turns are one at a time)"
    )]
    PageStreamsWith(&'static str),
    #[error("--timeout-s must be in (0, 3600]")]
    Timeout,
    #[error(transparent)]
    Budget(#[from] BudgetError),
    #[error("`speech` and `barge_in` in the scenario need `voice_turn = true`")]
    TurnKeysWithoutTurn,
    #[error(
        "--voice-turn needs Chromium or Firefox: WebKitGTK's AudioContext stays \
         suspended in a driven session, so its detector would never hear the \
         microphone"
    )]
    VoiceTurnOnWebkit,
    #[error(
        "--voice-turn needs sim/PROFILE targets (their STT is \
         /sim/PROFILE/v1/audio/transcriptions); `{0}` has none"
    )]
    NoStt(String),
    #[error("--speech must be 1 to {MAX_SPEECH_CHARS} characters")]
    SpeechLength,
    #[error(
        "--voice needs sim/PROFILE targets (their TTS is /sim/PROFILE/v1/audio/speech); \
         `{0}` has none"
    )]
    NoTts(String),
    #[error("{}", super::inject::WEBKIT_REFUSAL)]
    InjectOnWebkit,
    #[error(
        "--inject measures the page's own voice, if any: --voice and --voice-turn drive the runner's page"
    )]
    InjectWithVoice,
    #[error(transparent)]
    Match(#[from] super::url_match::MatchError),
    #[error("give --type and --submit in the flow file's steps, not beside --flow")]
    FlowBesideTyping,
    #[error("--inject measures a page: give it with --url URL")]
    InjectNeedsPage,
    #[error("--inject compares two pages: give --against a page's URL")]
    InjectAgainstNeedsPage,
    #[error(transparent)]
    Flow(#[from] FlowError),
    #[error(
        "flow {}: with --against, a flow may not `open` a page: each \
         page's own URL opens it",
        path.display()
    )]
    FlowOpensAPage { path: PathBuf },
    #[error(transparent)]
    Load(#[from] super::load_level::LoadLevelError),
    #[error(
        "--under-load and --sweep drive an endpoint (sim/, proxy/, http(s)://): `{0}` is a \
         page, whose requests are the page's own"
    )]
    LoadOnAPage(String),
    #[error("--under-load and --sweep measure the runner's page: not with --inject")]
    LoadWithInject,
    /// `--listen` and `--public-url` (boxed: the site's error is the largest).
    #[error(transparent)]
    Exposure(Box<SiteError>),
}

impl From<SiteError> for ScenarioError {
    fn from(e: SiteError) -> ScenarioError {
        ScenarioError::Exposure(Box::new(e))
    }
}

/// The scenario file: every key optional, unknown keys refused (a typo must not be
/// silently ignored in a CI gate).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    target: Option<String>,
    against: Option<String>,
    api: Option<String>,
    api_path: Option<String>,
    prompts: Option<Vec<String>>,
    runs: Option<usize>,
    concurrency: Option<usize>,
    page_streams: Option<usize>,
    warmup: Option<usize>,
    #[serde(default)]
    budgets: Vec<String>,
    #[serde(default)]
    browser_args: Vec<String>,
    timeout_s: Option<f64>,
    config: Option<PathBuf>,
    voice: Option<bool>,
    voice_turn: Option<bool>,
    speech: Option<String>,
    barge_in: Option<bool>,
}

/// One thing to measure, as the runner's browser meets it: a target written in the
/// grammar of [`ttfx_core::target`], resolved to the endpoint its page calls (with the
/// API, path and dialect from the flags and the config's upstream) or the user's page.
#[derive(Debug, Clone, PartialEq)]
pub enum RunTarget {
    /// A streaming endpoint the runner's own page calls: `url` is same-origin (`/sim/…`,
    /// `/proxy/…`) or absolute; `api` gives the request body and the reply's dialect.
    Endpoint {
        label: String,
        url: String,
        api: ChatApi,
        /// The reply's dialect when the target's upstream names one (a preset's);
        /// otherwise the probe reads the stream as its content type and first frames say.
        dialect: Option<DialectKind>,
    },
    /// The user's own page, which embeds the probe; the runner calls
    /// `window.chat.send(prompt)` when the page has it and collects `window.__ttfx`.
    Page { label: String, url: String },
}

impl RunTarget {
    /// A target in the grammar of [`ttfx_core::target`]: `sim/PROFILE[?overrides]`,
    /// `proxy/UPSTREAM[?query]` (the runner's own server; the API path is appended), an
    /// absolute `http(s)://` endpoint URL, or `page:URL`.
    ///
    /// The API is `api` when given, else the one whose path ends the endpoint's URL
    /// (`--api-path v1/messages` is Anthropic Messages), else OpenAI Chat. The path
    /// appended to sim/ and proxy/ targets is `api_path` when given, else the API's own.
    #[cfg(test)]
    pub fn parse(
        text: &str,
        api: Option<ChatApi>,
        api_path: Option<&str>,
    ) -> Result<RunTarget, ScenarioError> {
        RunTarget::parse_with(text, api, api_path, None)
    }

    /// As [`RunTarget::parse`]; a `proxy/UPSTREAM` target must name one of `upstreams` (the
    /// runner's config) when given, and speaks that upstream's API at its path, in its
    /// dialect, unless `api` or `api_path` say otherwise.
    pub fn parse_with(
        text: &str,
        api: Option<ChatApi>,
        api_path: Option<&str>,
        upstreams: Option<&Upstreams>,
    ) -> Result<RunTarget, ScenarioError> {
        let api_of = |url: &str| {
            api.or_else(|| ChatApi::from_path(url))
                .unwrap_or(ChatApi::OpenAiChat)
        };
        let written = Target::parse(text)?;
        let label = written.label();
        let upstream = match &written {
            Target::Page { url } => {
                return Ok(RunTarget::Page {
                    label,
                    url: url.clone(),
                });
            }
            Target::Endpoint { url } => {
                return Ok(RunTarget::Endpoint {
                    label,
                    url: url.clone(),
                    api: api_of(url),
                    dialect: None,
                });
            }
            Target::Proxy { upstream, .. } => Some(upstream.as_str()),
            Target::Sim { .. } => None,
        };
        let chat = match (upstream, upstreams) {
            (Some(name), Some(ups)) => match ups.get(name) {
                Some(up) => up.chat.clone(),
                None => {
                    return Err(ScenarioError::UnknownUpstream {
                        text: text.trim().to_owned(),
                        name: name.to_owned(),
                        configured: match ups.names() {
                            n if n.is_empty() => "none".to_owned(),
                            n => n.join(", "),
                        },
                    });
                }
            },
            _ => None,
        };
        // The upstream's own endpoint, unless the flags name another API or path.
        let chat = chat.filter(|c| api.is_none_or(|a| a == c.api) && api_path.is_none());
        let api = api.or(chat.as_ref().map(|c| c.api));
        let api_path = api_path
            .or(chat.as_ref().map(|c| c.path.as_str()))
            .unwrap_or_else(|| api.unwrap_or(ChatApi::OpenAiChat).path());
        let url = written.endpoint_url(api_path).unwrap_or_default();
        Ok(RunTarget::Endpoint {
            label,
            api: api.unwrap_or_else(|| api_of(&url)),
            dialect: chat.map(|c| c.dialect),
            url,
        })
    }

    pub fn label(&self) -> &str {
        match self {
            RunTarget::Endpoint { label, .. } | RunTarget::Page { label, .. } => label,
        }
    }

    pub fn is_page(&self) -> bool {
        matches!(self, RunTarget::Page { .. })
    }

    /// The simulator's TTS for a `sim/PROFILE` target, with the target's overrides
    /// (`ttfa_ms`, `rtf`, `seed`, … apply to it too); `None` for every other target.
    pub fn tts_url(&self) -> Option<String> {
        self.written_sim()?.tts_url()
    }

    /// The simulator's STT for a `sim/PROFILE` target (its overrides kept: the STT
    /// reads its own keys, `stt_first_partial_ms`, …, and ignores the LLM's).
    pub fn stt_url(&self) -> Option<String> {
        self.written_sim()?.stt_url()
    }

    /// A `/sim/PROFILE/…` endpoint as the target grammar's `sim/PROFILE?overrides`.
    fn written_sim(&self) -> Option<Target> {
        let RunTarget::Endpoint { url, .. } = self else {
            return None;
        };
        let rest = url.strip_prefix("/sim/")?;
        let (route, query) = rest.split_once('?').unwrap_or((rest, ""));
        let profile = route.split('/').next()?;
        Target::sim(profile, query).ok()
    }
}

/// Everything one `ttfx run` does.
#[derive(Debug)]
pub struct Scenario {
    /// One target, or two (`--against`), measured interleaved.
    pub targets: Vec<RunTarget>,
    pub prompts: Vec<String>,
    pub runs: usize,
    pub concurrency: usize,
    /// Streams each page opens at once (`--page-streams`, 1 unless given).
    pub page_streams: usize,
    pub warmup: usize,
    pub budgets: Vec<RunBudget>,
    pub browser_args: Vec<String>,
    pub timeout: Duration,
    /// `ttfx serve --config` for the runner's own server (proxy upstreams, profiles).
    pub config: Option<PathBuf>,
    /// Voice turns: each target's TTS URL (`RunTarget::tts_url`), checked to exist.
    pub voice: bool,
    /// Voice-to-voice turns: a fake microphone speaks before each request.
    pub turn: Option<TurnScenario>,
    /// Where the runner's server listens and the URL the browser loads it by.
    pub exposure: super::site::Exposure,
    /// Inject mode: the probe goes into a page that does not embed it.
    pub inject: Option<super::inject::InjectScenario>,
    /// `--under-load` / `--sweep`: the load the browsers measure under, step by step.
    pub load: Option<super::load_level::LoadPlan>,
}

/// What a voice-to-voice turn says and does.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnScenario {
    /// What the fake microphone says (espeak-ng).
    pub speech: String,
    /// The user speaks again over the reply.
    pub barge_in: bool,
}

const DEFAULT_SPEECH: &str = "What is the weather like in Paris today?";
/// Longest --speech: a turn waits one loop of the file at most, and a minute of speech
/// would make each run a minute long.
const MAX_SPEECH_CHARS: usize = 300;

const DEFAULT_PROMPT: &str = "Why does streaming feel fast?";

impl Scenario {
    /// The scenario of a command line and its scenario file. Each step below checks its
    /// own inputs, in the order a user reads the options, so the first problem found is
    /// the one reported.
    pub fn from_args(args: &RunArgs) -> Result<Scenario, ScenarioError> {
        let file = match &args.scenario {
            Some(path) => read_file(path)?,
            None => ScenarioFile::default(),
        };
        let api = chat_api(args, &file)?;
        let target_text = target_text(args, &file)?;
        let config = args.config.clone().or_else(|| file.config.clone());
        // The runner's server loads the same file; read here, a proxy target learns its
        // upstream's API, and a bad file or an unknown upstream stops the run before any
        // browser starts.
        let upstreams = match &config {
            Some(path) => Some(ttfx_serve::config::load(path)?.upstreams),
            None => None,
        };
        let targets = targets(args, &file, &target_text, api, upstreams.as_ref())?;
        let prompts = prompts(args, &file);
        let (runs, concurrency) = run_counts(args, &file)?;
        let timeout = timeout(args, &file)?;
        let budgets = budgets(args, &file)?;
        let turn = turn(args, &file, &targets)?;
        let voice = voice(args, &file, turn.is_some(), &targets)?;
        let mut browser_args = file.browser_args.clone();
        browser_args.extend(args.browser_arg.iter().cloned());
        let inject = if args.inject {
            Some(inject_scenario(args, &targets, voice, &prompts[0])?)
        } else {
            None
        };
        let load = load_plan(args, &targets)?;
        let page_streams = page_streams(args, &file, &targets, voice || turn.is_some())?;
        Ok(Scenario {
            targets,
            prompts,
            runs,
            concurrency,
            page_streams,
            warmup: args.warmup.or(file.warmup).unwrap_or(1),
            budgets,
            browser_args,
            timeout,
            config,
            voice,
            turn,
            exposure: super::site::Exposure::from_args(args.listen, args.public_url.as_deref())?,
            inject,
            load,
        })
    }
}

/// `--under-load` / `--sweep` with their step times; the load drives endpoints only.
fn load_plan(
    args: &RunArgs,
    targets: &[RunTarget],
) -> Result<Option<super::load_level::LoadPlan>, ScenarioError> {
    let plan = super::load_level::plan(
        args.under_load.as_deref(),
        args.sweep.as_deref(),
        args.step_warmup_s,
        args.step_duration_s,
    )?;
    if plan.is_some() {
        if args.inject {
            return Err(ScenarioError::LoadWithInject);
        }
        if let Some(page) = targets.iter().find(|t| t.is_page()) {
            return Err(ScenarioError::LoadOnAPage(page.label().to_owned()));
        }
    }
    Ok(plan)
}

/// `--api` (or the file's `api`), parsed.
fn chat_api(args: &RunArgs, file: &ScenarioFile) -> Result<Option<ChatApi>, ScenarioError> {
    match args.api.as_deref().or(file.api.as_deref()) {
        Some(name) => Ok(Some(name.parse::<ChatApi>().map_err(ScenarioError::Api)?)),
        None => Ok(None),
    }
}

/// The target under test as written: `--url` is a page, `--target` any target, else the
/// file's, else the default simulator.
fn target_text(args: &RunArgs, file: &ScenarioFile) -> Result<String, ScenarioError> {
    Ok(match (&args.url, &args.target) {
        (Some(_), Some(_)) => return Err(ScenarioError::UrlAndTarget),
        (Some(url), None) => format!("page:{url}"),
        (None, Some(t)) => t.clone(),
        (None, None) => file
            .target
            .clone()
            .unwrap_or_else(|| "sim/default".to_owned()),
    })
}

/// The target under test, then the one `--against` names, if any.
fn targets(
    args: &RunArgs,
    file: &ScenarioFile,
    target_text: &str,
    api: Option<ChatApi>,
    upstreams: Option<&Upstreams>,
) -> Result<Vec<RunTarget>, ScenarioError> {
    let api_path = args.api_path.as_deref().or(file.api_path.as_deref());
    let mut targets = vec![RunTarget::parse_with(
        target_text,
        api,
        api_path,
        upstreams,
    )?];
    if let Some(against) = args.against.clone().or_else(|| file.against.clone()) {
        // In inject mode both targets are pages: a plain URL names one, as --url does.
        let against = if args.inject && is_http(&against) {
            format!("page:{against}")
        } else {
            against
        };
        let b = RunTarget::parse_with(&against, api, api_path, upstreams)?;
        if b.label() == targets[0].label() {
            return Err(ScenarioError::SameTarget(b.label().to_owned()));
        }
        targets.push(b);
    }
    Ok(targets)
}

/// `--prompt`s, else the file's (when it lists any), else one default prompt: never
/// empty, the runs cycle through them.
fn prompts(args: &RunArgs, file: &ScenarioFile) -> Vec<String> {
    if !args.prompt.is_empty() {
        args.prompt.clone()
    } else {
        file.prompts
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| vec![DEFAULT_PROMPT.to_owned()])
    }
}

/// How many runs per target, and how many browser sessions make them.
fn run_counts(args: &RunArgs, file: &ScenarioFile) -> Result<(usize, usize), ScenarioError> {
    let runs = args.runs.or(file.runs).unwrap_or(10);
    let concurrency = args.concurrency.or(file.concurrency).unwrap_or(1);
    if runs == 0 {
        return Err(ScenarioError::NoRuns);
    }
    if concurrency == 0 || concurrency > 32 {
        return Err(ScenarioError::Concurrency);
    }
    Ok((runs, concurrency))
}

/// Most streams one page opens at once: past the six connections HTTP/1.1 gives a host,
/// as many again wait; 16 shows that twice over without a page of hundreds of replies.
pub const MAX_PAGE_STREAMS: usize = 16;

/// `--page-streams` (or the file's `page_streams`): how many of the runner page's
/// streams go out at once. Only the runner's own page sends them: a user's page sends
/// its own requests, inject mode follows a flow, and a voice turn has one microphone.
fn page_streams(
    args: &RunArgs,
    file: &ScenarioFile,
    targets: &[RunTarget],
    voice: bool,
) -> Result<usize, ScenarioError> {
    let n = args.page_streams.or(file.page_streams).unwrap_or(1);
    if !(1..=MAX_PAGE_STREAMS).contains(&n) {
        return Err(ScenarioError::PageStreams);
    }
    if n > 1 {
        if args.inject {
            return Err(ScenarioError::PageStreamsWith("--inject"));
        }
        if targets.iter().any(|t| t.is_page()) {
            return Err(ScenarioError::PageStreamsWith("a page target"));
        }
        if voice {
            return Err(ScenarioError::PageStreamsWith("--voice or --voice-turn"));
        }
    }
    Ok(n)
}

/// How long one run may take.
fn timeout(args: &RunArgs, file: &ScenarioFile) -> Result<Duration, ScenarioError> {
    let timeout_s = args.timeout_s.or(file.timeout_s).unwrap_or(60.0);
    if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= 3600.0) {
        return Err(ScenarioError::Timeout);
    }
    Ok(Duration::from_secs_f64(timeout_s))
}

/// Budgets from the file and from flags both apply: the file holds the team's gate, a
/// flag adds one for this run.
fn budgets(args: &RunArgs, file: &ScenarioFile) -> Result<Vec<RunBudget>, BudgetError> {
    file.budgets
        .iter()
        .chain(&args.budget)
        .map(|b| RunBudget::parse(b))
        .collect()
}

/// Voice-to-voice turns, when asked for: what the microphone says, on a browser and
/// targets that can hear it. Without them the file may not set a turn's keys.
fn turn(
    args: &RunArgs,
    file: &ScenarioFile,
    targets: &[RunTarget],
) -> Result<Option<TurnScenario>, ScenarioError> {
    if !(args.voice_turn || file.voice_turn.unwrap_or(false)) {
        if file.barge_in.unwrap_or(false) || file.speech.is_some() {
            return Err(ScenarioError::TurnKeysWithoutTurn);
        }
        return Ok(None);
    }
    if args.browser == crate::Browser::Webkit {
        return Err(ScenarioError::VoiceTurnOnWebkit);
    }
    if let Some(t) = targets.iter().find(|t| t.stt_url().is_none()) {
        return Err(ScenarioError::NoStt(t.label().to_owned()));
    }
    let speech = args
        .speech
        .clone()
        .or_else(|| file.speech.clone())
        .unwrap_or_else(|| DEFAULT_SPEECH.to_owned());
    if speech.trim().is_empty() || speech.chars().count() > MAX_SPEECH_CHARS {
        return Err(ScenarioError::SpeechLength);
    }
    Ok(Some(TurnScenario {
        speech,
        barge_in: args.barge_in || file.barge_in.unwrap_or(false),
    }))
}

/// Whether the runs speak their replies (a voice turn does), on targets with a TTS.
fn voice(
    args: &RunArgs,
    file: &ScenarioFile,
    voice_turn: bool,
    targets: &[RunTarget],
) -> Result<bool, ScenarioError> {
    let voice = args.voice || file.voice.unwrap_or(false) || voice_turn;
    if voice && let Some(t) = targets.iter().find(|t| t.tts_url().is_none()) {
        return Err(ScenarioError::NoTts(t.label().to_owned()));
    }
    Ok(voice)
}

/// Inject mode's scenario: the targets must be pages, on a browser that can preload the
/// probe, without the runner page's voice.
fn inject_scenario(
    args: &RunArgs,
    targets: &[RunTarget],
    voice: bool,
    prompt: &str,
) -> Result<super::inject::InjectScenario, ScenarioError> {
    let urls = page_urls(targets)?;
    if args.browser == crate::Browser::Webkit {
        return Err(ScenarioError::InjectOnWebkit);
    }
    if voice {
        return Err(ScenarioError::InjectWithVoice);
    }
    if args.flow.is_some() && (args.type_into.is_some() || args.submit.is_some()) {
        return Err(ScenarioError::FlowBesideTyping);
    }
    Ok(super::inject::InjectScenario {
        via: args.inject_via,
        typed_prompt: args.flow.is_none(),
        flows: page_flows(args, &urls, prompt)?,
        match_url: args
            .match_url
            .as_deref()
            .map(super::url_match::UrlMatch::parse)
            .transpose()?,
        bundle: match &args.probe_pkg {
            Some(dir) => super::inject::BundleSource::Package(dir.clone()),
            None => super::inject::BundleSource::BuiltIn,
        },
        reply: args.reply.clone().filter(|r| !r.is_empty()),
    })
}

/// Each target's page URL; inject mode measures nothing else.
fn page_urls(targets: &[RunTarget]) -> Result<Vec<String>, ScenarioError> {
    let mut urls = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        match target {
            RunTarget::Page { url, .. } => urls.push(url.clone()),
            _ if i == 0 => return Err(ScenarioError::InjectNeedsPage),
            _ => return Err(ScenarioError::InjectAgainstNeedsPage),
        }
    }
    Ok(urls)
}

/// Each page gets its own flow: the same steps (`--flow`'s, or `--type`/`--submit`'s
/// one turn), opened at its own URL.
fn page_flows(
    args: &RunArgs,
    urls: &[String],
    prompt: &str,
) -> Result<Vec<super::flow::Flow>, ScenarioError> {
    let mut flows = Vec::new();
    for url in urls {
        flows.push(match &args.flow {
            Some(path) => {
                let flow = super::flow::Flow::read(path, url)?;
                if urls.len() > 1 && !flow.opens_only(url) {
                    return Err(ScenarioError::FlowOpensAPage { path: path.clone() });
                }
                flow
            }
            None => super::flow::Flow::single(
                url,
                prompt,
                args.type_into.as_deref(),
                args.submit.as_deref(),
            ),
        });
    }
    Ok(flows)
}

fn read_file(path: &Path) -> Result<ScenarioFile, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|cause| ScenarioError::Read {
        path: path.to_owned(),
        cause,
    })?;
    // toml's message spans lines (it quotes the source); one line is enough here.
    toml::from_str(&text).map_err(|e| ScenarioError::Invalid {
        path: path.to_owned(),
        message: e.message().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ttfx run ARGS`, parsed as the command line is, then made a scenario.
    fn scenario_of(args: &[&str]) -> anyhow::Result<Scenario> {
        use clap::Parser;
        /// `ttfx run`'s options alone, as the binary's command line embeds them.
        #[derive(Parser)]
        struct Run {
            #[command(flatten)]
            args: RunArgs,
        }
        let run = Run::try_parse_from(["ttfx run"].iter().chain(args))?;
        Ok(Scenario::from_args(&run.args)?)
    }

    #[test]
    fn inject_mode_compares_two_pages_each_with_its_own_flow() {
        let s = scenario_of(&[
            "--url",
            "http://a.test/chat",
            "--against",
            "http://b.test/",
            "--inject",
        ])
        .unwrap();
        assert!(s.targets.iter().all(RunTarget::is_page), "{:?}", s.targets);
        let flows = &s.inject.as_ref().unwrap().flows;
        assert_eq!(flows.len(), 2);
        assert!(flows[0].opens_only("http://a.test/chat"), "{flows:?}");
        assert!(flows[1].opens_only("http://b.test/"), "{flows:?}");

        // A flow file without `open` steps serves both pages; one that opens a page
        // would measure that page twice.
        let dir = tempfile::tempdir().unwrap();
        let steps = dir.path().join("steps.toml");
        std::fs::write(
            &steps,
            "[[step]]\ntype = \"hi\"\n[[step]]\nsubmit = \"enter\"\n[[step]]\nwait = \"reply\"\n",
        )
        .unwrap();
        let with_steps = [
            "--url",
            "http://a.test/chat",
            "--against",
            "http://b.test/",
            "--inject",
            "--flow",
            steps.to_str().unwrap(),
        ];
        let flows = scenario_of(&with_steps).unwrap().inject.unwrap().flows;
        assert!(flows[1].opens_only("http://b.test/"), "{flows:?}");
        let opens = dir.path().join("opens.toml");
        std::fs::write(&opens, "[[step]]\nopen = \"http://a.test/chat\"\n[[step]]\ntype = \"hi\"\n[[step]]\nsubmit = \"enter\"\n[[step]]\nwait = \"reply\"\n").unwrap();
        let mut with_open = with_steps;
        with_open[6] = opens.to_str().unwrap();
        let e = format!("{:#}", scenario_of(&with_open).unwrap_err());
        assert!(
            e.contains("with --against, a flow may not `open` a page"),
            "{e}"
        );

        let e = format!(
            "{:#}",
            scenario_of(&[
                "--url",
                "http://a.test/",
                "--against",
                "sim/default",
                "--inject"
            ])
            .unwrap_err()
        );
        assert!(e.contains("give --against a page's URL"), "{e}");
    }

    #[test]
    fn sim_targets_get_the_api_path_and_keep_their_overrides() {
        let t = RunTarget::parse("sim/default?ttft_ms=300&seed=1", None, None).unwrap();
        assert_eq!(
            t,
            RunTarget::Endpoint {
                label: "sim/default?ttft_ms=300&seed=1".into(),
                url: "/sim/default/v1/chat/completions?ttft_ms=300&seed=1".into(),
                api: ChatApi::OpenAiChat,
                dialect: None,
            }
        );
    }

    #[test]
    fn the_api_comes_from_the_flag_else_from_the_path() {
        let endpoint = |t: RunTarget| match t {
            RunTarget::Endpoint { url, api, .. } => (url, api),
            RunTarget::Page { .. } => panic!("not an endpoint"),
        };
        // --api alone: its own path on sim/ and proxy/ targets.
        let t = RunTarget::parse("proxy/up?x=1", Some(ChatApi::OllamaGenerate), None).unwrap();
        assert_eq!(
            endpoint(t),
            ("/proxy/up/api/generate?x=1".into(), ChatApi::OllamaGenerate)
        );
        // --api-path alone: the API follows from the path.
        let t = RunTarget::parse("sim/default", None, Some("/v1/messages")).unwrap();
        assert_eq!(
            endpoint(t),
            (
                "/sim/default/v1/messages".into(),
                ChatApi::AnthropicMessages
            )
        );
        // Both: a gateway that serves an API at a path of its own.
        let t =
            RunTarget::parse("proxy/gw", Some(ChatApi::AnthropicMessages), Some("chat")).unwrap();
        assert_eq!(
            endpoint(t),
            ("/proxy/gw/chat".into(), ChatApi::AnthropicMessages)
        );
        // An absolute URL says its API by its path; an unknown path is OpenAI Chat.
        let t = RunTarget::parse("http://h:1/api/chat?k=1", None, None).unwrap();
        assert_eq!(endpoint(t).1, ChatApi::OllamaChat);
        let t = RunTarget::parse("http://h:1/gateway", None, None).unwrap();
        assert_eq!(endpoint(t).1, ChatApi::OpenAiChat);
        let file: ScenarioFile = toml::from_str("api = \"llamacpp\"").unwrap();
        assert_eq!(file.api.as_deref(), Some("llamacpp"));
    }

    #[test]
    fn a_proxy_target_speaks_its_upstreams_api_unless_the_flags_say_otherwise() {
        let config = ttfx_serve::config::parse(
            "[upstreams.claude]\npreset = \"anthropic\"\nbase_url = \"http://127.0.0.1:9\"\n\
             [upstreams.plain]\nbase_url = \"http://127.0.0.1:9\"\n",
            Path::new(""),
            |_| None,
        )
        .unwrap();
        let ups = Some(&config.upstreams);
        let t = RunTarget::parse_with("proxy/claude?x=1", None, None, ups).unwrap();
        assert_eq!(
            t,
            RunTarget::Endpoint {
                label: "proxy/claude?x=1".into(),
                url: "/proxy/claude/v1/messages?x=1".into(),
                api: ChatApi::AnthropicMessages,
                dialect: Some(DialectKind::Anthropic),
            }
        );
        // --api names another API: its own path, the dialect from the reply.
        let t =
            RunTarget::parse_with("proxy/claude", Some(ChatApi::OpenAiChat), None, ups).unwrap();
        let RunTarget::Endpoint { url, dialect, .. } = t else {
            panic!("not an endpoint")
        };
        assert_eq!(
            (url.as_str(), dialect),
            ("/proxy/claude/v1/chat/completions", None)
        );
        // An upstream without a preset or api: as before.
        let t = RunTarget::parse_with("proxy/plain", None, None, ups).unwrap();
        assert!(matches!(
            t,
            RunTarget::Endpoint {
                api: ChatApi::OpenAiChat,
                dialect: None,
                ..
            }
        ));
        let e = RunTarget::parse_with("proxy/nope", None, None, ups)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no upstream `nope`") && e.contains("claude, plain"),
            "{e}"
        );
        // sim/ targets never consult the upstreams.
        assert!(RunTarget::parse_with("sim/nope", None, None, ups).is_ok());
    }

    #[test]
    fn absolute_targets_lose_their_query_in_the_label() {
        let t = RunTarget::parse("http://h/v1/chat?key=secret", None, Some("x")).unwrap();
        assert_eq!(t.label(), "http://h/v1/chat");
        let p = RunTarget::parse("page:http://h/app?key=secret", None, Some("x")).unwrap();
        assert!(p.is_page());
        assert_eq!(p.label(), "http://h/app");
    }

    #[test]
    fn bad_targets_are_refused_with_the_forms_allowed() {
        for bad in ["", "sim", "sim/", "foo/bar", "sim/a/b", "page:ftp://x"] {
            assert!(RunTarget::parse(bad, None, Some("v1")).is_err(), "{bad}");
        }
    }

    #[test]
    fn sim_targets_have_a_tts_url_with_their_overrides_and_others_none() {
        let t = RunTarget::parse("sim/default?ttfa_ms=150&seed=1", None, None).unwrap();
        assert_eq!(
            t.tts_url().as_deref(),
            Some("/sim/default/v1/audio/speech?ttfa_ms=150&seed=1")
        );
        let plain = RunTarget::parse("sim/fast", None, None).unwrap();
        assert_eq!(
            plain.tts_url().as_deref(),
            Some("/sim/fast/v1/audio/speech")
        );
        for other in ["proxy/up", "http://h/v1/chat", "page:http://h/app"] {
            assert_eq!(
                RunTarget::parse(other, None, Some("v1")).unwrap().tts_url(),
                None,
                "{other}"
            );
        }
        let voice: ScenarioFile = toml::from_str("voice = true").unwrap();
        assert_eq!(voice.voice, Some(true));
    }

    #[test]
    fn sim_targets_have_an_stt_url_and_a_turn_reads_from_the_file() {
        let t = RunTarget::parse("sim/default?stt_final_ms=400&ttft_ms=300", None, None).unwrap();
        assert_eq!(
            t.stt_url().as_deref(),
            Some("/sim/default/v1/audio/transcriptions?stt_final_ms=400&ttft_ms=300")
        );
        let proxy = RunTarget::parse("proxy/up", None, Some("v1")).unwrap();
        assert_eq!(proxy.stt_url(), None);
        let file: ScenarioFile =
            toml::from_str("voice_turn = true\nspeech = \"Hello there\"\nbarge_in = true").unwrap();
        assert_eq!(
            (file.voice_turn, file.speech.as_deref(), file.barge_in),
            (Some(true), Some("Hello there"), Some(true))
        );
    }

    #[test]
    fn the_scenario_file_refuses_unknown_keys() {
        let err = toml::from_str::<ScenarioFile>("runz = 3").unwrap_err();
        assert!(err.message().contains("runz"), "{}", err.message());
        let ok: ScenarioFile = toml::from_str("runs = 3\nbudgets = [\"ttft.p90<=800ms\"]").unwrap();
        assert_eq!(ok.runs, Some(3));
    }

    #[test]
    fn a_refusal_says_its_cause_once() {
        use std::error::Error;
        use std::path::Path;
        let e = read_file(Path::new("/nonexistent/s.toml")).unwrap_err();
        assert!(e.source().is_none(), "{e:?}");
        assert!(
            format!("{:#}", anyhow::Error::from(e))
                .starts_with("cannot read scenario /nonexistent/s.toml: No such file"),
        );
        let e = format!("{:#}", scenario_of(&["--api", "soap"]).unwrap_err());
        assert!(e.starts_with("--api: unknown API `soap` (known: "), "{e}");
    }

    #[test]
    fn page_streams_are_1_to_16_and_only_on_the_runner_page() {
        assert_eq!(scenario_of(&[]).unwrap().page_streams, 1);
        let s = scenario_of(&["--page-streams", "8", "--target", "sim/default"]).unwrap();
        assert_eq!(s.page_streams, 8);
        for n in ["0", "17"] {
            let e = format!("{:#}", scenario_of(&["--page-streams", n]).unwrap_err());
            assert!(e.contains("--page-streams must be 1..=16"), "{n}: {e}");
        }
        for (args, what) in [
            (&["--url", "http://a.test/"][..], "a page target"),
            (&["--url", "http://a.test/", "--inject"][..], "--inject"),
            (&["--voice"][..], "--voice or --voice-turn"),
        ] {
            let mut args = args.to_vec();
            args.extend(["--page-streams", "2"]);
            let e = format!("{:#}", scenario_of(&args).unwrap_err());
            assert!(e.contains(&format!("not with {what}")), "{args:?}: {e}");
        }
        // One stream is what every mode does already.
        scenario_of(&["--url", "http://a.test/", "--page-streams", "1"]).unwrap();
    }
}

//! The measuring loop: one browser session per unit of concurrency, each taking the next
//! job from a shared queue. Jobs alternate between targets (A B A B …) so drift of the
//! machine hits both alike. Each session first makes its warm-up runs (excluded).

use std::collections::VecDeque;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use fantoccini::Client;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use ttfx_core::ServerRecord;
use ttfx_core::printable::cut;
use ttfx_core::report::{ReportFile, Run};
use ttfx_hostaudio::SpeechFile;
use ttfx_hostaudio::pulse::PulseMicrophone;
use ttfx_webdriver::sandbox::Sandbox;

use super::driver::{self, Endpoint, EndpointError};
pub use super::ground_truth::GroundTruth;
use super::ground_truth::{self as truth_entry, Job as TruthJob};
use super::inject::REASON_SHOWN_CHARS;
use super::scenario::{RunTarget, Scenario, TurnScenario};
use super::session_truth::SessionTruth;
use super::site;
use crate::RunArgs;
use crate::error::RunError;
use crate::setup_error::SetupError;

pub struct MeasuredRuns {
    /// Per target, in the scenario's order, the measured runs in job order.
    pub runs: Vec<Vec<Run>>,
    pub ground_truth: Vec<GroundTruth>,
    /// The fake microphone's speech (voice turns), whose true length the detector's
    /// speech_start → speech_end is held against.
    pub speech: Option<SpeechTruth>,
    /// Whether Chromium's sandbox was on (`None`: another browser).
    pub sandbox: Option<ttfx_webdriver::sandbox::Sandbox>,
}

/// What the fake microphone said, as the file knows it.
#[derive(Debug, Clone, Serialize)]
pub struct SpeechTruth {
    pub text: String,
    /// The first to the last sample above `TRUTH_THRESHOLD_DBFS` (−50 dBFS peak).
    pub speech_ms: f64,
    /// Silence before and after it in the file, which the microphone loops.
    pub lead_ms: f64,
    pub tail_ms: f64,
}

/// Silence around the fake microphone's speech: a second before it, so the detector
/// hears quiet first; three after it, so a turn (hangover, transcript, LLM, TTS) gets to
/// its first audio before the speech comes round again, where a barge-in interrupts it.
const SPEECH_LEAD_S: f64 = 1.0;
const SPEECH_TAIL_S: f64 = 3.0;

#[derive(Debug, Clone)]
struct Job {
    index: usize,
    target: usize,
    prompt: String,
    request_id: String,
}

/// What every batch of runs shares: the runner's site and server, the fake microphone,
/// the driver. A sweep keeps one for all its steps, so the load generator and the
/// browsers meet the same server.
pub struct Bench {
    /// Held for the server's life: the server serves its folder.
    _site: Option<site::Site>,
    /// The runner's server, `http://HOST:PORT`, when some target uses its page.
    pub base: Option<String>,
    speech: Option<SpeechFile>,
    browser_args: Vec<String>,
    firefox_prefs: Vec<(&'static str, bool)>,
    /// Firefox's microphone, held until the run ends.
    _microphone: Option<PulseMicrophone>,
    preload: Option<String>,
    endpoint: Endpoint,
    /// Batches measured so far: a sweep's steps are batches on one server, whose record
    /// store refuses a request id it has seen (409), so each batch names its own.
    batches: std::sync::atomic::AtomicUsize,
}

impl Bench {
    pub async fn prepare(scenario: &Scenario, args: &RunArgs) -> Result<Bench, RunError> {
        let probe_pkg = args.probe_pkg.clone().unwrap_or_else(default_probe_pkg);
        // The site and server are needed only when some target uses the runner's own page.
        let site = if scenario.targets.iter().any(|t| !t.is_page()) {
            Some(site::Site::runner(&probe_pkg)?)
        } else {
            None
        };
        let base = match &site {
            Some(s) => Some(site::serve(s, scenario.config.as_deref(), &scenario.exposure).await?),
            None => None,
        };
        let speech = speech_file(scenario.turn.as_ref(), site.as_ref())?;
        let BrowserSetup {
            args: browser_args,
            firefox_prefs,
            microphone,
        } = BrowserSetup::new(scenario, args.browser, speech.as_ref())?;
        // Inject mode's preload script, read before a browser starts.
        let preload = match &scenario.inject {
            Some(inject) => Some(super::inject::preload_source(inject)?),
            None => None,
        };
        let endpoint = match &args.webdriver {
            Some(url) => Endpoint::remote(url, args.browser),
            None => Endpoint::local(args.browser, args.driver.clone(), &browser_args),
        }?;
        // A sandbox we turned off is worth a line on stderr; a remote server's own choice is
        // in the report only, so that a failure to reach it stays one clear line.
        if let Some(sandbox @ Sandbox::Off { .. }) = &endpoint.sandbox {
            eprintln!("ttfx run: {}", sandbox.describe());
        }
        if let (Some(user), Some(site)) = (endpoint.run_as(), &site) {
            // The browser, as that account, reads the fake microphone's file from here.
            std::os::unix::fs::chown(&site.dir, Some(user.uid), Some(user.gid))
                .map_err(|cause| SetupError::SiteOwner { cause })?;
        }
        Ok(Bench {
            _site: site,
            base,
            speech,
            browser_args,
            firefox_prefs,
            _microphone: microphone,
            preload,
            endpoint,
            batches: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The scenario's runs, each session opened for them and closed after.
    pub async fn measure(
        &self,
        scenario: &Scenario,
        args: &RunArgs,
    ) -> Result<MeasuredRuns, RunError> {
        let batch = self
            .batches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ids = RequestIds::new(batch);
        let jobs = jobs(scenario, &ids);
        let total = jobs.len();
        let queue = Arc::new(Mutex::new(jobs));
        let progress = progress_bar(total as u64);
        let ctx = Arc::new(Context_::new(
            scenario,
            args.browser,
            self.base.clone(),
            self.browser_args.clone(),
            self.firefox_prefs.clone(),
            self.preload.clone(),
            ids,
        ));
        let mut sessions = Vec::new();
        for w in 0..scenario.concurrency.min(total) {
            let client = open_session(&self.endpoint, &ctx).await?;
            let (ctx, queue, progress) = (ctx.clone(), queue.clone(), progress.clone());
            sessions.push(spawn_session(w, client, ctx, queue, progress));
        }
        let done = join_sessions(sessions, &queue).await;
        progress.finish_and_clear();
        let (runs, ground_truth) =
            by_target(done.map_err(RunError::run_failed)?, scenario.targets.len());
        Ok(MeasuredRuns {
            runs,
            ground_truth,
            sandbox: self.endpoint.sandbox.clone(),
            speech: speech_truth(self.speech.clone(), scenario.turn.as_ref()),
        })
    }
}

pub async fn measure(scenario: &Scenario, args: &RunArgs) -> Result<MeasuredRuns, RunError> {
    Bench::prepare(scenario, args)
        .await?
        .measure(scenario, args)
        .await
}

/// A voice turn's fake microphone: espeak-ng's speech in the site's folder.
fn speech_file(
    turn: Option<&TurnScenario>,
    site: Option<&site::Site>,
) -> Result<Option<SpeechFile>, SetupError> {
    match (turn, site) {
        (Some(turn), Some(site)) => Ok(Some(
            SpeechFile::say(
                &site.dir,
                "speech",
                &turn.speech,
                SPEECH_LEAD_S,
                SPEECH_TAIL_S,
            )
            .map_err(|cause| SetupError::Speech { cause })?,
        )),
        _ => Ok(None),
    }
}

/// How each session's browser starts, and the microphone its page hears.
struct BrowserSetup {
    args: Vec<String>,
    firefox_prefs: Vec<(&'static str, bool)>,
    /// Firefox's microphone, held until the run ends.
    microphone: Option<PulseMicrophone>,
}

impl BrowserSetup {
    /// Chromium plays the speech file from its fake capture device; Firefox's fake
    /// device plays a tone, so its microphone is a PulseAudio null sink the file is
    /// played into.
    fn new(
        scenario: &Scenario,
        browser: driver::Browser,
        speech: Option<&SpeechFile>,
    ) -> Result<BrowserSetup, SetupError> {
        let mut setup = BrowserSetup {
            args: scenario.browser_args.clone(),
            firefox_prefs: Vec::new(),
            microphone: None,
        };
        if let Some(file) = speech {
            match browser {
                driver::Browser::Firefox => {
                    setup.microphone = Some(
                        PulseMicrophone::start(file)
                            .map_err(|cause| SetupError::Microphone { cause })?,
                    );
                    setup.firefox_prefs.extend(SpeechFile::firefox_prefs());
                }
                _ => setup.args.extend(file.chromium_args()),
            }
        }
        Ok(setup)
    }
}

/// Every run to make, in order: the targets alternate within each round (A B A B …),
/// each round with the next prompt.
fn jobs(scenario: &Scenario, ids: &RequestIds) -> VecDeque<Job> {
    (0..scenario.runs)
        .flat_map(|i| (0..scenario.targets.len()).map(move |t| (i, t)))
        .enumerate()
        .map(|(index, (i, target))| Job {
            index,
            target,
            prompt: scenario.prompts[i % scenario.prompts.len()].clone(),
            request_id: ids.run(index),
        })
        .collect()
}

/// The request ids of one batch: `ttfx-run-PID-INDEX` for the first (the index last,
/// where tests read it), `ttfx-run-PID-bN-INDEX` for a sweep's later steps.
#[derive(Debug, Clone)]
struct RequestIds {
    prefix: String,
    warm_prefix: String,
}

impl RequestIds {
    fn new(batch: usize) -> RequestIds {
        let pid = std::process::id();
        let step = if batch == 0 {
            String::new()
        } else {
            format!("-b{batch}")
        };
        RequestIds {
            prefix: format!("ttfx-run-{pid}{step}"),
            warm_prefix: format!("ttfx-warm-{pid}{step}"),
        }
    }

    fn run(&self, index: usize) -> String {
        format!("{}-{index}", self.prefix)
    }

    fn warm(&self, session: usize, target: usize, i: usize) -> String {
        format!("{}-{session}-{target}-{i}", self.warm_prefix)
    }
}

/// A browser session, bounded: a driver whose browser cannot start (no display for
/// WebKitGTK, a grid without free nodes) may otherwise never answer.
async fn open_session(endpoint: &Endpoint, ctx: &Context_) -> Result<Client, EndpointError> {
    // A BiDi socket for inject mode's preload script unless the DevTools protocol is
    // asked for, and for Firefox's ground truth (its network events).
    let bidi = (ctx.preload.is_some()
        && ctx
            .inject
            .as_ref()
            .is_some_and(|i| i.via != super::inject::InjectVia::Devtools))
        || ctx.browser == driver::Browser::Firefox;
    tokio::time::timeout(
        SESSION_LIMIT,
        endpoint.session(&ctx.browser_args, &ctx.firefox_prefs, bidi, ctx.timeout),
    )
    .await
    .map_err(|_| EndpointError::NoSession {
        seconds: SESSION_LIMIT.as_secs(),
        url: ttfx_core::target::without_userinfo(&endpoint.url).into_owned(),
        browser: endpoint.browser.name(),
    })?
}

/// A session's work on a task of its own: inject mode's preload script installed, then
/// jobs from the queue until it is empty; the browser closed after, whatever happened.
fn spawn_session(
    w: usize,
    client: Client,
    ctx: Arc<Context_>,
    queue: Arc<Queue>,
    progress: ProgressBar,
) -> JoinHandle<anyhow::Result<Vec<Done>>> {
    tokio::spawn(async move {
        // Before the preload script: it shares the session's one BiDi connection.
        let truth = SessionTruth::open(&client, ctx.browser).await;
        let result = match &ctx.preload {
            Some(source) => match super::inject::install(
                &client,
                ctx.browser,
                ctx.inject
                    .as_ref()
                    .map_or(super::inject::InjectVia::Auto, |i| i.via),
                source,
                truth.bidi(),
            )
            .await
            {
                // Held while the session works: the preload script may go with it.
                Ok(_injected) => worker(w, &client, &ctx, &truth, &queue, &progress).await,
                Err(e) => Err(e.context("--inject")),
            },
            None => worker(w, &client, &ctx, &truth, &queue, &progress).await,
        };
        // The BiDi connection before the session it belongs to.
        drop(truth);
        let _ = client.close().await;
        result
    })
}

/// Every session's runs, or the first error met.
async fn join_sessions(
    sessions: Vec<JoinHandle<anyhow::Result<Vec<Done>>>>,
    queue: &Queue,
) -> anyhow::Result<Vec<Done>> {
    let mut results = Vec::new();
    let mut first_error = None;
    for handle in sessions {
        match handle.await {
            Ok(Ok(done)) => results.extend(done),
            Ok(Err(e)) => {
                // Stop the other sessions' work: the run cannot be made.
                if let Ok(mut q) = queue.lock() {
                    q.clear();
                }
                first_error.get_or_insert(e);
            }
            Err(e) => {
                first_error.get_or_insert(anyhow::anyhow!("a browser session task failed: {e}"));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(results),
    }
}

/// Per target, in the scenario's order, its runs in job order; and every run's ground
/// truth.
fn by_target(mut done: Vec<Done>, targets: usize) -> (Vec<Vec<Run>>, Vec<GroundTruth>) {
    done.sort_by_key(|(job, _, _)| job.index);
    let mut runs = vec![Vec::new(); targets];
    let mut ground_truth = Vec::new();
    for (job, run, truth) in done {
        runs[job.target].push(run);
        ground_truth.extend(truth);
    }
    (runs, ground_truth)
}

/// What the fake microphone said, in ms as the file holds it.
fn speech_truth(speech: Option<SpeechFile>, turn: Option<&TurnScenario>) -> Option<SpeechTruth> {
    speech.zip(turn).map(|(f, t)| SpeechTruth {
        text: t.speech.clone(),
        speech_ms: f.speech_s() * 1000.0,
        lead_ms: f.speech_start_s * 1000.0,
        tail_ms: (f.period_s - f.speech_end_s) * 1000.0,
    })
}

/// What every session shares (named with a trailing underscore: `Context` is anyhow's).
struct Context_ {
    scenario_targets: Vec<RunTarget>,
    base: Option<String>,
    browser_args: Vec<String>,
    firefox_prefs: Vec<(&'static str, bool)>,
    timeout: Duration,
    warmup: usize,
    /// Streams the runner page opens at once (`--page-streams`).
    page_streams: usize,
    prompt: String,
    voice: bool,
    turn: Option<TurnScenario>,
    inject: Option<super::inject::InjectScenario>,
    /// Inject mode's preload script (the bundle with its configuration).
    preload: Option<String>,
    /// Inject mode: the client that reads `ttfx serve`'s record of a page's request
    /// (record_join.rs); `None` outside inject mode, or when it could not be made (the
    /// runs then say so).
    records: Option<super::record_join::RecordClient>,
    browser: driver::Browser,
    ids: RequestIds,
}

impl Context_ {
    fn new(
        scenario: &Scenario,
        browser: driver::Browser,
        base: Option<String>,
        browser_args: Vec<String>,
        firefox_prefs: Vec<(&'static str, bool)>,
        preload: Option<String>,
        ids: RequestIds,
    ) -> Context_ {
        Context_ {
            scenario_targets: scenario.targets.clone(),
            base,
            browser_args,
            firefox_prefs,
            timeout: scenario.timeout,
            warmup: scenario.warmup,
            page_streams: scenario.page_streams.max(1),
            prompt: scenario.prompts[0].clone(),
            voice: scenario.voice,
            turn: scenario.turn.clone(),
            inject: scenario.inject.clone(),
            preload,
            records: scenario
                .inject
                .as_ref()
                .and_then(|_| ttfx_load::http_client(None).ok()),
            browser,
            ids,
        }
    }
}

/// The jobs not yet taken, shared by the sessions.
type Queue = Mutex<VecDeque<Job>>;

/// How long opening one browser session may take.
const SESSION_LIMIT: Duration = Duration::from_secs(60);

type Done = (Job, Run, Option<GroundTruth>);

async fn worker(
    w: usize,
    client: &Client,
    ctx: &Context_,
    truth: &SessionTruth,
    queue: &Queue,
    progress: &ProgressBar,
) -> anyhow::Result<Vec<Done>> {
    let mut page = Page::default();
    // Warm-up: the first request of a session pays for the connection, the module's
    // compilation and the JIT; those are not what the user of a warm tab waits for.
    for (t, target) in ctx.scenario_targets.iter().enumerate() {
        for i in 0..ctx.warmup {
            let job = Job {
                index: usize::MAX,
                target: t,
                prompt: ctx.prompt.clone(),
                request_id: ctx.ids.warm(w, t, i),
            };
            runs_of(client, ctx, target, &job, &mut page)
                .await
                .with_context(|| format!("warm-up run against {}", target.label()))?;
        }
    }
    // Drop the warm-ups' network events.
    truth.forget(client).await;
    let mut done = Vec::new();
    loop {
        // `--page-streams N`: the next N jobs go out from the page at once.
        let group: Vec<Job> = match queue.lock() {
            Ok(mut q) => {
                let n = ctx.page_streams.min(q.len());
                q.drain(..n).collect()
            }
            Err(_) => Vec::new(),
        };
        let Some(first) = group.first() else { break };
        let runs: Vec<(Job, Run)> = if group.len() == 1 {
            let target = &ctx.scenario_targets[first.target];
            runs_of(client, ctx, target, first, &mut page)
                .await
                .with_context(|| format!("run {} against {}", first.index + 1, target.label()))?
                .into_iter()
                .map(|run| (first.clone(), run))
                .collect()
        } else {
            page_streams(client, ctx, &group, &mut page)
                .await
                .with_context(|| {
                    format!(
                        "runs {}–{} (streams of one page)",
                        first.index + 1,
                        first.index + group.len()
                    )
                })?
        };
        // The DevTools log returns the events gathered since its last read: once per
        // page's streams, each run found in them by its request id (or its URL, method
        // and start, #36); BiDi's are looked up per run, then dropped.
        let events = truth.devtools_events(client).await;
        for (job, run) in runs {
            let run = match (&ctx.inject, &ctx.records) {
                (Some(_), Some(client)) => super::record_join::join(run, client).await,
                _ => run,
            };
            let of = TruthJob {
                request_id: &job.request_id,
                label: ctx.scenario_targets[job.target].label(),
            };
            let (run, entry) = match truth.entry(&run, of, &events).await {
                Ok(entry) => (run, Some(entry)),
                Err(why) => (truth_entry::noted(run, why), None),
            };
            done.push((job, run, entry));
        }
        truth.forget(client).await;
        progress.inc(group.len() as u64);
    }
    Ok(done)
}

/// The page a session has open.
#[derive(Default)]
struct Page {
    runner_open: bool,
}

/// A job's runs: one, or in inject mode one per turn of the flow.
async fn runs_of(
    client: &Client,
    ctx: &Context_,
    target: &RunTarget,
    job: &Job,
    page: &mut Page,
) -> anyhow::Result<Vec<Run>> {
    match (&ctx.inject, target) {
        (Some(inject), RunTarget::Page { .. }) => {
            page.runner_open = false;
            super::inject::run_flow(
                client,
                inject,
                &inject.flows[job.target],
                &job.prompt,
                ctx.timeout,
                &job.request_id,
                target.label(),
            )
            .await
        }
        _ => Ok(vec![one_run(client, ctx, target, job, page).await?]),
    }
}

/// A page's streams at once (`--page-streams`): the runner page sends every job's
/// request in one task, each its own probe run and reply, and answers when all are over.
/// Only endpoint targets come here (the scenario refuses pages, inject mode and voice).
async fn page_streams(
    client: &Client,
    ctx: &Context_,
    jobs: &[Job],
    page: &mut Page,
) -> anyhow::Result<Vec<(Job, Run)>> {
    let base = ctx
        .base
        .as_deref()
        .context("the runner's server is not running")?;
    if !page.runner_open {
        open_runner(client, base, false, false).await?;
        page.runner_open = true;
    }
    let mut specs = Vec::new();
    for job in jobs {
        match &ctx.scenario_targets[job.target] {
            target @ RunTarget::Endpoint { .. } => specs.push(run_spec(ctx, target, job)),
            target => bail!("{} is a page: it sends its own requests", target.label()),
        }
    }
    let out = client
        .execute_async(STREAMS_SCRIPT, vec![Value::Array(specs)])
        .await
        .context("the runner page's script failed")?;
    if let Some(e) = out.get("runnerError") {
        bail!("the page failed: {e}");
    }
    let outs = out
        .get("outs")
        .and_then(Value::as_array)
        .filter(|outs| outs.len() == jobs.len())
        .context("the runner page answered no run per stream")?;
    jobs.iter()
        .zip(outs)
        .map(|(job, out)| {
            let label = ctx.scenario_targets[job.target].label();
            let run = run_of(out, job, label)
                .with_context(|| format!("run {} against {label}", job.index + 1))?;
            Ok((job.clone(), run))
        })
        .collect()
}

/// What the runner page's `send` takes for one job against an endpoint target.
fn run_spec(ctx: &Context_, target: &RunTarget, job: &Job) -> Value {
    let RunTarget::Endpoint {
        url, api, dialect, ..
    } = target
    else {
        return Value::Null;
    };
    let same_origin = url.starts_with('/');
    let record_url = (same_origin && (url.starts_with("/sim/") || url.starts_with("/proxy/")))
        .then(|| format!("/records/{}", job.request_id));
    json!({
        "endpoint": url,
        "body": api.streaming_body("ttfx-run", &job.prompt),
        "dialect": dialect.map(|d| d.as_str()),
        "requestId": job.request_id,
        "timeoutMs": ctx.timeout.as_millis() as u64,
        "recordUrl": record_url,
        "ttsUrl": if ctx.voice { target.tts_url() } else { None },
        "turn": ctx.turn.as_ref().map(|t| json!({
            "sttUrl": target.stt_url(),
            "bargeIn": t.barge_in,
        })),
    })
}

/// One run's answer from a page (`{report, record}`, or `{runnerError}`) as a run.
fn run_of(out: &Value, job: &Job, label: &str) -> anyhow::Result<Run> {
    if let Some(e) = out.get("runnerError") {
        bail!("the page failed: {e}");
    }
    let report = out
        .get("report")
        .filter(|r| !r.is_null())
        .context("the page pushed no report onto window.__ttfx (is the probe embedded?)")?;
    let record = out.get("record").filter(|r| !r.is_null());
    to_run(report, record, &job.request_id, label)
}

async fn one_run(
    client: &Client,
    ctx: &Context_,
    target: &RunTarget,
    job: &Job,
    page: &mut Page,
) -> anyhow::Result<Run> {
    let out = match target {
        RunTarget::Endpoint { .. } => {
            let base = ctx
                .base
                .as_deref()
                .context("the runner's server is not running")?;
            if !page.runner_open {
                open_runner(client, base, ctx.voice, ctx.turn.is_some()).await?;
                page.runner_open = true;
            }
            let spec = run_spec(ctx, target, job);
            client
                .execute_async(RUN_SCRIPT, vec![spec])
                .await
                .context("the runner page's script failed")?
        }
        RunTarget::Page { url, .. } => {
            // A fresh load per run: the page may measure on load, and its queue starts empty.
            page.runner_open = false;
            // Errors name the label: the URL's query may hold a key.
            client
                .goto(url)
                .await
                .with_context(|| format!("cannot load {}", target.label()))?;
            client
                .execute_async(
                    PAGE_SCRIPT,
                    vec![json!(job.prompt), json!(ctx.timeout.as_millis() as u64)],
                )
                .await
                .with_context(|| format!("the page {} did not run", target.label()))?
        }
    };
    run_of(&out, job, target.label())
}

/// The probe's run report, with the server's own record (when there is one) merged into
/// its timeline and the metrics computed again, so the gaps are filled.
pub(crate) fn to_run(
    report: &Value,
    record: Option<&Value>,
    id: &str,
    label: &str,
) -> anyhow::Result<Run> {
    // The page chose the report: serde's errors quote its strings, so they are cut.
    let file = ReportFile::from_json(&report.to_string()).map_err(|e| {
        anyhow::anyhow!(
            "the probe's report: {}",
            cut(&e.to_string(), REASON_SHOWN_CHARS)
        )
    })?;
    let Some(run) = file.into_runs().into_iter().next() else {
        bail!("the probe's report held no run");
    };
    let run = Run::new(Some(id.to_owned()), Some(label.to_owned()), run.timeline)
        .map_err(|e| anyhow::anyhow!("run {id}: {e}"))?;
    let Some(record) = record else {
        return Ok(run);
    };
    let record = ServerRecord::from_json(&record.to_string())
        .map_err(|e| anyhow::anyhow!("the server's record: {}", cut(&e, REASON_SHOWN_CHARS)))?;
    run.with_server(&record.server)
        .map_err(|e| anyhow::anyhow!("run {id} with the server's record: {e}"))
}

/// Opens the runner page; `voice` makes it load the probe's voice build, `turn` (voice
/// turns) its microphone.
async fn open_runner(client: &Client, base: &str, voice: bool, turn: bool) -> anyhow::Result<()> {
    let url = match (voice, turn) {
        (_, true) => format!("{base}/?voice&turn"),
        (true, false) => format!("{base}/?voice"),
        (false, false) => format!("{base}/"),
    };
    client
        .goto(&url)
        .await
        .with_context(|| format!("cannot load the runner page {url}"))?;
    let ready = client
        .execute_async(READY_SCRIPT, vec![])
        .await
        .context("the runner page did not answer")?;
    if let Some(e) = ready.get("error") {
        bail!("the runner page failed: {e}");
    }
    Ok(())
}

const READY_SCRIPT: &str = r#"
const done = arguments[arguments.length - 1];
const t0 = performance.now();
(function poll() {
  const s = document.getElementById("status");
  const text = s ? s.textContent : "";
  if (window.ttfxRunner) return done({ ready: true });
  if (text.startsWith("error")) return done({ error: text });
  if (performance.now() - t0 > 20000) return done({ error: "not ready within 20 s: " + text });
  setTimeout(poll, 20);
})();
"#;

const RUN_SCRIPT: &str = r#"
const [spec] = arguments;
const done = arguments[arguments.length - 1];
window.ttfxRunner.send(spec).then(done, (e) => done({ runnerError: String((e && e.stack) || e) }));
"#;

// `--page-streams`: every spec's stream from the page at once; one answer per spec.
const STREAMS_SCRIPT: &str = r#"
const [specs] = arguments;
const done = arguments[arguments.length - 1];
window.ttfxRunner.sendAll(specs).then((outs) => done({ outs }), (e) => done({ runnerError: String((e && e.stack) || e) }));
"#;

// The user's page: call window.chat.send(prompt) when the page offers it (the example
// page's contract), then wait for the probe's report on window.__ttfx.
const PAGE_SCRIPT: &str = r#"
const [prompt, timeoutMs] = arguments;
const done = arguments[arguments.length - 1];
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const reports = () => (window.__ttfx || []).length;
(async () => {
  const t0 = performance.now();
  while (!(window.chat && window.chat.send) && !reports() && performance.now() - t0 < 10000) await wait(20);
  if (window.chat && window.chat.send && !reports()) await window.chat.send(prompt);
  while (!reports() && performance.now() - t0 < timeoutMs) await wait(20);
  return { report: (window.__ttfx || [])[0] || null };
})().then(done, (e) => done({ runnerError: String((e && e.stack) || e) }));
"#;

fn default_probe_pkg() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("probe-pkg")
}

/// A bar on stderr while a person watches; nothing at all when stderr is a pipe or a
/// file (CI logs), and never anything on stdout, which holds the table.
fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} runs {pos}/{len} {wide_bar} {elapsed}")
    {
        bar.set_style(style);
    }
    bar
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A report the probe would push, made by the same analysis the page runs.
    pub(crate) fn page_report() -> Value {
        page_report_of("http://x/v1/chat/completions")
    }

    /// [`page_report`] of a request to `url`.
    pub(crate) fn page_report_of(url: &str) -> Value {
        let mut runs = ttfx_analysis::Runs::default();
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";
        let calls = [
            json!([1, "begin", "auto", "r1", "lab", null]),
            json!([1, "request", "POST", url, 1.0, "fetch"]),
            json!([1, "headers", 12.0, 200, "text/event-stream", null]),
            json!([1, "chunks", [20.5, body.len() as f64], body]),
            json!([1, "end", 30.0]),
        ];
        for call in &calls {
            ttfx_analysis::replay::apply(&mut runs, call).expect("a good call");
        }
        let text = ttfx_analysis::replay::apply(&mut runs, &json!([1, "finish", null, null]))
            .expect("finish")
            .expect("a report");
        serde_json::from_str(text.lines().next().unwrap_or_default()).expect("JSON")
    }

    #[test]
    fn a_page_report_with_nan_negative_huge_or_mistyped_values_is_a_clear_error() {
        let good = page_report();
        to_run(&good, None, "r1", "lab").expect("the page's own report is a run");
        let huge = Value::String("x".repeat(4 << 20));
        let mut hostile = Vec::new();
        for (field, value) in [
            ("first_byte", json!(-1.0)),
            ("first_byte", json!(1e308)),
            ("first_byte", json!("NaN")),
            ("first_byte", Value::Null),
            ("first_token", json!(-1e308)),
            ("first_byte", huge.clone()),
        ] {
            let mut report = good.clone();
            report["run"]["timeline"]["milestones"][field] = value;
            hostile.push(report);
        }
        for value in [json!(null), json!("report"), json!([1e308]), huge.clone()] {
            let mut report = good.clone();
            report["run"]["timeline"] = value.clone();
            hostile.push(report);
            hostile.push(value);
        }
        let mut chunks = good.clone();
        chunks["run"]["timeline"]["chunks"] = json!([{"at_ms": 1e308, "bytes": -1}]);
        hostile.push(chunks);
        for report in &hostile {
            // A run or an error that says what it read; never a panic.
            if let Err(e) = to_run(report, None, "r1", "lab") {
                let e = format!("{e:#}");
                assert!(
                    e.starts_with("the probe's report") || e.starts_with("run r1"),
                    "{e:.300}"
                );
                assert!(e.len() < 2_000, "{} bytes: {e:.300}", e.len());
            }
        }
        for record in [json!("x"), json!({"server": 1e308}), huge] {
            assert!(
                to_run(&good, Some(&record), "r1", "lab").is_err(),
                "{record:.80}"
            );
        }
    }
}

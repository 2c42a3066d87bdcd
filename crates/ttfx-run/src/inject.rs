//! Inject mode (`ttfx run --url URL --inject`): a page that does not embed the probe is
//! measured as shipped. The probe's inject bundle (`inject.js` in the probe package) is
//! added before any of the page's scripts, through WebDriver BiDi
//! `script.addPreloadScript`, or the DevTools protocol's
//! `Page.addScriptToEvaluateOnNewDocument` where a session has no BiDi. The runner then
//! plays the flow (type, submit, wait), reads back what the page recorded, makes each
//! report here (ttfx-analysis's replay: the same calls and code as in a page), and
//! chooses the stream and the reply (docs/run.md, "Inject mode").

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde::Deserialize;
use serde_json::{Value, json};
use ttfx_analysis::Runs;
use ttfx_core::Milestone;
use ttfx_core::printable::cut;
use ttfx_core::report::{ReportFile, Run};
use ttfx_core::selection::{ReplyChoice, Selection, StreamChoice};
use ttfx_core::target::url_for_report;
use ttfx_core::timeline::{PaintMethod, Timeline};
use ttfx_webdriver::bidi::Bidi;
use ttfx_webdriver::devtools::Cdp;

use super::driver::Browser;
use super::flow::{Flow, Step};
use super::setup_error::SetupError;
use super::url_match::UrlMatch;

/// The bundle's file in the probe package (`cargo xtask probe-pkg`), read with
/// `--probe-pkg DIR`.
pub const BUNDLE: &str = "inject.js";

/// The inject bundle compiled in (`cargo xtask probe-front` makes and checks it), so
/// `ttfx run --inject` needs no probe package: it works from any folder and after
/// `cargo install`.
const BUILT_IN: &str = include_str!("inject_bundle.js");

/// Where the preload script comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum BundleSource {
    /// The bundle compiled into this binary.
    BuiltIn,
    /// `--probe-pkg DIR`: DIR's `inject.js` (a probe package built apart from the binary).
    Package(std::path::PathBuf),
}

impl BundleSource {
    /// What the report's `selection.probe` says of it: the version and where it came from.
    fn label(&self) -> String {
        match self {
            BundleSource::BuiltIn => {
                format!("ttfx-probe {}, built into ttfx", env!("CARGO_PKG_VERSION"))
            }
            BundleSource::Package(dir) => {
                // The package's own version, when its package.json gives one.
                let version = std::fs::read_to_string(dir.join("package.json"))
                    .ok()
                    .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                    .and_then(|json| json["version"].as_str().map(str::to_owned))
                    .filter(|v| v.len() <= 64)
                    .unwrap_or_else(|| "(version not given)".to_owned());
                format!("ttfx-probe {version}, from {}", dir.join(BUNDLE).display())
            }
        }
    }
}

pub use crate::args::InjectVia;

/// What inject mode measures.
#[derive(Debug, Clone)]
pub struct InjectScenario {
    /// Each target page's flow, in the order of the targets (`--url`, then `--against`).
    pub flows: Vec<Flow>,
    /// `--match`: a substring of the URL, or a `re:` pattern.
    pub match_url: Option<UrlMatch>,
    /// `--reply`: the reply's element.
    pub reply: Option<String>,
    pub via: InjectVia,
    /// The flow is `--type`/`--submit`'s one turn: it types each run's prompt
    /// (`--prompt`, cycled), not a flow file's text.
    pub typed_prompt: bool,
    /// The compiled-in bundle, or `--probe-pkg`'s.
    pub bundle: BundleSource,
}

/// Why WebKit is refused, in one line.
pub const WEBKIT_REFUSAL: &str = "--inject needs Chromium or Firefox: WebKitWebDriver has \
     neither WebDriver BiDi (script.addPreloadScript) nor the DevTools protocol, so nothing \
     can run before the page's own scripts";

/// The preload script: the bundle with its configuration before it.
pub fn preload_source(scenario: &InjectScenario) -> Result<String, SetupError> {
    let read;
    let bundle = match &scenario.bundle {
        BundleSource::BuiltIn => BUILT_IN,
        BundleSource::Package(pkg) => {
            let path = pkg.join(BUNDLE);
            read = std::fs::read_to_string(&path)
                .map_err(|cause| SetupError::NoInjectBundle { path, cause })?;
            read.as_str()
        }
    };
    let config = json!({ "match": scenario.match_url.as_ref().map(UrlMatch::to_config) });
    Ok(format!(
        "globalThis.__ttfxInjectConfig = {config};\n{bundle}"
    ))
}

/// The connection that registered the preload script, kept open while the session
/// lives (a DevTools client's scripts go with its connection).
#[must_use = "the preload script may go when this is dropped"]
pub struct Injected {
    _bidi: Option<Bidi>,
    _cdp: Option<Cdp>,
}

/// Registers `source` to run before the page's scripts in every document the session
/// loads from now on; over `shared`, the session's BiDi connection when it has one open
/// already (Firefox's, for its network events), else over one of its own.
pub async fn install(
    client: &Client,
    browser: Browser,
    via: InjectVia,
    source: &str,
    shared: Option<&Bidi>,
) -> anyhow::Result<Injected> {
    let caps = client.capabilities();
    let has_bidi = caps
        .and_then(|c| c.get(ttfx_webdriver::bidi::WEB_SOCKET_URL))
        .is_some_and(Value::is_string);
    if via == InjectVia::Bidi && !has_bidi {
        bail!(
            "--inject-via bidi: the {} session offers no WebDriver BiDi socket (webSocketUrl)",
            browser.name()
        );
    }
    if via == InjectVia::Devtools && browser != Browser::Chromium {
        bail!("--inject-via devtools needs Chromium: only it speaks the DevTools protocol");
    }
    if has_bidi && via != InjectVia::Devtools {
        let mut own = None;
        let bidi = match shared {
            Some(bidi) => bidi,
            None => &*own.insert(Bidi::attach(caps, &[]).await?.0),
        };
        bidi.call(
            "script.addPreloadScript",
            json!({ "functionDeclaration": format!("() => {{\n{source}\n}}") }),
        )
        .await
        .context("BiDi script.addPreloadScript")?;
        return Ok(Injected {
            _bidi: own,
            _cdp: None,
        });
    }
    if browser == Browser::Chromium {
        let (cdp, _events) = Cdp::attach(caps).await?;
        // Scripts to evaluate on new documents are kept by the Page domain.
        cdp.call("Page.enable", json!({}))
            .await
            .context("DevTools Page.enable")?;
        cdp.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": source }),
        )
        .await
        .context("DevTools Page.addScriptToEvaluateOnNewDocument")?;
        return Ok(Injected {
            _bidi: None,
            _cdp: Some(cdp),
        });
    }
    bail!(
        "--inject: the {} session offers no WebDriver BiDi (webSocketUrl), so the probe \
         cannot run before the page's scripts",
        browser.name()
    )
}

const KEY: &str = "window[Symbol.for('ttfx.inject')]";

/// What `take()` returns.
#[derive(Debug, Deserialize)]
struct Taken {
    calls: Vec<Value>,
    runs: Vec<(u32, f64, String, String)>,
    #[serde(rename = "submitAt")]
    submit_at: Option<f64>,
}

/// A measured request in the page, as it started.
#[derive(Debug, Clone)]
struct Started {
    key: u32,
    /// `request_start` on the page clock.
    start: f64,
    transport: String,
    url: String,
}

/// One page load: the calls replayed so far, the runs started and the reports made.
#[derive(Default)]
struct PageState {
    runs: Runs,
    started: Vec<Started>,
    /// Each finished run's report, read once as it comes.
    reports: HashMap<u32, Run>,
    failed: HashMap<u32, String>,
    /// `ttfx serve`'s record id of each run whose response named one.
    record_ids: HashMap<u32, String>,
}

impl PageState {
    fn absorb(&mut self, taken: Taken) {
        for (key, start, transport, url) in taken.runs {
            self.started.push(Started {
                key,
                start,
                transport,
                url,
            });
        }
        for call in &taken.calls {
            let key = call
                .get(0)
                .and_then(Value::as_u64)
                .and_then(|k| u32::try_from(k).ok());
            let replayed = replay(&mut self.runs, call)
                .and_then(|report| report.map(|r| parse_run(&r)).transpose());
            let Some(key) = key else { continue };
            // `ttfx serve`'s record id, which reports never carry (record_join.rs):
            // read from the headers call as the page made it.
            if call.get(1).and_then(Value::as_str) == Some("headers")
                && let Some(id) = call
                    .get(5)
                    .and_then(Value::as_str)
                    .and_then(|v| ttfx_core::recorder::record_id_in([v]))
            {
                self.record_ids.insert(key, id);
            }
            match replayed {
                Ok(Some(mut run)) => {
                    run.timeline.server.record_id = self.record_ids.get(&key).cloned();
                    self.reports.insert(key, run);
                }
                Ok(None) => {}
                // A run whose calls fail is kept out of the choice, with its reason.
                Err(e) => {
                    let e = cut(&e, REASON_SHOWN_CHARS).into_owned();
                    self.failed.entry(key).or_insert(e);
                }
            }
        }
    }

    /// The stream of a turn submitted at `submit_at`: the first run started since, in
    /// order of start, that streamed (or, with `--match`, the first). `None` while an
    /// earlier run is still open.
    fn choose(&self, submit_at: f64, by_match: bool) -> Option<(Started, Run, u32)> {
        let mut after: Vec<&Started> = self
            .started
            .iter()
            .filter(|s| s.start >= submit_at)
            .collect();
        after.sort_by(|a, b| a.start.total_cmp(&b.start));
        for (i, s) in after.iter().enumerate() {
            if self.failed.contains_key(&s.key) {
                continue;
            }
            let run = self.reports.get(&s.key)?;
            if by_match || streamed(run) {
                return Some(((*s).clone(), run.clone(), (i + 1) as u32));
            }
        }
        None
    }

    fn describe_open(&self, submit_at: f64) -> String {
        let list: Vec<String> = self
            .started
            .iter()
            .filter(|s| s.start >= submit_at)
            .map(|s| {
                let state = if let Some(e) = self.failed.get(&s.key) {
                    format!("failed: {e}")
                } else if self.reports.contains_key(&s.key) {
                    "ended without streaming".to_owned()
                } else {
                    "still open".to_owned()
                };
                format!(
                    "{} {} ({state})",
                    cut(&s.transport, 40),
                    cut(&url_for_report(&s.url), URL_SHOWN_CHARS)
                )
            })
            .collect();
        if list.is_empty() {
            "no request was made after the submit".to_owned()
        } else {
            format!("requests after the submit: {}", list.join("; "))
        }
    }
}

/// Plays one of the page's calls. The page chose every byte of it: a call that is wrong
/// is a reason this run failed, never a panic of the runner. The replay validates each
/// argument and refuses a fault; that is the defence. Should a bug still panic on some
/// input, a build that unwinds (debug, tests) fails the run with the panic's text and
/// the other runs go on; the release profile has `panic = "abort"`, where the panic hook
/// stops the browsers and the run ends.
fn replay(runs: &mut Runs, call: &Value) -> Result<Option<String>, String> {
    let played = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ttfx_analysis::replay::apply(runs, call)
    }));
    match played {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(format!("the analysis failed on the page's call: {text}"))
        }
    }
}

/// At most this many characters of a page's request URL go into an error message: a
/// page chooses its URLs' length.
pub const URL_SHOWN_CHARS: usize = 200;

/// At most this many characters of why a page's run failed are kept (and of an error
/// reading a report a page pushed): the errors may quote what the page sent (an unknown
/// milestone's name, a string of the wrong type).
pub const REASON_SHOWN_CHARS: usize = 300;

fn parse_run(report: &str) -> Result<Run, String> {
    let file = ReportFile::from_json(report).map_err(|e| format!("a replayed report: {e}"))?;
    file.into_runs()
        .into_iter()
        .next()
        .ok_or_else(|| "a replayed report held no run".to_owned())
}

/// A response streamed: two or more chunks (events, messages), with tokens found.
fn streamed(run: &Run) -> bool {
    let chunks = run
        .timeline
        .chunk_summary
        .as_ref()
        .map_or(run.timeline.chunks.len(), |s| s.chunks as usize);
    chunks >= 2 && run.timeline.milestones.get(Milestone::FirstToken).is_some()
}

/// What `reply()` returns.
#[derive(Debug, Deserialize)]
struct Reply {
    found: bool,
    element: Option<String>,
    share: Option<f64>,
    #[serde(rename = "firstDom")]
    first_dom: Option<f64>,
    #[serde(rename = "firstPaint")]
    first_paint: Option<f64>,
}

/// Fields a prompt is typed into when `--type` names none: the first one shown.
const PROMPT_FIELDS: &str = "textarea, input[type=text], input[type=search], input:not([type]), \
     [contenteditable=''], [contenteditable='true']";

/// How often the page's recording is read while a turn waits.
const POLL: Duration = Duration::from_millis(50);
/// How long after its stream is chosen the reply's DOM may still be growing (a frame or
/// two of a framework's batched render).
const SETTLE: Duration = Duration::from_millis(200);

/// One pass through the flow: a Run per turn, ids `{id}-t{turn}`, labelled `label`.
pub async fn run_flow(
    client: &Client,
    scenario: &InjectScenario,
    flow: &Flow,
    prompt: &str,
    timeout: Duration,
    id: &str,
    label: &str,
) -> anyhow::Result<Vec<Run>> {
    let mut pass = FlowPass::default();
    for step in &flow.steps {
        match step {
            Step::Open(url) => pass.open(client, url).await?,
            Step::Type { text, into } => {
                let text = if scenario.typed_prompt { prompt } else { text };
                pass.type_text(client, text, into.as_deref()).await?;
            }
            Step::Submit(target) => pass.submit(client, target.as_deref()).await?,
            Step::WaitReply => {
                let run = pass.wait_reply(client, scenario, flow, timeout).await?;
                let turn = pass.turn;
                let turn_id = if flow.turns() > 1 {
                    format!("{id}-t{turn}")
                } else {
                    id.to_owned()
                };
                pass.out.push(
                    Run::new(Some(turn_id), Some(label.to_owned()), run.timeline)
                        .map_err(|e| anyhow::anyhow!("turn {turn}: {e}"))?,
                );
            }
        }
    }
    Ok(pass.out)
}

/// Where a pass through the flow is: the page it has open, the field it typed into, the
/// turn it is at and the runs made so far.
#[derive(Default)]
struct FlowPass {
    page: PageState,
    field: Option<Element>,
    /// The probe was told a turn begins: the page's requests from now on are recorded.
    armed: bool,
    turn: u32,
    out: Vec<Run>,
}

impl FlowPass {
    /// A fresh load starts all over: the new document's probe knows nothing yet.
    async fn open(&mut self, client: &Client, url: &str) -> anyhow::Result<()> {
        client
            .goto(url)
            .await
            .with_context(|| format!("cannot load {}", url_for_report(url)))?;
        wait_ready(client).await?;
        self.page = PageState::default();
        self.field = None;
        self.armed = false;
        Ok(())
    }

    /// A turn begins with its first typing or submit, once.
    async fn arm(&mut self, client: &Client) -> anyhow::Result<()> {
        if !self.armed {
            arm(client).await?;
            self.armed = true;
        }
        Ok(())
    }

    async fn type_text(
        &mut self,
        client: &Client,
        text: &str,
        into: Option<&str>,
    ) -> anyhow::Result<()> {
        self.arm(client).await?;
        let element = find_field(client, into).await?;
        element
            .send_keys(text)
            .await
            .context("cannot type the prompt")?;
        self.field = Some(element);
        Ok(())
    }

    /// A click on `target`, else Enter in the field typed into (or the first shown).
    async fn submit(&mut self, client: &Client, target: Option<&str>) -> anyhow::Result<()> {
        self.arm(client).await?;
        match target {
            Some(css) => client
                .find(Locator::Css(css))
                .await
                .with_context(|| format!("no element `{css}` to submit with"))?
                .click()
                .await
                .with_context(|| format!("cannot click `{css}`"))?,
            None => {
                let element = match self.field.take() {
                    Some(e) => e,
                    None => find_field(client, None).await?,
                };
                element
                    .send_keys(&Key::Enter.to_string())
                    .await
                    .context("cannot press Enter in the prompt's field")?;
                self.field = Some(element);
            }
        }
        Ok(())
    }

    /// The next turn's run; the turn after it arms the probe again.
    async fn wait_reply(
        &mut self,
        client: &Client,
        scenario: &InjectScenario,
        flow: &Flow,
        timeout: Duration,
    ) -> anyhow::Result<Run> {
        self.turn += 1;
        let turn = self.turn;
        let run = wait_turn(client, &mut self.page, scenario, flow, timeout, turn)
            .await
            .with_context(|| format!("turn {turn}"))?;
        self.armed = false;
        Ok(run)
    }
}

async fn wait_ready(client: &Client) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let state = client
            .execute(
                &format!(
                    "return {{ probe: !!{KEY}, ready: document.readyState, failed: \
                     window[Symbol.for('ttfx.inject.failed')] || null }};"
                ),
                vec![],
            )
            .await
            .context("cannot read the page's state")?;
        if state["probe"] == json!(true) && state["ready"] != json!("loading") {
            return Ok(());
        }
        if let Some(failed) = state["failed"].as_str() {
            bail!("{}", not_installed(failed));
        }
        if started.elapsed() > Duration::from_secs(10) {
            bail!(
                "the injected probe is not in the page after 10 s (document {}); the preload \
                 script did not run",
                state["ready"]
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The runner's line for a probe that threw while it installed: the page's own words,
/// bounded (the page could have put anything in the error).
fn not_installed(failed: &str) -> String {
    let failed: String = failed.chars().take(500).collect();
    let failed = ttfx_core::printable::escape_controls(&failed);
    format!("the injected probe did not install in the page: {failed}")
}

async fn arm(client: &Client) -> anyhow::Result<()> {
    client
        .execute(&format!("{KEY}.arm(); return true;"), vec![])
        .await
        .context("cannot arm the injected probe")?;
    Ok(())
}

async fn find_field(client: &Client, css: Option<&str>) -> anyhow::Result<Element> {
    let selector = css.unwrap_or(PROMPT_FIELDS);
    let found = client
        .find_all(Locator::Css(selector))
        .await
        .with_context(|| format!("cannot look for `{selector}`"))?;
    for element in found {
        if element.is_displayed().await.unwrap_or(false) {
            return Ok(element);
        }
    }
    match css {
        Some(css) => bail!("no visible element `{css}` to type the prompt into (--type)"),
        None => bail!(
            "no visible textarea, text input or contenteditable element to type the prompt \
             into: name it with --type CSS"
        ),
    }
}

async fn take(client: &Client) -> anyhow::Result<Taken> {
    let value = client
        .execute(&format!("return {KEY}.take();"), vec![])
        .await
        .context("cannot read the injected probe's recording")?;
    serde_json::from_value(value).context("the injected probe's recording")
}

/// A turn's run: the stream chosen after the submit, with the reply's element's first
/// DOM change and paint, and how both were chosen.
async fn wait_turn(
    client: &Client,
    page: &mut PageState,
    scenario: &InjectScenario,
    flow: &Flow,
    timeout: Duration,
    turn: u32,
) -> anyhow::Result<Run> {
    let by_match = scenario.match_url.is_some();
    let (chosen, run, seen) = wait_stream(client, page, by_match, timeout).await?;
    tokio::time::sleep(SETTLE).await;
    let first_byte = run
        .timeline
        .milestones
        .get(Milestone::FirstByte)
        .unwrap_or(0.0);
    let reply = ask_reply(client, chosen.start + first_byte, scenario.reply.as_deref()).await?;
    let mut timeline = run.timeline;
    reply.mark(&mut timeline, chosen.start);
    timeline.selection = Some(Selection {
        stream: if by_match {
            StreamChoice::Match
        } else {
            StreamChoice::FirstStreamingAfterSubmit
        },
        requests_seen: seen,
        reply: if scenario.reply.is_some() {
            ReplyChoice::Selector
        } else {
            ReplyChoice::Growth
        },
        reply_element: reply.element.filter(|_| reply.found),
        reply_share: reply.share.filter(|_| reply.found),
        flow_turn: (flow.turns() > 1).then_some(turn),
        probe: Some(scenario.bundle.label()),
    });
    Ok(Run { timeline, ..run })
}

/// Reads the page's recording until the turn's stream is chosen (see
/// [`PageState::choose`]): the request, its run, and how many requests were seen.
async fn wait_stream(
    client: &Client,
    page: &mut PageState,
    by_match: bool,
    timeout: Duration,
) -> anyhow::Result<(Started, Run, u32)> {
    let deadline = Instant::now() + timeout;
    let mut submit_at: Option<f64> = None;
    loop {
        let taken = take(client).await?;
        submit_at = taken.submit_at.or(submit_at);
        page.absorb(taken);
        // Until the page saw the click or key press, nothing counts as after it.
        if let Some(at) = submit_at
            && let Some(choice) = page.choose(at, by_match)
        {
            return Ok(choice);
        }
        if Instant::now() > deadline {
            return Err(no_stream(page, by_match, submit_at, timeout));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Why no stream was chosen in time: no submit seen, or the requests after it and how
/// each stands.
fn no_stream(
    page: &PageState,
    by_match: bool,
    submit_at: Option<f64>,
    timeout: Duration,
) -> anyhow::Error {
    let how = if by_match {
        "no request matching --match ended"
    } else {
        "no streamed response ended"
    };
    match submit_at {
        Some(at) => anyhow::anyhow!(
            "{how} within {} s of the submit; {}",
            timeout.as_secs_f64(),
            page.describe_open(at)
        ),
        None => anyhow::anyhow!(
            "the page saw no click or Enter key press within {} s (check --submit)",
            timeout.as_secs_f64()
        ),
    }
}

/// The page's answer about the reply's element (`--reply`'s, else the one that grew),
/// for a stream whose first byte came at `first_byte_at` on the page clock.
async fn ask_reply(
    client: &Client,
    first_byte_at: f64,
    selector: Option<&str>,
) -> anyhow::Result<Reply> {
    let answer = client
        .execute(
            &format!("return {KEY}.reply(arguments[0], performance.now(), arguments[1]);"),
            vec![json!(first_byte_at), json!(selector)],
        )
        .await
        .context("cannot ask the page for the reply's element")?;
    serde_json::from_value(answer).context("the page's answer about the reply")
}

impl Reply {
    /// The reply element's first DOM change and paint as milestones of the run whose
    /// request started at `start` (page clock).
    fn mark(&self, timeline: &mut Timeline, start: f64) {
        if !self.found {
            return;
        }
        // The page's clock readings: a time that is not a finite, non-negative offset
        // from the request's start is no milestone (1e308 - -1e308 is infinite).
        let offset = |at: Option<f64>| {
            at.map(|at| at - start)
                .filter(|t| t.is_finite() && *t >= 0.0)
        };
        if let Some(t) = offset(self.first_dom) {
            timeline.milestones.set(Milestone::FirstDom, t);
        }
        if let Some(t) = offset(self.first_paint) {
            timeline.milestones.set(Milestone::FirstPaint, t);
            timeline.paint_method = Some(PaintMethod::RafNextFrame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(bundle: BundleSource) -> InjectScenario {
        InjectScenario {
            flows: vec![Flow::single("http://x/", "hi", None, None)],
            match_url: Some(UrlMatch::parse("/v1/chat").unwrap()),
            reply: None,
            via: InjectVia::Auto,
            typed_prompt: true,
            bundle,
        }
    }

    #[test]
    fn a_probe_pkg_s_bundle_is_read_and_a_missing_one_named() {
        let dir = tempfile::tempdir().unwrap();
        let scenario = scenario(BundleSource::Package(dir.path().to_owned()));
        let err = format!("{:#}", preload_source(&scenario).unwrap_err());
        assert!(
            err.starts_with(&format!(
                "no inject bundle at {} (--probe-pkg DIR must hold",
                dir.path().join(BUNDLE).display()
            )) && err.ends_with("No such file or directory (os error 2)"),
            "{err}"
        );
        std::fs::write(dir.path().join(BUNDLE), "(()=>{})();").unwrap();
        let source = preload_source(&scenario).unwrap();
        assert!(source.starts_with(
            "globalThis.__ttfxInjectConfig = {\"match\":{\"substring\":\"/v1/chat\"}};"
        ));
        assert!(source.ends_with("(()=>{})();"));
        // The package's version, when its package.json gives one.
        assert!(
            scenario
                .bundle
                .label()
                .contains("(version not given), from ")
        );
        std::fs::write(dir.path().join("package.json"), r#"{"version":"9.8.7"}"#).unwrap();
        assert_eq!(
            scenario.bundle.label(),
            format!(
                "ttfx-probe 9.8.7, from {}",
                dir.path().join(BUNDLE).display()
            )
        );
    }

    #[test]
    fn without_probe_pkg_the_bundle_built_in_is_injected() {
        let scenario = scenario(BundleSource::BuiltIn);
        let source = preload_source(&scenario).unwrap();
        // The committed bundle (probe-front keeps it current), whole, after the config.
        assert!(source.ends_with(BUILT_IN));
        assert!(BUILT_IN.contains("ttfx.inject") && BUILT_IN.len() > 10_000);
        assert_eq!(
            scenario.bundle.label(),
            format!("ttfx-probe {}, built into ttfx", env!("CARGO_PKG_VERSION"))
        );
    }

    /// What `take()` would hand back, as the page's JSON.
    fn taken(value: Value) -> Result<Taken, serde_json::Error> {
        serde_json::from_value(value)
    }

    const SSE: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";

    #[test]
    fn a_page_asking_for_a_fault_cannot_panic_the_runner() {
        let mut page = PageState::default();
        page.absorb(
            taken(json!({
                "calls": [
                    [1, "begin", null, "r1", "lab", "decoder-panic"],
                    [1, "chunks", [1.0, 5.0], "hello"],
                    [1, "end", 2.0],
                    [1, "finish", null, null],
                ],
                "runs": [[1, 0.0, "fetch", "http://x/"]],
                "submitAt": 0.0,
            }))
            .expect("the recording parses"),
        );
        let failed = page.failed.get(&1).expect("run 1 failed");
        assert!(
            failed.contains("a page cannot inject a fault (`\"decoder-panic\"`) into the runner"),
            "{failed}"
        );
        assert!(page.choose(0.0, false).is_none());
        let open = page.describe_open(0.0);
        assert!(
            open.contains("failed: ttfx replay: a page cannot inject"),
            "{open}"
        );
    }

    #[test]
    fn nan_negative_huge_and_mistyped_values_from_a_page_are_clear_errors() {
        let huge = "x".repeat(4 << 20);
        let hostile = [
            // Wrong types where numbers, strings and runs go.
            json!([1, "end", "soon"]),
            json!(["1", "end", 1.0]),
            json!([4_294_967_296_u64, "end", 1.0]),
            json!([-1, "end", 1.0]),
            json!([1, 7]),
            json!({"op": "begin"}),
            json!([1, "chunks", ["NaN", 1.0], "x"]),
            json!([1, "headers", 1.0, 70000, null, null]),
            json!([1, "headers", 1.0, -1, null, null]),
            // NaN has no JSON form: a page's NaN arrives as null.
            json!([1, "end", f64::NAN]),
            json!([1, "chunks", [0.0, 1.0], "\u{100}"]),
            json!([1, huge.clone()]),
            json!([1, "end", huge.clone()]),
        ];
        let mut runs = Runs::default();
        replay(&mut runs, &json!([1, "begin", null, null, null, null])).expect("begin");
        for call in &hostile {
            let e = replay(&mut runs, call).expect_err("a bad call fails");
            assert!(e.starts_with("ttfx replay: "), "{e}");
            // The page chose the size of its values, not of the runner's messages.
            assert!(e.len() < 600, "{} bytes: {}", e.len(), &e[..200]);
        }
        // Negative, huge and inverted times in calls of the right shape: a report or a
        // clear error, never a panic.
        let mut page = PageState::default();
        page.absorb(
            taken(json!({
                "calls": [
                    [2, "begin", "openai-chat", "r2", huge, null],
                    [2, "request", "POST", huge, -1.0, "fetch"],
                    [2, "headers", 1e308, 200, "text/event-stream", huge],
                    [2, "chunks", [-1.0, -1.0, 1e308, 1e308, -1e308, 3.0], SSE],
                    [2, "anomaly", -1.0, huge, huge],
                    [2, "observed", "first_dom", -1e308, null],
                    [2, "observed", huge, 1.0, null],
                    [2, "visibility", 1e308, true],
                    [2, "resourceTiming", -1.0, 1e308, -1e308, 1e308],
                    [2, "resourceServerTiming", huge, -1.0, huge],
                    [2, "environment", huge, huge, huge, true, -1.0, 4_294_967_295_u32],
                    [2, "end", -1e308],
                    [2, "finish", huge, 1e308],
                ],
                "runs": [[2, 1e308, "fetch", huge], [3, -1.0, huge, "http://x/"]],
                "submitAt": -1e308,
            }))
            .expect("the recording parses"),
        );
        assert!(
            page.reports.contains_key(&2) || page.failed.contains_key(&2),
            "run 2 ended one way or the other"
        );
        let _ = page.choose(-1e308, false);
        let open = page.describe_open(-1e308);
        assert!(open.len() < 2_000, "{} bytes", open.len());
        // The recording itself: a wrong shape is an error, not a panic.
        for bad in [
            json!({"calls": [], "runs": [[1, "NaN", "fetch", "u"]], "submitAt": null}),
            json!({"calls": 7, "runs": [], "submitAt": null}),
            json!({"calls": [], "runs": [[-1, 0.0, "fetch", "u"]], "submitAt": null}),
            json!(null),
        ] {
            assert!(taken(bad).is_err());
        }
        // The reply's times: a NaN (null), negative or infinite offset is no milestone.
        let mut timeline = Timeline::default();
        // (first DOM, first paint, the request's start): infinite, then negative offsets.
        for (dom, paint, start) in [
            (Some(1e308), None, -1e308),
            (None, Some(-1e308), 1e308),
            (Some(-1.0), Some(4.0), 5.0),
        ] {
            let reply = Reply {
                found: true,
                element: Some(huge.clone()),
                share: Some(f64::MAX),
                first_dom: dom,
                first_paint: paint,
            };
            reply.mark(&mut timeline, start);
        }
        assert_eq!(timeline.milestones.get(Milestone::FirstPaint), None);
        assert_eq!(timeline.milestones.get(Milestone::FirstDom), None);
        let reply: Result<Reply, _> =
            serde_json::from_value(json!({"found": "yes", "firstDom": "NaN"}));
        assert!(reply.is_err());
    }
}

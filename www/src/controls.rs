//! The run form: what to measure, how often, how many at once; and the runner that
//! keeps `concurrency` requests in flight until `runs` have been made.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use leptos::prelude::*;
use leptos::task::spawn_local;
use ttfx_core::ChatApi;
use ttfx_probe::{Probe, ProbeOptions};
use web_sys::AudioContext;

use crate::chat::Message;
use crate::reply::ReplySink;
use crate::request::measure;
use crate::target::Target;
use crate::voice::audio_context;
use crate::{Lab, collect, lab, turn};
use crate::{profiles, upstreams};

const MAX_RUNS: usize = 500;
const MAX_CONCURRENCY: usize = 32;

/// What the user asked for, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub target: Target,
    pub prompt: String,
    pub runs: usize,
    pub concurrency: usize,
    /// Speak each reply (simulated targets only: their TTS is on the same server).
    pub voice: bool,
    /// Voice turns: the microphone first, its transcript is the prompt (simulated
    /// targets only; implies `voice`; one at a time: there is one microphone).
    pub turn: bool,
}

/// The form's fields as typed.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    /// `sim` or `url`.
    pub kind: String,
    pub profile: String,
    pub overrides: String,
    pub url: String,
    /// A `ChatApi` name.
    pub api: String,
    pub prompt: String,
    pub runs: String,
    pub concurrency: String,
    pub voice: bool,
    pub turn: bool,
}

impl Fields {
    /// Checks the fields; the error names the field to fix.
    pub fn plan(&self) -> Result<Plan, String> {
        let api: ChatApi = self.api.parse().map_err(|e| format!("API: {e}"))?;
        let target = if self.kind == "url" {
            Target::endpoint(&self.url, api)?
        } else {
            Target::sim(&self.profile, &self.overrides, api)?
        };
        let runs = count("runs", &self.runs, MAX_RUNS)?;
        let mut concurrency = count("concurrency", &self.concurrency, MAX_CONCURRENCY)?.min(runs);
        let turn = self.turn && target.stt_url().is_some();
        if turn {
            concurrency = 1;
        }
        let voice = (self.voice || turn) && target.tts_url().is_some();
        Ok(Plan {
            target,
            prompt: self.prompt.clone(),
            runs,
            concurrency,
            voice,
            turn,
        })
    }
}

fn count(name: &str, text: &str, max: usize) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{name} must be a whole number from 1 to {max}, got {text:?}"
        )),
    }
}

/// The form's fields as signals, one per input: `Copy`, so each part of the form takes
/// the ones it binds and the Run click reads them all.
#[derive(Clone, Copy)]
struct FieldSignals {
    kind: RwSignal<String>,
    profile: RwSignal<String>,
    overrides: RwSignal<String>,
    url: RwSignal<String>,
    api: RwSignal<String>,
    prompt: RwSignal<String>,
    runs: RwSignal<String>,
    concurrency: RwSignal<String>,
    voice: RwSignal<bool>,
    turn: RwSignal<bool>,
}

impl FieldSignals {
    /// The form as it first shows: a simulated target, a few runs, no voice.
    fn new() -> Self {
        FieldSignals {
            kind: RwSignal::new("sim".to_owned()),
            profile: RwSignal::new("default".to_owned()),
            overrides: RwSignal::new(String::new()),
            url: RwSignal::new("/proxy/local/v1/chat/completions".to_owned()),
            api: RwSignal::new(ChatApi::OpenAiChat.as_str().to_owned()),
            prompt: RwSignal::new("Why does the first word matter more than the last?".to_owned()),
            runs: RwSignal::new("5".to_owned()),
            concurrency: RwSignal::new("2".to_owned()),
            voice: RwSignal::new(false),
            turn: RwSignal::new(false),
        }
    }

    /// The fields as typed, read without subscribing: the click reads them once.
    fn typed(&self) -> Fields {
        Fields {
            kind: self.kind.get_untracked(),
            profile: self.profile.get_untracked(),
            overrides: self.overrides.get_untracked(),
            url: self.url.get_untracked(),
            api: self.api.get_untracked(),
            prompt: self.prompt.get_untracked(),
            runs: self.runs.get_untracked(),
            concurrency: self.concurrency.get_untracked(),
            voice: self.voice.get_untracked(),
            turn: self.turn.get_untracked(),
        }
    }
}

/// Whether the chosen target is a simulated profile (the only kind with voice).
fn is_sim(kind: RwSignal<String>) -> bool {
    kind.get() == "sim"
}

/// Checks the fields and launches the runs, or says what is wrong in `problem`.
fn start_runs(lab: Lab, fields: Fields, problem: RwSignal<Option<String>>) {
    match fields.plan() {
        Ok(plan) => {
            problem.set(None);
            // Created in the click (the gesture autoplay wants), before any request.
            let started = match plan.voice {
                true => audio_context().map(Some),
                false => Ok(None),
            }
            .and_then(|ctx| launch(lab, plan, ctx));
            if let Err(e) = started {
                problem.set(Some(e));
            }
        }
        Err(e) => problem.set(Some(e)),
    }
}

/// Forgets every run, message and selection of the batch.
fn clear_batch(lab: Lab) {
    lab.runs.set(Vec::new());
    lab.messages.set(Vec::new());
    lab.selected.set(None);
}

/// The form.
#[component]
pub fn RunForm() -> impl IntoView {
    let lab = lab();
    let fields = FieldSignals::new();
    let problem = RwSignal::new(None::<String>);
    let api = fields.api;
    view! {
        <form class="run-form" on:submit=|ev| ev.prevent_default()>
            <TargetFields kind=fields.kind profile=fields.profile overrides=fields.overrides url=fields.url api/>
            <label title="the API the request speaks (its body and its reply's dialect)">"API "
                <select id="api" prop:value=move || api.get()
                    on:change=move |ev| api.set(event_target_value(&ev))>
                    {ChatApi::ALL.map(|a| view! { <option value=a.as_str()>{a.as_str()}</option> }).collect_view()}
                </select>
            </label>
            <label class="wide">"prompt " <textarea id="prompt" rows="2" bind:value=fields.prompt></textarea></label>
            <label>"runs " <input id="runs" type="number" min="1" max=MAX_RUNS bind:value=fields.runs/></label>
            <label>"concurrency " <input id="concurrency" type="number" min="1" max=MAX_CONCURRENCY bind:value=fields.concurrency/></label>
            <VoiceChoices voice=fields.voice turn=fields.turn kind=fields.kind/>
            <button id="run" type="button" on:click=move |_| start_runs(lab, fields.typed(), problem)>"Run"</button>
            <button id="clear" type="button" on:click=move |_| clear_batch(lab)>"Clear"</button>
            <RunStatus lab/>
            {move || problem.get().map(|p| view! { <p class="error" id="form-error">{p}</p> })}
        </form>
    }
}

/// What to measure: a simulated profile (with the simulator's query overrides) or a
/// URL, perhaps one of the proxy's upstreams.
#[component]
fn TargetFields(
    kind: RwSignal<String>,
    profile: RwSignal<String>,
    overrides: RwSignal<String>,
    url: RwSignal<String>,
    api: RwSignal<String>,
) -> impl IntoView {
    view! {
        <label>"target "
            <select id="target-kind" prop:value=move || kind.get()
                on:change=move |ev| kind.set(event_target_value(&ev))>
                <option value="sim">"simulated profile (no key)"</option>
                <option value="url">"URL (proxy route or server)"</option>
            </select>
        </label>
        <Show when=move || is_sim(kind) fallback=move || view! {
            <UpstreamPicker url api/>
            <label>"URL " <input id="target-url" size="40" bind:value=url/></label>
        }>
            <label>"profile "
                <input id="profile" list="profiles" bind:value=profile/>
                <ProfileSuggestions/>
            </label>
            <label title="query parameters of the simulator, e.g. stall_at=10&stall_ms=800">
                "overrides " <input id="overrides" placeholder="stall_at=10&stall_ms=800" bind:value=overrides/>
            </label>
        </Show>
    }
}

/// The voice checkboxes, and a note on what they do for the chosen target.
#[component]
fn VoiceChoices(
    voice: RwSignal<bool>,
    turn: RwSignal<bool>,
    kind: RwSignal<String>,
) -> impl IntoView {
    view! {
        <label title="speak each reply: the first sentence goes to the simulator's TTS and plays here">
            <input id="voice" type="checkbox" bind:checked=voice/>" voice"
        </label>
        <label title="speak first: the microphone's speech goes to the simulator's STT, its transcript is the prompt, the reply is spoken; shows voice_to_voice_ms by stage">
            <input id="voice-turn" type="checkbox" bind:checked=turn/>" voice turn (microphone)"
        </label>
        {move || ((voice.get() || turn.get()) && !is_sim(kind)).then(|| view! {
            <span class="note" id="voice-note">"voice applies to simulated profiles only; this target runs without it"</span>
        })}
        {move || (turn.get() && is_sim(kind)).then(|| view! {
            <span class="note" id="turn-note">"speak after Run, one turn at a time; each reply waits for you to stop"</span>
        })}
    }
}

/// How many requests are still out, and whether a voice turn waits for the user.
#[component]
fn RunStatus(lab: Lab) -> impl IntoView {
    view! {
        <span id="in-flight">{move || match lab.in_flight.get() {
            0 => String::new(),
            n => format!("{n} in flight"),
        }}</span>
        {move || lab.listening.get().then(|| view! {
            <span class="note" id="listening">"listening: speak, then stop"</span>
        })}
        <span class="note" id="lab-stored">{move || lab.stored.get().text()}</span>
    }
}

/// The simulator's profiles as suggestions for the profile field (`profiles.rs`); the
/// field still takes any name, and a list that does not load only leaves it bare.
#[component]
fn ProfileSuggestions() -> impl IntoView {
    let list = LocalResource::new(profiles::load);
    let options = move || {
        list.get()
            .and_then(Result::ok)
            .unwrap_or_default()
            .into_iter()
            .map(|p| view! { <option value=p/> })
            .collect_view()
    };
    view! { <datalist id="profiles">{options}</datalist> }
}

/// The proxy's configured upstreams: choosing one fills the URL and API with its chat
/// endpoint (`upstreams.rs`).
#[component]
fn UpstreamPicker(url: RwSignal<String>, api: RwSignal<String>) -> impl IntoView {
    let list = LocalResource::new(upstreams::load);
    move || match list.get() {
        None => view! { <span class="note">"loading the proxy's upstreams"</span> }.into_any(),
        Some(Err(e)) => view! { <span class="note" id="upstream-note">{e}</span> }.into_any(),
        Some(Ok(list)) if list.is_empty() => view! {
            <span class="note" id="upstream-note">
                "no upstreams configured (ttfx serve --config FILE; see docs/serve.md)"
            </span>
        }
        .into_any(),
        Some(Ok(list)) => {
            let options = list
                .iter()
                .map(|u| view! { <option value=u.name.clone()>{u.title()}</option> })
                .collect_view();
            let pick = move |ev| {
                let name = event_target_value(&ev);
                if let Some(u) = list.iter().find(|u| u.name == name) {
                    let (to, speaks) = u.target();
                    url.set(to);
                    api.set(speaks);
                }
            };
            view! {
                <label title="an upstream of this server's vantage proxy, in its own API">
                    "upstream "
                    <select id="upstream" on:change=pick>
                        <option value="">"pick one"</option>
                        {options}
                    </select>
                </label>
            }
            .into_any()
        }
    }
}

/// Starts `plan.concurrency` workers that share one queue of `plan.runs` requests.
fn launch(lab: Lab, plan: Plan, voice: Option<AudioContext>) -> Result<(), String> {
    let probe = Probe::new(ProbeOptions {
        label: Some(plan.target.label()),
        ..ProbeOptions::default()
    })
    .map_err(|e| format!("the probe cannot start: {e}"))?;
    let next = Rc::new(Cell::new(0usize));
    let plan = Rc::new(plan);
    lab.in_flight.update(|n| *n += plan.runs);
    for _ in 0..plan.concurrency {
        let (probe, next, plan, voice) = (probe.clone(), next.clone(), plan.clone(), voice.clone());
        spawn_local(async move { worker(lab, probe, &plan, &next, voice.as_ref()).await });
    }
    Ok(())
}

async fn worker(
    lab: Lab,
    probe: Probe,
    plan: &Plan,
    next: &Cell<usize>,
    voice: Option<&AudioContext>,
) {
    static KEYS: AtomicU64 = AtomicU64::new(0);
    while next.get() < plan.runs {
        next.set(next.get() + 1);
        let key = KEYS.fetch_add(1, Ordering::Relaxed);
        // A voice turn listens first: the transcript of the user's speech is the prompt.
        let heard = match (plan.turn, voice, plan.target.stt_url()) {
            (true, Some(ctx), Some(stt_url)) => {
                lab.listening.set(true);
                let heard = turn::listen(ctx, &stt_url).await;
                lab.listening.set(false);
                match heard {
                    Ok(heard) => Some(heard),
                    Err(e) => {
                        let message = Message::new(key, plan.target.label(), String::new());
                        message.error(&e);
                        lab.messages.update(|m| m.push(message));
                        lab.in_flight.update(|n| *n = n.saturating_sub(1));
                        continue;
                    }
                }
            }
            _ => None,
        };
        let prompt = heard
            .as_ref()
            .map_or_else(|| plan.prompt.clone(), |h| h.transcript.clone());
        let message = Message::new(key, plan.target.label(), prompt.clone());
        lab.messages.update(|m| m.push(message.clone()));
        // The view inserts the reply element on its next tick; the probe must watch it
        // before the first token lands.
        gloo_timers::future::TimeoutFuture::new(0).await;
        let turn = heard.as_ref().map(|h| &h.turn);
        match document().get_element_by_id(&message.reply_id()) {
            Some(reply) => {
                match measure(&probe, &plan.target, &prompt, &reply, &message, voice, turn).await {
                    Ok(run) => {
                        // Stored in the background: the next request does not wait for it.
                        let stored = run.clone();
                        spawn_local(async move { collect::store(&stored, lab.stored).await });
                        lab.runs.update(|r| r.push(run));
                    }
                    Err(e) => message.error(&e),
                }
            }
            None => message.error("the reply element was not rendered"),
        }
        if let Some(heard) = &heard {
            heard.turn.close();
        }
        lab.in_flight.update(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(kind: &str, target: &str, api: &str, runs: &str, conc: &str) -> Fields {
        Fields {
            kind: kind.into(),
            profile: target.into(),
            url: target.into(),
            api: api.into(),
            prompt: "hi".into(),
            runs: runs.into(),
            concurrency: conc.into(),
            ..Fields::default()
        }
    }

    #[test]
    fn plan_checks_counts_and_caps_concurrency() {
        let p = fields("sim", "default", "openai-chat", "3", "8")
            .plan()
            .unwrap();
        assert_eq!((p.runs, p.concurrency), (3, 3));
        let e = fields("sim", "default", "openai-chat", "0", "1")
            .plan()
            .unwrap_err();
        assert!(e.starts_with("runs must be"), "{e}");
        let e = fields("sim", "default", "nope", "1", "1")
            .plan()
            .unwrap_err();
        assert!(e.starts_with("API: unknown API `nope`"), "{e}");
        let e = fields("url", "ftp://x", "openai-chat", "1", "1")
            .plan()
            .unwrap_err();
        assert!(e.contains("ftp://x"), "{e}");
    }

    #[test]
    fn a_voice_turn_speaks_the_reply_one_at_a_time_on_simulated_targets() {
        let mut f = fields("sim", "default", "openai-chat", "3", "4");
        f.turn = true;
        let p = f.plan().unwrap();
        assert!(p.turn && p.voice);
        assert_eq!(p.concurrency, 1);
        let mut f = fields(
            "url",
            "/proxy/local/v1/chat/completions",
            "openai-chat",
            "1",
            "1",
        );
        f.turn = true;
        assert!(!f.plan().unwrap().turn);
    }

    #[test]
    fn voice_is_for_simulated_targets_only() {
        let mut f = fields("sim", "default", "openai-chat", "1", "1");
        f.voice = true;
        assert!(f.plan().unwrap().voice);
        let mut f = fields(
            "url",
            "/proxy/local/v1/chat/completions",
            "openai-chat",
            "1",
            "1",
        );
        f.voice = true;
        assert!(!f.plan().unwrap().voice);
        assert!(
            !fields("sim", "default", "openai-chat", "1", "1")
                .plan()
                .unwrap()
                .voice
        );
    }
}

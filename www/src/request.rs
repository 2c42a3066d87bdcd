//! One measured request, as a chat product would make it: the probe times the fetch, the
//! page reads the body itself and shows the reply text as it arrives; afterwards the
//! simulator's record (`/records/{x-request-id}`) is joined to the run as the server clock.

use std::rc::Rc;

use js_sys::{Reflect, Uint8Array};
use ttfx_core::ServerRecord;
use ttfx_core::decode::{Decoder, Event, Limits};
use ttfx_core::report::Run;
use ttfx_probe::Probe;
use ttfx_probe::audio::VoiceTurn;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AudioContext, Element, ReadableStreamDefaultReader, RequestInit, Response};

use crate::js;
use crate::reply::ReplySink;
use crate::target::Target;
use crate::voice::{Voice, VoicedSink};

/// Measures one request to `target`; `reply` is the element the text lands in (watched
/// for render timing). With `voice` (an AudioContext, created before the request) and a
/// simulated target, the reply is also spoken (see `voice`). Returns the run with the
/// server's record joined when one exists.
pub async fn measure(
    probe: &Probe,
    target: &Target,
    prompt: &str,
    reply: &Element,
    sink: &dyn ReplySink,
    voice: Option<&AudioContext>,
    heard: Option<&Rc<VoiceTurn>>,
) -> Result<Run, String> {
    let run = probe.start(Some(target.label()));
    if let Err(e) = run.watch(reply) {
        sink.error(&format!("render timing is off: {e}"));
    }
    let init = RequestInit::new();
    init.set_method("POST");
    let body = target.api().streaming_body("ttfx-lab", prompt);
    init.set_body(&JsValue::from_str(&body));
    let headers = js_sys::Object::new();
    let _ = Reflect::set(&headers, &"content-type".into(), &"application/json".into());
    init.set_headers(&headers);
    let mut request_id = None;
    let mut turn = None;
    match run.fetch(&JsValue::from_str(&target.url()), &init).await {
        Ok(response) => {
            request_id = response.headers().get("x-request-id").ok().flatten();
            // The voice turn that led here: its speech and transcript join the run.
            if let Some(turn) = heard {
                crate::turn::include(&run, turn);
            }
            if !response.ok() {
                sink.error(&format!("HTTP {}", response.status()));
            }
            // A failed request has no reply to speak.
            if let (Some(ctx), Some(tts_url), true) = (voice, target.tts_url(), response.ok()) {
                match Voice::start(&run, ctx, tts_url).await {
                    Ok(v) => turn = Some(v),
                    Err(e) => sink.error(&e),
                }
            }
            let voiced = VoicedSink {
                inner: sink,
                voice: turn.as_ref(),
            };
            if let Err(e) = read_reply(&response, target, &voiced).await {
                sink.error(&e);
            }
            if let Some(Err(e)) = turn.as_ref().map(Voice::finish) {
                sink.error(&e);
            }
        }
        Err(e) => sink.error(&format!("fetch failed: {}", js::text(&e))),
    }
    // A turn's moments are all known once the reply has streamed or failed (the lab has
    // no barge-in): the run need not wait for it.
    if let Some(turn) = heard {
        turn.end();
    }
    let report = run.finished().await;
    if let Some(problem) = turn.as_ref().and_then(Voice::stop) {
        sink.error(&problem);
    }
    let report = report.map_err(|e| format!("the probe gave no report: {e}"))?;
    let mut record = report.run;
    if let Some(id) = request_id.filter(|_| same_origin(&target.url())) {
        if let Some(server) = fetch_record(&id).await {
            record = record
                .with_server(&server.server)
                .map_err(|e| format!("run timeline: {e}"))?;
        }
        record.id = Some(id);
    }
    Ok(record)
}

/// Reads the body to its end, handing visible and reasoning text to the sink.
async fn read_reply(
    response: &Response,
    target: &Target,
    sink: &dyn ReplySink,
) -> Result<(), String> {
    let Some(body) = response.body() else {
        return Ok(());
    };
    let reader: ReadableStreamDefaultReader = body
        .get_reader()
        .dyn_into()
        .map_err(|_| "the body has no default reader".to_owned())?;
    let mut decoder = Decoder::new(target.api().dialect(), Limits::DEFAULT);
    loop {
        let step = JsFuture::from(reader.read())
            .await
            .map_err(|e| format!("the stream broke: {}", js::text(&e)))?;
        let done = Reflect::get(&step, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        let events = if done {
            decoder.finish()
        } else {
            let value = Reflect::get(&step, &"value".into()).unwrap_or(JsValue::UNDEFINED);
            let bytes = value
                .dyn_into::<Uint8Array>()
                .map(|a| a.to_vec())
                .unwrap_or_default();
            decoder.push(&bytes)
        };
        for event in events {
            match event {
                Event::Text { text } => sink.text(&text),
                Event::Reasoning { text } => sink.reasoning(&text),
                Event::Error { message, .. } => sink.error(&message),
                _ => {}
            }
        }
        if done {
            return Ok(());
        }
    }
}

/// The record API lives on the serving origin: only same-origin targets have one here.
fn same_origin(url: &str) -> bool {
    if url.starts_with('/') {
        return true;
    }
    web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .is_some_and(|origin| url.starts_with(&format!("{origin}/")))
}

/// The simulator's record of the request, once it says the request is over. A missing or
/// unreadable record is not an error: the run still has the header-time server data.
async fn fetch_record(request_id: &str) -> Option<ServerRecord> {
    let window = web_sys::window()?;
    // The record is written as the last bytes leave; the client can get there first.
    for _ in 0..10 {
        let url = format!("/records/{request_id}");
        let response: Response = JsFuture::from(window.fetch_with_str(&url))
            .await
            .ok()?
            .dyn_into()
            .ok()?;
        if !response.ok() {
            return None;
        }
        let text = JsFuture::from(response.text().ok()?)
            .await
            .ok()?
            .as_string()?;
        let record = ServerRecord::from_json(&text).ok()?;
        if record.is_final() {
            return Some(record);
        }
        gloo_timers::future::TimeoutFuture::new(30).await;
    }
    None
}

#[cfg(test)]
mod tests {
    use ttfx_core::ServerTiming;
    use ttfx_core::TimingSource;
    use ttfx_core::timeline::ServerData;

    #[test]
    fn a_joined_record_pairs_with_the_client_milestones() {
        let file = crate::io::tests::report(&crate::io::tests::documented_run());
        let mut run = file.into_runs().remove(0);
        // Start from the client's side only, then join a record like the simulator's.
        run.timeline.server = ServerData::default();
        let record = ServerData {
            timings: vec![ServerTiming {
                name: "first_visible_token".into(),
                duration_ms: Some(400.0),
                description: Some("ttfx sim record".into()),
                source: TimingSource::InBand,
            }],
            ..ServerData::default()
        };
        let joined = run.clone().with_server(&record).unwrap();
        let gap = joined
            .metrics
            .gaps
            .iter()
            .find(|g| g.milestone.as_str() == "first_visible_token")
            .unwrap();
        assert_eq!(
            (gap.client_ms, gap.server_ms, gap.gap_ms),
            (412.0, 400.0, 12.0)
        );
        // Joining twice adds nothing.
        let twice = joined.clone().with_server(&record).unwrap();
        assert_eq!(twice.timeline.server.timings.len(), 1);
    }
}

//! A load, run: the open loop's pacer or the closed loop's workers send, each request
//! is read on the runtime, and its sample is folded into the tally as it ends.
//!
//! The end: sending stops at the window's end (or at the stop); requests still open then
//! are awaited, each until its own timeout from its send, and counted
//! (`finished_after_window`): dropping them would leave out exactly the slowest requests
//! and flatter every tail. A stop cancels what is in flight (`cancelled`, in no figure).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::arrivals::Poisson;
use crate::error::LoadError;
use crate::exchange::{self, Shared};
use crate::report::{LoadReport, SCHEMA, SCHEMA_VERSION};
use crate::sample::Sample;
use crate::spec::{LoadSpec, Mode, SpecError};
use crate::tally::{Tally, Window, mode_report};

/// The first arrival is this far after the start: the pacer thread and the first
/// connection are set up before anything is due, not counted as its lateness.
const LEAD: Duration = Duration::from_millis(20);

/// Runs `spec` until its duration is over (and its open requests have ended) or
/// `cancel` fires, and reports. It spawns its requests on the current tokio runtime,
/// so it can run in the background of another program; the open loop's pacer is a
/// thread of its own (see `pacer`).
pub async fn run(spec: LoadSpec, cancel: CancellationToken) -> Result<LoadReport, LoadError> {
    spec.check()?;
    let client = crate::client::new(spec.endpoint.ca_file.as_deref())?;
    let uri: hyper::Uri = spec
        .endpoint
        .url
        .parse()
        .map_err(|_| SpecError::Url(ttfx_core::target::url_for_report(&spec.endpoint.url)))?;
    let shared = Arc::new(Shared {
        client,
        uri,
        headers: headers(&spec)?,
        bodies: spec
            .prompts
            .iter()
            .map(|p| Bytes::from(spec.endpoint.api.streaming_body(&spec.model, p)))
            .collect(),
        dialect: spec.endpoint.api.dialect(),
        timeout: spec.timeout,
        budgets: spec.goodput.clone(),
        readers: crate::sample::readers(),
        cancel: cancel.clone(),
    });
    let start = Instant::now() + LEAD;
    let warmup_end = start + spec.warmup;
    let planned_end = spec.duration.map(|d| warmup_end + d);
    let (tx, mut rx) = mpsc::unbounded_channel::<Sample>();
    let last_scheduled: Arc<Mutex<Option<Instant>>> = Arc::default();
    let pacer = match spec.mode {
        Mode::Rate(rate) => Some(open_loop(
            &shared,
            Poisson::new(rate, spec.seed),
            (start, warmup_end),
            spec.duration.map(|d| spec.warmup + d),
            tx,
            last_scheduled.clone(),
        )?),
        Mode::Concurrency(streams) => {
            closed_loop(&shared, streams, (start, warmup_end), planned_end, tx);
            None
        }
    };
    let mut tally = Tally::new(planned_end);
    let mut stopped_at = None;
    loop {
        tokio::select! {
            sample = rx.recv() => match sample {
                Some(s) => tally.add(s),
                None => break,
            },
            () = cancel.cancelled(), if stopped_at.is_none() => stopped_at = Some(Instant::now()),
        }
    }
    if let Some(pacer) = pacer {
        // It has ended: its sender, the last one, is gone.
        let _ = tokio::task::spawn_blocking(move || pacer.join()).await;
    }
    let end = match (planned_end, stopped_at) {
        (Some(e), Some(s)) => e.min(s),
        (Some(e), None) => e,
        (None, Some(s)) => s,
        (None, None) => Instant::now(),
    };
    let stopped = stopped_at.is_some_and(|s| planned_end.is_none_or(|e| s < e));
    let window = Window {
        start: warmup_end,
        last_scheduled: *last_scheduled.lock().unwrap_or_else(|e| e.into_inner()),
        end: end.max(warmup_end),
    };
    let figures = tally.finish(window, &spec.goodput, matches!(spec.mode, Mode::Rate(_)));
    Ok(LoadReport {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        target: spec.label.clone(),
        url: ttfx_core::target::url_for_report(&spec.endpoint.url),
        api: spec.endpoint.api.as_str().into(),
        mode: mode_report(spec.mode),
        seed: spec.seed,
        warmup_s: spec.warmup.as_secs_f64(),
        duration_s: spec.duration.map(|d| d.as_secs_f64()),
        timeout_s: spec.timeout.as_secs_f64(),
        window_s: figures.window_s,
        elapsed_s: figures.elapsed_s,
        stopped,
        requests: figures.requests,
        throughput: figures.throughput,
        metrics: figures.metrics,
        errors: figures.errors,
        generator: figures.generator,
    })
}

/// Every request's headers: the body's type and the spec's own, whose values are
/// marked sensitive (hyper then keeps them out of its debug output).
fn headers(spec: &LoadSpec) -> Result<HeaderMap, SpecError> {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for h in &spec.endpoint.headers {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|_| SpecError::HeaderName(h.name.clone()))?;
        let mut value =
            HeaderValue::from_str(&h.value).map_err(|_| SpecError::HeaderValue(h.name.clone()))?;
        value.set_sensitive(true);
        map.append(name, value);
    }
    Ok(map)
}

/// The pacer sends each arrival as a task on this runtime. `times` are the schedule's
/// start and the warm-up's end; `end` is the schedule's end as an offset from its start.
fn open_loop(
    shared: &Arc<Shared>,
    schedule: Poisson,
    (start, warmup_end): (Instant, Instant),
    end: Option<Duration>,
    tx: mpsc::UnboundedSender<Sample>,
    last_scheduled: Arc<Mutex<Option<Instant>>>,
) -> Result<std::thread::JoinHandle<()>, LoadError> {
    let runtime = tokio::runtime::Handle::current();
    let shared = shared.clone();
    let cancel = shared.cancel.clone();
    crate::pacer::start(schedule, start, end, cancel, move |index, due| {
        let measured = due >= warmup_end;
        if measured {
            *last_scheduled.lock().unwrap_or_else(|e| e.into_inner()) = Some(due);
        }
        let (shared, tx) = (shared.clone(), tx.clone());
        runtime.spawn(async move {
            let sample = exchange::one(&shared, index, Some(due), measured).await;
            let _ = tx.send(sample);
        });
    })
    .map_err(LoadError::Thread)
}

/// `streams` workers from `start`, each sending its next request when its last one ends, until the
/// window's end or the stop.
fn closed_loop(
    shared: &Arc<Shared>,
    streams: usize,
    (start, warmup_end): (Instant, Instant),
    planned_end: Option<Instant>,
    tx: mpsc::UnboundedSender<Sample>,
) {
    let next = Arc::new(AtomicU64::new(0));
    for _ in 0..streams {
        let (shared, tx, next) = (shared.clone(), tx.clone(), next.clone());
        tokio::spawn(async move {
            // All together at the start, as the open loop's schedule begins there.
            tokio::time::sleep_until(tokio::time::Instant::from_std(start)).await;
            loop {
                let now = Instant::now();
                if shared.cancel.is_cancelled() || planned_end.is_some_and(|e| now >= e) {
                    return;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                let sample = exchange::one(&shared, index, None, now >= warmup_end).await;
                if tx.send(sample).is_err() {
                    return;
                }
            }
        });
    }
}

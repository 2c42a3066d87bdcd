//! First byte against each engine's own network record (issue #18 point 2): a reply from
//! `ttfx serve`'s simulator read to its end through the probe, in one engine, with the
//! probe's `first_byte` set beside
//!
//! - the engine's own record of the same request: Chromium's DevTools
//!   `Network.dataReceived` ([`devtools`]), Firefox's WebDriver BiDi network events
//!   ([`bidi_network`]), WebKit's Resource Timing `responseStart` (read in the page);
//! - the server's record: the wall-clock time its first body chunk left (same machine,
//!   same system clock).
//!
//! The page places its times on the system clock as `performance.timeOrigin + t − skew`,
//! `skew` being the page clock's offset from `Date.now()` read where `Date.now()` steps
//! (as `paint_truth` does). Shared by the e2e test and the bench.

pub mod bidi_network;
pub mod devtools;

use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Context;
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use ttfx_webdriver::{Driver, Engine};

use crate::site::{self, Site};
use crate::{ServeProcess, page, paths};
use bidi_network::BidiNetwork;
use devtools::DevToolsNetwork;

/// The engine's record of the request, where the engine keeps one the test can read.
enum NetworkRecord {
    DevTools(DevToolsNetwork),
    Bidi(BidiNetwork),
    /// WebKit: the page's own Resource Timing entry (nothing through the driver).
    ResourceTiming,
}

/// What the engine's network record says about a run's first byte.
#[derive(Debug, Clone, PartialEq)]
pub enum NetworkTruth {
    /// Chromium: the first `Network.dataReceived`, epoch ms (through the request's
    /// `wallTime`) and page ms (through the response's `receiveHeadersStart`, the
    /// moment the page's Resource Timing names `responseStart`); `tie_check_ms`, how far
    /// the same tie made at `sendStart` (Resource Timing's `requestStart`) lands from it.
    DataReceived {
        unix_ms: f64,
        page_ms: Option<f64>,
        tie_check_ms: Option<f64>,
        /// The response's `receiveHeadersStart` (DevTools' record of the headers'
        /// arrival in the network service) on the page clock through the tie made at
        /// `sendStart` / Resource Timing's `requestStart`: the witness for
        /// `response_start`, tied where it is not itself read.
        headers_page_ms: Option<f64>,
        /// `requestWillBeSent` minus the probe's `request_start`, on the page clock (what
        /// `ttfx run`'s DevTools check takes as 0).
        request_sent_after_start_ms: Option<f64>,
    },
    /// Firefox: the BiDi record's `responseStart` and `network.responseStarted` event.
    Bidi(bidi_network::BidiResponse),
    /// WebKit: Resource Timing `responseStart`, page ms (performance.now()'s clock).
    ResponseStart { page_ms: f64 },
}

/// One run's figures.
#[derive(Debug, Clone)]
pub struct NetSample {
    pub engine: Engine,
    pub delay_ms: u32,
    /// The probe's `first_byte` on the page clock (ms since timeOrigin).
    pub probe_page_ms: f64,
    /// The same on the system clock, through timeOrigin and the measured skew. On a page
    /// clock as coarse as `Date.now()` (WebKit's plain page, 1 ms) the skew read at the
    /// step is the step itself, and this lands up to 1 ms late (docs/fidelity.md).
    pub probe_unix_ms: f64,
    /// The same through timeOrigin alone (the report's own mapping).
    pub probe_origin_unix_ms: f64,
    /// The server's first body chunk handed to the HTTP body, epoch ms.
    pub server_unix_ms: f64,
    /// The server's headers recorded as sent, epoch ms.
    pub server_headers_unix_ms: f64,
    pub network: NetworkTruth,
    /// Resource Timing `responseStart`, page ms, where the entry has it.
    pub response_start_page_ms: Option<f64>,
    /// The probe's `response_start` milestone on the page clock, where the report has it.
    pub probe_response_start_page_ms: Option<f64>,
    /// The report's `engine_hop_ms`.
    pub engine_hop_ms: Option<f64>,
    /// The app's own reader: the page clock as its first non-empty read resolved.
    pub app_first_read_page_ms: f64,
    /// The page's `performance.timeOrigin` and whether it is cross-origin isolated.
    pub isolated: bool,
    /// Page clock − system clock at the step of Date.now(), before and after the run.
    pub skew_ms: f64,
    pub skew_after_ms: f64,
    pub time_origin: f64,
    /// The report's `timer_resolution_ms`.
    pub step_ms: Option<f64>,
    /// The report's `clock_offset` (offset, bound).
    pub clock_offset: Option<(f64, f64)>,
}

impl NetSample {
    /// The probe's first byte minus the engine's network record, ms: on the page clock
    /// for Chromium (through the tie; none without it) and WebKit; on the system clock
    /// for Firefox, whose BiDi timings are epoch ms.
    pub fn probe_minus_network_ms(&self) -> Option<f64> {
        match &self.network {
            // Only through the tie: `wallTime` places it late by up to 4.9 ms (below).
            NetworkTruth::DataReceived { page_ms, .. } => Some(self.probe_page_ms - (*page_ms)?),
            NetworkTruth::ResponseStart { page_ms } => Some(self.probe_page_ms - page_ms),
            NetworkTruth::Bidi(r) => Some(self.probe_unix_ms - r.response_start_unix_ms()?),
        }
    }

    /// The probe's `response_start` minus the engine's network record of the response's
    /// start, ms. Chromium: DevTools' `receiveHeadersStart` on the page clock (tied at the
    /// request's send). Firefox: BiDi's `responseStart`, epoch ms, the probe's time placed
    /// on the system clock through the page's skew. WebKit (no network record over
    /// WebDriver): the server's wall-clock send of the headers, the probe's time through
    /// `timeOrigin` alone (whose 1 ms floor [`Self::response_start_floor_ms`] names).
    pub fn response_start_minus_network_ms(&self) -> Option<f64> {
        let probe = self.probe_response_start_page_ms?;
        match &self.network {
            NetworkTruth::DataReceived {
                headers_page_ms, ..
            } => Some(probe - (*headers_page_ms)?),
            NetworkTruth::Bidi(r) => {
                Some(self.time_origin + probe - self.skew_ms - r.response_start_unix_ms()?)
            }
            NetworkTruth::ResponseStart { .. } => {
                Some(self.time_origin + probe - self.server_headers_unix_ms)
            }
        }
    }

    /// How early WebKit's witness reads by its clock alone: a plain page's
    /// `timeOrigin + t` is the wall time floored to the ms (docs/fidelity.md), so the
    /// probe's time through it is up to 1 ms early; 0 elsewhere.
    pub fn response_start_floor_ms(&self) -> f64 {
        match self.network {
            NetworkTruth::ResponseStart { .. } if !self.isolated => 1.0,
            _ => 0.0,
        }
    }

    /// The probe's `response_start` minus the server's send of the headers, on the system
    /// clock (through the page's skew), in every engine.
    pub fn response_start_minus_server_ms(&self) -> Option<f64> {
        Some(
            self.time_origin + self.probe_response_start_page_ms?
                - self.skew_ms
                - self.server_headers_unix_ms,
        )
    }

    /// The probe's `first_byte` minus the app's own first read, page clock: the probe
    /// reads first and hands the chunk on, so this is ≤ 0 by the probe's own work.
    pub fn first_byte_minus_app_read_ms(&self) -> f64 {
        self.probe_page_ms - self.app_first_read_page_ms
    }

    /// Whether [`probe_minus_network_ms`](Self::probe_minus_network_ms) compares on the
    /// page clock (else on the system clock, through the page's skew).
    pub fn network_on_page_clock(&self) -> bool {
        matches!(
            self.network,
            NetworkTruth::ResponseStart { .. }
                | NetworkTruth::DataReceived {
                    page_ms: Some(_),
                    ..
                }
        )
    }

    /// Chromium: the probe's first byte minus `dataReceived` placed on the system clock
    /// through `wallTime` (the other mapping, for comparison: `wallTime` is read after the
    /// monotonic `timestamp`, so this places `dataReceived` late, by up to 4.9 ms measured).
    pub fn probe_minus_data_received_wall_ms(&self) -> Option<f64> {
        match &self.network {
            NetworkTruth::DataReceived { unix_ms, .. } => Some(self.probe_unix_ms - unix_ms),
            _ => None,
        }
    }

    /// The probe's first byte minus the server's send of the first body chunk, on the
    /// system clock.
    pub fn probe_minus_server_ms(&self) -> f64 {
        self.probe_unix_ms - self.server_unix_ms
    }

    /// The same through timeOrigin alone, without the skew (how the report maps it).
    pub fn origin_minus_server_ms(&self) -> f64 {
        self.probe_origin_unix_ms - self.server_unix_ms
    }
}

/// The page clock against the system clock (see `net.js`'s `clockSamples`).
#[derive(Debug, Clone)]
pub struct ClockSamples {
    /// (timeOrigin + performance.now()) − Date.now() at arbitrary instants.
    pub any_instant: Vec<f64>,
    /// The same at the instant Date.now() steps.
    pub at_step: Vec<f64>,
    pub time_origin: f64,
    /// Distinct values of `performance.timeOrigin` over 1,000 reads.
    pub distinct_origins: u64,
    pub step_ms: f64,
    pub isolated: bool,
}

impl ClockSamples {
    /// The reads at any instant within `limit` ms, as (value rounded to 0.01 ms, share),
    /// most frequent first, and how many lay beyond `limit` (the thread preempted between
    /// its two clock reads).
    pub fn histogram(&self, limit: f64) -> (Vec<(f64, f64)>, usize) {
        let mut counts = std::collections::BTreeMap::<i64, usize>::new();
        let mut beyond = 0;
        for v in &self.any_instant {
            if v.abs() > limit {
                beyond += 1;
            } else {
                *counts.entry((v * 100.0).round() as i64).or_default() += 1;
            }
        }
        let total = self.any_instant.len().max(1) as f64;
        let mut out: Vec<(f64, f64)> = counts
            .into_iter()
            .map(|(k, n)| (k as f64 / 100.0, n as f64 / total))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        (out, beyond)
    }
}

/// `v`, a number in the page's answer `out`, or an error that shows the whole answer.
fn page_number(out: &Value, v: &Value, what: &str) -> anyhow::Result<f64> {
    v.as_f64()
        .with_context(|| format!("no {what} in the page's answer: {out}"))
}

/// Chromium's `dataReceived` placed on the page clock: DevTools times it on the monotonic
/// clock, which the page does not read, so the two are tied where both name the
/// response's start (`receiveHeadersStart`, Resource Timing's `responseStart`).
fn data_received_truth(
    data: &devtools::FirstData,
    resource_timing: &Value,
    request_start: f64,
) -> NetworkTruth {
    // The monotonic clock's offset from the page's.
    let tie = data
        .headers_start_ticks_ms
        .zip(resource_timing["responseStart"].as_f64())
        .map(|(ticks, page)| ticks - page);
    let check = tie
        .zip(data.send_start_ticks_ms)
        .zip(resource_timing["requestStart"].as_f64())
        .map(|((tie, ticks), page)| ticks - page - tie);
    // The same tie made at the request's send, for the headers' own time.
    let send_tie = data
        .send_start_ticks_ms
        .zip(resource_timing["requestStart"].as_f64())
        .map(|(ticks, page)| ticks - page);
    NetworkTruth::DataReceived {
        unix_ms: data.first_data_unix_ms,
        page_ms: tie.map(|tie| data.first_data_ticks_ms - tie),
        tie_check_ms: check,
        headers_page_ms: data
            .headers_start_ticks_ms
            .zip(send_tie)
            .map(|(ticks, tie)| ticks - tie),
        request_sent_after_start_ms: tie.map(|tie| data.request_ticks_ms - tie - request_start),
    }
}

/// A served `net.html` in one engine, with the engine's network record attached.
pub struct NetLab {
    engine: Engine,
    client: Client,
    record: NetworkRecord,
    server: ServeProcess,
    runs: AtomicU32,
    _driver: Driver,
    _site: Site,
}

impl NetLab {
    /// `ttfx serve` (with `flags`), the engine's driver and a session on `net.html`.
    pub async fn start(engine: Engine, flags: &[&str]) -> anyhow::Result<NetLab> {
        let site = site::assemble()?;
        let mut args = vec!["--dist", site.dist_arg()];
        args.extend_from_slice(flags);
        let server = ServeProcess::start(&paths::ttfx_bin()?, &args)?;
        let driver =
            Driver::start(engine).with_context(|| format!("cannot start {}", engine.name()))?;
        let mut caps = engine.capabilities(&[]);
        if engine == Engine::Firefox {
            caps.insert(ttfx_webdriver::bidi::WEB_SOCKET_URL.into(), json!(true));
        }
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(driver.url())
            .await
            .with_context(|| format!("cannot open a {} session", engine.name()))?;
        let record = match engine {
            Engine::Chromium => NetworkRecord::DevTools(DevToolsNetwork::attach(&client).await?),
            Engine::Firefox => NetworkRecord::Bidi(BidiNetwork::attach(&client).await?),
            Engine::WebKit => NetworkRecord::ResourceTiming,
        };
        page::open_harness(&client, &format!("{}net.html", server.url)).await?;
        Ok(NetLab {
            engine,
            client,
            record,
            server,
            runs: AtomicU32::new(0),
            _driver: driver,
            _site: site,
        })
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// One reply whose headers and first body chunk both leave after `delay_ms` (the
    /// simulator's queue and TTFT set alike, so the response's first byte is also the
    /// body's: what Resource Timing's and BiDi's `responseStart` time).
    pub async fn run(&self, delay_ms: u32) -> anyhow::Result<NetSample> {
        self.run_with_body_gap(delay_ms, 0).await
    }

    /// One reply whose first body chunk leaves `body_gap_ms` after its headers: with a
    /// gap the app's reader is already waiting when the bytes come (the witness for
    /// `first_byte` against the app's own reader); the engines' records of the
    /// response's start still name the headers, but no longer the body's first byte.
    pub async fn run_with_body_gap(
        &self,
        delay_ms: u32,
        body_gap_ms: u32,
    ) -> anyhow::Result<NetSample> {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let id = format!("netbyte-{}-{}-{n}", std::process::id(), self.engine.name());
        let (url, init) = self.request_with_gap(delay_ms, body_gap_ms, n);
        let out = page::call(
            &self.client,
            "netRun",
            json!({ "url": url, "init": init, "id": id }),
        )
        .await?;
        let number = |v: &Value, what: &str| page_number(&out, v, what);
        let report = &out["report"]["run"];
        let first_byte = number(
            &report["timeline"]["milestones"]["first_byte"],
            "first_byte",
        )?;
        let (time_origin, request_start) = (
            number(&out["timeOrigin"], "timeOrigin")?,
            number(&out["requestStart"], "requestStart")?,
        );
        let skew_ms = number(&out["skewMs"], "skewMs")?;
        let probe_page_ms = request_start + first_byte;
        let record = &out["record"];
        let received = number(&record["received_unix_ms"], "the record's received_unix_ms")?;
        let first_chunk = number(&record["chunks"][0]["at_ms"], "the record's first chunk")?;
        let network = self.network_truth(&id, &url, &out, request_start).await?;
        let offset = &report["metrics"]["clock_offset"];
        Ok(NetSample {
            engine: self.engine,
            delay_ms,
            probe_page_ms,
            probe_unix_ms: time_origin + probe_page_ms - skew_ms,
            probe_origin_unix_ms: time_origin + probe_page_ms,
            server_unix_ms: received + first_chunk,
            server_headers_unix_ms: number(
                &record["server"]["wall_clock"]["sent_unix_ms"],
                "the record's sent_unix_ms",
            )?,
            network,
            response_start_page_ms: out["resourceTiming"]["responseStart"]
                .as_f64()
                .filter(|t| *t > 0.0),
            probe_response_start_page_ms: report["timeline"]["milestones"]["response_start"]
                .as_f64()
                .map(|t| request_start + t),
            engine_hop_ms: report["metrics"]["engine_hop_ms"]["value"].as_f64(),
            app_first_read_page_ms: number(&out["appFirstRead"], "appFirstRead")?,
            isolated: report["timeline"]["environment"]["cross_origin_isolated"] == true,
            skew_ms,
            skew_after_ms: number(&out["skewAfterMs"], "skewAfterMs")?,
            time_origin,
            step_ms: report["timeline"]["environment"]["timer_resolution_ms"].as_f64(),
            clock_offset: offset["offset_ms"]
                .as_f64()
                .zip(offset["error_bound_ms"].as_f64()),
        })
    }

    /// What this engine's network record says about run `id`'s first byte; `out` is the
    /// page's answer for the run, `request_start` the probe's on the page clock.
    async fn network_truth(
        &self,
        id: &str,
        url: &str,
        out: &Value,
        request_start: f64,
    ) -> anyhow::Result<NetworkTruth> {
        Ok(match &self.record {
            NetworkRecord::DevTools(d) => data_received_truth(
                &d.first_data(id).await?,
                &out["resourceTiming"],
                request_start,
            ),
            NetworkRecord::Bidi(b) => NetworkTruth::Bidi(b.response(url).await?),
            NetworkRecord::ResourceTiming => NetworkTruth::ResponseStart {
                page_ms: page_number(
                    out,
                    &out["resourceTiming"]["responseStart"],
                    "Resource Timing responseStart",
                )?,
            },
        })
    }

    /// Chromium: one request without the probe, and DevTools' `requestWillBeSent` minus
    /// the page clock read just before `fetch` was called (page clock, through the
    /// `receiveHeadersStart` tie); `None` in other engines or without the tie.
    pub async fn plain_request_sent_after_fetch_ms(
        &self,
        delay_ms: u32,
    ) -> anyhow::Result<Option<f64>> {
        let NetworkRecord::DevTools(d) = &self.record else {
            return Ok(None);
        };
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let id = format!("netbyte-{}-plain-{n}", std::process::id());
        let (url, init) = self.request(delay_ms, n);
        let out = page::call(
            &self.client,
            "plainRun",
            json!({ "url": url, "init": init, "id": id }),
        )
        .await?;
        let data = d.first_data(&id).await?;
        let (Some(start), Some(rt), Some(ticks)) = (
            out["requestStart"].as_f64(),
            out["resourceTiming"]["responseStart"].as_f64(),
            data.headers_start_ticks_ms,
        ) else {
            return Ok(None);
        };
        Ok(Some(data.request_ticks_ms - (ticks - rt) - start))
    }

    /// The simulator's URL for run `n` and the request's init.
    fn request(&self, delay_ms: u32, n: u32) -> (String, Value) {
        self.request_with_gap(delay_ms, 0, n)
    }

    /// As [`Self::request`], the first token `body_gap_ms` after the headers.
    fn request_with_gap(&self, delay_ms: u32, body_gap_ms: u32, n: u32) -> (String, Value) {
        let ttft_ms = delay_ms + body_gap_ms;
        let url = format!(
            "{}sim/default/v1/chat/completions?queue_ms={delay_ms}&ttft_ms={ttft_ms}&output_tokens=8&tokens_per_second=200&seed={n}",
            self.server.url
        );
        let init = json!({
            "method": "POST",
            "headers": { "content-type": "application/json" },
            "body": ttfx_core::ChatApi::OpenAiChat.streaming_body("sim", "hi"),
        });
        (url, init)
    }

    /// `count` reads of the page clock against the system clock.
    pub async fn clock_samples(&self, count: usize) -> anyhow::Result<ClockSamples> {
        let out = page::call(&self.client, "clockSamples", json!({ "count": count })).await?;
        let list = |v: &Value| -> Vec<f64> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .collect()
        };
        Ok(ClockSamples {
            any_instant: list(&out["anyInstant"]),
            at_step: list(&out["atStep"]),
            time_origin: out["timeOrigin"].as_f64().unwrap_or(f64::NAN),
            distinct_origins: out["distinctOrigins"].as_u64().unwrap_or(0),
            step_ms: out["stepMs"].as_f64().unwrap_or(f64::NAN),
            isolated: out["isolated"] == true,
        })
    }

    /// Closes the session (the driver, server and site go on drop).
    pub async fn close(self) -> anyhow::Result<()> {
        self.client.clone().close().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_data(headers_start_ticks_ms: Option<f64>) -> devtools::FirstData {
        devtools::FirstData {
            request_unix_ms: 1_700_000_000_000.0,
            first_data_unix_ms: 1_700_000_000_055.0,
            request_ticks_ms: 950.0,
            first_data_ticks_ms: 1005.0,
            headers_start_ticks_ms,
            send_start_ticks_ms: Some(990.0),
        }
    }

    #[test]
    fn data_received_is_tied_to_the_page_clock_at_the_response_start() {
        let rt = json!({ "responseStart": 100.0, "requestStart": 89.5 });
        let truth = data_received_truth(&first_data(Some(1000.0)), &rt, 49.0);
        assert_eq!(
            truth,
            NetworkTruth::DataReceived {
                unix_ms: 1_700_000_000_055.0,
                page_ms: Some(105.0),
                tie_check_ms: Some(0.5),
                // 1000 − (990 − 89.5): the headers through the send's tie, 0.5 ms
                // before Resource Timing's responseStart (the tie check's half-ms).
                headers_page_ms: Some(99.5),
                request_sent_after_start_ms: Some(1.0),
            }
        );
    }

    #[test]
    fn without_the_tie_only_the_wall_clock_figure_is_left() {
        let truth =
            data_received_truth(&first_data(None), &json!({ "responseStart": 100.0 }), 49.0);
        assert_eq!(
            truth,
            NetworkTruth::DataReceived {
                unix_ms: 1_700_000_000_055.0,
                page_ms: None,
                tie_check_ms: None,
                headers_page_ms: None,
                request_sent_after_start_ms: None,
            }
        );
    }
}

//! First paint against pixels: a reply streamed from `ttfx serve`'s simulator into
//! `paint.html`'s reply box while the DevTools screencast records the page's frames; the
//! truth is the first frame in which the box shows ink, and each run yields the probe's
//! `first_paint` minus that truth. Shared by the e2e test and `cargo xtask bench fidelity`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::screencast::{Region, Screencast};
use crate::site::{self, Site};
use crate::{Chromedriver, ServeProcess, page, paths};
use ttfx_webdriver::devtools::Cdp;

/// One frame at 60 Hz, the rate headless Chromium's compositor begins frames at.
pub const FRAME_INTERVAL_MS: f64 = 1000.0 / 60.0;

/// How much the page's time, placed on the system clock, can be off the frame's stamp
/// for want of clock resolution: the page ties its clock to the system clock at a step
/// of `Date.now()`, which steps 1 ms; the page clock itself steps 5 µs here (cross-origin
/// isolated) and the frame stamp 1 µs.
pub const CLOCK_RESOLUTION_MS: f64 = 1.0;

/// The screencast's largest frame: the viewport scaled down (text 40 px bold stays ink).
const MAX_WIDTH: u32 = 400;
const MAX_HEIGHT: u32 = 300;

/// Ink pixels that make "the box shows text": more than one stray pixel, far fewer than
/// one 40 px glyph scaled by half.
const MIN_INK: usize = 4;

/// How the probe timed `first_paint`, as `paint.html` lets a test choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaintMethod {
    /// Chromium's Element Timing `presentationTime` (156 and later), with its `paintTime`
    /// as the report's `paint_time`.
    PresentationTime,
    /// The probe's fallback: the start of the frame after the one that rendered the text
    /// (Element Timing hidden).
    RafNextFrame,
}

impl PaintMethod {
    pub const ALL: [PaintMethod; 2] = [PaintMethod::PresentationTime, PaintMethod::RafNextFrame];

    /// The report's `paint_method` for it.
    pub fn name(self) -> &'static str {
        match self {
            PaintMethod::PresentationTime => "presentation_time",
            PaintMethod::RafNextFrame => "raf_next_frame",
        }
    }

    fn page(self) -> &'static str {
        match self {
            PaintMethod::PresentationTime => "paint.html",
            PaintMethod::RafNextFrame => "paint.html?paint=raf",
        }
    }
}

/// One run's figures, all on the system clock (epoch ms).
#[derive(Debug, Clone)]
pub struct PaintSample {
    pub method: String,
    pub first_dom_unix_ms: f64,
    pub first_paint_unix_ms: f64,
    /// The first frame whose reply box shows ink.
    pub truth_unix_ms: f64,
    /// The frame before it (after the request started), if any: its box was blank.
    pub blank_before_unix_ms: Option<f64>,
    /// `first_paint` − truth.
    pub paint_minus_truth_ms: f64,
    /// `paint_time` − truth, where the report has `paint_time` (Element Timing's
    /// `paintTime`: the page's rendering of the text, before the frame is presented).
    pub paint_time_minus_truth_ms: Option<f64>,
    /// truth − `first_dom`.
    pub truth_minus_dom_ms: f64,
    /// The page clock's offset from the system clock that placed the run.
    pub skew_ms: f64,
    pub frames: usize,
    /// The reply's text changes: one per chunk the page wrote into the box.
    pub dom_writes: usize,
    /// Frames since the request whose box shows ink.
    pub inked_frames: usize,
}

impl PaintSample {
    /// How many of the page's text changes no frame showed, if any. The screencast sends
    /// a frame only after the last one is acknowledged, so a test process slow to ack (a
    /// loaded machine) loses frames; when the lost one was the first with text, the truth
    /// is a later frame and the probe looks early by a frame or more. A run that lost
    /// frames is no witness. (Two changes inside one main-thread frame also share a
    /// frame: such a run is set aside too, which only costs a run.)
    pub fn lost_frames(&self) -> Option<usize> {
        Some(self.dom_writes.saturating_sub(self.inked_frames)).filter(|lost| *lost > 0)
    }
}

/// A screencast stamp against the frame that drew a change (see [`PaintLab::marks`]).
#[derive(Debug, Clone, Copy)]
pub struct MarkLatency {
    /// Stamp − the frame's start (requestAnimationFrame's argument).
    pub after_frame_start_ms: f64,
    /// Stamp − the requestAnimationFrame callback that made the change.
    pub after_callback_ms: f64,
    /// A black change's Element Timing `paintTime` − the frame's start, where exposed.
    pub paint_after_frame_start_ms: Option<f64>,
    /// Its `presentationTime` − the frame's start, where exposed.
    pub presented_after_frame_start_ms: Option<f64>,
}

/// A served `paint.html` in headless Chromium with the screencast running.
pub struct PaintLab {
    screencast: Option<Screencast>,
    _cdp: Arc<Cdp>,
    client: fantoccini::Client,
    server: ServeProcess,
    _driver: Chromedriver,
    _site: Site,
}

impl PaintLab {
    /// `ttfx serve` (cross-origin isolated, for the 5 µs page clock), chromedriver, a
    /// session, its page's DevTools and the screencast.
    pub async fn start() -> anyhow::Result<PaintLab> {
        let site = site::assemble()?;
        let server = ServeProcess::start(
            &paths::ttfx_bin()?,
            &["--dist", site.dist_arg(), "--cross-origin-isolated"],
        )?;
        let driver = Chromedriver::start()?;
        let client = driver.session().await?;
        let (cdp, events) = Cdp::attach(client.capabilities()).await?;
        let cdp = Arc::new(cdp);
        let screencast = Screencast::start(cdp.clone(), events, MAX_WIDTH, MAX_HEIGHT).await?;
        Ok(PaintLab {
            screencast: Some(screencast),
            _cdp: cdp,
            client,
            server,
            _driver: driver,
            _site: site,
        })
    }

    /// Opens `paint.html` with the probe set for `method`.
    pub async fn open(&self, method: PaintMethod) -> anyhow::Result<()> {
        page::open_harness(
            &self.client,
            &format!("{}{}", self.server.url, method.page()),
        )
        .await
    }

    /// One reply with the injected `ttft_ms`, measured against the frames.
    pub async fn run(&self, ttft_ms: u32) -> anyhow::Result<PaintSample> {
        let screencast = self.screencast.as_ref().context("screencast stopped")?;
        screencast.clear();
        let url = format!(
            "{}sim/default/v1/chat/completions?ttft_ms={ttft_ms}&output_tokens=20&tokens_per_second=50",
            self.server.url
        );
        let init = json!({
            "method": "POST",
            "headers": { "content-type": "application/json" },
            "body": ttfx_core::ChatApi::OpenAiChat.streaming_body("sim", "hi"),
        });
        let out = page::call(
            &self.client,
            "paintRun",
            json!({ "url": url, "init": init }),
        )
        .await?;
        // Frames of the last paints may still be on their way.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let number = |v: &Value, what: &str| {
            v.as_f64()
                .with_context(|| format!("no {what} in the page's answer: {out}"))
        };
        let start = number(&out["requestStartUnixMs"], "requestStartUnixMs")?;
        let timeline = &out["report"]["run"]["timeline"];
        let first_dom = start + number(&timeline["milestones"]["first_dom"], "first_dom")?;
        let first_paint = start + number(&timeline["milestones"]["first_paint"], "first_paint")?;
        let region: Region = {
            let r = &out["region"];
            Region {
                x: number(&r["x"], "region")?,
                y: number(&r["y"], "region")?,
                width: number(&r["width"], "region")?,
                height: number(&r["height"], "region")?,
            }
        };
        let frames = screencast.frames_since(start);
        let mut truth = None;
        let mut blank_before = None;
        let mut inked_frames = 0;
        for frame in &frames {
            if frame.ink(region)? < MIN_INK {
                if truth.is_none() {
                    blank_before = Some(frame.at_unix_ms);
                }
                continue;
            }
            inked_frames += 1;
            truth = truth.or(Some(frame.at_unix_ms));
        }
        let Some(truth) = truth else {
            bail!(
                "no frame of {} since the request started shows the reply's text: {out}",
                frames.len()
            );
        };
        Ok(PaintSample {
            method: timeline["paint_method"].as_str().unwrap_or("?").to_owned(),
            first_dom_unix_ms: first_dom,
            first_paint_unix_ms: first_paint,
            truth_unix_ms: truth,
            blank_before_unix_ms: blank_before,
            paint_minus_truth_ms: first_paint - truth,
            paint_time_minus_truth_ms: timeline["milestones"]["paint_time"]
                .as_f64()
                .map(|t| start + t - truth),
            truth_minus_dom_ms: truth - first_dom,
            skew_ms: out["skewMs"].as_f64().unwrap_or(f64::NAN),
            frames: frames.len(),
            dom_writes: number(&out["domWrites"], "domWrites")? as usize,
            inked_frames,
        })
    }

    /// What a frame's stamp means, measured: `count` changes of `paint.html`'s marker
    /// square, each made in a requestAnimationFrame callback, and the stamp of the first
    /// frame showing each change, minus that frame's start (the callback's argument) and
    /// minus the callback's own time. Needs `paint.html` open.
    pub async fn marks(&self, count: usize) -> anyhow::Result<Vec<MarkLatency>> {
        let screencast = self.screencast.as_ref().context("screencast stopped")?;
        screencast.clear();
        let out = page::call(&self.client, "frameMarks", json!({ "count": count })).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = &out["region"];
        let number = |v: &Value| v.as_f64().with_context(|| format!("frameMarks: {out}"));
        let region = Region {
            x: number(&r["x"])?,
            y: number(&r["y"])?,
            width: number(&r["width"])?,
            height: number(&r["height"])?,
        };
        let frames = screencast.frames_since(0.0);
        let mut inked = Vec::with_capacity(frames.len());
        for frame in &frames {
            inked.push((frame.at_unix_ms, frame.ink(region)? >= MIN_INK));
        }
        let mut latencies = Vec::new();
        for mark in out["marks"].as_array().into_iter().flatten() {
            let black = mark["black"].as_bool().unwrap_or(false);
            let (start, callback) = (
                number(&mark["frameStartUnixMs"])?,
                number(&mark["callbackUnixMs"])?,
            );
            // The first frame stamped after the change was made that shows it.
            let shown = inked
                .iter()
                .find(|(at, ink)| *at >= callback && *ink == black)
                .with_context(|| format!("no frame shows the marker change at {callback}"))?;
            latencies.push(MarkLatency {
                after_frame_start_ms: shown.0 - start,
                after_callback_ms: shown.0 - callback,
                paint_after_frame_start_ms: mark["paintTimeUnixMs"].as_f64().map(|t| t - start),
                presented_after_frame_start_ms: mark["presentationTimeUnixMs"]
                    .as_f64()
                    .map(|t| t - start),
            });
        }
        Ok(latencies)
    }

    /// Stops the screencast and closes the session (the driver and server go on drop).
    pub async fn close(mut self) -> anyhow::Result<()> {
        if let Some(screencast) = self.screencast.take() {
            screencast.stop().await?;
        }
        self.client.clone().close().await?;
        Ok(())
    }
}

//! The page's frames, as Chromium's DevTools screencast delivers them: each frame's PNG
//! and its timestamp, and whether a region of the page shows ink (dark pixels) in it.
//!
//! `Page.startScreencast` sends a `Page.screencastFrame` event per captured compositor
//! frame; the next one comes only after the previous is acknowledged
//! (`Page.screencastFrameAck`), so every frame is acknowledged as soon as it arrives and
//! decoded later. The protocol documents `metadata.timestamp` as the "frame swap
//! timestamp", in seconds since the Unix epoch. Measured in Chromium 156 headless, it lies
//! on the compositor's frame grid: the start of the display compositor's frame that drew
//! the capture (docs/fidelity.md, "What the frame timestamp means, and how we know").

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use anyhow::{Context, bail};
use base64::Engine as _;
use serde_json::json;
use tokio::sync::mpsc;

use ttfx_webdriver::devtools::{Cdp, Event};

/// One captured frame.
#[derive(Debug, Clone)]
pub struct Frame {
    /// `metadata.timestamp`, as Unix epoch milliseconds.
    pub at_unix_ms: f64,
    /// The PNG as the browser sent it.
    pub png: Vec<u8>,
    /// The page's viewport in CSS pixels (`metadata.deviceWidth`/`deviceHeight`).
    pub device_width: f64,
    pub device_height: f64,
}

/// A rectangle of the page in CSS pixels, relative to the viewport.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// A running screencast of one page.
pub struct Screencast {
    cdp: Arc<Cdp>,
    frames: Arc<Mutex<Vec<Frame>>>,
    collector: tokio::task::JoinHandle<()>,
}

impl Screencast {
    /// Starts the screencast: PNG frames scaled to fit `max_width` × `max_height`, every
    /// frame (`everyNthFrame` 1).
    pub async fn start(
        cdp: Arc<Cdp>,
        mut events: mpsc::UnboundedReceiver<Event>,
        max_width: u32,
        max_height: u32,
    ) -> anyhow::Result<Screencast> {
        let frames: Arc<Mutex<Vec<Frame>>> = Arc::default();
        let (store, acker) = (frames.clone(), cdp.clone());
        let collector = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if event.method != "Page.screencastFrame" {
                    continue;
                }
                let p = &event.params;
                // Acknowledge first: the browser sends the next frame only after this.
                let _ = acker
                    .send(
                        "Page.screencastFrameAck",
                        json!({ "sessionId": p["sessionId"] }),
                    )
                    .await;
                let meta = &p["metadata"];
                let (Some(at), Some(data)) = (meta["timestamp"].as_f64(), p["data"].as_str())
                else {
                    continue;
                };
                let Ok(png) = base64::engine::general_purpose::STANDARD.decode(data) else {
                    continue;
                };
                if let Ok(mut frames) = store.lock() {
                    frames.push(Frame {
                        at_unix_ms: at * 1000.0,
                        png,
                        device_width: meta["deviceWidth"].as_f64().unwrap_or(0.0),
                        device_height: meta["deviceHeight"].as_f64().unwrap_or(0.0),
                    });
                }
            }
        });
        cdp.call("Page.enable", json!({})).await?;
        cdp.call(
            "Page.startScreencast",
            json!({ "format": "png", "maxWidth": max_width, "maxHeight": max_height,
                    "everyNthFrame": 1 }),
        )
        .await?;
        Ok(Screencast {
            cdp,
            frames,
            collector,
        })
    }

    /// The frames captured so far whose timestamp is at or after `unix_ms`, in order.
    pub fn frames_since(&self, unix_ms: f64) -> Vec<Frame> {
        let frames = self.frames.lock().map(|f| f.clone()).unwrap_or_default();
        let mut since: Vec<Frame> = frames
            .into_iter()
            .filter(|f| f.at_unix_ms >= unix_ms)
            .collect();
        since.sort_by(|a, b| a.at_unix_ms.total_cmp(&b.at_unix_ms));
        since
    }

    /// Forgets the frames captured so far (between runs, to keep memory flat).
    pub fn clear(&self) {
        if let Ok(mut frames) = self.frames.lock() {
            frames.clear();
        }
    }

    /// Stops the screencast.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.cdp.call("Page.stopScreencast", json!({})).await?;
        self.collector.abort();
        Ok(())
    }
}

/// A pixel darker than this (0–255 luma) is ink: the reply is black text on white, and
/// scaling antialiases its strokes into greys, the darkest of which stay well below.
pub const INK_LUMA: u32 = 128;

impl Frame {
    /// How many pixels of `region` are ink (luma below [`INK_LUMA`]).
    pub fn ink(&self, region: Region) -> anyhow::Result<usize> {
        let mut decoder = png::Decoder::new(Cursor::new(&self.png));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder
            .read_info()
            .context("a screencast frame is no PNG")?;
        let size = reader
            .output_buffer_size()
            .context("a screencast frame is too large")?;
        let mut pixels = vec![0; size];
        let info = reader.next_frame(&mut pixels)?;
        let channels = match info.color_type {
            png::ColorType::Grayscale => 1,
            png::ColorType::GrayscaleAlpha => 2,
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            png::ColorType::Indexed => bail!("an indexed PNG after EXPAND"),
        };
        if self.device_width <= 0.0 {
            bail!("a screencast frame without deviceWidth");
        }
        // The image is the viewport scaled to fit the screencast's maximum size.
        let scale = f64::from(info.width) / self.device_width;
        let clamp = |v: f64, max: u32| (v * scale).round().clamp(0.0, f64::from(max)) as u32;
        let (x0, x1) = (
            clamp(region.x, info.width),
            clamp(region.x + region.width, info.width),
        );
        let (y0, y1) = (
            clamp(region.y, info.height),
            clamp(region.y + region.height, info.height),
        );
        let mut ink = 0;
        for y in y0..y1 {
            let row = &pixels[y as usize * info.line_size..][..info.line_size];
            for x in x0..x1 {
                let px = &row[x as usize * channels..][..channels];
                let luma = if channels >= 3 {
                    (299 * u32::from(px[0]) + 587 * u32::from(px[1]) + 114 * u32::from(px[2]))
                        / 1000
                } else {
                    u32::from(px[0])
                };
                if luma < INK_LUMA {
                    ink += 1;
                }
            }
        }
        Ok(ink)
    }
}

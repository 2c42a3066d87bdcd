//! One request at a time: the list of runs, and for the chosen one a waterfall of the
//! client milestones on one time axis with the server's counterparts and the gap between
//! them, the chunk series as a strip, and the stall and buffered verdicts.

use leptos::prelude::*;
use ttfx_core::Milestone;
use ttfx_core::chunk_summary::ChunkBin;
use ttfx_core::gap::Gap;
use ttfx_core::metrics::TurnBreakdown;
use ttfx_core::metrics::buffered::BufferedVerdict;
use ttfx_core::report::Run;
use ttfx_core::timeline::Chunk;

use crate::fmt::{Scale, num, opt, wire_name};
use crate::lab;

/// Milestones with no bar of their own: the origin, and the framing step between the first
/// byte and the first token. Every other milestone is a row, in the order a user meets them
/// (`Milestone::ALL`); absent ones are skipped.
fn has_row(m: Milestone) -> bool {
    !matches!(m, Milestone::RequestStart | Milestone::FirstEvent)
}

const WIDTH: f64 = 760.0;
const LABEL_W: f64 = 150.0;
const PLOT_R: f64 = WIDTH - 120.0;
const ROW_H: f64 = 22.0;

/// The runs as a table; a click shows that run's waterfall.
#[component]
pub fn RunList() -> impl IntoView {
    let lab = lab();
    let rows = move || {
        lab.runs
            .get()
            .into_iter()
            .enumerate()
            .map(|(i, run)| {
                let m = &run.metrics;
                let selected = move || lab.selected.get() == Some(i);
                view! {
                    <tr class:selected=selected on:click=move |_| lab.selected.set(Some(i))>
                        <td>{i + 1}</td>
                        <td class="target">{run.target.clone().unwrap_or_default()}</td>
                        <td>{wire_name(&m.outcome)}</td>
                        <td class="num">{opt(m.ttft_visible_ms.map(|v| v.value))}</td>
                        <td class="num">{opt(m.e2e_ms.map(|v| v.value))}</td>
                        <td class="num">{opt(m.output_tokens.map(|v| v.value))}</td>
                        <td>{wire_name(&m.buffered.verdict)}</td>
                        <td class="num">{m.stalls.map(|s| s.count.to_string()).unwrap_or_default()}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <table id="run-table" class="runs">
            <thead><tr>
                <th>"#"</th><th>"target"</th><th>"outcome"</th><th>"first visible ms"</th>
                <th>"e2e ms"</th><th>"tokens"</th><th>"buffered"</th><th>"stalls"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// The chosen run's waterfall (the first run until one is chosen).
#[component]
pub fn SelectedRun() -> impl IntoView {
    let lab = lab();
    move || {
        let runs = lab.runs.get();
        let index = lab.selected.get().unwrap_or(0);
        runs.get(index).cloned().map(|run| {
            view! {
                <h3>{format!("run {} · {}", index + 1, run.target.clone().unwrap_or_default())}</h3>
                <Verdicts run=run.clone()/>
                <Waterfall run=run.clone()/>
                <ChunkStrip run/>
            }
        })
    }
}

/// Stalls and the buffered verdict, readable at a glance.
#[component]
fn Verdicts(run: Run) -> impl IntoView {
    let b = run.metrics.buffered;
    let class = match b.verdict {
        BufferedVerdict::Buffered => "badge bad",
        BufferedVerdict::Streamed => "badge good",
        BufferedVerdict::Undetermined => "badge",
    };
    let share = b
        .burst_share
        .map(|s| format!(" · {:.0} % in one 100 ms window", s * 100.0))
        .unwrap_or_default();
    let stalls = match run.metrics.stalls {
        Some(s) if s.count > 0 => (
            "badge bad",
            format!(
                "{} stall(s), {} ms (gap > {} ms)",
                s.count,
                num(s.stalled_ms),
                num(s.threshold_ms)
            ),
        ),
        Some(s) => (
            "badge good",
            format!("no stalls (longest gap {} ms)", num(s.longest_gap_ms)),
        ),
        None => ("badge", "stalls: too few gaps to judge".to_owned()),
    };
    view! {
        <p class="verdicts">
            <span class=class id="buffered-verdict">
                {format!("{}: {} visible tokens{share}", wire_name(&b.verdict), b.visible_tokens)}
            </span>
            <span class=stalls.0 id="stall-verdict">{stalls.1}</span>
        </p>
    }
}

/// The milestones that have a row, with their times from the request's start, in the
/// order a user meets them.
fn milestone_rows(run: &Run) -> Vec<(Milestone, f64)> {
    Milestone::ALL
        .into_iter()
        .filter(|m| has_row(*m))
        .filter_map(|m| run.timeline.milestones.get(m).map(|at| (m, at)))
        .collect()
}

/// Client milestones as bars from the request's start; the server's counterpart as a
/// hollow mark on the same row, the gap written beside it. `id` tells two waterfalls
/// apart (the Field view draws one too).
#[component]
pub(crate) fn Waterfall(
    run: Run,
    #[prop(default = "waterfall")] id: &'static str,
) -> impl IntoView {
    let rows = milestone_rows(&run);
    let end = rows
        .iter()
        .map(|r| r.1)
        .chain(run.metrics.gaps.iter().map(|g| g.server_ms))
        .fold(0.0, f64::max);
    // A voice turn's speech and transcript precede the request: the axis reaches back.
    let start = rows.iter().map(|r| r.1).fold(0.0, f64::min);
    let x = Scale::spanning(start, end, LABEL_W, PLOT_R);
    let turn = run
        .metrics
        .turn
        .clone()
        .filter(|t| t.voice_to_voice_ms.is_some());
    let turn_rows = if turn.is_some() { 1.5 } else { 0.0 };
    let height = ROW_H * (rows.len() as f64 + 1.5 + turn_rows);
    let axis_y = ROW_H * rows.len() as f64 + 4.0;
    let bars = rows
        .iter()
        .enumerate()
        .map(|(i, (m, at))| {
            let y = ROW_H * i as f64 + ROW_H / 2.0;
            let gap = run.metrics.gaps.iter().find(|g| g.milestone == *m).cloned();
            // The first byte's row names the engine's hop from the network boundary.
            let hop = (*m == Milestone::FirstByte)
                .then(|| run.metrics.engine_hop_ms.map(|h| h.value))
                .flatten();
            view! { <MilestoneRow milestone=*m at=*at gap hop x y/> }
        })
        .collect_view();
    let speech_end = run.timeline.milestones.get(Milestone::SpeechEnd);
    let stages = turn.zip(speech_end).map(|(turn, from)| {
        let y = axis_y + 30.0;
        view! { <TurnStages turn from x y/> }
    });
    view! {
        <svg id=id class="chart" width=WIDTH height=height + 10.0
            viewBox=format!("0 0 {WIDTH} {}", height + 10.0)>
            <AxisTicks x axis_y/>
            {bars}
            {stages}
        </svg>
        <p class="legend">
            "● client (page clock, ms since request start)  ○ server-reported counterpart; "
            "gap = client − server"
        </p>
        <ServerTimings run/>
    }
}

/// One milestone's row at height `y`: the client's bar and mark, and the server's
/// counterpart with the gap when the server reported one (else the client's time);
/// `hop`, the engine's hop from `response_start` (first byte's row only).
#[component]
fn MilestoneRow(
    milestone: Milestone,
    at: f64,
    gap: Option<Gap>,
    hop: Option<f64>,
    x: Scale,
    y: f64,
) -> impl IntoView {
    let hop = hop
        .map(|h| format!(" · engine hop {} ms", num(h)))
        .unwrap_or_default();
    // Labels of late milestones go left of the marks, so they stay on the chart.
    let late = x.at(at) > LABEL_W + (PLOT_R - LABEL_W) * 0.55;
    let label_x = move |lo: f64, hi: f64| if late { x.at(lo) - 8.0 } else { x.at(hi) + 8.0 };
    let anchor = if late { "end" } else { "start" };
    // Left of the marks the client bar runs under the text: lift it above the bar.
    let label_y = if late { y - 5.0 } else { y + 4.0 };
    let server = gap.map(|g| {
        let label = format!(
            "server {} ms · gap {} ms ({}){hop}",
            num(g.server_ms),
            num(g.gap_ms),
            wire_name(&g.source)
        );
        let (lo, hi) = (g.server_ms.min(at), g.server_ms.max(at));
        view! {
            <line class="gap" x1=x.at(g.server_ms) x2=x.at(at) y1=y y2=y/>
            <circle class="server" cx=x.at(g.server_ms) cy=y r="5"/>
            <text class="gap-label" x=label_x(lo, hi) y=label_y text-anchor=anchor>{label}</text>
        }
    });
    let plain = format!("{} ms{hop}", num(at));
    let has_gap = server.is_some();
    view! {
        <g class="row" data-milestone=milestone.as_str()>
            <text class="label" x="4" y=y + 4.0>{milestone.as_str()}</text>
            <line class="client" x1=x.at(0.0) x2=x.at(at) y1=y y2=y/>
            <circle class="client" cx=x.at(at) cy=y r="4"/>
            {server}
            {(!has_gap).then(|| view! {
                <text class="value" x=label_x(at, at) y=label_y text-anchor=anchor>{plain.clone()}</text>
            })}
        </g>
    }
}

/// The time axis: a few round times as lines down to `axis_y`, their values below.
#[component]
fn AxisTicks(x: Scale, axis_y: f64) -> impl IntoView {
    x.ticks(6)
        .into_iter()
        .map(|v| {
            view! {
                <line class="tick" x1=x.at(v) x2=x.at(v) y1="0" y2=axis_y/>
                <text class="tick" x=x.at(v) y=axis_y + 14.0 text-anchor="middle">{format!("{v:.0}")}</text>
            }
        })
        .collect_view()
}

/// A voice turn's silence, speech_end → first_audio_out, as one bar cut into its
/// stages, each titled with its length and share.
#[component]
fn TurnStages(turn: TurnBreakdown, from: f64, x: Scale, y: f64) -> impl IntoView {
    let mut at = from;
    let segments = turn
        .stages
        .iter()
        .filter_map(|s| s.ms.map(|ms| (s, ms)))
        .map(|(s, ms)| {
            let (x0, x1) = (x.at(at), x.at(at + ms));
            at += ms;
            let share = s
                .share
                .map(|v| format!(" · {:.0} %", v * 100.0))
                .unwrap_or_default();
            let title = format!("{} {} ms{share}", s.stage.as_str(), num(ms));
            view! {
                <rect class=format!("stage {}", s.stage.as_str()) data-stage=s.stage.as_str()
                    x=x0 y=y - 6.0 width=(x1 - x0).max(0.5) height="12">
                    <title>{title}</title>
                </rect>
            }
        })
        .collect_view();
    let total = turn.voice_to_voice_ms.map(num).unwrap_or_default();
    view! {
        <g class="turn-stages">
            <text class="label" x="4" y=y + 4.0>"voice to voice"</text>
            {segments}
            <text class="value" x=x.at(at) + 8.0 y=y + 4.0>{format!("{total} ms")}</text>
        </g>
    }
}

/// Everything the server reported, as the server named it.
#[component]
fn ServerTimings(run: Run) -> impl IntoView {
    let items = run
        .timeline
        .server
        .timings
        .into_iter()
        .map(|s| {
            let value = s.duration_ms.map(num).unwrap_or_else(|| "–".into());
            view! { <li>{format!("{} = {value} ms ({})", s.name, wire_name(&s.source))}</li> }
        })
        .collect_view();
    view! { <ul class="server-timings">{items}</ul> }
}

/// Every kept chunk at its arrival time, height by size; stall gaps shaded. A long
/// stream's later chunks (the timeline's `chunk_summary`) show as bins: one band per bin
/// over its time span, height by its mean chunk size. A run rebuilt from a field report
/// has bins only.
#[component]
pub(crate) fn ChunkStrip(
    run: Run,
    #[prop(default = "chunk-strip")] id: &'static str,
) -> impl IntoView {
    let chunks = run.timeline.chunks_by_time();
    let bins = run
        .timeline
        .chunk_summary
        .as_ref()
        .map(|s| s.bins.clone())
        .unwrap_or_default();
    let summarized = run.timeline.chunk_summary.as_ref().map_or(0, |s| s.chunks);
    let end = chunks
        .last()
        .map(|c| c.at_ms)
        .into_iter()
        .chain(bins.iter().map(|b| b.to_ms))
        .fold(0.0, f64::max);
    let x = Scale::zero_to(end, LABEL_W, PLOT_R);
    let max_bytes = largest_chunk(&chunks, &bins);
    let threshold = run.metrics.stalls.map(|s| s.threshold_ms);
    let label = strip_label(chunks.len(), summarized, bins.len());
    view! {
        <svg id=id class="chart" width=WIDTH height="70" viewBox=format!("0 0 {WIDTH} 70")>
            <text class="label" x="4" y="30">{label}</text>
            {stall_shades(&chunks, threshold, x)}
            {chunk_bars(&chunks, max_bytes, x)}
            {bin_bands(&bins, max_bytes, x)}
            <text class="tick" x=PLOT_R y="64" text-anchor="end">{format!("{} ms", num(end))}</text>
        </svg>
        <p class="legend">"chunks: blue visible text, violet reasoning, grey other; height ∝ √bytes; red: stall; long streams: later chunks as bins (height ∝ √mean bytes)"</p>
    }
}

/// The strip's full height in bytes: the largest kept chunk or bin mean (at least 1).
fn largest_chunk(chunks: &[Chunk], bins: &[ChunkBin]) -> f64 {
    chunks
        .iter()
        .map(|c| c.bytes)
        .chain(bins.iter().map(|b| b.bytes / b.chunks.max(1)))
        .max()
        .unwrap_or(1)
        .max(1) as f64
}

/// A bar's height for `bytes` of `max_bytes`: by the square root, so small chunks stay
/// visible beside a large one.
fn bar_height(bytes: f64, max_bytes: f64) -> f64 {
    4.0 + 40.0 * (bytes / max_bytes).sqrt()
}

/// What the strip holds, in words: kept chunks, binned ones, or both.
fn strip_label(kept: usize, summarized: u64, bins: usize) -> String {
    if summarized > 0 && kept == 0 {
        format!("{summarized} chunks in {bins} bins")
    } else if summarized > 0 {
        format!("{kept} + {summarized} chunks")
    } else {
        format!("{kept} chunks")
    }
}

/// Each wait between token-bearing chunks longer than the stall `threshold`, shaded
/// (none when the run has no stall metrics).
fn stall_shades(chunks: &[Chunk], threshold: Option<f64>, x: Scale) -> impl IntoView + use<> {
    let token_times: Vec<f64> = chunks
        .iter()
        .filter(|c| c.tokens() > 0)
        .map(|c| c.at_ms)
        .collect();
    threshold
        .map(|limit| {
            token_times
                .windows(2)
                .filter(|w| w[1] - w[0] > limit)
                .map(|w| {
                    view! {
                        <rect class="stall" x=x.at(w[0]) y="0" width=x.at(w[1]) - x.at(w[0]) height="50"/>
                    }
                })
                .collect_view()
        })
        .unwrap_or_default()
}

/// Each kept chunk as a thin bar, coloured by what it carried.
fn chunk_bars(chunks: &[Chunk], max_bytes: f64, x: Scale) -> impl IntoView + use<> {
    chunks
        .iter()
        .map(|c| {
            let h = bar_height(c.bytes as f64, max_bytes);
            let class = if c.visible_tokens > 0 {
                "chunk visible"
            } else if c.reasoning_tokens > 0 {
                "chunk reasoning"
            } else {
                "chunk other"
            };
            view! {
                <rect class=class x=x.at(c.at_ms) - 1.0 y=48.0 - h width="2" height=h>
                    <title>{format!("{} ms · {} B", num(c.at_ms), c.bytes)}</title>
                </rect>
            }
        })
        .collect_view()
}

/// Each bin of a long stream's later chunks as a band over its time span.
fn bin_bands(bins: &[ChunkBin], max_bytes: f64, x: Scale) -> impl IntoView + use<> {
    bins.iter()
        .map(|b| {
            let mean = b.bytes as f64 / b.chunks.max(1) as f64;
            let h = bar_height(mean, max_bytes);
            let width = (x.at(b.to_ms) - x.at(b.from_ms)).max(1.0);
            view! {
                <rect class="chunk bin" x=x.at(b.from_ms) y=48.0 - h width=width height=h>
                    <title>{format!(
                        "{}–{} ms · {} chunks · {} B · {} visible, {} reasoning tokens",
                        num(b.from_ms), num(b.to_ms), b.chunks, b.bytes, b.visible_tokens, b.reasoning_tokens
                    )}</title>
                </rect>
            }
        })
        .collect_view()
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ttfx_core::Recorder;
    use ttfx_core::decode::Limits;
    use ttfx_core::report::RunReport;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_test::*;

    use super::*;

    wasm_bindgen_test_configure!(run_in_browser);

    /// A stream longer than the recorder keeps: the strip draws the kept chunks, the rest
    /// as bins, and counts both.
    #[wasm_bindgen_test]
    fn a_long_stream_shows_its_kept_chunks_and_its_bins() {
        let mut recorder = Recorder::new(None, Limits::DEFAULT);
        recorder.headers(10.0, 200, Some("text/event-stream"), &[]);
        let event = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
        let total: u32 = 9_000;
        for i in 0..total {
            recorder.chunk(20.0 + f64::from(i), event.as_bytes());
        }
        recorder.end(10_000.0);
        let timeline = recorder.finish();
        let kept = timeline.chunks.len();
        let summarized = timeline.chunk_summary.as_ref().unwrap().chunks;
        assert_eq!(kept as u64 + summarized, u64::from(total));
        let run = RunReport::of_timeline(None, None, timeline).unwrap().run;

        let document = web_sys::window().unwrap().document().unwrap();
        let host: web_sys::HtmlElement = document.create_element("div").unwrap().unchecked_into();
        document.body().unwrap().append_child(&host).unwrap();
        let _handle =
            leptos::mount::mount_to(host.clone(), move || view! { <ChunkStrip run=run/> });
        let label = host.query_selector("#chunk-strip .label").unwrap().unwrap();
        assert_eq!(
            label.text_content().unwrap(),
            format!("{kept} + {summarized} chunks")
        );
        let bins = host
            .query_selector_all("#chunk-strip rect.bin")
            .unwrap()
            .length();
        assert!(bins > 0, "no bins drawn");
        let bars = host
            .query_selector_all("#chunk-strip rect.visible")
            .unwrap()
            .length();
        assert_eq!(bars as usize, kept);
    }
}

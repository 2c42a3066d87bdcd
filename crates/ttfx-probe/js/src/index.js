// ttfx-probe: the part of the probe a page loads before it measures.
//
// It takes the clocks (fetch, chunk arrival, render, visibility) and keeps the bytes; it
// decodes nothing. The analysis (ttfx-core's decoding, recorder, metrics and report, as
// wasm) is loaded lazily and runs in a module Worker, or on the main thread in idle time
// where a Worker cannot start. Every milestone keeps the arrival time taken here, so
// where and when the analysis runs changes no figure.
//
// Hand-written JS, not Rust, for size: this part must stay under 12 KB gzip, and
// wasm-bindgen's generated JS glue for the probe was 40.7 KB (about 8 KB gzip) before
// any wasm (docs/probe.md, "Loading model"). Rust front ends reach the same code through
// ttfx-probe's Rust API, which calls its bundle, js/probe.js (src/front.rs).
//
// Safety (docs/architecture.md): the app's chunk is always enqueued first and the probe's
// work on it runs later, in its own task; every probe step is guarded, and a fault
// switches the probe off and settles the run with a `probe_fault` report.
//
// This is the entry of the front's sources, one concern per module. `cargo xtask
// probe-front` bundles them into js/probe.js, the one file wasm-bindgen takes; the
// package is bundled from them the same way (docs/probe.md, "The front's sources").
//
// version.js       the names shared with ttfx-core (VERSION, SCHEMA_VERSION)
// clock.js         the page clock and its step
// environment.js   the engine, from the user agent
// options.js       the Probe's options
// probe.js         Probe: options, analysis host, environment, the instrument functions
// run.js           ProbeRun: one request's clocks, its fault report, report delivery
// fetch.js         fetch: `window.fetch` wrapped
// fetch_input.js   fetch: URL, method and signal of a call
// fetch_body.js    fetch: the body stream wrapped, each chunk timed
// eventsource.js   EventSource: a subclass whose events the probe hears first
// xhr.js           XMLHttpRequest: open and send patched, responseText read as it grows
// websocket.js     WebSocket: a subclass; a run from a send to the reply's end
// message_feed.js  the message transports' taps: each message as body bytes
// instrument.js    what every instrument function shares (options, match, handle)
// later_queue.js   the probe's stream work, one task after the app's
// chunk_batch.js   the copied chunks and arrival times, in batches
// analysis_host.js the link to the analysis: Worker, else main thread in idle time
// paint.js         render timing: first_dom, first_paint
// beacon.js        the field report's way to the collector
// fault.js         the probe's switch: a fault turns it off
// cost.js          the probe's own cost, for `cargo xtask bench`
// idle.js          work in idle time

export { now } from "./clock.js";
export { REPORT_RING, ProbeRun } from "./run.js";
export { FetchHandle } from "./instrument.js";
export { Probe } from "./probe.js";
export { VERSION, version } from "./version.js";

// Nothing to initialise up front any more; kept so `await init()` in existing pages works.
export default async function init() {}

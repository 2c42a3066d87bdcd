// The page side of first byte against the network record (docs/fidelity.md): a probed
// request whose body is read to its end, with what the page itself knows to set beside the
// engine's network record and the server's: the run's report, the page clock's place on
// the system clock, the request's Resource Timing entry and the server's record.
import init, * as ttfx from "./pkg/probe.js";
import { skewAtStep } from "./clock.js";

await init();

// The page clock's step: the smallest change of performance.now() over 20 changes.
function clockStep() {
  let prev = performance.now(), min = Infinity, seen = 0;
  for (let i = 0; i < 1e7 && seen < 20; i++) {
    const t = performance.now();
    if (t !== prev) { min = Math.min(min, t - prev); prev = t; seen++; }
  }
  return min;
}

// The diagnosis of the page's wall-clock mapping: `count` reads of
// (timeOrigin + performance.now()) − Date.now() at arbitrary instants (each a few µs of
// spinning apart, so they fall at every phase of both clocks' steps), and `count / 10`
// reads at the instant Date.now() steps (skewAtStep with one try each).
async function clockSamples({ count = 2000 }) {
  const anyInstant = [];
  for (let i = 0; i < count; i++) {
    const spinUntil = performance.now() + 0.013 * (i % 97);
    while (performance.now() < spinUntil) { /* spread the reads */ }
    anyInstant.push(performance.timeOrigin + performance.now() - Date.now());
  }
  const atStep = [];
  for (let i = 0; i < count / 10; i++) atStep.push(skewAtStep(1));
  // Whether timeOrigin is one value or read afresh (from another clock) each time.
  const origins = new Set();
  for (let i = 0; i < 1000; i++) origins.add(performance.timeOrigin);
  return {
    anyInstant, atStep, timeOrigin: performance.timeOrigin, stepMs: clockStep(),
    distinctOrigins: origins.size,
    isolated: self.crossOriginIsolated,
  };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// One probed request, read to the end as an app would (no parsing: the first byte is the
// probe's alone to time). `id` goes out as x-request-id, so the server's record and the
// engine's network events can be found by it.
async function netRun({ url, init = {}, id }) {
  performance.clearResourceTimings();
  const skewMs = skewAtStep();
  const probe = new ttfx.Probe({ label: "net" });
  const run = probe.start();
  const headers = { ...(init.headers || {}), "x-request-id": id };
  const response = await run.fetch(url, { ...init, headers });
  const reader = response.body.getReader();
  // The app's own reader: the page clock as its first non-empty read resolves, the
  // witness for the probe's first_byte (what the app can act on).
  let appFirstRead = null;
  for (;;) {
    const { done, value } = await reader.read();
    if (appFirstRead === null && value && value.byteLength > 0) appFirstRead = performance.now();
    if (done) break;
  }
  const report = await run.finished();
  // The entry appears only once the body has ended.
  const href = new URL(url, location.href).href;
  let entry = null;
  for (let i = 0; i < 100 && !entry; i++) {
    entry = performance.getEntriesByName(href, "resource").pop() || null;
    if (!entry) await sleep(10);
  }
  const skewAfterMs = skewAtStep();
  const record = await (await fetch(`/records/${encodeURIComponent(id)}`)).json();
  return {
    report, record, skewMs, skewAfterMs, appFirstRead,
    timeOrigin: performance.timeOrigin,
    requestStart: run.requestStart,
    resourceTiming: entry && {
      startTime: entry.startTime, fetchStart: entry.fetchStart, requestStart: entry.requestStart,
      responseStart: entry.responseStart, responseEnd: entry.responseEnd,
    },
  };
}

// The same request without the probe: the page clock read just before `fetch` is
// called, for the delay from there to the engine's own record of the request.
async function plainRun({ url, init = {}, id }) {
  performance.clearResourceTimings();
  const headers = { ...(init.headers || {}), "x-request-id": id };
  const requestStart = performance.now();
  const response = await fetch(url, { ...init, headers });
  const reader = response.body.getReader();
  for (;;) {
    const { done } = await reader.read();
    if (done) break;
  }
  const href = new URL(url, location.href).href;
  let entry = null;
  for (let i = 0; i < 100 && !entry; i++) {
    entry = performance.getEntriesByName(href, "resource").pop() || null;
    if (!entry) await sleep(10);
  }
  return { requestStart, resourceTiming: entry && { requestStart: entry.requestStart, responseStart: entry.responseStart } };
}

window.harness = { netRun, plainRun, clockSamples };
document.getElementById("status").textContent = "ready";

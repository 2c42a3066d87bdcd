// The decode bench's page functions, called over WebDriver (window.decodeBench): the
// probe's analysis and the JavaScript peer over the same bodies, alternating, on the
// main thread. Times are performance.now() on a cross-origin isolated page where the
// engine allows it (its clock step is reported beside the figures).
import { makeBody } from "./decode_bodies.js";
import { analysisSide, peerSide, check } from "./decode_sides.js";

const CHUNK_BYTES = 1024;
// Where the bench's server mounts the probe package and eventsource-parser.
const ANALYSIS = "/pkg/analysis/ttfx_analysis.js";
const NAMED_ANALYSIS = "/pkg-names/ttfx_analysis.js";
const PEER = "/esp/dist/index.js";

// Each decoder's module and the ms its load took: an import, and for the analysis its
// wasm fetched, compiled and instantiated (wasm-bindgen's init), `new Analysis()` and
// `Analysis.warmUp()`, as the probe's Worker loads it (worker.js).
async function loadAnalysis(url = ANALYSIS) {
  const t0 = performance.now();
  const m = await import(url);
  await m.default();
  const analysis = new m.Analysis();
  if (typeof m.Analysis.warmUp === "function") m.Analysis.warmUp();
  return { analysis, loadMs: performance.now() - t0 };
}

// The probe loads its analysis when the page's first measured request starts; the
// reply's last chunk reaches it a TTFT and a stream later. The first call waits this
// long after the load (both sides), a short TTFT, during which the engine's optimizing
// tier compiles in the background as it would on a real page.
const REPLY_AFTER_LOAD_MS = Number(new URLSearchParams(location.search).get("gap") ?? 100);
async function loadPeer() {
  const t0 = performance.now();
  const { createParser } = await import(PEER);
  return { createParser, loadMs: performance.now() - t0 };
}

function timed(f) {
  const t0 = performance.now();
  const out = f();
  return [performance.now() - t0, out];
}

// The smallest step performance.now() takes here, ms.
function clockStep() {
  let step = Infinity;
  for (let i = 0; i < 50; i++) {
    const a = performance.now();
    let b = a;
    while (b === a) b = performance.now();
    step = Math.min(step, b - a);
  }
  return step;
}

let loaded = null;
async function both() {
  if (!loaded) loaded = { a: await loadAnalysis(), p: await loadPeer() };
  return loaded;
}

// `rounds` alternating pairs (analysis, then peer) after one warm-up pair, each run
// checked against the body: ms per run for each side.
async function warm({ dialect, events, rounds }) {
  const body = makeBody(dialect, events, CHUNK_BYTES);
  const { a, p } = await both();
  const analysisMs = [];
  const peerMs = [];
  for (let r = 0; r <= rounds; r++) {
    const [ta, report] = timed(() => analysisSide(a.analysis, body));
    const [tp, peer] = timed(() => peerSide(p.createParser, body));
    check(body, report, peer);
    if (r > 0) {
      analysisMs.push(ta);
      peerMs.push(tp);
    }
  }
  return { bytes: body.bytes.length, events: body.tokens, analysisMs, peerMs, clockStepMs: clockStep(), isolated: globalThis.crossOriginIsolated === true };
}

// One side's first call on a fresh page: its load (above) and its first run, in ms. The
// body is made before the clock starts; the other side runs after, untimed, to check.
async function first({ side, dialect, events }) {
  const body = makeBody(dialect, events, CHUNK_BYTES);
  if (side === "analysis") {
    const { analysis, loadMs } = await loadAnalysis();
    await new Promise((resolve) => setTimeout(resolve, REPLY_AFTER_LOAD_MS));
    const [runMs, report] = timed(() => analysisSide(analysis, body));
    const { createParser } = await loadPeer();
    check(body, report, peerSide(createParser, body));
    return { loadMs, runMs };
  }
  const { createParser, loadMs } = await loadPeer();
  await new Promise((resolve) => setTimeout(resolve, REPLY_AFTER_LOAD_MS));
  const [runMs, peer] = timed(() => peerSide(createParser, body));
  const { analysis } = await loadAnalysis();
  check(body, analysisSide(analysis, body), peer);
  return { loadMs, runMs };
}

// The profiled runs: the analysis built with its function names kept (`/pkg-names/`),
// warmed once, then `runs` times over the body while the bench's DevTools profiler runs
// (started by `prepareProfile`'s caller between the two calls).
let profiled = null;
async function prepareProfile({ dialect, events }) {
  const body = makeBody(dialect, events, CHUNK_BYTES);
  const { analysis } = await loadAnalysis(NAMED_ANALYSIS);
  const { createParser } = await loadPeer();
  check(body, analysisSide(analysis, body), peerSide(createParser, body));
  profiled = { body, analysis };
  return { bytes: body.bytes.length };
}
async function profile({ runs }) {
  if (!profiled) throw new Error("prepareProfile first");
  const ms = [];
  for (let i = 0; i < runs; i++) ms.push(timed(() => analysisSide(profiled.analysis, profiled.body))[0]);
  return { ms };
}

window.decodeBench = { warm, first, prepareProfile, profile };
document.getElementById("status").textContent = "ready";

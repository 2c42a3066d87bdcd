// The page's recording made into reports here, in Node.js, as `ttfx run --inject` makes
// them in Rust (crates/ttfx-analysis/src/replay.rs): the inject bundle records every call
// the probe's front makes on its analysis, and this plays them into the package's own
// analysis wasm (`analysis/`), the same code a page's Worker runs. So a report made in a
// Playwright or Puppeteer test is the one `ttfx run` would make from the same calls.

import { readFileSync } from "node:fs";
import init, { Analysis } from "../analysis/ttfx_analysis.js";

// Where `environment.analysis` says the analysis ran: outside the page, in the test's
// process, as for `ttfx run --inject` (replay.rs's SITE).
const SITE = "runner";

// A page may have this many runs begun and not ended (replay.rs's MAX_OPEN_RUNS): a page
// that begins runs without end must not grow the analysis without end.
const MAX_OPEN_RUNS = 64;

let loaded = null;

// Each run's report schema version (1–3, docs/report.md), for the batch that holds it.
const versions = new WeakMap();

/** The schema version of the report `run` came in. */
export const schemaOf = (run) => versions.get(run) || 1;

// A `finish` answer: the report's JSON, then after a newline a field report (not asked).
function runOf(text) {
  const report = JSON.parse(text.split("\n")[0]);
  versions.set(report.run, report.schema_version);
  return report.run;
}

/** Loads the analysis wasm once per process (from the package's own file: no fetch). */
export function loadAnalysis() {
  if (!loaded) {
    const wasm = readFileSync(new URL("../analysis/ttfx_analysis_bg.wasm", import.meta.url));
    loaded = init({ module_or_path: wasm });
  }
  return loaded;
}

// A chunk batch's bytes travel as a string of code points 0–255, one per byte.
function bytesOf(text) {
  if (typeof text !== "string") throw new Error("`chunks` argument 1 must be bytes (a string of code points 0-255)");
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > 255) throw new Error("`chunks` argument 1 must be bytes (code points 0-255)");
    out[i] = c;
  }
  return out;
}

function numbersOf(values) {
  if (!Array.isArray(values) || !values.every((v) => typeof v === "number" && Number.isFinite(v))) {
    throw new Error("`chunks` argument 0 must be an array of numbers");
  }
  return Float64Array.from(values);
}

// JSON has no undefined: the page's absent values arrive as null, which the analysis
// takes as "not given".
const opt = (v) => (v === null ? undefined : v);

/** The runs of one armed turn: every call played as it comes, reports kept by run. */
export class Replay {
  constructor() {
    this.analysis = new Analysis();
    this.reports = new Map();
    this.failed = new Map();
    this.calls = new Map();
  }

  /** Plays one recorded call `[run, op, ...args]`; a bad one fails its run, never the test. */
  apply(call) {
    if (!Array.isArray(call) || !Number.isInteger(call[0]) || call[0] < 0 || typeof call[1] !== "string") return;
    const [run, op] = call;
    if (!this.calls.has(run)) this.calls.set(run, []);
    this.calls.get(run).push(call);
    try {
      const report = play(this.analysis, call);
      if (report !== undefined) this.reports.set(run, runOf(report));
    } catch (e) {
      if (!this.failed.has(run)) this.failed.set(run, String((e && e.message) || e).slice(0, 300));
      // A trap leaves the analysis borrowed for good (worker.js does the same).
      if (e instanceof WebAssembly.RuntimeError) this.analysis = new Analysis();
    }
  }

  /**
   * Run `run`'s report again with the page's milestones `extra` ([name, ms since the
   * request's start, paint method]) observed before it finished, so its metrics count
   * them (render lag, first paint): the runner's `reply.mark`, before the metrics.
   */
  again(run, extra) {
    const analysis = new Analysis();
    let report;
    for (const call of this.calls.get(run) || []) {
      if (call[1] === "finish") {
        for (const [name, at, method] of extra) analysis.observed(run, name, at, method);
      }
      const out = play(analysis, call);
      if (out !== undefined) report = out;
    }
    if (report === undefined) throw new Error(`run ${run} did not finish`);
    return runOf(report);
  }
}

// One call on `analysis`; `finish` returns the report's JSON text.
function play(analysis, call) {
  const [run, op, ...a] = call;
  switch (op) {
    case "begin":
      if (a[3] != null) throw new Error(`a page cannot inject a fault (${JSON.stringify(a[3]).slice(0, 120)}) into the runner`);
      if (analysis.inProgress >= MAX_OPEN_RUNS) throw new Error(`a page may have at most ${MAX_OPEN_RUNS} runs in progress`);
      return void analysis.begin(run, opt(a[0]), opt(a[1]), opt(a[2]), undefined);
    case "request":
      return void analysis.request(run, opt(a[0]), opt(a[1]), opt(a[2]), opt(a[3]));
    case "headers":
      return void analysis.headers(run, a[0], a[1], opt(a[2]), opt(a[3]));
    case "chunks":
      return void analysis.chunks(run, numbersOf(a[0]), bytesOf(a[1]));
    case "anomaly":
      return void analysis.anomaly(run, a[0], String(a[1]), String(a[2]));
    case "end":
      return void analysis.end(run, a[0]);
    case "abort":
      return void analysis.abort(run, a[0]);
    case "networkError":
      return void analysis.networkError(run, a[0], String(a[1]));
    case "observed":
      return void analysis.observed(run, String(a[0]), a[1], opt(a[2]));
    case "environment":
      // Whatever the page said, the analysis ran here.
      return void analysis.environment(run, opt(a[0]), opt(a[1]), opt(a[2]), opt(a[3]), opt(a[4]), opt(a[5]), SITE);
    case "visibility":
      return void analysis.visibility(run, a[0], a[1] === true);
    case "resourceTiming":
      return void analysis.resourceTiming(run, ...a.slice(0, 10).map(opt));
    case "resourceServerTiming":
      return void analysis.resourceServerTiming(run, String(a[0]), opt(a[1]), opt(a[2]));
    case "finish":
      // The field report (a beacon's) is not wanted here: no sample rate.
      return analysis.finish(run, undefined, undefined);
    default:
      throw new Error(`unknown call \`${op.slice(0, 120)}\``);
  }
}

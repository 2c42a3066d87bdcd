// The probe as `ttfx run --inject` adds it to a page that does not embed it: the front
// (src/), measuring every transport the page streams over, with an analysis that
// only records. The runner adds this script (built as one classic script, `inject.js` in
// the package) before any of the page's own scripts run, through WebDriver BiDi
// `script.addPreloadScript` or the DevTools protocol's
// `Page.addScriptToEvaluateOnNewDocument`, and reads what it recorded back through
// WebDriver.
//
// Nothing here fetches, evaluates text or starts a Worker, and the recording leaves the
// page through the driver, not the network: a page's Content-Security-Policy has nothing
// to refuse (the driver's injection is not subject to it). The analysis runs in
// `ttfx run` (ttfx-analysis's replay), on exactly the calls the front makes on its
// analysis in a normal page.
//
// What the runner reads, `window[Symbol.for("ttfx.inject")]` (a symbol, so the page's
// own enumeration of `window` does not meet it):
//   arm()      measure from now on: requests, DOM growth, the user's submit
//   take()     { calls, runs, submitAt, now } recorded since the last take: the analysis
//              calls ([run, op, ...args]) and the runs started ([run, requestStart,
//              transport, url]), both in order; the submit's time, the page clock now
//   reply(from, to, selector)  which element's text grew while the stream arrived, and
//              when it first did ({ found, ... }; see below)

import { Probe } from "./src/index.js";

const KEY = Symbol.for("ttfx.inject");

// Growth records kept per armed turn: a reply grows in a few hundred DOM mutations, and
// a page that mutates without end must not grow this list without end.
const MAX_GROWTH = 20000;

function install(config) {
  let armed = false;
  let calls = [];
  let started = [];
  let submitAt = null;
  const ids = new Map();

  // The analysis the front talks to: every call recorded as it is made. A chunk batch's
  // bytes become a string of code points 0–255, one per byte (replay.rs reads it back).
  const latin1 = (bytes) => {
    let s = "";
    for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
    return s;
  };
  const recording = {};
  for (const op of ["begin", "request", "headers", "anomaly", "end", "abort", "networkError", "observed", "environment", "visibility", "resourceTiming", "resourceServerTiming", "voice"]) {
    recording[op] = (run, ...args) => {
      if (op === "begin") ids.set(run, args[1]);
      calls.push([run, op, ...args]);
    };
  }
  recording.chunks = (run, meta, bytes) => {
    calls.push([run, "chunks", Array.from(meta), latin1(bytes)]);
  };
  // The page's own report is made by the runner; the front's ring gets this record of
  // where it went, so nothing in the page waits on it.
  recording.finish = (run, ...args) => {
    calls.push([run, "finish", ...args]);
    const id = ids.get(run);
    ids.delete(run);
    return JSON.stringify({ schema_version: 1, kind: "run", generator: "ttfx-probe inject", run: { id, timeline: { milestones: { request_start: 0 }, chunks: [], environment: { analysis: "runner" } }, metrics: {} } });
  };

  const probe = new Probe({ label: config.label || null, analysis: () => recording });

  // Which requests are measured: after arm(), those whose absolute URL matches
  // `--match`, else every one. The runner checked the value and tags it: a substring or
  // a pattern with its flags. A pattern this engine refuses throws, and the runner is
  // told why (the catch at the end).
  let pattern = null;
  const m = config.match;
  if (m && typeof m.substring === "string") pattern = m.substring;
  else if (m && typeof m.pattern === "string") pattern = new RegExp(m.pattern, m.flags || "");
  else if (m != null) throw new Error("the --match value reached the page in a form it does not know");
  const match = (url) => armed && (pattern === null || (typeof pattern === "string" ? url.includes(pattern) : pattern.test(url)));
  const onStart = (run) => {
    started.push([run.key, run.requestStart, run.transport || "fetch", run.url || ""]);
    // The click or key press that sent the prompt, if one came first: `submit`.
    if (submitAt !== null && submitAt <= run.requestStart) run.send("observed", "submit", submitAt - run.requestStart);
  };
  for (const name of ["instrumentFetch", "instrumentEventSource", "instrumentXhr", "instrumentWebSocket"]) {
    if (typeof probe[name] === "function") probe[name]({ match, onStart });
  }

  // The user's submit: the trusted click or Enter key press the runner sends. The
  // event's own timestamp is when the browser took the input, on the page clock.
  const action = (event) => {
    if (!armed || submitAt !== null) return;
    if (event.type === "keydown" && event.key !== "Enter") return;
    const now = performance.now();
    const t = event.timeStamp;
    submitAt = t > 0 && t <= now ? t : now;
  };
  addEventListener("click", action, { capture: true, passive: true });
  addEventListener("keydown", action, { capture: true, passive: true });

  // The reply: DOM text growth, recorded while armed, attributed to the element it
  // happened in and each of its ancestors when the runner asks. One frame estimate per
  // observer callback that grew text (the start of the frame after the one that renders
  // it), as the front does where there is no Element Timing: the
  // reply's element is not known before it grows, so it cannot be marked for it.
  let growth = [];
  let frames = [];
  let dropped = 0;
  const grew = (node) => (node ? (node.textContent || "").length : 0);
  const observer = new MutationObserver((records) => {
    const at = performance.now();
    let any = false;
    for (const r of records) {
      let n = 0;
      if (r.type === "characterData") n = (r.target.data || "").length - (r.oldValue || "").length;
      else {
        for (const node of r.addedNodes) n += grew(node);
        for (const node of r.removedNodes) n -= grew(node);
      }
      if (n <= 0) continue;
      const element = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      if (!element) continue;
      if (growth.length >= MAX_GROWTH) {
        dropped += 1;
        continue;
      }
      growth.push([at, element, n, frames.length]);
      any = true;
    }
    if (!any) return;
    const frame = [at, null];
    frames.push(frame);
    // The frame after the one that renders the change starts where the compositor draws
    // it: its rAF timestamp is the estimate (as the front's `raf_next_frame`). Firefox's
    // rAF timestamps are not jittered like its clock reads, so one can read a fraction of
    // a ms before the change's own (jittered) time: the callback's clock read then.
    requestAnimationFrame(() => requestAnimationFrame((next) => { frame[1] = next >= at ? next : performance.now(); }));
  });

  const describe = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += "#" + el.id;
    for (const c of Array.from(el.classList || []).slice(0, 3)) s += "." + c;
    return s;
  };

  globalThis[KEY] = {
    arm() {
      armed = true;
      submitAt = null;
      growth = [];
      frames = [];
      dropped = 0;
      observer.disconnect();
      observer.observe(document.documentElement, { subtree: true, childList: true, characterData: true, characterDataOldValue: true });
    },
    take() {
      const out = { calls, runs: started, submitAt, now: performance.now() };
      calls = [];
      started = [];
      return out;
    },
    // The element whose text grew most while the stream arrived, between `from` and `to`
    // (page clock): with `selector`, the nearest ancestor-or-self matching it of each
    // growth; else the deepest element holding at least 90 % of all the text added
    // (a whole reply, not one of its paragraphs; not the page around it). Its first
    // growth is `first_dom`, that callback's frame `first_paint`.
    reply(from, to, selector) {
      const inWindow = growth.filter(([at]) => at >= from && at <= to);
      const totals = new Map();
      let all = 0;
      for (const [, element, n] of inWindow) {
        all += n;
        if (selector) {
          const hit = element.closest(selector);
          if (hit) totals.set(hit, (totals.get(hit) || 0) + n);
          continue;
        }
        for (let e = element; e; e = e.parentElement) totals.set(e, (totals.get(e) || 0) + n);
      }
      let best = null;
      let bestDepth = -1;
      let bestTotal = 0;
      for (const [e, n] of totals) {
        let depth = 0;
        for (let p = e.parentElement; p; p = p.parentElement) depth += 1;
        const enough = selector ? n > bestTotal : n >= 0.9 * all && depth > bestDepth;
        if (enough) {
          best = e;
          bestDepth = depth;
          bestTotal = n;
        }
      }
      if (!best) return { found: false, grown: all, dropped };
      const first = inWindow.find(([, element]) => best.contains(element));
      const frame = frames[first[3]];
      return {
        found: true,
        element: describe(best),
        share: all > 0 ? bestTotal / all : 0,
        chars: bestTotal,
        text: (best.textContent || "").slice(0, 2000),
        firstDom: first[0],
        firstPaint: frame && frame[1] !== null ? frame[1] : null,
        dropped,
      };
    },
  };
}

// Why the probe did not install, for the runner (which reads it while it waits for KEY).
const FAILED = Symbol.for("ttfx.inject.failed");

try {
  const config = globalThis.__ttfxInjectConfig || {};
  delete globalThis.__ttfxInjectConfig;
  // Once per realm: a page that re-runs preload scripts (a document.open) keeps one probe.
  if (!globalThis[KEY] && typeof document !== "undefined") install(config);
} catch (e) {
  // The page must never see the probe fail, and the runner must know why it did.
  try {
    globalThis[FAILED] = String((e && e.name) || "Error") + ": " + String((e && e.message) || e);
  } catch (_) {
    // A page whose global refuses a property (frozen) cannot be told; the runner says so.
  }
}

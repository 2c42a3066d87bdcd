// One chat turn in a page the inject bundle is in, driven by any test runner: arm the
// probe, let the test submit, read the recording until the turn's stream has ended,
// find the reply's element, and make the run's report. The same protocol and rules as
// `ttfx run --inject` (crates/ttfx-run/src/inject.rs): the stream is the first request
// started after the submit whose response streamed (or, with `match`, the first), the
// reply the deepest element holding 90 % of the text the page added meanwhile.
//
// The runner is reached through one function, `evaluate(fn, arg)`, which runs `fn(arg)`
// in the page and resolves to its JSON value: Playwright's and Puppeteer's
// `page.evaluate`, WebdriverIO's `browser.execute`.

import { Replay, loadAnalysis } from "./replay.js";

// How often the page's recording is read while a turn waits (inject.rs's POLL), and how
// long the reply's DOM may still grow after its stream is chosen (a framework's batched
// render: inject.rs's SETTLE).
const POLL_MS = 50;
const SETTLE_MS = 200;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Each function runs in the page: self-contained, its one argument JSON.
const PAGE = {
  state: () => ({
    probe: !!window[Symbol.for("ttfx.inject")],
    ready: document.readyState,
    failed: window[Symbol.for("ttfx.inject.failed")] || null,
  }),
  arm: () => {
    const probe = window[Symbol.for("ttfx.inject")];
    probe.arm();
    // What was recorded before this turn is not its own.
    probe.take();
    return true;
  },
  take: () => window[Symbol.for("ttfx.inject")].take(),
  reply: ([from, selector]) => {
    const r = window[Symbol.for("ttfx.inject")].reply(from, performance.now(), selector);
    // The element itself does not cross into the test; its text is not needed.
    delete r.text;
    return r;
  },
};

/** Waits until the probe is in the page and the document has loaded (10 s at most). */
async function ready(evaluate) {
  const started = Date.now();
  for (;;) {
    const state = await evaluate(PAGE.state, null);
    if (state.probe && state.ready !== "loading") return;
    if (state.failed) throw new Error(`the injected probe did not install in the page: ${String(state.failed).slice(0, 500)}`);
    if (Date.now() - started > 10000) {
      throw new Error(
        `the injected probe is not in the page after 10 s (document ${state.ready}): was the inject bundle added before the page loaded (addInitScript, evaluateOnNewDocument, onBeforeLoad)?`,
      );
    }
    await sleep(POLL_MS);
  }
}

// A response streamed: two or more chunks (events, messages), with tokens found.
function streamed(run) {
  const t = run.timeline;
  const chunks = t.chunk_summary ? t.chunk_summary.chunks : (t.chunks || []).length;
  return chunks >= 2 && t.milestones.first_token !== undefined;
}

// The stream of a turn submitted at `submitAt`: [started, run, requests seen], or null
// while an earlier request is still open.
function choose(replay, started, submitAt, byMatch) {
  const after = started.filter((s) => s.start >= submitAt).sort((a, b) => a.start - b.start);
  for (let i = 0; i < after.length; i++) {
    const s = after[i];
    if (replay.failed.has(s.key)) continue;
    const run = replay.reports.get(s.key);
    if (!run) return null;
    if (byMatch || streamed(run)) return [s, run, i + 1];
  }
  return null;
}

function describeOpen(replay, started, submitAt) {
  const list = started
    .filter((s) => s.start >= submitAt)
    .map((s) => {
      const state = replay.failed.has(s.key)
        ? `failed: ${replay.failed.get(s.key)}`
        : replay.reports.has(s.key)
          ? "ended without streaming"
          : "still open";
      return `${s.transport} ${s.url.split(/[?#]/)[0].slice(0, 200)} (${state})`;
    });
  return list.length ? `requests after the submit: ${list.join("; ")}` : "no request was made after the submit";
}

/**
 * The stream of a turn from one recording `take()` returned after the reply ended (a
 * runner that cannot await the page from Node.js, e.g. Cypress through `cy.task`): the
 * same choice as `measureTurn`, without the reply's element (no first_dom, first_paint).
 */
export async function streamOf(taken, options = {}) {
  const { match = null, probe = null } = options;
  await loadAnalysis();
  const replay = new Replay();
  const started = (taken.runs || []).map(([key, start, transport, url]) => ({ key, start, transport, url }));
  for (const call of taken.calls || []) replay.apply(call);
  if (taken.submitAt === null || taken.submitAt === undefined) {
    throw new Error("the recording holds no submit: arm() before the click or Enter, take() after the reply");
  }
  const chosen = choose(replay, started, taken.submitAt, match !== null);
  if (!chosen) throw new Error(`no stream ended after the submit; ${describeOpen(replay, started, taken.submitAt)}`);
  const run = chosen[1];
  run.timeline.selection = {
    stream: match !== null ? "match" : "first_streaming_after_submit",
    requests_seen: chosen[2],
    reply: "growth",
    ...(probe ? { probe } : {}),
  };
  return run;
}

/**
 * Measures one turn: `action` submits the prompt (a click or an Enter key press, as a
 * user does); resolves to the run (docs/report.md's run: id, target, timeline, metrics).
 */
export async function measureTurn(evaluate, action, options = {}) {
  const { match = null, reply = null, timeoutMs = 30000, id = null, label = null, probe = null } = options;
  await loadAnalysis();
  await ready(evaluate);
  await evaluate(PAGE.arm, null);
  await action();
  const replay = new Replay();
  const started = [];
  let submitAt = null;
  const deadline = Date.now() + timeoutMs;
  let chosen = null;
  for (;;) {
    const taken = await evaluate(PAGE.take, null);
    for (const [key, start, transport, url] of taken.runs) started.push({ key, start, transport, url });
    for (const call of taken.calls) replay.apply(call);
    if (taken.submitAt !== null && taken.submitAt !== undefined) submitAt = taken.submitAt;
    // Until the page saw the click or key press, nothing counts as after it.
    if (submitAt !== null && (chosen = choose(replay, started, submitAt, match !== null))) break;
    if (Date.now() > deadline) {
      const how = match !== null ? "no request matching `match` ended" : "no streamed response ended";
      throw new Error(
        submitAt === null
          ? `the page saw no click or Enter key press within ${timeoutMs / 1000} s (the action must submit as a user does)`
          : `${how} within ${timeoutMs / 1000} s of the submit; ${describeOpen(replay, started, submitAt)}`,
      );
    }
    await sleep(POLL_MS);
  }
  await sleep(SETTLE_MS);
  const [start, first, seen] = chosen;
  const firstByte = first.timeline.milestones.first_byte ?? 0;
  const found = await evaluate(PAGE.reply, [start.start + firstByte, reply]);
  // The page's clock readings: an offset that is not finite and non-negative is none.
  const offset = (at) => (typeof at === "number" && Number.isFinite(at - start.start) && at >= start.start ? at - start.start : null);
  const extra = [];
  if (found.found) {
    if (offset(found.firstDom) !== null) extra.push(["first_dom", offset(found.firstDom), undefined]);
    if (offset(found.firstPaint) !== null) extra.push(["first_paint", offset(found.firstPaint), "raf_next_frame"]);
  }
  const run = replay.again(start.key, extra);
  if (id !== null) run.id = id;
  if (label !== null) run.target = label;
  run.timeline.selection = {
    stream: match !== null ? "match" : "first_streaming_after_submit",
    requests_seen: seen,
    reply: reply ? "selector" : "growth",
    ...(found.found ? { reply_element: found.element, reply_share: found.share } : {}),
    ...(probe ? { probe } : {}),
  };
  return run;
}

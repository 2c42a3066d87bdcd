// The main-thread fallback: the analysis's loader and scheduler, imported only when a
// page's CSP refuses the Worker (the probe's analysis_host.js), so the up-front probe
// carries neither. It holds each idle task to the host's slice
// (4 ms, #35): a slice runs at least one call, then stops before a call it estimates
// would end past the slice; a chunk batch is decoded PIECE_BYTES at a time, a call
// each; a run's finish is two calls (`finishBegin`, then `finishWrite`: staged.rs);
// and right after loading, a synthetic run primes the wasm a step per call (prime.rs),
// since the engine compiles each function on its first call; each step says whether
// another follows.

// The host's slice (analysis_host.js's SLICE_MS): #35, no analysis task on the main
// thread longer than 4 ms.
const SLICE_MS = 4;
// A batch decoded this many bytes at a time: a 16 KiB batch in one call ran past the
// slice on a cold page.
const PIECE_BYTES = 4096;
// The last cost of each kind of call (per byte for chunk batches): see `estimate`.
const costs = {};

// The probe's cost samples (its cost.js), which e2e bundler.rs reads: "analysis OP" per
// call, "slice" per idle task.
const costStart = () => (Array.isArray(globalThis.__ttfxCostSamples) ? performance.now() : -1);
function costEnd(name, started) {
  if (started >= 0 && Array.isArray(globalThis.__ttfxCostSamples)) globalThis.__ttfxCostSamples.push(name, performance.now() - started);
}

// Loads the analysis for `host` (the probe's AnalysisHost) and makes this module its
// scheduler: the host's idle tasks then run `drain` (the host's own drain, a plain
// time-boxed loop, stays in the front for an `analysis` a page passes itself).
export async function load(host) {
  const m = await import("./ttfx_analysis.js");
  await m.default();
  host.drain = () => {
    host.busy = false;
    drain(host, SLICE_MS);
    if (host.queue.length > 0) host.drainSoon();
  };
  return new m.Analysis();
}

// Whether the priming steps were queued (once per page: one host per page).
let primed = false;

// What the next call will likely take: its kind's last cost. A kind not run yet is
// assumed to fill a slice: its wasm is compiled on first use, so it runs first in a
// slice of its own.
function estimate(op, args, sliceMs) {
  const ms = costs[op];
  return ms === undefined ? sliceMs : op === "chunks" ? ms * args[1].byteLength : ms;
}

// One idle task: the host's queued calls, as many as fit in `sliceMs`.
function drain(host, sliceMs) {
  if (!primed && host.analysis.primeStep) {
    // Ahead of everything the page queued; each step queues the next (below).
    host.queue.unshift([0, "primeStep", [0]]);
  }
  primed = true;
  const slice = costStart();
  const from = performance.now();
  for (let ran = false; host.queue.length > 0; ran = true) {
    const [run, queued, whole] = host.queue[0];
    const op = queued === "finish" && host.analysis.finishBegin ? "finishBegin" : queued;
    const [args, rest] = op === "chunks" ? piece(whole) : [whole, null];
    if (ran && performance.now() - from + estimate(op, args, sliceMs) > sliceMs) break;
    host.queue.shift();
    if (rest) host.queue.unshift([run, "chunks", rest]);
    if (op === "finishBegin") host.queue.unshift([run, "finishWrite", []]);
    if (op === "chunks") host.heldBytes -= args[1].byteLength;
    const started = performance.now();
    const result = call(host, run, op, args);
    const took = performance.now() - started;
    if (op === "primeStep" && result === true) host.queue.unshift([0, "primeStep", [args[0] + 1]]);
    // Each priming step compiles new code: none predicts the next.
    costs[op] = op === "primeStep" ? undefined : op === "chunks" ? took / Math.max(1, args[1].byteLength) : took;
    costEnd("analysis " + op + (op === "primeStep" ? " " + args[0] : ""), started);
  }
  costEnd("slice", slice);
}

// One call, as the Worker makes it (worker.js): a finishing call settles its run, a
// failing one records its error, and a trap (its panic's message kept) leaves the
// Analysis object unusable, so later runs get a fresh one. The call's result, or
// undefined when it failed.
function call(host, run, op, args) {
  const ends = op === "finish" || op === "finishWrite";
  try {
    const result = host.analysis[op](run, ...host.withSite(op, args));
    if (ends) host.settle(run, { report: result });
    return result;
  } catch (e) {
    const Analysis = host.analysis.constructor;
    const trap = e instanceof WebAssembly.RuntimeError;
    const panic = trap ? Analysis.lastPanic() : null;
    const error = String((e && e.message) || e) + (panic ? " (" + panic + ")" : "");
    if (ends) host.settle(run, { error });
    else host.failed(run, error);
    if (trap) host.analysis = new Analysis();
  }
}

// A chunk batch as the chunks up to PIECE_BYTES (at least one) and the rest, or null. A
// chunk is never split (the report counts chunks).
function piece([meta, bytes]) {
  let n = 0;
  let used = 0;
  while (n < meta.length && (n === 0 || used + meta[n + 1] <= PIECE_BYTES)) {
    used += meta[n + 1];
    n += 2;
  }
  if (n >= meta.length) return [[meta, bytes], null];
  return [
    [meta.subarray(0, n), bytes.subarray(0, used)],
    [meta.subarray(n), bytes.subarray(used)],
  ];
}

// The analysis worker: a module Worker the probe starts lazily, after the page's first
// measured request. It answers { ready: true } once the wasm is loaded (or { failed } if
// it cannot load). Then messages are { op, run, args } in the order the page observed
// them; `finish` is answered { run, op, report } (the report's JSON text; for a run the
// page beacons, `finish` gets [pagePath, sampleRate] and the field report's JSON follows
// after a newline), a chunk batch { analysed: bytes } once done with, and a failing call
// { run, op, error }. Nothing is thrown: the page's probe records the error, the page
// itself is not affected.
import init, { Analysis } from "./ttfx_analysis.js";

let analysis = null;

function describe(e) {
  const panic = e instanceof WebAssembly.RuntimeError ? Analysis.lastPanic() : null;
  return String((e && e.message) || e) + (panic ? " (" + panic + ")" : "");
}

const ready = init().then(
  () => {
    analysis = new Analysis();
    // Baseline code ran the page's first reply 5x as slow as optimized code: a few
    // synthetic replies first let the engine optimize the decoders (warm_up.rs). A
    // failure here only means a cold first reply.
    try {
      Analysis.warmUp();
    } catch {}
    self.postMessage({ ready: true });
  },
  (e) => self.postMessage({ failed: "the analysis did not load: " + describe(e) }),
);

self.onmessage = async (event) => {
  const { op, run, args = [] } = event.data || {};
  await ready;
  if (!analysis) {
    self.postMessage({ run, op, error: "the analysis did not load" });
    return;
  }
  try {
    const result = analysis[op](run, ...args);
    if (op === "finish") self.postMessage({ run, op, report: result });
    // The page holds a bounded number of bytes for the analysis: tell it these are done.
    else if (op === "chunks") self.postMessage({ analysed: args[1].byteLength });
  } catch (e) {
    if (op === "chunks") self.postMessage({ analysed: args[1].byteLength });
    self.postMessage({ run, op, error: describe(e) });
    // A trap leaves the Analysis object borrowed for good: the runs it held are lost
    // (their finish answers an error), later runs get a fresh one.
    if (e instanceof WebAssembly.RuntimeError) analysis = new Analysis();
  }
};

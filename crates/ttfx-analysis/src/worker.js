// The analysis worker: a module Worker the probe starts after the page's first measured
// request. Messages are { op, run, args } in the order the page observed them; `finish`
// answers { run, report } (the report's JSON text) or { run, error }. A failing call is
// answered, never thrown: the page's probe records it, the page is not affected.
import init, { Analysis } from "./ttfx_analysis.js";

const ready = init().then(() => new Analysis());

self.onmessage = async (event) => {
  const { op, run, args = [] } = event.data || {};
  let analysis;
  try {
    analysis = await ready;
  } catch (e) {
    self.postMessage({ run, op, error: "the analysis did not load: " + String((e && e.message) || e) });
    return;
  }
  try {
    const result = analysis[op](run, ...args);
    if (op === "finish") self.postMessage({ run, op, report: result });
  } catch (e) {
    self.postMessage({ run, op, error: String((e && e.message) || e) });
  }
};

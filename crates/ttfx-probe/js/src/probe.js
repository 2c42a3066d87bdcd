// The probe: its options, the analysis host its runs share, the page's environment, and
// the instrument functions of every transport (each in its own module).

import { AnalysisHost, MAX_HELD_BYTES, pageHost } from "./analysis_host.js";
import { clockStep } from "./clock.js";
import { engineInfo } from "./environment.js";
import { instrumentEventSource } from "./eventsource.js";
import { instrumentFetch } from "./fetch.js";
import { started, watchReply } from "./instrument.js";
import { readOptions } from "./options.js";
import { ProbeRun } from "./run.js";
import { instrumentWebSocket } from "./websocket.js";
import { instrumentXhr } from "./xhr.js";

export class Probe {
  constructor(options) {
    this.options = readOptions(options);
    if (typeof globalThis.fetch !== "function") throw new Error("ttfx: this global scope has no fetch()");
    // The page's fetch when the probe was made: runs call this, so a probe that also
    // instruments `window.fetch` never measures itself.
    this.fetch = globalThis.fetch;
    this.host = this.options.analysis ? new AnalysisHost(this.options.analysis) : pageHost();
    const [engine, engineVersion, userAgent] = engineInfo();
    this.environment = [engine, engineVersion, userAgent, globalThis.crossOriginIsolated === true ? true : globalThis.crossOriginIsolated === false ? false : null, clockStep()];
    this.inFlight = 0;
  }

  // Body bytes the probe holds for its analysis now and at most so far (bounded by
  // MAX_HELD_BYTES, whatever the body's length), for diagnostics and tests.
  memory() {
    const host = this.host;
    return { heldBytes: host.heldBytes, peakHeldBytes: host.peakHeldBytes, maxHeldBytes: MAX_HELD_BYTES };
  }

  // Starts measuring one request; `label` overrides the probe's label.
  start(label) {
    return new ProbeRun(this, label === undefined || label === null ? this.options.label : String(label));
  }

  // Wraps `window.fetch` so matching requests are measured with no app change.
  instrumentFetch(options) {
    return instrumentFetch(this, options);
  }

  // A run of another transport, started at `at` (its request's start on the page clock).
  launch(o, transport, at, method, url) {
    const run = this.start();
    run.start = at;
    watchReply(o, run);
    run.opened(transport, method, url, null);
    started(o, run);
    return run;
  }

  // Measures the EventSources the page makes for matching URLs (eventsource.js).
  instrumentEventSource(options) {
    return instrumentEventSource(this, options);
  }

  // Measures XMLHttpRequests to matching URLs (xhr.js).
  instrumentXhr(options) {
    return instrumentXhr(this, options);
  }

  // Measures WebSockets to matching URLs (websocket.js).
  instrumentWebSocket(options) {
    return instrumentWebSocket(this, options);
  }
}

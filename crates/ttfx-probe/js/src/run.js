// One measured request: the clocks of its request, headers, body, render and
// visibility, sent to the analysis host in order, and its report delivered once.

import { beacon } from "./beacon.js";
import { timed } from "./cost.js";
import { canWrap, tapBody, wrapResponse } from "./fetch_body.js";
import { inputMethod, inputSignal, inputUrl } from "./fetch_input.js";
import { describe, disable, disabled } from "./fault.js";
import { idle } from "./idle.js";
import { isElement, RenderWatch } from "./paint.js";
import { SCHEMA_VERSION, VERSION } from "./version.js";

// Run numbers are unique in the page: every probe's runs share the page's analysis.
let nextRun = 1;

// The Resource Timing entries runs have taken (resourceTiming()), page-wide.
const taken = new WeakSet();

// `window.__ttfx` keeps the last REPORT_RING reports, so a page that measures every
// request for hours holds a bounded number (a QA driver reads them as they come; the
// report of one run is also `run.finished()`'s value).
export const REPORT_RING = 100;

// How long a run waits for included voice results after its stream ends
// (ttfx_core::voice_result::TIMEOUT_MS).
const VOICE_TIMEOUT_MS = 15000;

export class ProbeRun {
  constructor(probe, label) {
    this.probe = probe;
    this.label = label;
    this.key = nextRun++;
    this.id = `ttfx-${Math.floor(performance.timeOrigin).toString(16)}-${this.key}`;
    this.start = null;
    this.render = null;
    this.voice = [];
    this.over = false;
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  // `request_start` on the page clock once `fetch` was called.
  get requestStart() {
    return this.start === null ? undefined : this.start;
  }

  send(op, ...args) {
    this.probe.host.send(this.key, op, args);
  }

  // Runs probe work; a throw switches the probe off and settles the run.
  guard(fn) {
    if (this.settled) return;
    try {
      fn();
    } catch (e) {
      this.fault(describe(e));
    }
  }

  // `fetch(input, init)`, measured. The Response's body yields exactly the server's bytes;
  // a failed fetch rejects with the page's own error.
  async fetch(input, init) {
    const original = this.probe.fetch;
    const call = () => (init === undefined ? original.call(globalThis, input) : original.call(globalThis, input, init));
    if (disabled) {
      // Settle at once: a switched-off probe must not leave callers waiting.
      this.fault(disabled);
      return call();
    }
    if (this.start !== null) return call();
    // request_start is the page's fetch call itself: the probe's bookkeeping runs after
    // it, while the request is in flight, so it neither delays the request nor sits
    // inside the milestones (it put about 0.5 ms before Chromium's requestWillBeSent).
    this.start = performance.now();
    let pending;
    try {
      pending = call();
    } catch (e) {
      pending = Promise.reject(e);
    }
    this.guard(() => this.begin(input, init));
    let response;
    try {
      response = await pending;
    } catch (e) {
      this.guard(() => {
        this.send("networkError", performance.now() - this.start, "fetch rejected (network or CORS): " + describe(e));
        this.finish();
      });
      throw e;
    }
    let out = response;
    this.guard(() => (out = this.observe(response)));
    return out;
  }

  begin(input, init) {
    this.opened("fetch", inputMethod(input, init), inputUrl(input), inputSignal(input, init));
  }

  // The request is sent (at this.start): what the analysis needs first, and the page's
  // clocks beside the stream.
  opened(transport, method, url, signal) {
    this.transport = transport;
    this.url = url;
    const probe = this.probe;
    const o = probe.options;
    const [engine, engineVersion, userAgent, isolated, resolution] = probe.environment;
    probe.inFlight += 1;
    this.send("begin", o.dialect, this.id, this.label, o.fault);
    this.send("request", method, url, performance.timeOrigin + this.start, transport);
    this.send("environment", engine, engineVersion, userAgent, isolated, resolution, probe.inFlight);
    if (probe.host.state === "unloaded") idle(() => probe.host.load(), 2000);
    this.hidden = [];
    this.onVisibility = () => this.hidden.push([performance.now(), document.visibilityState === "hidden"]);
    if (globalThis.document) {
      this.onVisibility();
      document.addEventListener("visibilitychange", this.onVisibility);
    }
    if (signal) {
      if (signal.aborted) this.send("abort", 0);
      else {
        this.signal = signal;
        this.onAbort = () => this.guard(() => this.send("abort", performance.now() - this.start));
        signal.addEventListener("abort", this.onAbort);
      }
    }
    if (this.render) this.render.notBefore = this.start;
  }

  // Headers are in: record them and splice the probe into the body.
  observe(response) {
    const at = performance.now() - this.start;
    const headers = response.headers;
    this.send("headers", at, response.status, headers.get("content-type"), headers.get("server-timing"));
    if (response.type === "opaque") this.send("anomaly", at, "opaque_response", "no-cors response: status and body are hidden from the page");
    if (!canWrap(response)) {
      this.send("end", at);
      this.finish();
      return response;
    }
    // tapBody takes the reader only once it cannot fail, so a throw leaves the body intact.
    return wrapResponse(response, tapBody(response.body, this, this.probe.options.abandonAfterMs));
  }

  // Called by the body tap, in its later task, with views of its reused buffers.
  chunks(meta, bytes) {
    this.probe.host.sendBatch(this.key, meta, bytes);
  }
  oddChunk(at, kind) {
    const [cls, detail] = kind === "detached" ? ["chunk_detached", "a chunk's buffer was detached before the probe read it"] : ["non_byte_chunk", "a body chunk was not a Uint8Array"];
    this.send("anomaly", at - this.start, cls, detail);
  }
  end(at) {
    this.send("end", at - this.start);
    this.finishLater();
  }
  bodyError(at, detail) {
    this.fail(at, "body stream errored: " + detail);
  }
  fail(at, detail) {
    this.send("networkError", at - this.start, detail);
    this.finishLater();
  }
  note(at, cls, detail) {
    this.send("anomaly", at - this.start, cls, detail);
  }
  cancel(at) {
    this.send("abort", at - this.start);
    this.finishLater();
  }
  abandon(at, queued) {
    this.send("anomaly", at - this.start, "abandoned", `the app stopped reading the body for ${this.probe.options.abandonAfterMs} ms with ${queued} bytes waiting; the probe stopped reading ahead and reports what it saw`);
    this.send("end", at - this.start);
    this.finishLater();
  }
  // The stream's last batch goes in this task, the end of the run in the next: no one
  // task of the probe's carries both.
  finishLater() {
    setTimeout(() => timed("task", () => this.guard(() => this.finish())), 0);
  }

  // Times the reply's render in `element`; call before the first token lands.
  watch(element) {
    if (disabled) throw new Error("ttfx: the probe is switched off: " + disabled);
    if (!isElement(element)) throw new Error("ttfx: watch needs an Element");
    const watch = new RenderWatch(element);
    if (this.start !== null) watch.notBefore = this.start;
    if (this.render) this.render.stop();
    this.render = watch;
  }

  // The voice build's hook (its runs' includeAudio/includeHandoff/includeTurn): the report
  // waits (at most 15 s after the stream ends) for this voice result, "audio"
  // (`player.result()`), "handoff" (`handoff.result()`) or "turn" (`turn.result()`), and
  // its analysis merges it.
  include(part, result) {
    this.voice.push([part, result]);
  }

  // Resolves with the report once the stream is over and its paint is known.
  finished() {
    return this.done;
  }

  // Once the stream is over: wait (bounded) for the paint, the Resource Timing entry and
  // voice results, send what the page saw, and deliver the report.
  finish() {
    if (this.over) return;
    this.over = true;
    this.probe.inFlight -= 1;
    if (this.signal) this.signal.removeEventListener("abort", this.onAbort);
    if (globalThis.document && this.onVisibility) document.removeEventListener("visibilitychange", this.onVisibility);
    // The stream is over: the analysis is wanted now.
    this.probe.host.load();
    this.complete().catch((e) => this.fault(describe(e)));
  }

  async complete() {
    const deadline = performance.now() + this.probe.options.paintTimeoutMs;
    while (this.render && !this.render.settled() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 16));
    const entry = await this.resourceTiming();
    const voice = [];
    for (const [part, result] of this.voice) {
      const value = await Promise.race([Promise.resolve(result).then((v) => v, () => null), new Promise((r) => setTimeout(() => r(null), VOICE_TIMEOUT_MS))]);
      voice.push([part, value === undefined ? null : value]);
    }
    if (this.settled) return;
    const start = this.start;
    if (this.render) {
      this.render.stop();
      if (this.render.firstDom !== null) this.send("observed", "first_dom", this.render.firstDom - start);
      const paint = this.render.firstPaint();
      if (paint) {
        if (paint[2] !== null) this.send("observed", "paint_time", paint[2] - start);
        this.send("observed", "first_paint", paint[0] - start, paint[1]);
      }
    }
    for (const [at, hidden] of this.hidden) this.send("visibility", Math.max(0, at - start), hidden);
    if (entry) {
      const rel = (v) => (v > 0 ? v - start : undefined);
      // The entry's times as they are: the analysis works out what they mean (the
      // request's queue, request_queued_ms). A 0 (hidden cross-origin) goes as undefined.
      this.send("resourceTiming", ...["requestStart", "responseStart", "responseEnd"].map((k) => rel(entry[k])), entry.encodedBodySize, ...["fetchStart", "domainLookupStart", "domainLookupEnd", "connectStart", "connectEnd"].map((k) => rel(entry[k])), entry.nextHopProtocol);
      for (const s of entry.serverTiming || []) this.send("resourceServerTiming", s.name, s.duration, s.description);
    }
    for (const [part, value] of voice) this.send("voice", part, value);
    // Sampled before the analysis is asked: a run that is not beaconed costs nothing
    // more. The analysis makes the field report (the page path loses its query there).
    const o = this.probe.options;
    let field = [];
    if (o.collectorUrl && Math.random() < o.sampleRate) {
      let path = o.pagePath;
      try {
        path = typeof path === "function" ? path() : path === null ? globalThis.location && location.pathname : path;
      } catch (_) {
        path = null;
      }
      field = [typeof path === "string" ? path : undefined, o.sampleRate];
    }
    const outcome = await this.probe.host.finish(this.key, field);
    if (outcome.error) return this.fault(outcome.error);
    timed("report", () => {
      const text = outcome.report;
      const split = text.indexOf("\n");
      this.deliver(split < 0 ? text : text.slice(0, split), null, split < 0 ? null : text.slice(split + 1));
    });
  }

  // The request's Resource Timing entry: it appears only after the body ends, so poll for
  // it (5 × 20 ms). Its absence (aborted streams) is not a failure. Requests to one URL
  // in flight at once (several streams of a page) each have an entry under that name,
  // and the engine begins them in the order they were called: a run takes the entry no
  // other run took that began first at or after its own call (one clock step of slack:
  // both times are coarsened), so two runs never share an entry (entries are the same
  // objects on every read).
  async resourceTiming() {
    // A WebSocket's messages have no entry.
    if (!globalThis.performance || typeof performance.getEntriesByName !== "function" || !this.url || this.transport === "websocket") return null;
    const from = this.start - (this.probe.environment[4] || 1);
    for (let i = 0; i < 5; i++) {
      const entry = timed("task", () => {
        let first = null;
        for (const e of performance.getEntriesByName(this.url, "resource")) if (e.startTime >= from && !taken.has(e) && !(first && first.startTime <= e.startTime)) first = e;
        return first;
      });
      if (entry) {
        taken.add(entry);
        return entry;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    return null;
  }

  // The probe failed inside: switch it off and settle the run with what is known.
  fault(reason) {
    disable(reason);
    this.deliver(null, {
      schema_version: SCHEMA_VERSION,
      kind: "run",
      generator: "ttfx-probe " + VERSION,
      run: {
        id: this.id,
        ...(this.label === null ? {} : { target: this.label }),
        timeline: {
          milestones: { request_start: 0 },
          chunks: [],
          environment: {},
          server: {},
          request: this.transport ? { transport: this.transport } : {},
          anomalies: [{ at_ms: 0, class: "probe_fault", detail: "the probe stopped itself; the app's request was not affected: " + disabled }],
        },
        metrics: {},
      },
    });
  }

  // Delivers the report (JSON text, or an object) once: the app's callback, the
  // `window.__ttfx` ring, the field report's beacon when the run was sampled, and
  // `finished()`. Neither report holds a header value or a query string, so nothing here
  // can leak a key.
  deliver(text, object, field) {
    if (this.settled) return;
    this.settled = true;
    let report = object || JSON.parse(text);
    const o = this.probe.options;
    if (o.onReport) {
      try {
        o.onReport(report);
      } catch (e) {
        const timeline = report.run.timeline;
        (timeline.anomalies = timeline.anomalies || []).push({ at_ms: 0, class: "callback_threw", detail: "onReport threw (ignored): " + describe(e) });
      }
    }
    try {
      const ring = (globalThis.__ttfx = globalThis.__ttfx || []);
      ring.push(report);
      if (ring.length > REPORT_RING) ring.splice(0, ring.length - REPORT_RING);
    } catch (_) {
      // The page put something else at window.__ttfx: the report still reaches onReport
      // and finished().
    }
    if (field) beacon(o.collectorUrl, field, this.probe.fetch);
    this.resolve(report);
  }
}

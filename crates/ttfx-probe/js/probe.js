// ttfx-probe: the part of the probe a page loads before it measures.
//
// It takes the clocks (fetch, chunk arrival, render, visibility) and keeps the bytes; it
// decodes nothing. The analysis (ttfx-core's decoding, recorder, metrics and report, as
// wasm) is loaded lazily and runs in a module Worker, or on the main thread in idle time
// where a Worker cannot start. Every milestone keeps the arrival time taken here, so
// where and when the analysis runs changes no figure.
//
// Hand-written JS, not Rust, for size: this part must stay under 12 KB gzip, and
// wasm-bindgen's generated JS glue for the probe was 40.7 KB (about 8 KB gzip) before
// any wasm (docs/probe.md, "Loading model"). Rust front ends reach the same code through
// ttfx-probe's Rust API, which calls this module (src/front.rs).
//
// Safety (docs/architecture.md): the app's chunk is always enqueued first and the probe's
// work on it runs later, in its own task; every probe step is guarded, and a fault
// switches the probe off and settles the run with a `probe_fault` report.

export const VERSION = "0.1.0";
// ttfx_core::report::SCHEMA_VERSION, for the fault report built here (src/front.rs checks it).
const SCHEMA_VERSION = 1;
// ttfx_core::decode::DialectKind's names; a ttfx-probe unit test checks the list.
const DIALECTS = ["auto", "openai-chat", "openai-responses", "openai-realtime", "anthropic", "ollama", "llamacpp", "openai-speech", "pcm16", "wav", "text"];

// The probe's clock.
export const now = () => performance.now();
export const version = () => VERSION;
// Nothing to initialise up front any more; kept so `await init()` in existing pages works.
export default async function init() {}

const describe = (e) => String((e && e.message) || e);

// Set once the probe failed inside: every later run passes the app's data through and
// settles at once with the reason.
let disabled = null;
function disable(reason) {
  disabled = disabled || reason;
}

// `cargo xtask bench` sets globalThis.__ttfxCostSamples to an array to collect the
// probe's main-thread time per piece of work, as name, ms, name, ms, …
const costStart = () => (Array.isArray(globalThis.__ttfxCostSamples) ? performance.now() : -1);
function costEnd(name, started) {
  if (started >= 0 && Array.isArray(globalThis.__ttfxCostSamples)) globalThis.__ttfxCostSamples.push(name, performance.now() - started);
}
function timed(name, fn) {
  const started = costStart();
  try {
    return fn();
  } finally {
    costEnd(name, started);
  }
}

function idle(fn, timeout) {
  if (typeof requestIdleCallback === "function") requestIdleCallback(fn, { timeout });
  else setTimeout(() => fn(null), 1);
}

// ---------------------------------------------------------------------------------------
// The analysis host: where the observations of every run go, in order, as
// [run, op, args] (ttfx-analysis's `Analysis` methods). Before the analysis is loaded
// they wait in `queue`.

// Load the analysis once this many bytes wait for it, idle or not.
const LOAD_NOW_BYTES = 4 * 1024 * 1024;
// The most body bytes the probe holds for the analysis: waiting for it to load, or sent
// to the worker and not yet analysed (a body that arrives faster than it decodes). Past
// this, batches are not analysed; the run's report counts them (`analysis_skipped`).
const MAX_HELD_BYTES = 16 * 1024 * 1024;
// The main-thread fallback works in slices of about this many ms.
const SLICE_MS = 4;

class AnalysisHost {
  // `module`: a function resolving to an `Analysis` object to run on the main thread;
  // without it, the package's worker (and its own module as the fallback).
  constructor(module) {
    this.module = module;
    this.queue = [];
    this.waiting = new Map();
    this.state = "unloaded";
    this.site = module ? "main_thread" : "worker";
    // Body bytes held for the analysis (queued here or in flight to the worker), and
    // the most ever held: see `memory()`.
    this.heldBytes = 0;
    this.peakHeldBytes = 0;
    this.skipped = new Map();
    // The first error of each run whose calls failed: its finish answers with it.
    this.errors = new Map();
    this.busy = false;
  }

  // Whether a batch of `n` bytes may be held; else it is counted as skipped.
  hold(run, meta, n) {
    if (this.heldBytes + n > MAX_HELD_BYTES) {
      const s = this.skipped.get(run) || { at: meta[0], bytes: 0, chunks: 0 };
      s.bytes += n;
      s.chunks += meta.length / 2;
      this.skipped.set(run, s);
      return false;
    }
    this.heldBytes += n;
    this.peakHeldBytes = Math.max(this.peakHeldBytes, this.heldBytes);
    return true;
  }

  // The run's environment says where its analysis ran: known only when it runs.
  withSite(op, args) {
    return op === "environment" ? [...args, this.site] : args;
  }

  post(run, op, args) {
    this.worker.postMessage({ op, run, args: this.withSite(op, args) });
  }

  send(run, op, args) {
    if (this.state === "worker") {
      this.post(run, op, args);
      return;
    }
    if (this.state === "broken") return;
    this.queue.push([run, op, args]);
    if (this.state === "main") this.drainSoon();
  }

  // A chunk batch: views of the tap's buffers, copied here. A worker message is a copy
  // (structured clone: a memcpy off the JS heap); a queued batch is sliced.
  sendBatch(run, meta, bytes) {
    if (this.state === "broken" || !this.hold(run, meta, bytes.byteLength)) return;
    if (this.state === "worker") return this.post(run, "chunks", [meta, bytes]);
    this.send(run, "chunks", [meta.slice(), bytes.slice()]);
    if (this.state === "unloaded" && this.heldBytes >= LOAD_NOW_BYTES) this.load();
  }

  // { report } (the report's JSON text, then the field report's after a newline when
  // `field` is [pagePath, sampleRate]), or { error }.
  finish(run, field) {
    if (this.state === "broken") return Promise.resolve({ error: this.broken });
    const skipped = this.skipped.get(run);
    if (skipped) {
      this.skipped.delete(run);
      this.send(run, "anomaly", [skipped.at, "analysis_skipped", `${skipped.bytes} bytes in ${skipped.chunks} chunks were not analysed: the body arrived faster than the analysis ran, and the probe holds at most ${MAX_HELD_BYTES} bytes for it`]);
    }
    return new Promise((resolve) => {
      this.waiting.set(run, resolve);
      this.send(run, "finish", field);
    });
  }

  answer(run, outcome) {
    const resolve = this.waiting.get(run);
    if (!resolve) return;
    this.waiting.delete(run);
    resolve(outcome);
  }

  // A failed call fails its run: the answer to its finish carries the first error.
  failed(run, error) {
    if (!this.errors.has(run)) this.errors.set(run, error);
  }

  settle(run, outcome) {
    const error = this.errors.get(run);
    this.errors.delete(run);
    this.answer(run, error ? { error } : outcome);
  }

  // Starts loading (once): when a run's stream ends, in idle time after the first
  // measured request, or when too many bytes wait.
  load() {
    if (this.state !== "unloaded") return;
    if (this.module) return this.loadMain(this.module);
    this.state = "starting";
    let worker;
    try {
      // This exact form lets bundlers find and emit the worker and its wasm.
      worker = new Worker(new URL("./analysis/worker.js", import.meta.url), { type: "module" });
    } catch (_) {
      return this.fallBack();
    }
    worker.onmessage = ({ data }) => {
      if (data.ready) {
        this.state = "worker";
        this.worker = worker;
        for (const [run, op, args] of this.queue.splice(0)) this.post(run, op, args);
      } else if (data.analysed) {
        // The worker is done with a batch: its bytes are no longer held.
        this.heldBytes -= data.analysed;
      } else if (data.failed) {
        worker.terminate();
        this.fallBack();
      } else if (data.error) {
        if (data.op === "finish") this.settle(data.run, { error: data.error });
        else this.failed(data.run, data.error);
      } else if (data.op === "finish") {
        this.settle(data.run, { report: data.report });
      }
    };
    worker.onerror = (event) => {
      // A Worker the page's CSP refuses (`worker-src 'none'`) fails here, before ready.
      if (event && event.preventDefault) event.preventDefault();
      worker.terminate();
      if (this.state === "starting") return this.fallBack();
      for (const run of [...this.waiting.keys()]) this.answer(run, { error: "the analysis worker stopped: " + describe(event && event.message) });
    };
  }

  fallBack() {
    this.site = "main_thread";
    this.loadMain(async () => {
      const m = await import("./analysis/ttfx_analysis.js");
      await m.default();
      return new m.Analysis();
    });
  }

  loadMain(module) {
    this.state = "loading";
    Promise.resolve()
      .then(module)
      .then(
        (analysis) => {
          this.analysis = analysis;
          this.state = "main";
          this.drainSoon();
        },
        (e) => {
          this.state = "broken";
          this.broken = "the analysis did not load: " + describe(e);
          for (const run of [...this.waiting.keys()]) this.answer(run, { error: this.broken });
          this.queue = [];
        },
      );
  }

  drainSoon() {
    if (this.busy) return;
    this.busy = true;
    idle((deadline) => this.drain(deadline), 100);
  }

  // Main-thread mode: runs queued calls in idle time, a slice at a time.
  drain() {
    this.busy = false;
    const until = performance.now() + SLICE_MS;
    while (this.queue.length > 0 && performance.now() < until) {
      const [run, op, args] = this.queue.shift();
      if (op === "chunks") this.heldBytes -= args[1].byteLength;
      try {
        const result = this.analysis[op](run, ...this.withSite(op, args));
        if (op === "finish") this.settle(run, { report: result });
      } catch (e) {
        // Same as the worker (analysis/worker.js): a trap carries the panic's message and
        // leaves the Analysis object unusable, so later runs get a fresh one.
        const Analysis = this.analysis.constructor;
        const trap = typeof WebAssembly !== "undefined" && e instanceof WebAssembly.RuntimeError;
        const panic = trap && typeof Analysis.lastPanic === "function" ? Analysis.lastPanic() : null;
        const error = describe(e) + (panic ? " (" + panic + ")" : "");
        if (op === "finish") this.settle(run, { error });
        else this.failed(run, error);
        if (trap) this.analysis = new Analysis();
      }
    }
    if (this.queue.length > 0) this.drainSoon();
  }
}

let pageHost = null;

// ---------------------------------------------------------------------------------------
// The body tap.

// The body's chunks, copied but not yet analysed, go out in batches: once FLUSH_BYTES
// wait and when the stream ends. One call per chunk, every few ms, runs cold (about 85 µs
// per chunk in `cargo xtask bench`); a batch decodes in a warm loop. The arrival times
// are taken when each chunk is handed over, so batching changes no milestone.
const FLUSH_BYTES = 16 * 1024;

function chunkBatch(run) {
  // Both buffers are kept from batch to batch: a batch is copied out when it goes (into
  // the worker's message, or the main-thread queue), so a stream allocates nothing per
  // chunk and nothing per batch, and gives the page's garbage collector no work.
  let bytes = new Uint8Array(FLUSH_BYTES);
  let used = 0;
  // [arrival ms since request_start, length] per chunk, in order.
  let meta = new Float64Array(256);
  let n = 0;
  const flush = () => {
    if (n === 0) return;
    run.chunks(meta.subarray(0, n), bytes.subarray(0, used));
    used = 0;
    n = 0;
    // One huge chunk grew the buffer: do not copy its size out with every later batch.
    if (bytes.length > 4 * FLUSH_BYTES) bytes = new Uint8Array(FLUSH_BYTES);
  };
  const add = (at, value) => {
    if (!(value instanceof Uint8Array)) {
      flush();
      run.oddChunk(at, "not_bytes");
      return false;
    }
    if (value.byteLength === 0 && value.buffer.byteLength === 0) {
      // The app transferred the chunk's buffer before this task ran.
      flush();
      run.oddChunk(at, "detached");
      return false;
    }
    // A full batch whose flush task has not run yet (chunks copied back to back as they
    // are read, in a burst) goes now: a batch holds at most one chunk past FLUSH_BYTES,
    // where WebKit's 11 MB chunks piled up past the 16 MiB the probe may hold.
    if (used >= FLUSH_BYTES) flush();
    if (used + value.byteLength > bytes.length) {
      const grown = new Uint8Array(Math.max(2 * bytes.length, used + value.byteLength));
      grown.set(bytes.subarray(0, used));
      bytes = grown;
    }
    if (n + 2 > meta.length) {
      const grown = new Float64Array(2 * meta.length);
      grown.set(meta);
      meta = grown;
    }
    bytes.set(value, used);
    used += value.byteLength;
    meta[n++] = at - run.start;
    meta[n++] = value.byteLength;
    return used >= FLUSH_BYTES;
  };
  return { add, flush };
}

// A macrotask queue: the probe's chunk work runs after the app's own microtask chain for
// that chunk (its read() continuation, TextDecoderStream pipes, framework updates).
function laterQueue(run) {
  const queue = [];
  const batch = chunkBatch(run);
  let scheduled = false;
  let closing = false;
  const channel = new MessageChannel();
  channel.port1.onmessage = () => timed("task", () => {
    scheduled = false;
    for (const [name, args] of queue.splice(0)) {
      if (name === "flush") {
        const started = costStart();
        run.guard(batch.flush);
        costEnd("flush", started);
      } else {
        // Every chunk before the end, error or cancel is sent first.
        run.guard(batch.flush);
        run.guard(() => run[name](...args));
      }
    }
    // Free the ports once the last queued call ran (open ports keep pages out of the
    // back/forward cache).
    if (closing && queue.length === 0) {
      channel.port1.close();
      channel.port2.close();
    }
  });
  const push = (name, ...args) => {
    queue.push([name, args]);
    if (!scheduled) {
      scheduled = true;
      channel.port2.postMessage(0);
    }
  };
  return {
    push,
    // Copies a chunk into the batch now, before it moves into the app's stream (and the
    // app can move its buffer away); the batch goes out in the later task like everything
    // else. Guarded: this runs inside the app's read, where a throw would break its body.
    copy(at, value) {
      const started = costStart();
      // run.guard, inlined: no closure per chunk on this path.
      let full = false;
      if (!run.settled) {
        try {
          full = batch.add(at, value);
        } catch (e) {
          run.fault(describe(e));
        }
      }
      if (full) push("flush");
      costEnd("chunk", started);
    },
    close() {
      closing = true;
      push("flush");
    },
  };
}

// A fetch body is a byte stream: an app may read it with `getReader({ mode: "byob" })`.
const BYTE_STREAMS = (() => {
  try {
    new ReadableStream({ type: "bytes" });
    return true;
  } catch (_) {
    return false;
  }
})();

// Up to this many bytes are read ahead of the app, so arrival times do not depend on how
// fast the app reads.
const READ_AHEAD_BYTES = 16 * 1024 * 1024;

// A stream that yields exactly the bytes of `body`, timestamping each chunk when the
// network hands it over. A body the app stops reading for `abandonAfterMs` while bytes
// wait for it is `abandoned`: the run reports, and the tap reads only what the app asks
// for from then on (the bytes already queued stay the app's).
function tapBody(body, run, abandonAfterMs) {
  const reader = body.getReader();
  const later = laterQueue(run);
  let enqueued = 0;
  let abandoned = false;
  let over = false;
  let controllerRef = null;
  let lastConsumed = -1;
  let lastProgress = performance.now();
  const watchdog = setInterval(() => {
    if (over || !controllerRef) return clearInterval(watchdog);
    const queued = READ_AHEAD_BYTES - (controllerRef.desiredSize || 0);
    const consumed = enqueued - queued;
    const t = performance.now();
    if (consumed !== lastConsumed || queued <= 0) {
      lastConsumed = consumed;
      lastProgress = t;
    } else if (t - lastProgress >= abandonAfterMs) {
      abandoned = true;
      clearInterval(watchdog);
      later.push("abandon", t, queued);
      later.close();
    }
  }, Math.min(1000, Math.max(10, abandonAfterMs / 4)));
  const source = {
    start(controller) {
      controllerRef = controller;
    },
    async pull(controller) {
      // Once abandoned, read only when the app waits for bytes.
      if (abandoned && (controller.desiredSize || 0) < READ_AHEAD_BYTES) return;
      for (;;) {
        let result;
        try {
          result = await reader.read();
        } catch (error) {
          over = true;
          if (!abandoned) {
            later.push("bodyError", performance.now(), String((error && error.name) || "Error") + ": " + describe(error));
            later.close();
          }
          controller.error(error);
          return;
        }
        const at = performance.now();
        if (result.done) {
          over = true;
          controller.close();
          // A BYOB read waiting at the end is answered with an empty view.
          if (controller.byobRequest) controller.byobRequest.respond(0);
          if (!abandoned) {
            later.push("end", at);
            later.close();
          }
          return;
        }
        const value = result.value;
        if (!BYTE_STREAMS) {
          // Copied now too: the app may transfer the chunk's buffer away (to a worker)
          // before a later task could read it, as it can in WebKit, which has no byte
          // streams.
          if (!abandoned) later.copy(at, value);
          enqueued += value.byteLength || 0;
          controller.enqueue(value);
          return;
        }
        // A byte stream cannot carry an empty chunk; read on, so the app's read is answered.
        if (value.byteLength === 0) continue;
        // Enqueueing moves the chunk's buffer into the stream, so the probe copies the
        // bytes into its batch just before: one memcpy, no allocation per chunk, and the
        // app can transfer its buffer away freely.
        if (!abandoned) later.copy(at, value);
        enqueued += value.byteLength;
        controller.enqueue(value);
        return;
      }
    },
    cancel(reason) {
      over = true;
      if (!abandoned) {
        later.push("cancel", performance.now());
        later.close();
      }
      return reader.cancel(reason);
    },
  };
  if (BYTE_STREAMS) {
    source.type = "bytes";
    return new ReadableStream(source, { highWaterMark: READ_AHEAD_BYTES });
  }
  return new ReadableStream(source, new ByteLengthQueuingStrategy({ highWaterMark: READ_AHEAD_BYTES }));
}

// Statuses whose Response cannot carry a body, and opaque responses (status 0), are
// handed to the app untouched: re-wrapping them would throw.
function canWrap(response) {
  return response.body !== null && response.status >= 200 && response.status <= 599 && ![101, 103, 204, 205, 304].includes(response.status);
}

// A Response equal to `original` but for its body. `url`, `redirected` and `type` are
// read-only on a constructed Response, so they are copied as own properties.
function wrapResponse(original, body) {
  const wrapped = new Response(body, { status: original.status, statusText: original.statusText, headers: original.headers });
  for (const key of ["url", "redirected", "type"]) Object.defineProperty(wrapped, key, { value: original[key], enumerable: true });
  return wrapped;
}

function inputUrl(input) {
  try {
    const raw = typeof input === "string" || input instanceof URL ? String(input) : input.url;
    return new URL(raw, globalThis.location && location.href).href;
  } catch (_) {
    return "";
  }
}

function inputMethod(input, init) {
  const method = (init && init.method) || (input && typeof input === "object" && input.method);
  return typeof method === "string" ? method.toUpperCase() : "GET";
}

const inputSignal = (input, init) => (init && init.signal) || (input && typeof input === "object" && input.signal) || null;

// ---------------------------------------------------------------------------------------
// Render timing: `first_dom` (MutationObserver) and `first_paint` (Element Timing, else
// the frame after `first_dom`).

// Element Timing entries kept per watch: the first paint at or after `first_dom` is the
// one wanted, and a long reply must not grow this list.
const MAX_PAINTS = 16;
const ELEMENT_TIMING = typeof PerformanceObserver !== "undefined" && (PerformanceObserver.supportedEntryTypes || []).includes("element");

const isElement = (v) => typeof Element !== "undefined" && v instanceof Element;

function markPainted(element) {
  if (element && element.setAttribute && !element.hasAttribute("elementtiming")) element.setAttribute("elementtiming", "ttfx-reply");
}

class RenderWatch {
  constructor(element) {
    // Chromium reports a text paint once per element, and only for elements marked before
    // they paint: mark the element now and the parents of the first text at first_dom.
    markPainted(element);
    this.notBefore = null;
    this.firstDom = null;
    this.paints = [];
    this.frame = null;
    let baseline = element.textContent;
    this.observer = new MutationObserver((records, observer) => {
      if (this.firstDom !== null) return;
      const at = performance.now();
      const text = element.textContent;
      if (this.notBefore === null || at < this.notBefore) {
        baseline = text;
        return;
      }
      if (!text.trim() || text === baseline) return;
      this.firstDom = at;
      for (const record of records) {
        for (const node of [record.target, ...record.addedNodes]) markPainted(node.nodeType === 3 ? node.parentElement : node);
      }
      // requestAnimationFrame runs just before the frame is rendered, and a message posted
      // from it runs just after: the paint estimate where there is no Element Timing.
      // Hidden pages get no frames, so the estimate never comes and the report says so.
      if (typeof requestAnimationFrame === "function") {
        requestAnimationFrame(() => {
          const channel = new MessageChannel();
          channel.port1.onmessage = () => {
            channel.port1.close();
            this.frame = this.frame || performance.now();
          };
          channel.port2.postMessage(0);
        });
      }
      // The rest of the reply streams in with no probe work per insertion.
      observer.disconnect();
    });
    this.observer.observe(element, { childList: true, characterData: true, subtree: true });
    if (ELEMENT_TIMING) {
      this.paintObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          if (entry.element && element.contains(entry.element) && entry.renderTime > 0 && this.paints.length < MAX_PAINTS) this.paints.push(entry.renderTime);
        }
      });
      this.paintObserver.observe({ type: "element", buffered: true });
    }
  }

  // [time, method] of the first paint at or after first_dom.
  firstPaint() {
    if (this.firstDom === null) return null;
    const after = this.paints.filter((t) => t >= this.firstDom);
    if (after.length > 0) return [Math.min(...after), "element_timing"];
    return this.frame === null ? null : [this.frame, "raf_estimate"];
  }

  settled() {
    if (this.firstDom === null) return false;
    return ELEMENT_TIMING ? this.paints.some((t) => t >= this.firstDom) : this.frame !== null;
  }

  stop() {
    this.observer.disconnect();
    if (this.paintObserver) this.paintObserver.disconnect();
  }
}

// ---------------------------------------------------------------------------------------
// The environment, once per probe.

function engineInfo() {
  const ua = (globalThis.navigator && navigator.userAgent) || "";
  let m;
  if ((m = ua.match(/Firefox\/([\d.]+)/))) return ["gecko", m[1], ua];
  if ((m = ua.match(/(?:Chrome|Chromium|HeadlessChrome)\/([\d.]+)/))) return ["chromium", m[1], ua];
  if ((m = ua.match(/AppleWebKit\/([\d.]+)/))) return ["webkit", m[1], ua];
  return [null, null, ua];
}

// The smallest step of performance.now(), by watching it change, once per page. Every
// gap between two distinct readings is a whole number of steps, so the smallest is the
// estimate; the question is when to stop spinning. A gap counts once another agrees with
// it within 10 % (a smaller one starts the count again). It stops after 8 changes (a
// fine clock: well under 1 ms), once two gaps agree after 2 ms (a 1 ms clock: about
// 2 ms), and when 40 ms have passed with no gap under 5 ms (a coarse clock,
// resistFingerprinting's 16.7–100 ms: one or two of its steps), or 100 ms in all.
// A thread descheduled mid-spin (a loaded machine, a garbage collection) sees the clock
// jump by the pause, which is not the step: CI read 8.06 ms for Firefox's 20 µs clock
// when the spin stopped at 5 ms after that one gap, then 5 ms for WebKit's 1 ms clock
// when two pauses agreed within 50 %. Pauses rarely agree within 10 %.
function timerResolution() {
  let best = Infinity;
  let agreeing = 0;
  let last = performance.now();
  const start = last;
  // At most a million readings (tens of ms here, by engine; a slow coarse clock may then
  // get no step): a clock that never moved would otherwise hang the page. None is
  // known; the page is not ours to risk.
  for (let changes = 0, readings = 0; changes < 8 && readings < 1e6; readings += 1) {
    const t = performance.now();
    if (t === last) continue;
    const gap = t - last;
    if (gap < best / 1.1) {
      best = gap;
      agreeing = 1;
    } else if (gap <= best * 1.1) {
      best = Math.min(best, gap);
      agreeing += 1;
    }
    last = t;
    changes += 1;
    if (agreeing >= 2 && t - start >= 2) break;
    if (t - start > (best >= 5 ? 40 : 100)) break;
  }
  return Number.isFinite(best) ? best : null;
}

// Measured once per page (it cannot change: isolation is fixed when the page loads); a
// failed measurement is tried again by the next probe.
let pageClockStep = null;
const clockStep = () => (pageClockStep = pageClockStep || timerResolution());

// ---------------------------------------------------------------------------------------
// Options.

function readOptions(o) {
  if (o === undefined || o === null) o = {};
  if (typeof o !== "object") throw new Error("ttfx: options must be an object");
  const string = (key) => {
    const v = o[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== "string") throw new Error(`ttfx: ${key} must be a string`);
    return v;
  };
  const number = (key, fallback, max) => {
    const v = o[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== "number" || !Number.isFinite(v)) throw new Error(`ttfx: ${key} must be a finite number`);
    if (v < 0 || v > max) throw new Error(`ttfx: ${key} must be between 0 and ${max}, got ${v}`);
    return v;
  };
  const fn = (key) => {
    const v = o[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== "function") throw new Error(`ttfx: ${key} must be a function`);
    return v;
  };
  const dialect = string("dialect") || "auto";
  if (!DIALECTS.includes(dialect)) throw new Error(`ttfx: dialect: unknown dialect \`${dialect}\` (known: ${DIALECTS.join(", ")})`);
  const fault = string("__faultInjection");
  if (fault !== null && fault !== "decoder-panic") throw new Error(`ttfx: __faultInjection: unknown fault \`${fault}\` (known: decoder-panic)`);
  return {
    dialect,
    label: string("label"),
    collectorUrl: string("collectorUrl"),
    sampleRate: number("sampleRate", 1, 1),
    pagePath: typeof o.pagePath === "function" ? o.pagePath : string("pagePath"),
    paintTimeoutMs: number("paintTimeoutMs", 1000, 60000),
    abandonAfterMs: number("abandonAfterMs", 30000, 3600000),
    onReport: fn("onReport"),
    analysis: fn("analysis"),
    fault,
  };
}

// Sends a field report to the collector: `navigator.sendBeacon`, which outlives the page,
// else (no beacon API, or the browser's beacon queue refused it) a keepalive fetch with
// the page's own fetch (never an instrumented one, which could measure the beacon). Both
// have a 64 KiB budget; a field report is at most 16 KiB. Nothing here throws into the
// page, and a failed send is not retried.
function beacon(url, body, pageFetch) {
  try {
    if (navigator.sendBeacon(url, new Blob([body], { type: "application/json" }))) return;
  } catch (_) {
    // No beacon API in this scope (a worker), or a URL it refuses: try fetch.
  }
  try {
    pageFetch.call(globalThis, url, { method: "POST", keepalive: true, body, headers: { "content-type": "application/json" } }).catch(() => {});
  } catch (_) {
    // Nowhere to send it: the report still reached the page.
  }
}

// ---------------------------------------------------------------------------------------
// Probe and runs.

// Run numbers are unique in the page: every probe's runs share the page's analysis.
let nextRun = 1;

// `window.__ttfx` keeps the last REPORT_RING reports, so a page that measures every
// request for hours holds a bounded number (a QA driver reads them as they come; the
// report of one run is also `run.finished()`'s value).
export const REPORT_RING = 100;

// How long a run waits for included voice results after its stream ends
// (ttfx_core::voice_result::TIMEOUT_MS).
const VOICE_TIMEOUT_MS = 15000;

export class Probe {
  constructor(options) {
    this.options = readOptions(options);
    if (typeof globalThis.fetch !== "function") throw new Error("ttfx: this global scope has no fetch()");
    // The page's fetch when the probe was made: runs call this, so a probe that also
    // instruments `window.fetch` never measures itself.
    this.fetch = globalThis.fetch;
    this.host = this.options.analysis ? new AnalysisHost(this.options.analysis) : (pageHost = pageHost || new AnalysisHost(null));
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
    const o = instrumentOptions(options);
    const original = globalThis.fetch;
    let active = true;
    const probe = this;
    const wrapper = function (input, init) {
      if (!(active && matches(o, inputUrl(input)))) return original.apply(this, arguments);
      let run;
      try {
        run = probe.start();
        watchReply(o, run);
      } catch (_) {
        return original.apply(this, arguments);
      }
      // run.fetch sets request_start, url and transport before its first await.
      const pending = run.fetch(input, init);
      started(o, run);
      return pending;
    };
    globalThis.fetch = wrapper;
    return new FetchHandle(() => {
      active = false;
      if (globalThis.fetch !== wrapper) return false;
      globalThis.fetch = original;
      return true;
    });
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

  // Measures the EventSources the page makes for matching URLs: `EventSource` becomes a
  // subclass, so instances, `instanceof`, `onmessage` and the constants are the browser's.
  instrumentEventSource(options) {
    const o = instrumentOptions(options);
    const Original = globalThis.EventSource;
    if (typeof Original !== "function") throw new Error("ttfx: this global scope has no EventSource");
    const probe = this;
    const taps = new WeakMap();
    let active = true;
    const Wrapped = class EventSource extends Original {
      constructor(url) {
        // The request starts in the constructor: take the clock before it.
        const at = performance.now();
        super(...arguments);
        try {
          if (active && matches(o, this.url)) taps.set(this, tapEventSource(this, probe.launch(o, "eventsource", at, "GET", this.url)));
        } catch (_) {
          // Not measured; the app's EventSource is untouched.
        }
      }
      // A named event type the app listens to is listened to by the probe too (first).
      addEventListener(type) {
        const tap = taps.get(this);
        if (tap) tap.listen(String(type));
        return super.addEventListener(...arguments);
      }
      close() {
        const tap = taps.get(this);
        if (tap) tap.stop("end", performance.now());
        return super.close(...arguments);
      }
    };
    return swap("EventSource", Original, Wrapped, ["CONNECTING", "OPEN", "CLOSED"], () => (active = false));
  }

  // Measures XMLHttpRequests to matching URLs: `open` and `send` are patched on the
  // prototype, so instances stay native.
  instrumentXhr(options) {
    const o = instrumentOptions(options);
    const X = globalThis.XMLHttpRequest;
    if (typeof X !== "function") throw new Error("ttfx: this global scope has no XMLHttpRequest");
    const proto = X.prototype;
    const { open, send } = proto;
    const probe = this;
    const taps = new WeakMap();
    let active = true;
    const patchedOpen = function (method, url, async) {
      const result = open.apply(this, arguments);
      try {
        let tap = taps.get(this);
        // open() on a request in flight ends it, with no event.
        if (tap) tap.stop("cancel", performance.now());
        const href = new URL(String(url), globalThis.location && location.href).href;
        // A synchronous request blocks the page and delivers its body at once: not a stream.
        const measured = active && !(arguments.length > 2 && !async) && matches(o, href);
        if (measured && !tap) taps.set(this, (tap = tapXhr(this, probe, o)));
        if (tap) tap.arm(measured ? [String(method).toUpperCase(), href] : null);
      } catch (_) {
        // Not measured.
      }
      return result;
    };
    const patchedSend = function () {
      const tap = active && !disabled ? taps.get(this) : null;
      const at = performance.now();
      const result = send.apply(this, arguments);
      try {
        if (tap) tap.begin(at);
      } catch (_) {
        // Not measured.
      }
      return result;
    };
    proto.open = patchedOpen;
    proto.send = patchedSend;
    return new FetchHandle(() => {
      active = false;
      const mine = proto.open === patchedOpen && proto.send === patchedSend;
      if (mine) Object.assign(proto, { open, send });
      return mine;
    });
  }

  // Measures WebSockets to matching URLs: a run from an app `send()` on an idle socket to
  // a `response.done` message, `quietMs` without a message, or the socket's close.
  instrumentWebSocket(options) {
    const o = instrumentOptions(options);
    const Original = globalThis.WebSocket;
    if (typeof Original !== "function") throw new Error("ttfx: this global scope has no WebSocket");
    const probe = this;
    const taps = new WeakMap();
    let active = true;
    const Wrapped = class WebSocket extends Original {
      constructor(url) {
        super(...arguments);
        try {
          // Every socket is tapped (a message outside a run returns at once), and `match`
          // is asked when a run would start, at a send: a socket opened before a page
          // measures (inject mode arms a turn after the page's load) is still measured.
          if (active) taps.set(this, tapSocket(this, probe, o));
        } catch (_) {
          // Not measured.
        }
      }
      send() {
        const at = performance.now();
        const result = super.send(...arguments);
        const tap = taps.get(this);
        try {
          if (tap && active && !disabled && this.readyState === 1) tap.sent(at);
        } catch (_) {
          // Not measured.
        }
        return result;
      }
    };
    return swap("WebSocket", Original, Wrapped, ["CONNECTING", "OPEN", "CLOSING", "CLOSED"], () => (active = false));
  }
}

// The options every instrument function takes: `match` (substring, RegExp or predicate
// on the absolute URL), `watch` (an Element or a function returning one), `onStart`
// (called with each measured run as it starts), `quietMs` (WebSocket runs).
function instrumentOptions(options) {
  if (disabled) throw new Error("ttfx: the probe is switched off: " + disabled);
  const match = options && options.match;
  const test = typeof match === "string" ? (url) => url.includes(match) : match instanceof RegExp ? (url) => match.test(url) : typeof match === "function" ? (url) => match(url) === true : null;
  if (!test) throw new Error("ttfx: match must be a string, a RegExp or a function");
  const { watch, onStart, quietMs = 2000 } = options;
  if (watch !== undefined && watch !== null && typeof watch !== "function" && !isElement(watch)) throw new Error("ttfx: watch must be an Element or a function");
  if (onStart !== undefined && onStart !== null && typeof onStart !== "function") throw new Error("ttfx: onStart must be a function");
  if (typeof quietMs !== "number" || !(quietMs > 0 && quietMs <= 600000)) throw new Error(`ttfx: quietMs must be a number of ms above 0 and at most 600000, got ${quietMs}`);
  return { test, watch, onStart, quietMs };
}

// The reply element an instrument function's `watch` names, watched by `run`.
function watchReply(o, run) {
  const element = typeof o.watch === "function" ? o.watch() : o.watch;
  if (isElement(element)) run.watch(element);
}

// Whether a URL is measured; a match function that throws measures nothing.
function matches(o, url) {
  try {
    return !disabled && o.test(url);
  } catch (_) {
    return false;
  }
}

// The app's onStart, told of a run; what it throws is ignored.
function started(o, run) {
  try {
    if (o.onStart) o.onStart(run);
  } catch (_) {
    // The app's callback: nothing of it reaches the run or the app.
  }
}

// Puts `Wrapped` at globalThis[name] with the original's constants and name as its own, and
// returns the handle that puts the original back where nobody replaced it since.
function swap(name, Original, Wrapped, constants, stop) {
  // Its own name too: a minifier renames the class.
  Object.defineProperty(Wrapped, "name", { value: name });
  for (const key of constants) Object.defineProperty(Wrapped, key, { value: Original[key], enumerable: true });
  globalThis[name] = Wrapped;
  return new FetchHandle(() => {
    stop();
    if (globalThis[name] !== Wrapped) return false;
    globalThis[name] = Original;
    return true;
  });
}

const encoder = typeof TextEncoder === "function" ? new TextEncoder() : null;
const addListener = (target, type, fn) => EventTarget.prototype.addEventListener.call(target, type, fn);

// One message as one SSE event: every decoder then sees one event per message, with
// the data exactly as dispatched (its lines as `data:` lines).
const sseEvent = (data, head = "") => head + "data: " + String(data).split(/\r\n|\r|\n/).join("\ndata: ") + "\n\n";

// The body of a transport that hands over messages, not bytes: each message is copied
// into the run's batch as UTF-8 with its arrival time, as a fetch chunk is.
function feed(run) {
  const later = laterQueue(run);
  // UTF-8 of one message, encoded into a buffer kept from message to message (the batch
  // copies it out), so a stream of messages allocates nothing per message, as a fetch
  // body does not. UTF-8 takes at most 3 bytes per UTF-16 unit.
  let scratch = new Uint8Array(1024);
  const tap = {
    over: false,
    add(at, text) {
      if (tap.over) return;
      if (scratch.length < 3 * text.length) scratch = new Uint8Array(3 * text.length);
      later.copy(at, scratch.subarray(0, encoder.encodeInto(text, scratch).written));
    },
    // Ends the run with `name` (end, cancel, fail) once; every copied message goes first.
    stop(name, at, ...args) {
      if (tap.over) return;
      tap.over = true;
      later.push(name, at, ...args);
      later.close();
    },
    push: later.push,
  };
  return tap;
}

// EventSource: `headers` at `open`, each event the probe sees re-encoded as SSE, the end
// at the app's close() or the error that ends the connection. One run per EventSource:
// a reconnection is not measured.
function tapEventSource(source, run) {
  const tap = feed(run);
  const types = new Set(["open", "error"]);
  let lastId = "";
  let open = false;
  const onEvent = (event) => {
    if (tap.over) return;
    const at = performance.now();
    run.guard(() => {
      let head = event.type === "message" ? "" : `event: ${event.type}\n`;
      if (event.lastEventId !== lastId) head += `id: ${(lastId = event.lastEventId)}\n`;
      tap.add(at, sseEvent(event.data, head));
    });
  };
  tap.listen = (type) => {
    if (types.has(type) || tap.over) return;
    types.add(type);
    addListener(source, type, onEvent);
  };
  tap.listen("message");
  addListener(source, "open", () => {
    if (open || tap.over) return;
    open = true;
    const at = performance.now();
    run.guard(() => run.send("headers", at - run.start, 200, "text/event-stream", null));
  });
  addListener(source, "error", () => {
    // CONNECTING: the stream ended and the browser reconnects; CLOSED: it gave up.
    if (open) tap.stop("end", performance.now());
    else tap.stop("fail", performance.now(), "EventSource failed: no connection, or not a 200 text/event-stream response");
  });
  return tap;
}

// XMLHttpRequest: `headers` at HEADERS_RECEIVED, the new part of `responseText` at each
// readystatechange and progress event, the end at load, error, timeout or abort.
function tapXhr(xhr, probe, o) {
  let tap = null;
  let next = null;
  const textual = () => xhr.responseType === "" || xhr.responseType === "text";
  const onEvent = (event) => {
    const t = tap;
    if (!t || t.over) return;
    const at = performance.now();
    const run = t.run;
    run.guard(() => {
      const type = event.type;
      if (!t.headers && xhr.readyState >= 2 && xhr.status !== 0) {
        t.headers = true;
        run.send("headers", at - run.start, xhr.status, xhr.getResponseHeader("content-type"), xhr.getResponseHeader("server-timing"));
        if (!textual()) run.send("anomaly", at - run.start, "not_streamed", `responseType "${xhr.responseType}": the probe does not read the body, so it has no chunks`);
      }
      if (xhr.readyState >= 3 && textual()) {
        const text = xhr.responseText;
        if (text.length > t.seen) {
          t.add(at, text.slice(t.seen));
          t.seen = text.length;
        }
      }
      if (type === "load") t.stop("end", at);
      else if (type === "abort") t.stop("cancel", at);
      else if (type === "error") t.stop("fail", at, "XMLHttpRequest error (network or CORS)");
      else if (type === "timeout") t.stop("fail", at, `XMLHttpRequest timed out (timeout ${xhr.timeout} ms)`);
    });
  };
  for (const type of ["readystatechange", "progress", "load", "abort", "error", "timeout"]) addListener(xhr, type, onEvent);
  return {
    arm(request) {
      next = request;
    },
    stop(name, at) {
      if (tap) tap.stop(name, at);
      tap = null;
    },
    begin(at) {
      if (!next) return;
      const [method, url] = next;
      next = null;
      const run = probe.launch(o, "xhr", at, method, url);
      tap = Object.assign(feed(run), { run, seen: 0, headers: false });
    },
  };
}

// WebSocket: the probe's message listener is the socket's first. A run starts at an app
// send() while none is in progress; each text message is one SSE event; a binary one an
// anomaly with its size.
function tapSocket(socket, probe, o) {
  let tap = null;
  let timer = null;
  let last = 0;
  const stop = (name, at, ...args) => {
    clearTimeout(timer);
    if (tap) tap.stop(name, at, ...args);
    tap = null;
  };
  // Ends a run quiet for quietMs, at its last message; one timer, re-armed only when it fires.
  const quiet = () => {
    const idle = performance.now() - last;
    if (!tap) return;
    if (idle < o.quietMs) timer = setTimeout(quiet, o.quietMs - idle);
    else {
      tap.push("note", last, "quiet_end", `no message for ${o.quietMs} ms and no response.done: the run ends at its last message`);
      stop("end", last);
    }
  };
  addListener(socket, "message", (event) => {
    const t = tap;
    if (!t) return;
    const at = performance.now();
    last = at;
    t.run.guard(() => {
      const data = event.data;
      if (typeof data !== "string") {
        t.push("note", at, "binary_message", `a binary message of ${data.size === undefined ? data.byteLength : data.size} bytes, not decoded`);
        return;
      }
      t.add(at, sseEvent(data));
      // OpenAI Realtime's end of a reply: a string test first, no JSON.parse per message.
      if (data.includes('"response.done"') && /"type"\s*:\s*"response\.done"/.test(data)) stop("end", at);
    });
  });
  addListener(socket, "close", (event) => {
    const at = performance.now();
    if (event.wasClean) stop("end", at);
    else stop("fail", at, `WebSocket closed uncleanly (code ${event.code})`);
  });
  return {
    sent(at) {
      if (tap || !matches(o, socket.url)) return;
      const run = probe.launch(o, "websocket", at, null, socket.url);
      tap = Object.assign(feed(run), { run });
      last = at;
      timer = setTimeout(quiet, o.quietMs);
    },
  };
}

// Returned by `instrumentFetch`; `restore()` stops measuring and puts the original fetch
// back when nobody wrapped it since (else the wrapper becomes a pass-through).
export class FetchHandle {
  constructor(restore) {
    this.restore = restore;
  }
}

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
      if (paint) this.send("observed", "first_paint", paint[0] - start, paint[1]);
    }
    for (const [at, hidden] of this.hidden) this.send("visibility", Math.max(0, at - start), hidden);
    if (entry) {
      const rel = (v) => (v > 0 ? v - start : undefined);
      this.send("resourceTiming", rel(entry.requestStart), rel(entry.responseStart), rel(entry.responseEnd), entry.encodedBodySize);
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
  // it (5 × 20 ms). Its absence (aborted streams) is not a failure.
  async resourceTiming() {
    // A WebSocket's messages have no entry.
    if (!globalThis.performance || typeof performance.getEntriesByName !== "function" || !this.url || this.transport === "websocket") return null;
    for (let i = 0; i < 5; i++) {
      const entries = timed("task", () => performance.getEntriesByName(this.url, "resource").filter((e) => e.startTime >= this.start - 1));
      if (entries.length > 0) return entries[entries.length - 1];
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

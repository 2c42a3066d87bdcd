// The link to the analysis (ttfx-analysis as wasm): a module Worker beside the package's
// root, else the same module on the main thread in idle time.
//
// The worker's and the fallback module's paths are relative to the bundled front
// (js/probe.js, the package's root probe.js), not to this file: the bundle keeps them
// as written.

import { describe } from "./fault.js";
import { idle } from "./idle.js";

// The analysis host: where the observations of every run go, in order, as
// [run, op, args] (ttfx-analysis's `Analysis` methods). Before the analysis is loaded
// they wait in `queue`.

// Load the analysis once this many bytes wait for it, idle or not.
const LOAD_NOW_BYTES = 4 * 1024 * 1024;
// The most body bytes the probe holds for the analysis: waiting for it to load, or sent
// to the worker and not yet analysed (a body that arrives faster than it decodes). Past
// this, batches are not analysed; the run's report counts them (`analysis_skipped`).
export const MAX_HELD_BYTES = 16 * 1024 * 1024;
// The main-thread fallback works in slices of about this many ms (analysis/main_thread.js
// uses the same).
const SLICE_MS = 4;

export class AnalysisHost {
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
    // The analysis and the main thread's scheduler (analysis/main_thread.js), lazily:
    // the up-front probe carries neither (#35: the scheduler holds each task to 4 ms).
    this.loadMain(() => import("./analysis/main_thread.js").then((m) => m.load(this)));
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

  // Main-thread mode: runs queued calls in idle time, a slice at a time. The fallback's
  // own loader (analysis/main_thread.js) replaces this with its scheduler, which holds
  // each call to the slice; this one serves an `analysis` module a page passes itself.
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

// The page's host, shared by every probe without an `analysis` option of its own (run
// numbers are unique in the page for this: run.js).
let shared = null;
export const pageHost = () => (shared = shared || new AnalysisHost(null));

// The probe's JS edge: the few places where the probe sits in the path of the app's data.
//
// These run as plain JS on purpose. Every call into the wasm side is wrapped so that a
// probe fault (a wasm trap, a closure already dropped, a throwing callback) can never
// error, stall or alter the app's stream: the app's chunk is always enqueued first, and
// the probe's work on it runs later, in its own task.

// `cargo xtask bench` sets globalThis.__ttfxCostSamples to an array to collect the
// probe's main-thread time per piece of work, as [name, ms].
export function costSample(name, ms) {
  const samples = globalThis.__ttfxCostSamples;
  if (Array.isArray(samples)) samples.push([name, ms]);
}

// Calls hook(...args), reporting a throw to hooks.onFault once and then going quiet.
function guarded(hooks, name, ...args) {
  if (hooks.faulted) return;
  const measured = Array.isArray(globalThis.__ttfxCostSamples);
  const started = measured ? performance.now() : 0;
  try {
    hooks[name](...args);
    if (measured) costSample(name, performance.now() - started);
  } catch (e) {
    hooks.faulted = true;
    try {
      hooks.onFault(String((e && e.message) || e));
    } catch (_) {
      // The fault path itself failed: nothing more the probe can do without risk.
    }
  }
}

// The body's chunks, copied but not yet decoded. They go to the decoder in one call
// (`onChunks`) at the end of the stream, or once FLUSH_BYTES are waiting: wasm called
// once per chunk, every few ms, runs cold (about 85 µs per chunk in `cargo xtask bench`),
// while a batch decodes in a warm loop. The arrival times are taken when each chunk is
// handed over, so batching changes no milestone.
const FLUSH_BYTES = 16 * 1024;

function chunkBatch(hooks) {
  let bytes = new Uint8Array(0);
  let used = 0;
  // [arrival time, length] per chunk, in order.
  let meta = [];
  const flush = () => {
    if (meta.length === 0) return;
    // onChunks copies the bytes into wasm memory before it returns, so the buffer is
    // free for the next batch.
    guarded(hooks, "onChunks", new Float64Array(meta), bytes.subarray(0, used));
    used = 0;
    meta = [];
  };
  const add = (at, value) => {
    if (!(value instanceof Uint8Array)) {
      flush();
      guarded(hooks, "onOddChunk", at, "not_bytes");
      return;
    }
    if (value.byteLength === 0 && value.buffer.byteLength === 0) {
      // The app transferred the chunk's buffer before this task ran.
      flush();
      guarded(hooks, "onOddChunk", at, "detached");
      return;
    }
    if (used + value.byteLength > bytes.length) {
      const grown = new Uint8Array(Math.max(FLUSH_BYTES, 2 * bytes.length, used + value.byteLength));
      grown.set(bytes.subarray(0, used));
      bytes = grown;
    }
    bytes.set(value, used);
    used += value.byteLength;
    meta.push(at, value.byteLength);
    return used >= FLUSH_BYTES;
  };
  // add() copies only; whoever calls it flushes a full batch when decoding may run.
  return { add, flush };
}

// A macrotask queue: the probe's chunk work runs after the app's own microtask chain for
// that chunk (its read() continuation, TextDecoderStream pipes, framework updates).
function laterQueue(hooks) {
  const queue = [];
  const batch = chunkBatch(hooks);
  let scheduled = false;
  let closing = false;
  const channel = new MessageChannel();
  const schedule = () => {
    if (!scheduled) {
      scheduled = true;
      channel.port2.postMessage(0);
    }
  };
  channel.port1.onmessage = () => {
    scheduled = false;
    const measured = Array.isArray(globalThis.__ttfxCostSamples);
    for (const [name, args] of queue.splice(0)) {
      if (name === "chunk") {
        const started = measured ? performance.now() : 0;
        if (batch.add(...args)) batch.flush();
        if (measured) costSample("chunk", performance.now() - started);
      } else if (name === "flush") {
        batch.flush();
      } else {
        // Every chunk before the end, error or cancel reaches the decoder first.
        batch.flush();
        guarded(hooks, name, ...args);
      }
    }
    // Free the ports only once the last queued call ran (open ports keep pages out of
    // the back/forward cache).
    if (closing && queue.length === 0) {
      channel.port1.close();
      channel.port2.close();
    }
  };
  return {
    push(name, ...args) {
      queue.push([name, args]);
      schedule();
    },
    // Copies a chunk into the batch now, before it moves into the app's byte stream;
    // decoding a full batch waits for the later task like everything else.
    copy(at, value) {
      const measured = Array.isArray(globalThis.__ttfxCostSamples);
      const started = measured ? performance.now() : 0;
      if (batch.add(at, value)) this.push("flush");
      if (measured) costSample("chunk", performance.now() - started);
    },
    close() {
      closing = true;
      schedule();
    },
  };
}

// A fetch body is a byte stream: an app may read it with `getReader({ mode: "byob" })`.
// The tapped body is one too where the browser has byte streams.
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

// Returns a stream that yields exactly the bytes of `body`, timestamping each chunk when
// the network hands it over.
export function tapBody(body, hooks) {
  const reader = body.getReader();
  const later = laterQueue(hooks);
  const source = {
    async pull(controller) {
      for (;;) {
        let result;
        try {
          result = await reader.read();
        } catch (error) {
          later.push("onError", performance.now(), String((error && error.name) || "Error") + ": " + String((error && error.message) || error));
          later.close();
          controller.error(error);
          return;
        }
        const at = performance.now();
        if (result.done) {
          controller.close();
          // A BYOB read waiting at the end is answered with an empty view.
          if (controller.byobRequest) controller.byobRequest.respond(0);
          later.push("onEnd", at);
          later.close();
          return;
        }
        const value = result.value;
        if (!BYTE_STREAMS) {
          controller.enqueue(value);
          later.push("chunk", at, value);
          return;
        }
        // A byte stream cannot carry an empty chunk; the probe ignores those too. Read on,
        // so the app's pending read is answered.
        if (value.byteLength === 0) continue;
        // Enqueueing moves the chunk's buffer into the stream, so the probe copies the
        // bytes into its batch just before: one memcpy (well under a microsecond for the
        // few hundred bytes of an SSE event), no allocation per chunk, and the app can
        // transfer its buffer away freely.
        later.copy(at, value);
        controller.enqueue(value);
        return;
      }
    },
    cancel(reason) {
      later.push("onCancel", performance.now());
      later.close();
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
export function canWrap(response) {
  const nullBody = [101, 103, 204, 205, 304];
  return response.body !== null && response.status >= 200 && response.status <= 599 && !nullBody.includes(response.status);
}

// A Response equal to `original` but for its body stream. `url`, `redirected` and `type`
// are read-only on a constructed Response, so they are copied as own properties.
export function wrapResponse(original, body) {
  const wrapped = new Response(body, {
    status: original.status,
    statusText: original.statusText,
    headers: original.headers,
  });
  for (const key of ["url", "redirected", "type"]) {
    Object.defineProperty(wrapped, key, { value: original[key], enumerable: true });
  }
  return wrapped;
}

// Calls the page's fetch with the page as `this` (some fetch polyfills need it).
export function callFetch(fetchFn, input, init) {
  return init === undefined ? fetchFn.call(globalThis, input) : fetchFn.call(globalThis, input, init);
}

// The page's fetch as it is now.
export function currentFetch() {
  return globalThis.fetch;
}

export function setFetch(fn) {
  globalThis.fetch = fn;
}

// A fetch replacement that measures matching requests and passes the rest through. The
// decision and the measuring are guarded: if either throws, the original fetch runs.
export function makeFetchWrapper(original, shouldMeasure, measure) {
  const wrapper = function (input, init) {
    let measured = false;
    try {
      measured = shouldMeasure(input) === true;
    } catch (_) {
      measured = false;
    }
    if (!measured) return original.apply(this, arguments);
    try {
      return measure(input, init);
    } catch (_) {
      return original.apply(this, arguments);
    }
  };
  wrapper.__ttfxOriginal = original;
  return wrapper;
}

// The URL a fetch input names, resolved against the page.
export function inputUrl(input) {
  try {
    const raw = typeof input === "string" || input instanceof URL ? String(input) : input.url;
    return new URL(raw, globalThis.location && globalThis.location.href).href;
  } catch (_) {
    return "";
  }
}

export function inputMethod(input, init) {
  if (init && typeof init.method === "string") return init.method.toUpperCase();
  if (input && typeof input === "object" && typeof input.method === "string") return input.method.toUpperCase();
  return "GET";
}

export function inputSignal(input, init) {
  if (init && init.signal) return init.signal;
  if (input && typeof input === "object" && input.signal) return input.signal;
  return null;
}

// Calls back with renderTime for every Element Timing entry inside `root`; returns a
// function that stops observing, or null when the engine has no Element Timing.
export function observeElementPaint(root, onPaint) {
  const supported = typeof PerformanceObserver !== "undefined" && (PerformanceObserver.supportedEntryTypes || []).includes("element");
  if (!supported) return null;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.element && root.contains(entry.element) && entry.renderTime > 0) {
        try { onPaint(entry.renderTime); } catch (_) { /* probe gone: ignore */ }
      }
    }
  });
  observer.observe({ type: "element", buffered: true });
  return () => observer.disconnect();
}

// The frame after now: requestAnimationFrame runs just before the frame is rendered, and a
// message posted from it runs just after, which is the paint estimate. Hidden pages get
// no frames, so the estimate never comes and the report says so.
export function afterNextFrame(callback) {
  if (typeof requestAnimationFrame !== "function") return;
  requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      try { callback(performance.now()); } catch (_) { /* probe gone: ignore */ }
    };
    channel.port2.postMessage(0);
  });
}

// Calls fn(arg) and returns null, or the error's text when it throws.
export function safeCall(fn, arg) {
  try {
    fn(arg);
    return null;
  } catch (e) {
    return String((e && e.message) || e);
  }
}

// The newest Resource Timing entry for `url` that started at or after `startAbs`.
export function findResourceTiming(url, startAbs) {
  if (!globalThis.performance || typeof performance.getEntriesByName !== "function") return null;
  const entries = performance.getEntriesByName(url, "resource").filter((e) => e.startTime >= startAbs - 1);
  const e = entries[entries.length - 1];
  if (!e) return null;
  return {
    requestStart: e.requestStart || null,
    responseStart: e.responseStart || null,
    responseEnd: e.responseEnd || null,
    encodedBodySize: e.encodedBodySize,
    serverTiming: (e.serverTiming || []).map((s) => ({ name: s.name, duration: s.duration, description: s.description })),
  };
}

// Engine, version and user agent, from the user agent string (userAgentData is not in
// every engine, and the string is what QA logs show anyway).
export function engineInfo() {
  const ua = (globalThis.navigator && navigator.userAgent) || "";
  let m;
  if ((m = ua.match(/Firefox\/([\d.]+)/))) return { engine: "gecko", version: m[1], userAgent: ua };
  if ((m = ua.match(/(?:Chrome|Chromium|HeadlessChrome)\/([\d.]+)/))) return { engine: "chromium", version: m[1], userAgent: ua };
  if ((m = ua.match(/AppleWebKit\/([\d.]+)/))) return { engine: "webkit", version: m[1], userAgent: ua };
  return { engine: null, version: null, userAgent: ua };
}

// The smallest step of performance.now(), by watching it change a few times (at most
// about 2 ms of spinning).
export function timerResolution() {
  let best = Infinity;
  let last = performance.now();
  const deadline = last + 2;
  let changes = 0;
  while (changes < 8) {
    const now = performance.now();
    if (now > deadline) break;
    if (now !== last) {
      best = Math.min(best, now - last);
      last = now;
      changes += 1;
    }
  }
  return Number.isFinite(best) ? best : null;
}

// `window.__ttfx` keeps the last REPORT_RING reports, so a page that measures every
// request for hours holds a bounded number (a QA driver reads them as they come; the
// report of one run is also `run.finished()`'s value).
export const REPORT_RING = 100;

export function pushToQueue(report) {
  try {
    const queue = (globalThis.__ttfx = globalThis.__ttfx || []);
    queue.push(report);
    if (queue.length > REPORT_RING) queue.splice(0, queue.length - REPORT_RING);
  } catch (_) {
    // The page put something else at window.__ttfx: the report still reaches onReport
    // and run.finished().
  }
}

export function sendBeacon(url, body) {
  try {
    return typeof navigator !== "undefined" && typeof navigator.sendBeacon === "function" && navigator.sendBeacon(url, body);
  } catch (_) {
    return false;
  }
}

// Resolves with what `promise` resolves to, or null if it rejects or takes over `ms`.
export function settleWithin(promise, ms) {
  return Promise.race([
    Promise.resolve(promise).then((v) => v, () => null),
    new Promise((resolve) => setTimeout(() => resolve(null), ms)),
  ]);
}

// The app side of the probe's e2e tests: a minimal streaming chat client whose received
// bytes are hashed, so the tests can prove the probe never changes them.
import init, * as ttfx from "./pkg/probe.js";
import { skewAtStep } from "./clock.js";

// Promise rejections nobody handled (the probe must never leave one behind).
window.__unhandled = [];
window.addEventListener("unhandledrejection", (e) => window.__unhandled.push(String(e.reason)));

await init();

// The voice API (TtsPlayer, VoiceHandoff) is in the package's voice build, a second module
// loaded only by the voice test, as an app that speaks would load it.
let voiceBuild = null;
async function voiceApi() {
  if (!voiceBuild) {
    voiceBuild = await import("./pkg/voice/index.js");
    await voiceBuild.default();
  }
  return voiceBuild;
}

// Which API each build exports, for the test that the text build leaves voice out.
async function exportsOf() {
  const voice = await voiceApi();
  const names = (m) => Object.keys(m).filter((k) => k !== "default" && k !== "initSync").sort();
  return { text: names(ttfx), voice: names(voice) };
}

function hex(buffer) {
  return [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

// Visible text of OpenAI-style SSE, fed incrementally.
function sseText() {
  let pending = "";
  return (text) => {
    pending += text;
    const events = pending.split("\n\n");
    pending = events.pop();
    let out = "";
    for (const event of events) {
      const data = event.replace(/^data: ?/, "");
      if (!data.startsWith("{")) continue;
      try { out += JSON.parse(data).choices?.[0]?.delta?.content || ""; } catch (_) { /* not JSON: not text */ }
    }
    return out;
  };
}

// Reads a Response the way an app would, rendering text into `element`. With
// `transferChunks`, the app moves each chunk's buffer away (as to a worker) as soon as it
// has it, so the chunk is detached before the probe's task reads it. `writes`, if given,
// gets [bytes read so far, wall-clock ms] for every DOM write.
// With `byob`, it reads into its own 1,000-byte buffers (less than a chunk, so one chunk
// fills several reads) through a BYOB reader.
async function consume(response, element, { transferChunks = false, writes = null, byob = false } = {}) {
  const reader = byob ? response.body.getReader({ mode: "byob" }) : response.body.getReader();
  const next = byob ? () => reader.read(new Uint8Array(1000)) : () => reader.read();
  const decoder = new TextDecoder();
  const extract = sseText();
  const parts = [];
  let read = 0;
  for (;;) {
    const { value, done } = await next();
    if (done) break;
    read += value.byteLength;
    // The app keeps a copy of what it transfers away.
    const chunk = transferChunks ? value.slice() : value;
    if (transferChunks) structuredClone(value, { transfer: [value.buffer] });
    parts.push(chunk);
    const text = extract(decoder.decode(chunk, { stream: true }));
    if (text && element) {
      element.textContent += text;
      if (writes) writes.push([read, performance.timeOrigin + performance.now()]);
    }
  }
  const all = concat(parts);
  return { bytes: all.length, sha256: hex(await crypto.subtle.digest("SHA-256", all)) };
}

async function measure({ url, init = {}, options = {}, watch = true, abortAfterMs = null, throwInCallback = false, transferChunks = false, byob = false }) {
  if (throwInCallback) options.onReport = () => { throw new Error("app callback failed"); };
  const probe = new ttfx.Probe(options);
  const run = probe.start();
  const element = document.createElement("p");
  document.body.append(element);
  if (watch) run.watch(element);
  const controller = new AbortController();
  const out = { appError: null, status: null, bytes: 0, sha256: null };
  // The abort timer is armed before the fetch starts; the test needs to know by how much,
  // to place the abort on the run's own clock.
  const armedAt = performance.now();
  if (abortAfterMs !== null) setTimeout(() => controller.abort(), abortAfterMs);
  try {
    const fetching = run.fetch(url, { ...init, signal: controller.signal });
    await Promise.resolve();
    out.armedBeforeStartMs = run.requestStart - armedAt;
    const response = await fetching;
    out.status = response.status;
    const writes = [];
    Object.assign(out, await consume(response, element, { transferChunks, byob, writes }));
    // The app's own first DOM write on the run's clock (ms since request_start).
    if (writes.length > 0) out.firstWriteMs = writes[0][1] - performance.timeOrigin - run.requestStart;
  } catch (e) {
    out.appError = String((e && e.name) || e);
  }
  out.text = element.textContent;
  out.report = await Promise.race([
    run.finished(),
    new Promise((resolve) => setTimeout(() => resolve({ harnessTimeout: "run.finished() did not settle within 20 s" }), 20000)),
  ]);
  return out;
}

// A probed request whose body the app leaves unread until the run has reported (as an app
// that dropped a reply it no longer wants), then reads in full: what the probe reported,
// and that the app still got every byte.
async function unread({ url, options = {} }) {
  const probe = new ttfx.Probe(options);
  const run = probe.start();
  const response = await run.fetch(url);
  const report = await Promise.race([
    run.finished(),
    new Promise((resolve) => setTimeout(() => resolve({ harnessTimeout: "run.finished() did not settle within 20 s" }), 20000)),
  ]);
  const reportedAt = performance.now() - run.requestStart;
  const app = await consume(response, null);
  return { report, reportedAt, readAt: performance.now() - run.requestStart, ...app };
}

// A probed request for a large body that the app reads and counts (no copy): the bytes
// the probe held for its analysis at most, and the report.
async function large({ url }) {
  const probe = new ttfx.Probe({ label: "large" });
  const run = probe.start();
  const response = await run.fetch(url);
  const reader = response.body.getReader();
  let bytes = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
  }
  const report = await run.finished();
  return { bytes, memory: probe.memory(), report };
}

// The same request without any probe, for comparison.
async function direct({ url, init = {}, byob = false }) {
  const response = await fetch(url, init);
  return { status: response.status, ...(await consume(response, null, { byob })) };
}

// Wraps window.fetch with instrumentFetch, makes a plain fetch, then restores.
async function instrumented({ url, init = {} }) {
  const original = window.fetch;
  const probe = new ttfx.Probe({ label: "instrumented" });
  const before = (window.__ttfx || []).length;
  const started = [];
  const handle = probe.instrumentFetch({ match: "/sim/", onStart: (run) => started.push({ transport: run.transport, url: run.url, requestStart: run.requestStart }) });
  const wrapped = window.fetch !== original;
  const app = await direct({ url, init });
  const unmatched = await fetch("./harness.html").then((r) => r.status);
  for (let i = 0; i < 200 && (window.__ttfx || []).length === before; i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  const restored = handle.restore();
  return { wrapped, restored, back: window.fetch === original, app, unmatched, started, reports: window.__ttfx.slice(before) };
}

// The transport tests' app: it reads a stream with the browser's own EventSource,
// XMLHttpRequest or WebSocket, exactly as an app would, while the probe instruments that
// API; it returns what the app received, how the API looked to it, and the probe's runs.
const TRANSPORTS = { eventsource: ["EventSource", "instrumentEventSource"], xhr: ["XMLHttpRequest", "instrumentXhr"], websocket: ["WebSocket", "instrumentWebSocket"] };

async function transport({ kind, url, match, responseType = "", timeout = 0, replies = 1, create = {}, options = {}, quietMs = 2000, types = null }) {
  const [api, instrument] = TRANSPORTS[kind];
  const original = window[api];
  const originalOpen = XMLHttpRequest.prototype.open;
  const probe = new ttfx.Probe({ label: "transport-" + kind, ...options });
  const element = document.createElement("p");
  document.body.append(element);
  const runs = [];
  const handle = probe[instrument]({ match, quietMs, watch: () => element, onStart: (run) => runs.push(run) });
  const out = { wrapped: window[api] !== original || XMLHttpRequest.prototype.open !== originalOpen };
  const show = (text) => (element.textContent += text);
  // When the app first saw data (page clock): the probe's first_byte must not be later.
  let appFirst = null;
  const saw = () => (appFirst = appFirst === null ? performance.now() : appFirst);
  const delta = (data, read) => {
    try {
      return read(JSON.parse(data)) || "";
    } catch (_) {
      return "";
    }
  };
  if (kind === "eventsource") {
    const source = new EventSource(url);
    if (types) {
      // Named events (an Anthropic stream): the app listens to each type it knows.
      out.received = await new Promise((resolve) => {
        const received = [];
        for (const type of types) {
          source.addEventListener(type, (e) => {
            saw();
            received.push([e.type, e.data, e.lastEventId]);
            if (type === "content_block_delta") show(delta(e.data, (v) => v.delta.text));
            if (type === "message_stop") {
              source.close();
              resolve(received);
            }
          });
        }
        source.onerror = () => {
          out.appError = "error event, readyState " + source.readyState;
          source.close();
          resolve(received);
        };
      });
    }
    out.looksNative = source instanceof EventSource && source instanceof original && EventSource.OPEN === 1 && source.OPEN === 1 && EventSource.name === "EventSource";
    if (!types) out.received = await new Promise((resolve) => {
      const received = [];
      source.onmessage = (e) => {
        saw();
        received.push(e.data);
        if (e.data === "[DONE]") {
          source.close();
          resolve(received);
        } else show(delta(e.data, (v) => v.choices[0].delta.content));
      };
      source.onerror = () => {
        out.appError = "error event, readyState " + source.readyState;
        source.close();
        resolve(received);
      };
    });
  } else if (kind === "xhr") {
    const xhr = new XMLHttpRequest();
    out.looksNative = XMLHttpRequest === original && Object.getPrototypeOf(xhr) === original.prototype;
    out.progressEvents = 0;
    out.readyStateChanges = 0;
    xhr.open("GET", url);
    xhr.responseType = responseType;
    xhr.timeout = timeout;
    // How the request ended for the app: load, error, timeout or abort.
    for (const type of ["load", "error", "timeout", "abort"]) xhr.addEventListener(type, () => (out.ended = type));
    await new Promise((resolve) => {
      xhr.onreadystatechange = () => {
        out.readyStateChanges += 1;
        if (xhr.readyState >= 3 && (responseType !== "" || xhr.responseText.length > 0)) saw();
      };
      xhr.onprogress = () => {
        out.progressEvents += 1;
        if (responseType === "" && element.textContent === "" && xhr.responseText.includes("content")) show("…");
      };
      xhr.onloadend = resolve;
      xhr.send();
    });
    out.status = xhr.status;
    out.body = responseType === "arraybuffer" ? new TextDecoder().decode(xhr.response) : xhr.responseText;
  } else {
    const socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    out.looksNative = socket instanceof WebSocket && socket instanceof original && WebSocket.OPEN === 1 && socket.OPEN === 1 && WebSocket.name === "WebSocket";
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = () => reject(new Error("the test's WebSocket did not open"));
    });
    const received = [];
    for (let reply = 0; reply < replies; reply++) {
      await new Promise((resolve) => {
        socket.onmessage = (e) => {
          saw();
          if (typeof e.data !== "string") return received.push({ binary: [...new Uint8Array(e.data)] });
          received.push(e.data);
          show(delta(e.data, (v) => v.delta));
          if (e.data.includes('"response.done"')) resolve();
          else if (create.done === false && received.length === create.tokens + 1) resolve();
        };
        // A server that goes away mid-reply: the app sees the browser's close event.
        socket.onclose = (e) => {
          out.close = { code: e.code, wasClean: e.wasClean };
          resolve();
        };
        socket.send(JSON.stringify({ type: "response.create", binary: reply === 0, ...create }));
      });
    }
    // A reply without an end message: wait for the probe's quiet end before closing.
    if (create.done === false) await new Promise((r) => setTimeout(r, quietMs + 300));
    socket.close();
    out.received = received;
  }
  out.text = element.textContent;
  out.reports = await Promise.all(runs.map((run) => run.finished()));
  out.runs = runs.map((run) => ({ transport: run.transport, url: run.url, requestStart: run.requestStart }));
  if (appFirst !== null && runs.length > 0) out.appFirst = appFirst - runs[0].requestStart;
  out.restored = handle.restore();
  out.back = window[api] === original && XMLHttpRequest.prototype.open === originalOpen;
  element.remove();
  return out;
}

// One request of the A/B below, read and rendered the way a chat app does. Returns, for
// each DOM update, the app's chunk-to-DOM time: from the server sending the newest chunk
// in that read (its record, GET /records/{id}) to the app's DOM write, both on the wall
// clock of this one machine; and, for a probed request, the report's environment.
async function chunkToDom(url, init, run) {
  const element = document.createElement("p");
  document.body.append(element);
  let response;
  if (run) {
    run.watch(element);
    response = await run.fetch(url, init);
  } else {
    response = await fetch(url, init);
  }
  const writes = [];
  await consume(response, element, { writes });
  element.remove();
  const report = run ? await run.finished() : null;
  const id = response.headers.get("x-request-id");
  const record = await (await fetch(`/records/${encodeURIComponent(id)}`)).json();
  // The newest server chunk with bytes in a read is the first whose end reaches past the
  // bytes read: the read could not complete before that chunk was sent.
  const latencies = [];
  let chunk = 0;
  let end = 0;
  for (const [read, wall] of writes) {
    while (chunk < record.chunks.length && end + record.chunks[chunk].bytes < read) {
      end += record.chunks[chunk].bytes;
      chunk++;
    }
    if (chunk >= record.chunks.length) break;
    latencies.push(wall - (record.received_unix_ms + record.chunks[chunk].at_ms));
  }
  return { latencies, environment: report?.run?.timeline?.environment };
}

// A/B on the same stream: the app's chunk-to-DOM time per DOM update, without and with
// the probe, in pairs whose order alternates (ABBA…) so drift and warm-up hit both arms
// alike; plus the probe's own main-thread time during the probed runs, by piece of work
// (probe.js names them: chunk, flush, task, report). One Probe serves every
// run, as in an app.
async function bench({ url, init = {}, runs = 10 }) {
  const probe = new ttfx.Probe({ label: "bench" });
  const differences = [];
  const without = [];
  const withProbe = [];
  const cost = {};
  let environment = {};
  for (let i = 0; i < runs; i++) {
    const times = {};
    for (const probed of i % 2 === 0 ? [false, true] : [true, false]) {
      if (probed) {
        globalThis.__ttfxCostSamples = [];
        const measured = await chunkToDom(url, init, probe.start());
        times[probed] = measured.latencies;
        environment = measured.environment || environment;
        const samples = globalThis.__ttfxCostSamples;
        for (let k = 0; k + 1 < samples.length; k += 2) (cost[samples[k]] ||= []).push(samples[k + 1]);
        globalThis.__ttfxCostSamples = null;
      } else {
        times[probed] = (await chunkToDom(url, init, null)).latencies;
      }
    }
    const n = Math.min(times[false].length, times[true].length);
    for (let k = 0; k < n; k++) {
      differences.push(times[true][k] - times[false][k]);
      without.push(times[false][k]);
      withProbe.push(times[true][k]);
    }
  }
  return {
    differences, without, withProbe, cost,
    isolated: environment.cross_origin_isolated, clockStepMs: environment.timer_resolution_ms,
  };
}

// One probed run of a long stream, read and rendered like a chat app: the probe's
// main-thread time per piece of work (see `bench`), to find its longest task.
// Beside it, a control: every 10 ms a task that spins for 100 µs (about a probe task's
// median) on the same main thread, timed the same way. What lengthens it (garbage
// collection, the OS preempting the thread on a busy machine) lengthens the probe's
// tasks too, so its longest shows how long a task the machine alone makes.
async function longStream({ url, init = {} }) {
  const probe = new ttfx.Probe({ label: "long" });
  const control = [];
  const spin = setInterval(() => {
    const started = performance.now();
    while (performance.now() - started < 0.1) { /* spin */ }
    control.push(performance.now() - started);
  }, 10);
  globalThis.__ttfxCostSamples = [];
  const element = document.createElement("p");
  document.body.append(element);
  const run = probe.start();
  run.watch(element);
  const response = await run.fetch(url, init);
  await consume(response, element);
  const report = await run.finished();
  const cost = {};
  const samples = globalThis.__ttfxCostSamples;
  for (let k = 0; k + 1 < samples.length; k += 2) (cost[samples[k]] ||= []).push(samples[k + 1]);
  globalThis.__ttfxCostSamples = null;
  clearInterval(spin);
  element.remove();
  return { cost, control, chunks: report.run.timeline.chunks.length, analysis: report.run.timeline.environment.analysis };
}

// A voice turn as an app would build it: the LLM reply streams into the page, its first
// sentence goes to TTS as soon as it is complete, the audio plays through Web Audio, and
// the run's report includes the audio measurement and the handoff record.
async function voice({ llmUrl, llmInit = {}, ttsUrl }) {
  const voiceTtfx = await voiceApi();
  const probe = new voiceTtfx.Probe({});
  const run = probe.start();
  const element = document.createElement("p");
  document.body.append(element);
  run.watch(element);
  const response = await run.fetch(llmUrl, llmInit);
  const requestStart = run.requestStart;
  const player = await voiceTtfx.TtsPlayer.create({ format: "pcm16", sampleRate: 24000, requestStart });
  const handoff = new voiceTtfx.VoiceHandoff({ requestStart });
  run.includeAudio(player.result(10000));
  let handoffDone;
  run.includeHandoff(new Promise((resolve) => { handoffDone = resolve; }));
  let spoken = false;
  const speak = (segment) => {
    spoken = true;
    handoff.handed(segment.index);
    player.markRequest();
    fetch(ttsUrl, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim", input: segment.text }) })
      .then((r) => player.play(r.body));
  };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const extract = sseText();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const text = extract(decoder.decode(value, { stream: true }));
    if (!text) continue;
    element.textContent += text;
    const segments = handoff.pushText(text);
    if (!spoken && segments.length > 0) speak(segments[0]);
  }
  const last = handoff.llmDone();
  if (!spoken && last) speak(last);
  handoffDone(handoff.result());
  const report = await run.finished();
  player.stop();
  return { report, text: element.textContent };
}

// Runs the package's analysis worker on observations the test gives: `runs` is a list of
// { run, messages: [[op, ...args]] } whose last message is finish; returns each run's
// report (its JSON text, as the worker wrote it) or error, and how long the page waited.
async function analysisWorker({ runs }) {
  const worker = new Worker(new URL("./pkg/analysis/worker.js", location.href), { type: "module" });
  const started = performance.now();
  const answers = new Map();
  const done = new Promise((resolve, reject) => {
    worker.onerror = (e) => reject(new Error("worker error: " + (e.message || e)));
    worker.onmessage = ({ data }) => {
      if (data.ready || data.analysed) return;
      if (data.failed) return reject(new Error(data.failed));
      answers.set(data.run, data.error ? { error: data.error } : { report: data.report });
      if (answers.size === runs.length) resolve();
    };
  });
  for (const { run, messages } of runs) {
    for (const [op, ...args] of messages) {
      const converted = args.map((a) => (a && a.f64 ? new Float64Array(a.f64) : a && a.u8 ? new Uint8Array(a.u8) : a));
      worker.postMessage({ op, run, args: converted });
    }
  }
  await done;
  worker.terminate();
  return { results: runs.map(({ run }) => answers.get(run)), waitedMs: performance.now() - started };
}


// One reply streamed into the fixed reply box of paint.html (a new element each run, as
// Element Timing reports an element's text once), after the empty box has been on screen
// for a while. Returns the report, the box's region (CSS px) and the wall clock of the
// request start (system clock, epoch ms), to place the run's times among the frames.
async function paintRun({ url, init = {} }) {
  const box = document.getElementById("reply-box");
  box.replaceChildren();
  const element = document.createElement("p");
  box.append(element);
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const skewMs = skewAtStep();
  const probe = new ttfx.Probe({ label: "paint" });
  const run = probe.start();
  run.watch(element);
  const response = await run.fetch(url, init);
  const writes = [];
  await consume(response, element, { writes });
  const report = await run.finished();
  const r = box.getBoundingClientRect();
  return {
    report, skewMs, text: element.textContent, domWrites: writes.length,
    requestStartUnixMs: performance.timeOrigin + run.requestStart - skewMs,
    region: { x: r.x, y: r.y, width: r.width, height: r.height },
    clockStepMs: report?.run?.timeline?.environment?.timer_resolution_ms,
  };
}

// Calibration for the screencast's timestamps: `count` times, turn paint.html's marker
// black (text "MMM", a new element each time, so Element Timing reports each) or back to
// white (empty) inside a requestAnimationFrame callback, whose argument is the start of
// the frame that will draw it. Returns each change's colour, that frame start, the
// callback's own time and, for a black change where Element Timing has it, the entry's
// paintTime and presentationTime, all on the system clock (epoch ms); and the marker's
// region.
async function frameMarks({ count = 10 }) {
  const mark = document.getElementById("mark");
  const skewMs = skewAtStep();
  const wall = (t) => performance.timeOrigin + t - skewMs;
  const entries = new Map();
  const observer = typeof PerformanceObserver !== "undefined" && PerformanceObserver.supportedEntryTypes.includes("element")
    ? new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.identifier.startsWith("mark-")) entries.set(e.identifier, e);
    })
    : null;
  if (observer) observer.observe({ type: "element" });
  const marks = [];
  for (let i = 0; i < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, 60 + 7 * i));
    await new Promise((resolve) => requestAnimationFrame((frameStart) => {
      const black = i % 2 === 0;
      if (black) {
        // A block: Chromium attributes a text paint to its nearest block ancestor, and
        // reports it only if that one carries the attribute.
        const block = document.createElement("div");
        block.setAttribute("elementtiming", `mark-${i}`);
        block.textContent = "MMM";
        mark.replaceChildren(block);
      } else {
        mark.replaceChildren();
      }
      marks.push({ black, id: `mark-${i}`, frameStartUnixMs: wall(frameStart), callbackUnixMs: wall(performance.now()) });
      resolve();
    }));
  }
  mark.replaceChildren();
  await new Promise((resolve) => setTimeout(resolve, 60));
  if (observer) {
    for (const e of observer.takeRecords()) if (e.identifier.startsWith("mark-")) entries.set(e.identifier, e);
    observer.disconnect();
  }
  for (const m of marks) {
    const e = entries.get(m.id);
    if (!e) continue;
    if (e.paintTime > 0) m.paintTimeUnixMs = wall(e.paintTime);
    if (e.presentationTime > 0) m.presentationTimeUnixMs = wall(e.presentationTime);
  }
  const r = mark.getBoundingClientRect();
  return { marks, region: { x: r.x, y: r.y, width: r.width, height: r.height } };
}

// The page's main thread descheduled while the first probe of the page reads the
// clock's step: performance.now() jumps by `pausesMs[i]` at its reading i + 2 (one pause
// after another), as a thread that lost the CPU mid-spin sees it, and runs on from
// there; with `frozen`, it never moves at all. The probe keeps the step it measured for
// the page; the real clock is back before this returns. Returns the number of readings.
async function clockStepAfterPauses({ pausesMs = [], frozen = false }) {
  const real = performance.now;
  let calls = 0;
  let jumped = 0;
  performance.now = function now() {
    // No allocation here: a collection mid-spin would be a pause of its own.
    if (calls >= 1 && calls <= pausesMs.length) jumped += pausesMs[calls - 1];
    calls += 1;
    return frozen ? 1000 : real.call(performance) + jumped;
  };
  try {
    new ttfx.Probe({ label: "pause" });
  } finally {
    performance.now = real;
  }
  return calls;
}

window.harness = { transport, clockStepAfterPauses, paintRun, frameMarks, measure, direct, unread, large, instrumented, bench, longStream, voice, exportsOf, analysisWorker, ttfx };
document.getElementById("status").textContent = "ready " + ttfx.version();

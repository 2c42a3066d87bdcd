// The app side of first audio against the sound server: one AudioContext for the page,
// as an app keeps one, and per run a TTS reply played by the probe's TtsPlayer on it.
// Times go back on the system clock (epoch ms) so the test can place them among the
// sound server's recording.
import init, * as voice from "./pkg/voice/index.js";
import { skewAtStep } from "./clock.js";

await init();

let ctx = null;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Starts the page's AudioContext and waits until its device really plays: `running`,
// then `currentTime` moving, then getOutputTimestamp() naming a frame at the output,
// then outputLatency watched for a while. Returns how long each took from `new AudioContext()` (ms):
// the device start delay, a wait before any first audio that is not the pipeline's.
async function audioStart({ timeoutMs = 10000, watchMs = 2000 } = {}) {
  const t0 = performance.now();
  ctx = new AudioContext();
  const since = () => performance.now() - t0;
  let runningMs = null, renderingMs = null, outputMs = null;
  ctx.resume().catch(() => {});
  while (since() < timeoutMs && outputMs === null) {
    if (runningMs === null && ctx.state === "running") runningMs = since();
    if (renderingMs === null && ctx.currentTime > 0) renderingMs = since();
    const ts = typeof ctx.getOutputTimestamp === "function" ? ctx.getOutputTimestamp() : null;
    if (ts && ts.contextTime > 0 && ts.performanceTime > 0) outputMs = since();
    await sleep(1);
  }
  // Then outputLatency watched for `watchMs`: Chromium's (its PulseAudio stream's delay
  // estimate) keeps moving, and a frame timed while it reads low is heard later than
  // getOutputTimestamp() said (seen: 8 ms read against ~32 ms, the frame 22 ms late).
  const firstLatencyMs = ctx.outputLatency === undefined ? null : ctx.outputLatency * 1000;
  let lastChangeMs = outputMs, last = ctx.outputLatency, changes = 0;
  let minLatency = last, maxLatency = last;
  const watchFrom = since();
  while (outputMs !== null && last !== undefined && since() - watchFrom < watchMs) {
    await sleep(5);
    const l = ctx.outputLatency;
    if (l !== last) { last = l; lastChangeMs = since(); changes++; }
    minLatency = Math.min(minLatency, l);
    maxLatency = Math.max(maxLatency, l);
  }
  // What the output timestamp names, against the render clock: currentTime −
  // contextTime and performance.now() − performanceTime, medians of 20 reads 10 ms
  // apart. A timestamp that names the frame at the output lags the render position by
  // about the output latency; one that names the render position does not.
  const lags = [], ages = [];
  for (let i = 0; outputMs !== null && i < 20; i++) {
    const ts = ctx.getOutputTimestamp();
    lags.push((ctx.currentTime - ts.contextTime) * 1000);
    ages.push(performance.now() - ts.performanceTime);
    await sleep(10);
  }
  const median = (v) => (v.length ? v.slice().sort((a, b) => a - b)[v.length >> 1] : null);
  return {
    timestampLagMs: median(lags), timestampAgeMs: median(ages),
    state: ctx.state, runningMs, renderingMs, outputMs, lastChangeMs, changes, firstLatencyMs,
    minLatencyMs: minLatency === undefined ? null : minLatency * 1000,
    maxLatencyMs: maxLatency === undefined ? null : maxLatency * 1000,
    sampleRate: ctx.sampleRate,
    baseLatencyMs: ctx.baseLatency === undefined ? null : ctx.baseLatency * 1000,
    outputLatencyMs: ctx.outputLatency === undefined ? null : ctx.outputLatency * 1000,
    hasOutputTimestamp: typeof ctx.getOutputTimestamp === "function",
  };
}

// One TTS reply: tts_request, the body through the player, the measurement (relative to
// the request start) and the request start on the system clock.
async function audioRun({ ttsUrl }) {
  if (!ctx) throw new Error("audioStart first");
  const skewMs = skewAtStep();
  const requestStart = performance.now();
  const player = await voice.TtsPlayer.create({ context: ctx, format: "pcm16", sampleRate: 24000, requestStart });
  const result = player.result(10000);
  player.markRequest();
  const response = await fetch(ttsUrl, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "sim", input: "Hello there, this is the first sentence." }) });
  await player.play(response.body);
  const measurement = await result;
  player.stop();
  return {
    measurement, skewMs, state: ctx.state,
    requestStartUnixMs: performance.timeOrigin + requestStart - skewMs,
    outputLatencyMs: ctx.outputLatency === undefined ? null : ctx.outputLatency * 1000,
  };
}

window.harness = { audioStart, audioRun };
document.getElementById("status").textContent = "ready";

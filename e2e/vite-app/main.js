// The app measures one streamed reply through the probe, imported by its package name:
// the bundler resolves the package's exports, its analysis Worker and the Worker's wasm.
import init, { Probe } from "ttfx-probe";

async function main() {
  // The probe's main-thread cost per piece of work (probe.js's cost.js), for e2e
  // bundler.rs: in the main-thread fallback, how long each analysis task ran.
  globalThis.__ttfxCostSamples = [];
  await init();
  const probe = new Probe({ label: "vite-app" });
  const run = probe.start();
  const reply = document.getElementById("reply");
  run.watch(reply);
  const response = await run.fetch(window.location.search.slice(1) ? decodeURIComponent(window.location.search.slice(1)) : "/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "vite-app", stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const line of decoder.decode(value, { stream: true }).split("\n")) {
      const data = line.replace(/^data: ?/, "");
      if (!data.startsWith("{")) continue;
      try {
        reply.textContent += JSON.parse(data).choices?.[0]?.delta?.content || "";
      } catch (_) {
        // A line split across chunks: this app only renders whole lines.
      }
    }
  }
  const report = await run.finished();
  const wasm = performance
    .getEntriesByType("resource")
    .map((e) => new URL(e.name).pathname)
    .filter((p) => p.endsWith(".wasm"));
  window.appResult = { report, wasm, text: reply.textContent, cost: globalThis.__ttfxCostSamples };
}

main().catch((e) => {
  window.appResult = { error: String((e && e.stack) || e) };
});

// Compiled with `tsc --strict` against the package's text build (e2e test
// `package_types`): the README's use must type-check, and misuse must not.
import init, { Probe, now, version, type ProbeOptions, type ProbeRun, type RunReport, type Transport } from "ttfx-probe";

await init();
const options: ProbeOptions = {
  dialect: "openai-chat",
  label: "prod-chat",
  collectorUrl: "/ttfx",
  sampleRate: 0.1,
  paintTimeoutMs: 1000,
  onReport: (report: RunReport) => console.log(report.run.metrics),
};
const probe = new Probe(options);
const run = probe.start();
run.watch(document.body);
const response: Response = await run.fetch("/v1/chat/completions", { method: "POST", body: "{}" });
const report: RunReport = await run.finished();
const firstToken: number | undefined = report.run.timeline.milestones.first_token;
const method: "presentation_time" | "element_timing" | "interaction_contentful_paint" | "raf_next_frame" | "raf_estimate" | undefined =
  report.run.timeline.paint_method;
const started: number | undefined = run.requestStart;
const handle = probe.instrumentFetch({ match: /\/v1\/chat/, watch: () => document.querySelector("p") });
const restored: boolean = handle.restore();
// The other transports take the same options, and onStart sees the run's transport.
const transports: Transport[] = [];
const onStart = (r: ProbeRun) => transports.push(r.transport ?? "fetch");
probe.instrumentEventSource({ match: "/v1/stream", onStart }).restore();
probe.instrumentXhr({ match: (url) => url.endsWith("/chat"), onStart }).restore();
probe.instrumentWebSocket({ match: "/v1/realtime", quietMs: 1500, onStart }).restore();
const transport: Transport | undefined = report.run.timeline.request.transport;
console.log(transports, transport);
const clock: number = now();
const probeVersion: string = version();
console.log(response, firstToken, method, started, restored, clock, probeVersion);

// docs/probe.md "Load it only where you measure": the import happens only when sampled.
if (Math.random() < 0.05) {
  const { default: lateInit, Probe: LateProbe } = await import("ttfx-probe");
  await lateInit();
  const sampled: Probe = new LateProbe({ label: "prod", collectorUrl: "/ttfx", pagePath: () => "/chat/:id" });
  console.log(sampled);
}

// @ts-expect-error: not a dialect the decoder knows
new Probe({ dialect: "gemini" });
// @ts-expect-error: sampleRate is a number
new Probe({ sampleRate: "0.5" });
// @ts-expect-error: pagePath is a string or a function returning one
new Probe({ pagePath: 42 });
// @ts-expect-error: not a milestone
report.run.timeline.milestones.first_pixel;
// @ts-expect-error: match is a string, RegExp or predicate
probe.instrumentFetch({ match: 42 });
// @ts-expect-error: quietMs is a number
probe.instrumentWebSocket({ match: "/v1/realtime", quietMs: "2s" });
// @ts-expect-error: the text build leaves the voice API out
void run.includeAudio;

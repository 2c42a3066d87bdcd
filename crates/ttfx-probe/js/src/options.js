// The Probe's options, checked once: a wrong one throws an Error naming it.

// ttfx_core::decode::DialectKind's names; a ttfx-probe unit test checks the list.
const DIALECTS = ["auto", "openai-chat", "openai-responses", "openai-realtime", "anthropic", "ollama", "llamacpp", "openai-speech", "pcm16", "wav", "text"];

export function readOptions(o) {
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

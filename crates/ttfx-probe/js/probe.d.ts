// Types of ttfx-probe's front (probe.js): the part a page loads before it measures.
// The analysis it loads later (analysis/) and the voice build (voice/) have their own.

export type Dialect = "auto" | "openai-chat" | "openai-responses" | "openai-realtime" | "anthropic" | "ollama" | "llamacpp" | "openai-speech" | "pcm16" | "wav" | "text";

export interface ProbeOptions {
  /** The stream's dialect (default "auto"). */
  dialect?: Dialect;
  /** What is measured (a deployment, a model); reports carry it as `target`. */
  label?: string;
  /** Where to send each sampled run's field report (docs/report.md, "Field report": at
   *  most 16 KiB of JSON, no header value, no query string), with navigator.sendBeacon, else
   *  a keepalive fetch. A collector on another origin answers the CORS preflight with the
   *  page's origin and `Access-Control-Allow-Credentials: true` (docs/probe.md). */
  collectorUrl?: string;
  /** Share of runs whose field report is sent, 0..1 (default 1), drawn per run; the
   *  report carries it so a collector can weight each run by its inverse. Callbacks and
   *  window.__ttfx get every full report. */
  sampleRate?: number;
  /** The page path field reports carry (default `location.pathname`; a query or
   *  fragment is cut off): a route such as "/chat/:id", or a function called at each
   *  run's end that returns one, keeps ids and anything secret in the path out. */
  pagePath?: string | (() => string);
  /** How long after the stream ends to wait for the reply's first paint (default 1000 ms). */
  paintTimeoutMs?: number;
  /** A body the app stops reading for this long while bytes wait is reported with an
   *  `abandoned` anomaly, and the probe stops reading ahead of it (default 30000 ms). */
  abandonAfterMs?: number;
  /** Called with every report; a throw is recorded in the report, never propagated. */
  onReport?: (report: RunReport) => void;
  /** Run the analysis on the main thread (in idle time) with this `Analysis` (from
   *  `ttfx-probe/analysis` or a wasm module that links it) instead of the package's Worker. */
  analysis?: () => unknown | Promise<unknown>;
  /** Testing only: make the probe fail on purpose to check containment. */
  __faultInjection?: "decoder-panic";
}

export interface InstrumentOptions {
  /** Requests to measure: URL substring, RegExp, or predicate on the absolute URL. */
  match: string | RegExp | ((url: string) => boolean);
  /** Element to time the reply's render in, or a function called at each request's start. */
  watch?: Element | (() => Element | null);
  /** Called synchronously with each measured run as it starts (`transport`, `url` and
   *  `requestStart` set); a throw is ignored. */
  onStart?: (run: ProbeRun) => void;
  /** WebSocket runs: end after this many ms without a message (default 2000). */
  quietMs?: number;
}

/** How a measured request was made. */
export type Transport = "fetch" | "eventsource" | "xhr" | "websocket";

export type MilestoneName = "speech_start" | "speech_end" | "stt_first_partial" | "stt_final" | "submit" | "request_start" | "response_start" | "headers" | "first_byte" | "first_event" | "first_token" | "first_visible_token" | "first_dom" | "paint_time" | "first_paint" | "first_sentence" | "tts_request" | "first_audio_byte" | "first_audio_scheduled" | "first_audio_out" | "last_token" | "done" | "aborted" | "error";

export interface Chunk { at_ms: number; bytes: number; events: number; visible_tokens: number; reasoning_tokens: number; }
export interface ServerTiming { name: string; duration_ms: number | null; description?: string; source: string; }
export interface Anomaly { at_ms: number; class: string; detail: string; }

export interface Timeline {
  /** Milliseconds since request_start on the page's performance.now() clock. */
  milestones: Partial<Record<MilestoneName, number>>;
  /** The first 8,192 chunks; later ones are folded into `chunk_summary` (docs/report.md). */
  chunks: Chunk[];
  /** Long streams only: the chunks after the kept ones, in totals, bins and a gap digest. */
  chunk_summary?: {
    chunks: number; bytes: number; events: number; visible_tokens: number; reasoning_tokens: number;
    bins: { from_ms: number; to_ms: number; chunks: number; bytes: number; events: number; visible_tokens: number; reasoning_tokens: number }[];
    gaps: { count: number; sum_ms: number; min_ms: number; max_ms: number; above_floor: number; above_floor_ms: number; buckets: [number, number][] };
    burst_visible_tokens: number;
  };
  /** How first_paint was timed: Element Timing's presentationTime (Chromium 156+), its
   *  renderTime (older Chromium), or the start of the frame after the one that rendered
   *  the text (`raf_next_frame`); `raf_estimate` only in reports written before 2026-12-05. */
  paint_method?: "presentation_time" | "element_timing" | "interaction_contentful_paint" | "raf_next_frame" | "raf_estimate";
  failure?: { class: "http_status" | "network" | "in_band" | "decode" | "timeout"; http_status?: number; detail?: string };
  environment: { engine?: string; engine_version?: string; user_agent?: string; cross_origin_isolated?: boolean; timer_resolution_ms?: number; visibility_changes?: { at_ms: number; state: "visible" | "hidden" }[]; concurrency?: number;
    /** Where the analysis ran: a Worker, the main thread in idle time, or `ttfx run` (inject mode). */
    analysis?: "worker" | "main_thread" | "runner" };
  server: { timings?: ServerTiming[]; usage?: { prompt_tokens?: number; completion_tokens?: number; reasoning_tokens?: number; cached_prompt_tokens?: number } };
  request: { method?: string; url?: string; status?: number; content_type?: string; dialect?: string;
    /** How the probe received the stream; absent (older reports) means fetch. */
    transport?: Transport };
  resource_timing?: { request_start_ms?: number; response_start_ms?: number; response_end_ms?: number; encoded_body_size?: number; fetch_start_ms?: number; domain_lookup_start_ms?: number; domain_lookup_end_ms?: number; connect_start_ms?: number; connect_end_ms?: number; next_hop_protocol?: string };
  anomalies?: Anomaly[];
  request_start_unix_ms?: number;
  /** Voice runs: the audio stream (see AudioMeasurement) and how first_audio_out was timed. */
  audio?: AudioMeasurement["audio"];
  audio_out_method?: AudioMeasurement["audio_out_method"];
  /** Voice runs: per-segment LLM → TTS handoff record. */
  handoff?: { segments: unknown[]; [key: string]: unknown };
  /** Voice turns: what the milestones before the request cannot hold (see TurnMeasurement). */
  turn?: TurnMeasurement["turn"];
  /** `ttfx run --inject`: how the stream and the reply were chosen in a page without the probe. */
  selection?: { stream: "first_streaming_after_submit" | "match"; requests_seen: number; reply: "growth" | "selector"; reply_element?: string; reply_share?: number; flow_turn?: number };
}

/** A voice turn (VoiceTurn `result()`, voice build), relative to the LLM request's
 *  request_start: its speech and transcription come first, so they are negative. */
export interface TurnMeasurement {
  milestones: Partial<Record<"speech_start" | "speech_end" | "stt_first_partial" | "stt_final", number>>;
  turn: {
    /** The detector's decision that the speech had ended (speech_end + its hangover). */
    speech_end_detected_ms?: number;
    stt_request_ms?: number;
    barge_in?: { speech_start_ms: number; playback_stopped_ms: number };
    vad?: { threshold_dbfs: number; hangover_ms: number; min_speech_ms: number; frame_ms: number; input_latency_ms?: number };
  };
  notes?: string[];
}

/** A TTS stream's audio side (TtsPlayer/AudioTap `result()`, voice build); voice runs
 *  carry it in their timeline. */
export interface AudioMeasurement {
  milestones: Partial<Record<"tts_request" | "first_audio_byte" | "first_audio_scheduled" | "first_audio_out", number>>;
  audio: {
    audio_ms: number; last_byte_at_ms: number;
    underruns: { at_ms: number; silence_ms: number }[];
    chunks?: { at_ms: number; audio_ms: number }[];
    output?: { sample_rate: number; state_at_first_schedule?: "running" | "suspended" | "closed" | "interrupted";
      resumed_at_ms?: number; output_latency_ms?: number; base_latency_ms?: number; latency_added_ms: number;
      output_timestamp?: { context_time_s: number; performance_time_ms: number }; first_audible_context_s?: number };
  };
  audio_out_method?: "output_timestamp" | "worklet_plus_latency" | "scheduled_plus_latency";
  notes?: string[];
}

/** One measured request (schema in docs/report.md). */
export interface RunReport {
  /** 1, or 2 when a run's chunk series was summarized (docs/report.md). */
  schema_version: number;
  kind: "run";
  generator: string;
  run: { id?: string; target?: string; timeline: Timeline; metrics: Record<string, unknown> };
}

/** The probe's version. */
export const VERSION: string;
export function version(): string;
/** The probe's clock: performance.now() in milliseconds. */
export function now(): number;
/** Nothing to initialise any more (the analysis loads itself when needed); kept so
 *  `await init()` in existing pages still works. */
export default function init(): Promise<void>;
/** How many reports window.__ttfx keeps (the newest). */
export const REPORT_RING: number;

/** Creates runs; holds options and the page's original `fetch`. Throws an Error naming
 *  the option when one is wrong. */
export class Probe {
  constructor(options?: ProbeOptions);
  /** Starts measuring one request; `label` overrides the probe's label. */
  start(label?: string): ProbeRun;
  /** Wraps `window.fetch` so matching requests are measured with no app change. */
  instrumentFetch(options: InstrumentOptions): FetchHandle;
  /** Replaces `EventSource` with a subclass measuring matching streams (docs/probe.md, Transports). */
  instrumentEventSource(options: InstrumentOptions): FetchHandle;
  /** Patches `XMLHttpRequest.prototype.open`/`send` to measure matching requests. */
  instrumentXhr(options: InstrumentOptions): FetchHandle;
  /** Replaces `WebSocket` with a subclass measuring each reply to an app `send()`. */
  instrumentWebSocket(options: InstrumentOptions): FetchHandle;
}

/** One measured request. */
export class ProbeRun {
  /** The run's id (also the report's `run.id`). */
  readonly id: string;
  /** `request_start` on the page clock once `fetch` was called. */
  readonly requestStart: number | undefined;
  /** How the request is made, once it started. */
  readonly transport: Transport | undefined;
  /** The request's absolute URL, once it started. */
  readonly url: string | undefined;
  /** `fetch(input, init)`, measured. The Response's body yields exactly the server's
   *  bytes; a failed fetch rejects with the page's own error. */
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** Times the reply's render in `element`; call before the first token lands. */
  watch(element: Element): void;
  /** Resolves with the report once the stream is over and its paint is known. */
  finished(): Promise<RunReport>;
}

/** Returned by `instrumentFetch`. */
export class FetchHandle {
  /** Stops measuring and puts the original `fetch` back when nobody wrapped it since.
   *  Returns whether the original was put back. */
  restore(): boolean;
}

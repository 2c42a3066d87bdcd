// The two decoders the decode bench races over the same 1 KiB chunks, each on the main
// thread, each returning what it decoded so the bench can refuse a broken one.

// The probe's batches: 16 KiB of chunks with [arrival ms, length] per chunk, as its body
// tap flushes them (crates/ttfx-probe/js/src/chunk_batch.js).
const FLUSH_BYTES = 16 * 1024;

let runs = 0;

// The probe's analysis (`Analysis` of the package's analysis/ttfx_analysis.js), called
// as probe.js calls it: begin, request, headers (the content type picks the dialect, as
// it does for the probe's default `dialect: "auto"`), the chunks copied into 16 KiB
// batches and handed over per batch, end, finish. Returns the report's JSON text.
export function analysisSide(analysis, body) {
  const run = ++runs;
  analysis.begin(run, undefined, undefined, undefined, undefined);
  analysis.request(run, "POST", "http://127.0.0.1/v1/chat", performance.timeOrigin, "fetch");
  analysis.headers(run, 1, 200, body.contentType, undefined);
  const bytes = new Uint8Array(FLUSH_BYTES + 1024);
  const meta = new Float64Array(2 * (FLUSH_BYTES / 512));
  let used = 0;
  let n = 0;
  let at = 2;
  for (const chunk of body.chunks) {
    bytes.set(chunk, used);
    used += chunk.byteLength;
    meta[n++] = at;
    meta[n++] = chunk.byteLength;
    at += 0.25;
    if (used >= FLUSH_BYTES) {
      analysis.chunks(run, meta.subarray(0, n), bytes.subarray(0, used));
      used = 0;
      n = 0;
    }
  }
  if (n > 0) analysis.chunks(run, meta.subarray(0, n), bytes.subarray(0, used));
  analysis.end(run, at);
  return analysis.finish(run, undefined, undefined);
}

// What a team's own JavaScript does with the same chunks: a streaming TextDecoder, then
// eventsource-parser's createParser({ onEvent }) for SSE and JSON.parse of each event's
// data, keeping the delta text. Returns { text, tokens } (tokens: non-empty deltas).
function sse(createParser, body, pick) {
  const decoder = new TextDecoder();
  let text = "";
  let tokens = 0;
  const parser = createParser({
    onEvent(event) {
      if (event.data === "[DONE]") return;
      const delta = pick(JSON.parse(event.data));
      if (delta) {
        text += delta;
        tokens += 1;
      }
    },
  });
  for (const chunk of body.chunks) parser.feed(decoder.decode(chunk, { stream: true }));
  parser.feed(decoder.decode());
  return { text, tokens };
}

// NDJSON (Ollama) has no parser package a team would reach for: the peer is the usual
// hand-written loop, TextDecoder + split("\n") + JSON.parse per line.
function ndjson(body) {
  const decoder = new TextDecoder();
  let text = "";
  let tokens = 0;
  let rest = "";
  const line = (l) => {
    if (!l) return;
    const delta = JSON.parse(l).message?.content;
    if (delta) {
      text += delta;
      tokens += 1;
    }
  };
  for (const chunk of body.chunks) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split("\n");
    rest = lines.pop();
    for (const l of lines) line(l);
  }
  line(rest + decoder.decode());
  return { text, tokens };
}

const PICK = {
  "openai-chat": (o) => o.choices?.[0]?.delta?.content,
  anthropic: (o) => (o.type === "content_block_delta" && o.delta?.type === "text_delta" ? o.delta.text : undefined),
};

export function peerSide(createParser, body) {
  if (body.dialect === "ollama") return ndjson(body);
  return sse(createParser, body, PICK[body.dialect]);
}

// A short stable digest of the decoded text, for the error message only.
function digest(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0).toString(16);
}

// Throws unless the peer gave back the body's text and the analysis's report says it
// decoded the body's dialect to a completed run with as many visible tokens. The report
// carries no text, so the analysis is held to its counts: tokens, outcome, dialect.
export function check(body, report, peer) {
  if (peer.text !== body.text || peer.tokens !== body.tokens) {
    throw new Error(`the peer decoded ${body.dialect} wrong: ${peer.tokens} tokens, ${peer.text.length} chars, digest ${digest(peer.text)}; expected ${body.tokens}, ${body.text.length}, ${digest(body.text)}`);
  }
  const r = JSON.parse(report).run;
  const got = {
    dialect: r.timeline.request?.dialect,
    outcome: r.metrics.outcome,
    tokens: r.metrics.output_tokens?.value,
    visible: r.metrics.buffered?.visible_tokens,
  };
  const want = { dialect: body.dialect, outcome: "completed", tokens: body.tokens, visible: body.tokens };
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`the analysis decoded ${body.dialect} wrong: ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
  }
}

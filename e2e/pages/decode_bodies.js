// The decode bench's reply bodies (e2e/src/bin/decode_browser_bench): the shapes the
// simulator's encoders write (crates/ttfx-sim/src/dialect/{openai_chat,anthropic,
// ollama}.rs), with fields a real server adds, made here so the page needs no server
// route for 8 MB bodies. Each body knows its own reply text and token count, which both
// decoders must give back.

// Tokens as a model streams them: mostly short ASCII words with their leading space, and
// some that make a decoder work (multi-byte UTF-8 split across 1 KiB chunks, JSON
// escapes for quotes, backslashes and newlines).
const WORDS = [" the", " model", " streams", " tokens", " to", " a", " chat", " page", ",", ".",
  " and", " users", " wait", " for", " each", " one", " café", " naïve", " —", " 東京",
  " \"quoted\"", "\n\n", " C:\\path", " 🙂", " of", " in", " it", " is", " first", " byte"];

// A seeded xorshift32: the same body in every engine and every run.
function words(n) {
  let x = 0x9e3779b9;
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    out[i] = WORDS[(x >>> 0) % WORDS.length];
  }
  return out;
}

const sse = (data) => `data: ${JSON.stringify(data)}\n\n`;
const typed = (kind, data) => `event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`;

// OpenAI Chat Completions: one `chat.completion.chunk` per token (the role rides on the
// first), a finish chunk, `[DONE]`. About 175 B an event, near the 168 B of issue #35's body.
function openaiChat(tokens) {
  const head = { id: "chatcmpl-a1b2c3", object: "chat.completion.chunk", created: 1764990000, model: "gpt-4o" };
  const parts = tokens.map((content, i) =>
    sse({ ...head, choices: [{ index: 0, delta: i === 0 ? { role: "assistant", content } : { content }, finish_reason: null }] }));
  parts.push(sse({ ...head, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }), "data: [DONE]\n\n");
  return parts;
}

// Anthropic Messages: message_start, one text block of content_block_delta events,
// message_delta with the usage, message_stop.
function anthropic(tokens) {
  const parts = [typed("message_start", { type: "message_start", message: { id: "msg_01XFDUDYJgAACzvnptvVoYEL", type: "message", role: "assistant", model: "claude-sonnet-4-5", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, output_tokens: 1 } } }),
    typed("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })];
  for (const text of tokens) parts.push(typed("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }));
  parts.push(typed("content_block_stop", { type: "content_block_stop", index: 0 }),
    typed("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: tokens.length } }),
    typed("message_stop", { type: "message_stop" }));
  return parts;
}

// Ollama /api/chat: one JSON object per line, the last with `done: true` and its figures.
function ollama(tokens) {
  const head = { model: "llama3.2", created_at: "2026-12-06T03:53:00.123456789Z" };
  const parts = tokens.map((content) => JSON.stringify({ ...head, message: { role: "assistant", content }, done: false }) + "\n");
  parts.push(JSON.stringify({ ...head, message: { role: "assistant", content: "" }, done: true, done_reason: "stop", total_duration: 5191566416, load_duration: 2154458, prompt_eval_count: 26, prompt_eval_duration: 383809000, eval_count: tokens.length, eval_duration: 4799921000 }) + "\n");
  return parts;
}

export const DIALECTS = {
  "openai-chat": { make: openaiChat, contentType: "text/event-stream" },
  anthropic: { make: anthropic, contentType: "text/event-stream" },
  ollama: { make: ollama, contentType: "application/x-ndjson" },
};

// { bytes, chunks (1 KiB views), text, tokens, contentType } of `events` tokens.
export function makeBody(dialect, events, chunkBytes) {
  const d = DIALECTS[dialect];
  if (!d) throw new Error(`unknown dialect ${dialect}`);
  const tokens = words(events);
  const bytes = new TextEncoder().encode(d.make(tokens).join(""));
  const chunks = [];
  for (let at = 0; at < bytes.length; at += chunkBytes) chunks.push(bytes.subarray(at, at + chunkBytes));
  return { dialect, bytes, chunks, text: tokens.join(""), tokens: tokens.length, contentType: d.contentType };
}

// A chat UI that streams with EventSource: one GET per turn on the simulator's
// chat completions route, the request in the query (EventSource cannot POST).
"use strict";

// The page's query: `api` is the simulator's base for one profile
// (http://HOST:PORT/sim/PROFILE); every other parameter is passed on to the API as it is
// (the simulator's overrides: ttft_ms, output_tokens, ...). See ../README.md.
const params = new URLSearchParams(location.search);
const api = (params.get("api") || "").replace(/\/+$/, "");
const overrides = new URLSearchParams(params);
overrides.delete("api");

const list = document.getElementById("messages");
const prompt = document.getElementById("prompt");
const send = document.getElementById("send");
let busy = false;

function append(role, text) {
  const li = document.createElement("li");
  li.className = `message ${role}`;
  li.textContent = text;
  list.append(li);
  return li;
}

// One turn: the user's message, then a reply element that grows as tokens arrive and
// says how it ended in `data-state` (streaming, done, error).
function submit() {
  const text = prompt.value.trim();
  if (!text || busy) return;
  prompt.value = "";
  busy = true;
  send.disabled = true;
  append("user", text);
  const reply = append("assistant", "");
  reply.dataset.state = "streaming";
  stream(text, (delta) => reply.append(delta))
    .then(() => { reply.dataset.state = "done"; })
    .catch((e) => {
      reply.dataset.state = "error";
      reply.dataset.error = String((e && e.message) || e);
    })
    .finally(() => {
      busy = false;
      send.disabled = false;
    });
}

document.getElementById("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  submit();
});
prompt.addEventListener("keydown", (e) => {
  // Enter sends, Shift+Enter is a new line, as in most chat UIs.
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    submit();
  }
});

// Calls `onDelta` with each `choices[0].delta.content`; resolves at `[DONE]`.
function stream(text, onDelta) {
  return new Promise((resolve, reject) => {
    const url = new URL(`${api}/v1/chat/completions`);
    for (const [k, v] of overrides) url.searchParams.append(k, v);
    url.searchParams.set("prompt", text);
    const source = new EventSource(url);
    source.onmessage = (e) => {
      if (e.data === "[DONE]") {
        // EventSource reconnects when a stream ends: close it first.
        source.close();
        resolve();
        return;
      }
      try {
        const delta = JSON.parse(e.data).choices?.[0]?.delta?.content;
        if (delta) onDelta(delta);
      } catch (err) {
        source.close();
        reject(err);
      }
    };
    source.onerror = () => {
      source.close();
      reject(new Error("the stream failed or was refused"));
    };
  });
}

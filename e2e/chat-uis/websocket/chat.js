// A chat UI that streams over one WebSocket speaking Realtime-style events: per turn a
// `conversation.item.create` and a `response.create`; text arrives as
// `response.output_text.delta`, the turn ends at `response.done`.
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

// The turn in progress: where its deltas go and how it ends.
let turn = null;
let socket = null;
let ready = null;

// Opens the socket on the first turn; resolves at `session.created`.
function connect() {
  if (ready) return ready;
  ready = new Promise((resolve, reject) => {
    const url = `${api.replace(/^http/, "ws")}/v1/realtime${String(overrides) ? `?${overrides}` : ""}`;
    // The subprotocols OpenAI's browser clients send; the key is a placeholder.
    socket = new WebSocket(url, ["realtime", "openai-insecure-api-key.sk-test-not-a-key"]);
    socket.onmessage = (e) => {
      const event = JSON.parse(e.data);
      switch (event.type) {
        case "session.created":
          resolve();
          break;
        case "response.output_text.delta":
          turn?.onDelta(event.delta);
          break;
        case "response.done":
          if (event.response.status === "completed") turn?.resolve();
          else turn?.reject(new Error(`response ${event.response.status}`));
          turn = null;
          break;
        case "error":
          turn?.reject(new Error(event.error.message));
          turn = null;
          break;
        default:
          break;
      }
    };
    socket.onclose = (e) => {
      const why = new Error(`the socket closed (${e.code} ${e.reason})`);
      reject(why);
      turn?.reject(why);
      turn = null;
      ready = null;
    };
  });
  return ready;
}

function stream(text, onDelta) {
  return connect().then(() => new Promise((resolve, reject) => {
    turn = { onDelta, resolve, reject };
    socket.send(JSON.stringify({
      type: "conversation.item.create",
      item: { type: "message", role: "user", content: [{ type: "input_text", text }] },
    }));
    socket.send(JSON.stringify({ type: "response.create" }));
  }));
}

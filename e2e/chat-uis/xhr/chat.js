// A chat UI that streams with XMLHttpRequest: a POST to chat completions with the whole
// conversation, the SSE read from `responseText` as it grows.
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

// The conversation so far (completed turns), sent with every request.
const history = [];

// Parses the SSE in `responseText` as it grows; calls `onDelta` with each
// `choices[0].delta.content`; resolves once the response is complete and had `[DONE]`.
function stream(text, onDelta) {
  return new Promise((resolve, reject) => {
    const messages = [...history, { role: "user", content: text }];
    const url = `${api}/v1/chat/completions${String(overrides) ? `?${overrides}` : ""}`;
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.setRequestHeader("content-type", "application/json");
    let seen = 0;
    let pending = "";
    let answer = "";
    let done = false;
    const take = () => {
      const fresh = xhr.responseText.slice(seen);
      seen = xhr.responseText.length;
      pending += fresh.replace(/\r\n/g, "\n");
      let end;
      while ((end = pending.indexOf("\n\n")) >= 0) {
        const event = pending.slice(0, end);
        pending = pending.slice(end + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data:")) continue;
          const data = line.slice(5).trim();
          if (data === "[DONE]") {
            done = true;
            continue;
          }
          const delta = JSON.parse(data).choices?.[0]?.delta?.content;
          if (delta) {
            answer += delta;
            onDelta(delta);
          }
        }
      }
    };
    xhr.onprogress = take;
    xhr.onreadystatechange = () => {
      if (xhr.readyState === XMLHttpRequest.LOADING) take();
      if (xhr.readyState !== XMLHttpRequest.DONE) return;
      if (xhr.status !== 200) {
        reject(new Error(`HTTP ${xhr.status}: ${xhr.responseText.slice(0, 300)}`));
        return;
      }
      try {
        take();
      } catch (err) {
        reject(err);
        return;
      }
      if (!done) {
        reject(new Error("the stream ended without [DONE]"));
        return;
      }
      history.push({ role: "user", content: text }, { role: "assistant", content: answer });
      resolve();
    };
    xhr.onerror = () => reject(new Error("the request failed"));
    xhr.send(JSON.stringify({ model: "ttfx-sim", stream: true, messages }));
  });
}

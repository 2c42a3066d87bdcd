// A chat UI that streams through fetch from its own origin's `ttfx serve` simulator and
// does not load the ttfx probe. The page's query (ttft_ms, tokens_per_second, …) is
// passed on to the simulator, so a test sets the delays it injects.
const log = document.getElementById("log");
const prompt = document.getElementById("prompt");
const api = "/sim/default/v1/chat/completions" + location.search;
const history = [];

function bubble(kind, text) {
  const div = document.createElement("div");
  div.className = kind;
  div.textContent = text;
  log.append(div);
  return div;
}

async function send() {
  const text = prompt.value.trim();
  if (!text) return;
  prompt.value = "";
  bubble("user", text);
  history.push({ role: "user", content: text });
  // A request that does not stream, as real UIs make beside the reply (a title, a log
  // line): the runner must not take it for the stream.
  fetch("index.html", { cache: "no-store" }).catch(() => {});
  const reply = bubble("reply", "");
  const response = await fetch(api, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", stream: true, messages: history }) });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.replace(/^data: /, "");
      if (data === "[DONE]") continue;
      const delta = JSON.parse(data).choices[0].delta.content;
      if (delta) reply.textContent += delta;
    }
  }
  history.push({ role: "assistant", content: reply.textContent });
}

document.getElementById("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  send();
});
prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    send();
  }
});
